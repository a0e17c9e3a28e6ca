"""Chaining (issue 13, "Also: chains"): the connected components the job's rule makes among
the long texts of bench/recall_routes.py's sets, their diameters, each member's distance to
its cluster's kept page, and an anchor guard's trade-off. Brute force over all pairs
(bench/route_pairs.py); a few thousand texts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bench.edited_copies import EDITS
from bench.route_pairs import (
    anchor_guard,
    anchors_of,
    components,
    jaccard,
    pairs_within,
    shingle_set,
)
from bench.route_sets import FP, K, NEAR_RATES, RAIL_SETS, RECALL_SETS, SKETCH, Signals
from bench.tables import md_table
from simhash_udf.core.sketch import bands_agree, estimated_jaccard
from simhash_udf.core.tokens import tokens

SIZE_BUCKETS = ((2, 2), (3, 4), (5, 9), (10, 10**9))
FAR = 0.5  # a member sharing less Jaccard than this with its anchor is "far"


def job_pairs(sig: Signals, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of the long texts `idx` the job merges (distinct texts: no exact copies):
    within k = 3, or an LSH candidate (25 × 5) with estimated Jaccard ≥ 0.75 and ≤ 12 bits."""
    fp, sk = sig.fingerprint[idx], sig.sketch[idx]
    i, j, dist = pairs_within(fp, SKETCH.max_distance)
    fingerprinted = (sig.n_features[idx][i] >= FP.min_features) & (sig.n_features[idx][j] >= FP.min_features)
    cand = bands_agree(sk[i], sk[j], SKETCH) & (estimated_jaccard(sk[i], sk[j]) >= SKETCH.jaccard)
    keep = fingerprinted & ((dist <= K) | cand)
    return i[keep], j[keep]


def text_roles(frames: dict[str, pd.DataFrame]) -> dict[int, str]:
    """What each corpus text is in the sets (the first role listed wins: an article is also
    the original of its copies)."""
    roles: dict[int, str] = {}
    listed = [(frames["page_article"]["b"], "article"), (frames["page_article"]["a"], "page, main text"),
              (frames["page_article_all"]["a"], "page, all text")]
    listed += [(frames[f"near{round(r * 100)}"]["b"], f"near copy {r:.0%}") for r in NEAR_RATES]
    listed += [(frames[edit]["b"], edit) for edit in EDITS]
    listed += [(frames["regional"]["b"], "regional reprint"), (frames["regional"]["a"], "regional original")]
    listed += [(pd.concat([frames["pan13"]["a"], frames["pan13"]["b"]]), "PAN-13 document")]
    for ids, role in listed:
        for t in ids:
            roles.setdefault(int(t), role)
    return roles


def text_families(frames: dict[str, pd.DataFrame]) -> dict[int, int]:
    """Which texts derive from one original, as a family label per text: the connected
    components of the derivation pairs (a page and its article in both modes, an article and
    its near and edited copies, a regional original and its reprint, either way round), so
    two pages carrying one article, or a story and its reprints back and forth, are one
    family. Texts of no derivation pair have none."""
    names = ["page_article", "page_article_all", *(f"near{round(r * 100)}" for r in NEAR_RATES), *EDITS, "regional"]
    first = np.concatenate([frames[n]["a"].to_numpy(dtype=np.int64) for n in names])
    second = np.concatenate([frames[n]["b"].to_numpy(dtype=np.int64) for n in names])
    texts, codes = np.unique(np.concatenate([first, second]), return_inverse=True)
    labels = components(len(texts), codes[:len(first)], codes[len(first):])
    return dict(zip(texts.tolist(), labels.tolist()))


@dataclass
class Clusters:
    """The job's clusters of the long texts: `labels` (component per node), `members` (one row
    per non-anchor member of a cluster of 2 or more: `cluster`, `size`, `anchor`, `member`
    (node positions), `jaccard` and `hamming` to the anchor, `direct`: the rule merges it with
    the anchor itself) and `diameters` (one row per cluster: `size`, `max_hamming`,
    `min_jaccard` over all member pairs)."""

    labels: np.ndarray
    members: pd.DataFrame
    diameters: pd.DataFrame


def clusters_of(first: np.ndarray, second: np.ndarray, fps: np.ndarray, shingle_sets: Callable[[int], set]) -> Clusters:
    """Connected components of the merged pairs (first, second) over len(fps) nodes, with each
    cluster's diameter and each member's distance to its anchor (exact shingle Jaccard from
    `shingle_sets(node)`)."""
    labels = components(len(fps), first, second)
    sizes = np.bincount(labels)
    anchors = anchors_of(labels)
    merged = set(zip(first.tolist(), second.tolist()))
    unsigned = fps.astype(np.int64).view(np.uint64)
    member_rows, diameter_rows = [], []
    for c in np.flatnonzero(sizes >= 2):
        nodes = np.flatnonzero(labels == c)
        x, y = np.triu_indices(len(nodes), 1)
        hams = np.bitwise_count(unsigned[nodes[x]] ^ unsigned[nodes[y]])
        jacs = [jaccard(shingle_sets(nodes[p]), shingle_sets(nodes[q])) for p, q in zip(x, y)]
        diameter_rows.append((len(nodes), int(hams.max()), min(jacs)))
        anchor = int(anchors[nodes[0]])
        for m in nodes[nodes != anchor].tolist():
            member_rows.append((int(c), len(nodes), anchor, m, jaccard(shingle_sets(anchor), shingle_sets(m)),
                                int(np.bitwise_count(unsigned[anchor] ^ unsigned[m])), (anchor, m) in merged))
    return Clusters(
        labels,
        pd.DataFrame(member_rows, columns=["cluster", "size", "anchor", "member", "jaccard", "hamming", "direct"]),
        pd.DataFrame(diameter_rows, columns=["size", "max_hamming", "min_jaccard"]),
    )


def size_bucket(size: int) -> str:
    """`2`, `3-4`, `5-9`, `10+` (SIZE_BUCKETS)."""
    lo, hi = next(b for b in SIZE_BUCKETS if b[0] <= size <= b[1])
    return str(lo) if lo == hi else (f"{lo}-{hi}" if hi < 10**9 else f"{lo}+")


def section_chaining(sig: Signals, texts: Sequence[str], long: np.ndarray,
                     frames: dict[str, pd.DataFrame]) -> str:
    idx = np.flatnonzero(long)
    i, j = job_pairs(sig, idx)
    shingles: dict[int, set] = {}

    def shingles_of(node: int) -> set:
        if node not in shingles:
            t = texts[idx[node]]
            shingles[node] = shingle_set(tokens(t[:FP.max_chars], FP.tokenizer, FP.segmenter), SKETCH.shingle)
        return shingles[node]

    found = clusters_of(i, j, sig.fingerprint[idx], shingles_of)
    members, diameters = found.members, found.diameters
    rows = []
    for bucket in dict.fromkeys(size_bucket(int(n)) for n in sorted(diameters["size"])):
        d = diameters[diameters["size"].map(size_bucket) == bucket]
        m = members[members["size"].map(size_bucket) == bucket]
        far, indirect = int((m["jaccard"] < FAR).sum()), int((~m["direct"]).sum())
        rows.append([bucket, len(d), int(d["size"].sum()), int(d["max_hamming"].max()),
                     f"{d['min_jaccard'].median():.2f} / {d['min_jaccard'].min():.2f}",
                     f"{m['jaccard'].median():.2f} / {m['jaccard'].min():.2f}", int(m["hamming"].max()),
                     f"{far} ({far / len(m):.1%})", f"{indirect} ({indirect / len(m):.1%})"])
    roles = text_roles(frames)
    families = text_families(frames)
    cluster_families: dict[int, set[int]] = {}
    for node, label in enumerate(found.labels.tolist()):
        family = families.get(int(idx[node]))
        if family is not None:
            cluster_families.setdefault(label, set()).add(family)
    mixed = sum(1 for c, fams in cluster_families.items() if len(fams) > 1
                and int((found.labels == c).sum()) >= 2)
    far_members = members[members["jaccard"] < FAR]
    far_rows = [[roles.get(int(idx[a]), "?"), roles.get(int(idx[b]), "?"), f"{jac:.2f}", ham, "yes" if direct else "no"]
                for a, b, jac, ham, direct in far_members[["anchor", "member", "jaccard", "hamming", "direct"]]
                .itertuples(index=False)]
    reaches = np.ones(len(idx), dtype=bool)
    reaches[members["member"].to_numpy()] = members["direct"].to_numpy()
    guarded = anchor_guard(found.labels, reaches)
    position = {int(c): p for p, c in enumerate(idx)}
    trade = []
    for name in [n for n, _ in RECALL_SETS] + ["regional"] + list(RAIL_SETS):
        f = frames[name]
        both = [(position[a], position[b]) for a, b in zip(f["a"], f["b"]) if a in position and b in position and a != b]
        if both:
            x, y = np.array(both).T
            trade.append([name, len(both), int((found.labels[x] == found.labels[y]).sum()),
                          int((guarded[x] == guarded[y]).sum())])
    recall_names = {n for n, _ in RECALL_SETS} | {"regional"}
    kept = sum(row[2] for row in trade if row[0] in recall_names)
    kept_guarded = sum(row[3] for row in trade if row[0] in recall_names)
    railed = sum(row[2] for row in trade if row[0] not in recall_names)
    railed_guarded = sum(row[3] for row in trade if row[0] not in recall_names)
    return (
        "## 7. Chaining\n\n"
        f"Every distinct text of the sets with ≥ {SKETCH.min_chars} characters ({len(idx):,}: articles, "
        "pages in both modes, PAN-13 documents, near and edited copies), every pair the job's rule "
        f"merges among them ({len(i):,} pairs: within {K} bits, or a 25 × 5 LSH candidate with "
        f"estimated Jaccard ≥ {SKETCH.jaccard} and ≤ {SKETCH.max_distance} bits; brute force), and "
        f"the connected components they form ({len(diameters):,} clusters of 2 or more, the largest "
        f"{int(diameters['size'].max()) if len(diameters) else 0}). Diameter: the largest Hamming distance "
        f"and the smallest exact token {SKETCH.shingle}-shingle Jaccard between any two members. To the "
        "anchor: each other member's exact Jaccard and Hamming distance with the cluster's kept "
        f"member (smallest corpus index); `far`: members sharing < {FAR} with it; `not merged with "
        "the anchor`: members in the cluster only through a chain.\n\n"
        + md_table(["cluster size", "clusters", "texts", "max Hamming in a cluster",
                    "min Jaccard in a cluster: median / min", "Jaccard to anchor: median / min",
                    "max Hamming to anchor", "far from anchor", "not merged with the anchor"], rows)
        + "\n\nThe far members, by what the anchor and the member are:\n\n"
        + (md_table(["anchor", "member", "Jaccard to anchor", "Hamming to anchor", "merged with anchor"], far_rows)
           if far_rows else "None.")
        + "\n\nThe anchor guard (a member stays only when the job's rule merges it with the anchor "
        "itself; any other becomes its own cluster): pairs of each set that end in one cluster, "
        "without and with it (recall sets: want all; rails: want none).\n\n"
        + md_table(["set", "pairs of long texts", "same cluster", "same cluster, anchor guard"], trade)
        + f"\n\n**Does chaining bite?** {mixed} of the {len(diameters):,} clusters hold texts of more "
        f"than one family (`text_families`: texts derived from one original); {len(far_members)} "
        f"of {len(members):,} non-anchor members share < {FAR} Jaccard with their cluster's "
        f"anchor, and {railed} must-not-merge pairs end in one cluster without the guard ({railed_guarded} with it). The guard keeps {kept_guarded:,} of "
        f"the {kept:,} recall-set pairs that end in one cluster without it ({kept - kept_guarded:,} "
        "lost). "
        + ("So chaining does not bite on these sets: every cluster is one original's family (its "
           "pages, copies, edits and reprints; the far members above are such relatives), and the guard "
           "would cost recall without keeping any must-not-merge pair apart."
           if mixed == 0 and railed == 0 else
           "Chaining bites on these sets: see the mixed clusters and rail pairs above, against "
           "the guard's recall cost.")
        + "\n"
    )



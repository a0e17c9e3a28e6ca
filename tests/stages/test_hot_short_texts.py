"""One hot run of short texts through the job: the clusters are the components of every
pair within k that the short-text check keeps, whatever the row order (issue 11, item 1).

Two families of 1,001 short texts each (under 300 characters, so the default policy checks
every pair: Jaccard of 2-word shingles at least 0.5). Within a family the texts share 34
words in one order and differ by a few appended words; the other family has the same words
in the reverse order (its shingles are different), with two words swapped. The words were
picked (by their feature hashes) so that all fingerprints agree on bits 0..47, the families
differ on bit 63, and each appended pair of words sets one of bits 48..62: every pair differs
in the last block of the plan the job picks (4 blocks of 16 bits at k = 3), so its canonical
run is the first sub-block of table 0, one run of all 2,002 fingerprints, just more than
HOT_RUN_SIZE (2,000); pairs within k across the families, which the check drops; pairs within k
inside each family, which it keeps.

The expected clusters come from a brute force that knows nothing of band plans, runs or
summaries: every pair of fingerprints within k, `short_text_policy.keeps` on their texts in plain
Python, then a union-find.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simhash_udf.core import hot_runs, short_text_policy
from simhash_udf.core.config import FingerprintConfig, VerifyConfig
from simhash_udf.core.fingerprint import fingerprints
from simhash_udf.core.normalise import normalise

pytestmark = [pytest.mark.spark, pytest.mark.slow]

K = 3
FAMILY = 1001  # 2 x 1,001 = 2,002 fingerprints: just over HOT_RUN_SIZE with two equal families
BASE = (
    "jkzvj ftdtg dklkx fmxvj jcvjz jfpzh gzcbg grcfx gkglg hxmxg hqhzb gqhzc bxdbf jmggm fjbfn "
    "kjkgr hrdff gqcgt hdntf cssxd dfjjf ddgld dbtkg jrmzh gwvpn dtzbs ctcwz dzpmt hwbqd jcqjc "
    "bzvln htgqg gjcwm fwlfp"
).split()
# The other family: the first two words swapped for these (the same bits 48..62, bit 63 the
# other way), and the order reversed.
SWAPPED = ("jnnsk", "bkgpk")
# Pair b sets bit 48 + b of the fingerprint (the two words cancel on the other bits 48..63).
SETTERS = [
    ("jnnnf", "hvgvs"), ("cdkhl", "bpdbm"), ("fzbwl", "gcsdr"), ("chtmd", "bwjlq"),
    ("bxhnf", "gwfbk"), ("ggpwg", "csqbk"), ("cxcxn", "ddrrl"), ("hzlsg", "bzxwk"),
    ("ghjxl", "fbkpg"), ("dtwwk", "gjrwp"), ("btkqq", "jqpmv"), ("cvchh", "fkwsg"),
    ("hhgbq", "bbsns"), ("kbmsg", "hmvvb"), ("cpqts", "jbdcn"),
]
VARYING = 0xFFFF << 48  # the bits the fingerprints may differ in


def _family(words: list[str], rng: np.random.Generator) -> list[str]:
    """FAMILY texts: `words` plus the setter pairs of a subset of at most 4 of bits 48..62,
    only subsets whose fingerprint keeps the family's bits 0..47."""
    subsets = [c for r in range(5) for c in itertools.combinations(range(len(SETTERS)), r)]
    texts = [" ".join(words + [w for b in s for w in SETTERS[b]]) for s in subsets]
    values, ok, _ = fingerprints([normalise(t) for t in texts], FingerprintConfig())
    assert ok.all()
    fixed = values.view(np.uint64) & ~np.uint64(VARYING)
    usable = [t for t, h in zip(texts, fixed) if h == fixed[0]]
    assert len(usable) >= FAMILY
    return [usable[i] for i in sorted(rng.choice(len(usable), FAMILY, replace=False))]


def _texts() -> list[str]:
    rng = np.random.default_rng(11)
    other = list(SWAPPED) + BASE[2:]
    return _family(BASE, rng) + _family(other[::-1], rng)


def _expected_clusters(texts: dict[int, str]) -> set[frozenset]:
    """Ids grouped by the components of every pair of fingerprints within K that
    `short_text_policy.keeps` keeps under the default policy (ids sharing a fingerprint together)."""
    policy = VerifyConfig()
    ids = sorted(texts)
    normalised = [normalise(texts[i]) for i in ids]
    values, ok, _ = fingerprints(normalised, FingerprintConfig())
    assert ok.all()
    by_fp: dict[int, set[str]] = {}
    for v, t in zip(values.tolist(), normalised):
        by_fp.setdefault(v, set()).add(t)
    nodes = sorted(by_fp)
    unsigned = np.array(nodes, np.int64).view(np.uint64)
    parent = list(range(len(nodes)))

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for i in range(len(nodes)):
        dist = np.bitwise_count(unsigned[i + 1 :] ^ unsigned[i])
        for j in (np.flatnonzero((dist >= 1) & (dist <= K)) + i + 1).tolist():
            ri, rj = root(i), root(j)
            # A pair inside one component already changes nothing: skipping its check
            # leaves the components of the kept pairs as they are.
            if ri != rj and any(short_text_policy.keeps(a, b, policy) for a in by_fp[nodes[i]] for b in by_fp[nodes[j]]):
                parent[max(ri, rj)] = min(ri, rj)
    index = {v: n for n, v in enumerate(nodes)}
    groups: dict[int, set] = {}
    for doc_id, v in zip(ids, values.tolist()):
        groups.setdefault(root(index[v]), set()).add(doc_id)
    return {frozenset(g) for g in groups.values()}


def test_a_hot_run_of_short_texts_clusters_as_the_checked_pairs_say(spark, dedupe_main, tmp_path):
    texts = dict(enumerate(_texts()))
    assert len(texts) == 2 * FAMILY and all(len(t) < VerifyConfig().below_chars for t in texts.values())
    values, _, _ = fingerprints([normalise(t) for t in texts.values()], FingerprintConfig())
    unsigned = np.unique(values.view(np.uint64))
    # The data is what it claims: distinct fingerprints equal outside bits 48..63, more of
    # them than the hot threshold, so one band run holds them all.
    assert len(unsigned) == len(texts) > hot_runs.HOT_RUN_SIZE
    assert len(np.unique(unsigned & ~np.uint64(VARYING))) == 1

    expected = _expected_clusters(texts)
    assert len(expected) == 2 and sorted(len(c) for c in expected) == [FAMILY, FAMILY]

    ids = np.array(sorted(texts))
    pairs_seen = []
    for seed in (0, 1, 2):
        order = np.random.default_rng(seed).permutation(ids) if seed else ids
        src = tmp_path / f"texts-{seed}.parquet"
        pq.write_table(pa.table({"id": order, "text": [texts[i] for i in order.tolist()]}), src)
        out = tmp_path / f"out-{seed}"
        assert dedupe_main(["--input", str(src), "--output", str(out)], spark) == 0
        report = json.loads((out / "report.json").read_text())
        assert report["join"]["summarised_buckets"] >= 1, "the run was not hot"
        rows = spark.read.parquet(str(out / "clusters")).select("id", "cluster_id").collect()
        got: dict[object, set] = {}
        for r in rows:
            got.setdefault(r["cluster_id"], set()).add(r["id"])
        clusters = {frozenset(g) for g in got.values()}
        assert clusters == expected, f"row order {seed}: {len(clusters)} clusters, brute force {len(expected)}"
        pairs_seen.append({(r["id_a"], r["id_b"], r["distance"]) for r in spark.read.parquet(str(out / "pairs")).collect()})
    # pairs/ is the same whatever the row order.
    assert pairs_seen[0] == pairs_seen[1] == pairs_seen[2]

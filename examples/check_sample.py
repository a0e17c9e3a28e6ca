"""Check the labels of examples/sample.jsonl against the library's pure functions (no Spark).

    .venv/bin/python examples/check_sample.py [sample.jsonl] [--k 3] [--min-gap 8] [--matrix]

Every document is normalised (`simhash_udf.core.normalise.normalise`) and fingerprinted
(`simhash_udf.core.fingerprint.fingerprints`, default `FingerprintConfig`), then every pair is
compared with `hamming`. The labels hold when:
  - two documents of different groups are not equal after normalisation and, when both have a
    fingerprint, are at least --min-gap bits apart (a margin well beyond k);
  - the kinds agree with the texts: `empty` normalises to "" and nothing else does,
    `exact_copy` equals its group's original after normalisation, `near_copy` does not,
    each group with copies has one `original` with the group's smallest id, a `distinct`
    document is alone in its group.
Whether a near copy (an edited page) lands within k of its original is what simhash at the
default settings achieves, not a label: it is reported (near copies found, with the distance
of each one missed) and never fails the check. Prints per-group figures and the closest pairs
across groups; exits 1 if any check fails.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simhash_udf.core.config import FingerprintConfig  # noqa: E402
from simhash_udf.core.fingerprint import fingerprints, hamming  # noqa: E402
from simhash_udf.core.normalise import normalise  # noqa: E402

KINDS = ("original", "exact_copy", "near_copy", "traditional_script", "distinct", "empty")
FIELDS = ("id", "url", "lang", "group", "kind", "text")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sample", nargs="?", default=str(Path(__file__).with_name("sample.jsonl")))
    parser.add_argument("--k", type=int, default=3, help="near-duplicate threshold in bits")
    parser.add_argument("--min-gap", type=int, default=8, help="least distance required between different groups")
    parser.add_argument("--matrix", action="store_true", help="also print the full distance matrix")
    args = parser.parse_args(argv)

    rows = [json.loads(line) for line in Path(args.sample).read_text(encoding="utf-8").splitlines() if line.strip()]
    errors: list[str] = []
    for row in rows:
        if set(row) != set(FIELDS):
            errors.append(f"id {row.get('id')}: fields {sorted(row)} != {sorted(FIELDS)}")
        if row.get("kind") not in KINDS:
            errors.append(f"id {row.get('id')}: unknown kind {row.get('kind')!r}")
    ids = [r["id"] for r in rows]
    if len(ids) != len(set(ids)) or not all(isinstance(i, int) for i in ids):
        errors.append("ids must be unique integers")

    config = FingerprintConfig()
    norm = {r["id"]: normalise(r["text"]) for r in rows}
    values, ok, n_features = fingerprints([norm[r["id"]] for r in rows], config)
    fp = {r["id"]: int(v) if has else None for r, v, has in zip(rows, values, ok)}
    nfeat = {r["id"]: int(n) for r, n in zip(rows, n_features)}
    row_of = {r["id"]: r for r in rows}

    # Kinds against texts.
    groups: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        if (r["kind"] == "empty") != (norm[r["id"]] == ""):
            errors.append(f"id {r['id']}: kind {r['kind']} but normalised text is {'empty' if not norm[r['id']] else 'not empty'}")
        if r["kind"] != "empty":
            groups[r["group"]].append(r["id"])
    for group, members in groups.items():
        kinds = [row_of[i]["kind"] for i in members]
        first = min(members)
        if len(members) == 1:
            if kinds[0] not in ("distinct", "original"):
                errors.append(f"{group}: a lone document should be 'distinct', is {kinds[0]}")
            continue
        if kinds.count("original") != 1 or row_of[first]["kind"] != "original":
            errors.append(f"{group}: needs exactly one 'original', with the smallest id ({first})")
            continue
        if "distinct" in kinds:
            errors.append(f"{group}: 'distinct' documents must be alone in their group")
        for i in members:
            kind = row_of[i]["kind"]
            if kind == "exact_copy" and norm[i] != norm[first]:
                errors.append(f"{group}: id {i} is labelled exact_copy but differs from id {first} after normalisation")
            if kind == "near_copy" and norm[i] == norm[first]:
                errors.append(f"{group}: id {i} is labelled near_copy but equals id {first} after normalisation")

    # Every pair of non-empty documents.
    live = [r["id"] for r in rows if norm[r["id"]]]
    within: dict[str, int] = defaultdict(int)
    within_hist: Counter[int] = Counter()
    between: list[tuple[int, int, int]] = []
    missed: list[str] = []
    for a, b in itertools.combinations(live, 2):
        same = row_of[a]["group"] == row_of[b]["group"]
        exact = norm[a] == norm[b]
        d = hamming(fp[a], fp[b]) if fp[a] is not None and fp[b] is not None else None
        if same:
            within[row_of[a]["group"]] = max(within[row_of[a]["group"]], d or 0)
            if not exact:
                within_hist[d if d is not None else -1] += 1
            if not exact and (d is None or d > args.k):
                why = "no fingerprint and texts differ" if d is None else f"distance {d} > k={args.k}"
                missed.append(f"{row_of[a]['group']}: ids {a} and {b} ({why})")
        else:
            if exact:
                errors.append(f"ids {a} ({row_of[a]['group']}) and {b} ({row_of[b]['group']}) are equal after normalisation")
            if d is not None:
                between.append((d, a, b))
                if d < args.min_gap:
                    verdict = "MERGE (label broken)" if d <= args.k else "too close"
                    errors.append(
                        f"ids {a} ({row_of[a]['group']}) and {b} ({row_of[b]['group']}): distance {d} < min gap {args.min_gap}: {verdict}"
                    )

    # Report.
    print(f"{len(rows)} documents, {len(groups)} groups (+{len(rows) - len(live)} empty); k={args.k}, min gap={args.min_gap}")
    print(f"kinds: {dict(Counter(r['kind'] for r in rows))}")
    print()
    print(f"{'group':<14} {'docs':>4}  {'kinds':<58} {'features':>13}  max within")
    for group, members in sorted(groups.items(), key=lambda g: min(g[1])):
        kinds = Counter(row_of[i]["kind"] for i in members)
        kind_text = ", ".join(f"{k} {n}" for k, n in kinds.items())
        feats = [nfeat[i] for i in members]
        if all(fp[i] is None for i in members):
            mx = "exact only (no fingerprint)"
        else:
            mx = str(within[group]) if len(members) > 1 else "-"
        print(f"{group:<14} {len(members):>4}  {kind_text:<58} {min(feats):>5}..{max(feats):<5}  {mx}")
    print()
    same_pairs = sum(within_hist.values())
    print(f"within groups, pairs not equal after normalisation: {same_pairs}; distances {dict(sorted(within_hist.items()))}")
    print(f"  within k={args.k}: {same_pairs - len(missed)} of {same_pairs}; beyond k (near copies the fingerprints miss):")
    for line in missed:
        print("    " + line)
    if between:
        between.sort()
        ds = [d for d, _, _ in between]
        print(
            f"between groups: {len(between)} fingerprinted pairs; min {ds[0]}, "
            f"median {ds[len(ds) // 2]}, max {ds[-1]}; pairs below 16: {sum(d < 16 for d in ds)}"
        )
        print("closest pairs across groups:")
        for d, a, b in between[:8]:
            print(f"  {d:>2}  {a:>3} {row_of[a]['group']:<14} {b:>3} {row_of[b]['group']}")
    if args.matrix:
        print()
        print("distance matrix ('=' equal after normalisation, '.' no fingerprint):")
        print("     " + "".join(f"{i:>3}" for i in live))
        for a in live:
            cells = []
            for b in live:
                if norm[a] == norm[b]:
                    cells.append("  =")
                elif fp[a] is None or fp[b] is None:
                    cells.append("  .")
                else:
                    cells.append(f"{hamming(fp[a], fp[b]):>3}")
            print(f"{a:>3}  " + "".join(cells))
    print()
    if errors:
        print(f"FAILED: {len(errors)} problem(s)")
        for e in errors:
            print("  " + e)
        return 1
    print("OK: every label holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())

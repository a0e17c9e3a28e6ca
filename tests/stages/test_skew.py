"""A skewed crawl through the job: a hot band bucket and 10,000 exact copies of one page.

5,000 fingerprints 1-3 bits from a template's (all flips in the low 32 bits, so they share
the high 32 and fill one bucket of two tables), a chain k + 1 bits away, random pages, and
one fingerprint carried by 10,000 documents. The clusters must equal a brute-force
union-find over all pairs within k (scipy's connected components), while pairs/ holds a
summary of the hot bucket (true pairs, far fewer than the bucket's) and the report says so.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from simhash_udf.core import hot_runs

pytestmark = [pytest.mark.spark, pytest.mark.slow]

K = 3


def _fingerprints() -> np.ndarray:
    rng = np.random.default_rng(2026)
    centre = int(rng.integers(0, 2**64, dtype=np.uint64, endpoint=False))
    members = {centre}
    while len(members) < 5000:
        value = centre
        for bit in rng.choice(32, int(rng.integers(1, 4)), replace=False):
            value ^= 1 << int(bit)
        members.add(value)
    value = centre
    for bit in range(K + 1):
        value ^= 1 << (60 - bit)
    chain = []
    for step in range(5):
        chain.append(value)
        value ^= 1 << (40 + step)
    noise = rng.integers(0, 2**64, size=2000, dtype=np.uint64, endpoint=False)
    return np.unique(np.concatenate([np.array(sorted(members), np.uint64), np.array(chain, np.uint64), noise]))


def _brute_force_components(values: np.ndarray) -> np.ndarray:
    """Smallest index of each value's component over every pair within K (sorted uint64)."""
    rows, cols = [], []
    for i in range(0, len(values), 1024):
        dist = np.bitwise_count(values[i : i + 1024, None] ^ values[None, :])
        r, c = np.nonzero((dist >= 1) & (dist <= K))
        rows.append(r + i)
        cols.append(c)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(values), len(values)))
    _, labels = connected_components(graph, directed=False)
    smallest = np.full(labels.max() + 1, len(values))
    np.minimum.at(smallest, labels, np.arange(len(values)))
    return smallest[labels]


def test_hot_bucket_and_exact_copies(spark, dedupe_main, tmp_path):
    values = _fingerprints()
    signed = values.view(np.int64)
    copies = 10_000
    ids = np.arange(len(values) + copies)
    fps = np.concatenate([signed, np.full(copies, signed[-1])])  # 10k more documents, one fingerprint
    src = tmp_path / "fps.parquet"
    pq.write_table(pa.table({"id": ids, "fingerprint": fps}), src)
    out = tmp_path / "out"
    code = dedupe_main(
        ["--input", str(src), "--output", str(out), "--fingerprint-col", "fingerprint", "--k", str(K)], spark
    )
    assert code == 0

    # Clusters: documents share a cluster exactly when brute force puts their fingerprints
    # in one component.
    labels = _brute_force_components(values)
    rows = spark.read.parquet(str(out / "clusters")).select("id", "cluster_id", "fingerprint").collect()
    assert len(rows) == len(ids)
    index = {int(v): i for i, v in enumerate(signed)}
    groups: dict[int, set] = {}
    for r in rows:
        groups.setdefault(int(labels[index[r["fingerprint"]]]), set()).add(r["cluster_id"])
    assert all(len(c) == 1 for c in groups.values()), "a brute-force component split over clusters"
    assert len({next(iter(c)) for c in groups.values()}) == len(groups), "two components merged"
    biggest = np.bincount(labels).max()
    assert biggest >= 5000

    # The report lists the hot bucket and says its pairs were summarised.
    report = json.loads((out / "report.json").read_text())
    j = report["join"]
    assert j["pairs_summarised"] is True and j["summarised_buckets"] >= 1
    assert j["hot_buckets"] and all(b["size"] > hot_runs.HOT_RUN_SIZE for b in j["hot_buckets"])
    assert {b["table"] for b in j["hot_buckets"]} == {2, 3}
    assert "summarised" in (out / "report.html").read_text()

    # pairs/: true pairs only, each once, far fewer than the hot bucket's pairs.
    pairs = spark.read.parquet(str(out / "pairs")).collect()
    fp_of = {int(i): int(f) for i, f in zip(ids[: len(values)], signed)}
    seen = set()
    for p in pairs:
        a, b = fp_of[p["id_a"]], fp_of[p["id_b"]]
        assert bin((a ^ b) & (2**64 - 1)).count("1") == p["distance"] <= K
        assert (p["id_a"], p["id_b"]) not in seen
        seen.add((p["id_a"], p["id_b"]))
    largest = max(b["size"] for b in j["hot_buckets"])
    assert len(pairs) < largest * (largest - 1) // 2 / 20

"""Synthetic fingerprints with planted near-duplicate clusters and their known truth.

    .venv/bin/python -m bench.synthetic --n 1000000 [--seed 1] [--k 3] [--check]

N distinct signed 64-bit fingerprints: (1 - planted) x N uniformly random ones, and
planted x N (default 1%) in clusters of 2-10 members. A cluster is a random seed and
members made from it by flipping 1..k random bits (a member's distance to its seed is
1..k; two members may be up to 2k apart). Written as Parquet under
`build/bench-cache/synthetic/n<N>-seed<S>-k<K>-planted<F>/` and reused (cache by N, seed, k):

- fingerprints.parquet: `fingerprint` (long), row groups of 4M rows;
- planted.parquet: `fingerprint` (long), `cluster` (long): every planted member;
- truth.parquet: `fp_a` < `fp_b` (longs, signed order as Spark compares them), `distance`
  (int): every pair of planted members of one cluster within k bits;
- meta.json (written last: a folder without it is incomplete and regenerated).

Truth is computed here, independently of any join: pairwise popcounts inside each cluster.
It omits pairs that fall within k by chance (random or planted fingerprints of different
clusters). Their expected number is C(N, 2) x sum_{d<=k} C(64, d) / 2^64
(`expected_random_pairs`): for k = 3, 1.2e-3 at 1M, 0.019 at 4M, 0.30 at 16M and 4.9 at
64M, so at 64M a handful of true pairs beyond the planted truth is expected. `check_pairs`
therefore demands every planted pair, and checks every further pair by its popcount;
`band_truth` (numpy, four 16-bit blocks, every bucket's members compared) finds all pairs
within 3 bits outright at sizes where that is cheap (<= 4M), a second, brute-force check.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "bench-cache" / "synthetic"
CHUNK = 4_000_000
MIN_CLUSTER, MAX_CLUSTER = 2, 10
FORMAT = 1  # bump when the layout or the generation changes


def expected_random_pairs(n: int, k: int) -> float:
    """Expected pairs within k bits among n independent uniform 64-bit fingerprints."""
    within = sum(math.comb(64, d) for d in range(k + 1))
    return math.comb(n, 2) * within / 2.0**64


def popcount(x: np.ndarray) -> np.ndarray:
    """Bits set in each value (int64 or uint64 array)."""
    return np.bitwise_count(x.view(np.uint64))


@dataclass(frozen=True)
class Synthetic:
    """A generated set on disk: paths and what it holds."""

    folder: Path
    n: int
    seed: int
    k: int
    planted: int
    clusters: int
    truth_pairs: int

    @property
    def fingerprints(self) -> Path:
        return self.folder / "fingerprints.parquet"

    @property
    def planted_path(self) -> Path:
        return self.folder / "planted.parquet"

    @property
    def truth(self) -> Path:
        return self.folder / "truth.parquet"

    def truth_set(self) -> set[tuple[int, int]]:
        table = pq.read_table(self.truth)
        return set(zip(table["fp_a"].to_numpy().tolist(), table["fp_b"].to_numpy().tolist()))


def _plant(rng: np.random.Generator, n_planted: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """About n_planted members in clusters of 2..10: (fingerprints, cluster ids)."""
    if n_planted < MIN_CLUSTER:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    sizes = rng.integers(MIN_CLUSTER, MAX_CLUSTER + 1, size=max(1, n_planted // 6 + 1))
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), n_planted) + 1]
    n_clusters = len(sizes)
    seeds = rng.integers(0, 2**64, size=n_clusters, dtype=np.uint64)
    cluster = np.repeat(np.arange(n_clusters, dtype=np.int64), sizes)
    first = np.zeros(len(cluster), dtype=bool)
    first[np.concatenate([[0], np.cumsum(sizes)[:-1]])] = True
    # Each non-seed member flips d in 1..k bit positions (drawn with replacement, so the
    # distance is popcount of the mask: 1..d).
    d = rng.integers(1, k + 1, size=len(cluster)) if k > 0 else np.zeros(len(cluster), dtype=np.int64)
    masks = np.zeros(len(cluster), dtype=np.uint64)
    for j in range(k):
        bit = np.left_shift(np.uint64(1), rng.integers(0, 64, size=len(cluster)).astype(np.uint64))
        masks |= np.where(j < d, bit, np.uint64(0))
    masks[first] = 0
    members = seeds[cluster] ^ masks
    return members.view(np.int64), cluster


def _cluster_truth(members: np.ndarray, cluster: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs within k inside each cluster: (fp_a, fp_b, distance), fp_a < fp_b (signed).

    Clusters are padded to MAX_CLUSTER columns and compared all against all (vectorised).
    """
    starts = np.flatnonzero(np.r_[True, cluster[1:] != cluster[:-1]])
    sizes = np.diff(np.r_[starts, len(cluster)])
    pos = np.arange(len(cluster)) - np.repeat(starts, sizes)
    grid = np.zeros((len(starts), MAX_CLUSTER), dtype=np.int64)
    valid = np.zeros((len(starts), MAX_CLUSTER), dtype=bool)
    row = np.repeat(np.arange(len(starts)), sizes)
    grid[row, pos] = members
    valid[row, pos] = True
    out_a, out_b, out_d = [], [], []
    for i in range(MAX_CLUSTER):
        for j in range(i + 1, MAX_CLUSTER):
            ok = valid[:, i] & valid[:, j]
            a, b = grid[ok, i], grid[ok, j]
            dist = popcount(a ^ b)
            keep = (dist <= k) & (a != b)
            a, b, dist = a[keep], b[keep], dist[keep]
            out_a.append(np.minimum(a, b))
            out_b.append(np.maximum(a, b))
            out_d.append(dist.astype(np.int32))
    return np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_d)


def generate(n: int, seed: int = 1, k: int = 3, planted_fraction: float = 0.01, cache: Path = CACHE,
             log: bool = True) -> Synthetic:
    """The set for (n, seed, k), generated once and then read from the cache."""
    folder = cache / f"n{n}-seed{seed}-k{k}-planted{planted_fraction:g}"
    meta_path = folder / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("format") == FORMAT and meta.get("planted_fraction") == planted_fraction:
            return Synthetic(folder, n, seed, k, meta["planted"], meta["clusters"], meta["truth_pairs"])
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    meta_path.unlink(missing_ok=True)
    root = np.random.SeedSequence([seed, n, k])
    plant_seq, random_seq = root.spawn(2)
    members, cluster = _plant(np.random.default_rng(plant_seq), int(n * planted_fraction), k)
    # Members of one cluster may coincide (their flips cancel); keep each fingerprint once.
    _, first_idx = np.unique(members, return_index=True)
    keep = np.zeros(len(members), dtype=bool)
    keep[first_idx] = True
    members, cluster = members[keep], cluster[keep]
    n_random = n - len(members)
    rng = np.random.default_rng(random_seq)
    # Random fingerprints in chunks; a chunk value equal to a planted one (odds ~n*p/2^64)
    # or to another random one is replaced, so every fingerprint is distinct.
    chunks = []
    for start in range(0, n_random, CHUNK):
        chunks.append(rng.integers(0, 2**64, size=min(CHUNK, n_random - start), dtype=np.uint64).view(np.int64))
    everything = np.concatenate(chunks + [members])
    while True:
        uniq, idx = np.unique(everything, return_index=True)
        if len(uniq) == len(everything):
            break
        dup = np.ones(len(everything), dtype=bool)
        dup[idx] = False
        dup[n_random:] = False  # never touch planted members
        everything[dup] = rng.integers(0, 2**64, size=int(dup.sum()), dtype=np.uint64).view(np.int64)
    del uniq, idx
    writer = pq.ParquetWriter(folder / "fingerprints.parquet", pa.schema([("fingerprint", pa.int64())]))
    for start in range(0, len(everything), CHUNK):
        writer.write_table(pa.table({"fingerprint": everything[start:start + CHUNK]}), row_group_size=CHUNK)
    writer.close()
    pq.write_table(pa.table({"fingerprint": members, "cluster": cluster}), folder / "planted.parquet")
    a, b, d = _cluster_truth(members, cluster, k) if len(members) else (members, members, members.astype(np.int32))
    pq.write_table(pa.table({"fp_a": a, "fp_b": b, "distance": d}), folder / "truth.parquet")
    meta = {
        "format": FORMAT, "n": n, "seed": seed, "k": k, "planted_fraction": planted_fraction,
        "planted": int(len(members)), "clusters": int(cluster[-1] + 1) if len(cluster) else 0,
        "truth_pairs": int(len(a)), "expected_random_pairs": expected_random_pairs(n, k),
        "seconds": round(time.perf_counter() - started, 2),
    }
    meta_path.write_text(json.dumps(meta, indent=1))
    if log:
        print(f"synthetic: {n:,} fingerprints ({meta['planted']:,} planted in {meta['clusters']:,} clusters, "
              f"{meta['truth_pairs']:,} truth pairs) in {meta['seconds']:.1f} s -> {folder}", file=sys.stderr)
    return Synthetic(folder, n, seed, k, meta["planted"], meta["clusters"], meta["truth_pairs"])


def read_fingerprints(data: Synthetic) -> np.ndarray:
    return pq.read_table(data.fingerprints)["fingerprint"].to_numpy()


def band_truth(fingerprints: np.ndarray, k: int = 3, block_bits: int = 16) -> set[tuple[int, int]]:
    """Every pair within k bits, by brute force inside the buckets of 64/block_bits blocks.

    With k + 1 = 64 / block_bits blocks (k = 3, 16-bit blocks), a pair within k agrees on
    at least one whole block (pigeonhole), so comparing every two members of every block's
    buckets finds them all. numpy only, written apart from the job's join; cost ~ N^2 / 2^14
    comparisons (31M at 1M, 0.5 billion at 4M).
    """
    blocks = 64 // block_bits
    if blocks != k + 1:
        raise ValueError("band_truth needs 64 / block_bits == k + 1")
    fps = np.asarray(fingerprints, dtype=np.int64)
    found: set[tuple[int, int]] = set()
    for block in range(blocks):
        key = (fps.view(np.uint64) >> np.uint64(block * block_bits)) & np.uint64((1 << block_bits) - 1)
        order = np.argsort(key, kind="stable")
        sorted_fps, sorted_key = fps[order], key[order]
        starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
        sizes = np.diff(np.r_[starts, len(sorted_key)])
        # Compare each member with the one `offset` places after it in its bucket, for every
        # offset up to the largest bucket: all pairs of every bucket, vectorised.
        rank = np.arange(len(sorted_key)) - np.repeat(starts, sizes)
        remaining = np.repeat(sizes, sizes) - rank - 1  # members after this one in its bucket
        for offset in range(1, int(sizes.max())):
            idx = np.flatnonzero(remaining >= offset)
            a, b = sorted_fps[idx], sorted_fps[idx + offset]
            close = popcount(a ^ b) <= k
            lo, hi = np.minimum(a[close], b[close]), np.maximum(a[close], b[close])
            found.update(zip(lo.tolist(), hi.tolist()))
    return found


@dataclass(frozen=True)
class Exactness:
    """How a join's pairs compare with the truth."""

    found: int
    truth: int
    missing: int  # truth pairs the join did not return
    extra_true: int  # pairs beyond the planted truth that are within k (chance pairs)
    wrong: int  # returned pairs not within k, or repeated, or not fp_a < fp_b
    brute_force: str  # "equal", "differs: ...", or "not run"

    @property
    def exact(self) -> bool:
        return self.missing == 0 and self.wrong == 0 and self.brute_force in ("equal", "not run")

    def summary(self) -> str:
        verdict = "exact" if self.exact else "NOT exact"
        parts = [f"{verdict}: {self.found:,} pairs, {self.missing:,} of {self.truth:,} planted missing"]
        if self.extra_true:
            parts.append(f"{self.extra_true} chance pairs within k")
        if self.wrong:
            parts.append(f"{self.wrong} wrong")
        parts.append(f"brute force {self.brute_force}")
        return "; ".join(parts)


def check_pairs(fp_a: np.ndarray, fp_b: np.ndarray, distance: np.ndarray, data: Synthetic,
                brute: set[tuple[int, int]] | None = None) -> Exactness:
    """Compare a join's output with the planted truth (and a brute-force set when given)."""
    fp_a, fp_b, distance = (np.asarray(x, dtype=np.int64) for x in (fp_a, fp_b, distance))
    real = popcount(fp_a ^ fp_b)
    bad = int(np.sum((real != distance) | (real > data.k) | (real == 0) | (fp_a >= fp_b)))
    found = set(zip(fp_a.tolist(), fp_b.tolist()))
    bad += len(fp_a) - len(found)  # repeated pairs
    truth = data.truth_set()
    missing = len(truth - found)
    extra = len(found - truth)
    verdict = "not run"
    if brute is not None:
        if brute == found:
            verdict = "equal"
        else:
            verdict = f"differs: {len(brute - found)} missing, {len(found - brute)} extra"
    return Exactness(len(found), len(truth), missing, extra, bad, verdict)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--check", action="store_true",
                        help="also compare the planted truth with the numpy brute-force band check (k = 3)")
    args = parser.parse_args(argv)
    data = generate(args.n, args.seed, args.k)
    print(json.dumps(json.loads((data.folder / "meta.json").read_text()), indent=1))
    if args.check:
        started = time.perf_counter()
        brute = band_truth(read_fingerprints(data), args.k)
        truth = data.truth_set()
        print(f"brute force: {len(brute):,} pairs in {time.perf_counter() - started:.1f} s; planted truth "
              f"{len(truth):,}; planted missing from brute force: {len(truth - brute)}; "
              f"chance pairs: {len(brute - truth)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

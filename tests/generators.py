"""Inputs shared by several test modules, made from a seed (never read from the code under test),
and the brute-force oracles their expectations come from (plain Python, independent of the library).

Generators:
- `near_centre`: fingerprints 1..3 bits from a random centre, every flip in the low 32 bits,
  so all share the high 32 bits: one hot run in the tables of a 4-block plan that keep the
  high blocks.
- `PARAGRAPH`: an English paragraph long enough to be fingerprinted under every default.
- `planted_rows` / `write_days`: planted fingerprints (groups within `PLANTED_K` bits of a
  centre, exact repeats, singletons) split into daily Parquet files with columns
  `id` (long), `fp` (long, the signed fingerprint) and `url` (string), read with
  `--fingerprint-col fp`.
- `write_warc_records`: a WARC file written with warcio, independently of the job's FastWARC
  reader.

Oracles:
- `popcount64`: the set bits of a 64-bit value, signed or unsigned.
- `brute_force_pairs`: every near-duplicate pair by comparing all fingerprints with each other.
- `union_find_groups`, `brute_force_cluster_sizes`, `brute_force_merges`: clusters at a
  threshold k by union-find over every pair (the oracle of `simhash_udf.report.explore`).
- `brute_word_shingles`, `brute_jaccard`: word shingles and Jaccard similarity written out
  (the oracles of `simhash_udf.core.short_text_policy`), over texts of `VOCAB` words.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# The distance the planted rows are built for, and the --k the index tests run them at.
PLANTED_K = 3

PARAGRAPH = (
    "Harbour officials said on Tuesday that the new container terminal will open next spring, "
    "after two years of dredging, a dispute over the contract for the cranes and a long "
    "argument about who pays for the rail link to the inland depot. Shipping lines welcomed "
    "the news but warned that fees must stay competitive with the ports further up the coast."
)


def near_centre(seed: int, size: int) -> tuple[int, set[int]]:
    """(centre, members): `size` distinct unsigned 64-bit values, the centre among them, each
    other one 1..3 bits from the centre, with every flipped bit among the low 32."""
    rng = np.random.default_rng(seed)
    centre = int(rng.integers(0, 2**64, dtype=np.uint64, endpoint=False))
    members = {centre}
    while len(members) < size:
        value = centre
        for bit in rng.choice(32, int(rng.integers(1, 4)), replace=False):
            value ^= 1 << int(bit)
        members.add(value)
    return centre, members


def to_signed(value: int) -> int:
    """A 64-bit value as the signed long Spark and Parquet store."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def flip(value: int, bits: list[int]) -> int:
    """`value` with `bits` flipped, as a signed long."""
    for b in bits:
        value ^= 1 << b
    return to_signed(value)


def planted_rows(seed: int, groups: int, singletons: int) -> list[tuple[int, int]]:
    """(order, fingerprint) rows: groups of near duplicates within 1..PLANTED_K bits of a centre
    (members may be up to 2 * PLANTED_K apart from each other), exact repeats, and random
    singletons."""
    rng = random.Random(seed)
    fps = []
    for _ in range(groups):
        centre = rng.getrandbits(64)
        fps.append(to_signed(centre))
        for _ in range(rng.randint(1, 5)):
            fps.append(flip(centre, rng.sample(range(64), rng.randint(1, PLANTED_K))))
        if rng.random() < 0.3:
            fps.append(to_signed(centre))  # an exact repeat of the centre's fingerprint
    fps += [to_signed(rng.getrandbits(64)) for _ in range(singletons)]
    rng.shuffle(fps)
    return list(enumerate(fps))


def write_days(folder: Path, rows: list[tuple[int, int]], days: int, seed: int) -> list[Path]:
    """Split rows into `days` Parquet files (columns id, fp, url); ids increase with the day (as
    a crawl's would), so "smallest id" and "seen first" agree. Returns the day files in order."""
    rng = random.Random(seed)
    by_day = defaultdict(list)
    for _, fp in rows:
        by_day[rng.randrange(days)].append(fp)
    paths, next_id = [], 1
    for day in range(days):
        ids = list(range(next_id, next_id + len(by_day[day])))
        next_id += len(ids)
        path = folder / f"day{day}.parquet"
        table = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "fp": pa.array(by_day[day], pa.int64()),
                "url": [f"https://example.com/{i}" for i in ids],
            }
        )
        pq.write_table(table, path)
        paths.append(path)
    return paths


def read_rows(path: Path) -> list[tuple[int, int]]:
    """A day file of `write_days` as (id, fp) rows."""
    table = pq.read_table(path)
    return list(zip(table["id"].to_pylist(), table["fp"].to_pylist()))


def popcount64(value: int) -> int:
    """Set bits of a 64-bit value given signed or unsigned (independent of the library)."""
    return bin(value & 0xFFFFFFFFFFFFFFFF).count("1")


def brute_force_pairs(id_fingerprints: list[tuple], k: int) -> set[tuple]:
    """Every (id_a, id_b, distance) with 1 <= distance <= k over distinct fingerprints, each
    fingerprint named by the smallest id carrying it, id_a < id_b: the contract of pairs/."""
    smallest: dict[int, object] = {}
    for doc_id, fp in id_fingerprints:
        if fp is not None and (fp not in smallest or doc_id < smallest[fp]):
            smallest[fp] = doc_id
    items = sorted(smallest.items())
    found = set()
    for i, (fa, ia) in enumerate(items):
        for fb, ib in items[i + 1 :]:
            d = popcount64(fa ^ fb)
            if 1 <= d <= k:
                found.add((min(ia, ib), max(ia, ib), d))
    return found


def union_find_groups(rows, k: int) -> tuple[int, Counter]:
    """(pairs of distinct fingerprints within k, documents per cluster) by union-find.

    rows: (id, group, fingerprint, status); documents without a fingerprint are clustered by
    `group`, skipped ones are left out."""
    fps = sorted({fp for _, _, fp, status in rows if fp is not None and status != "skipped"})
    parent = {fp: fp for fp in fps}

    def root(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    pairs = 0
    for i, a in enumerate(fps):
        for b in fps[i + 1 :]:
            if popcount64(a ^ b) <= k:
                pairs += 1
                parent[root(a)] = root(b)
    groups = Counter(
        ("fp", root(fp)) if fp is not None else ("exact", group)
        for _, group, fp, status in rows
        if status != "skipped"
    )
    return pairs, groups


def brute_force_cluster_sizes(rows, k: int) -> list[int]:
    """Documents per cluster at threshold k (see `union_find_groups`)."""
    return list(union_find_groups(rows, k)[1].values())


def brute_force_merges(rows, k: int) -> dict[str, int]:
    """The row of `explore.merges_by_k` for k, by union-find over every pair of fingerprints."""
    pairs = union_find_groups(rows, k)[0]
    sizes = brute_force_cluster_sizes(rows, k)
    return {
        "k": k,
        "pairs": pairs,
        "clusters": len(sizes),
        "duplicates": sum(s - 1 for s in sizes),
        "merged_documents": sum(s for s in sizes if s > 1),
        "largest_cluster": max(sizes),
    }


def write_warc_records(path: Path | str, records: list[tuple[str, str, str, bytes]]) -> int:
    """Write a WARC file with warcio's WARCWriter (a library independent of the job's FastWARC
    reader): each record (WARC-Type, target URI or "", WARC-Date, block), the block of a
    response or request being the whole HTTP message (status line, headers, body). One gzip
    member per record when the name ends in `.gz`. Returns the number of records written."""
    from io import BytesIO

    from warcio.warcwriter import WARCWriter

    content_types = {"response": "application/http; msgtype=response",
                     "request": "application/http; msgtype=request",
                     "revisit": "application/http; msgtype=response", "conversion": "text/plain"}
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=str(path).endswith(".gz"))
        for kind, url, date, block in records:
            writer.write_record(writer.create_warc_record(
                url, kind, payload=BytesIO(block), length=len(block),
                warc_content_type=content_types.get(kind, ""), warc_headers_dict={"WARC-Date": date}))
    return len(records)


# --- short texts: words, shingles, Jaccard ---------------------------------------------------

VOCAB = (
    "river stone garden window copper violin lantern harbor meadow pencil saddle orbit canyon "
    "velvet walnut ember falcon glacier"
).split()


def brute_word_shingles(text: str, n: int) -> set[str]:
    """Word n-grams of a text of lowercase ASCII words and single spaces, written out."""
    words = text.split(" ") if text else []
    if len(words) < n:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def brute_jaccard(a: set, b: set) -> float:
    """Counted element by element over the union (not the library's formula)."""
    universe = list(a) + [x for x in b if x not in a]
    if not universe:
        return 1.0
    both = sum(1 for x in universe if x in a and x in b)
    return both / len(universe)

"""Runs against a persistent fingerprint index (`--index`): a week of daily batches equals one
run over the week, reruns replace, repeated ids are counted, bad indexes give clear errors.

The fingerprints are planted by the tests (near duplicates a few bits from a centre, exact
repeats, random singletons) and read with --fingerprint-col, so the runs are quick; the
expectations come from brute force and from `oracle_days`, a plain-Python model of the
documented rules, never from the job itself.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from generators import brute_force_pairs, flip, planted_rows, popcount64, read_rows, to_signed, write_days
from helpers import ROOT, clusters_of, entries_of, entry_key, newest_manifest, pairs_of, report_of, run_job

from simhash_udf.index import finder as index_finder
from simhash_udf.index.store import IndexCorruptError

pytestmark = pytest.mark.spark

K = 3
SAMPLE = ROOT / "examples" / "sample.jsonl"


# -- planted data ------------------------------------------------------------------------
# -- an independent model of the documented rules ----------------------------------------
class UnionFind:
    def __init__(self) -> None:
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def oracle_days(days: list[list[tuple[int, int]]], k: int) -> tuple[dict, int]:
    """Each document's (cluster_id, status) after the days run in order against an index,
    by the rules of docs/index.md, with brute-force distances; and the number of bridged
    components. Indexed fingerprints keep their cluster; a day's component touching the index
    joins the cluster of its earliest indexed member (earliest run, then smallest id)."""
    indexed: dict[int, int] = {}  # fingerprint -> cluster_id
    cluster_day: dict[int, int] = {}  # cluster_id -> the day that created it
    result, bridges = {}, 0
    for day, rows in enumerate(days):
        fps = sorted({fp for _, fp in rows})
        uf = UnionFind()
        for i, a in enumerate(fps):
            uf.find(("b", a))
            for b in fps[i + 1:]:
                if popcount64(a ^ b) <= k:
                    uf.union(("b", a), ("b", b))
            for old in indexed:
                if popcount64(a ^ old) <= k:  # distance 0: the batch fingerprint is the indexed one
                    uf.union(("b", a), ("i", old))
        members = defaultdict(list)
        for node in list(uf.parent):
            members[uf.find(node)].append(node)
        comp_cluster = {}
        for root, nodes in members.items():
            touched = {indexed[fp] for kind, fp in nodes if kind == "i"}
            if len(touched) > 1:
                bridges += 1
            if touched:
                comp_cluster[root] = min(touched, key=lambda c: (cluster_day[c], c))
        own_kept = {}
        for doc_id, fp in sorted(rows):
            root = uf.find(("b", fp))
            if root in comp_cluster:
                result[doc_id] = (comp_cluster[root], "duplicate")
            else:
                kept = own_kept.setdefault(root, doc_id)
                cluster_day.setdefault(kept, day)
                result[doc_id] = (kept, "kept" if kept == doc_id else "duplicate")
        for doc_id, fp in sorted(rows):
            indexed.setdefault(fp, result[doc_id][0])
    return result, bridges


@pytest.mark.slow
def test_a_week_of_days_gives_the_pairs_of_one_run_over_the_week(spark, dedupe_main, tmp_path):
    rows = planted_rows(seed=7, groups=250, singletons=1200)
    day_files = write_days(tmp_path, rows, days=7, seed=11)
    days = [read_rows(p) for p in day_files]
    everything = [r for d in days for r in d]
    week = tmp_path / "week.parquet"
    pq.write_table(pa.concat_tables([pq.read_table(p) for p in day_files]), week)

    assert run_job(dedupe_main, spark, week, tmp_path / "union", None) == 0
    union_pairs = pairs_of(spark, tmp_path / "union")
    assert union_pairs == brute_force_pairs(everything, K)
    assert len(union_pairs) > 300, "the planted groups should give many pairs"

    index = tmp_path / "index"
    daily_pairs: list[tuple] = []
    daily_clusters: dict = {}
    reports = []
    for day, path in enumerate(day_files):
        out = tmp_path / f"out{day}"
        assert run_job(dedupe_main, spark, path, out, index, "--run-id", f"day{day}") == 0
        daily_pairs += pairs_of(spark, out)
        daily_clusters.update(clusters_of(spark, out))
        reports.append(report_of(out)["index"])

    # The same pairs, each once over the week.
    assert len(daily_pairs) == len(set(daily_pairs))
    assert set(daily_pairs) == union_pairs

    # Clusters and statuses follow the documented rules exactly.
    expected, bridges = oracle_days(days, K)
    got = {i: (r["cluster_id"], "kept" if r["status"] == "kept" else "duplicate") for i, r in daily_clusters.items()}
    assert got == expected
    assert sum(r["bridged_components"] for r in reports) == bridges
    # Where no component bridged indexed clusters, duplicates are the union run's.
    union = clusters_of(spark, tmp_path / "union")
    differing = [i for i, r in union.items() if (r["status"] == "kept") != (daily_clusters[i]["status"] == "kept")]
    assert bool(differing) == bool(bridges)

    # The index holds every distinct fingerprint once, and its kept documents.
    entries = entries_of(spark, index)
    assert sorted(e["fingerprint"] for e in entries) == sorted({fp for _, fp in everything})
    kept_ids = {i for i, r in daily_clusters.items() if r["status"] == "kept"}
    assert {e["id"] for e in entries if e["id"] == e["cluster_id"]} == kept_ids
    assert {e["run_id"] for e in entries} == {f"day{d}" for d in range(7)}
    assert all(e["url"] == f"https://example.com/{e['id']}" for e in entries)
    assert sum(r["batch_fingerprints_already_indexed"] for r in reports) > 0
    assert reports[-1]["version"] == 7
    # The lookup's counts day by day, against brute force over the fingerprints indexed before.
    indexed: set = set()
    for day, report in zip(days, reports):
        batch = {fp for _, fp in day}
        assert report["batch_fingerprints_already_indexed"] == len(batch & indexed)
        assert report["pairs_with_indexed"] == sum(1 for a in batch for b in indexed if 0 < popcount64(a ^ b) <= K)
        indexed |= batch
    assert sum(r["pairs_with_indexed"] for r in reports) > 0


def fresh_index(two_days, tmp_path: Path) -> Path:
    index = tmp_path / "index"
    shutil.copytree(two_days["template"], index)
    return index


@pytest.mark.slow
def test_rerunning_a_run_id_replaces_its_work(spark, dedupe_main, two_days, tmp_path):
    index = fresh_index(two_days, tmp_path)
    out = tmp_path / "out"
    assert run_job(dedupe_main, spark, two_days["day2"], out, index, "--run-id", "d2") == 0
    first = (clusters_of(spark, out), pairs_of(spark, out), entry_key(entries_of(spark, index)))
    assert run_job(dedupe_main, spark, two_days["day2"], out, index, "--run-id", "d2", "--overwrite") == 0
    again = (clusters_of(spark, out), pairs_of(spark, out), entry_key(entries_of(spark, index)))
    assert again == first
    entries = entries_of(spark, index)
    assert len({e["fingerprint"] for e in entries}) == len(entries), "no double entries"
    report = report_of(out)["index"]
    assert report["replaced_run"] and report["version"] == 3
    # And it equals the reference run made on a copy of the same day-1 index.
    assert first[2] == entry_key(entries_of(spark, two_days["reference_index"]))
    assert first[0] == clusters_of(spark, two_days["reference_out"])


def test_rerunning_an_earlier_run_after_later_ones_is_refused(spark, dedupe_main, two_days, tmp_path, capsys):
    index = tmp_path / "index"
    shutil.copytree(two_days["reference_index"], index)
    code = run_job(dedupe_main, spark, two_days["day1"], tmp_path / "out", index, "--run-id", "d1")
    assert code == 2
    assert "later runs built on it (d2)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_ids_already_in_the_index_are_skipped_and_counted(spark, dedupe_main, two_days, tmp_path):
    index = fresh_index(two_days, tmp_path)
    entries = entries_of(spark, index)
    again = sorted(e["id"] for e in entries)[:3]
    fresh_fp = to_signed(random.Random(99).getrandbits(64))
    table = pa.table({"id": pa.array(again + [10_000_000], pa.int64()), "fp": pa.array([fresh_fp] * 4, pa.int64())})
    source = tmp_path / "again.parquet"
    pq.write_table(table, source)
    out = tmp_path / "out"
    assert run_job(dedupe_main, spark, source, out, index, "--run-id", "again") == 0
    rows = clusters_of(spark, out)
    for doc_id in again:
        assert rows[doc_id]["status"] == "skipped" and rows[doc_id]["reason"] == "id_in_index"
    assert rows[10_000_000]["status"] == "kept"
    report = report_of(out)
    assert report["index"]["repeated_ids"] == 3
    assert report["index"]["entries_added"] == 1
    after = entries_of(spark, index)
    assert len(after) == len(entries) + 1
    assert len({e["id"] for e in after}) == len(after)


@pytest.mark.slow
def test_a_run_that_adds_no_fingerprint_leaves_an_index_the_next_run_reads(spark, dedupe_main, two_days, tmp_path):
    """A run whose documents the index holds already publishes a segment without key rows: its
    keys/ folder has no Parquet file. Every later run must still read the index (they failed
    with Spark's UNABLE_TO_INFER_SCHEMA, deep in the run) and match against it."""
    index = tmp_path / "index"
    shutil.copytree(two_days["reference_index"], index)
    assert run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out-again", index, "--run-id", "again") == 0
    added = report_of(tmp_path / "out-again")["index"]
    assert (added["entries_added"], added["keys_added"]) == (0, 0)
    # The index's entries, read with pyarrow from the folders the newest manifest lists.
    segments = [index / s["folder"] / "entries" for s in newest_manifest(index)["segments"]]
    entries = pa.concat_tables([pq.read_table(folder).select(["fingerprint", "cluster_id"]) for folder in segments])
    indexed = [(fp, cid) for fp, cid in zip(*entries.to_pydict().values()) if fp is not None]
    target = indexed[0][0]
    near, fresh = flip(target, [1, 40]), to_signed(random.Random(7).getrandbits(64))
    source = tmp_path / "next.parquet"
    pq.write_table(pa.table({"id": pa.array([20_000_001, 20_000_002], pa.int64()), "fp": pa.array([near, fresh], pa.int64())}), source)
    out = tmp_path / "out-next"
    assert run_job(dedupe_main, spark, source, out, index, "--run-id", "next") == 0
    rows = clusters_of(spark, out)
    near_clusters = {cid for fp, cid in indexed if popcount64(fp ^ near) <= K}
    assert rows[20_000_001]["status"] == "near_duplicate" and rows[20_000_001]["cluster_id"] in near_clusters
    if not any(popcount64(fp ^ fresh) <= K for fp, _ in indexed):
        assert rows[20_000_002]["status"] == "kept"


def test_a_different_k_is_refused(spark, dedupe_main, two_days, tmp_path, capsys):
    index = fresh_index(two_days, tmp_path)
    argv = ["--input", str(two_days["day2"]), "--output", str(tmp_path / "out"), "--fingerprint-col", "fp",
            "--k", "4", "--index", str(index)]
    assert dedupe_main(argv, spark=spark) == 2
    assert "was built with k = 3" in capsys.readouterr().err


def test_a_truncated_index_file_is_named(spark, dedupe_main, two_days, tmp_path, capsys):
    index = fresh_index(two_days, tmp_path)
    victim = sorted(index.glob("segments/*/keys/table=*/*.parquet"))[0]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    (victim.parent / f".{victim.name}.crc").unlink(missing_ok=True)
    assert run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index) == 2
    err = capsys.readouterr().err
    assert victim.name in err and "truncated" in err
    assert not (tmp_path / "out").exists()


def test_a_corrupt_index_file_of_the_same_size_is_named(spark, dedupe_main, two_days, tmp_path, capsys):
    index = fresh_index(two_days, tmp_path)
    victim = sorted(index.glob("segments/*/entries/*.parquet"))[0]
    victim.write_bytes(b"\0" * victim.stat().st_size)
    (victim.parent / f".{victim.name}.crc").unlink(missing_ok=True)
    assert run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index) == 2
    err = capsys.readouterr().err
    assert victim.name in err and "cannot be read" in err
    # Spark's own reason, which our words do not contain: a file of zeros has no Parquet
    # magic number at its tail.
    assert "magic number" in err


def test_a_spark_error_that_only_names_an_index_file_is_not_called_corruption(spark, tmp_path):
    # A real Spark error whose text names an index file but is no failure to read it (it
    # stands for a lost executor or a memory error while the index is read): telling the user
    # to restore the file or remove its run would be wrong, so it is raised as it is.
    root = str(tmp_path / "index")
    named = f"{root}/segments/0001-day1/entries/part-00000.parquet"
    query = f"SELECT raise_error('executor lost while reading {named}')"
    with pytest.raises(Exception) as caught:
        index_finder._guarded(root, lambda: spark.sql(query).collect())
    assert not isinstance(caught.value, IndexCorruptError)
    assert "executor lost" in str(caught.value)


def test_a_truncated_manifest_is_named(spark, dedupe_main, two_days, tmp_path, capsys):
    index = fresh_index(two_days, tmp_path)
    manifest = index / "manifests" / "00000001.json"
    manifest.write_text(manifest.read_text()[:40])
    assert run_job(dedupe_main, spark, two_days["day2"], tmp_path / "out", index) == 2
    err = capsys.readouterr().err
    assert "00000001.json" in err and "truncated or corrupt" in err


@pytest.mark.slow
def test_exact_copies_and_short_texts_across_days(spark, dedupe_main, tmp_path):
    """Text input: a page copied on a later day (under a new id, in other case and spacing) is
    an exact duplicate of the indexed one; a text too short for a fingerprint is matched by its
    exact key only."""
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    originals = [r for r in rows if r["kind"] == "original" and r["text"].strip()][:6]
    day1 = [{"id": f"a{i}", "text": r["text"]} for i, r in enumerate(originals)] + [{"id": "a-short", "text": "Hi there"}]
    day2 = [{"id": f"b{i}", "text": "  " + r["text"].upper() + " "} for i, r in enumerate(originals[:3])]
    day2 += [{"id": "b-short", "text": "hi   THERE"}, {"id": "b-new", "text": "An entirely new page about something else, with enough words to count."}]
    for name, docs in (("d1", day1), ("d2", day2)):
        (tmp_path / f"{name}.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
    index = tmp_path / "index"
    for name in ("d1", "d2"):
        argv = ["--input", str(tmp_path / f"{name}.jsonl"), "--output", str(tmp_path / f"out-{name}"),
                "--index", str(index), "--run-id", name]
        assert dedupe_main(argv, spark=spark) == 0
    day1_rows = clusters_of(spark, tmp_path / "out-d1")
    got = clusters_of(spark, tmp_path / "out-d2")
    for i in range(3):
        assert got[f"b{i}"]["status"] == "exact_duplicate", got[f"b{i}"]
        assert got[f"b{i}"]["cluster_id"] == day1_rows[f"a{i}"]["cluster_id"]
        assert got[f"b{i}"]["distance"] == 0
    assert day1_rows["a-short"]["reason"] == "too_short"
    assert got["b-short"]["status"] == "exact_duplicate" and got["b-short"]["cluster_id"] == "a-short"
    assert got["b-new"]["status"] == "kept"
    assert report_of(tmp_path / "out-d2")["index"]["documents_joining_indexed_clusters"] == 4


def test_index_maintenance_info_remove_run_compact(spark, index_main, two_days, tmp_path, capsys):
    main = index_main
    index = tmp_path / "index"
    shutil.copytree(two_days["reference_index"], index)
    day1_entries = entry_key(entries_of(spark, two_days["template"]))
    both = entry_key(entries_of(spark, index))

    assert main(["info", "--index", str(index), "--json"], spark=spark) == 0
    info = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in info["runs"]] == ["d1", "d2"]
    assert info["entries"] == len(both) and info["segments"] == 2

    assert main(["remove-run", "--index", str(index), "d1"], spark=spark) == 2
    assert "pass --force" in capsys.readouterr().err

    # Compact, then undo the last run: its entries go, day 1's stay as they were.
    leftover = index / "segments" / "killed-run-folder"
    leftover.mkdir()
    assert main(["compact", "--index", str(index), "--min-age", "0"], spark=spark) == 0
    compacted = json.loads(capsys.readouterr().out)
    assert compacted["segments_after"] == 1 and "segments/killed-run-folder" in compacted["removed_folders"]
    assert entry_key(entries_of(spark, index)) == both
    assert sorted(p.name for p in (index / "manifests").glob("*.json")) == ["00000003.json"]
    assert main(["remove-run", "--index", str(index), "d2"], spark=spark) == 0
    capsys.readouterr()
    assert entry_key(entries_of(spark, index)) == day1_entries
    assert main(["info", "--index", str(index)], spark=spark) == 0
    assert "version 4" in capsys.readouterr().out


# -- the plan: priced for the lookup, said once ----------------------------------------------
def stored_rows_met(n: int, k: int, blocks: int) -> float:
    """Stored rows one random batch fingerprint shares a table's key with, summed over tables,
    in an index of n random fingerprints (block widths: 64 bits in near-equal blocks)."""
    from itertools import combinations

    base, extra = divmod(64, blocks)
    widths = [base + (1 if i < extra else 0) for i in range(blocks)]
    return sum(n / 2.0 ** sum(widths[i] for i in kept) for kept in combinations(range(blocks), blocks - k))


def table_keys(fp: int, k: int, blocks: int) -> list[tuple[int, int]]:
    """(table, key) of a fingerprint in every table: the bits of the table's blocks."""
    from itertools import combinations

    base, extra = divmod(64, blocks)
    bounds, start = [], 0
    for i in range(blocks):
        width = base + (1 if i < extra else 0)
        bounds.append((start, width))
        start += width
    out = []
    for t, kept in enumerate(combinations(range(blocks), blocks - k)):
        mask = sum(((1 << bounds[b][1]) - 1) << bounds[b][0] for b in kept)
        out.append((t, (fp & 0xFFFFFFFFFFFFFFFF) & mask))
    return out


def key_sharing_pairs(new: set[int], old: set[int], k: int, blocks: int) -> int:
    """(batch, indexed) fingerprint pairs sharing a (table, key), counted once per table:
    the rows an equi-join of the two sides' band keys produces."""
    from collections import Counter

    old_keys = Counter(tk for fp in old for tk in table_keys(fp, k, blocks))
    return sum(old_keys[tk] for fp in new for tk in table_keys(fp, k, blocks))


def manifest_of(index: Path) -> dict:
    newest = sorted((index / "manifests").glob("*.json"))[-1]
    return json.loads(newest.read_text())


@pytest.mark.slow
def test_a_new_index_gets_a_plan_priced_for_its_lookup(spark, dedupe_main, tmp_path):
    """At the default --index-size (10^9), a batch fingerprint must meet few stored rows by
    chance once the index is full (the self-join's plan, 4 blocks, meets ~61,000)."""
    rows = planted_rows(seed=11, groups=5, singletons=20)
    (day,) = write_days(tmp_path, rows, days=1, seed=1)
    index = tmp_path / "index"
    assert run_job(dedupe_main, spark, day, tmp_path / "out", index, "--run-id", "d1") == 0
    blocks = manifest_of(index)["blocks"]
    met = stored_rows_met(10**9, K, blocks)
    assert met <= math.comb(blocks, K) and met <= 10, (blocks, met)
    plan = report_of(tmp_path / "out")["band_plan"]
    assert plan["blocks"] == blocks
    assert plan["chosen_by"] == "lookup cost model for 1,000,000,000 indexed fingerprints"


@pytest.fixture(scope="module")
def seven_blocks(spark, dedupe_main, tmp_path_factory):
    """Day 1 without an index and into a new index, both with --blocks 7; day 2 against the
    index without --blocks (so the manifest's plan is the only reason for 7 blocks)."""
    folder = tmp_path_factory.mktemp("seven_blocks")
    rows = planted_rows(seed=21, groups=40, singletons=150)
    day1, day2 = write_days(folder, rows, days=2, seed=2)
    index = folder / "index"
    assert run_job(dedupe_main, spark, day1, folder / "plain1", None, "--blocks", "7") == 0
    assert run_job(dedupe_main, spark, day1, folder / "out1", index, "--blocks", "7", "--run-id", "d1") == 0
    assert run_job(dedupe_main, spark, day2, folder / "out2", index, "--run-id", "d2") == 0
    return {"folder": folder, "day1": day1, "day2": day2, "index": index}


@pytest.mark.slow
def test_report_of_an_index_run_says_the_plan_came_from_the_manifest(seven_blocks):
    assert manifest_of(seven_blocks["index"])["blocks"] == 7
    day1 = report_of(seven_blocks["folder"] / "out1")
    assert day1["band_plan"]["blocks"] == 7 and day1["band_plan"]["chosen_by"] == "--blocks"
    report = report_of(seven_blocks["folder"] / "out2")
    plan = report["band_plan"]
    assert plan["blocks"] == 7 and plan["tables"] == math.comb(7, K)
    assert "manifest" in plan["chosen_by"] and "7 blocks" in plan["chosen_by"], plan["chosen_by"]
    assert report["index"]["band_plan"]["chosen_by"] == plan["chosen_by"]
    # Priced for the lookup against what the index held, not only for the batch.
    entries = len(read_rows(seven_blocks["day1"]))
    held = plan["lookup"]["index_fingerprints"]
    assert 0 < held <= entries
    assert plan["lookup"]["expected_stored_rows_met_per_fingerprint"] == pytest.approx(
        stored_rows_met(held, K, 7), rel=1e-3
    )
    html = (seven_blocks["folder"] / "out2" / "report.html").read_text()
    assert plan["chosen_by"].replace("'", "&#x27;") in html or plan["chosen_by"] in html


def test_explain_with_an_index_shows_the_manifests_plan(spark, dedupe_main, seven_blocks, capsys):
    argv = ["--input", str(seven_blocks["day2"]), "--fingerprint-col", "fp", "--k", str(K),
            "--index", str(seven_blocks["index"]), "--explain"]
    capsys.readouterr()
    assert dedupe_main(argv, spark=spark) == 0
    printed = capsys.readouterr().out
    marked = [line.split() for line in printed.splitlines() if "<-" in line]
    assert len(marked) == 1 and marked[0][:2] == ["7", str(math.comb(7, K))], printed
    assert "manifest" in printed.splitlines()[0] and "manifest" in " ".join(marked[0])


def test_candidate_pairs_are_comparisons_with_and_without_an_index(seven_blocks):
    """join.candidate_pairs means comparisons made in both paths: a first run into an empty
    index compares exactly what the same run without an index does; against the index it adds
    the lookup's, which (no hot bucket here) are the (batch, indexed) pairs sharing a key."""
    folder = seven_blocks["folder"]
    plain, first, second = (report_of(folder / name) for name in ("plain1", "out1", "out2"))
    assert first["join"]["candidate_pairs"] == plain["join"]["candidate_pairs"]
    assert first["join"]["lookup_candidate_pairs"] == 0
    j = second["join"]
    assert j["hot_lookup_buckets"] == 0
    assert j["candidate_pairs"] == j["self_join_candidate_pairs"] + j["lookup_candidate_pairs"]
    new = {fp for _, fp in read_rows(seven_blocks["day2"])}
    old = {fp for _, fp in read_rows(seven_blocks["day1"])}
    assert j["lookup_candidate_pairs"] == key_sharing_pairs(new, old, K, 7)


# -- a hot key through an index run ------------------------------------------------------
def template_days(folder: Path, per_day: int, singletons: int, seed: int) -> tuple[Path, Path]:
    """Two days of one template's pages (a hot key): the template's page (day 1) and pages
    1 to 3 bits from it, the flips all among bits 0..32, so every table that keeps none of
    those bits puts the whole template in one (table, key) bucket; per_day distinct members a
    day (none shared), plus random singletons. Ids grow with the day."""
    rng = random.Random(seed)
    centre = rng.getrandbits(64)
    seen: set[int] = {to_signed(centre)}
    members = [to_signed(centre)]
    while len(members) < 2 * per_day:
        fp = flip(centre, rng.sample(range(33), rng.choice((1, 2, 3))))
        if fp not in seen:
            seen.add(fp)
            members.append(fp)
    paths, next_id = [], 1
    for day in range(2):
        fps = members[day * per_day:(day + 1) * per_day] + [to_signed(rng.getrandbits(64)) for _ in range(singletons)]
        rng.shuffle(fps)
        ids = list(range(next_id, next_id + len(fps)))
        next_id += len(ids)
        path = folder / f"template-day{day}.parquet"
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "fp": pa.array(fps, pa.int64())}), path)
        paths.append(path)
    return paths[0], paths[1]


def brute_force_components(fps: list[int], k: int) -> dict[int, int]:
    """Each fingerprint's component label over all pairs within k (numpy popcount in blocks,
    scipy's connected components): the definition the clusters must equal."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    values = np.array(sorted(set(fps)), dtype=np.int64).view(np.uint64)
    rows, cols = [], []
    for start in range(0, len(values), 1000):
        block = values[start:start + 1000]
        near = np.argwhere(np.bitwise_count(block[:, None] ^ values[None, :]) <= k)
        rows.append(near[:, 0] + start)
        cols.append(near[:, 1])
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = coo_matrix((np.ones(len(r)), (r, c)), shape=(len(values), len(values)))
    _, labels = connected_components(graph, directed=False)
    return dict(zip(values.view(np.int64).tolist(), labels.tolist()))


@pytest.mark.slow
def test_a_hot_key_against_the_index_is_summarised_and_clusters_stay_exact(spark, dedupe_main, tmp_path):
    from simhash_udf.core import hot_runs

    per_day = hot_runs.HOT_RUN_SIZE * 13 // 10  # each day alone below twice the threshold
    day1, day2 = template_days(tmp_path, per_day, singletons=100, seed=7)
    index = tmp_path / "index"
    assert run_job(dedupe_main, spark, day1, tmp_path / "out1", index, "--run-id", "d1") == 0
    assert run_job(dedupe_main, spark, day2, tmp_path / "out2", index, "--run-id", "d2") == 0
    report = report_of(tmp_path / "out2")
    blocks = manifest_of(index)["blocks"]
    j, x = report["join"], report["index"]

    # The hot bucket was summarised, not joined in full. Buckets by brute force: (batch,
    # indexed) members per (table, key); hot when they are more than the threshold together.
    assert j["pairs_summarised"] is True and x["hot_lookup_buckets"] >= 1, (j, x)
    from collections import Counter

    new_keys = Counter(tk for fp in {fp for _, fp in read_rows(day2)} for tk in table_keys(fp, K, blocks))
    old_keys = Counter(tk for fp in {fp for _, fp in read_rows(day1)} for tk in table_keys(fp, K, blocks))
    shared = [(new_keys[tk], old_keys[tk]) for tk in new_keys if tk in old_keys]
    hot = sorted((b, s) for b, s in shared if b + s > hot_runs.HOT_RUN_SIZE)
    cold_pairs = sum(b * s for b, s in shared if b + s <= hot_runs.HOT_RUN_SIZE)
    hot_pairs = sum(b * s for b, s in hot)
    assert hot and hot[0][0] >= per_day - 1 and hot[0][1] >= per_day - 1  # the template's bucket
    assert x["hot_lookup_buckets"] == len(hot)
    assert sorted((h["batch_members"], h["indexed_members"]) for h in x["lookup_hot_buckets"]) == hot
    # Outside hot buckets every key-sharing pair is compared; inside, far fewer than b x s.
    hot_comparisons = j["lookup_candidate_pairs"] - cold_pairs
    assert 0 < hot_comparisons < hot_pairs / 10, (hot_comparisons, hot_pairs)
    assert hot_comparisons == sum(h["comparisons"] for h in x["lookup_hot_buckets"])
    assert j["candidate_pairs"] == j["self_join_candidate_pairs"] + j["lookup_candidate_pairs"]

    # Clusters of the two days together equal the brute-force components of their union.
    assert x["bridged_components"] == 0
    docs = read_rows(day1) + read_rows(day2)
    label = brute_force_components([fp for _, fp in docs], K)
    expected = defaultdict(set)
    for doc_id, fp in docs:
        expected[label[fp]].add(doc_id)
    got = defaultdict(set)
    for out in ("out1", "out2"):
        for doc_id, row in clusters_of(spark, tmp_path / out).items():
            got[row["cluster_id"]].add(doc_id)
    assert sorted(map(sorted, got.values())) == sorted(map(sorted, expected.values()))

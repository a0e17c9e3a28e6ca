"""The whole job, through `main()` in-process, on the sample corpus and small variants."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from generators import brute_force_pairs, popcount64
from helpers import ROOT

pytestmark = pytest.mark.spark

SAMPLE = ROOT / "examples" / "sample.jsonl"


def _sample_rows() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def sample_run(spark, dedupe_main, tmp_path_factory):
    out = tmp_path_factory.mktemp("e2e") / "out"
    code = dedupe_main(["--input", str(SAMPLE), "--output", str(out)], spark=spark)
    assert code == 0
    return out


def test_every_document_has_one_row_and_a_status(spark, sample_run):
    rows = _sample_rows()
    clusters = spark.read.parquet(str(sample_run / "clusters")).collect()
    assert sorted(r["id"] for r in clusters) == sorted(r["id"] for r in rows)
    assert {r["status"] for r in clusters} <= {"kept", "exact_duplicate", "near_duplicate", "skipped"}
    by_id = {r["id"]: r for r in clusters}
    for row in rows:
        if not (row["text"] or "").strip():
            assert by_id[row["id"]]["status"] == "skipped"
            assert by_id[row["id"]]["reason"] == "empty"


def test_clusters_follow_the_planted_groups(spark, sample_run):
    """No cluster mixes two of the groups the sample's author planted; exact copies (also in
    Traditional script) always join their original; a near copy joins it whenever their
    fingerprints are within k. (How many near copies are within k is simhash's recall, which
    docs/defaults.md measures; it is not a property of the job.)"""
    rows = {r["id"]: r for r in _sample_rows() if (r["text"] or "").strip()}
    clusters = {r["id"]: r for r in spark.read.parquet(str(sample_run / "clusters")).collect()}
    group_of_cluster = defaultdict(set)
    for doc_id, row in rows.items():
        group_of_cluster[clusters[doc_id]["cluster_id"]].add(row["group"])
    merged = {c: g for c, g in group_of_cluster.items() if len(g) > 1}
    assert not merged, f"clusters merging different groups: {merged}"

    originals = {r["group"]: doc_id for doc_id, r in rows.items() if r["kind"] == "original"}
    joined_near = 0
    for doc_id, row in rows.items():
        if row["group"] not in originals or row["kind"] == "original":
            continue
        original = clusters[originals[row["group"]]]
        mine = clusters[doc_id]
        if row["kind"] == "exact_copy":
            assert mine["cluster_id"] == original["cluster_id"], doc_id
        elif mine["fingerprint"] is not None and original["fingerprint"] is not None:
            if popcount64(mine["fingerprint"] ^ original["fingerprint"]) <= 3:
                assert mine["cluster_id"] == original["cluster_id"], doc_id
                joined_near += 1
    assert joined_near >= 5, "the sample should show near copies found through fingerprints"


def test_kept_document_is_the_smallest_id_and_statuses_agree(spark, sample_run):
    clusters = spark.read.parquet(str(sample_run / "clusters")).collect()
    members = defaultdict(list)
    for r in clusters:
        if r["status"] != "skipped":
            members[r["cluster_id"]].append(r)
    for cluster_id, rows in members.items():
        assert cluster_id == min(r["id"] for r in rows)
        kept = [r for r in rows if r["status"] == "kept"]
        assert len(kept) == 1 and kept[0]["id"] == cluster_id
    texts = {r["id"]: r["text"] for r in _sample_rows()}
    kinds = {r["id"]: r["kind"] for r in _sample_rows()}
    for r in clusters:
        if r["status"] == "exact_duplicate":
            assert kinds[r["id"]] in ("exact_copy", "traditional_script"), (r["id"], texts[r["id"]][:60])
        if r["status"] == "near_duplicate":
            assert kinds[r["id"]] in ("near_copy", "traditional_script"), r["id"]


def _sketch_route_pairs(clusters: list) -> tuple[set[tuple], dict[tuple, float]]:
    """The sketch route's pairs over the sample, computed without Spark: each fingerprint's
    sketch is that of its text with the smallest exact key (SHA-256 of the normalised text),
    named by the smallest id carrying it; a pair when the sketches agree on a whole band,
    estimate a Jaccard >= the default threshold and the fingerprints are within its distance.
    Returns (id_a, id_b, distance) of those pairs and the estimate of every pair of sketched
    fingerprints, by (id_a, id_b)."""
    import hashlib

    import numpy as np

    from simhash_udf.core import sketch
    from simhash_udf.core.config import FingerprintConfig, SketchConfig
    from simhash_udf.core.fingerprint import signatures
    from simhash_udf.core.normalise import normalise

    config = SketchConfig()
    text_of = {r["id"]: normalise(r["text"] or "") for r in _sample_rows()}
    nodes: dict[int, tuple[bytes, str, object]] = {}  # fingerprint -> (exact key, text, smallest id)
    for r in clusters:
        fp, doc_id = r["fingerprint"], r["id"]
        if fp is None:
            continue
        key = hashlib.sha256(text_of[doc_id].encode("utf-8")).digest()
        best = nodes.get(fp)
        text_key = min((key, text_of[doc_id]), best[:2]) if best else (key, text_of[doc_id])
        smallest = min(doc_id, best[2]) if best else doc_id
        nodes[fp] = (*text_key, smallest)
    fps = sorted(nodes)
    found = signatures([nodes[fp][1] for fp in fps], FingerprintConfig(), config)
    pairs, estimates = set(), {}
    for i, fa in enumerate(fps):
        for j in range(i + 1, len(fps)):
            fb = fps[j]
            if not (found.has_sketch[i] and found.has_sketch[j]):
                continue
            a, b = found.sketch[i : i + 1], found.sketch[j : j + 1]
            ids = (min(nodes[fa][2], nodes[fb][2]), max(nodes[fa][2], nodes[fb][2]))
            estimate = float(sketch.estimated_jaccard(a, b)[0])
            estimates[ids] = estimate
            d = popcount64(fa ^ fb)
            if bool(sketch.bands_agree(a, b, config)[0]) and estimate >= config.jaccard and d <= config.max_distance:
                pairs.add((*ids, d))
    assert np.all(found.has_fingerprint)
    return pairs, estimates


def test_pairs_equal_brute_force_over_the_fingerprints_and_sketches(spark, sample_run):
    clusters = spark.read.parquet(str(sample_run / "clusters")).collect()
    within_k = brute_force_pairs([(r["id"], r["fingerprint"]) for r in clusters], k=3)
    by_sketch, estimates = _sketch_route_pairs(clusters)
    pairs = spark.read.parquet(str(sample_run / "pairs")).collect()
    got = [(r["id_a"], r["id_b"], r["distance"]) for r in pairs]
    assert len(got) == len(set(got))
    assert set(got) == within_k | by_sketch
    assert within_k, "the sample should hold near duplicates at distance 1..3"
    assert {p for p in by_sketch if p[2] > 3}, "and near duplicates beyond k that only the sketches find"
    for r in pairs:
        if r["jaccard"] is None:  # a text under --sketch-min-chars: no sketch, no estimate
            assert (r["id_a"], r["id_b"]) not in estimates
        else:
            assert r["jaccard"] == pytest.approx(estimates[(r["id_a"], r["id_b"])], abs=1e-9)


def test_deduped_holds_the_kept_rows_with_all_their_columns(spark, sample_run):
    deduped = spark.read.parquet(str(sample_run / "deduped"))
    clusters = spark.read.parquet(str(sample_run / "clusters"))
    kept = {r["id"] for r in clusters.where("status = 'kept'").collect()}
    source = {r["id"]: r for r in _sample_rows()}
    assert set(deduped.columns) == set(next(iter(source.values())).keys())
    rows = deduped.collect()
    assert {r["id"] for r in rows} == kept
    for r in rows:
        assert r.asDict() == source[r["id"]]


def test_report_counts_match_the_outputs(spark, sample_run):
    report = json.loads((sample_run / "report.json").read_text())
    clusters = spark.read.parquet(str(sample_run / "clusters"))
    statuses = {r["status"]: r["count"] for r in clusters.groupBy("status").count().collect()}
    counts = report["counts"]
    assert counts["input_rows"] == len(_sample_rows()) == counts["documents"]
    assert counts["kept"] == statuses.get("kept", 0)
    assert counts["exact_duplicates"] == statuses.get("exact_duplicate", 0)
    assert counts["near_duplicates"] == statuses.get("near_duplicate", 0)
    assert sum(counts["skipped"].values()) == statuses.get("skipped", 0)
    assert counts["clusters"] == counts["kept"]
    assert sum(report["cluster_sizes"].values()) == counts["clusters"]
    pairs = spark.read.parquet(str(sample_run / "pairs")).count()
    assert report["join"]["verified_pairs"] == pairs == sum(report["distances"].values())
    assert report["join"]["candidate_pairs"] >= pairs
    assert report["band_plan"]["blocks"] > report["parameters"]["k"]
    assert set(report["stage_seconds"]) >= {"read", "signatures", "verify", "components", "clusters"}
    # Every Spark job of the run is counted, each in the stage that ran it: a count taken
    # outside any stage would be a job the report's breakdown cannot show.
    assert set(report["stage_jobs"]) == set(report["stage_seconds"])
    assert report["spark_jobs"] == sum(report["stage_jobs"].values()) > 0
    assert not any(p.name.startswith(".") for p in sample_run.parent.iterdir()), "staging left behind"


@pytest.mark.parametrize("components_path", ["one_task", "rounds"])
def test_every_spark_job_is_a_stage_s_without_the_sketch_route(spark, dedupe_main, tmp_path, monkeypatch, components_path):
    """Without the sketch route (`--sketch none`) the components' edges are not counted by a
    stage before them: their count, and the distributed rounds' checks, are jobs of stage
    components, so that the report's stage_jobs still add up to spark_jobs."""
    from simhash_udf.stages import components

    if components_path == "rounds":
        monkeypatch.setattr(components, "LOCAL_MAX_EDGES", 0)
    out = tmp_path / "out"
    assert dedupe_main(["--input", str(SAMPLE), "--output", str(out), "--sketch", "none"], spark=spark) == 0
    report = json.loads((out / "report.json").read_text())
    assert not report["sketch"]["applied"] and report["join"]["verified_pairs"] > 0
    assert report["spark_jobs"] == sum(report["stage_jobs"].values()) > 0
    assert report["stage_jobs"]["components"] > 0


def test_the_sample_is_clustered_on_the_driver_as_by_spark(spark, dedupe_main, sample_run, tmp_path, monkeypatch):
    """A small run assigns its clusters on the driver (`clusters.assigned_on_driver`); forced
    through Spark's aggregates and joins, the same input gives the same clusters/, deduped/
    and counts, in more Spark jobs."""
    from simhash_udf.stages import clusters as clusters_stage

    monkeypatch.setattr(clusters_stage, "DRIVER_MAX_DOCUMENTS", 0)
    out = tmp_path / "by-spark"
    assert dedupe_main(["--input", str(SAMPLE), "--output", str(out)], spark=spark) == 0

    def outputs(folder):
        report = json.loads((folder / "report.json").read_text())
        return (
            sorted(tuple(r) for r in spark.read.parquet(str(folder / "clusters")).collect()),
            sorted(r["id"] for r in spark.read.parquet(str(folder / "deduped")).collect()),
            report["counts"],
            report["cluster_sizes"],
        ), report["stage_jobs"]["clusters"]

    (on_driver, driver_jobs), (by_spark, spark_jobs) = outputs(sample_run), outputs(out)
    assert on_driver == by_spark
    assert driver_jobs < spark_jobs


def test_the_sample_interpreted_gives_what_compiled_code_gives(spark, dedupe_main, tmp_path, monkeypatch):
    """A small run evaluates its expressions interpreted (`session.interpret_small_run`): its
    front (read, parse, the ids' check) by the input's bytes, the rest by its documents. The
    same input gives the same clusters/, pairs/, deduped/ and counts interpreted throughout,
    with only the front interpreted (the documents' limit at 0: the front's settings are given
    back before the rest), and compiled throughout (both limits at 0). Every run gives the
    session back its own settings."""
    from simhash_udf.run import pipeline, session

    keys = list(session.INTERPRETED_SETTINGS)
    before = {key: spark.conf.get(key) for key in keys}
    assert before != session.INTERPRETED_SETTINGS  # the fixture's session compiles
    seen = []
    real = session.interpret_small_run

    def spy(spark_, documents=None, input_bytes=None):
        interpreted = real(spark_, documents=documents, input_bytes=input_bytes)
        by = "bytes" if input_bytes is not None else "documents"
        seen.append((by, interpreted, {key: spark_.conf.get(key) for key in keys}))
        return interpreted

    monkeypatch.setattr(pipeline.session, "interpret_small_run", spy)
    interpreted, front_only, compiled = tmp_path / "interpreted", tmp_path / "front", tmp_path / "compiled"
    assert dedupe_main(["--input", str(SAMPLE), "--output", str(interpreted)], spark=spark) == 0
    monkeypatch.setattr(session, "INTERPRETED_MAX_DOCUMENTS", 0)
    assert dedupe_main(["--input", str(SAMPLE), "--output", str(front_only)], spark=spark) == 0
    monkeypatch.setattr(session, "INTERPRETED_MAX_INPUT_BYTES", 0)
    assert dedupe_main(["--input", str(SAMPLE), "--output", str(compiled)], spark=spark) == 0
    on, off = session.INTERPRETED_SETTINGS, before
    assert seen == [
        ("bytes", True, on), ("documents", True, on),
        ("bytes", True, on), ("documents", False, off),
        ("bytes", False, off), ("documents", False, off),
    ]
    assert {key: spark.conf.get(key) for key in keys} == before

    def outputs(folder):
        report = json.loads((folder / "report.json").read_text())
        return (
            sorted(tuple(r) for r in spark.read.parquet(str(folder / "clusters")).collect()),
            sorted(tuple(r) for r in spark.read.parquet(str(folder / "pairs")).collect()),
            sorted(r["id"] for r in spark.read.parquet(str(folder / "deduped")).collect()),
            report["counts"], report["cluster_sizes"], report["distances"],
        )

    assert outputs(interpreted) == outputs(front_only) == outputs(compiled)


@pytest.mark.slow
def test_same_clusters_whatever_the_partitioning(spark, dedupe_main, tmp_path):
    """Input split into 1 file vs 7 files, shuffle partitions 1 vs 8: identical outputs."""
    rows = _sample_rows()
    one = tmp_path / "one"
    one.mkdir()
    (one / "all.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    many = tmp_path / "many"
    many.mkdir()
    for part in range(7):
        chunk = rows[part::7][::-1]
        (many / f"part-{part}.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in chunk), encoding="utf-8")
    results = []
    for source, partitions in ((one, "1"), (many, "8")):
        spark.conf.set("spark.sql.shuffle.partitions", partitions)
        try:
            out = tmp_path / f"out-{partitions}"
            assert dedupe_main(["--input", str(source), "--output", str(out)], spark=spark) == 0
        finally:
            spark.conf.set("spark.sql.shuffle.partitions", "4")
        clusters = sorted(tuple(r) for r in spark.read.parquet(str(out / "clusters")).collect())
        pairs = sorted(tuple(r) for r in spark.read.parquet(str(out / "pairs")).collect())
        results.append((clusters, pairs))
    assert results[0] == results[1]

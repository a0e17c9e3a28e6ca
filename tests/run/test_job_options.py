"""Command-line options end to end: formats, id types, HTML, given fingerprints, keep rules."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from generators import brute_force_pairs
from helpers import ROOT

pytestmark = pytest.mark.spark

SAMPLE_ROWS = [
    json.loads(line)
    for line in (ROOT / "examples" / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]


def _sample(group_prefix: str) -> list[dict]:
    return [r for r in SAMPLE_ROWS if r["group"].startswith(group_prefix) and r["text"].strip()]


def _clusters(spark, out: Path) -> dict:
    return {r["id"]: r for r in spark.read.parquet(str(out / "clusters")).collect()}


@pytest.mark.slow
def test_csv_with_string_ids_keeps_them_strings(spark, dedupe_main, tmp_path):
    rows = _sample("en-news-1") + _sample("en-news-2")
    src = tmp_path / "in.csv"
    import csv

    with src.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["doc_id", "body", "url"])
        for r in rows:
            writer.writerow([f"doc-{r['id']:03d}", r["text"], r["url"]])
    out = tmp_path / "out"
    args = ["--input", str(src), "--output", str(out), "--id-col", "doc_id", "--text-col", "body"]
    assert dedupe_main(args, spark=spark) == 0
    clusters = spark.read.parquet(str(out / "clusters"))
    assert dict(clusters.dtypes)["id"] == "string" and dict(clusters.dtypes)["cluster_id"] == "string"
    by_id = {r["id"]: r for r in clusters.collect()}
    # The original and its exact copies: one cluster, kept under the smallest string id.
    copies = sorted(f"doc-{r['id']:03d}" for r in rows if r["group"] == "en-news-1" and r["kind"] in ("original", "exact_copy"))
    assert len(copies) > 1 and {by_id[i]["cluster_id"] for i in copies} == {copies[0]}
    deduped = spark.read.parquet(str(out / "deduped"))
    assert sorted(deduped.columns) == ["body", "doc_id", "url"]


@pytest.mark.slow
def test_html_input_matches_pages_whose_markup_differs(spark, dedupe_main, tmp_path):
    """The same article in two page templates, with scripts and entities: with --html their
    visible texts are equal (exact duplicates); without it the markup is text and differs."""
    article = _sample("en-news-1")[0]["text"]
    other = _sample("en-news-2")[0]["text"]
    escaped = article.replace("&", "&amp;")
    page_a = (
        "<html><head><title>Daily Example</title><script>var tracking = {id: 12345, consent: true};</script>"
        "<style>body { font-family: serif; }</style></head><body><div class='article'><p>"
        + escaped.replace("\n", "</p><p>") + "</p></div></body></html>"
    )
    page_b = (
        "<!doctype html><html><head><script src='/bundle.js'></script><script>window.__STATE__ = "
        + json.dumps({"user": None, "ads": ["slot-1", "slot-2"], "experiments": list(range(40))})
        + ";</script></head><body><main><article>"
        + "".join(f"<p>{p}</p>" for p in escaped.split("\n")) + "</article></main></body></html>"
    )
    page_c = "<html><body><p>" + other.replace("&", "&amp;") + "</p></body></html>"
    rows = [{"id": 1, "html": page_a}, {"id": 2, "html": page_b}, {"id": 3, "html": page_c}]
    src = tmp_path / "pages.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    assert dedupe_main(["--input", str(src), "--output", str(out), "--text-col", "html", "--html"], spark=spark) == 0
    clusters = _clusters(spark, out)
    assert clusters[2]["cluster_id"] == 1 and clusters[2]["status"] == "exact_duplicate"
    assert clusters[3]["status"] == "kept"
    raw = tmp_path / "raw"
    assert dedupe_main(["--input", str(src), "--output", str(raw), "--text-col", "html"], spark=spark) == 0
    assert _clusters(spark, raw)[2]["status"] != "exact_duplicate"


def test_given_fingerprints_skip_text_processing(spark, dedupe_main, tmp_path):
    fingerprints = [0, 1, 3, 7, -1, -2, 2**62, -(2**63), 2**63 - 1, 12345, 12345]
    table = pa.table({"id": pa.array(range(100, 100 + len(fingerprints)), pa.int64()), "fp": pa.array(fingerprints, pa.int64())})
    pq.write_table(table, tmp_path / "fps.parquet")
    out = tmp_path / "out"
    assert dedupe_main(["--input", str(tmp_path / "fps.parquet"), "--output", str(out), "--fingerprint-col", "fp", "--k", "2"], spark=spark) == 0
    clusters = _clusters(spark, out)
    assert [clusters[100 + i]["fingerprint"] for i in range(len(fingerprints))] == fingerprints
    # Expected clusters from an independent union-find over all pairs within k = 2 (equal
    # fingerprints included): 0, 1, 3, 7, 2^62 and -2^63 are chained through 0; -1, -2 and
    # 2^63-1 through -1; 12345 twice.
    ids = list(range(100, 100 + len(fingerprints)))
    parent = {i: i for i in ids}

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for a in ids:
        for b in ids:
            if a < b and bin((fingerprints[a - 100] ^ fingerprints[b - 100]) & (2**64 - 1)).count("1") <= 2:
                ra, rb = find(a), find(b)
                parent[max(ra, rb)] = min(ra, rb)
    assert {i: clusters[i]["cluster_id"] for i in ids} == {i: find(i) for i in ids}
    assert len({find(i) for i in ids}) == 3
    assert clusters[110]["status"] == "near_duplicate" and clusters[110]["distance"] == 0
    pairs = {(r["id_a"], r["id_b"], r["distance"]) for r in spark.read.parquet(str(out / "pairs")).collect()}
    assert pairs == brute_force_pairs(list(zip(range(100, 111), fingerprints)), k=2)


@pytest.mark.slow
def test_keep_by_picks_the_newest_and_no_pairs_skips_pairs(spark, dedupe_main, tmp_path):
    rows = _sample("en-product-1")
    for i, r in enumerate(rows):
        r["fetched"] = f"2025-0{1 + (i * 5) % 9}-01"
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    args = ["--input", str(src), "--output", str(out), "--keep-by", "fetched", "--keep-order", "desc", "--no-pairs"]
    assert dedupe_main(args, spark=spark) == 0
    newest = max(rows, key=lambda r: (r["fetched"], -r["id"]))
    clusters = _clusters(spark, out)
    assert {c["cluster_id"] for c in clusters.values()} == {newest["id"]}
    assert clusters[newest["id"]]["status"] == "kept"
    assert not (out / "pairs").exists()
    assert [r["id"] for r in spark.read.parquet(str(out / "deduped")).collect()] == [newest["id"]]


@pytest.mark.slow
def test_text_format_reads_one_document_per_file(spark, dedupe_main, tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    rows = _sample("zh-")[:6]
    for r in rows:
        (pages / f"{r['id']}.txt").write_text(r["text"], encoding="utf-8")
    out = tmp_path / "out"
    assert dedupe_main(["--input", str(pages), "--output", str(out)], spark=spark) == 0
    clusters = _clusters(spark, out)
    assert len(clusters) == len(rows)
    assert all(doc_id.endswith(".txt") and doc_id.startswith("file:") for doc_id in clusters)
    by_name = {Path(doc_id).stem: c for doc_id, c in clusters.items()}
    for r in rows:
        mates = [o for o in rows if o["group"] == r["group"]]
        kept_name = Path(by_name[str(r["id"])]["cluster_id"]).stem
        assert kept_name in {str(o["id"]) for o in mates}


def test_explain_prints_the_plans_and_writes_nothing(spark, dedupe_main, tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in SAMPLE_ROWS), encoding="utf-8")
    assert dedupe_main(["--input", str(src), "--explain", "--k", "4"], spark=spark) == 0
    printed = capsys.readouterr().out
    assert f"band plans for {len(SAMPLE_ROWS)} fingerprints" in printed and "k = 4" in printed
    rows = [line.split() for line in printed.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[0]) for r in rows][0] == 5  # blocks start at k + 1
    chosen = [r for r in rows if "chosen" in " ".join(r)]
    assert len(chosen) == 1 and int(chosen[0][1]) == math.comb(int(chosen[0][0]), 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    assert dedupe_main(["--input", str(src), "--explain", "--k", "3", "--blocks", "6"], spark=spark) == 0
    marked = [line.split() for line in capsys.readouterr().out.splitlines() if line.endswith("<- --blocks")]
    assert len(marked) == 1 and marked[0][:2] == ["6", "20"]


@pytest.mark.slow
def test_explain_and_the_report_say_which_plan_and_for_how_many(spark, dedupe_main, tmp_path, capsys):
    """--explain plans for the input's rows and says they bound the distinct fingerprints the
    run plans for; the run's report names the plan that ran and the number it was priced for."""
    rows = [dict(r, id=r["id"]) for r in SAMPLE_ROWS]
    # Exact copies under new ids: more rows than distinct fingerprints.
    copies = [dict(r, id=f"copy-{r['id']}") for r in SAMPLE_ROWS if r["text"].strip()][:20]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows + copies), encoding="utf-8")
    capsys.readouterr()
    assert dedupe_main(["--input", str(src), "--explain"], spark=spark) == 0
    printed = capsys.readouterr().out
    n_rows = len(rows) + len(copies)
    assert f"band plans for {n_rows} fingerprints (the input's rows: an upper bound on the distinct ones)" in printed
    marked = [line for line in printed.splitlines() if "<-" in line]
    assert len(marked) == 1 and marked[0].endswith(f"chosen by the cost model for {n_rows} rows")
    assert "The run plans for its distinct fingerprints" in printed and "band_plan.chosen_by" in printed

    out = tmp_path / "out"
    assert dedupe_main(["--input", str(src), "--output", str(out)], spark=spark) == 0
    report = json.loads((out / "report.json").read_text())
    distinct = report["counts"]["distinct_fingerprints"]
    assert distinct < n_rows
    assert report["band_plan"]["chosen_by"] == f"cost model for {distinct:,} distinct fingerprints"
    html = (out / "report.html").read_text()
    assert f"cost model for {distinct:,} distinct fingerprints" in html


@pytest.mark.parametrize(
    ("options", "message"),
    [(["--index-size", "1"], "expected_size must be at least 2, got 1"), (["--run-id", ""], "--run-id must not be empty")],
)
def test_wrong_index_options_are_a_command_line_error(spark, dedupe_main, tmp_path, capsys, options, message):
    """Index options the index cannot take end the job with exit code 2 and one line, before
    anything is read or written (not with a traceback)."""
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in SAMPLE_ROWS), encoding="utf-8")
    argv = ["--input", str(src), "--output", str(tmp_path / "out"), "--index", str(tmp_path / "index"), *options]
    assert dedupe_main(argv, spark=spark) == 2
    assert capsys.readouterr().err.strip() == f"dedupe.py: error: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]

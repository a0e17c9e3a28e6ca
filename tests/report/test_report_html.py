"""report.html: the page from a report dict (pure), through the job (Spark), and in a real
browser (headless Chromium: the rendered DOM and a screenshot)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import ROOT

from simhash_udf.core import bands
from simhash_udf.core.config import SketchConfig
from simhash_udf.report import explain as explain_module
from simhash_udf.report import pair_samples
from simhash_udf.report.html_page import PairSample, bar_chart_svg, render

SVG = "{http://www.w3.org/2000/svg}"
SAMPLE = ROOT / "examples" / "sample.jsonl"
CHROMIUM = Path("/usr/bin/chromium")


def a_report() -> dict:
    """A report shaped as `report.build` makes it, every number different so a number shown
    in the wrong place is caught."""
    return {
        "simhash_udf_version": "0.1.0",
        "started_at": "2026-01-02T03:04:05Z",
        "input": {"path": "crawl/part-*.jsonl", "format": "json"},
        "parameters": {
            "k": 3, "write_pairs": True,
            "fingerprint": {"tokenizer": "auto", "ngram": 1, "weighting": "logtfidf", "min_features": 4},
        },
        "counts": {
            "input_rows": 1_234_577,
            "rejected_rows": {"unparseable": 3, "null_id": 7},
            "documents": 1_234_567,
            "skipped": {"empty": 411},
            "too_short": 52,
            "kept": 1_000_003,
            "exact_duplicates": 200_017,
            "near_duplicates": 34_136,
            "clusters": 1_000_001,
            "distinct_texts": 1_034_111,
            "too_short_texts": 49,
            "invalid_utf8_documents": 13,
            "distinct_fingerprints": 1_030_999,
        },
        "cluster_sizes": {"1": 980_000, "2": 15_000, "3-4": 4_000, "5-8": 900, "9-16": 101},
        "band_plan": {
            "chosen_by": "cost model", "k": 3, "blocks": 5, "tables": 10, "key_bits": [25, 26],
            "rows_shuffled": 10_309_990, "expected_random_candidates": 104_321.5,
        },
        "join": {
            "candidate_pairs": 987_654,
            "verified_pairs": 41_000,
            "largest_bucket": 4_321,
            "hot_bucket_threshold": 1000,
            "hot_buckets": [
                {"table": 2, "blocks": [0, 1], "key": 123456789, "size": 4_321},
                {"table": 7, "blocks": [1, 4], "key": -42, "size": 1_999},
            ],
        },
        "distances": {"1": 20_000, "2": 12_000, "3": 9_000},
        "stage_seconds": {"read": 1.5, "normalise": 120.25, "fingerprint": 300.0, "verify": 0.0},
        "stage_rows": {"normalise": 1_234_567, "fingerprint": 1_034_111},
        "total_seconds": 456.7,
        "output": "out/crawl",
    }


def parse(page: str) -> ET.Element:
    """The page parsed strictly as XML: unbalanced or injected markup fails here."""
    assert page.startswith("<!DOCTYPE html>\n")
    return ET.fromstring(page.removeprefix("<!DOCTYPE html>\n"))


def text(el: ET.Element) -> str:
    return "".join(el.itertext())


def number(s: str) -> float:
    return float(s.replace(",", "").strip())


def section(root: ET.Element, ident: str) -> ET.Element:
    found = root.find(f".//section[@id='{ident}']")
    assert found is not None, ident
    return found


def tiles(root: ET.Element) -> dict[str, int]:
    return {
        div.get("data-count"): int(number(text(div.find("div[@class='num']"))))
        for div in root.iter("div") if div.get("class") == "tile"
    }


def key_values(el: ET.Element) -> dict[str, str]:
    """Every row of the two-column tables under `el`: label -> shown value."""
    return {
        text(tr.find("th")): text(tr.find("td"))
        for table in el.iter("table") if table.get("class") == "kv"
        for tr in table.iter("tr")
    }


def bars(el: ET.Element, attr: str) -> list[tuple[str, float, float]]:
    """(label, value, drawn length) of every bar of the SVG charts under `el`."""
    return [(r.get("data-label"), float(r.get("data-value")), float(r.get(attr))) for r in el.iter(f"{SVG}rect")]


def assert_proportional(drawn: list[tuple[str, float, float]], full: float = 200) -> None:
    """The largest value spans the full length; every other is to scale (within the
    rounding to 0.01 px, and the 1 px floor that keeps a tiny value visible)."""
    peak = max(v for _, v, _ in drawn)
    for label, value, length in drawn:
        expected = value / peak * full
        if value == 0:
            assert length == 0, label
        else:
            assert length == pytest.approx(max(expected, 1.0), abs=0.01), label


# --- pure: the page from a report ---------------------------------------------------------


def test_every_count_is_on_the_page():
    report = a_report()
    root = parse(render(report))
    c = report["counts"]
    assert tiles(root) == {
        "documents": c["documents"],
        "kept": c["kept"],
        "exact duplicates": c["exact_duplicates"],
        "near duplicates": c["near_duplicates"],
        "skipped": sum(c["skipped"].values()),
        "rejected rows": sum(c["rejected_rows"].values()),
    }
    shown = key_values(section(root, "counts"))
    for label, key in [
        ("input rows", "input_rows"), ("clusters", "clusters"), ("too short for a fingerprint", "too_short"),
        ("distinct texts", "distinct_texts"), ("distinct texts too short", "too_short_texts"),
        ("documents with invalid UTF-8", "invalid_utf8_documents"), ("distinct fingerprints", "distinct_fingerprints"),
    ]:
        assert number(shown[label]) == c[key], label
    assert shown["skipped, by reason"] == "empty 411"
    assert shown["rejected rows, by reason"] == "null_id 7, unparseable 3"


def test_band_plan_join_and_hot_buckets_are_on_the_page():
    report = a_report()
    join_section = section(parse(render(report)), "join")
    shown = key_values(join_section)
    p, j = report["band_plan"], report["join"]
    for label, value in [
        ("k (largest distance)", p["k"]), ("blocks", p["blocks"]), ("tables", p["tables"]),
        ("rows shuffled", p["rows_shuffled"]), ("expected random candidates", p["expected_random_candidates"]),
        ("candidate pairs", j["candidate_pairs"]), ("verified pairs", j["verified_pairs"]),
        ("largest bucket", j["largest_bucket"]),
    ]:
        assert number(shown[label]) == value, label
    assert shown["key bits"] == "25, 26" and shown["chosen by"] == "cost model"
    hot = next(t for t in join_section.iter("table") if t.get("class") == "grid hot")
    rows = [[text(td) for td in tr.iter("td")] for tr in hot.find("tbody")]
    assert rows == [[str(b["table"]), ", ".join(map(str, b["blocks"])), f"{b['key']:,}", f"{b['size']:,}"] for b in j["hot_buckets"]]

    report["join"]["hot_buckets"] = []
    quiet = section(parse(render(report)), "join")
    assert "No hot buckets (more than 1,000 members)." in text(quiet)
    assert not [t for t in quiet.iter("table") if t.get("class") == "grid hot"]


def test_histograms_and_stage_bars_are_drawn_to_scale():
    report = a_report()
    root = parse(render(report))
    sizes = bars(root.find(".//figure[@id='cluster-sizes']"), "height")
    assert [(label, value) for label, value, _ in sizes] == [(k, v) for k, v in report["cluster_sizes"].items()]
    assert_proportional(sizes)
    distances = bars(root.find(".//figure[@id='distances']"), "height")
    assert [(label, value) for label, value, _ in distances] == [(k, v) for k, v in report["distances"].items()]
    assert_proportional(distances)
    stages = bars(root.find(".//figure[@id='stage-times']"), "width")
    assert [(label, value) for label, value, _ in stages] == list(report["stage_seconds"].items())
    assert_proportional(stages)
    # A vertical bar stands on the axis: its top is the baseline minus its height.
    for rect in root.find(".//figure[@id='distances']").iter(f"{SVG}rect"):
        assert float(rect.get("y")) + float(rect.get("height")) == pytest.approx(22 + 200, abs=0.01)


def test_a_tiny_bar_stays_visible_and_a_zero_bar_is_empty():
    svg = ET.fromstring(bar_chart_svg([("big", 1_000_000), ("tiny", 1), ("none", 0)], title="t"))
    heights = {r.get("data-label"): float(r.get("height")) for r in svg.iter(f"{SVG}rect")}
    assert heights == {"big": 200.0, "tiny": 1.0, "none": 0.0}
    labels = [t.text for t in svg.iter(f"{SVG}text")]
    assert "1,000,000" in labels and "1" in labels and "0" in labels


HOSTILE = '<script>alert("x")</script> & "quotes" \'single\' ]]> <img src=x onerror=alert(1)>'


def test_hostile_text_is_shown_as_text_never_as_markup():
    report = a_report()
    report["input"]["path"] = HOSTILE
    report["output"] = HOSTILE
    report["counts"]["skipped"] = {HOSTILE: 1}
    report["cluster_sizes"] = {HOSTILE: 5}
    report["stage_seconds"] = {HOSTILE: 2.0}
    report["join"]["hot_buckets"][0]["key"] = HOSTILE
    sample = PairSample(HOSTILE, "b&<b>", 3, HOSTILE + " left", HOSTILE + " right")
    page = render(report, [sample])
    root = parse(page)  # well-formed: nothing injected closed or opened an element
    assert not [el for el in root.iter() if el.tag in ("script", "img", "iframe", "link", "object")]
    assert not [el for el in root.iter() if any(a.startswith("on") or a in ("src", "href") for a in el.attrib)]
    everything = text(root)
    assert everything.count(HOSTILE) >= 6  # path, output, skip reason, stage, bucket key, pair caption...
    pair = root.find(".//table[@class='pair']")
    cells = [text(td) for td in pair.iter("td")]
    assert cells == [HOSTILE + " left", HOSTILE + " right"]
    # And nothing is fetched from elsewhere: no external style, script, font or image.
    for marker in ("http://", "https://", "@import", "url(", "<link", "<script"):
        assert marker not in page.replace('xmlns="http://www.w3.org/2000/svg"', ""), marker


def test_pairs_side_by_side_with_the_differences_marked():
    samples = [
        PairSample(9, 10, 3, "Kettle, price $64.00, in stock", "Kettle, price $59.00, in stock"),
        PairSample("a", "b", 1, "x" * 10, "x" * 10 + " more", truncated_b=True),
    ]
    root = parse(render(a_report(), samples))
    pairs = section(root, "pairs")
    shown = [div for div in pairs.iter("div") if div.get("class") == "pair-sample"]
    assert [text(div.find("h3")) for div in shown] == ["9 and 10: 3 bits apart", "a and b: 1 bits apart"]
    left, right = shown[0].find(".//table[@class='pair']").iter("td")
    assert text(left) == samples[0].text_a and text(right) == samples[0].text_b
    assert "".join(text(m) for m in left.iter("mark")) == "64"
    assert "".join(text(m) for m in right.iter("mark")) == "59"
    assert "id b: only the first 15 characters are shown" in text(shown[1])
    assert "2 of 41,000 verified pairs" in text(pairs)


def test_without_pairs_the_page_says_so():
    report = a_report()
    report["join"]["verified_pairs"] = 0
    report["distances"] = {}
    root = parse(render(report, []))
    assert "No near-duplicate pairs: no two distinct fingerprints within k = 3 bits." in text(section(root, "pairs"))
    assert root.find(".//figure[@id='distances']//{http://www.w3.org/2000/svg}svg") is None
    assert "No verified pairs." in text(root.find(".//figure[@id='distances']"))

    no_pairs = a_report()
    no_pairs["parameters"]["write_pairs"] = False
    assert "pairs were not written (--no-pairs)" in text(section(parse(render(no_pairs, [])), "pairs"))


def test_a_report_without_texts_or_stage_rows_still_renders():
    """--fingerprint-col input: no text counts and pairs without texts."""
    report = a_report()
    for key in ("distinct_texts", "too_short_texts", "invalid_utf8_documents"):
        del report["counts"][key]
    report["stage_rows"] = {}
    root = parse(render(report, [PairSample(1, 2, 2)]))
    assert "No text to show." in text(section(root, "pairs"))
    assert "distinct texts" not in key_values(section(root, "counts"))


def test_explain_lists_the_stages_and_the_expected_candidates():
    text_run = explain_module.explain(1_000_000, bands.choose_plan(1_000_000, 3), fmt="parquet")
    # The model's choice at 1M is 4 blocks (16-bit keys + 12-bit sub-blocks: ~29,800 by chance).
    from simhash_udf.core.bands import plan_cost

    expected = plan_cost(1_000_000, 3, 4).random_candidates
    assert 29_000 < expected < 31_000
    assert f"expected candidate pairs with the chosen plan: about {expected:,.0f} by chance" in text_run
    assert "  <- chosen by the cost model" in [line for line in text_run.splitlines() if line.split()[:1] == ["4"]][0]
    listed = [line.split()[0] for line in text_run.split("stages of the run")[1].splitlines()[1:]]
    assert listed[:3] == ["read", "check_ids", "signatures"] and listed[-1] == "report"
    assert "sample_pairs" in listed and "parse" not in listed
    # 1M rows may hold more sketches than one task takes: both of the route's paths are listed;
    # 1,000 rows cannot, so the check is part of sketch_candidates.
    for rows, route in ((1_000_000, ["sketch_candidates", "sketch_verify", "jaccard"]), (1000, ["sketch_candidates"])):
        with_sketches = explain_module.explain(rows, bands.choose_plan(rows, 3), fmt="json", sketch=SketchConfig())
        listed = [line.split()[0] for line in with_sketches.split("stages of the run")[1].splitlines()[1:]]
        assert [name for name in listed if name.startswith("sketch_") or name == "jaccard"] == ["sketch_nodes", *route]
    given = explain_module.explain(1000, bands.choose_plan(1000, 3), fmt="json", fingerprint_col=True, write_pairs=False)
    listed = [line.split()[0] for line in given.split("stages of the run")[1].splitlines()[1:]]
    assert "parse" in listed and "signatures" not in listed and "pairs" not in listed and "sample_pairs" not in listed


# --- Spark: the sample of pairs, and the page the job writes -------------------------------


@pytest.mark.spark
def test_sample_pairs_takes_the_furthest_pairs_and_the_start_of_their_texts(spark):
    docs = spark.createDataFrame(
        [(i, f"text {i} " + "y" * (i * 3)) for i in range(1, 9)], "doc_id long, body string"
    )
    pair_rows = [(1, 2, 1), (3, 4, 3), (1, 5, 3), (2, 6, 2), (7, 8, 3), (5, 6, 1)]
    pairs = spark.createDataFrame(pair_rows, "id_a long, id_b long, distance int")
    got = pair_samples.sample_pairs(pairs, docs, "doc_id", "body", limit=4, max_chars=12)
    expected = sorted(pair_rows, key=lambda r: (-r[2], r[0], r[1]))[:4]
    assert [(s.id_a, s.id_b, s.distance) for s in got] == expected
    full = {i: f"text {i} " + "y" * (i * 3) for i in range(1, 9)}
    for s in got:
        assert s.text_a == full[s.id_a][:12] and s.truncated_a == (len(full[s.id_a]) > 12)
        assert s.text_b == full[s.id_b][:12] and s.truncated_b == (len(full[s.id_b]) > 12)
    assert pair_samples.sample_pairs(pairs.limit(0), docs, "doc_id", "body") == []
    no_text = pair_samples.sample_pairs(pairs, docs, "doc_id", None, limit=1)
    assert no_text == [PairSample(1, 5, 3)]


@pytest.fixture(scope="module")
def sample_run(spark, dedupe_main, tmp_path_factory) -> Path:
    """The job on the sample, as a user runs it."""
    out = tmp_path_factory.mktemp("report-html") / "sample"
    assert dedupe_main(["--input", str(SAMPLE), "--output", str(out)], spark=spark) == 0
    return out


@pytest.mark.spark
def test_the_job_writes_report_html_beside_report_json(sample_run, spark):
    report = json.loads((sample_run / "report.json").read_text())
    root = parse((sample_run / "report.html").read_text(encoding="utf-8"))
    c = report["counts"]
    assert tiles(root) == {
        "documents": c["documents"], "kept": c["kept"], "exact duplicates": c["exact_duplicates"],
        "near duplicates": c["near_duplicates"], "skipped": sum(c["skipped"].values()),
        "rejected rows": sum(c["rejected_rows"].values()),
    }
    assert number(key_values(section(root, "counts"))["clusters"]) == c["clusters"]
    sizes = bars(root.find(".//figure[@id='cluster-sizes']"), "height")
    assert {label: value for label, value, _ in sizes} == report["cluster_sizes"]
    distances = bars(root.find(".//figure[@id='distances']"), "height")
    assert {label: value for label, value, _ in distances} == report["distances"]
    stages = bars(root.find(".//figure[@id='stage-times']"), "width")
    assert [label for label, _, _ in stages] == list(report["stage_seconds"])
    # --explain lists the stages a run goes through: the very ones this run went through.
    assert [name for name, _ in explain_module.run_stages("json", rows=c["documents"])] == list(report["stage_seconds"])

    # The sample: the five pairs of pairs/ furthest apart, each with the documents' own texts.
    pairs = sorted(
        ((r["distance"], r["id_a"], r["id_b"], r["jaccard"]) for r in spark.read.parquet(str(sample_run / "pairs")).collect()),
        key=lambda t: (-t[0], t[1], t[2]),
    )[:5]
    shown = [div for div in section(root, "pairs").iter("div") if div.get("class") == "pair-sample"]
    assert [text(div.find("h3")) for div in shown] == [
        f"{a} and {b}: {d} bits apart" + (f", estimated Jaccard {j:.2f}" if j is not None else "") for d, a, b, j in pairs
    ]
    assert any(j is not None for *_, j in pairs), "the sample's pairs carry their sketches' estimate"
    texts = {d["id"]: d["text"] for d in map(json.loads, SAMPLE.read_text(encoding="utf-8").splitlines())}
    for div, (_, a, b, _) in zip(shown, pairs):
        left, right = div.find(".//table[@class='pair']").iter("td")
        assert text(left) == texts[a][: pair_samples.SAMPLE_CHARS]
        assert text(right) == texts[b][: pair_samples.SAMPLE_CHARS]
        assert list(left.iter("mark")) or list(right.iter("mark")), "a near duplicate differs somewhere"
    # Published with the rest: nothing left in a staging folder.
    assert not list(sample_run.parent.glob(".*staging*"))


# --- a real browser -----------------------------------------------------------------------


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    if not CHROMIUM.exists():
        if os.environ.get("SIMHASH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} is missing and SIMHASH_REQUIRE_BROWSER=1 (run scripts/install_chromium.sh as root)")
        pytest.skip(f"{CHROMIUM} not installed (scripts/install_chromium.sh installs it as root)")
    command = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


class _Dom(HTMLParser):
    """Tags and classes of a DOM as Chromium serialises it (HTML, not XML)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.mark.spark
@pytest.mark.slow
def test_report_html_renders_in_chromium(sample_run, tmp_path):
    page = (sample_run / "report.html").as_uri()
    dom = _Dom()
    dom.feed(chromium("--dump-dom", page, profile=tmp_path / "profile-dom").stdout)
    tags = dom.tags
    report = json.loads((sample_run / "report.json").read_text())
    assert sum(1 for t, _ in tags if t == "svg") == 3  # two histograms and the stage times
    rects = sum(1 for t, _ in tags if t == "rect")
    assert rects == len(report["cluster_sizes"]) + len(report["distances"]) + len(report["stage_seconds"])
    assert sum(1 for t, a in tags if t == "table" and a.get("class") == "pair") == 5
    assert sum(1 for t, a in tags if t == "div" and a.get("class") == "tile") == 6
    assert any(t == "mark" for t, _ in tags)

    shot = tmp_path / "report.png"
    chromium(f"--screenshot={shot}", "--window-size=1200,3000", page, profile=tmp_path / "profile-shot")
    from PIL import Image

    with Image.open(shot) as image:
        assert image.size == (1200, 3000)
        pixels = image.convert("RGB")
        colours = pixels.getcolors(maxcolors=1 << 20)
    counts = {rgb: n for n, rgb in colours}
    background = max(counts, key=counts.get)
    assert counts[background] < 0.9 * 1200 * 3000, "the page is (nearly) blank"
    # The charts were drawn (their fill colours cover real areas), and so were the marks.
    assert counts.get((0x4A, 0x78, 0xB5), 0) > 2000, "histogram bars not rendered"
    assert counts.get((0x6A, 0x9F, 0x58), 0) > 2000, "stage bars not rendered"
    assert counts.get((0xCC, 0xFF, 0xCC), 0) + counts.get((0xFF, 0xCC, 0xCC), 0) > 100, "no highlighted difference"
    if os.environ.get("SIMHASH_SCREENSHOT"):  # refresh docs/report.png: see docs/report.md
        shutil.copyfile(shot, os.environ["SIMHASH_SCREENSHOT"])


def test_the_install_script_is_idempotent_when_chromium_is_there():
    font = subprocess.run(["dpkg", "-s", "fonts-wqy-microhei"], capture_output=True) if shutil.which("dpkg") else None
    if not CHROMIUM.exists() or font is None or font.returncode != 0:
        pytest.skip(f"{CHROMIUM} or its CJK font not installed (nothing to check without installing)")
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install_chromium.sh")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "nothing to do" in result.stdout, result.stdout + result.stderr


def test_render_does_not_change_the_report():
    report = a_report()
    before = copy.deepcopy(report)
    render(report, [PairSample(1, 2, 1, "a b c", "a b d")])
    assert report == before

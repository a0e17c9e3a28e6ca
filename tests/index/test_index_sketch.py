"""The sketch route against an index (`index/sketch_lookup.py`): daily runs find the pairs
and clusters of one self-join run over all days, pairs 4-12 bits apart included.

Texts: families of articles made of random words (an original, the same with a paragraph
dropped, with a footer appended) and unrelated articles, split at random over two days (ids
grow with the day). The oracle is the self-join run over both days, whose sketch route is
tested against brute force in tests/stages; here, the pairs it finds beyond k, and those
split across the days, are checked to exist, so a route missing across days shows up.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import clusters_of, newest_manifest, report_of

from simhash_udf.core import bands
from simhash_udf.core.config import SketchConfig
from simhash_udf.report.explain import IndexExplain, explain

pytestmark = pytest.mark.spark

K = 3
FOOTER = (
    "subscribe to our newsletter for the latest stories from around the world privacy policy "
    "terms of use contact us about us careers advertise with us"
)


def _article(rng: random.Random, vocabulary: list[str]) -> list[str]:
    return [
        " ".join(rng.choice(vocabulary) for _ in range(rng.randint(40, 70))) + "."
        for _ in range(rng.randint(6, 9))
    ]


def write_sketch_days(folder: Path, seed: int = 7, families: int = 12, unrelated: int = 10) -> list[Path]:
    """Two JSON-lines day files (`id`, `text`): each family's original, the original with a
    paragraph dropped and with a footer appended, on a random day each; unrelated articles."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("abcdefghijklmnoprstuvwz") for _ in range(rng.randint(3, 8))) for _ in range(3000)]
    texts = []
    for _ in range(families):
        p = _article(rng, vocabulary)
        texts += ["\n".join(p), "\n".join(p[:3] + p[4:]), "\n".join(p) + "\n" + FOOTER]
    texts += ["\n".join(_article(rng, vocabulary)) for _ in range(unrelated)]
    by_day: list[list[str]] = [[], []]
    for text in texts:
        by_day[rng.randrange(2)].append(text)
    paths, next_id = [], 1
    for day, day_texts in enumerate(by_day):
        path = folder / f"day{day}.jsonl"
        lines = [json.dumps({"id": next_id + i, "text": t}) for i, t in enumerate(day_texts)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        next_id += len(day_texts)
        paths.append(path)
    return paths


def run(dedupe_main, spark, source: Path, out: Path, index: Path | None, *extra: str) -> int:
    argv = ["--input", str(source), "--output", str(out), "--k", str(K), *extra]
    if index is not None:
        argv += ["--index", str(index)]
    return dedupe_main(argv, spark=spark)


def pairs_with_jaccard(spark, out: Path) -> list[tuple]:
    rows = spark.read.parquet(str(out / "pairs")).collect()
    return [(r["id_a"], r["id_b"], r["distance"], r["jaccard"]) for r in rows]


@pytest.fixture(scope="module")
def sketch_days(spark, dedupe_main, tmp_path_factory) -> dict:
    """The two days, the self-join run over both (union), and day 1 into an index (template)."""
    folder = tmp_path_factory.mktemp("sketch_days")
    day1, day2 = write_sketch_days(folder)
    both = folder / "both.jsonl"
    both.write_text(day1.read_text(encoding="utf-8") + day2.read_text(encoding="utf-8"), encoding="utf-8")
    assert run(dedupe_main, spark, both, folder / "union", None) == 0
    template = folder / "index-day1"
    assert run(dedupe_main, spark, day1, folder / "out1", template, "--run-id", "d1") == 0
    day1_ids = {json.loads(line)["id"] for line in day1.read_text(encoding="utf-8").splitlines()}
    return {"folder": folder, "day1": day1, "day2": day2, "day1_ids": day1_ids, "template": template}


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


@pytest.mark.slow
def test_two_days_into_an_index_find_the_pairs_and_clusters_of_one_run(spark, dedupe_main, sketch_days, tmp_path):
    """Pairs by id with distance (jaccard within 1e-9), each once over the two days, and every
    document's cluster, equal the self-join's over both days; pairs beyond k exist, across
    the days too."""
    folder = sketch_days["folder"]
    index = _copy(sketch_days["template"], tmp_path / "index")
    assert run(dedupe_main, spark, sketch_days["day2"], tmp_path / "out2", index, "--run-id", "d2") == 0

    union = pairs_with_jaccard(spark, folder / "union")
    daily = pairs_with_jaccard(spark, folder / "out1") + pairs_with_jaccard(spark, tmp_path / "out2")
    assert len(daily) == len({p[:3] for p in daily}), "a pair was output twice"
    assert {p[:3] for p in daily} == {p[:3] for p in union}
    union_jaccard = {p[:2]: p[3] for p in union}
    for id_a, id_b, _, jaccard in daily:
        assert jaccard is not None and abs(jaccard - union_jaccard[(id_a, id_b)]) < 1e-9

    # The input is one the sketch route matters for: pairs beyond k, some split across the days.
    day1 = sketch_days["day1_ids"]
    beyond = [p for p in union if p[2] > K]
    across = [p for p in beyond if (p[0] in day1) != (p[1] in day1)]
    assert len(beyond) >= 10 and len(across) >= 3, (len(beyond), len(across))
    second = report_of(tmp_path / "out2")
    assert second["sketch"]["applied"] is True
    assert second["sketch"]["pairs_with_indexed_beyond_k"] >= len(across) > 0
    assert second["index"]["bridged_components"] == 0
    # Every Spark job of a run against the index is in the stage that ran it (none is a count
    # outside them, which the report's breakdown could not show).
    assert second["spark_jobs"] == sum(second["stage_jobs"].values()) > 0
    # --explain lists the stages such a run goes through, the sketch route's included.
    listed = explain(
        100, bands.BandPlan(K, 6), fmt="json", sketch=SketchConfig(),
        index=IndexExplain(str(index), True, 1, 10**9, K, None),
    ).split("at its end):\n")[1]
    assert [line.split()[0] for line in listed.splitlines()] == list(second["stage_seconds"])

    # Every document's cluster and status are the union run's (no bridge: nothing may differ).
    expected = clusters_of(spark, folder / "union")
    got = {**clusters_of(spark, folder / "out1"), **clusters_of(spark, tmp_path / "out2")}
    assert {i: (r["cluster_id"], r["status"]) for i, r in got.items()} == {
        i: (r["cluster_id"], r["status"]) for i, r in expected.items()
    }


def _strip_sketches(index: Path) -> None:
    """Make `index` look like one written before sketches: entries without the `sketch`
    column, no sketch settings in the manifest (whose recorded file sizes follow)."""
    manifest_path = max((index / "manifests").glob("*.json"))
    manifest = json.loads(manifest_path.read_text())
    del manifest["fingerprint"]["sketch"]
    for segment in manifest["segments"]:
        for relative in segment["files"]:
            if relative.startswith("entries/"):
                path = index / segment["folder"] / relative
                pq.write_table(pq.read_table(path).drop(["sketch"]), path)
                (path.parent / f".{path.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum of the old file
                segment["files"][relative] = path.stat().st_size
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


@pytest.mark.slow
def test_an_index_from_before_sketches_opens_and_takes_them_on(spark, dedupe_main, sketch_days, tmp_path):
    """An index whose entries have no sketch column still opens: day 2 runs, finds its pairs
    within k with day 1 (the lookup's) and all its own, pairs/ has jaccard, and the new
    version records the sketch settings and stores day 2's sketches."""
    index = _copy(sketch_days["template"], tmp_path / "index")
    _strip_sketches(index)
    assert "sketch" not in newest_manifest(index)["fingerprint"]
    out = tmp_path / "out2"
    assert run(dedupe_main, spark, sketch_days["day2"], out, index, "--run-id", "d2") == 0
    recorded = {"size": 128, "shingle": 3, "bands": 25, "rows": 5, "min_chars": 300}
    assert newest_manifest(index)["fingerprint"]["sketch"] == recorded
    day1 = sketch_days["day1_ids"]
    fingerprint = {i: r["fingerprint"] for i, r in clusters_of(spark, sketch_days["folder"] / "union").items()}
    old = {fingerprint[i] for i in day1}
    batch = {fp for i, fp in fingerprint.items() if i not in day1}
    union = pairs_with_jaccard(spark, sketch_days["folder"] / "union")
    got = {p[:3] for p in pairs_with_jaccard(spark, out)}
    # Day 2 outputs the pairs of its new fingerprints: all those the self-join finds among the
    # batch's fingerprints (a day-1 one a day-2 text also carries takes that text's sketch), and
    # with the indexed ones, which have no sketch, only those within k.
    expected = set()
    for id_a, id_b, distance, _ in union:
        fps = {fingerprint[id_a], fingerprint[id_b]}
        if not fps <= old and (distance <= K or fps <= batch):
            expected.add((id_a, id_b, distance))
    assert got == expected
    assert report_of(out)["sketch"]["pairs_with_indexed_beyond_k"] == 0

    from simhash_udf.index.store import IndexStore

    store = IndexStore(spark, str(index))
    entries = store.read(store.latest(), "entries").collect()
    with_sketch = {e["run_id"] for e in entries if e["sketch"] is not None}
    assert with_sketch == {"d2"}, with_sketch


@pytest.mark.slow
def test_an_index_with_other_sketch_settings_is_refused(spark, dedupe_main, sketch_days, tmp_path, capsys):
    """A run with another sketch shingle, or without sketches, against an index that stores
    them is refused (exit code 2), naming the setting; a new Jaccard threshold is accepted."""
    index = _copy(sketch_days["template"], tmp_path / "index")
    assert run(dedupe_main, spark, sketch_days["day2"], tmp_path / "o1", index, "--sketch-shingle", "2") == 2
    assert "sketch shingle: index 3, run 2" in capsys.readouterr().err
    assert run(dedupe_main, spark, sketch_days["day2"], tmp_path / "o2", index, "--sketch", "none") == 2
    assert "stores MinHash sketches" in capsys.readouterr().err
    assert run(dedupe_main, spark, sketch_days["day2"], tmp_path / "o3", index, "--sketch", "jaccard:0.8") == 0

"""One plan per run: what --explain marks, what report.json's band_plan says and what the join
(or the index's manifest) used are the same plan.

The expected plans come from outside the library: block widths and key bits from the
arithmetic of cutting 64 bits into B near-equal blocks, the index's plan from its manifest
file on disk.
"""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path

import pytest
from generators import PLANTED_K, brute_force_pairs, planted_rows, read_rows, write_days
from helpers import newest_manifest, pairs_of, report_of, run_job

pytestmark = pytest.mark.spark


def key_bits(blocks: int, k: int) -> list[int]:
    """The distinct key widths of the tables of a plan: every choice of B - k of B blocks of
    64 bits cut as evenly as possible."""
    base, extra = divmod(64, blocks)
    widths = [base + 1] * extra + [base] * (blocks - extra)
    return sorted({sum(c) for c in combinations(widths, blocks - k)})


def marked_row(printed: str) -> list[str]:
    rows = [line.split() for line in printed.splitlines() if "<-" in line]
    assert len(rows) == 1, printed
    return rows[0]


@pytest.fixture(scope="module")
def days(tmp_path_factory) -> tuple[list[Path], list[tuple[int, int]]]:
    folder = tmp_path_factory.mktemp("plan")
    rows = planted_rows(seed=5, groups=20, singletons=40)
    paths = write_days(folder, rows, 2, seed=5)
    return paths, rows


def test_explain_report_and_join_use_the_given_blocks(spark, dedupe_main, days, tmp_path, capsys):
    paths, _ = days
    source = paths[0]
    blocks = 7
    capsys.readouterr()
    argv = ["--input", str(source), "--fingerprint-col", "fp", "--k", str(PLANTED_K), "--blocks", str(blocks)]
    assert dedupe_main([*argv, "--explain"], spark=spark) == 0
    row = marked_row(capsys.readouterr().out)
    bits = key_bits(blocks, PLANTED_K)
    assert row[:3] == [str(blocks), str(math.comb(blocks, PLANTED_K)), f"{bits[0]}-{bits[-1]}"]
    assert row[-2:] == ["<-", "--blocks"]

    out = tmp_path / "out"
    assert run_job(dedupe_main, spark, source, out, None, "--blocks", str(blocks)) == 0
    plan = report_of(out)["band_plan"]
    assert (plan["blocks"], plan["tables"], plan["key_bits"], plan["chosen_by"]) == (
        blocks, math.comb(blocks, PLANTED_K), bits, "--blocks"
    )
    # The join ran with it and lost nothing: every pair within k, against brute force.
    assert pairs_of(spark, out) == brute_force_pairs(read_rows(source), PLANTED_K)


@pytest.mark.slow
def test_an_index_run_explains_and_reports_the_manifests_plan(spark, dedupe_main, days, tmp_path, capsys):
    """The index is created with --blocks 7; the next day, --explain without --blocks marks the
    manifest's plan, and the run's report (band_plan and index.band_plan) names it too."""
    paths, _ = days
    index = tmp_path / "index"
    assert run_job(dedupe_main, spark, paths[0], tmp_path / "day0", index, "--blocks", "7") == 0
    stored = newest_manifest(index)
    assert (stored["k"], stored["blocks"]) == (PLANTED_K, 7)

    capsys.readouterr()
    argv = ["--input", str(paths[1]), "--fingerprint-col", "fp", "--k", str(PLANTED_K), "--index", str(index)]
    assert dedupe_main([*argv, "--explain"], spark=spark) == 0
    printed = capsys.readouterr().out
    assert "band plan: from the manifest of the index" in printed and "would be refused" not in printed
    row = marked_row(printed)
    assert row[:2] == ["7", str(math.comb(7, PLANTED_K))] and row[-4:] == ["<-", "the", "index's", "manifest"]

    out = tmp_path / "day1"
    assert run_job(dedupe_main, spark, paths[1], out, index) == 0
    report = report_of(out)
    words = "the index's manifest (7 blocks, fixed when the index was created)"
    assert (report["band_plan"]["blocks"], report["band_plan"]["chosen_by"]) == (7, words)
    assert report["index"]["band_plan"] == {
        "k": PLANTED_K, "blocks": 7, "tables": math.comb(7, PLANTED_K), "chosen_by": words,
    }
    assert newest_manifest(index)["blocks"] == 7


@pytest.mark.slow
def test_an_index_runs_batch_joins_itself_on_its_own_plan_not_the_indexs(spark, dedupe_main, days, tmp_path, capsys):
    """The lookup uses the index's plan (the lookup cost model's for 10^9 fingerprints); the
    batch's own pairs come from the self-join on the cost model's plan for its distinct
    fingerprints, so it makes the same comparisons as the run without an index, and still
    finds every pair within k."""
    paths, _ = days
    alone, indexed, index = tmp_path / "alone", tmp_path / "indexed", tmp_path / "index"
    assert run_job(dedupe_main, spark, paths[0], alone, None) == 0
    assert run_job(dedupe_main, spark, paths[0], indexed, index) == 0
    without, against = report_of(alone), report_of(indexed)

    assert against["band_plan"]["blocks"] == newest_manifest(index)["blocks"] != without["band_plan"]["blocks"]
    assert against["band_plan"]["self_join"] == {
        key: without["band_plan"][key] for key in ("chosen_by", "blocks", "tables", "key_bits")
    }
    assert against["join"]["self_join_candidate_pairs"] == without["join"]["candidate_pairs"]
    assert pairs_of(spark, indexed) == brute_force_pairs(read_rows(paths[0]), PLANTED_K)

    # --explain against the index says so too.
    capsys.readouterr()
    argv = ["--input", str(paths[1]), "--fingerprint-col", "fp", "--k", str(PLANTED_K), "--index", str(index)]
    assert dedupe_main([*argv, "--explain"], spark=spark) == 0
    assert "The batch is also joined with itself, on the plan the self-join's cost model picks" in capsys.readouterr().out

"""Benchmark: the whole pipeline, documents per second per core, raw input to written outputs.

    .venv/bin/python -m bench.pipeline_throughput [--quick] [--repeats 3] [--json out.json]

Issue 3, part 4. Prints a JSON document on stdout; `section(quick, repeats)` runs it in a
subprocess and returns the markdown for bench/RESULTS.md (bench/run_all.py calls it through
bench/scale_sections.py).

Inputs (bench/corpora.py), each written once as JSON Lines (`id`, `text`) under
build/bench-cache/pipeline/, with near-copies planted so that the runs find clusters: every
tenth document again under a new id, with one sentence (up to the first `。` or `.` after
its middle) cut out:
- Chinese: People's Daily 1998-01, 2,000-4,000-character documents (plain text);
- English: the Python manual's HTML pages (`--html`; --quick: the first 2 MB of them).

Methods, one after another in every repeat, in one local[2] Spark session (2 GB driver):
- ours: `jobs/dedupe.py`'s `main` (the real job: read, check, normalise, exact keys,
  fingerprints, the band join, components, clusters/, pairs/, deduped/, report.json), with
  its defaults (`--segmenter rjieba`, `--extract main` for HTML); for Chinese also with
  `--segmenter jieba`, for English also with `--extract all` (all visible text, the same
  `html_to_text` as the recipe: the difference is then the fingerprints and the join);
- recipe + plain join: the same input through the blog post's recipe (bench/recipe.py, as
  a pandas UDF; the English text extracted by the same `html_to_text` first), the plain
  band self-join of bench/join_scale.py (four 16-bit bands, an equality join per band,
  `bit_count <= 3`, `DISTINCT`) over the distinct fingerprints, then the simplest keep
  rule (a document is dropped when another has the same fingerprint and a smaller id, or
  a fingerprint within 3 bits that is smaller), writing pairs/ and deduped/ as Parquet.
  It does less than ours (no exact keys, no components, no statuses or report), so the
  ratio flatters it.
Figures: wall seconds from `main` (or the baseline's plan) to the last output written,
median of --repeats, after one warm-up run of every method on 20 documents; documents per
second per core = documents / median / 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd  # module level: pandas_udf resolves the type hints here

from bench.corpora import Corpus, CorpusError, peoples_daily, python_doc_html
from bench.join_scale import BASELINE_SQL
from bench.machine import load_average
from bench.runners import CACHE as BENCH_CACHE
from bench.runners import (
    ROOT,
    Runs,
    bench_session,
    command_text,
    interleaved,
    module_command,
)
from bench.tables import load_text, ratio_text, table_lines

CACHE = BENCH_CACHE / "pipeline"
CORES = 2
K = 3
# One near-copy for every this many documents.
COPY_EVERY = 10
SECTION_TITLE = "## 4. Whole pipeline: documents per second per core, raw input to written outputs"


def near_copy(text: str) -> str:
    """The text without one sentence: from its middle to the next `。` or `.` (inclusive)."""
    middle = len(text) // 2
    ends = [i for i in (text.find("。", middle), text.find(".", middle)) if i >= 0]
    end = min(ends) + 1 if ends else min(len(text), middle + 40)
    return text[:middle] + text[end:]


def write_input(corpus: Corpus, path: Path) -> int:
    """The corpus and its near-copies as JSON Lines; returns the number of documents."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"{corpus.name}-{i}", "text": t} for i, t in enumerate(corpus.texts)]
    rows += [
        {"id": f"{corpus.name}-{i}-copy", "text": near_copy(t)}
        for i, t in enumerate(corpus.texts) if i % COPY_EVERY == 0
    ]
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)


def quietly(run: Callable[[], object]) -> Callable[[], object]:
    """The run with its stdout sent to stderr: the job prints its summary, and this script's
    stdout is its JSON."""

    def action() -> object:
        with contextlib.redirect_stdout(sys.stderr):
            return run()

    return action


def recipe_pipeline(spark: object, input_path: str, output: str, html: bool) -> dict:
    """The blog recipe's fingerprints, the plain band join and the simplest keep rule."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import pandas_udf
    from pyspark.sql.types import LongType

    @pandas_udf(LongType())  # type: ignore[call-overload]
    def recipe_batch(texts: pd.Series) -> pd.Series:
        from recipe import recipe_simhashes

        from simhash_udf.core.html_text import html_to_text

        values = [t or "" for t in texts]
        if html:
            values = [html_to_text(t) for t in values]
        return pd.Series(recipe_simhashes(values), dtype="int64")

    docs = spark.read.json(input_path).select("id", recipe_batch(F.col("text")).alias("fingerprint"))  # type: ignore[attr-defined]
    docs = docs.cache()
    docs.select("fingerprint").distinct().createOrReplaceTempView("fps")
    # The plain band join: the join benchmark's baseline.
    pairs = spark.sql(BASELINE_SQL.format(k=K)).cache()  # type: ignore[attr-defined]
    pairs.write.mode("overwrite").parquet(f"{output}/pairs")
    # Dropped: a document whose fingerprint is the larger of a pair, or that shares its
    # fingerprint with a document of smaller id.
    larger = pairs.select(F.col("fp_b").alias("fingerprint")).distinct()
    first = docs.groupBy("fingerprint").agg(F.min("id").alias("id"))
    kept = first.join(larger, "fingerprint", "left_anti")
    kept.write.mode("overwrite").parquet(f"{output}/deduped")
    result = {"pairs": pairs.count(), "kept": kept.count()}
    pairs.unpersist()
    docs.unpersist()
    return result


def measure(args: argparse.Namespace) -> dict:
    from jobs.dedupe import main as dedupe_main

    zh = peoples_daily()
    en = python_doc_html(max_bytes=int((2 if args.quick else 12) * 1e6))
    if args.quick:
        zh = Corpus(zh.name, zh.source, zh.html, zh.texts[:200])
    corpora = []
    for corpus in (zh, en):
        path = CACHE / f"{corpus.name}{'-quick' if args.quick else ''}.jsonl"
        n = write_input(corpus, path)
        corpora.append((corpus, path, n))

    spark = bench_session("bench-pipeline", "2g", master=f"local[{CORES}]", conf={"spark.ui.enabled": "false"})
    # The recipe's UDF imports bench/recipe.py as `recipe` on the workers.
    spark.sparkContext.addPyFile(str(ROOT / "bench" / "recipe.py"))
    report: dict = {"repeats": args.repeats, "load_start": load_average(), "corpora": {}}
    started = time.perf_counter()
    try:
        for corpus, path, n in corpora:
            out = CACHE / f"out-{corpus.name}"
            html = ["--html"] if corpus.html else []
            job = ["--input", str(path), "--format", "json", "--k", str(K), "--overwrite", *html]
            methods = {
                "ours": lambda: dedupe_main([*job, "--output", str(out / "ours"), "--log-level", "WARNING"], spark=spark),
                "recipe + plain join": lambda: recipe_pipeline(spark, str(path), str(out / "recipe"), corpus.html),
            }
            # The variant that isolates one stage: Chinese with the Python jieba; English with
            # all visible text (the recipe's html_to_text) instead of main-content extraction.
            variant = ["--segmenter", "jieba"] if not corpus.html else ["--extract", "all"]
            variant_name = f"ours, {' '.join(variant)}"
            methods[variant_name] = lambda: dedupe_main(
                [*job, *variant, "--output", str(out / "ours-variant"), "--log-level", "WARNING"], spark=spark)
            # A warm-up on the first 20 documents, every method once: Python workers started,
            # modules imported and dictionaries loaded (rjieba, jieba, IDF tables, OpenCC) in
            # no method's time; otherwise the first method timed pays for all of them.
            warm = CACHE / f"warm-{corpus.name}.jsonl"
            warm.write_text("".join(path.read_text("utf-8").splitlines(keepends=True)[:20]), "utf-8")
            warm_job = [a if a != str(path) else str(warm) for a in job]
            with contextlib.redirect_stdout(sys.stderr):
                dedupe_main([*warm_job, "--output", str(out / "warm"), "--log-level", "WARNING"], spark=spark)
                dedupe_main([*warm_job, *variant, "--output", str(out / "warm"), "--log-level", "WARNING"],
                            spark=spark)
                recipe_pipeline(spark, str(warm), str(out / "warm-recipe"), corpus.html)

            def log(name: str, repeat: int, runs: Runs, failed: bool, corpus: Corpus = corpus) -> None:
                outcome = f" failed: {runs.failures[-1]}" if failed else f": {runs.wall_s[-1]:.1f} s"
                print(f"pipeline_throughput: {corpus.name} {name} run {repeat}{outcome}", file=sys.stderr)

            timed = interleaved({name: quietly(run) for name, run in methods.items()}, args.repeats,
                                catch=True, log=log)
            report_file = out / "ours" / "report.json"
            ours_report = json.loads(report_file.read_text()) if report_file.exists() else {"counts": {}, "join": {}}
            report["corpora"][corpus.name] = {
                "source": corpus.source, "html": corpus.html, "documents": n,
                "mb": path.stat().st_size / 1e6,
                "methods": {
                    name: {"wall_s": [round(s, 2) for s in r.wall_s],
                           "docs_per_s_per_core": n / statistics.median(r.wall_s) / CORES if r.wall_s else None,
                           "failed_runs": r.failures}
                    for name, r in timed.items()
                },
                "ours_exit": timed["ours"].outcome,
                "ours_counts": {
                    **{k: v for k, v in ours_report["counts"].items() if isinstance(v, int)},
                    "verified_pairs": ours_report["join"].get("verified_pairs", 0),
                },
                "recipe_counts": timed["recipe + plain join"].outcome or {"pairs": 0, "kept": 0},
            }
            shutil.rmtree(out, ignore_errors=True)
    finally:
        spark.stop()
    report["load_end"] = load_average()
    report["seconds"] = time.perf_counter() - started
    return report


def table(report: dict) -> list[str]:
    """Markdown lines for bench/RESULTS.md."""
    lines = table_lines(
        ["corpus", "documents", "MB of input", "method", "documents/s per core", "runs (s)", "ours / method"],
        [], right=".rr.r.r")
    for name, c in report["corpora"].items():
        label = "Chinese (People's Daily)" if name == "zh" else "English (Python manual, HTML)"
        ours = c["methods"]["ours"]["docs_per_s_per_core"]
        for method, r in c["methods"].items():
            rate = r["docs_per_s_per_core"]
            ratio = "" if method == "ours" or not (ours and rate) else ratio_text(ours, rate)
            runs = ", ".join([f"{s:.1f}" for s in r["wall_s"]] + ["failed"] * len(r.get("failed_runs", [])))
            lines.append(f"| {label} | {c['documents']:,} | {c['mb']:.1f} | {method} | "
                         f"{f'{rate:.1f}' if rate else '-'} | {runs} | {ratio} |")
    return lines


def section(quick: bool, repeats: int | None = None) -> list[str]:
    """Run the benchmark in its own process; the markdown section for bench/RESULTS.md, its
    heading included. repeats: default 3, or 1 with quick."""
    repeats = repeats if repeats is not None else (1 if quick else 3)
    script_args = ["--repeats", str(repeats)] + (["--quick"] if quick else [])
    result = subprocess.run(module_command("pipeline_throughput", *script_args), cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    command = command_text("pipeline_throughput", script_args)
    if result.returncode != 0:
        return [SECTION_TITLE, "", f"`{command}` failed (exit {result.returncode}); its messages went to stderr.", ""]
    return section_lines(json.loads(result.stdout), command)


def section_lines(report: dict, command: str) -> list[str]:
    """The markdown section for bench/RESULTS.md from this benchmark's JSON, its heading included."""
    lines = [
        SECTION_TITLE,
        "",
        f"`{command}` ({report['repeats']} repeats, interleaved; medians; {report['seconds']:.0f} s in all; "
        f"load average {load_text(report['load_start'])} at its start, {load_text(report['load_end'])} at its end).",
        "",
        "Input: JSON Lines (`id`, `text`) of the two corpora above plus a near-copy of every tenth "
        "document (one sentence cut from its middle). **ours** = `jobs/dedupe.py` `main` in local[2] "
        "with its defaults (k = 3), from reading the input to clusters/, pairs/, deduped/ and "
        "report.json written; for Chinese also with `--segmenter jieba`, for English also with "
        "`--extract all` (the recipe's `html_to_text` instead of main-content extraction). **recipe + plain join** = "
        "the blog recipe's fingerprints as a pandas UDF, the plain 4 x 16-bit band self-join + "
        "`DISTINCT`, and the simplest keep rule, writing pairs/ and deduped/ (it does less than ours: "
        "no exact keys, components, statuses or report). Documents/s per core = documents / median "
        "wall seconds / 2.",
        "",
        *table(report),
        "",
    ]
    for name, c in report["corpora"].items():
        counts = c["ours_counts"]
        shown = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in counts.items() if k in (
            "documents", "kept", "exact_duplicates", "near_duplicates", "verified_pairs"))
        lines.append(f"- {name}: ours' report: {shown or counts}; recipe: {c['recipe_counts']['pairs']:,} pairs, "
                     f"{c['recipe_counts']['kept']:,} documents kept.")
    failed = [(name, method, message) for name, c in report["corpora"].items()
              for method, r in c["methods"].items() for message in r.get("failed_runs", [])]
    for name, method, message in failed:
        lines.append(f"- {name}, {method}: a run failed: `{message}`")
    lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 Chinese documents, 2 MB of HTML")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--markdown", action="store_true", help="print the markdown table instead of JSON")
    args = parser.parse_args(argv)
    try:
        report = measure(args)
    except CorpusError as error:
        print(f"pipeline_throughput: {error}", file=sys.stderr)
        return 2
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    print("\n".join(table(report)) if args.markdown else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

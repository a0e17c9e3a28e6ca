"""Benchmark: the whole job's MB/s per core per extra MB, beside its fingerprint function, the
blog recipe and the published anchors (issue 14, target 1).

    .venv/bin/python -m bench.job_throughput [--quick] [--repeats 3] [--big-repeats 1]
                                             [--recipe-big-mb 40] [--recipe-repeats 1] [--rev HEAD] [--base REV]
                                             [--driver-memory 4g] [--json out.json]

Prints a JSON document on stdout (bench/run_all.py renders it with `section_lines`).

Inputs, JSON Lines (`id`, `text`) under build/bench-cache/job-throughput/, distinct texts with
a near copy of every tenth (`commit_cost.first_rows_of_mb`), two sizes per language (small and
big, in MB of text; the small input is the first documents of the big one):
- Chinese: People's Daily 1998-01's paragraphs, repeated in a new seeded order each time and
  grouped into 2,000-4,000-character documents (`commit_cost.distinct_documents`);
- English plain text (not HTML): the Python manual's pages converted to text once by
  `core.html_text.html_to_text`, their paragraphs grown the same way.
Methods, each a whole process (so each pays its start-up, which the cost per extra MB cancels):
- job: `python jobs/dedupe.py --input ... --format json` (local[2], its defaults), the
  working tree's job or --rev's;
- base (with --base REV): that commit's job (a git worktree), each of its runs right after the
  job's on the same input: an A/B of two commits in one invocation, its ratio `job / base`, which
  a shared machine's drift from one evening to the next does not move as it moves the rates;
- recipe + plain join: bench/pipeline_throughput.py's `recipe_pipeline` (the blog recipe as a
  pandas UDF, the plain band join, the simplest keep rule) in a fresh local[2] Spark;
- fingerprint function: `normalise` then `core.fingerprint.signatures` (fingerprints and
  sketches, what the job's UDF computes per text) over the small input's texts, in batches of
  1,000, one process (one core): MB/s wall and MB per CPU-second, median of 3 after a warm-up.
Every repeat runs each (language, size) with job then recipe; the small inputs --repeats
times (default 3), the big ones --big-repeats times (default 1: a 200 MB run is minutes); the
recipe at most --recipe-repeats times on each (a baseline 7-14x slower than the job: one run
places it well enough, and its runs are the longest).
--recipe-big-mb gives the recipe a smaller big input of its own (the first documents of the
job's): its 200 MB runs are most of this benchmark's time, and its rate is linear in MB. Figures: medians; job and recipe MB/s per core per
extra MB = (MB_big - MB_small) / (s_big - s_small) / 2 cores, on wall seconds (and on CPU
seconds of the process tree: MB per CPU-second).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

from bench.commit_cost import distinct_documents, first_rows_of_mb, text_mb, write_rows
from bench.corpora import peoples_daily, python_doc_html
from bench.job_runs import (
    CORES,
    JobTree,
    bench_command,
    bench_env,
    job_env,
    job_tree,
    last_json_line,
    measured_process,
    run_job,
    working_tree_commit,
)
from bench.machine import load_average
from bench.runners import CACHE as BENCH_CACHE
from bench.runners import ROOT, bench_session, languages_arg, log
from bench.tables import load_text, seconds_list, table_lines

CACHE = BENCH_CACHE / "job-throughput"
SEED = 14
FORMAT = 1  # bump when the inputs' construction changes
SIZES_MB = {"zh": (5.0, 200.0), "en": (5.0, 200.0)}
QUICK_SIZES_MB = {"zh": (0.3, 1.2), "en": (0.3, 1.2)}
LANGUAGE = {"zh": "Chinese (People's Daily, plain text)", "en": "English (Python manual as text)"}

# Targets of issue 14 (MB/s per core of the whole job, per extra MB).
TARGET_MB_S = {"zh": 5.0, "en": 8.0}
TARGET_OF_FUNCTION = 0.5  # at least half the single-process fingerprint function's MB/s
TARGET_OVER_RECIPE = 10.0
TARGET_OVER_ANCHORS = 10.0
# Published anchors, MB/s per core (stated, not measured here).
ANCHORS = {
    "BigCode Spark MinHash, end to end (0.4 MB/s per vCPU)": 0.4,
    "datatrove, MinHash signatures alone (0.8-0.9 MB/s per task; the upper end)": 0.9,
}

# Run in the job's tree on one input: the fingerprint function's seconds, one process.
FUNCTION = """
import json, statistics, sys, time
from simhash_udf.core.config import FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import signatures
from simhash_udf.core.normalise import normalise
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
config, sketch = FingerprintConfig(), SketchConfig()
def run():
    for start in range(0, len(texts), 1000):
        signatures([normalise(t) for t in texts[start:start + 1000]], config, sketch)
run()  # warm-up: dictionaries and tables loaded
wall, cpu = [], []
for _ in range(3):
    w, c = time.perf_counter(), time.process_time()
    run()
    wall.append(time.perf_counter() - w); cpu.append(time.process_time() - c)
print(json.dumps({"wall_s": wall, "cpu_s": cpu}))
"""


# ---------------------------------------------------------------- pure helpers

def per_core_rate(small: tuple[float, float], big: tuple[float, float], cores: int = CORES) -> float:
    """MB/s per core per extra MB between two runs given as (MB, seconds): (MB_big - MB_small)
    / (s_big - s_small) / cores. What both runs pay alike (start-up) cancels. NaN when the big
    run took no longer (no cost per extra MB can be read off)."""
    (mb_small, s_small), (mb_big, s_big) = small, big
    if mb_big <= mb_small:
        raise ValueError(f"the big input ({mb_big} MB) must be larger than the small one ({mb_small} MB)")
    extra = s_big - s_small
    return (mb_big - mb_small) / extra / cores if extra > 0 else float("nan")


def stage_seconds_per_extra(small_runs: list[dict], big_runs: list[dict], extra: float) -> dict[str, float]:
    """Each stage's seconds per extra unit (MB, page) between two sizes: the median of its
    report.json `stage_seconds` over the big runs minus that over the small runs, divided by
    `extra`; a stage missing from a run counts 0 there."""
    stages = dict.fromkeys(s for r in [*small_runs, *big_runs] for s in r["stage_seconds"])
    return {s: (median([r["stage_seconds"].get(s, 0.0) for r in big_runs])
                - median([r["stage_seconds"].get(s, 0.0) for r in small_runs])) / extra
            for s in stages}


def cpu_seconds_per_extra_by_kind(small_runs: list[dict], big_runs: list[dict], extra: float) -> dict[str, float]:
    """CPU seconds per extra unit (MB, page) of each kind of process (`cpu_s_by_kind`: root,
    jvm, python, other) between two sizes, as `stage_seconds_per_extra` takes them; {} when a
    run has no split (a report written before it was measured)."""
    runs = [*small_runs, *big_runs]
    if not all("cpu_s_by_kind" in r for r in runs):
        return {}
    kinds = dict.fromkeys(k for r in runs for k in r["cpu_s_by_kind"])
    return {k: (median([r["cpu_s_by_kind"].get(k, 0.0) for r in big_runs])
                - median([r["cpu_s_by_kind"].get(k, 0.0) for r in small_runs])) / extra
            for k in kinds}


def english_paragraphs(pages: list[str]) -> list[str]:
    """The English corpus as text paragraphs: each page through `html_to_text`, split at its
    newlines, blank lines dropped."""
    from simhash_udf.core.html_text import html_to_text

    return [p.strip() for page in pages for p in html_to_text(page).split("\n") if p.strip()]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def finite(value: float | None) -> float | None:
    """The value, or None when it is missing or NaN (a rate that could not be read off)."""
    return None if value is None or math.isnan(value) else value


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, None when either is missing, NaN or zero."""
    numerator, denominator = finite(numerator), finite(denominator)
    return numerator / denominator if numerator and denominator else None


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    """The value formatted, `-` when missing or NaN."""
    value = finite(value)
    return "-" if value is None else f"{value:{spec}}{suffix}"


# ---------------------------------------------------------------- inputs

def paragraphs_of(language: str) -> list[str]:
    """The paragraphs a language's documents are grouped from (English cached as JSON: the
    HTML conversion takes a while)."""
    if language == "zh":
        return [p for document in peoples_daily().texts for p in document.split("\n")]
    cached = CACHE / f"en-paragraphs-v{FORMAT}.json"
    if not cached.exists():
        pages = list(python_doc_html().texts)
        random.Random(SEED).shuffle(pages)
        CACHE.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(english_paragraphs(pages), ensure_ascii=False), "utf-8")
    return json.loads(cached.read_text("utf-8"))


def build_inputs(sizes: dict[str, tuple[float, float]], recipe_big_mb: float | None = None) -> list[dict]:
    """The inputs (language, size, path, documents, mb), each file written once under CACHE;
    with recipe_big_mb, a third size per language, `recipe-big`, the recipe's big input (the
    first documents of the big one)."""
    inputs = []
    for language, (small_mb, big_mb) in sizes.items():
        texts: list[str] | None = None
        wanted = [("small", small_mb), ("big", big_mb)] + ([("recipe-big", recipe_big_mb)] if recipe_big_mb else [])
        for size, mb in wanted:
            path = CACHE / f"{language}-{mb:g}mb-seed{SEED}-v{FORMAT}.jsonl"
            meta = path.with_suffix(".meta.json")
            if not meta.exists():  # the meta file, written last, marks a complete input
                if texts is None:
                    texts = distinct_documents(paragraphs_of(language), big_mb, SEED)
                rows = first_rows_of_mb(texts, language, mb)
                write_rows(rows, path)
                meta.write_text(json.dumps({"documents": len(rows), "mb": text_mb([r["text"] for r in rows])}))
            inputs.append({"language": language, "size": size, "path": str(path), **json.loads(meta.read_text())})
    return inputs


# ---------------------------------------------------------------- the recipe's worker

def recipe_worker(args: argparse.Namespace) -> int:
    """The recipe + plain join on one input in this process's Spark; prints a JSON line."""
    from bench.pipeline_throughput import recipe_pipeline

    spark = bench_session("bench-job-throughput-recipe", args.driver_memory, conf={"spark.ui.enabled": "false"})
    spark.sparkContext.addPyFile(str(ROOT / "bench" / "recipe.py"))  # imported as `recipe` on the workers
    try:
        started = time.perf_counter()
        outcome = recipe_pipeline(spark, args.input, args.output, html=False)
        print(json.dumps({"session_s": time.perf_counter() - started, **outcome}))
    finally:
        spark.stop()
    return 0


def run_recipe(item: dict, output: Path, driver_memory: str, timeout: float) -> dict:
    command = bench_command("job_throughput", "--recipe-worker", "--input", item["path"], "--output", str(output),
                            "--driver-memory", driver_memory)
    result = measured_process(command, ROOT, bench_env(driver_memory), timeout)
    if result["returncode"] != 0:
        raise RuntimeError(f"the recipe failed: {result['stderr'][-1500:]}")
    return {k: v for k, v in result.items() if k not in ("stdout", "stderr", "returncode")} | last_json_line(
        result["stdout"])


def run_function(tree: JobTree, item: dict) -> dict:
    """`FUNCTION` in the job's tree on one input: MB/s (wall) and MB per CPU-second, medians."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", FUNCTION, item["path"]], cwd=tree.path, env=job_env(tree, "1g"),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the fingerprint function failed: {done.stderr[-1500:]}")
    runs = last_json_line(done.stdout)
    return {**runs, "mb": item["mb"], "mb_per_s": item["mb"] / median(runs["wall_s"]),
            "mb_per_cpu_s": item["mb"] / median(runs["cpu_s"])}


# ---------------------------------------------------------------- the measurement

def measure(args: argparse.Namespace) -> dict:
    started = time.perf_counter()
    sizes = QUICK_SIZES_MB if args.quick else SIZES_MB
    inputs = build_inputs({language: sizes[language] for language in args.languages}, args.recipe_big_mb)
    for item in inputs:
        log(f"job_throughput: {item['language']} {item['size']}: {item['documents']:,} documents, {item['mb']:.2f} MB")
    report: dict = {"repeats": args.repeats, "big_repeats": args.big_repeats, "quick": args.quick,
                    "driver_memory": args.driver_memory, "cores": CORES, "load_start": load_average(),
                    "inputs": inputs, "runs": {}, "function": {}}
    out = CACHE / "out"
    with job_tree(args.rev) as tree, job_tree(args.base) if args.base else contextlib.nullcontext() as base:
        report["job_commit"] = (tree.commit or "")[:10] or working_tree_commit()
        if base is not None:
            report["base_commit"] = (base.commit or "")[:10]
        runs: dict[str, dict[str, list[dict]]] = {
            f"{i['language']}-{i['size']}": {"job": [], "base": [], "recipe": []} for i in inputs}
        recipe_big = "recipe-big" if args.recipe_big_mb else "big"
        for repeat in range(1, max(args.repeats, args.big_repeats) + 1):
            for item in inputs:
                if repeat > (args.repeats if item["size"] == "small" else args.big_repeats):
                    continue
                key = f"{item['language']}-{item['size']}"
                for method in ("job", "base", "recipe"):
                    if method == "recipe" and (args.no_recipe or item["size"] not in ("small", recipe_big)
                                               or repeat > (args.recipe_repeats or repeat)):
                        continue
                    if method in ("job", "base") and item["size"] == "recipe-big":
                        continue
                    if method == "base" and base is None:
                        continue
                    target = out / f"{method}-{key}"
                    try:
                        if method in ("job", "base"):
                            result = run_job(tree if method == "job" else base,
                                             ["--input", item["path"], "--format", "json"], target,
                                             args.driver_memory, args.timeout)
                        else:
                            result = run_recipe(item, target, args.driver_memory, args.timeout)
                    except RuntimeError as error:
                        result = {"failed": str(error)[-600:]}
                    runs[key][method].append(result)
                    told = result.get("failed") or f"{result['wall_s']:.1f} s wall, {result['cpu_s']:.1f} s CPU"
                    log(f"job_throughput: run {repeat} {key} {method}: {told}")
        report["runs"] = runs
        for item in inputs:
            if item["size"] == "small":
                report["function"][item["language"]] = run_function(tree, item)
                log(f"job_throughput: fingerprint function {item['language']}: "
                    f"{report['function'][item['language']]['mb_per_s']:.2f} MB/s")
    report["recipe_big_mb"] = args.recipe_big_mb
    report["recipe_repeats"] = args.recipe_repeats
    report["summary"] = summarise(report)
    report["load_end"] = load_average()
    report["seconds"] = time.perf_counter() - started
    return report


def summarise(report: dict) -> dict:
    """Per language: each method's median wall and CPU seconds per size, its MB/s per core per
    extra MB (wall) and MB per CPU-second per extra MB; the function's MB/s; the ratios."""
    mb = {(i["language"], i["size"]): i["mb"] for i in report["inputs"]}
    out: dict = {}
    for language in dict.fromkeys(i["language"] for i in report["inputs"]):
        methods: dict = {}
        for method in ("job", "base", "recipe"):
            # The recipe's big input is `recipe-big` when the run had one (--recipe-big-mb).
            big_size = "recipe-big" if method == "recipe" and (language, "recipe-big") in mb else "big"
            ok = {size: [r for r in report["runs"][f"{language}-{name}"].get(method, []) if "failed" not in r]
                  for size, name in (("small", "small"), ("big", big_size))}
            if not (ok["small"] and ok["big"]):
                continue
            wall = {size: median([r["wall_s"] for r in ok[size]]) for size in ok}
            cpu = {size: median([r["cpu_s"] for r in ok[size]]) for size in ok}
            small, big = mb[(language, "small")], mb[(language, big_size)]
            methods[method] = {
                "wall_s": wall, "cpu_s": cpu,
                "mb_per_s_per_core": per_core_rate((small, wall["small"]), (big, wall["big"])),
                "mb_per_cpu_s": per_core_rate((small, cpu["small"]), (big, cpu["big"]), cores=1),
            }
            if method in ("job", "base"):
                methods[method]["stage_s_per_extra_mb"] = stage_seconds_per_extra(ok["small"], ok["big"], big - small)
                methods[method]["cpu_s_per_extra_mb_by_kind"] = cpu_seconds_per_extra_by_kind(
                    ok["small"], ok["big"], big - small)
        function = report["function"].get(language)
        job, job_cpu = (methods.get("job", {}).get(k) for k in ("mb_per_s_per_core", "mb_per_cpu_s"))
        out[language] = {
            "methods": methods,
            "function_mb_per_s": function["mb_per_s"] if function else None,
            "function_mb_per_cpu_s": function["mb_per_cpu_s"] if function else None,
            "job_over_function": ratio(job, function["mb_per_s"] if function else None),
            # The same on CPU seconds: what a loaded machine disturbs least.
            "job_over_function_cpu": ratio(job_cpu, function["mb_per_cpu_s"] if function else None),
            "job_over_recipe": ratio(job, methods.get("recipe", {}).get("mb_per_s_per_core")),
            # --base's A/B: the job's rate over the base commit's, runs taken in turns (None without).
            "job_over_base": ratio(job, methods.get("base", {}).get("mb_per_s_per_core")),
            "job_over_base_cpu": ratio(job_cpu, methods.get("base", {}).get("mb_per_cpu_s")),
        }
    return out


# ---------------------------------------------------------------- the document

# How `cpu_split_text` names each kind of process (bench/commit_cost.PROCESS_KINDS).
_KIND_NAMES = {"python": "Python workers (the UDFs)", "jvm": "JVM (Spark: reading, Arrow, shuffles, writing)",
               "root": "the job's own Python (driver)", "other": "other processes"}


def cpu_split_text(by_kind: dict[str, float], function_mb_per_cpu_s: float | None) -> str:
    """A job's CPU seconds per extra MB by kind of process, largest first, each with its share
    of their sum, and beside the Python workers what the fingerprint function alone costs
    (1 / its MB per CPU-second) when given: how much of the job is the function at all. A kind
    under 1% of the sum either way (the driver, helpers: a difference of two noisy samples of
    nothing) is left out of the list, not of the sum."""
    total = sum(by_kind.values())
    parts = []
    for kind, seconds in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        if total > 0 and abs(seconds) < 0.01 * total:
            continue
        share = f" ({seconds / total:.0%})" if total > 0 else ""
        parts.append(f"{_KIND_NAMES.get(kind, kind)} {seconds:.4f}{share}")
    text = ", ".join(parts) + f"; in all {total:.4f}"
    if function_mb_per_cpu_s:
        text += f" (the fingerprint function alone, one process: {1 / function_mb_per_cpu_s:.4f})"
    return text


SECTION_TITLE = "## 6. The whole job: MB/s per core per extra MB (issue 14)"


def verdict(measured: float | None, target: float, at_least: bool = True) -> str:
    """`met` or `missed by Nx` (how far the measure is from the target, as a factor)."""
    if measured is None or measured != measured:
        return "not measured"
    if (measured >= target) if at_least else (measured <= target):
        return "met"
    return f"missed by {target / measured if at_least else measured / target:.2f}x"


def section_lines(report: dict, command: str) -> list[str]:
    """The markdown section for bench/RESULTS.md, its heading included."""
    summary = report["summary"]
    lines = [
        SECTION_TITLE,
        "",
        f"`{command}` (job at {report['job_commit']}; small inputs {report['repeats']} runs, big "
        f"{report['big_repeats']}"
        + (f", the recipe's at most {report['recipe_repeats']}" if report.get("recipe_repeats") else "")
        + ", each (language, size) job then recipe in every repeat; medians; "
        + (f"the recipe's big input {report['recipe_big_mb']:g} MB instead of the job's; "
           if report.get("recipe_big_mb") else "")
        + f"{report['seconds']:.0f} s in all; load average {load_text(report['load_start'])} at its start, "
        f"{load_text(report['load_end'])} at its end; driver memory {report['driver_memory']}).",
        "",
        "Inputs: JSON Lines (`id`, `text`) of distinct texts, a near copy (one sentence cut) of every tenth. "
        "Chinese: People's Daily 1998-01's paragraphs repeated, each repetition in its own seeded order, grouped "
        "into 2,000-4,000-character documents. English: the Python manual's pages converted once to text by "
        "`html_to_text` (plain text, not HTML), the paragraphs grown the same way. **job** = `python "
        "jobs/dedupe.py --input ... --format json` as a process, local[2], its defaults; **recipe** = the blog "
        "recipe as a pandas UDF + the plain band join + the simplest keep rule (`pipeline_throughput."
        "recipe_pipeline`) in a fresh local[2] process. MB/s per core per extra MB = (MB big - MB small) / "
        "(s big - s small) / 2: the start-up both sizes pay cancels. MB per CPU-second uses the CPU seconds of "
        "the process tree (driver, JVM, Python workers) instead. **fingerprint function** = `normalise` + "
        "`core.fingerprint.signatures` (fingerprint and sketch) on the small input's texts, batches of 1,000, "
        "one process (so per core), median of 3."
        + (f" **base** = the job at {report['base_commit']}, each of its runs right after the job's on the same "
           "input (an A/B: its `job / method` is the ratio of the two commits' rates)."
           if report.get("base_commit") else ""),
        "",
    ]
    rows = []
    for item in report["inputs"]:
        key = f"{item['language']}-{item['size']}"
        for method in ("job", "base", "recipe"):
            runs = report["runs"][key].get(method, [])
            if not runs:
                continue
            ok = [r for r in runs if "failed" not in r]
            peak = max((r["peak_rss"] for r in ok), default=0) / 2**20
            rows.append([LANGUAGE[item["language"]], item["size"], f"{item['documents']:,}", f"{item['mb']:.1f}",
                         method, seconds_list([r["wall_s"] for r in ok], 1)
                         + (f" ({len(runs) - len(ok)} failed)" if len(runs) > len(ok) else ""),
                         seconds_list([r["cpu_s"] for r in ok], 1), f"{peak:,.0f}"])
    lines += table_lines(["input", "size", "documents", "MB", "method", "wall s (runs)", "CPU s (runs)",
                          "peak RSS MB"], rows, right="..rr....r")
    lines += ["", "| language | method | MB/s per core per extra MB | MB per CPU-second per extra MB | job / method |",
              "|---|---|---:|---:|---:|"]
    for language, s in summary.items():
        job = s["methods"].get("job", {}).get("mb_per_s_per_core")
        for method, m in s["methods"].items():
            over = "" if method == "job" else fmt(ratio(job, m["mb_per_s_per_core"]), ".2f", "x")
            lines.append(f"| {LANGUAGE[language]} | {method} | {fmt(m['mb_per_s_per_core'], '.2f')} | "
                         f"{fmt(m['mb_per_cpu_s'], '.2f')} | {over} |")
        if s["function_mb_per_s"]:
            lines.append(f"| {LANGUAGE[language]} | fingerprint function (one process) | {s['function_mb_per_s']:.2f} "
                         f"| {s['function_mb_per_cpu_s']:.2f} | {fmt(ratio(job, s['function_mb_per_s']), '.2f', 'x')} |")
        for name, value in ANCHORS.items():
            lines.append(f"| {LANGUAGE[language]} | anchor: {name} | {value:.2f} | | {fmt(ratio(job, value), '.1f', 'x')} |")
    lines.append("")
    for language, s in summary.items():
        for method, whose in (("job", "the job's"), ("base", "the base's")):
            stages = s["methods"].get(method, {}).get("stage_s_per_extra_mb")
            if stages:
                top = sorted(stages.items(), key=lambda kv: -kv[1])[:8]
                lines.append(f"- {LANGUAGE[language]}: {whose} stages, seconds per extra MB (report.json "
                             f"`stage_seconds`, big minus small): " + ", ".join(f"{k} {v:.3f}" for k, v in top) + ".")
            by_kind = s["methods"].get(method, {}).get("cpu_s_per_extra_mb_by_kind")
            if by_kind:
                lines.append(f"- {LANGUAGE[language]}: {whose} CPU seconds per extra MB by process: "
                             + cpu_split_text(by_kind, s["function_mb_per_cpu_s"] if method == "job" else None) + ".")
        if report.get("base_commit"):
            lines.append(f"- {LANGUAGE[language]}: A/B, the job's MB/s per core per extra MB over the base's "
                         f"({report['base_commit']}): {fmt(s.get('job_over_base'), '.2f', 'x')} (on CPU seconds: "
                         f"{fmt(s.get('job_over_base_cpu'), '.2f', 'x')}).")
    lines += ["", "### Targets", "", "| target | measured | verdict |", "|---|---|---|"]
    for language, s in summary.items():
        name = LANGUAGE[language]
        job = finite(s["methods"].get("job", {}).get("mb_per_s_per_core"))
        job_cpu = s["methods"].get("job", {}).get("mb_per_cpu_s")
        lines.append(f"| {name}: job at least {TARGET_MB_S[language]:.0f} MB/s per core per extra MB | "
                     f"{fmt(job, '.2f')} (on CPU seconds: {fmt(job_cpu, '.2f')} MB per CPU-second) | "
                     f"{verdict(job, TARGET_MB_S[language])} |")
        r = s["job_over_function"]
        lines.append(f"| {name}: job at least {TARGET_OF_FUNCTION:.0%} of the fingerprint function's MB/s per core | "
                     f"{fmt(r and 100 * r, '.0f', '%')} (on CPU seconds: "
                     f"{fmt(s.get('job_over_function_cpu') and 100 * s['job_over_function_cpu'], '.0f', '%')}) | "
                     f"{verdict(r, TARGET_OF_FUNCTION)} |")
        r = s["job_over_recipe"]
        lines.append(f"| {name}: job at least {TARGET_OVER_RECIPE:.0f}x the recipe + plain join | "
                     f"{fmt(r, '.2f', 'x')} | {verdict(r, TARGET_OVER_RECIPE)} |")
        for anchor, value in ANCHORS.items():
            r = ratio(job, value)
            lines.append(f"| {name}: job at least {TARGET_OVER_ANCHORS:.0f}x {anchor} | "
                         f"{fmt(r, '.1f', 'x')} | {verdict(r, TARGET_OVER_ANCHORS)} |")
    lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="0.3 and 1.2 MB per language (a smoke run)")
    parser.add_argument("--languages", type=languages_arg, default=tuple(SIZES_MB),
                        help="comma-separated, of zh,en (default both; the tests' quick run takes zh alone)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each method on the small inputs")
    parser.add_argument("--big-repeats", type=int, default=1, help="runs of each method on the big inputs")
    parser.add_argument("--rev", default=None, help="measure this commit's job (a git worktree) instead of the "
                        "working tree's")
    parser.add_argument("--base", default=None, help="also run this commit's job (a git worktree), each run right "
                        "after the job's on the same input, and report the ratio of the two rates (an A/B)")
    parser.add_argument("--no-recipe", action="store_true", help="skip the recipe (its big runs are the longest)")
    parser.add_argument("--recipe-repeats", type=int, default=None,
                        help="at most this many runs of the recipe on each input (default: as many as the job's)")
    parser.add_argument("--recipe-big-mb", type=float, default=None,
                        help="the recipe's big input in MB (default: the job's, 200 MB; the recipe's 200 MB "
                        "runs take ~6 min Chinese, ~4 min English: a smaller one reads its rate off a shorter run)")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds one run may take")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--markdown", action="store_true", help="print the section instead of the JSON")
    parser.add_argument("--recipe-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.recipe_worker:
        return recipe_worker(args)
    report = measure(args)
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text)
    print("\n".join(section_lines(report, "python -m bench.job_throughput")) if args.markdown else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

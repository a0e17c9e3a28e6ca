"""Benchmark: the job's fixed costs, per document and per run (issue 14, targets 2 and 4).

    .venv/bin/python -m bench.job_fixed_costs [--quick] [--parts documents,sample] [--n 1000000]
                                              [--sample-runs 3] [--rev HEAD] [--base REV | --no-base]
                                              [--driver-memory 8g]

Prints a JSON document on stdout (bench/run_all.py renders its parts with `documents_lines` and
`sample_lines`).

documents: N short documents end to end, `python jobs/dedupe.py --input ... --format json` as a
process (local[2], the driver memory given, at most 8 GB), one run: documents per second per
core (N / wall seconds / 2, and N / report.json's total_seconds / 2), the peak resident memory of
the process tree (driver JVM and Python workers, sampled every 0.2 s as bench/skew.py does) and
report.json's stage_seconds. Documents (cached under build/bench-cache/job-fixed-costs/): half
Chinese, half English, each sentences drawn at random from People's Daily 1998-01 or the Python
manual as text (`job_throughput.paragraphs_of`) until a length drawn from 200 x 10^(u^3)
characters (u uniform: 200-2,000, median ~270, mean ~460), so every document is a distinct text;
a near copy (one sentence cut, `pipeline_throughput.near_copy`) of every tenth. The point is
what each document costs besides its text.

sample: `python jobs/dedupe.py --input examples/sample.jsonl` (49 documents) --sample-runs
times: median of report.json's total_seconds and of the process's wall time, and report.json's
`spark_jobs` (the Spark jobs the run started) when the report has it. The driver maps its
classes from a class data sharing archive, as after ./quickstart.sh (recorded afresh by one
uncounted run into build/bench-cache/, so a stale one never counts), and the same job also runs
without one (SIMHASH_CLASS_ARCHIVE=none), the two taking turns run by run: the table gives
both and their ratio. With --base REV the other runs are that commit's job instead (with the
archive: the archive is the environment's, not the commit's); with --no-base there are no other
runs (bench/run_all.py's default, for its time budget).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

from bench.commit_cost import write_rows
from bench.job_runs import CORES, emit_report, job_tree, run_job, working_tree_commit
from bench.job_throughput import paragraphs_of, verdict
from bench.machine import load_average
from bench.pipeline_throughput import COPY_EVERY, near_copy
from bench.runners import CACHE as BENCH_CACHE
from bench.runners import ROOT, log
from bench.tables import fmt_n, load_text, seconds_list

CACHE = BENCH_CACHE / "job-fixed-costs"
SEED = 14
FORMAT = 1
N = 1_000_000
QUICK_N = 20_000
MIN_CHARS, MAX_CHARS = 200, 2000
SAMPLE = ROOT / "examples" / "sample.jsonl"
SAMPLE_TARGET_S = 8.0
DRIVER_MEMORY_LIMIT_GB = 8

_SENTENCE_END = re.compile(r"(?<=[。！？!?])|(?<=\.)\s+")


# ---------------------------------------------------------------- pure helpers

def sentences(paragraphs: list[str]) -> list[str]:
    """The paragraphs cut after every sentence end (`。！？!?`, or `.` before a space), each
    sentence stripped, empty ones dropped."""
    return [s.strip() for p in paragraphs for s in _SENTENCE_END.split(p) if s and s.strip()]


def target_length(rng: random.Random) -> int:
    """A document's length in characters: 200 x 10^(u^3), u uniform on [0, 1)."""
    return min(MAX_CHARS, int(MIN_CHARS * 10 ** (rng.random() ** 3)))


def short_document(pool: list[str], rng: random.Random, joiner: str) -> str:
    """Sentences drawn at random from the pool until `target_length` is reached, joined, cut
    at MAX_CHARS."""
    length = target_length(rng)
    parts: list[str] = []
    size = -len(joiner)  # n parts have n - 1 joiners
    while size < length:
        sentence = pool[rng.randrange(len(pool))]
        parts.append(sentence)
        size += len(joiner) + len(sentence)
    return joiner.join(parts)[:MAX_CHARS]


def short_documents(pools: dict[str, list[str]], n: int, seed: int = SEED) -> list[dict[str, str]]:
    """n rows (`id`, `text`): n - n // 11 originals alternating between the pools' languages,
    then a near copy of every COPY_EVERY-th original, n // 11 of them (so 10% of the originals
    have a copy whatever n is)."""
    rng = random.Random(seed)
    copies = n // (COPY_EVERY + 1)
    languages = list(pools)
    rows = []
    for i in range(n - copies):
        language = languages[i % len(languages)]
        rows.append({"id": f"{language}-{i}",
                     "text": short_document(pools[language], rng, "" if language == "zh" else " ")})
    rows += [{"id": f"{r['id']}-copy", "text": near_copy(r["text"])} for r in rows[::COPY_EVERY][:copies]]
    return rows


# ---------------------------------------------------------------- inputs

def documents_input(n: int) -> dict:
    """The documents' JSON Lines file (cached) and what it holds."""
    path = CACHE / f"short-n{n}-seed{SEED}-v{FORMAT}.jsonl"
    meta = path.with_suffix(".meta.json")
    if not meta.exists():
        pools = {language: sentences(paragraphs_of(language)) for language in ("zh", "en")}
        rows = short_documents(pools, n)
        write_rows(rows, path)
        lengths = sorted(len(r["text"]) for r in rows)
        meta.write_text(json.dumps({"documents": len(rows), "mb": path.stat().st_size / 1e6,
                                    "chars_median": lengths[len(lengths) // 2],
                                    "chars_mean": sum(lengths) / len(lengths),
                                    "pool_sentences": {k: len(v) for k, v in pools.items()}}))
    return {"path": str(path), **json.loads(meta.read_text())}


# ---------------------------------------------------------------- the parts

def measure_documents(tree, args: argparse.Namespace) -> dict:
    item = documents_input(args.n or (QUICK_N if args.quick else N))
    log(f"job_fixed_costs: {item['documents']:,} short documents, {item['mb']:.1f} MB of JSON Lines")
    result = run_job(tree, ["--input", item["path"], "--format", "json"], CACHE / "out-documents",
                     args.driver_memory, args.timeout)
    log(f"job_fixed_costs: documents: {result['wall_s']:.1f} s wall, peak RSS {result['peak_rss'] / 2**30:.2f} GB")
    return {"input": item, "driver_memory": args.driver_memory, "run": result,
            "docs_per_s_per_core": item["documents"] / result["wall_s"] / CORES,
            "docs_per_s_per_core_report": (item["documents"] / result["total_seconds"] / CORES
                                           if result.get("total_seconds") else None)}


def recorded_class_archive(tree, args: argparse.Namespace) -> Path:
    """A class data sharing archive of the driver's classes, recorded by one run of the sample
    (not counted) into the cache; replaced on every call, so that it matches today's jars."""
    CACHE.mkdir(parents=True, exist_ok=True)
    archive = CACHE / "driver-classes.jsa"
    recording = archive.with_suffix(".recording")
    recording.unlink(missing_ok=True)
    run_job(tree, ["--input", str(SAMPLE)], CACHE / "out-sample-recording", "2g", args.timeout,
            env={"SIMHASH_RECORD_CLASS_ARCHIVE": str(recording)})
    if not recording.is_file():
        raise RuntimeError("the recording run wrote no class archive (a JVM without class data sharing?)")
    recording.replace(archive)
    log(f"job_fixed_costs: recorded {archive} ({archive.stat().st_size / 1e6:.0f} MB)")
    return archive


def sample_runs(variants: dict[str, tuple[object, dict[str, str]]], args: argparse.Namespace) -> dict[str, dict]:
    """args.sample_runs runs of the sample per variant (name -> (JobTree, environment for its
    runs)), the variants taking turns within each round, so that a drift of the machine's
    speed falls on all of them alike. Per variant: `sample_summary` of its runs."""
    runs: dict[str, list[dict]] = {name: [] for name in variants}
    for i in range(args.sample_runs):
        for name, (tree, env) in variants.items():
            try:
                run = run_job(tree, ["--input", str(SAMPLE)], CACHE / f"out-sample-{name}", "2g", args.timeout,
                              env=env)
                log(f"job_fixed_costs: sample run {i + 1} ({name}): {run['wall_s']:.1f} s wall, report "
                    f"{run['total_seconds']} s, spark_jobs {run['spark_jobs']}")
            except RuntimeError as error:
                run = {"failed": str(error)[-600:]}
                log(f"job_fixed_costs: sample run {i + 1} ({name}) failed")
            runs[name].append(run)
    return {name: sample_summary(these) for name, these in runs.items()}


def sample_summary(runs: list[dict]) -> dict:
    """Medians of a tree's sample runs (report total_seconds, process wall seconds), its Spark
    job counts, and the first whole run's stage breakdown."""
    ok = [r for r in runs if "failed" not in r]
    totals = [r["total_seconds"] for r in ok if r.get("total_seconds") is not None]
    jobs = [r["spark_jobs"] for r in ok if r.get("spark_jobs") is not None]
    return {"runs": runs, "wall_s": [r["wall_s"] for r in ok], "total_seconds": totals,
            "median_total_seconds": statistics.median(totals) if totals else None,
            "median_wall_s": statistics.median([r["wall_s"] for r in ok]) if ok else None,
            "spark_jobs": jobs, "stage_seconds": ok[0]["stage_seconds"] if ok else {},
            "stage_jobs": ok[0].get("stage_jobs", {}) if ok else {}}


def ratio(head: float | None, base: float | None) -> float | None:
    """head / base, None when either is missing."""
    return head / base if head is not None and base else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_N:,} documents, 2 runs of the sample")
    parser.add_argument("--parts", default="documents,sample", help="documents, sample or both (comma-separated)")
    parser.add_argument("--n", type=int, default=None, help=f"documents (default {N:,}; --quick {QUICK_N:,})")
    parser.add_argument("--sample-runs", type=int, default=None, help="runs of the sample, each way (default 3; --quick 2)")
    parser.add_argument("--rev", default=None, help="measure this commit's job (a git worktree)")
    parser.add_argument("--base", default=None,
                        help="also run the sample with this commit's job (a git worktree), the two taking "
                             "turns; the table gives both medians and their ratio")
    parser.add_argument("--no-base", action="store_true",
                        help="the sample's runs with the class archive only: no second variant taking turns "
                        "(neither the job without the archive nor --base's)")
    parser.add_argument("--driver-memory", default="8g", help="the documents run's driver memory (at most 8g)")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    args.sample_runs = args.sample_runs or (2 if args.quick else 3)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not parts <= {"documents", "sample"}:
        parser.error(f"--parts: unknown {sorted(parts - {'documents', 'sample'})}")
    started = time.perf_counter()
    report: dict = {"quick": args.quick, "load_start": load_average()}
    with job_tree(args.rev) as tree:
        report["job_commit"] = (tree.commit or "")[:10] or working_tree_commit()
        if "documents" in parts:
            report["documents"] = measure_documents(tree, args)
        if "sample" in parts:
            archived = {"SIMHASH_CLASS_ARCHIVE": str(recorded_class_archive(tree, args))}
            with job_tree(args.base) as base:
                if args.no_base:
                    variants = {"head": (tree, archived)}
                elif args.base:
                    report["base_label"] = f"base {(base.commit or '')[:10]}"
                    variants = {"base": (base, archived), "head": (tree, archived)}
                else:
                    report["base_label"] = "without the class archive"
                    variants = {"base": (tree, {"SIMHASH_CLASS_ARCHIVE": "none"}), "head": (tree, archived)}
                both = sample_runs(variants, args)
            report["sample"] = both["head"] if args.no_base else {
                **both["head"], "base": both["base"],
                "ratio_total_seconds": ratio(both["head"]["median_total_seconds"],
                                             both["base"]["median_total_seconds"]),
                "ratio_wall_s": ratio(both["head"]["median_wall_s"], both["base"]["median_wall_s"])}
    return emit_report(report, started, args.json)


# ---------------------------------------------------------------- the document

DOCUMENTS_TITLE = "## 7. The job on short documents: per-document fixed costs (issue 14)"
SAMPLE_TITLE = "## 9. The sample's job time (issue 14)"


def stage_table(stage_seconds: dict[str, float], total: float | None,
                stage_jobs: dict[str, int] | None = None) -> list[str]:
    """Markdown rows: each stage's seconds, share of the total and (when the report counts
    them) Spark jobs, largest first."""
    jobs = stage_jobs or {}
    lines = ["| stage | seconds | share of total_seconds | Spark jobs |", "|---|---:|---:|---:|"]
    for stage, seconds in sorted(stage_seconds.items(), key=lambda kv: -kv[1]):
        share = f"{seconds / total:.0%}" if total else ""
        lines.append(f"| {stage} | {seconds:.2f} | {share} | {jobs.get(stage, '-')} |")
    return lines


def documents_lines(report: dict, command: str) -> list[str]:
    d = report["documents"]
    item, run = d["input"], d["run"]
    total = "-" if run.get("total_seconds") is None else f"{run['total_seconds']:.1f}"
    lines = [
        DOCUMENTS_TITLE,
        "",
        f"`{command}` (job at {report['job_commit']}; one run; load average {load_text(report['load_start'])} "
        f"at its start, {load_text(report['load_end'])} at its end).",
        "",
        f"Input: {item['documents']:,} documents ({item['mb']:.0f} MB of JSON Lines; median "
        f"{item['chars_median']:,} characters, mean {item['chars_mean']:,.0f}), half Chinese and half English, "
        "each sentences drawn at random from People's Daily 1998-01 or the Python manual as text until a length "
        "of 200 x 10^(u^3) characters (200-2,000), a near copy (one sentence cut) of every tenth. The job: "
        f"`python jobs/dedupe.py --input ... --format json` as a process, local[2], driver memory "
        f"{d['driver_memory']}. Peak RSS = the process tree (driver JVM and Python workers), sampled every 0.2 s.",
        "",
        "| documents | wall s | report total_seconds | documents/s per core (wall) | documents/s per core "
        "(total_seconds) | CPU s | peak RSS GB (JVM, Python workers) | Spark jobs |",
        "|---:|---:|---:|---:|---:|---:|---|---:|",
        f"| {fmt_n(item['documents'])} | {run['wall_s']:.1f} | "
        f"{total} | "
        f"{d['docs_per_s_per_core']:,.0f} | "
        + (f"{d['docs_per_s_per_core_report']:,.0f}" if d.get("docs_per_s_per_core_report") else "-")
        + f" | {run['cpu_s']:.0f} | {run['peak_rss'] / 2**30:.2f} ({run['peak_jvm_rss'] / 2**30:.2f}, "
        f"{run['peak_python_workers_rss'] / 2**30:.2f}) | {run.get('spark_jobs') if run.get('spark_jobs') is not None else '-'} |",
        "",
        "Stage breakdown (report.json `stage_seconds`):",
        "",
        *stage_table(run["stage_seconds"], run.get("total_seconds"), run.get("stage_jobs")),
        "",
        "### Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
    ]
    memory_gb = float(d["driver_memory"].rstrip("gG")) if d["driver_memory"][-1] in "gG" else None
    ok = memory_gb is not None and memory_gb <= DRIVER_MEMORY_LIMIT_GB
    lines.append(f"| {fmt_n(item['documents'])} documents end to end, local[2], driver at most "
                 f"{DRIVER_MEMORY_LIMIT_GB} GB | completed in {run['wall_s']:.0f} s, driver {d['driver_memory']}, "
                 f"peak RSS {run['peak_rss'] / 2**30:.2f} GB | {'met' if ok else 'not met'} |")
    lines.append("")
    return lines


def sample_lines(report: dict, command: str) -> list[str]:
    s = report["sample"]
    total = "-" if s["median_total_seconds"] is None else f"{s['median_total_seconds']:.1f}"
    lines = [
        SAMPLE_TITLE,
        "",
        f"`{command}` (job at {report['job_commit']}): `python jobs/dedupe.py --input examples/sample.jsonl` "
        f"(49 documents) as a process, local[2], driver memory 2g, {len(s['runs'])} runs; medians. The "
        "driver maps its classes from a class data sharing archive, as after ./quickstart.sh (recorded "
        "by one uncounted run)" + ("; the second row's runs took turns with these." if "base" in s else "."),
        "",
        "| runs | report total_seconds (runs) | median | process wall s (runs) | median | Spark jobs |",
        "|---:|---|---:|---|---:|---|",
        sample_row("", s),
        *base_lines(report),
        "",
        "Stage breakdown of the first run (report.json `stage_seconds`):",
        "",
        *stage_table(s["stage_seconds"], s["total_seconds"][0] if s["total_seconds"] else None, s.get("stage_jobs")),
        "",
        "### Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
        f"| the sample's job time at most {SAMPLE_TARGET_S:.0f} s (report.json total_seconds, median) | "
        f"{total} s | "
        f"{verdict(s['median_total_seconds'], SAMPLE_TARGET_S, at_least=False)} |",
        f"| the same, the process's wall time (start-up included), median | {s['median_wall_s']:.1f} s | "
        f"{verdict(s['median_wall_s'], SAMPLE_TARGET_S, at_least=False)} |",
        "",
    ]
    return lines


def sample_row(label: str, summary: dict) -> str:
    """One tree's row of the sample's table (`sample_summary`'s figures); label goes before its
    run count (the base's commit, nothing for the measured job)."""
    def median(key: str) -> str:
        return "-" if summary[key] is None else f"{summary[key]:.1f}"

    jobs = ", ".join(map(str, sorted(set(summary["spark_jobs"])))) or "not in report.json"
    return (f"| {label}{len(summary['wall_s'])} of {len(summary['runs'])} | {seconds_list(summary['total_seconds'], 1)} | "
            f"{median('median_total_seconds')} | {seconds_list(summary['wall_s'], 1)} | {median('median_wall_s')} | {jobs} |")


def base_lines(report: dict) -> list[str]:
    """The --base row of the sample's table and the ratio line (none without --base)."""
    s = report["sample"]
    if "base" not in s:
        return []
    ratios = [f"{s[key]:.2f}" if s.get(key) is not None else "-" for key in ("ratio_total_seconds", "ratio_wall_s")]
    return [
        sample_row(f"{report.get('base_label') or 'base ' + report['base_commit']}: ", s["base"]),
        "",
        f"First row / second (runs taking turns): report total_seconds {ratios[0]}x, process wall {ratios[1]}x.",
    ]


if __name__ == "__main__":
    sys.exit(main())

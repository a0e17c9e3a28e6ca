"""Benchmark: the whole job on English HTML pages, pages per second per core per extra page
(issue 14, the HTML target: at least 250 end to end with --extract main).

    .venv/bin/python -m bench.job_html [--quick] [--repeats 2] [--rev HEAD] [--driver-memory 8g]
                                       [--json out.json]

Prints a JSON document on stdout (bench/run_all.py renders it with `section_lines`); when
../shared/data is absent, a report that says it skipped.

Input: pages built from the 181 real news and blog pages of ../shared/data/web/aeb (mostly
English; the pages bench/extractors.py measures the extractors on). Each page is one of them
as it is (navigation, sidebars, scripts, footer) with the text of every one of its `<p>`
elements replaced by a `<p>` text drawn at random from all of them: a distinct article in a
real site's boilerplate, which is what main-content extraction exists for. Every tenth page is
followed by a near copy of it (one `<p>` element dropped). JSON Lines (`id`, `text` = the HTML)
at two sizes, the small input the first pages of the big one, under build/bench-cache/job-html/.
Extraction's cost depends on a page's markup as much as on its size (the Python manual's
pages, dense with small elements, extract at ~2 MB/s against ~15 for these), so the figures are
of these pages, said with their mean size.
Methods:
- job: `python jobs/dedupe.py --input ... --format json --html` (its default --extract main)
  as a process, local[2], the two sizes taking turns in every repeat;
- extraction alone: `core.extract.extract_text(html, "main")` over the small input's pages in
  one process (one core), median of 3 after a warm-up: a ceiling the job cannot pass.
Figures: pages/s per core per extra page = (pages_big - pages_small) / (s_big - s_small) / 2,
so that the start-up both sizes pay cancels; the job's stage seconds per extra page (report.json
`stage_seconds`, big minus small); the target's verdict.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

from bench.commit_cost import write_rows
from bench.datasets import load_aeb
from bench.job_runs import CORES, JobTree, emit_report, job_env, job_tree, last_json_line, run_job, working_tree_commit
from bench.job_throughput import finite, fmt, median, per_core_rate, stage_seconds_per_extra, verdict
from bench.machine import load_average
from bench.runners import CACHE as BENCH_CACHE
from bench.runners import ROOT, log
from bench.tables import load_text, seconds_list

CACHE = BENCH_CACHE / "job-html"
AEB = ROOT.parent / "shared" / "data" / "web" / "aeb"
SEED = 14
FORMAT = 2  # bump when the pages' construction changes
SIZES = (300, 2_000)
QUICK_SIZES = (60, 240)
COPY_EVERY = 10
TARGET_PAGES_S = 250.0  # per core, end to end, --extract main
SECTION_TITLE = "## 10. The job on HTML pages: pages/s per core per extra page (issue 14)"

PARAGRAPH = re.compile(r"(<p\b[^>]*>)(.*?)(</p>)", re.S | re.I)
MIN_PARAGRAPHS = 3  # a page with fewer has too little article to stand for one

# Run in the job's tree on one input: main-content extraction alone, one process.
EXTRACTION = """
import json, sys, time
from simhash_udf.core.extract import extract_text
pages = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")]
for page in pages[:50]:
    extract_text(page, "main")  # warm-up: trafilatura's and lxml's first calls
wall, cpu = [], []
for _ in range(3):
    w, c = time.perf_counter(), time.process_time()
    for page in pages:
        extract_text(page, "main")
    wall.append(time.perf_counter() - w); cpu.append(time.process_time() - c)
print(json.dumps({"wall_s": wall, "cpu_s": cpu}))
"""


# ---------------------------------------------------------------- pages

def site_pages(skeletons: list[str], n: int, seed: int = SEED) -> list[str]:
    """n HTML pages: each a skeleton (a page with at least MIN_PARAGRAPHS `<p>` elements)
    whose every `<p>` text is replaced by one drawn from the `<p>` texts of all skeletons;
    after every COPY_EVERY-th of these, a near copy of it with one `<p>` element dropped
    (counted in n). Deterministic for a seed."""
    usable = [page for page in skeletons if len(PARAGRAPH.findall(page)) >= MIN_PARAGRAPHS]
    if not usable:
        raise ValueError(f"no page with {MIN_PARAGRAPHS} or more <p> elements")
    pool = [m.group(2) for page in usable for m in PARAGRAPH.finditer(page) if m.group(2).strip()]
    rng = random.Random(seed)
    pages: list[str] = []
    originals = 0
    while len(pages) < n:
        page = PARAGRAPH.sub(lambda m: m.group(1) + rng.choice(pool) + m.group(3), rng.choice(usable))
        pages.append(page)
        originals += 1
        if originals % COPY_EVERY == 0 and len(pages) < n:
            pages.append(drop_one_paragraph(page, rng))
    return pages


def drop_one_paragraph(page: str, rng: random.Random) -> str:
    """The page without one of its `<p>` elements, chosen at random."""
    spans = [m.span() for m in PARAGRAPH.finditer(page)]
    start, end = rng.choice(spans)
    return page[:start] + page[end:]


def build_inputs(sizes: tuple[int, int], data: Path = AEB) -> list[dict]:
    """The two inputs (size, path, pages, mb), each written once under CACHE."""
    pages: list[str] | None = None
    inputs = []
    for size, n in zip(("small", "big"), sizes):
        path = CACHE / f"pages-{n}-seed{SEED}-v{FORMAT}.jsonl"
        meta = path.with_suffix(".meta.json")
        if not meta.exists():  # the meta file, written last, marks a complete input
            if pages is None:
                pages = site_pages([page.html for page in load_aeb(data, page_text=lambda html: "")], max(sizes))
            rows = [{"id": f"page-{i}", "text": page} for i, page in enumerate(pages[:n])]
            write_rows(rows, path)
            meta.write_text(json.dumps({"pages": n, "mb": sum(len(r["text"].encode()) for r in rows) / 1e6}))
        inputs.append({"size": size, "path": str(path), **json.loads(meta.read_text())})
    return inputs


# ---------------------------------------------------------------- the measurement

def run_extraction(tree: JobTree, item: dict) -> dict:
    """`EXTRACTION` in the job's tree on one input: pages/s (wall) and per CPU-second, medians."""
    done = subprocess.run([sys.executable, "-c", EXTRACTION, item["path"]], cwd=tree.path,
                          env=job_env(tree, "1g"), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the extraction failed: {done.stderr[-1500:]}")
    runs = last_json_line(done.stdout)
    return {**runs, "pages_per_s": item["pages"] / median(runs["wall_s"]),
            "pages_per_cpu_s": item["pages"] / median(runs["cpu_s"])}


def summarise(report: dict) -> dict:
    """The job's median wall and CPU seconds per size, its pages/s per core per extra page (on
    wall seconds) and pages per CPU-second per extra page, its stage seconds per extra page."""
    pages = {i["size"]: i["pages"] for i in report["inputs"]}
    ok = {size: [r for r in report["runs"][size] if "failed" not in r] for size in pages}
    if not (ok["small"] and ok["big"]):
        return {}
    wall = {size: median([r["wall_s"] for r in ok[size]]) for size in ok}
    cpu = {size: median([r["cpu_s"] for r in ok[size]]) for size in ok}
    return {
        "wall_s": wall, "cpu_s": cpu,
        "pages_per_s_per_core": per_core_rate((pages["small"], wall["small"]), (pages["big"], wall["big"])),
        "pages_per_cpu_s": per_core_rate((pages["small"], cpu["small"]), (pages["big"], cpu["big"]), cores=1),
        "stage_s_per_extra_page": stage_seconds_per_extra(ok["small"], ok["big"], pages["big"] - pages["small"]),
    }


def measure(args: argparse.Namespace) -> dict:
    """The runs (job on both sizes, taking turns; extraction alone) and their summary."""
    if not AEB.is_dir():
        log(f"job_html: {AEB} not found: skipped")
        return {"skipped": f"{AEB.relative_to(ROOT.parent)} not found beside the repository",
                "load_start": load_average()}
    inputs = build_inputs(QUICK_SIZES if args.quick else SIZES)
    report: dict = {"repeats": args.repeats, "quick": args.quick, "driver_memory": args.driver_memory,
                    "cores": CORES, "load_start": load_average(), "inputs": inputs,
                    "runs": {i["size"]: [] for i in inputs}}
    with job_tree(args.rev) as tree:
        report["job_commit"] = (tree.commit or "")[:10] or working_tree_commit()
        for repeat in range(1, args.repeats + 1):
            for item in inputs:
                try:
                    result = run_job(tree, ["--input", item["path"], "--format", "json", "--html"],
                                     CACHE / "out" / item["size"], args.driver_memory, args.timeout)
                except RuntimeError as error:
                    result = {"failed": str(error)[-600:]}
                report["runs"][item["size"]].append(result)
                told = result.get("failed") or f"{result['wall_s']:.1f} s wall, {result['cpu_s']:.1f} s CPU"
                log(f"job_html: run {repeat} {item['size']} ({item['pages']:,} pages): {told}")
        report["extraction"] = run_extraction(tree, inputs[0])
        log(f"job_html: extraction alone {report['extraction']['pages_per_s']:.1f} pages/s")
    report["summary"] = summarise(report)
    return report


# ---------------------------------------------------------------- the document

def section_lines(report: dict, command: str) -> list[str]:
    """The markdown section for bench/RESULTS.md, its heading included."""
    if "skipped" in report:
        return [SECTION_TITLE, "", f"`{command}` skipped: {report['skipped']} (the pages it builds on).", ""]
    summary, extraction = report["summary"], report["extraction"]
    rate = summary.get("pages_per_s_per_core")
    lines = [
        SECTION_TITLE,
        "",
        f"`{command}` (job at {report['job_commit']}; {report['repeats']} runs of each size, taking turns; "
        f"medians; {report['seconds']:.0f} s in all; load average {load_text(report['load_start'])} at its start, "
        f"{load_text(report['load_end'])} at its end; driver memory {report['driver_memory']}).",
        "",
        "Input: pages built from the 181 real news and blog pages of ../shared/data/web/aeb: each one of them "
        "as it is (navigation, sidebars, scripts, footer) with the text of every `<p>` element replaced by a "
        "`<p>` text drawn at random from all of them, a near copy (one `<p>` dropped) after every tenth. "
        "**job** = `python jobs/dedupe.py --input ... --format json --html` as a process, local[2], its "
        "defaults (`--extract main`); **extraction alone** = `extract_text(html, \"main\")` over the small "
        "input's pages, one process (so per core), median of 3. Pages/s per core per extra page = "
        "(pages big - pages small) / (s big - s small) / 2: the start-up both sizes pay cancels.",
        "",
        "| size | pages | MB of HTML | KB per page | job wall s (runs) | CPU s (runs) | peak RSS MB |",
        "|---|---:|---:|---:|---|---|---:|",
    ]
    for item in report["inputs"]:
        ok = [r for r in report["runs"][item["size"]] if "failed" not in r]
        peak = max((r["peak_rss"] for r in ok), default=0) / 2**20
        lines.append(f"| {item['size']} | {item['pages']:,} | {item['mb']:.1f} | {1000 * item['mb'] / item['pages']:.0f} | "
                     f"{seconds_list([r['wall_s'] for r in ok])} | {seconds_list([r['cpu_s'] for r in ok])} | "
                     f"{peak:,.0f} |")
    stages = sorted(summary.get("stage_s_per_extra_page", {}).items(), key=lambda kv: -kv[1])
    rate = finite(rate)
    lines += [
        "",
        f"- The job: **{rate:.1f} pages/s per core per extra page** ({fmt(summary.get('pages_per_cpu_s'), '.1f')} "
        f"per CPU-second); extraction alone {extraction['pages_per_s']:.1f} pages/s in one process "
        f"({extraction['pages_per_cpu_s']:.1f} per CPU-second)." if rate is not None
        else "- The job: no cost per extra page could be read off (a run failed, or the big one was not slower).",
        "- The job's stages, milliseconds per extra page (report.json `stage_seconds`, big minus small): "
        + ", ".join(f"{name} {1000 * s:.2f}" for name, s in stages[:8] if s > 0) + ".",
        "",
        "### Targets",
        "",
        "| target | measured | verdict |",
        "|---|---|---|",
        f"| English HTML pages, at least {TARGET_PAGES_S:.0f} pages/s per core end to end with `--extract main` "
        f"(per extra page) | {fmt(rate, '.1f')}; extraction alone {extraction['pages_per_s']:.1f} | "
        f"{verdict(rate, TARGET_PAGES_S)} |",
        "",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SIZES[0]} and {QUICK_SIZES[1]} pages")
    parser.add_argument("--repeats", type=int, default=2, help="runs of the job on each size")
    parser.add_argument("--rev", default=None, help="measure this commit's job (a git worktree)")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may take")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    return emit_report(measure(args), started, args.json)


if __name__ == "__main__":
    sys.exit(main())

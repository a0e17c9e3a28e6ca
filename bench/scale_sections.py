"""bench/RESULTS.md's sections for the join, skew, whole pipeline and cost model (issue 3,
parts 2-4 and the road to a billion): each runs its benchmark as `python -m bench.<script>`
and returns markdown.

Called by bench/run_all.py; the scripts themselves print JSON, so each also runs alone.
"""

from __future__ import annotations

import argparse
import sys

from bench.join_scale import table as join_table
from bench.pipeline_throughput import section as pipeline_section
from bench.runners import CACHE, ROOT, command_text, run_module_json
from bench.tables import fmt_n, load_text

SCALING_DOC = ROOT / "docs" / "scaling.md"

# Targets of issue 3, part 2.
GROWTH_TARGET = 1.15
HALF_AT = 16_000_000


def _failed(title: str, module: str) -> list[str]:
    return [title, "", f"`python -m bench.{module}` failed in this run: no figures (see its messages on the console).",
            ""]


# ---------------------------------------------------------------- 2. join

def join_run(args: argparse.Namespace) -> tuple[dict | None, list[str]]:
    script_args = ["--repeats", str(args.repeats), "--driver-memory", args.driver_memory]
    if args.quick and not args.join_sizes:
        script_args.append("--quick")
    elif args.profile.join_sizes:
        script_args += ["--sizes", args.profile.join_sizes]
    CACHE.mkdir(parents=True, exist_ok=True)
    # The JSON copy is for the scaling section; the command shown leaves it out.
    report = run_module_json("join_scale", [*script_args, "--json", str(CACHE / "join_scale.json")])
    title = "## 2. Join: 1M to 64M fingerprints, ours against the plain band join"
    if report is None:
        return None, _failed(title, "join_scale")
    return report, join_section(report, command_text("join_scale", script_args))


def join_section(report: dict, command: str) -> list[str]:
    results = report["results"]
    lines = [
        "## 2. Join: 1M to 64M fingerprints, ours against the plain band join",
        "",
        f"`{command}` ({report['seconds']:.0f} s; load average {load_text(report['load_start'])} "
        f"at its start, {load_text(report['load_end'])} at its end). k = {report['k']}; "
        f"local[2], driver memory {report['driver_memory']}; each method at each size in a fresh Spark.",
        "",
        "Input: `bench/synthetic.py`: N distinct signed 64-bit fingerprints, 1% planted in clusters of 2-10 "
        "members within 1-3 bits of a random seed, the rest uniformly random. Truth: every pair of a "
        "cluster's members within 3 bits, computed by the generator. Pairs within 3 bits by chance are "
        "not in it; expected C(N, 2) x 43,745 / 2^64 of them: "
        + ", ".join(f"{e['expected_chance_pairs']:.3g} at {fmt_n(e['n'])}" for e in results)
        + ". Exact = every planted pair found, every pair returned within 3 bits once, and (up to 4M) the "
        "pairs equal a numpy brute force (every member of every 16-bit block's buckets compared).",
        "",
        "Methods: **ours** = `join.near_duplicate_pairs(fingerprints, bands.choose_plan(N, 3))`, the "
        "job's join at this commit; **baseline** = the plain k+1-band self-join inline in Spark SQL "
        "(four 16-bit bands, equality join per band, `bit_count(a ^ b) <= 3`, then `DISTINCT`). "
        "Wall = seconds from the plan to the written pairs (median of repeats below 4M, of two at 4M; "
        "1 run at 16M and above). Rows shuffled = shuffle records written by the run's stages (Spark's REST API; "
        "broadcast joins off, as at scale). Candidate pairs = the pairs a method compares, counted in "
        "numpy on the same data: for the baseline, pairs sharing one of its four 16-bit keys (summed "
        "over bands, before `DISTINCT`); for ours, pairs sharing a table's key and, when the join has "
        "a second level, one of its sub-blocks too (summed). Peak RSS = the run's process tree (driver JVM and Python "
        "workers), sampled every 0.2 s. baseline / ours above 1: ours is faster.",
        "",
        *join_table(report),
        "",
        "Plans ours used: " + "; ".join(
            f"{fmt_n(e['n'])}: {e['plan']['blocks']} blocks, {e['plan']['tables']} tables" for e in results) + ".",
        "",
    ]
    lines += join_targets(report)
    return lines


# A size the default run leaves out of the join section (run_all's DEFAULT profile).
NOT_RUN = ("not run (`run_all --full` runs it; section 8 runs this baseline at 4M and 16M beside the whole job, "
           "whose stage times include its join)")


def join_targets(report: dict) -> list[str]:
    results = report["results"]
    ok = [e for e in results if e["ours"].get("status") == "ok"]
    exact = all(e["ours"].get("exact") for e in ok) and len(ok) == len(results)

    def ratio(e: dict) -> float | None:
        b, o = e["baseline"], e["ours"]
        base_s = b.get("median_s") or b.get("extrapolated_s")
        return base_s / o["median_s"] if base_s and o.get("median_s") else None

    rows = ["### Targets", "", "| target | measured | verdict |", "|---|---|---|"]
    rows.append(f"| exact at every size | {sum(bool(e['ours'].get('exact')) for e in ok)} of {len(results)} sizes "
                f"exact | {'met' if exact else 'not met'} |")
    for n in (1_000_000, 4_000_000):
        e = next((e for e in ok if e["n"] == n), None)
        r = ratio(e) if e else None
        rows.append(f"| no slower than the baseline at {fmt_n(n)} | "
                    + (f"baseline / ours = {r:.2f}x | {'met' if r >= 1 else 'not met'} |" if r else f"{NOT_RUN} | |"))
    e = next((e for e in ok if e["n"] == HALF_AT), None)
    r = ratio(e) if e else None
    rows.append("| at most half the baseline's time at 16M | "
                + (f"baseline / ours = {r:.2f}x | {'met' if r >= 2 else 'not met'} |" if r else f"{NOT_RUN} | |"))
    g = report.get("growth_ours_4m_up")
    sizes = [e["n"] for e in ok if e["n"] >= 4_000_000]
    span = f"{fmt_n(min(sizes))}-{fmt_n(max(sizes))}" if sizes else ""
    gb = report.get("growth_baseline_4m_up")
    rows.append(f"| growth 4M-64M no worse than N^{GROWTH_TARGET} | "
                + (f"N^{g:.2f} over {span} (least squares of log time on log N)"
                   + (f"; baseline N^{gb:.2f}" if gb else "")
                   + f" | {'met' if g <= GROWTH_TARGET and max(sizes) >= 64_000_000 else ('met so far' if g <= GROWTH_TARGET else 'not met')} |"
                   if g is not None else "fewer than two sizes of 4M and above | |"))
    e64 = next((e for e in results if e["n"] == 64_000_000), None)
    if e64 is None:
        rows.append("| 64M completes with the driver at most 8 GB | not run (`run_all --full` runs it) | |")
    else:
        o = e64["ours"]
        rows.append(f"| 64M completes with the driver at most 8 GB | {o.get('status')}"
                    + (f", {o['median_s']:.0f} s, peak RSS {o['peak_rss'] / 2**30:.1f} GB" if o.get("median_s") else "")
                    + f" (driver {report['driver_memory']}) | {'met' if o.get('status') == 'ok' and o.get('exact') else 'not met'} |")
    return rows + [""]


# ---------------------------------------------------------------- 3. skew

def skew_run(args: argparse.Namespace) -> list[str]:
    script_args = (["--driver-memory", args.driver_memory, "--sql-timeout", f"{args.profile.skew_sql_timeout:g}"]
                   + (["--runs", args.profile.skew_runs] if args.profile.skew_runs else [])
                   + (["--quick"] if args.quick else []))
    report = run_module_json("skew", script_args)
    title = "## 3. Skew: a template's pages, exact copies, a hot key"
    if report is None:
        return _failed(title, "skew")
    return skew_section(report, command_text("skew", script_args))


def skew_section(report: dict, command: str) -> list[str]:
    lines = [
        "## 3. Skew: a template's pages, exact copies, a hot key",
        "",
        f"`{command}` ({report['seconds']:.0f} s): {report['n']:,} documents (`id`, `fingerprint`) through "
        "the job itself (`jobs/dedupe.py` main, `--fingerprint-col fingerprint`, local[2], driver memory "
        f"{report['driver_memory']}), {_skew_runs_text(report['runs'])}, each run killed after "
        f"{report['timeout_s']:.0f} s if not done. **template**: 10% of the documents are one template's "
        "pages (its fingerprint with 1 or 2 bits flipped: 2,081 distinct fingerprints at most, since "
        "only that many 64-bit words lie within 2 bits of one), 1% are exact copies of one page, the "
        "rest random. **hot-key**: the template's pages instead have distinct fingerprints equal in "
        "the high 44 bits and random in the low 20, so every table keyed on high bits has one bucket "
        "of them all. Peak RSS = the job's process tree (driver JVM and Python workers).",
        "",
        "| scenario | pairs/ | status | wall s | peak RSS MB (JVM) | template pages: clusters (truth) | copies: clusters "
        "| candidate pairs | verified pairs | largest bucket | hot buckets (first 4 the report lists) |",
        "|---|---|---|---:|---|---|---|---:|---:|---:|---|",
    ]
    for r in report["runs"]:
        hot = "; ".join(
            f"table {h.get('table')}"
            + (f" sub-block {h['sub_block']}" if h.get("sub_block") is not None else "")
            + f": {h.get('size'):,} members"
            + (f", {h['comparisons']:,} compared of {h.get('candidate_pairs_avoided', 0):,} pairs"
               if h.get("comparisons") is not None else "")
            for h in r.get("hot_buckets", [])[:4]
        ) or "none"
        inp = r["input"]
        cells = [
            r["scenario"], "written" if r["pairs"] else "`--no-pairs`", r["status"], f"{r['wall_s']:.0f}",
            f"{r['peak_rss'] / 2**20:,.0f} ({r['peak_jvm_rss'] / 2**20:,.0f})",
            (f"{r['template_clusters']} (truth {r.get('template_truth_components')}: "
             f"{'equal' if r.get('template_clusters_match_truth') else 'NOT equal'}; {r['template_rows']:,} pages, "
             f"{inp['distinct_template_fingerprints']:,} fingerprints)" if "template_clusters" in r else ""),
            f"{r['copy_clusters']} ({r['copy_rows']:,} copies)" if "copy_clusters" in r else "",
            f"{r['candidate_pairs']:,}" if r.get("candidate_pairs") is not None else "",
            f"{r['verified_pairs']:,}" if r.get("verified_pairs") is not None else "",
            f"{r['largest_bucket']:,}" if r.get("largest_bucket") is not None else "",
            hot,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if report.get("sql_join"):
        lines += [
            "Today's one-level SQL join alone (`bench.sql_join.sql_near_duplicate_pairs`: a self-join per table, "
            "every bucket expanded into all its pairs, verified by `bit_count`) on each scenario's distinct "
            f"fingerprints, killed after {report.get('sql_timeout_s', 300):.0f} s if not done:",
            "",
            "| scenario | distinct fingerprints | blocks | status | join s | wall s (with start-up) | peak RSS MB | pairs |",
            "|---|---:|---:|---|---:|---:|---:|---:|",
        ]
        for r in report["sql_join"]:
            lines.append(
                f"| {r['scenario']} | {r['distinct']:,} | {r.get('blocks', '')} | {r['status']} | "
                f"{r['join_s']:.0f} |" if "join_s" in r else
                f"| {r['scenario']} | | | {r['status']} | |"
            )
            pairs = f"{r['pairs']:,}" if r.get("pairs") is not None else ""
            lines[-1] += f" {r['wall_s']:.0f} | {r['peak_rss'] / 2**20:,.0f} | {pairs} |"
        lines.append("")
    ok = [r for r in report["runs"] if r["status"] == "ok"]
    one = all(r.get("template_clusters_match_truth") and r.get("copy_clusters") == 1 for r in ok)
    lines += [
        f"Checks: {len(ok)} of {len(report['runs'])} runs finished; in "
        f"{'every one' if one else 'NOT every one'} of them the template's pages are clustered exactly as their "
        "connected components under \"within 3 bits\" (computed by bench/skew.py apart from the job: one for the "
        "template; scipy on all pairs for the hot key), and the copies are one cluster. "
        "Hot buckets are as `report.json` lists them (`join.hot_buckets`).",
        "",
    ]
    return lines


def _skew_runs_text(runs: list[dict]) -> str:
    """Which runs the table has, e.g. "the template with pairs/, the hot-key with `--no-pairs`"."""
    return ", ".join(f"the {r['scenario']} {'with pairs/' if r['pairs'] else 'with `--no-pairs`'}" for r in runs)


# ---------------------------------------------------------------- 4. whole pipeline

def pipeline_run(args: argparse.Namespace) -> list[str]:
    """Section 4: bench/pipeline_throughput.py's `section`, which runs it in its own process."""
    print("run_all: bench.pipeline_throughput.section", file=sys.stderr)
    return pipeline_section(quick=args.quick, repeats=args.repeats)


# ---------------------------------------------------------------- 5. the road to a billion

def scaling_run(args: argparse.Namespace, join_report: dict | None) -> list[str]:
    script_args = ["--quick"] if args.quick else []
    if join_report is not None:
        script_args += ["--join-json", str(CACHE / "join_scale.json")]
    if not args.quick:  # a full run rewrites the generated part of docs/scaling.md
        script_args += ["--write", str(SCALING_DOC)]
    report = run_module_json("scaling_table", script_args)
    title = "## 5. The road to a billion: the cost model"
    if report is None:
        return _failed(title, "scaling_table")
    judged = [q for v in report["validation"] for name, q in v.items() if isinstance(q, dict) and q["judged"]]
    within = sum(bool(q["within_20pct"]) for q in judged)
    worst = max((abs(q["error"]) for q in judged), default=float("nan"))
    lines = [
        title,
        "",
        f"`{command_text('scaling_table', script_args)}`: the model's expectations against counts on "
        f"random fingerprints: {within} of {len(judged)} judged figures within 20% (largest error {worst:.1%}). "
        "The plans for 100M, 1B and 10B pages and the cluster each asks for are in "
        "[docs/scaling.md](../docs/scaling.md)"
        + (" (not rewritten by a --quick run)." if args.quick else " (rewritten by this run)."),
        "",
    ]
    md = report["markdown"]
    start = next((i for i, line in enumerate(md) if line.startswith("## The model against")), None)
    if start is not None:
        lines += [line.replace("## ", "### ", 1) if line.startswith("## ") else line for line in md[start:]]
    cal = next((i for i, line in enumerate(md) if line.startswith("Calibration:")), None)
    if cal is not None:
        end = start if start is not None and start > cal else len(md)
        lines += md[cal:end]
    return lines


# ---------------------------------------------------------------- 6-10. the whole job (issue 14)

def _job_args(args: argparse.Namespace) -> list[str]:
    """What every issue-14 section passes on: the driver memory and, when given, the commit
    whose job is measured (run_all's --job-rev)."""
    return ["--driver-memory", args.driver_memory] + (["--rev", args.job_rev] if args.job_rev else [])


def job_throughput_run(args: argparse.Namespace) -> list[str]:
    """Section 6: bench/job_throughput.py (the job's MB/s per core per extra MB)."""
    from bench.job_throughput import SECTION_TITLE, section_lines

    profile = args.profile
    script_args = (["--quick", "--repeats", "1"] if args.quick
                   else ["--repeats", str(profile.throughput_repeats)]) + _job_args(args)
    if not args.quick:
        if profile.recipe_big_mb:
            script_args += ["--recipe-big-mb", f"{profile.recipe_big_mb:g}"]
        if profile.recipe_repeats:
            script_args += ["--recipe-repeats", str(profile.recipe_repeats)]
        if args.big_repeats > 1:
            script_args += ["--big-repeats", str(args.big_repeats)]
    report = run_module_json("job_throughput", script_args)
    if report is None:
        return _failed(SECTION_TITLE, "job_throughput")
    return section_lines(report, command_text("job_throughput", script_args))


def job_documents_run(args: argparse.Namespace) -> list[str]:
    """Section 7: bench/job_fixed_costs.py's documents part (1M short documents)."""
    from bench.job_fixed_costs import DOCUMENTS_TITLE, documents_lines

    script_args = ["--parts", "documents"] + (["--quick"] if args.quick else []) + _job_args(args)
    report = run_module_json("job_fixed_costs", script_args)
    if report is None:
        return _failed(DOCUMENTS_TITLE, "job_fixed_costs")
    return documents_lines(report, command_text("job_fixed_costs", script_args))


def job_vs_join_run(args: argparse.Namespace) -> list[str]:
    """Section 8: bench/job_vs_join.py (the job on fingerprints against the plain band join)."""
    from bench.job_vs_join import SECTION_TITLE, section_lines

    script_args = (["--quick"] if args.quick else []) + _job_args(args)
    report = run_module_json("job_vs_join", script_args)
    if report is None:
        return _failed(SECTION_TITLE, "job_vs_join")
    return section_lines(report, command_text("job_vs_join", script_args))


def job_sample_run(args: argparse.Namespace) -> list[str]:
    """Section 9: bench/job_fixed_costs.py's sample part (the sample's job time: 3 runs with the
    class archive, taking turns with 3 without it when the profile asks, or with --job-base's)."""
    from bench.job_fixed_costs import SAMPLE_TITLE, sample_lines

    if args.job_base:
        other = ["--base", args.job_base]
    else:
        other = [] if args.profile.sample_base else ["--no-base"]
    script_args = ["--parts", "sample"] + (["--quick"] if args.quick else []) + _job_args(args) + other
    report = run_module_json("job_fixed_costs", script_args)
    if report is None:
        return _failed(SAMPLE_TITLE, "job_fixed_costs")
    return sample_lines(report, command_text("job_fixed_costs", script_args))


def job_html_run(args: argparse.Namespace) -> list[str]:
    """Section 10: bench/job_html.py (the job on HTML pages, pages/s per core per extra page)."""
    from bench.job_html import SECTION_TITLE, section_lines

    script_args = (["--quick"] if args.quick else []) + _job_args(args)
    report = run_module_json("job_html", script_args)
    if report is None:
        return _failed(SECTION_TITLE, "job_html")
    return section_lines(report, command_text("job_html", script_args))

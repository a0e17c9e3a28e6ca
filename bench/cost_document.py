"""The document of bench/commit_cost.py (docs/cost.md) from its JSON report, and the
arithmetic of a cost per extra MB. Pure functions, no I/O."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from bench.tables import load_text, seconds_list, table_lines

TARGET_RATIO = 1.3  # issue 13: head's cost per extra MB at most this times the base's
STAGES_SHOWN = 6  # stages in the table of where the time goes, by their largest cost per extra MB
LANGUAGE = {"zh": "Chinese, plain text (People's Daily)", "en": "English HTML, `--html` (Python manual)"}


def cost_per_mb(small: tuple[float, float], big: tuple[float, float]) -> float:
    """Seconds per extra MB between two runs given as (MB, seconds): (t_big - t_small) /
    (MB_big - MB_small). What both runs pay alike (start-up) cancels."""
    (mb_small, s_small), (mb_big, s_big) = small, big
    if mb_big <= mb_small:
        raise ValueError(f"the big input ({mb_big} MB) must be larger than the small one ({mb_small} MB)")
    return (s_big - s_small) / (mb_big - mb_small)


def median_or_nan(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def summarise(report: dict) -> dict:
    """Per language and commit: the median wall and CPU seconds of each size, the cost per
    extra MB of both (`cost_per_mb` on the medians), and per stage the cost per extra MB of its
    median stage_seconds; the ratios head/base of the wall and the CPU cost."""
    mb = {(i["language"], i["size"]): i["mb"] for i in report["inputs"]}
    runs = {(r["language"], r["size"], r["commit"]): r for r in report["runs"]}
    result: dict = {}
    for language in dict.fromkeys(i["language"] for i in report["inputs"]):
        per_commit = {}
        for commit in report["commits"]:
            small, big = runs[(language, "small", commit)], runs[(language, "big", commit)]

            def cost(values: Callable[[dict], list[float]], small: dict = small, big: dict = big) -> float:
                return cost_per_mb((mb[(language, "small")], median_or_nan(values(small))),
                                   (mb[(language, "big")], median_or_nan(values(big))))

            stages = dict.fromkeys(s for run in (small, big) for r in run["reports"] for s in r["stage_seconds"])
            per_commit[commit] = {
                "wall_s": {"small": median_or_nan(small["wall_s"]), "big": median_or_nan(big["wall_s"])},
                "cost_s_per_mb": cost(lambda run: run["wall_s"]),
                "cpu_cost_s_per_mb": cost(lambda run: [r["cpu_s"] for r in run["reports"]]),
                "stage_cost_s_per_mb": {
                    stage: cost(lambda run, stage=stage: [r["stage_seconds"].get(stage, 0.0) for r in run["reports"]])
                    for stage in stages
                },
            }
        base, head = per_commit["base"], per_commit["head"]
        result[language] = {"commits": per_commit, "ratio": head["cost_s_per_mb"] / base["cost_s_per_mb"],
                            "cpu_ratio": head["cpu_cost_s_per_mb"] / base["cpu_cost_s_per_mb"]}
    return result


def text_stage_lines(stages: dict) -> list[str]:
    """The section on the Chinese text steps (`TEXT_STAGES`) of both commits."""
    base, head = stages["base"], stages["head"]
    mb = stages["mb"]
    steps = [
        ("normalise", base["normalise"], head["normalise"]),
        ("fingerprint step (base: fingerprints; head: signatures = fingerprint + sketch)",
         base["fingerprints"], head["signatures"]),
        ("head's fingerprints alone, for comparison", base["fingerprints"], head["fingerprints"]),
        ("normalise + fingerprint step", base["normalise"] + base["fingerprints"],
         head["normalise"] + head["signatures"]),
    ]
    rows = [[step, f"{b:.3f}", f"{h:.3f}", f"{mb / b:.1f} / {mb / h:.1f}", f"{h / b:.2f}x"] for step, b, h in steps]
    return [
        "## The Chinese text steps alone (one process, no Spark)", "",
        f"CPU seconds of what the fingerprint stage's Python workers run, on the Chinese small input "
        f"(`{stages['input']}`, {mb:.2f} MB), each commit's own code, median of 3 after a warm-up.", "",
        *table_lines(["step", "base CPU s", "head CPU s", "MB per CPU-second (base / head)", "head / base"],
                     rows, right=".rrrr"), "",
    ]


def repeats_text(report: dict) -> str:
    """`3 repeats`, or `2 of 3 repeats (the run was stopped)` when fewer runs were recorded than asked."""
    done = min(len(r["wall_s"]) + len(r["failures"]) for r in report["runs"])
    if done == report["repeats"]:
        return f"{done} repeat{'s' if done > 1 else ''}"
    return f"{done} of {report['repeats']} repeats (the run was stopped after them; its JSON keeps every run so far)"


def document(report: dict) -> str:
    """docs/cost.md: the inputs, every run, the cost per extra MB of both commits against the
    target, and where the time goes (stage_seconds), from this benchmark's JSON."""
    summary = summarise(report)
    commits = report["commits"]
    base, head = commits["base"]["commit"][:10], commits["head"]["commit"][:10]
    lines = [
        "# Cost per extra MB: the job before issue 13 and now",
        "",
        f"Written by `{report['command']}` on {report['when']} in {report['seconds']:.0f} s ({report['cpu']}; load average "
        f"{load_text(report['load_start'])} at its start, {load_text(report['load_end'])} at its end: the machine "
        "is shared, so single runs are noisy and base and head alternate within every repeat).",
        "",
        f"**base** = `{base}` (`--base {commits['base']['rev']}`, the commit before issue 13); **head** = `{head}` "
        f"(`--head {commits['head']['rev']}`). Each commit's job runs as a whole process, `python jobs/dedupe.py "
        f"--input X --format json --master {report['master']}` with the driver at {report['driver_memory']}, its defaults otherwise "
        "(k = 3; HTML: `--html`, `--extract main`), from its own git worktree (the driver and a Spark Python "
        "worker were checked to import `simhash_udf` from it). Wall seconds include start-up; the cost per "
        "extra MB, (t_big - t_small) / (MB_big - MB_small) on medians, cancels it. "
        f"{repeats_text(report)}, medians.",
        "",
        "## Inputs",
        "",
        "JSON Lines (`id`, `text`) built by `bench/commit_cost.py` from bench/corpora.py's sources, a near-copy "
        "(one sentence cut from its middle) of every tenth document; MB = UTF-8 MB of the texts, copies included. "
        "Chinese beyond People's Daily's 5.5 MB repeats its paragraphs in a new seeded order per repetition, "
        "grouped into 2,000-4,000-character documents (distinct texts); the small input is the first "
        "documents of the big one. English: the manual's pages in a seeded order.",
        "",
        *table_lines(["input", "size", "documents", "MB"],
                     [[LANGUAGE[i["language"]], i["size"], f"{i['documents']:,}", f"{i['mb']:.2f}"]
                      for i in report["inputs"]], right="..rr"),
        "",
        "## Cost per extra MB",
        "",
    ]
    def verdict(ratio: float) -> str:
        return "met" if ratio <= TARGET_RATIO else f"missed by {ratio / TARGET_RATIO:.2f}x"

    rows = []
    for language, s in summary.items():
        b, h = s["commits"]["base"], s["commits"]["head"]
        rows += [
            [LANGUAGE[language], "wall", f"{b['cost_s_per_mb']:.2f}", f"{h['cost_s_per_mb']:.2f}", f"{s['ratio']:.2f}x",
             verdict(s["ratio"]), f"{1 / b['cost_s_per_mb'] / report['cores']:.2f} / {1 / h['cost_s_per_mb'] / report['cores']:.2f}"],
            [LANGUAGE[language], "CPU", f"{b['cpu_cost_s_per_mb']:.2f}", f"{h['cpu_cost_s_per_mb']:.2f}",
             f"{s['cpu_ratio']:.2f}x", verdict(s["cpu_ratio"]),
             f"{1 / b['cpu_cost_s_per_mb']:.2f} / {1 / h['cpu_cost_s_per_mb']:.2f} per CPU-second"],
        ]
    lines += table_lines(["input", "seconds", "base s per extra MB", "head s per extra MB", "head / base",
                          f"target <= {TARGET_RATIO}x", "extra MB/s per core (base / head)"], rows, right="..rrr.r")
    lines += ["", "wall = the target's measure, wall seconds of the whole process; CPU = user + system seconds "
              "of the job's process tree (the driver's Python, the JVM, its Python workers), which other "
              "processes on a shared machine disturb far less than wall time.", ""]
    lines += ["## Every run", "", *table_lines(
        ["input", "size", "commit", "wall (s)", "median wall (s)", "CPU (s)", "median CPU (s)", "failed runs"],
        [[LANGUAGE[r["language"]], r["size"], r["commit"], seconds_list(r["wall_s"], 1),
          f"{median_or_nan(r['wall_s']):.1f}", seconds_list([j["cpu_s"] for j in r["reports"]], 1),
          f"{median_or_nan([j['cpu_s'] for j in r['reports']]):.1f}", "; ".join(r["failures"]) or "0"]
         for r in report["runs"]],
        right="...rr.r."), ""]
    lines += ["## Where the time goes", "",
              "Seconds per extra MB of each stage (report.json `stage_seconds`, medians of the runs, big minus "
              f"small over the extra MB), the {STAGES_SHOWN} largest of either commit; a stage that one commit "
              "lacks shows `-`. The stages do not add up to the wall time: start-up, reading the "
              "input's schema and writing report.json are outside them.", ""]
    for language, s in summary.items():
        costs = {c: s["commits"][c]["stage_cost_s_per_mb"] for c in ("base", "head")}
        ranked = sorted(set(costs["base"]) | set(costs["head"]),
                        key=lambda st: -max(costs["base"].get(st, 0.0), costs["head"].get(st, 0.0)))
        shown = [[stage, *(f"{costs[c][stage]:.3f}" if stage in costs[c] else "-" for c in ("base", "head")),
                  f"{costs['head'].get(stage, 0.0) - costs['base'].get(stage, 0.0):+.3f}"]
                 for stage in ranked[:STAGES_SHOWN]]
        lines += [f"### {LANGUAGE[language]}", "",
                  *table_lines(["stage", "base s/MB", "head s/MB", "head - base"], shown, right=".rrr"), ""]
    if "text_stages" in report:
        lines += text_stage_lines(report["text_stages"])
    lines += ["## The head's sketch route (report.json `sketch`, last run of each input)", ""]
    for r in report["runs"]:
        if r["commit"] == "head" and r["reports"]:
            sketch = r["reports"][-1].get("sketch") or {}
            counted = {k: v for k, v in sketch.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            lines.append(f"- {LANGUAGE[r['language']]}, {r['size']}: applied {sketch.get('applied')}; "
                         + ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v:g}" for k, v in counted.items()))
    lines.append("")
    return "\n".join(lines)

"""Recall beyond k = 3, side by side: each candidate route's recall, rails and cost, and chaining
(issue 13); writes docs/recall-routes.md.

    nice .venv/bin/python -m bench.recall_routes            # full run, ~10 minutes on 2 cores
    .venv/bin/python -m bench.recall_routes --quick         # small seeded samples: a smoke test

The sets are bench/quality.py's (`quality.load_sets`: pages in both extraction modes, PAN-13,
unrelated long documents, near-copies of the articles with 1 / 3 / 5 % of words edited, and
bench/edited_copies.py's copies with a sentence added, a footer appended, a paragraph
dropped). Sentence pairs are left out: the routes of sections 2-4 change only pairs of texts
that both have at least `SketchConfig.min_chars` characters (shorter texts keep k = 3 and the
short-text policy), so docs/quality.md's sentence rail stands for them; section 5's feature
variants change short texts too, and docs/quality.md's defaults table has their sentence rails.

Every text is fingerprinted and sketched as the job does (`fingerprint.signatures`, default
`FingerprintConfig` and `SketchConfig`); "today" is the job's rule without the sketch
(`simhash_rule`: exact copies, or fingerprints within k = 3 and the short-text policy). Each
route adds merges to today's between long texts (both have a sketch). Pair figures come
from the two texts' fingerprints and sketches; the routes' joins are replaced by brute force
over the pairs (bench/route_pairs.py), which finds what an exact join finds. The sets and
pair figures are bench/route_sets.py's, the chaining section bench/route_chains.py's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from bench import quality
from bench.corpora import peoples_daily
from bench.datasets import DEFAULT_DATA, check_data, resolve
from bench.machine import library_version, machine_line
from bench.pair_sets import text_group
from bench.route_pairs import lsh_pairs, pairs_within, seeded_fingerprints
from bench.route_chains import section_chaining
from bench.route_sets import (
    FP,
    K,
    RECALL_SETS,
    SKETCH,
    PairData,
    Route,
    Signals,
    chunked,
    evaluate,
    load_frames,
    mean_recall,
    pair_data,
    rails_hold,
    result_cells,
    result_headers,
    simhash_rule,
    summarise,
)
from bench.runners import interleaved, log
from bench.tables import md_table, pct
from simhash_udf.core import bands
from simhash_udf.core.fingerprint import fingerprints, signatures
from simhash_udf.core.hot_runs import HOT_RUN_SIZE
from simhash_udf.core.limits import MAX_K
from simhash_udf.core.sketch import bands_agree, estimated_jaccard

DEFAULT_OUT = Path("docs/recall-routes.md")
LARGER_K = (4, 5, 6, 7, 8)
THRESHOLDS = (0.6, 0.7, 0.75, 0.8)
BAND_SHAPES = ((25, 5), (16, 8), (32, 4), (20, 6))
SCALES = (10**9, 10**10)
# A MinHash-LSH band row, modelled: an 8-byte hash of the band's values, the band number and
# the 8-byte fingerprint naming the text (the fingerprint join's row, fingerprint and table,
# measured 9 bytes on disk; see bands.SHUFFLE_BYTES_PER_ROW).
LSH_ROW_BYTES = 17
SKETCH_BYTES = 2 * SKETCH.size
CPU_MB = 4.0  # MB of each language timed (0.5 with --quick)

# --------------------------------------------------------------------------- LSH


def candidates(p: PairData, sig: Signals, shape: tuple[int, int]) -> np.ndarray:
    """Whether each pair is a MinHash-LSH candidate under `shape` (bands, rows)."""
    config = replace(SKETCH, bands=shape[0], rows=shape[1])
    return chunked(p.a, p.b, lambda x, y: bands_agree(sig.sketch[x], sig.sketch[y], config)).astype(bool)


# --------------------------------------------------------------------------- cost


def join_figures(k: int, n: int) -> bands.PlanCost:
    """The cost model's figures for the plan the job would choose at threshold k on n."""
    return bands.plan_cost(n, k, bands.choose_plan(n, k).blocks)


def lsh_cost_ratio(n_bands: int, n: int) -> float:
    """(k = 3 band join + n_bands LSH rows per text) / (k = 3 band join), in the cost model's
    units: an LSH row costs what a band row costs before its sub-block passes."""
    base = join_figures(K, n).cost
    return (base + bands.COST_PER_ROW * n_bands * n) / base


def lsh_probability(j: float, b: int, r: int) -> float:
    """P(two texts of Jaccard j are LSH candidates) = 1 - (1 - j^r)^b."""
    return 1.0 - (1.0 - j**r) ** b


# --------------------------------------------------------------------------- sections


def section_today(pairs: dict[str, PairData]) -> tuple[str, dict[str, float]]:
    base = evaluate(lambda p: p.today, pairs)
    text = ("## 1. Today: simhash at k = 3\n\n"
            + md_table(["route"] + result_headers(pairs), [["k = 3 (today)"] + result_cells(base)])
            + f"\n\nMean recall over the seven recall sets: {pct(mean_recall(base), 1)}. Every "
            "table below adds merges to this row, between texts of at least "
            f"{SKETCH.min_chars} characters.\n")
    return text, base


def route_row(label: str, r: dict[str, float], base: dict[str, float], *extra: str) -> list[str]:
    """A table row: the route, its figures, the change in mean recall, whether the rails hold."""
    return ([label] + result_cells(r) + [f"{100 * (mean_recall(r) - mean_recall(base)):+.1f} pts",
                                         "yes" if rails_hold(r) else "**no**", *extra])


def best_holding(results: Sequence[tuple[str, dict[str, float]]]) -> tuple[str, dict[str, float]] | None:
    """The (label, figures) with the highest mean recall among those holding every rail."""
    ok = [(label, r) for label, r in results if rails_hold(r)]
    return max(ok, key=lambda lr: mean_recall(lr[1])) if ok else None


def bought(best: tuple[str, dict[str, float]] | None, base: dict[str, float], cost: str) -> str:
    """`the best row that holds every rail is X (+n pts mean recall: a / b / ...) for <cost>`."""
    if best is None:
        return "No row holds every rail. "
    label, r = best
    lead = ("The best row that holds every rail" if mean_recall(r) > mean_recall(base)
            else "No row that holds every rail beats today; the best")
    return (f"{lead} is `{label}`: mean recall {pct(mean_recall(r), 1)} "
            f"against today's {pct(mean_recall(base), 1)} (" + ", ".join(
                f"{short} {pct(r[name], 0)}" for name, short in RECALL_SETS) + f"), {cost}. ")


Summary = list[list[str]]


def summary_row(question: str, best: tuple[str, dict[str, float]] | None, base: dict[str, float], cost: str) -> list[str]:
    """A line of the summary: the question, its best route that holds the rails, its mean
    recall against today's, its cost."""
    if best is None:
        return [question, "(none holds every rail)", "-", "-", cost]
    label, r = best
    return [question, label, pct(mean_recall(r), 1), f"{100 * (mean_recall(r) - mean_recall(base)):+.1f} pts", cost]


def section_larger_k(pairs: dict[str, PairData], base: dict[str, float], long_fps: np.ndarray,
                     summary: Summary) -> str:
    rows, results, costs = [], [], {}
    unverified: dict[int, dict[str, float]] = {}
    _, _, dist = pairs_within(long_fps, max(LARGER_K))
    n_long = len(long_fps)
    cost3 = {n: join_figures(K, n) for n in SCALES}
    for k in LARGER_K:
        fig = {n: join_figures(k, n) for n in SCALES}
        within = int(np.count_nonzero(dist <= k))
        costs[k] = " / ".join(f"{fig[n].cost / cost3[n].cost:.1f}x" for n in SCALES)
        tables = " / ".join(str(fig[n].tables) for n in SCALES)
        for t in (None, *THRESHOLDS):
            if t is None:
                route: Route = lambda p, k=k: p.today | (p.long & (p.ham <= k))
                label = f"k = {k}, no verification"
            else:
                route = lambda p, k=k, t=t: p.today | (p.long & (p.ham <= k) & (p.est >= t))
                label = f"k = {k}, sketch J ≥ {t}"
            r = evaluate(route, pairs)
            if t is None:
                unverified[k] = r
            if t is not None and k <= MAX_K:  # beyond MAX_K a run may not ask for it
                results.append((label, r))
            if k > MAX_K:
                label += f" (beyond MAX_K = {MAX_K})"
            rows.append(route_row(label, r, base, f"{within:,} ({within / n_long:.2f})", tables, costs[k]))
    best = best_holding(results)
    best_k = int(best[0].split()[2].rstrip(",")) if best else K
    unverified_ok = [k for k in LARGER_K if rails_hold(unverified[k])]
    summary.append(summary_row("2. larger k, sketch-verified", best, base,
                               f"band join {costs.get(best_k, '1x')} (10⁹ / 10¹⁰)"))
    k8 = join_figures(8, SCALES[-1])
    return (
        "## 2. A larger k for candidates, each verified by the sketch (no LSH)\n\n"
        "A pair of long texts merges when its fingerprints are within k bits **and** the sketches "
        "estimate a Jaccard ≥ t (`no verification`: within k alone). Cost: the band join's "
        "modelled cost (`bands.plan_cost` of the plan `bands.choose_plan` picks: rows shuffled "
        "and random candidates, as bench/quality.py's `join_cost`) relative to k = 3, at "
        f"10⁹ / 10¹⁰ distinct fingerprints; the pairs of the corpus's {n_long:,} long texts "
        "within k (per text): what the sketch would have to check here. The verification also "
        f"needs each candidate's two sketches ({SKETCH_BYTES} bytes each), either carried on "
        "every band row or joined to the candidates afterwards.\n\n"
        + md_table(["route"] + result_headers(pairs)
                   + ["mean recall vs today", "rails hold", "pairs within k among long texts (per text)",
                      "band tables 10⁹ / 10¹⁰", "modelled cost vs k = 3, 10⁹ / 10¹⁰"], rows)
        + "\n\n**What it bought and cost**: "
        + bought(best, base, f"at {costs.get(best_k, '1x')} the band join's modelled cost (10⁹ / 10¹⁰)")
        + f"(Verified rows up to k = {MAX_K} compete: `MAX_K` is {MAX_K}, core/limits.py.) Without "
        "verification, within k alone holds every rail at k = "
        + (", ".join(map(str, unverified_ok)) if unverified_ok else "none of these")
        + (f" and breaks one at k = {', '.join(str(k) for k in LARGER_K if k not in unverified_ok)}"
           if len(unverified_ok) < len(LARGER_K) else "")
        + " on these sets; the sketch check costs recall most on the 5 % copies, whose Jaccard "
        "sits near the thresholds. k = 8 is beyond what a run may ask for: core/limits.py sets "
        f"`MAX_K` = {MAX_K} where the join stays exact on random data with margin: the chosen "
        "plan's mean random run (fingerprints sharing a table's key and a sub-block) stays at most "
        "~120 members up to k = 7 from 10⁶ to 10¹⁰, and is ~600 at k = 8 and 10¹⁰, nearer the "
        f"hot-run threshold ({HOT_RUN_SIZE:,} members: a hotter run is summarised and pairs/ left "
        f"incomplete). Allowing k = 8 (its plan at 10¹⁰: {k8.tables} tables of "
        f"{k8.min_key_bits}-{k8.max_key_bits}-bit keys) needs that bound re-proved for it "
"(tests/core/test_pair_kernel.py) or plans with longer keys, and `MAX_K` raised.\n"
    )


def extra_fingerprints(texts: Sequence[str], long: np.ndarray, seed_value: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Second fingerprints of the long texts: (fingerprint, n_features) over the whole corpus
    (short texts: 0 and 0 features)."""
    idx = np.flatnonzero(long)
    long_texts = [texts[i] for i in idx]
    out = {}
    for label, make in (
        ("char 3-grams", lambda: fingerprints(long_texts, replace(FP, tokenizer="char", ngram=3))[0::2]),
        ("token 3-shingles", lambda: fingerprints(long_texts, replace(FP, ngram=3))[0::2]),
        (f"xxh3 seed {seed_value}", lambda: seeded_fingerprints(long_texts, FP, seed_value)),
    ):
        values, n_features = make()
        full, count = np.zeros(len(texts), dtype=np.int64), np.zeros(len(texts), dtype=np.int64)
        full[idx], count[idx] = values, n_features
        out[label] = (full, count)
    return out


def section_multi(pairs: dict[str, PairData], base: dict[str, float],
                  extras: dict[str, tuple[np.ndarray, np.ndarray]], long: np.ndarray, summary: Summary) -> str:
    close = {}  # (fingerprint, set) -> both long texts fingerprinted and within k by it
    for label, (values, count) in extras.items():
        for name, p in pairs.items():
            both = (np.minimum(count[p.a], count[p.b]) >= FP.min_features) & p.long
            close[label, name] = both & (quality.hamming_many(values[p.a], values[p.b]) <= K)
    labels = list(extras)
    combos = [[x] for x in labels] + [labels[1:], labels]
    rows, results = [], []
    idx = np.flatnonzero(long)
    tables = join_figures(K, SCALES[0]).tables
    for combo in combos:
        within: set[tuple[int, int]] = set()
        for label in combo:
            i, j, _ = pairs_within(extras[label][0][idx], K)
            within |= set(zip(i.tolist(), j.tolist()))
        for verified in (False, True):
            merged = {}
            for name, p in pairs.items():
                extra = np.logical_or.reduce([close[label, name] for label in combo])
                merged[name] = p.today | (extra & ((p.est >= SKETCH.jaccard) if verified else True))
            r = summarise(merged)
            label = " + ".join(["default"] + combo) + (f", sketch J ≥ {SKETCH.jaccard}" if verified else "")
            results.append((label, r))
            rows.append(route_row(label, r, base, f"{len(within):,}",
                                  f"{1 + len(combo)}x ({1 + len(combo)} × {tables} tables)"))
    best = best_holding(results)
    n_fps = best[0].split(",")[0].count(" + ") + 1 if best else 1
    summary.append(summary_row("3. more fingerprints at k = 3", best, base, f"band join {n_fps}x"))
    return (
        "## 3. More than one fingerprint per document, each joined at k = 3\n\n"
        "The default fingerprint plus one or more others of the long texts, merged when any is "
        f"within {K} bits (both texts ≥ {SKETCH.min_chars} characters, ≥ {FP.min_features} "
        "features): character 3-grams (`tokenizer char, ngram 3`), token 3-shingles (`ngram 3`), "
        "and the default features hashed with another xxh3 seed (`route_pairs.seeded_fingerprints`, "
        "built with `simhash_from_hashes`); `sketch J ≥`: each extra merge also verified by the "
        f"sketch. Cost: each fingerprint is one more band join at k = {K} (its tables, rows "
        "shuffled and candidates), so the join costs up to `fingerprints`x today's (extra "
        "fingerprints of long texts only). `pairs within 3 (extra)`: pairs of the corpus's long "
        "texts within 3 bits by an extra fingerprint.\n\n"
        + md_table(["fingerprints"] + result_headers(pairs)
                   + ["mean recall vs today", "rails hold", "pairs within 3 (extra)",
                      "join cost at 10⁹ (fingerprints × band tables)"], rows)
        + "\n\n**What it bought and cost**: "
        + bought(best, base, f"for up to {n_fps}x the band join")
        + "\n"
    )


def section_lsh(pairs: dict[str, PairData], base: dict[str, float], sig: Signals, long: np.ndarray,
                summary: Summary) -> str:
    idx = np.flatnonzero(long)
    n_long = len(idx)
    long_sketch, long_fp = sig.sketch[idx], sig.fingerprint[idx]
    rows, results = [], []
    fp_tables = join_figures(K, SCALES[0]).tables
    fp_bytes = fp_tables * SCALES[0] * bands.SHUFFLE_BYTES_PER_ROW / 1e12
    for shape in BAND_SHAPES:
        i, j = lsh_pairs(long_sketch, *shape)
        est = estimated_jaccard(long_sketch[i], long_sketch[j])
        ham = quality.hamming_many(long_fp[i], long_fp[j])
        cand = {name: candidates(p, sig, shape) for name, p in pairs.items()}
        for check in (True, False):
            merged = {name: p.today | (p.long & cand[name] & (p.est >= SKETCH.jaccard)
                                       & ((p.ham <= SKETCH.max_distance) if check else True))
                      for name, p in pairs.items()}
            r = summarise(merged)
            verified = int(np.count_nonzero((est >= SKETCH.jaccard) & ((ham <= SKETCH.max_distance) if check else True)))
            label = f"{shape[0]} × {shape[1]}" + (f", Hamming ≤ {SKETCH.max_distance}" if check else ", no Hamming check")
            results.append((label, r))
            rows.append(route_row(label, r, base,
                                  " / ".join(f"{lsh_probability(x, *shape):.2f}" for x in (0.5, 0.75, 0.9)),
                                  f"{len(i):,} ({len(i) / n_long:.2f})", f"{verified:,}", str(shape[0]),
                                  f"{shape[0] * SCALES[0] * LSH_ROW_BYTES / 1e12:.2f} TB",
                                  " / ".join(f"{lsh_cost_ratio(shape[0], n):.1f}x" for n in SCALES)))
    default_label, default = results[0]
    summary.append(summary_row("4. MinHash-LSH (the job's default)", results[0] if rails_hold(default) else None,
                               base, f"{SKETCH.bands} LSH rows a text; "
                               + " / ".join(f"{lsh_cost_ratio(SKETCH.bands, n):.1f}x" for n in SCALES)
                               + " (10⁹ / 10¹⁰)"))
    return (
        "## 4. MinHash-LSH beside simhash (the route the job now takes) and its variants\n\n"
        f"Long texts' sketches ({SKETCH.size} 16-bit values) are candidates when they agree on all "
        "rows of one band; a candidate merges when the sketches estimate Jaccard ≥ "
        f"{SKETCH.jaccard} and (rows that say so) the fingerprints are within "
        f"{SKETCH.max_distance} bits. `P(candidate)`: 1 - (1 - J^rows)^bands at J = 0.5 / 0.75 / "
        f"0.9. On the corpus: the candidate pairs among all {n_long:,} long texts (per text; "
        "brute force over every band, `route_pairs.lsh_pairs`) and how many of them the rule "
        f"merges. Rows shuffled per document = bands; at 10⁹ pages modelled at {LSH_ROW_BYTES} "
        f"bytes a row, beside the k = {K} band join's {fp_tables} rows a fingerprint "
        f"({fp_bytes:.2f} TB at {bands.SHUFFLE_BYTES_PER_ROW} bytes a row); each candidate also "
        f"needs its two sketches ({SKETCH_BYTES} bytes each). Modelled cost: the k = {K} band join's "
        "`plan_cost` plus the LSH rows priced as the band join prices a row "
        f"(`bands.COST_PER_ROW`, {bands.COST_PER_ROW} us: exploded, shuffled, read; a band key is "
        "compared whole, so no sub-block passes), relative to the k = 3 join alone; the "
        "candidates' verification is left out (its count per text is measured above).\n\n"
        + md_table(["bands × rows"] + result_headers(pairs)
                   + ["mean recall vs today", "rails hold", "P(candidate) J 0.5 / 0.75 / 0.9",
                      "candidate pairs among long texts (per text)", "merged of those",
                      "rows shuffled per doc", "shuffle at 10⁹",
                      "modelled cost, k = 3 join + LSH rows, vs k = 3 join: 10⁹ / 10¹⁰"], rows)
        + f"\n\n**What it bought and cost**: the job's default (`{default_label}`): mean recall "
        f"{pct(mean_recall(default), 1)} against today's {pct(mean_recall(base), 1)}, rails "
        + ("held" if rails_hold(default) else "**broken**") + f", for {SKETCH.bands} shuffled rows "
        f"a page ({SKETCH.bands * SCALES[0] * LSH_ROW_BYTES / 1e12:.2f} TB at 10⁹ pages) beside the "
        f"fingerprint join's {fp_tables}. "
        + bought(best_holding(results), base, "among these shapes")
        + "Rows without the Hamming check show what it guards.\n"
    )


def section_features(pairs: dict[str, PairData], base: dict[str, float], texts: Sequence[str],
                     frames: dict[str, pd.DataFrame], summary: Summary) -> str:
    rows, results = [], []
    variants = [("token 2-shingles", replace(FP, ngram=2)), ("token 3-shingles", replace(FP, ngram=3)),
                ("weighting tf", replace(FP, weighting="tf")), ("weighting binary", replace(FP, weighting="binary")),
                ("token 2-shingles, binary", replace(FP, ngram=2, weighting="binary"))]
    for label, config in variants:
        values, _, n_features = fingerprints(texts, config)
        r = summarise({name: simhash_rule(frames[name], values, n_features, texts) for name in pairs})
        results.append((label, r))
        rows.append(route_row(label, r, base))
    summary.append(summary_row("5. other simhash features", best_holding(results), base, "1x"))
    return (
        f"## 5. Features less sensitive to edits, for the simhash itself (k = {K})\n\n"
        "The job's simhash with other features or weighting for every text (the short-text policy "
        "as today), no sketch. docs/quality.md's defaults table has these rows' sentence-pair "
        "rails.\n\n"
        + md_table(["features"] + result_headers(pairs) + ["mean recall vs today", "rails hold"], rows)
        + "\n\n**What it bought and cost**: "
        + bought(best_holding(results), base, "at no join cost (the same 64 bits; n-grams cost tokenising time)")
        + "\n"
    )


def section_cpu(english: Sequence[str], chinese: Sequence[str], quick: bool) -> str:
    rows = []
    budget = (0.5 if quick else CPU_MB) * 1e6
    for lang, pool in (("English (long texts of the sets)", english), ("Chinese (People's Daily)", chinese)):
        texts, size = [], 0
        for t in pool:
            if size >= budget:
                break
            texts.append(t)
            size += len(t.encode("utf-8"))
        methods = {"fingerprints": lambda: fingerprints(texts, FP),
                   "signatures": lambda: signatures(texts, FP, SKETCH)}
        interleaved(methods, 1)  # warm-up: jieba's dictionary, the feature cache
        runs = interleaved(methods, 3)
        cpu = {name: statistics.median(r.cpu_s) for name, r in runs.items()}
        for name in methods:
            rows.append([lang, f"{len(texts):,} texts, {size / 1e6:.2f} MB", name,
                         ", ".join(f"{s:.2f}" for s in runs[name].cpu_s),
                         f"{size / 1e6 / cpu[name]:.2f}",
                         f"{cpu[name] / cpu['fingerprints']:.2f}x"])
    return (
        "## 6. CPU cost of the sketch\n\n"
        "`fingerprint.fingerprints` (fingerprint only) against `fingerprint.signatures` "
        "(fingerprint and sketch from one tokenisation), the same texts, one process, interleaved "
        "after a warm-up run; MB/s per core = UTF-8 MB / median CPU seconds of 3 runs.\n\n"
        + md_table(["texts", "size", "function", "CPU s (3 runs)", "MB/s per core", "vs fingerprints"], rows)
        + "\n"
    )


# --------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared data folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report to write")
    parser.add_argument("--quick", action="store_true", help="small seeded samples: a smoke test, not a result")
    parser.add_argument("--seed", type=int, default=quality.SEED, help="seed of every sample and edit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    argv_list = list(sys.argv[1:] if argv is None else argv)
    data, out = resolve(args.data), resolve(args.out)
    problem = check_data(data)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    wall: dict[str, float] = {}
    t0 = time.perf_counter()
    log("loading the sets")
    corpus, frames, extractor = load_frames(data, args.quick, args.seed)
    texts = corpus.texts
    wall["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    log(f"{len(texts):,} texts; signatures")
    s = signatures(texts, FP, SKETCH)
    sig = Signals(s.fingerprint, s.n_features, s.sketch, s.has_sketch)
    pairs = {name: pair_data(f, sig, texts) for name, f in frames.items()}
    long = sig.has_sketch
    wall["signatures + pairs"] = time.perf_counter() - t0
    sections = []
    t0 = time.perf_counter()
    text, base = section_today(pairs)
    sections.append(text)
    log("larger k")
    summary: Summary = [["1. today", "k = 3", pct(mean_recall(base), 1), "", "1x"]]
    sections.append(section_larger_k(pairs, base, sig.fingerprint[long], summary))
    log("more fingerprints")
    sections.append(section_multi(pairs, base, extra_fingerprints(texts, long, 1), long, summary))
    log("MinHash-LSH")
    sections.append(section_lsh(pairs, base, sig, long, summary))
    log("features")
    sections.append(section_features(pairs, base, texts, frames, summary))
    wall["routes"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    log("CPU")
    english = [texts[i] for i in np.flatnonzero(long) if text_group(texts[i]) == "other"]
    sections.append(section_cpu(english, peoples_daily().texts, args.quick))
    wall["CPU"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    log("chaining")
    sections.append(section_chaining(sig, texts, long, frames))
    wall["chaining"] = time.perf_counter() - t0
    method = md_table(["", ""], [
        ["date", time.strftime("%Y-%m-%d %H:%M %Z")],
        ["machine", machine_line()],
        ["library", library_version()],
        ["command", "`nice .venv/bin/python -m bench.recall_routes" + "".join(f" {a}" for a in argv_list) + "`"],
        ["page text", extractor],
        ["texts", f"{len(texts):,} distinct, {int(long.sum()):,} with ≥ {SKETCH.min_chars} characters"],
        ["sketch", f"{SKETCH}"],
        ["time", ", ".join(f"{k} {v:.0f} s" for k, v in wall.items())
         + f"; 1-minute load average at the end {os.getloadavg()[0]:.1f}"],
    ])
    doc = ("# Recall beyond k = 3: the routes side by side\n\n"
           "Written by `.venv/bin/python -m bench.recall_routes` (do not edit by hand)"
           + (" **(--quick: small samples, a smoke test, not a result)**" if args.quick else "")
           + ". Issue 13's candidate generators measured on the same texts in one run: recall on "
           "every recall set, merges on every rail (pages in both extraction modes), and cost. "
           "The sets are docs/quality.md's (bench/quality.py's `load_sets`) without the sentence "
           "pairs (see the module's docstring).\n\n"
           + "## Summary\n\nEach question's best route that merges nothing on any rail (both extraction "
           "modes), by mean recall over the seven recall sets; details and every variant below.\n\n"
           + md_table(["question", "best route holding the rails", "mean recall", "vs today", "cost"], summary)
           + "\n\n" + "\n".join(sections) + "\n## How this was measured\n\n" + method + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(doc, encoding="utf-8")
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

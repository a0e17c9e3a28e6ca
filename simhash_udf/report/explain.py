"""What `--explain` prints: the band plan a run would use and why, the other plans it was
chosen from, the candidate pairs to expect, and the stages the run would go through.

Pure text from plain data: the plan is chosen by the caller (`simhash_udf.run.job.explain_run`)
with the very functions the finders use (`bands.choose_plan`, `bands.index_plan`), so the plan
explained is the plan that would run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from simhash_udf.core import bands
from simhash_udf.core.config import SketchConfig
from simhash_udf.core.sketch import candidate_probability
from simhash_udf.stages import sketch_join
from simhash_udf.stages.finder import BAND_JOIN_STAGE, SIGNATURES_STAGE
from simhash_udf.stages.progress import DEFAULT_INTERVAL


def run_stages(
    fmt: str | None, fingerprint_col: bool = False, write_pairs: bool = True, verify_texts: bool = True,
    sketch_route: bool = True, rows: int | None = None,
) -> list[tuple[str, str]]:
    """The stages a run goes through, in order, as (name, what it does): the names are those
    of the progress lines and of `stage_seconds` in the report. fmt: the input format (None:
    not known yet, the parse stage is listed as conditional); verify_texts: the short-text
    policy (`--verify`) is on, and sketch_route: the sketch route (`--sketch`) is; both run
    only when the input has texts. rows: the input's rows, when known: at most
    `sketch_join.ONE_TASK_NODES` of them, the sketch route runs in one task, without
    `sketch_verify` and `jaccard` (more, or not known: it depends on the sketches, so both
    ways are listed)."""
    stages = [("read", "list the input files and read the schema; Parquet and text input: count the rows and "
                       "those that cannot be documents, in one pass")]
    if fmt in ("json", "csv"):
        stages.append(("parse", "parse every line once into the work folder, counting the rows and those that cannot be documents"))
    elif fmt in ("warc", "wet"):
        stages.append(("parse", "read every record, one task per file, into the work folder; count them by reason"))
    elif fmt is None:
        stages.append(("parse", "(JSON, CSV, WARC and WET input only) parse every line or record once into the work folder"))
    stages.append(("check_ids", "set aside the rows that cannot be documents; check the ids are unique"))
    if not fingerprint_col:
        # (Given fingerprints have no stage of their own: a projection of the documents.)
        stages.append(
            (SIGNATURES_STAGE, "one pass over the text, one Arrow UDF per batch: decode, extract text from HTML, "
             "normalise (NFKC, one Chinese form, case, whitespace), exact key, fingerprint, sketch; "
             "small rows out, the texts left behind")
        )
    stages += [
        ("distinct_fingerprints", "one row per distinct fingerprint, with the documents carrying it"),
        (BAND_JOIN_STAGE, "band join: shuffle band rows by (table, key), then per partition in numpy sub-blocks, "
         "candidates verified by popcount, hot buckets summarised"),
        ("candidates", "the join's counts (candidate pairs, largest bucket; observed while it was stored) and its hot buckets"),
    ]
    if verify_texts and not fingerprint_col:
        stages.append(("verify_texts", "pairs of short texts: compare the texts the signatures carried (a longer "
                       "text of such a pair normalised again from the input), keep those whose "
                       "shingles' Jaccard reaches --verify"))
    if sketch_route and not fingerprint_col:
        stages += [
            ("sketch_nodes", "one MinHash sketch per distinct fingerprint"),
            *_sketch_route_stages(sketch_join.few_enough_for_one_task(rows)),
        ]
    stages += [
        ("components", "connected components, one line per round"),
        ("clusters", "each cluster's size and kept document: a fingerprint in no component is a cluster read off "
         "its distinct row, the others and the short texts aggregated (with --keep-by, the documents); the "
         "documents of clusters of more than one joined to their kept document; write clusters/"),
    ]
    if write_pairs:
        stages += [("pairs", "write pairs/"), ("sample_pairs", "collect a few pairs for report.html")]
    stages += [("deduped", "write deduped/"), ("report", "count everything; check every input row is accounted for")]
    return stages


def _sketch_route_stages(in_one_task: bool) -> list[tuple[str, str]]:
    """The sketch route after its nodes: in one task (see `run_stages`), or either way."""
    limit = f"{sketch_join.ONE_TASK_NODES:,}"
    if in_one_task:
        return [("sketch_candidates", "the sketch route in one task (at most " + limit + " sketches): pairs "
                 "sharing a (band, key) bucket, each once, kept when their sketches reach --sketch's Jaccard "
                 "within --sketch-max-distance bits; every pair with its Jaccard estimate (pairs/'s jaccard)")]
    return [
        ("sketch_candidates", "MinHash-LSH: pairs sharing a (band, key) bucket, each once; up to " + limit
         + " sketches the whole route runs here, in one task (then neither of the next two stages), else "
         "the band rows are shuffled by (band, key)"),
        ("sketch_verify", "(more than " + limit + " sketches) keep candidates whose sketches reach --sketch's "
         "Jaccard within --sketch-max-distance bits"),
        ("jaccard", "(more than " + limit + " sketches) every pair with its sketches' Jaccard estimate "
         "(pairs/'s jaccard), the sketch route's added"),
    ]


@dataclasses.dataclass(frozen=True)
class IndexExplain:
    """What --explain knows of the --index a run would use.

    exists: the index has a manifest (its plan is the manifest's; otherwise the run would
    create the index with a plan from `bands.choose_index_plan`). fingerprints: the
    fingerprints it holds (0 for a new one). expected_size: --index-size (what a new index is
    planned for). k, blocks: what the run asks for (--k, --blocks), which an existing index
    refuses unless they match its plan.
    """

    path: str
    exists: bool
    fingerprints: int
    expected_size: int
    k: int
    blocks: int | None


def explain(
    n: int,
    plan: bands.BandPlan,
    *,
    fmt: str | None = None,
    fingerprint_col: bool = False,
    write_pairs: bool = True,
    verify_texts: bool = True,
    sketch: SketchConfig | None = None,
    index: IndexExplain | None = None,
) -> str:
    """What `--explain` prints: the band plan a run would use and why, the other plans it was
    chosen from, the candidate pairs to expect, and the stages the run would go through (fmt,
    fingerprint_col, write_pairs, verify_texts: see `run_stages`; sketch: the sketch route's
    settings, None when it is off).

    n is the input's row count, an upper bound on the distinct fingerprints the run plans
    for: said so, since the run may then pick fewer blocks (report.json's
    `band_plan.chosen_by` names the plan that ran and the number it was priced for).
    plan: the plan the run would use, saying how it was chosen: the self-join's for n
    (`bands.choose_plan`) or, with index, the index's (`bands.index_plan`: the manifest's, or
    for a new index the lookup cost model's for --index-size), priced for the lookup of n
    fingerprints.
    """
    if index is None:
        lines = _explain_self_join(n, plan)
    else:
        lines = _explain_index(n, plan, index)
    sketch_route = sketch is not None and sketch.jaccard is not None and not fingerprint_col
    if sketch_route and index is None:
        assert sketch is not None
        lines += _explain_sketch_route(n, sketch)
    lines.append(
        f"stages of the run (each logs its start, its progress every {DEFAULT_INTERVAL:.0f} s while "
        "it runs, and its time and rows at its end):"
    )
    # Runs against an index do not apply the short-text policy (see `index.finder`).
    stages = run_stages(fmt, fingerprint_col, write_pairs, verify_texts and index is None, sketch_route, n)
    if index is not None:
        stages = _with_index_stages(stages, index.exists)
    for name, what in stages:
        lines.append(f"  {name:<22} {what}")
    return "\n".join(lines)


def _with_index_stages(stages: list[tuple[str, str]], existing: bool) -> list[tuple[str, str]]:
    """`run_stages` with the stages of a run against an index (`index.finder.find_against_index`)
    in their places. existing: the index has entries (a new one has no clusters to read)."""
    out: list[tuple[str, str]] = []
    names = [name for name, _ in stages]
    for name, what in stages:
        if name == "distinct_fingerprints":
            out.append(("index_ids", "documents whose id the index already holds are skipped (id_in_index)"))
        out.append((name, what))
        # After the sketch route within the batch, whichever its last stage is.
        route_ends = name == "jaccard" or (name == "sketch_candidates" and "jaccard" not in names)
        if route_ends and existing:
            out += [
                ("index_sketch_candidates", (
                    "band rows of the indexed sketches (computed each run); new batch nodes sharing a "
                    "(band, key) with indexed ones; hot buckets paired star-wise"
                )),
                ("index_sketch_verify", "keep those reaching --sketch's Jaccard within --sketch-max-distance bits"),
            ]
        if name == "distinct_fingerprints":
            out.append((
                "index_lookup",
                "the index's key rows that share a batch key (one scan), bucket sizes, the matches; "
                "hot buckets summarised",
            ))
        if name == "components":
            if existing:
                out.append(("index_clusters", "the indexed cluster each component touching the index joins"))
            out += [
                ("index_assign", "cluster and status of every document, indexed clusters first"),
                ("index_pairs", "the pairs with at least one fingerprint new to the index"),
                ("index_write", "write the run's entries and keys into its new segment"),
            ]
    return out


def _explain_sketch_route(n: int, sketch: SketchConfig) -> list[str]:
    """--explain's lines on the sketch route (`stages/sketch_join.py`): its rows and its S-curve."""
    curve = ", ".join(
        f"{j:g}: {candidate_probability(j, sketch.bands, sketch.rows):.2f}" for j in (0.9, 0.8, 0.7, 0.5, 0.3)
    )
    return [
        f"sketch route (--sketch jaccard:{sketch.jaccard:g}): texts of {sketch.min_chars}+ characters carry "
        f"{sketch.size} min-hashes of their token {sketch.shingle}-shingles; {sketch.bands} bands of "
        f"{sketch.rows} rows: at most {n:,} x {sketch.bands} = {n * sketch.bands:,} band rows shuffled by "
        "(band, key), fewer for short texts and shared fingerprints.",
        f"  chance that two texts are candidates, by the Jaccard similarity of their shingles: {curve}; "
        f"a candidate is kept when its sketches estimate >= {sketch.jaccard:g} and its fingerprints are "
        f"within {sketch.max_distance} bits.",
    ]


def _explain_self_join(n: int, chosen: bands.BandPlan) -> list[str]:
    """--explain without an index: the self-join's plans for n rows (`bands.plan_costs`)."""
    k = chosen.k
    given = chosen.chosen_by == bands.CHOSEN_BY_BLOCKS
    # The chosen plan and a few wider ones: further rows only add tables.
    costs = [c for c in bands.plan_costs(max(n, 2), k) if c.blocks <= chosen.blocks + 3]
    if all(c.blocks != chosen.blocks for c in costs):
        costs.append(bands.plan_cost(max(n, 2), k, chosen.blocks))
    why = "--blocks" if given else f"chosen by the cost model for {n:,} rows"
    lines = [
        f"band plans for {n:,} fingerprints (the input's rows: an upper bound on the distinct ones), k = {k}:",
    ]
    lines += _plan_table(
        [
            ("rows shuffled", 14, lambda c: f"{c.rows_shuffled:,.0f}"),
            ("random candidates", 18, lambda c: f"{c.random_candidates:,.0f}"),
            ("bucket pairs", 16, lambda c: f"{c.bucket_pairs:,.0f}"),
            ("shuffle bytes", 14, lambda c: f"{c.shuffle_bytes:,.0f}"),
            ("partitions", 10, lambda c: f"{c.partitions:,}"),
        ],
        costs, chosen.blocks, why,
    )
    lines.append(
        "Every pair within k is found whatever the plan; a plan only changes the cost: "
        "rows shuffled = fingerprints x tables (each sent to the partition of its table's key); "
        f"inside a bucket the other bits are cut into k + 1 = {chosen.sub_blocks} sub-blocks, and random "
        "candidates = pairs sharing a key and a sub-block by chance (each checked with popcount "
        "and dropped); bucket pairs = pairs sharing a key, what verifying whole buckets would cost."
    )
    if not given:
        lines.append(
            f"The run plans for its distinct fingerprints, at most these {n:,} rows (exact copies and "
            "too-short texts count once or not at all): with fewer it may choose fewer blocks. "
            "report.json's band_plan.chosen_by names the plan that ran and the number it was priced for."
        )
    cost = bands.plan_cost(max(n, 2), k, chosen.blocks)
    lines.append(
        f"expected candidate pairs with the chosen plan: about {cost.random_candidates:,.0f} by chance "
        "(fingerprints spread at random), plus the near-duplicate pairs themselves, which only "
        "the run counts (report.json: join.candidate_pairs, the comparisons made)."
    )
    return lines


def _explain_index(n: int, chosen: bands.BandPlan, index: IndexExplain) -> list[str]:
    """--explain with --index: the manifest's plan, or a new index's lookup plans."""
    m = max(n, 2)
    k, blocks = index.k, index.blocks
    lines = []
    if index.exists:
        why = "the index's manifest"
        lines.append(
            f"band plan: from the manifest of the index {index.path}: k = {chosen.k}, {chosen.blocks} "
            f"blocks, {chosen.n_tables} tables, fixed when the index was created (--k must equal it; "
            "--blocks must be left out or equal)."
        )
        if chosen.k != k or (blocks is not None and blocks != chosen.blocks):
            lines.append(
                f"This run asks for k = {k}{f', --blocks {blocks}' if blocks is not None else ''}: "
                "it would be refused (exit code 2)."
            )
        size = index.fingerprints
        lines.append(
            f"lookup plans for {n:,} fingerprints (the input's rows: an upper bound on the distinct ones) "
            f"against the {size:,} the index holds, k = {chosen.k}:"
        )
    else:
        why = (
            "--blocks" if chosen.chosen_by == bands.CHOSEN_BY_BLOCKS
            else f"chosen by the lookup cost model for {index.expected_size:,} indexed fingerprints"
        )
        size = index.expected_size
        lines.append(
            f"the index {index.path} does not exist yet: this run creates it with the plan marked "
            f"below, fixed for its life (--index-size {index.expected_size:,}). Plans are priced for "
            f"the lookup of daily batches of {bands.lookup_batch_size(size):,} fingerprints against "
            f"{size:,}; a plan whose batch keys would each meet more than "
            f"{bands.MAX_MATCHES_PER_KEY_ROW:g} stored row by chance is never chosen."
        )
        lines.append(f"lookup plans for {n:,} fingerprints (the input's rows) against {size:,}, k = {k}:")
    costs = [c for c in bands.lookup_costs(max(size, 2), m, chosen.k) if c.blocks <= chosen.blocks + 2]
    if all(c.blocks != chosen.blocks for c in costs):
        costs.append(bands.lookup_cost(max(size, 2), m, chosen.k, chosen.blocks))
    lines += _plan_table(
        [
            ("stored rows read", 17, lambda c: f"{c.stored_rows_scanned:,.0f}"),
            ("met per fingerprint", 20, lambda c: f"{c.matches_per_batch_row:,.3f}"),
            ("joined rows", 16, lambda c: f"{c.joined_rows:,.0f}"),
            ("batch key rows", 15, lambda c: f"{c.batch_key_rows:,.0f}"),
        ],
        costs, chosen.blocks, why,
    )
    lines.append(
        "The lookup is an equi-join of the batch's key rows (fingerprints x tables, broadcast) with "
        "the index's stored key rows (all read); met per fingerprint = stored rows sharing a table's "
        "key with one random batch fingerprint, summed over tables; joined rows = the batch x that, "
        "each checked with bit_count; a (table, key) bucket hot on both sides is summarised, not "
        "joined in full."
    )
    # The batch's own pairs come from the self-join, on its cost model's plan for the batch.
    own = bands.choose_plan(m, chosen.k, blocks)
    self_join = bands.plan_cost(m, chosen.k, own.blocks)
    lines.append(
        f"The batch is also joined with itself, on the plan the self-join's cost model picks for its "
        f"distinct fingerprints, or --blocks ({own.blocks} blocks, {own.n_tables} tables for {n:,}; report.json: "
        "band_plan.self_join): any plan finds every pair within k, and the index's is priced for the lookup."
    )
    lookup = bands.lookup_cost(max(size, 2), m, chosen.k, chosen.blocks)
    lines.append(
        f"expected candidate pairs with this plan: about {lookup.joined_rows + self_join.random_candidates:,.0f} "
        f"by chance ({lookup.joined_rows:,.0f} in the lookup, {self_join.random_candidates:,.0f} in the "
        "batch's self-join), plus the near-duplicate pairs themselves, which only the run counts "
        "(report.json: join.candidate_pairs, the comparisons made, and its parts "
        "lookup_candidate_pairs and self_join_candidate_pairs)."
    )
    return lines


def _plan_table(
    columns: list[tuple[str, int, Callable[[Any], str]]], costs: Sequence[Any], chosen_blocks: int, why: str
) -> list[str]:
    """One line per plan cost (`bands.PlanCost` or `bands.LookupCost`): blocks, tables and key
    bits, then `columns` (title, width, cell), right-aligned; the chosen plan's line says why."""
    titles = " ".join(f"{title:>{width}}" for title, width, _ in columns)
    lines = [f"  {'blocks':>6} {'tables':>6} {'key bits':>9} {titles}"]
    for c in costs:
        cells = " ".join(f"{cell(c):>{width}}" for _, width, cell in columns)
        mark = f"  <- {why}" if c.blocks == chosen_blocks else ""
        lines.append(f"  {c.blocks:>6} {c.tables:>6} {_bits(c.min_key_bits, c.max_key_bits):>9} {cells}{mark}")
    return lines


def _bits(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}-{hi}"

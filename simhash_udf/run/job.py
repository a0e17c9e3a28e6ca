"""What the jobs' command lines do beyond parsing: choose the finder, explain a run, print its
summary, and the index maintenance commands (`jobs/dedupe.py`, `jobs/index.py`).

The jobs reach these through `simhash_udf.run.api`.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig, IndexOptions
from simhash_udf.index import admin
from simhash_udf.index.finder import IndexFinder
from simhash_udf.index.session import IndexSession, indexed_fingerprints
from simhash_udf.index.store import IndexStore
from simhash_udf.report import explain
from simhash_udf.run.pipeline import read_input
from simhash_udf.stages.finder import Finder
from simhash_udf.stages.self_join import SelfJoinFinder


def open_finder(spark: SparkSession, config: DedupeConfig, input_path: str, index: IndexOptions | None) -> Finder:
    """The run's finder, chosen once: the self-join, or with `index` the index's (its session
    open: the run lease taken, the settings checked, the plan fixed; `pipeline.run` commits or
    aborts it)."""
    if index is None:
        return SelfJoinFinder()
    return IndexFinder(IndexSession.open(spark, index, config, input_path))


def explain_run(
    spark: SparkSession,
    config: DedupeConfig,
    input_path: str,
    fmt: str | None,
    index_path: str | None = None,
    index_size: int = IndexOptions.expected_size,
) -> str:
    """What --explain prints (`report.explain.explain`): the input is read and counted, the
    index (if any) only read. The plan is chosen by the finders' own functions: the
    self-join's `bands.choose_plan` for the input's row count (an upper bound on its
    distinct fingerprints), or the index's `bands.index_plan`."""
    source = read_input(spark, config, input_path, fmt)
    index = None
    if index_path:
        store = IndexStore(spark, index_path)
        latest = store.latest()
        plan = bands.index_plan(latest.plan if latest else None, index_size, config.k, config.blocks)
        fingerprints = indexed_fingerprints(latest) if latest else 0
        index = explain.IndexExplain(store.root, latest is not None, fingerprints, index_size, config.k, config.blocks)
    else:
        plan = bands.choose_plan(source.rows, config.k, config.blocks)
    return explain.explain(
        source.rows, plan, fmt=source.format,
        fingerprint_col=bool(config.fingerprint_col), write_pairs=config.write_pairs,
        verify_texts=config.verify.threshold is not None,
        sketch=config.sketch, index=index,
    )


def summary(result: dict[str, Any]) -> str:
    """A few lines for the console; everything else is in report.json."""
    c, j, p = result["counts"], result["join"], result["band_plan"]
    # Against an index, the batch's own join has a plan of its own (report.json: band_plan.self_join).
    own = f"the batch's self-join {s['blocks']} blocks, {s['tables']} tables; " if (s := p.get("self_join")) else ""
    lines = [
        f"documents {c['documents']:,}: kept {c['kept']:,}, exact duplicates {c['exact_duplicates']:,}, "
        f"near duplicates {c['near_duplicates']:,}, skipped {sum(c['skipped'].values()):,} {c['skipped'] or ''}".rstrip(),
        f"clusters {c['clusters']:,}; too short for a fingerprint {c['too_short']:,}; rejected rows {sum(c['rejected_rows'].values()):,}",
        f"band plan: {p['blocks']} blocks, {p['tables']} tables, key bits {p['key_bits']} ({p['chosen_by']}); "
        f"{own}candidate pairs {j['candidate_pairs']:,}, verified pairs {j['verified_pairs']:,}, distances {result['distances']}",
        f"wrote {result['output']} in {result['total_seconds']:.1f} s",
    ]
    v = result.get("verify", {})
    if v.get("applied"):
        below = f"under {v['below_chars']} characters" if v["below_chars"] else "all pairs"
        lines.insert(-1, (
            f"short-text check {v['spec']} ({below}, {v['shingle']}-gram shingles): checked "
            f"{v['checked_pairs']:,} of {v['pairs_within_k']:,} pairs within k, dropped {v['dropped_pairs']:,}"
        ))
    s = result.get("sketch", {})
    if s.get("applied"):
        lines.insert(-1, (
            f"sketch route jaccard >= {s['jaccard']:g} within {s['max_distance']} bits (texts of "
            f"{s['min_chars']}+ characters): {s['nodes']:,} sketches, candidate pairs "
            f"{s['candidate_pairs']:,}, kept {s['pairs']:,}, beyond k {s['pairs_beyond_k']:,}"
            + (f", hot buckets {s['hot_buckets']:,}" if s["hot_buckets"] else "")
            + (f"; against the index: candidate pairs {s['indexed_candidate_pairs']:,}, pairs "
               f"{s['pairs_with_indexed']:,}, beyond k {s['pairs_with_indexed_beyond_k']:,}"
               if "indexed_candidate_pairs" in s else "")
        ))
    if "records" in result:
        # WARC/WET input: what became of every record, and the files that were not whole.
        reasons = ", ".join(f"{k} {v:,}" for k, v in result["records"]["by_reason"].items())
        lines.insert(0, f"records: {reasons}; damaged files {result['counts']['damaged_files']}")
    if "index" in result:
        x = result["index"]
        lines.insert(-1, (
            f"index {x['path']}: version {x['version']} (run {x['run_id']!r}"
            f"{', replaced' if x['replaced_run'] else ''}); entries {x['entries_before']:,} + "
            f"{x.get('entries_added', 0):,}; batch fingerprints already indexed "
            f"{x.get('batch_fingerprints_already_indexed', 0):,}, pairs with indexed "
            f"{x.get('pairs_with_indexed', 0):,}, documents joining indexed clusters "
            f"{x.get('documents_joining_indexed_clusters', 0):,}, ids already indexed "
            f"{x.get('repeated_ids', 0):,}, bridged components {x.get('bridged_components', 0):,}"
        ))
    return "\n".join(lines)


def describe_index(spark: SparkSession, path: str) -> dict[str, Any]:
    """`jobs/index.py info`: `admin.describe` of the index at `path`."""
    return admin.describe(IndexStore(spark, path))


def compact_index(spark: SparkSession, path: str, min_age: float, keep_last: int) -> dict[str, Any]:
    """`jobs/index.py compact`: `admin.compact` of the index at `path`."""
    return admin.compact(IndexStore(spark, path), min_age, keep_last)


def remove_index_run(spark: SparkSession, path: str, run_id: str, force: bool) -> dict[str, Any]:
    """`jobs/index.py remove-run`: `admin.remove_run` on the index at `path`."""
    return admin.remove_run(IndexStore(spark, path), run_id, force)

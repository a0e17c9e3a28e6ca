"""One step, two implementations: find the pairs and clusters of a batch of documents.

`Finder` is what `simhash_udf.run.pipeline.run` calls: `SelfJoinFinder`
(`simhash_udf.stages.self_join`: the band self-join of the batch) or `IndexFinder`
(`simhash_udf.index.finder`: the batch against a persistent index, whose version is opened,
published or undone by `simhash_udf.index.session.IndexSession`). Both start with `fingerprint_documents` and
return a `NearDuplicates`; a finder that keeps state (the index) publishes it in `commit`,
which the run calls only once every output is written, or undoes it in `abort`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pyspark.sql import DataFrame

from simhash_udf.core import bands
from simhash_udf.core.bands import BandPlan
from simhash_udf.core.config import DedupeConfig
from simhash_udf.stages import documents, join
from simhash_udf.stages.components import connected_components
from simhash_udf.stages.scratch import Stages

# The stage name of the band join (`join.band_join`), in the progress lines, in report.json's
# stage_seconds / stage_rows and in --explain. It predates the short-text check
# (`simhash_udf.stages.short_text_check`, stage "verify_texts") and names the popcount check of the
# join's candidates; it is kept because report.json and log readers use it.
BAND_JOIN_STAGE = "verify"
# The one pass over the text (`fingerprint_documents`): the documents' stored signatures.
SIGNATURES_STAGE = "signatures"


@dataclass
class NearDuplicates:
    """What a finder finds.

    clusters: `id`, `cluster_id`, `fingerprint`, `status`, `reason`, `distance` (every document).
    pairs: `id_a`, `id_b`, `distance`, `jaccard` (every near-duplicate pair of distinct
    fingerprints: within k bits, or kept by the sketch route; jaccard is the estimate of the
    two sketches, null without them; against an index, the pairs with at least one fingerprint
    new to it).
    fingerprint_pairs: `fp_a`, `fp_b`, `distance`, `jaccard` (the same pairs, by fingerprint).
    signed: every document's signatures, `documents.signed_documents` (text input only).
    plan: the band plan used, saying how it was chosen (`BandPlan.reason`): against an index,
    the index's, which the lookup used.
    self_join_plan: against an index, the plan of the batch's own band join (the cost
    model's for its distinct fingerprints); None when that is `plan`.
    join_stats: counts and hot buckets of the join (`join.join_stats`), `distinct_fingerprints`,
    and, when the short-text check ran, `verify` (`short_text_check.counts`).
    cluster_sizes: `cluster_id`, `members`, one row per cluster of `clusters`, when the finder
    has them (`clusters.ClusterAssignment.sizes`); None: the report counts them in clusters/.
    """

    clusters: DataFrame
    pairs: DataFrame
    fingerprint_pairs: DataFrame
    signed: DataFrame | None
    plan: bands.BandPlan
    join_stats: dict[str, Any]
    cluster_sizes: DataFrame | None = None
    self_join_plan: bands.BandPlan | None = None


class Finder(Protocol):
    """Finds a batch's near duplicates; `run` calls find, then commit (or abort on failure)."""

    def find(self, docs: DataFrame, config: DedupeConfig, stages: Stages) -> NearDuplicates:
        """docs: the checked input rows (ids unique and not null; see `documents.rejected_rows`
        and `documents.split_repeated_ids`), with the columns `config` names."""
        ...

    def report_sections(self) -> dict[str, Any]:
        """Sections this finder adds to report.json (none for the self-join)."""
        ...

    def commit(self) -> None:
        """Publish what `find` prepared; called after every output is written, before the
        output is published."""
        ...

    def abort(self) -> None:
        """Undo what `find` prepared; called when the run fails or is refused."""
        ...


def fingerprint_documents(
    docs: DataFrame, config: DedupeConfig, stages: Stages, carry_short_texts: bool = False
) -> tuple[DataFrame, DataFrame | None]:
    """The stages up to every document's fingerprint (the start of every finder).

    Returns (fingerprinted, signed): see `documents.fingerprinted_documents` (or
    `documents.given_fingerprints`) and `documents.signed_documents` (None when the input
    carries its own fingerprints). `signed` is stored (stage SIGNATURES_STAGE, whose row count
    is the documents'): it is the one pass over the text, the run's restart point, and every
    later stage reads it; `fingerprinted` is a view of it. Given fingerprints are not stored:
    they are a projection of the documents, which are the input's own columns (Parquet) or
    its parsed copy (JSON, CSV), so reading them again costs what reading a copy would, and
    writing the copy was a pass over every document (4M fingerprints: 4-5 s).
    carry_short_texts: keep the short texts the short-text check compares in `signed`
    (`documents.signed_documents`), for a finder that runs the check.
    """
    if config.fingerprint_col:
        return documents.given_fingerprints(docs, config), None
    signed = stages.materialise(SIGNATURES_STAGE, documents.signed_documents(docs, config, carry_short_texts))
    return documents.fingerprinted_documents(signed), signed


def band_join_stage(stages: Stages, fingerprints: DataFrame, plan: BandPlan, n: int) -> DataFrame:
    """Stage BAND_JOIN_STAGE: `join.band_join` of the `n` distinct `fingerprints`, stored with
    its `join.stats_aggregates` observed (`stages.observed[BAND_JOIN_STAGE]`). A small join
    (`join.joins_on_driver`) runs its kernel on the driver and is kept there, unstored, with the
    same counts (`join.local_band_join`)."""
    if join.joins_on_driver(n, plan):
        return stages.keep_local(BAND_JOIN_STAGE, lambda: join.local_band_join(fingerprints, plan))
    # Built inside the stage, so that its Spark jobs count as the stage's.
    return stages.materialise(
        BAND_JOIN_STAGE, lambda: join.band_join(fingerprints, plan, n), observe=join.stats_aggregates()
    )


def components_stage(stages: Stages, edges: DataFrame, edge_count: int | None) -> DataFrame:
    """Stage `components`: `connected_components` of `edges` (`src`, `dst`), stored. A small
    edge set is labelled in one task; a big one in distributed rounds, each stored as a result
    of the same stage. edge_count: the edges' rows when known (a stored stage's count), else
    they are counted; that count and the rounds' checks are Spark jobs of this stage too."""
    with stages.timed("components"):
        return stages.materialise(
            "components",
            connected_components(
                edges, materialise=lambda frame: stages.materialise("components", frame), edge_count=edge_count
            ),
        )

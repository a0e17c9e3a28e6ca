"""One run against the index: open a version, find the batch's duplicates, write and publish.

`IndexSession.open` reads the newest version and checks the run's settings against it;
`find` is the index-aware counterpart of `pipeline.find_near_duplicates`; `commit` writes
nothing itself but publishes the new version (the run's segment was written by `find`'s
caller through `write_segment`); `abort` removes an unpublished segment. `pipeline.run`
calls them in that order and publishes the job's output only after `commit`, so a run killed
between the two is repaired by rerunning the same run id.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig, IndexOptions
from simhash_udf.index import assign, lookup
from simhash_udf.index.lease import Lease, take_run_lease
from simhash_udf.index.manifest import Manifest, RunInfo, Segment, now_iso
from simhash_udf.index.store import IndexCorruptError, IndexError_, IndexStore, input_digest, write_segment
from simhash_udf.run.pipeline import NearDuplicates, Stages, fingerprint_documents
from simhash_udf.stages import clusters, join
from simhash_udf.stages.components import connected_components

log = logging.getLogger("simhash_udf")

OUTPUT_COLUMNS = ("id", "cluster_id", "fingerprint", "status", "reason", "distance")


# Settings added after indexes were first written, with the value those indexes were built
# with: an index from before `segmenter` existed was segmented by the Python jieba.
LEGACY_SETTINGS: dict[str, Any] = {"segmenter": "jieba"}


def fingerprint_settings(config: DedupeConfig) -> dict[str, Any]:
    """What makes two runs' fingerprints comparable (stored in the manifest at creation)."""
    settings = dataclasses.asdict(config.fingerprint)
    settings["html"] = config.html
    # Only for HTML, so that indexes made before --extract existed stay usable for text input
    # (an HTML index made then holds `all` fingerprints, and is refused for `main`, rightly).
    settings["extract"] = config.extract if config.html else None
    settings["given_fingerprints"] = config.fingerprint_col is not None
    return settings


@dataclass
class IndexSession:
    """A run's view of the index: the version it builds on and what it will publish."""

    store: IndexStore
    options: IndexOptions
    run_id: str
    digest: str
    latest: Manifest | None
    base: Manifest
    replacing: RunInfo | None
    segment: str
    stats: dict[str, Any] = field(default_factory=dict)
    new_manifest: Manifest | None = None
    committed: bool = False
    _written: bool = False
    # The plan this run uses, saying how it was picked: the lookup's cost model (or --blocks)
    # when this run creates the index, the manifest's otherwise.
    plan: bands.BandPlan | None = None
    lease: Lease | None = None

    @staticmethod
    def open(spark: SparkSession, options: IndexOptions, config: DedupeConfig, input_path: str) -> IndexSession:
        """Take a run lease on the index (held until `commit` or `abort`: `compact` cannot
        start meanwhile; IndexBusyError, exit code 2, while one is going), then `_open_version`."""
        lease = take_run_lease(IndexStore(spark, options.path), options.run_id or "input")
        try:
            session = IndexSession._open_version(spark, options, config, input_path)
        except BaseException:
            lease.release()
            raise
        session.lease = lease
        return session

    @staticmethod
    def _open_version(spark: SparkSession, options: IndexOptions, config: DedupeConfig, input_path: str) -> IndexSession:
        """Read the newest version and check this run fits it.

        Raises IndexError_ (an io.InputError: exit code 2) when k, --blocks or the
        fingerprint settings differ from the index's, when the run id is being rerun after
        later runs built on it, and IndexCorruptError naming a bad manifest or data file.
        """
        store = IndexStore(spark, options.path)
        latest = store.latest()
        digest = input_digest(spark, input_path)
        run_id = options.run_id or f"input-{digest}"
        settings = fingerprint_settings(config)
        if latest is None:
            # The index's plan is priced for its own lookup, not for the self-join (see
            # `bands.choose_index_plan`); it is fixed for the index's life.
            plan = bands.choose_index_plan(options.expected_size, config.k, config.blocks)
            base = Manifest(
                version=0, k=plan.k, blocks=plan.blocks, fingerprint=settings, id_type="",
                created_at=now_iso(),
            )
            log.info(
                "index %s: new; band plan %d blocks, %d tables (%s)",
                store.root, plan.blocks, plan.n_tables, plan.reason,
            )
            replacing = None
        else:
            _check_settings(store, latest, config, settings)
            replacing = latest.run(run_id)
            base = latest
            if replacing is not None:
                later = [r.run_id for r in latest.runs if r.seq > replacing.seq]
                if later:
                    raise IndexError_(
                        f"run {run_id!r} is already in the index {store.root} and later runs built on it "
                        f"({', '.join(later)}); remove those first (jobs/index.py remove-run) or use "
                        "another --run-id"
                    )
                own = [s for s in latest.segments if run_id in s.runs]
                if any(s.runs != (run_id,) for s in own):
                    raise IndexError_(
                        f"run {run_id!r} was compacted together with other runs; remove it first "
                        f"(jobs/index.py remove-run {run_id}) and run it again"
                    )
                base = latest.without_run(run_id)
                log.info("index %s: run %r is rerun; its entries will be replaced", store.root, run_id)
            if replacing is not None and replacing.input_digest != digest:
                log.warning("run %r is rerun on a different input listing than the first time", run_id)
        store.check_files(base)
        leftovers = store.unreferenced(latest)
        if leftovers:
            log.info(
                "index %s: %d segment folder(s) no version uses (killed or replaced runs); "
                "jobs/index.py compact removes them", store.root, len(leftovers),
            )
        if latest is not None:
            plan = dataclasses.replace(base.plan, chosen_by=bands.CHOSEN_BY_MANIFEST)
        return IndexSession(
            store, options, run_id, digest, latest, base, replacing, store.new_segment(run_id), plan=plan
        )

    # -- finding -------------------------------------------------------------------------
    def find(self, docs: DataFrame, config: DedupeConfig, stages: Stages) -> NearDuplicates:
        """The batch's clusters and pairs against the index; writes the run's segment.

        docs: the checked input rows (as `pipeline.find_near_duplicates` takes them).
        Clusters and pairs have the columns of `NearDuplicates`; `pairs` holds the pairs
        with at least one fingerprint new to the index (older ones were output before).
        """
        plan = self.plan or self.base.plan
        fingerprinted, normalised, texts = fingerprint_documents(docs, config, stages)
        id_type = fingerprinted.schema["id"].dataType.simpleString()
        if self.base.id_type and self.base.id_type != id_type:
            raise IndexError_(
                f"the index {self.store.root} holds ids of type {self.base.id_type}, this input's "
                f"{config.id_col!r} is {id_type}: ids must have one type for the index's whole life"
            )
        self.id_type = id_type
        entries = self._guarded(lambda: self.store.read(self.base, "entries"))
        keys = self._guarded(lambda: self.store.read(self.base, "keys"))

        documents = fingerprinted.count()  # a stored stage result: its Parquet footers
        marked = self._stage(
            stages, "index_ids", lookup.mark_repeated_ids(fingerprinted, entries, documents)
        )
        repeated = marked.where(F.col("reason") == lookup.ID_IN_INDEX)
        self.stats["repeated_ids"] = repeated.count()
        if self.stats["repeated_ids"]:
            sample = [r["id"] for r in repeated.select("id").orderBy("id").limit(5).collect()]
            log.warning(
                "%d document(s) have ids the index already holds (skipped, reason %s), e.g. %s",
                self.stats["repeated_ids"], lookup.ID_IN_INDEX, sample,
            )
        active = F.col("reason").isNull() & F.col("fingerprint").isNotNull()
        batch = stages.materialise("distinct_fingerprints", marked.where(active).select("fingerprint").distinct())
        n = stages.rows["distinct_fingerprints"]
        found = self._guarded(lambda: lookup.lookup(
            batch, keys, plan, n, materialise=lambda frame: stages.materialise("index_lookup", frame)
        ))
        matches = self._stage(stages, "index_lookup", found.matches)
        links = self._stage(stages, "index_lookup", found.links) if found.stats["hot_lookup_buckets"] else None
        indexed_fps = matches.where("distance = 0").select(F.col("fp_new").alias("fingerprint"))
        new_fps = batch.join(indexed_fps, "fingerprint", "left_anti")
        # The batch's own pairs: the self-join's two-level join, hot runs summarised as
        # without an index (pipeline.find_near_duplicates).
        joined = stages.materialise("verify", join.band_join(batch, plan, n))
        with stages.timed("candidates"):
            stats = join_counts(join.join_stats(joined, plan, n), found.stats)
        stats["distinct_fingerprints"] = n
        # What the report prices the lookup for: the fingerprints the index held (key rows per table).
        stats["index_fingerprints"] = sum(r.keys for r in self.base.runs) // plan.n_tables
        self.stats.update(found.stats)
        batch_pairs = stages.materialise(
            "verify", join.join_pairs(joined, summarised=stats["self_join_summarised_runs"] > 0)
        )
        near_index = matches.where("distance > 0")
        edges = batch_pairs.select(F.col("fp_a").alias("src"), F.col("fp_b").alias("dst")).unionByName(
            near_index.select(F.col("fp_new").alias("src"), F.col("fp_old").alias("dst"))
        )
        if links is not None:
            # Paths of a hot bucket's summary that run through indexed fingerprints.
            edges = edges.unionByName(links)
        components = stages.materialise(
            "components",
            connected_components(edges, materialise=lambda frame: stages.materialise("components", frame)),
        )
        exact_entries = None
        if entries is not None:
            run_seq = {r.run_id: r.seq for r in self.base.runs}
            reached = matches
            if links is not None:
                # Indexed fingerprints a component reaches through a hot bucket's links are
                # its indexed members too (their clusters count for its choice and bridges).
                reached = matches.unionByName(
                    links.select(F.col("src").alias("fp_new"), F.col("dst").alias("fp_old"), F.lit(1).alias("distance"))
                ).unionByName(
                    links.select(F.col("dst").alias("fp_new"), F.col("src").alias("fp_old"), F.lit(1).alias("distance"))
                )
            by_component, bridges = assign.indexed_clusters(reached, components, entries, run_seq)
            by_component = self._stage(stages, "index_clusters", by_component)
            self.stats["bridged_components"] = bridges.count()
            self.stats["bridged_clusters"] = int(bridges.agg(F.sum("clusters")).first()[0] or 0)
            exact_entries = entries.where(F.col("fingerprint").isNull())
        else:
            by_component = by_component_empty(batch.sparkSession)
            self.stats["bridged_components"] = self.stats["bridged_clusters"] = 0
        if self.stats["bridged_components"]:
            log.warning(
                "%d new component(s) touch several indexed clusters; they join the earliest one and "
                "the indexed clusters stay apart", self.stats["bridged_components"],
            )
        clustered_full = self._stage(
            stages, "index_assign",
            assign.assign_with_index(marked, components, by_component, exact_entries, config.keep_order),
        )
        clustered = clustered_full.select(*OUTPUT_COLUMNS)

        # Pairs: each pair once over the life of the index, by the run that brought its
        # newer fingerprint; fingerprints are named by the id that first carried them.
        new_side = new_fps.select(F.col("fingerprint").alias("_new"))
        fresh_batch_pairs = batch_pairs.join(
            new_side, (F.col("fp_a") == F.col("_new")) | (F.col("fp_b") == F.col("_new")), "left_semi"
        )
        fresh_index_pairs = near_index.join(new_side, F.col("fp_new") == F.col("_new"), "left_semi").select(
            F.least("fp_new", "fp_old").alias("fp_a"), F.greatest("fp_new", "fp_old").alias("fp_b"), "distance"
        )
        fingerprint_pairs = self._stage(
            stages, "index_pairs", fresh_batch_pairs.unionByName(fresh_index_pairs)
        )
        names = marked.where(active).join(new_fps, "fingerprint").select("id", "fingerprint")
        if entries is not None:
            touched = matches.select(F.col("fp_old").alias("fingerprint")).distinct()
            names = names.unionByName(
                entries.join(touched, "fingerprint").select(
                    F.col("id").cast(fingerprinted.schema["id"].dataType).alias("id"), "fingerprint"
                )
            )
        pairs = clusters.pairs_by_id(fingerprint_pairs, names)

        self.stats.update(
            {
                "batch_fingerprints_already_indexed": indexed_fps.count(),
                "pairs_with_indexed": near_index.count(),
                "documents_joining_indexed_clusters": clustered_full.where(
                    F.col("cluster_run_id").isNotNull()
                ).count(),
            }
        )
        sources = docs.select(
            F.col(config.id_col).alias("id"),
            _optional(docs, self.options.url_col).alias("url"),
            _optional(docs, self.options.fetch_time_col).alias("fetch_time"),
        )
        added = assign.new_entries(clustered_full, marked, sources, indexed_fps, self.run_id)
        with stages.timed("index_write"):
            self._write_segment(added, plan)
        return NearDuplicates(clustered, pairs, fingerprint_pairs, normalised, texts, plan, stats)

    def _stage(self, stages: Stages, name: str, frame: DataFrame) -> DataFrame:
        return self._guarded(lambda: stages.materialise(name, frame))

    def _guarded(self, action):
        """Run a step that reads the index; a Spark error naming one of its files becomes an
        IndexCorruptError naming that file."""
        try:
            return action()
        except Exception as error:  # Py4J / Spark errors carry the file in their text
            path = _index_file_in(str(error), self.store.root)
            if path is None:
                raise
            raise IndexCorruptError(
                f"index file {path} cannot be read (corrupt or not Parquet); restore it, or remove "
                f"its run with jobs/index.py remove-run"
            ) from None

    def _write_segment(self, added: DataFrame, plan: bands.BandPlan) -> None:
        """Write the run's entries and their band keys into its new segment folder."""
        self._written = True
        entries, keys = write_segment(self.store, self.segment, added, plan)
        self.stats["entries_added"], self.stats["keys_added"] = entries, keys

    # -- publishing ----------------------------------------------------------------------
    def prepare(self) -> Manifest:
        """The version this run will publish (its number is fixed by the version read)."""
        latest_version = self.latest.version if self.latest else 0
        next_seq = self.latest.next_seq if self.latest else 1
        run = RunInfo(
            run_id=self.run_id,
            seq=next_seq,
            segment=self.segment,
            input_digest=self.digest,
            base_version=latest_version,
            published_at=now_iso(),
            entries=int(self.stats.get("entries_added", 0)),
            keys=int(self.stats.get("keys_added", 0)),
        )
        segment = Segment(self.segment, (self.run_id,), self.store.data_files(self.segment))
        self.new_manifest = dataclasses.replace(
            self.base,
            version=latest_version + 1,
            id_type=self.base.id_type or getattr(self, "id_type", ""),
            runs=self.base.runs + (run,),
            segments=self.base.segments + (segment,),
            next_seq=next_seq + 1,
        )
        return self.new_manifest

    def commit(self) -> None:
        """Publish the prepared version (IndexConflictError if another run published first,
        IndexCorruptError if a file it lists is gone), then release the run's lease."""
        manifest = self.new_manifest or self.prepare()
        self.store.publish(manifest, new_segments=(self.segment,))
        self.committed = True
        log.info("index %s: published version %d (run %r)", self.store.root, manifest.version, self.run_id)
        self._release()

    def abort(self) -> None:
        """Remove this run's segment unless it was published, then release the run's lease.

        "Published" is read from the index, not from `committed`: an interrupt between the
        manifest's link and `committed = True` must not delete what the new version lists.
        """
        try:
            if self.committed or not self.store.exists(self.segment):
                return
            after = self.latest.version if self.latest else 0
            listed_by = self.store.referencing_versions(self.segment, after)
            if listed_by:
                self.committed = True
                log.warning(
                    "index %s: run %r was interrupted after publishing version %d; its segment is "
                    "kept (rerun the same run id to write the output)", self.store.root, self.run_id, listed_by[0],
                )
                return
            self.store.delete(self.segment)
        finally:
            self._release()

    def _release(self) -> None:
        if self.lease is not None:
            self.lease.release()

    def report(self) -> dict[str, Any]:
        """The `index` section of report.json."""
        manifest = self.new_manifest or self.prepare()
        plan = manifest.plan
        return {
            "path": self.store.root,
            "run_id": self.run_id,
            "replaced_run": self.replacing is not None,
            "base_version": self.latest.version if self.latest else 0,
            "version": manifest.version,
            "band_plan": {
                "k": plan.k, "blocks": plan.blocks, "tables": plan.n_tables,
                "chosen_by": (self.plan or plan).reason,
            },
            "entries_before": sum(r.entries for r in self.base.runs),
            "runs_before": len(self.base.runs),
            **self.stats,
        }


def join_counts(self_join: dict[str, Any], lookup: dict[str, Any]) -> dict[str, Any]:
    """The join section's counts of a run against the index, with the meanings they have
    without an index (`join.join_stats`): candidate_pairs = comparisons made, here those of
    the batch's self-join plus those of the lookup (stored rows joined to a batch row's key,
    each checked by bit_count, and the comparisons of summarised hot lookup buckets);
    summarised_runs counts the self-join's hot runs and the lookup's hot buckets, since
    either leaves pairs/ with only enough of their pairs for exact clusters. The two parts
    are kept apart as self_join_candidate_pairs / lookup_candidate_pairs and
    self_join_summarised_runs / hot_lookup_buckets."""
    return {
        **self_join,
        "candidate_pairs": self_join["candidate_pairs"] + lookup["lookup_candidate_pairs"],
        "self_join_candidate_pairs": self_join["candidate_pairs"],
        "lookup_candidate_pairs": lookup["lookup_candidate_pairs"],
        "summarised_runs": self_join["summarised_runs"] + lookup["hot_lookup_buckets"],
        "self_join_summarised_runs": self_join["summarised_runs"],
        "hot_lookup_buckets": lookup["hot_lookup_buckets"],
    }


def by_component_empty(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [], "component long, cluster_id string, cluster_fingerprint long, cluster_exact_key binary, cluster_run_id string"
    )


def _optional(frame: DataFrame, column: str):
    return F.col(column).cast("string") if column in frame.columns else F.lit(None).cast("string")


def _check_settings(store: IndexStore, manifest: Manifest, config: DedupeConfig, settings: dict[str, Any]) -> None:
    if config.k != manifest.k:
        raise IndexError_(
            f"the index {store.root} was built with k = {manifest.k}; this run asks for k = {config.k} "
            "(an index keeps one k and band plan for its whole life)"
        )
    if config.blocks is not None and config.blocks != manifest.blocks:
        raise IndexError_(
            f"the index {store.root} uses {manifest.blocks} blocks; --blocks {config.blocks} cannot "
            "change it (leave --blocks out)"
        )
    stored = {**LEGACY_SETTINGS, **manifest.fingerprint}
    differing = sorted(k for k in settings if stored.get(k) != settings[k])
    if differing:
        shown = ", ".join(f"{k}: index {stored.get(k)!r}, run {settings[k]!r}" for k in differing)
        raise IndexError_(
            f"the index {store.root} holds fingerprints made with other settings ({shown}); "
            "fingerprints are only comparable with the same settings"
        )


def _index_file_in(message: str, root: str) -> str | None:
    """The first path under the index root mentioned in an error message, if any."""
    import re

    bare = root.split(":", 1)[1] if root.startswith("file:") else root
    bare = bare.lstrip("/")
    match = re.search(r"((?:file:)?/*" + re.escape(bare) + r"[^\s,;'\"\]\)]*)", message)
    return match.group(1).rstrip(".") if match else None

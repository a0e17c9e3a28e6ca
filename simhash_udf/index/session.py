"""One run against the index: open a version, write the run's segment, publish or undo it.

`IndexSession.open` reads the newest version, checks the run's settings against it and fixes
the run's band plan (`bands.index_plan`: the manifest's, or a new index's); the index's
finder (`simhash_udf.index.finder.find_against_index`) finds the batch's duplicates and
writes the run's segment through `write_segment`; `commit` writes nothing itself but
publishes the new version; `abort` removes an unpublished segment. `simhash_udf.run.pipeline.run`
calls them in that order and publishes the job's output only after `commit`, so a run killed
between the two is repaired by rerunning the same run id.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from simhash_udf.core import bands
from simhash_udf.core.config import DedupeConfig, IndexOptions
from simhash_udf.index.lease import Lease, take_run_lease
from simhash_udf.index.manifest import Manifest, RunInfo, Segment, now_iso
from simhash_udf.index.store import IndexError_, IndexStore, input_digest, write_segment

log = logging.getLogger("simhash_udf")

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
    settings["sketch"] = sketch_settings(config)
    return settings


def sketch_settings(config: DedupeConfig) -> dict[str, Any] | None:
    """What makes two runs' MinHash sketches comparable (the entries store them), or None for
    a run that makes none (--sketch none, or given fingerprints). The tokenizer the shingles
    are made of is a fingerprint setting already; `jaccard` and `max_distance` decide on
    pairs, nothing stored depends on them, so they may change from run to run."""
    if config.fingerprint_col is not None or config.sketch.jaccard is None:
        return None
    s = config.sketch
    return {"size": s.size, "shingle": s.shingle, "bands": s.bands, "rows": s.rows, "min_chars": s.min_chars}


def indexed_fingerprints(manifest: Manifest) -> int:
    """The fingerprints a version of the index holds: its key rows, one per fingerprint and table."""
    return sum(r.keys for r in manifest.runs) // manifest.plan.n_tables


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
    # The plan this run uses, saying how it was picked (`bands.index_plan`): the lookup's
    # cost model (or --blocks) when this run creates the index, the manifest's otherwise.
    plan: bands.BandPlan
    stats: dict[str, Any] = field(default_factory=dict)
    new_manifest: Manifest | None = None
    committed: bool = False
    # The batch's id type, once the finder has read it (kept in the manifest).
    id_type: str = ""
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

        Raises IndexError_ (an inputs.InputError: exit code 2) when k, --blocks or the
        fingerprint settings differ from the index's, when the run id is being rerun after
        later runs built on it, and IndexCorruptError naming a bad manifest or data file.
        """
        store = IndexStore(spark, options.path)
        latest = store.latest()
        digest = input_digest(spark, input_path)
        run_id = options.run_id or f"input-{digest}"
        settings = fingerprint_settings(config)
        # The index's plan is priced for its own lookup, not for the self-join (see
        # `bands.choose_index_plan`); it is fixed for the index's life.
        plan = bands.index_plan(latest.plan if latest else None, options.expected_size, config.k, config.blocks)
        if latest is None:
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
            if base.fingerprint.get("sketch") is None and settings["sketch"] is not None:
                # An index without sketches (from before they existed, or built with --sketch
                # none) records this run's settings: its older entries have none, its new ones will.
                base = dataclasses.replace(base, fingerprint={**base.fingerprint, "sketch": settings["sketch"]})
                log.info("index %s: holds no sketches yet; this run's entries carry them", store.root)
        store.check_files(base)
        leftovers = store.unreferenced(latest)
        if leftovers:
            log.info(
                "index %s: %d segment folder(s) no version uses (killed or replaced runs); "
                "jobs/index.py compact removes them", store.root, len(leftovers),
            )
        return IndexSession(store, options, run_id, digest, latest, base, replacing, store.new_segment(run_id), plan)

    def write_segment(self, added: DataFrame, plan: bands.BandPlan) -> None:
        """Write the run's entries and their band keys into its new segment folder
        (`simhash_udf.index.finder.find_against_index` does, once it has them)."""
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
            id_type=self.base.id_type or self.id_type,
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
                "chosen_by": self.plan.reason,
            },
            "entries_before": sum(r.entries for r in self.base.runs),
            "runs_before": len(self.base.runs),
            **self.stats,
        }


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
    differing = sorted(k for k in settings if k != "sketch" and stored.get(k) != settings[k])
    if differing:
        shown = ", ".join(f"{k}: index {stored.get(k)!r}, run {settings[k]!r}" for k in differing)
        raise IndexError_(
            f"the index {store.root} holds fingerprints made with other settings ({shown}); "
            "fingerprints are only comparable with the same settings"
        )
    _check_sketch_settings(store, stored.get("sketch"), settings["sketch"])


def _check_sketch_settings(store: IndexStore, stored: dict[str, Any] | None, run: dict[str, Any] | None) -> None:
    """Refuse a run whose sketches would not compare with the index's. An index without
    sketches (None: from before they existed, or built with --sketch none) takes any."""
    if stored is None:
        return
    if run is None:
        raise IndexError_(
            f"the index {store.root} stores MinHash sketches ({_shown(stored)}); this run makes none "
            "(--sketch none): its entries would lack them and later runs would miss their pairs "
            "beyond k. Keep --sketch on (any Jaccard threshold) with this index"
        )
    differing = sorted(k for k in stored if stored[k] != run.get(k))
    if differing:
        shown = ", ".join(f"sketch {k}: index {stored[k]!r}, run {run.get(k)!r}" for k in differing)
        raise IndexError_(
            f"the index {store.root} holds sketches made with other settings ({shown}); sketches "
            "are only comparable with the same settings (--sketch's threshold and "
            "--sketch-max-distance may change)"
        )


def _shown(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(settings.items()))

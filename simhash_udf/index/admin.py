"""Index maintenance: describe a version, compact its segments, remove a run.

Each change is a new version published like a run's (`IndexStore.publish`): a maintenance
step killed half-way leaves the previous version intact, and one racing a run is refused.
`compact` deletes folders, so it holds the index's compact lease and runs hold run leases
(`index/lease.py`): the two never overlap.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from pyspark.sql import functions as F

from simhash_udf.index.lease import COMPACT_LEASE, lease_files, live_lease, take_compact_lease, take_run_lease
from simhash_udf.index.manifest import Manifest, RunInfo, Segment
from simhash_udf.index.store import DEFAULT_MIN_AGE_SECONDS, MANIFESTS, IndexError_, IndexStore, write_segment

log = logging.getLogger("simhash_udf")


def _latest(store: IndexStore) -> Manifest:
    manifest = store.latest()
    if manifest is None:
        raise IndexError_(f"no index at {store.root} (no published version under {MANIFESTS}/)")
    return manifest


def describe(store: IndexStore) -> dict[str, Any]:
    """The newest version: plan, runs, segments, sizes, and folders no version uses."""
    manifest = _latest(store)
    store.check_files(manifest)
    return {
        "path": store.root,
        "version": manifest.version,
        "versions_on_disk": store.versions(),
        "created_at": manifest.created_at,
        "band_plan": {"k": manifest.k, "blocks": manifest.blocks, "tables": manifest.plan.n_tables},
        "fingerprint": manifest.fingerprint,
        "id_type": manifest.id_type,
        "entries": sum(r.entries for r in manifest.runs),
        "key_rows": sum(r.keys for r in manifest.runs),
        "bytes": sum(sum(s.files.values()) for s in manifest.segments),
        "segments": len(manifest.segments),
        "runs": [dataclasses.asdict(r) for r in manifest.runs],
        "unreferenced_segments": store.unreferenced(manifest),
        "live_leases": [
            h for h in (live_lease(store, f) for f in [COMPACT_LEASE, *lease_files(store)]) if h is not None
        ],
    }


def compact(store: IndexStore, min_age: float = DEFAULT_MIN_AGE_SECONDS, keep_last: int = 0) -> dict[str, Any]:
    """Merge the segments into one (fewer, larger files) and publish it as a new version;
    then delete the older manifests, the segments only they used, and segments no manifest
    lists that are older than `min_age` seconds.

    keep_last: the segments of the newest `keep_last` runs are left as they are, so those
    runs can still be rerun with the same run id (a run merged with others cannot).
    Holds the compact lease throughout: refused (IndexBusyError, nothing done) while a run
    holds a live lease, and runs are refused while it goes. A reader still using an older
    version loses it.
    """
    lease = take_compact_lease(store)
    try:
        return _compact(store, min_age, keep_last)
    finally:
        lease.release()


def _compact(store: IndexStore, min_age: float, keep_last: int) -> dict[str, Any]:
    manifest = _latest(store)
    store.check_files(manifest)
    kept = _own_segments_of_newest_runs(manifest, keep_last)
    to_merge = tuple(s for s in manifest.segments if s not in kept)
    merged = manifest
    if len(to_merge) > 1:
        folder = store.new_segment("compact")
        entries = store.read(dataclasses.replace(manifest, segments=to_merge), "entries")
        try:
            write_segment(store, folder, entries, manifest.plan)
            merged_runs = tuple(r for s in to_merge for r in s.runs)
            segment = Segment(folder, tuple(r.run_id for r in manifest.runs if r.run_id in merged_runs), store.data_files(folder))
            merged = dataclasses.replace(
                manifest,
                version=manifest.version + 1,
                segments=(segment,) + kept,
                runs=tuple(
                    dataclasses.replace(r, segment=folder) if r.run_id in merged_runs else r for r in manifest.runs
                ),
            )
            store.publish(merged, new_segments=(folder,))
        except BaseException:
            store.delete(folder)
            raise
    # Folders older versions used are done with; folders no version ever listed are killed
    # runs' (no run holds a lease now), old ones only all the same.
    in_use = {s.folder for s in merged.segments}
    superseded = {
        s.folder for v in store.versions() if v < merged.version for s in store.read_manifest(v).segments
    }
    removed = sorted((superseded - in_use) | set(store.unreferenced(merged, min_age)) - in_use)
    for folder in removed:
        store.delete(folder)
    old_manifests = [v for v in store.versions() if v < merged.version]
    for version in old_manifests:
        store.delete(f"{MANIFESTS}/{version:08d}.json")
    return {
        "version": merged.version,
        "segments_before": len(manifest.segments),
        "segments_after": len(merged.segments),
        "removed_folders": removed,
        "removed_manifests": len(old_manifests),
    }


def _own_segments_of_newest_runs(manifest: Manifest, count: int) -> tuple[Segment, ...]:
    """The segments that hold exactly one of the `count` newest runs (by publication order)."""
    newest = {r.run_id for r in sorted(manifest.runs, key=lambda r: r.seq)[-count:]} if count > 0 else set()
    return tuple(s for s in manifest.segments if len(s.runs) == 1 and s.runs[0] in newest)


def remove_run(store: IndexStore, run_id: str, force: bool = False) -> dict[str, Any]:
    """Publish a version without a run's entries.

    Later runs may have put documents into clusters the run created (their cluster_id names
    its documents): removing a run that is not the last one needs `force`.
    """
    lease = take_run_lease(store, f"remove-{run_id}")  # its new folder is safe from compact
    try:
        return _remove_run(store, run_id, force)
    finally:
        lease.release()


def _remove_run(store: IndexStore, run_id: str, force: bool) -> dict[str, Any]:
    manifest = _latest(store)
    run = manifest.run(run_id)
    if run is None:
        known = ", ".join(r.run_id for r in manifest.runs) or "(none)"
        raise IndexError_(f"no run {run_id!r} in the index {store.root}; its runs: {known}")
    later = [r.run_id for r in manifest.runs if r.seq > run.seq]
    if later and not force:
        raise IndexError_(
            f"runs after {run_id!r} ({', '.join(later)}) may have joined clusters it created; "
            "pass --force to remove it anyway (their entries keep those cluster ids)"
        )
    store.check_files(manifest)
    kept_segments, new_folders = [], []
    try:
        for segment in manifest.segments:
            if run_id not in segment.runs:
                kept_segments.append(segment)
            elif segment.runs != (run_id,):
                # A compacted segment: rewrite it without the run's entries.
                folder = store.new_segment("without-" + run_id)
                new_folders.append(folder)
                entries = store.read(dataclasses.replace(manifest, segments=(segment,)), "entries")
                write_segment(store, folder, entries.where(F.col("run_id") != run_id), manifest.plan)
                runs = tuple(r for r in segment.runs if r != run_id)
                kept_segments.append(Segment(folder, runs, store.data_files(folder)))
        updated = dataclasses.replace(
            manifest,
            version=manifest.version + 1,
            segments=tuple(kept_segments),
            runs=tuple(_moved(r, manifest, kept_segments) for r in manifest.runs if r.run_id != run_id),
        )
        store.publish(updated, new_segments=tuple(new_folders))
    except BaseException:
        for folder in new_folders:
            store.delete(folder)
        raise
    return {"version": updated.version, "removed_run": run_id, "entries_removed": run.entries}


def _moved(run: RunInfo, manifest: Manifest, segments: list[Segment]) -> RunInfo:
    folder = next((s.folder for s in segments if run.run_id in s.runs), run.segment)
    return dataclasses.replace(run, segment=folder)


"""The persistent fingerprint index: its layout on disk, its versions, and atomic publishing.

An index is a folder (any file system Hadoop reads) laid out as:

    manifests/00000007.json     one file per published version; the newest one is the index
    segments/<run>-<token>/     data written by one run (or merged by `compact`), never modified:
        entries/                one row per distinct fingerprint (and per too-short text) seen
        keys/table=<t>/         the band keys of those fingerprints, sorted by key in each file
    leases/                     the leases of the runs and of `compact` going on (`index/lease.py`)

A manifest (`index/manifest.py`) lists the segments that make up its version, each with the
size of every data file (so a truncated file is found by a listing, before any Spark work),
the band plan and fingerprint settings fixed at creation, and the runs in the order they were
published. Nothing is ever written into a published segment; a version becomes visible when its
manifest file appears, which is a single atomic step (a complete temporary file hard-linked
to the next free version number on local disks, `FileContext.rename` without overwrite
elsewhere): two runs cannot publish the same version, and a killed run leaves only a
segment no manifest references (`jobs/index.py compact` removes those).

Crash windows, closed (docs/index.md, "Runs that lose nothing"):
- A run and `compact` never overlap: each holds a lease while it works and refuses to start
  while the other's is live (`index/lease.py`), so compact never deletes a segment a run is
  about to publish.
- `publish` checks that every file the new manifest lists exists with its recorded size
  before linking it (IndexCorruptError, nothing published, otherwise).
- On local disks the new segment's files, the manifest and its folder are fsynced before the
  manifest is linked, and the folder after, so a power loss cannot leave a linked manifest
  that is empty or names files that were never on disk.

Bookkeeping plus Hadoop FileSystem calls, and `write_segment` (a segment's Parquet); the
DataFrame work of a run against the index is in `index/lookup.py`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import time
import uuid
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from simhash_udf.core import bands
from simhash_udf.files import hadoop, inputs, outputs
from simhash_udf.index.manifest import Manifest
from simhash_udf.stages import join

MANIFESTS = "manifests"
SEGMENTS = "segments"
_MANIFEST_NAME = re.compile(r"^(\d{8})\.json$")
# Unreferenced segments younger than this are left alone by `compact`: they may belong to a
# run that is still going and will publish them.
DEFAULT_MIN_AGE_SECONDS = 3600

ENTRY_SCHEMA_DOC = """entries/ columns: id (the input's id type), fingerprint (long; null for a
too-short text), exact_key (binary SHA-256 of the normalised text; null for given fingerprints),
url (string), fetch_time (string), run_id (string), status (kept, exact_duplicate,
near_duplicate), cluster_id (id of the cluster's kept document), cluster_fingerprint (long),
cluster_exact_key (binary), cluster_run_id (string: the run that created the cluster), sketch
(binary MinHash sketch of the fingerprint's node, `core.sketch`; null for a text without one,
and in segments written before sketches existed, which lack the column: `IndexStore.read`
reads it as null)."""

# keys/' columns (`join.band_keys`); `table` is the partition folders'.
KEY_SCHEMA = "table int, key bigint, fingerprint bigint"


def entry_schema(id_type: str) -> str:
    """entries/' columns (ENTRY_SCHEMA_DOC) as a DDL string, for ids of Spark type `id_type`
    (`DataType.simpleString`, as the manifest records it)."""
    return (
        f"id {id_type}, fingerprint bigint, exact_key binary, url string, fetch_time string, "
        f"run_id string, status string, cluster_id {id_type}, cluster_fingerprint bigint, "
        "cluster_exact_key binary, cluster_run_id string, sketch binary"
    )


class IndexError_(inputs.InputError):
    """The index cannot be used as asked (wrong settings, corrupt files); the message says why."""


class IndexCorruptError(IndexError_):
    """A file of the index is missing, truncated or unreadable; the message names it."""


class IndexConflictError(outputs.OutputError):
    """Another run published a new version of the index while this one was running."""


log = logging.getLogger("simhash_udf")


def safe_name(run_id: str) -> str:
    """A run id as a folder-name prefix (letters, digits, `-`, `_`, `.` only)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:60] or "run"


def input_digest(spark: SparkSession, path: str) -> str:
    """A digest of the input's file listing (paths, sizes, modification times): the default
    run id, and how a rerun recognises the same input."""
    files = inputs.list_input_files(spark, path)
    digest = hashlib.sha256()
    for name in files:
        fs, hpath = hadoop.hadoop_path(spark, name)
        status = fs.getFileStatus(hpath)
        digest.update(f"{name}\t{status.getLen()}\t{status.getModificationTime()}\n".encode())
    return digest.hexdigest()[:16]


class IndexStore:
    """The files of one index (`root`), through Hadoop's FileSystem API."""

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.spark = spark
        self._jvm = spark.sparkContext._jvm
        fs, hpath = hadoop.hadoop_path(spark, root)
        self.fs = fs
        self._root = fs.makeQualified(hpath)
        self.root = self._root.toString()

    # -- paths ---------------------------------------------------------------------------
    def fs_path(self, relative: str) -> Any:
        """The Hadoop Path of something inside the index."""
        return self._jvm.org.apache.hadoop.fs.Path(self._root, relative)

    def path(self, relative: str) -> str:
        """The full path of something inside the index."""
        return self.fs_path(relative).toString()

    def exists(self, relative: str) -> bool:
        return bool(self.fs.exists(self.fs_path(relative)))

    def delete(self, relative: str) -> None:
        self.fs.delete(self.fs_path(relative), True)

    # -- manifests -----------------------------------------------------------------------
    def versions(self) -> list[int]:
        """Published versions, oldest first."""
        folder = self.fs_path(MANIFESTS)
        if not self.fs.exists(folder):
            return []
        found = []
        for status in self.fs.listStatus(folder):
            match = _MANIFEST_NAME.match(status.getPath().getName())
            if match:
                found.append(int(match.group(1)))
        return sorted(found)

    def manifest_path(self, version: int) -> str:
        return self.path(f"{MANIFESTS}/{version:08d}.json")

    def read_text(self, relative: str) -> str:
        stream = self.fs.open(self.fs_path(relative))
        try:
            data = bytes(stream.readAllBytes())
        finally:
            stream.close()
        return data.decode("utf-8")

    def read_manifest(self, version: int) -> Manifest:
        relative = f"{MANIFESTS}/{version:08d}.json"
        try:
            return Manifest.from_json(self.read_text(relative))
        except (ValueError, KeyError, TypeError) as error:
            raise IndexCorruptError(
                f"index manifest {self.path(relative)} is unreadable ({type(error).__name__}: {error}); "
                "it is truncated or corrupt: restore it from a backup, or delete it to fall back "
                "to the previous version"
            ) from None

    def latest(self) -> Manifest | None:
        """The newest published version, or None for a new (empty or absent) index."""
        versions = self.versions()
        return self.read_manifest(versions[-1]) if versions else None

    def check_files(self, manifest: Manifest) -> None:
        """Raise IndexCorruptError naming the first data file that is missing or whose size
        differs from what the manifest recorded (a truncated or replaced file)."""
        for segment in manifest.segments:
            for relative, size in segment.files.items():
                path = self.fs_path(f"{segment.folder}/{relative}")
                if not self.fs.exists(path):
                    raise IndexCorruptError(
                        f"index file {path.toString()} is missing (listed by version {manifest.version}); "
                        "the index cannot be read"
                    )
                actual = self.fs.getFileStatus(path).getLen()
                if actual != size:
                    raise IndexCorruptError(
                        f"index file {path.toString()} has {actual} bytes but version "
                        f"{manifest.version} recorded {size}: it is truncated or was replaced"
                    )

    def publish(self, manifest: Manifest, new_segments: tuple[str, ...] = ()) -> None:
        """Make `manifest` the newest version, atomically and only if its version number is
        still free; raise IndexConflictError when another run took it first.

        new_segments: the folders this change wrote (fsynced first on local disks). Every
        file the manifest lists must exist with its recorded size, else IndexCorruptError and
        nothing is published (a folder deleted under a run must not become a version).
        """
        try:
            self.check_files(manifest)
        except IndexCorruptError as error:
            raise IndexCorruptError(
                f"not publishing version {manifest.version} of the index {self.root}: {error}. "
                "Nothing was published; run again (was `compact` or a delete run meanwhile?)"
            ) from None
        for folder in new_segments:
            self.sync_folder(folder)
        self.fs.mkdirs(self.fs_path(MANIFESTS))
        tmp = f"{MANIFESTS}/_tmp-{uuid.uuid4().hex}.json"
        final = f"{MANIFESTS}/{manifest.version:08d}.json"
        self.write_file(tmp, manifest.to_json())
        try:
            if not self.exclusive_rename(tmp, final):
                raise IndexConflictError(
                    f"another run published version {manifest.version} of the index {self.root} "
                    "while this run was working; nothing of this run was added (rerun it: it will "
                    "be checked against the new version)"
                )
        finally:
            self.delete(tmp)
            self.drop_checksum(tmp)

    def is_local(self) -> bool:
        return self._root.toUri().getScheme() in (None, "file")

    def write_file(self, relative: str, text: str) -> None:
        """Write a small file whole and durably: fsynced on local disks (Python's own I/O, no
        checksum file), hsync'ed elsewhere (HDFS: on the datanodes' disks)."""
        data = text.encode("utf-8")
        if self.is_local():
            path = self._local(relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            return
        stream = self.fs.create(self.fs_path(relative), True)
        try:
            stream.write(bytearray(data))
            stream.hsync()
        finally:
            stream.close()

    def sync_folder(self, relative: str) -> None:
        """fsync every file and folder under `relative` (local disks only: Spark's writers do
        not, and a manifest must not outlive the data it lists after a power loss)."""
        if not self.is_local():
            return  # HDFS: a closed file's blocks are replicated; object stores: no such thing
        top = self._local(relative)
        for folder, _, names in os.walk(top):
            for name in names:
                _fsync_path(os.path.join(folder, name))
            _fsync_path(folder)
        _fsync_path(os.path.dirname(top))

    def exclusive_rename(self, tmp: str, final: str) -> bool:
        """Rename that fails (False) when `final` exists, atomically."""
        uri = self._root.toUri()
        if uri.getScheme() in (None, "file"):
            # java.io.File.renameTo and Hadoop's local rename replace an existing file; a
            # hard link does not (POSIX link(2) fails with EEXIST), and the file is complete.
            try:
                os.link(self._local(tmp), self._local(final))
            except FileExistsError:
                return False
            # The new name is an entry of the folder: durable once the folder is synced.
            _fsync_path(os.path.dirname(self._local(final)))
            return True
        context = self._jvm.org.apache.hadoop.fs.FileContext.getFileContext(
            uri, self.spark.sparkContext._jsc.hadoopConfiguration()
        )
        rename_none = self._jvm.org.apache.hadoop.fs.Options.Rename.NONE
        try:
            context.rename(self.fs_path(tmp), self.fs_path(final), [rename_none])
        except Exception as error:  # py4j wraps FileAlreadyExistsException
            if "FileAlreadyExists" in str(error) or self.exists(final):
                return False
            raise
        return True

    def _local(self, relative: str) -> str:
        return str(self._jvm.java.io.File(self.fs_path(relative).toUri()).getAbsolutePath())

    def drop_checksum(self, relative: str) -> None:
        parent, name = os.path.split(relative)
        crc = f"{parent}/.{name}.crc"
        if self.exists(crc):
            self.delete(crc)

    # -- segments ------------------------------------------------------------------------
    def new_segment(self, run_id: str) -> str:
        """A fresh folder name (relative) for a run's data."""
        token = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        return f"{SEGMENTS}/{safe_name(run_id)}-{token}"

    def data_files(self, folder: str) -> dict[str, int]:
        """Every data file under a segment folder (relative path -> bytes), hidden files
        and Spark's markers left out."""
        base = self.fs_path(folder)
        prefix = base.toString().rstrip("/") + "/"
        files: dict[str, int] = {}
        iterator = self.fs.listFiles(base, True)
        while iterator.hasNext():
            status = iterator.next()
            name = status.getPath().getName()
            if name.startswith((".", "_")):
                continue
            full = status.getPath().toString()
            files[full[len(prefix):] if full.startswith(prefix) else full] = int(status.getLen())
        return files

    def segments_on_disk(self) -> list[tuple[str, float]]:
        """Every segment folder (relative) with its age in seconds."""
        folder = self.fs_path(SEGMENTS)
        if not self.fs.exists(folder):
            return []
        now = time.time() * 1000
        return [
            (f"{SEGMENTS}/{s.getPath().getName()}", (now - s.getModificationTime()) / 1000)
            for s in self.fs.listStatus(folder)
            if s.isDirectory()
        ]

    def unreferenced(self, manifest: Manifest | None, min_age: float = 0.0) -> list[str]:
        """Segment folders no version from `manifest` on refers to, older than `min_age` s."""
        referenced = {s.folder for s in manifest.segments} if manifest else set()
        return sorted(f for f, age in self.segments_on_disk() if f not in referenced and age >= min_age)

    def referencing_versions(self, folder: str, after: int) -> list[int]:
        """Versions newer than `after` whose manifest lists the segment `folder`; a manifest
        that cannot be read counts as listing it (deleting data is never a guess)."""
        found = []
        for version in self.versions():
            if version <= after:
                continue
            try:
                listed = {s.folder for s in self.read_manifest(version).segments}
            except IndexCorruptError:
                listed = {folder}
            if folder in listed:
                found.append(version)
        return found


    # -- data ----------------------------------------------------------------------------
    def read(self, manifest: Manifest, part: str) -> DataFrame | None:
        """`entries` or `keys` of every segment of a version, or None when it has none.
        Entries always have `sketch` (null where a segment predates it).

        Read with the schema the index writes (`entry_schema`, `KEY_SCHEMA`): a segment whose
        run added no fingerprint has a keys/ folder without a Parquet file, from which Spark
        cannot infer one (and inferring costs a Spark job per folder, on every run)."""
        folders = [self.path(f"{s.folder}/{part}") for s in manifest.segments]
        if not folders:
            return None
        if not manifest.id_type:
            raise IndexCorruptError(
                f"version {manifest.version} of the index {self.root} lists segments but no id type: "
                "its manifest is corrupt"
            )
        schema = entry_schema(manifest.id_type) if part == "entries" else KEY_SCHEMA
        # One read per folder, each its own base path (keys/' `table` comes from its partition
        # folders; Spark refuses several roots of partition folders in one read), then a union.
        return functools.reduce(
            DataFrame.unionByName, [self.spark.read.schema(schema).parquet(folder) for folder in folders]
        )


def _fsync_path(path: str) -> None:
    """fsync a file or a folder (a folder's fsync makes its new entries durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_columns(frame: DataFrame, ddl: str, what: str) -> None:
    """Raise RuntimeError unless frame's column names, order and types are those of `ddl`.

    `IndexStore.read` reads every segment with the schema the index declares, and Parquet
    reads a declared column a file lacks as null: a column written under another name or
    type would read back as null on every later run, silently. Checked before anything is
    written, on the driver (no Spark job)."""
    want = [(f.name, f.dataType.simpleString()) for f in StructType.fromDDL(ddl).fields]
    got = [(f.name, f.dataType.simpleString()) for f in frame.schema.fields]
    if got != want:
        raise RuntimeError(f"the index's {what} would be written as {got}, but it is read as {want}")


def write_segment(store: IndexStore, folder: str, entries: DataFrame, plan: bands.BandPlan) -> tuple[int, int]:
    """Write entries (see ENTRY_SCHEMA_DOC) and their band keys into a new segment folder.

    Returns (entries written, key rows written). Fails if the folder exists: a published
    segment is never written twice, and fails (RuntimeError, before writing) when entries'
    or the keys' columns are not those `IndexStore.read` reads (`check_columns`).
    """
    check_columns(entries, entry_schema(entries.schema["id"].dataType.simpleString()), "entries")
    check_columns(join.band_keys(entries.select("fingerprint"), plan), KEY_SCHEMA, "keys")
    entries_path = store.path(f"{folder}/entries")
    # The counts returned are observed by the write's own tasks, and the entries are read back
    # with their schema: each of the three was a Spark job or two of its own, on every run
    # against an index.
    counted = outputs.write_parquet(
        entries, entries_path, {"entries": F.count(F.lit(1)), "fingerprints": F.count("fingerprint")}, "errorifexists"
    )
    stored = outputs.read_back(entries, entries_path)
    fingerprints = stored.where(F.col("fingerprint").isNotNull()).select("fingerprint")
    # Range-partitioned by (table, key) and sorted: each file holds one key range of one
    # table, so its min/max statistics let a reader skip it for keys outside the range.
    (
        join.band_keys(fingerprints, plan)
        .repartitionByRange("table", "key")
        .sortWithinPartitions("table", "key")
        .write.mode("errorifexists")
        .partitionBy("table")
        .parquet(store.path(f"{folder}/keys"))
    )
    return counted["entries"], counted["fingerprints"] * plan.n_tables

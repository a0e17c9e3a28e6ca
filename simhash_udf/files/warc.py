"""Crawl input: WARC and WET files, one document per HTML `response` (WET: `conversion`) record.

Records are read with FastWARC (resiliparse project; chosen over warcio for speed, figures in
docs/input.md), one Spark task per file, streaming: a file is never held in memory, only
the record being read. Every record is accounted for: a document, or a count by reason
(`revisit`, `non_html`, `request_record`, ...); damage (a record cut short, bytes that do
not decompress or parse) is a `damaged_record` count and names the file in the report, and
the reader resynchronises on the next record (the next gzip member, or the next `WARC/1.`
line of a plain file), so the good records before and after the damage are all kept.

ARC files (`.arc`, `.arc.gz`, the format before WARC) are not read: FastWARC reads WARC
only. They are listed as skipped files with that reason, never fatal.

Columns of a read (`read_records`): `id` (WARC-Record-ID), `url` (WARC-Target-URI),
`fetch_time` (WARC-Date, ISO 8601 as written), `http_status` (int, WARC only), `charset`
(the codec the page was decoded with) and `charset_source` (`bom`, `http`, `meta`,
`detected`; see :mod:`encoding`), `text` (the page as str: HTML for WARC, plain text for
WET), `_invalid_bytes` (True when some of the page's bytes were not valid in that charset:
they were replaced with U+FFFD or read with a fallback encoding; counted by the job as
`invalid_utf8_documents`, and left out of deduped/), and the helper columns `_warc_skip` (why a record is not a document), `_warc_file`
and `_warc_damage` (what was wrong, on damaged records), which `split_records` removes.
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from simhash_udf.core.config import DedupeConfig
from simhash_udf.files.encoding import content_type_charset, decode_page

FORMATS = ("warc", "wet")
EXTENSIONS = {".warc": "warc", ".wet": "wet"}
ARC_SUFFIXES = (".arc", ".arc.gz")

SKIP_COLUMN = "_warc_skip"
FILE_COLUMN = "_warc_file"
DAMAGE_COLUMN = "_warc_damage"
HELPER_COLUMNS = (SKIP_COLUMN, FILE_COLUMN, DAMAGE_COLUMN)
# True for a row whose bytes were not valid in their encoding (any input format: see
# `inputs.INVALID_BYTES_COLUMN`, which is this name); kept with the documents until deduped/.
INVALID_BYTES_COLUMN = "_invalid_bytes"

# Why a record is not a document (the `records` counts of the report).
REVISIT = "revisit"
NON_HTML = "non_html"
NOT_HTTP = "not_http"
NO_RECORD_ID = "no_record_id"
DAMAGED_RECORD = "damaged_record"
ARC_FILE = "arc_file"
ARC_REASON = "ARC file: not read (FastWARC reads WARC only)"

HTML_TYPES = ("text/html", "application/xhtml+xml")
_SNIFF_BYTES = 1024
_CHUNK = 1 << 20
# A file damaged in more places than this is given up after the last one (each costs a scan
# for the next record).
MAX_RESYNCS = 10_000
_HEADER_LIMIT = 1 << 16
_CONTENT_LENGTH = re.compile(rb"(?im)^content-length:[ \t]*(\d+)")

SCHEMA = StructType(
    [
        StructField("id", StringType(), True),
        StructField("url", StringType(), True),
        StructField("fetch_time", StringType(), True),
        StructField("http_status", IntegerType(), True),
        StructField("charset", StringType(), True),
        StructField("charset_source", StringType(), True),
        StructField("text", StringType(), True),
        StructField(SKIP_COLUMN, StringType(), True),
        StructField(FILE_COLUMN, StringType(), True),
        StructField(DAMAGE_COLUMN, StringType(), True),
        StructField(INVALID_BYTES_COLUMN, BooleanType(), True),
    ]
)
Row = tuple[Any, ...]


def is_arc(path: str) -> bool:
    """True for an ARC file name (`.arc`, `.arc.gz`)."""
    return path.lower().endswith(ARC_SUFFIXES)


def named_like_warc(path: str) -> bool:
    """True when a path or glob names WARC files by its extension (`.warc`, `.warc.gz`, ...),
    as the format is inferred when `--format` is left out (a folder says nothing)."""
    name = path.lower().rstrip("/")
    for suffix in (".gz", ".bz2", ".zst", ".lz4"):
        name = name.removesuffix(suffix)
    return name.endswith(".warc")


def document_config(config: DedupeConfig, fmt: str) -> DedupeConfig:
    """The run's settings for documents read as `fmt`: WARC records hold HTML, so the HTML
    path (visible or main text, `--extract`) applies to them whatever the command line said."""
    if fmt == "warc" and not config.html:
        return dataclasses.replace(config, html=True)
    return config


def open_stream(path: str) -> IO[bytes]:
    """A seekable binary stream of a file: local paths (`file:` URIs or plain) with Python's
    own file objects, anything else (`hdfs://`, `s3://`, `s3a://`, ...) through pyarrow.fs."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return open(unquote(parsed.path) if parsed.scheme else path, "rb")  # noqa: SIM115
    import pyarrow.fs as pafs

    uri = "s3://" + path[len("s3a://"):] if parsed.scheme == "s3a" else path
    fs, inner = pafs.FileSystem.from_uri(uri)
    return fs.open_input_file(inner)  # type: ignore[return-value]


def _is_html(content_type: str | None, body: bytes) -> bool:
    """An HTML page by its Content-Type, or, when it has none, by its first bytes."""
    if content_type:
        return content_type.split(";")[0].strip().lower() in HTML_TYPES
    head = body[:_SNIFF_BYTES].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def _read_all(reader: Any) -> bytes:
    chunks = []
    while chunk := reader.read(_CHUNK):
        chunks.append(chunk)
    return b"".join(chunks)


def _drain(reader: Any) -> int:
    """Read a record's payload to its end without keeping it; returns its length."""
    n = 0
    while chunk := reader.read(_CHUNK):
        n += len(chunk)
    return n


def _skip(reason: str, path: str, record_id: str | None = None, url: str | None = None) -> Row:
    return (record_id, url, None, None, None, None, None, reason, path, None, None)


def _damage(path: str, reason: str) -> Row:
    return (None, None, None, None, None, None, None, DAMAGED_RECORD, path, reason, None)


class _Truncated(Exception):
    """A record's payload ended before its Content-Length."""


def _check_length(record: Any, n: int) -> None:
    """Raise _Truncated when `n` payload bytes were read of a record that has more."""
    if n != record.content_length:
        raise _Truncated(
            f"{record.record_type} record {record.record_id} cut short or unparseable "
            f"({n} of {record.content_length} payload bytes)"
        )


def _record_row(record: Any, fmt: str, path: str) -> Row:
    """The row of one record (its payload read to the end), or raise _Truncated."""
    from fastwarc.warc import WarcRecordType

    kind = record.record_type
    record_id = record.record_id
    url = record.headers.get("WARC-Target-URI")
    wanted = WarcRecordType.response if fmt == "warc" else WarcRecordType.conversion
    if kind != wanted:
        _check_length(record, _drain(record.reader))
        return _skip(REVISIT if kind == WarcRecordType.revisit else f"{kind}_record", path, record_id, url)
    if fmt == "warc" and not record.is_http:
        _check_length(record, _drain(record.reader))
        return _skip(NOT_HTTP, path, record_id, url)
    content_type = record.http_content_type if fmt == "warc" else None
    if fmt == "warc" and content_type and not _is_html(content_type, b""):
        _check_length(record, _drain(record.reader))
        return _skip(NON_HTML, path, record_id, url)
    body = _read_all(record.reader)
    _check_length(record, len(body))
    if fmt == "warc" and not _is_html(content_type, body):
        return _skip(NON_HTML, path, record_id, url)
    if not record_id:
        return _skip(NO_RECORD_ID, path, None, url)
    if fmt == "warc":
        header = record.http_headers.get("Content-Type") if record.http_headers else None
        page = decode_page(body, content_type_charset(header), html=True)
        status = record.http_headers.status_code
    else:
        page = decode_page(body, content_type_charset(record.headers.get("Content-Type")), html=False)
        status = None
    return (record_id, url, record.headers.get("WARC-Date"), status, page.codec, page.source, page.text,
            None, path, None, not page.valid)


def _next_record_start(stream: IO[bytes], start: int, gzipped: bool) -> int | None:
    """The offset at or after `start` where a record may begin: a gzip member's magic bytes,
    or a `WARC/1.` line; None at the end of the file."""
    marker = b"\x1f\x8b\x08" if gzipped else b"\nWARC/1."
    shift = 0 if gzipped else 1
    position = start
    stream.seek(position)
    tail = b""
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            return None
        window = tail + chunk
        found = window.find(marker)
        if found >= 0:
            return position - len(tail) + found + shift
        tail = window[-(len(marker) - 1):]
        position += len(chunk)


def _size(stream: IO[bytes]) -> int:
    stream.seek(0, 2)
    return stream.tell()


def _tail_damage(stream: IO[bytes], last_start: int, gzipped: bool) -> str | None:
    """Why the end of a file read without error is not whole, or None.

    FastWARC stops quietly where a file is cut short between or inside records' headers, so
    the end is checked here: the last gzip member must decompress to its end, and nothing
    but blank bytes may follow the last record.
    """
    size = _size(stream)
    stream.seek(last_start)
    if gzipped:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while not inflater.eof:
            chunk = stream.read(_CHUNK)
            if not chunk:
                return f"the gzip member at offset {last_start} is cut short (file of {size} bytes)"
            try:
                inflater.decompress(chunk)
            except zlib.error as error:
                return f"the gzip member at offset {last_start} does not decompress: {error}"
        rest = inflater.unused_data + stream.read()
    else:
        head = stream.read(_HEADER_LIMIT)
        end = head.find(b"\r\n\r\n")
        found = _CONTENT_LENGTH.search(head[: max(end, 0)])
        if end < 0 or not found:
            return f"the record at offset {last_start} has no complete header"
        record_end = last_start + end + 4 + int(found.group(1))
        if record_end > size:
            have, need = size - last_start, record_end - last_start
            return f"the record at offset {last_start} is cut short ({have} of {need} bytes)"
        stream.seek(record_end)
        rest = stream.read(_HEADER_LIMIT)
    if rest.strip(b"\r\n\t \x00"):
        return f"{len(rest)} bytes after the last record do not form a record (cut short?)"
    return None


def read_file(path: str, fmt: str) -> Iterator[Row]:
    """Every record of one WARC/WET file as a row (`SCHEMA`), streaming.

    A damaged stretch gives one `damaged_record` row (the reason names the offset) and the
    reading resumes at the next record after it; a file that holds no WARC record at all
    gives one such row. Never raises for what is in the file.
    """
    from fastwarc.warc import ArchiveIterator

    try:
        stream = open_stream(path)
    except OSError as error:
        yield _damage(path, f"cannot open: {error}")
        return
    with stream:
        gzipped = stream.read(2) == b"\x1f\x8b"
        size = _size(stream)
        start, resyncs, read_any, last_start = 0, 0, False, None
        while True:
            stream.seek(start)
            position = start
            failure = None
            try:
                for record in ArchiveIterator(stream, parse_http=True, inplace=False):
                    position = max(position, int(record.stream_pos))
                    row = _record_row(record, fmt, path)
                    read_any = True
                    # Where the last record (gzip: its member) starts; a single gzip stream
                    # around all records reports the end of the file for all but the first.
                    if last_start is None or record.stream_pos < size:
                        last_start = int(record.stream_pos)
                    yield row
                    position += 1
            except _Truncated as error:
                failure = f"at offset {position}: {error}"
            except Exception as error:  # noqa: BLE001 - bad bytes must never stop the job
                failure = f"at offset {position}: {type(error).__name__}: {error}"
            if failure is None:
                if not read_any and start == 0:
                    yield _damage(path, "no WARC record in the file")
                elif last_start is not None:
                    tail = _tail_damage(stream, last_start, gzipped)
                    if tail:
                        yield _damage(path, tail)
                return
            if read_any or start == 0:
                # The first failure after a stretch of good records (failures at guessed
                # record starts while resynchronising are the same damage).
                yield _damage(path, failure)
            resyncs += 1
            following = _next_record_start(stream, max(position, start) + 1, gzipped)
            if following is None or resyncs > MAX_RESYNCS:
                return
            start, read_any = following, False


def read_records(spark: SparkSession, paths: Iterable[str], fmt: str) -> DataFrame:
    """All records of the files (`SCHEMA`), one Spark task per file; ARC files give one
    `arc_file` row each and are not opened."""
    paths = list(paths)
    readable = [p for p in paths if not is_arc(p)]
    arcs = [_skip(ARC_FILE, p) for p in paths if is_arc(p)]
    frame = spark.createDataFrame(arcs, SCHEMA)
    if readable:
        tasks = spark.sparkContext.parallelize(readable, len(readable))
        records = spark.createDataFrame(tasks.flatMap(lambda p: read_file(p, fmt)), SCHEMA)
        frame = records.unionByName(frame)
    return frame


@dataclass
class Records:
    """A read split into its `documents` (the `SCHEMA` columns but the helpers), `counts`
    of records by reason (`document` for the documents), the `damaged` files (path, first
    reason, damaged stretches) and the `skipped_files` (ARC files, with the reason)."""

    documents: DataFrame
    counts: dict[str, int]
    damaged: list[tuple[str, str, int]] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)


def split_records(frame: DataFrame) -> Records:
    """Documents and the account of the rest, from a (materialised) `read_records` frame.
    Two small queries: the counts by reason, and the damaged and skipped files."""
    counts = {
        (r[SKIP_COLUMN] or "document"): int(r["count"])
        for r in frame.groupBy(SKIP_COLUMN).count().collect()
    }
    problems = (
        frame.where(F.col(SKIP_COLUMN).isin(DAMAGED_RECORD, ARC_FILE))
        .groupBy(FILE_COLUMN, SKIP_COLUMN)
        .agg(F.count(F.lit(1)).alias("n"), F.sort_array(F.collect_list(DAMAGE_COLUMN)).alias("reasons"))
        .collect()
    )
    damaged = sorted(
        (r[FILE_COLUMN], r["reasons"][0] if r["reasons"] else "", int(r["n"]))
        for r in problems if r[SKIP_COLUMN] == DAMAGED_RECORD
    )
    skipped = sorted((r[FILE_COLUMN], ARC_REASON) for r in problems if r[SKIP_COLUMN] == ARC_FILE)
    documents = frame.where(F.col(SKIP_COLUMN).isNull()).drop(*HELPER_COLUMNS)
    return Records(documents, counts, damaged, skipped)

"""Benchmark: WARC readers (FastWARC vs warcio) and charset detectors (uchardet vs charset-normalizer).

    .venv/bin/python -m bench.warc_readers [--quick] [--repeats 5] [--records 2000]

Needs the bench extra (`pip install -e '.[bench]'`: warcio, charset-normalizer). Prints
Markdown tables (docs/input.md quotes them). Single process, so every figure is per core.

Readers: each pass reads every record of a file and the whole payload of every record (the
least the job needs: it must see each record's type and headers, and read the HTML), with
- fastwarc: `ArchiveIterator(parse_http=True)`, payload from `record.reader`;
- warcio: `ArchiveIterator`, payload from `record.content_stream()` (HTTP headers parsed);
- job reader: `simhash_udf.files.warc.read_file` (FastWARC plus classification, damage checks and
  decoding to str: what one Spark task does per file).
The methods alternate within each repeat; the figure is the median of the repeats. MB/s is
MB (10^6 bytes) of the file as stored (compressed for .gz) and, in brackets, of the records
uncompressed. Inputs: the shared WARCs that both libraries read whole
(`../shared/data/web/warc`), and a synthetic WARC written with FastWARC to build/bench-warc/
(real pages of `../shared/data/web/aeb` as HTTP responses, each with a request record),
gzip per record and plain.

Detectors: the non-ASCII real pages of `../shared/data/web/readability` re-encoded in their
region's legacy encoding with their <meta charset> removed: share decoded back to the exact
page, and pages per second.
"""

from __future__ import annotations

import argparse
import gzip
import re
import statistics
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from bench.machine import cpu_model
from simhash_udf.files import encoding, warc

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "web"
BUILD = ROOT / "build" / "bench-warc"
SHARED_WHOLE = [
    "dupes.warc.gz", "example-extra.warc", "example-url-agnostic-orig.warc.gz",
    "example-url-agnostic-revisit.warc.gz", "example-wget-1-14.warc.gz", "example-wpull.warc.gz",
    "example.warc.gz", "example2.warc.gz", "httpbin-resource.warc.gz", "iana.warc.gz", "post-test.warc.gz",
]
# Real pages and the legacy encoding of their language (meta charset removed before encoding).
LEGACY = {
    "qq": "gbk", "gmw": "gb2312", "pixnet": "big5hkscs", "hukumusume": "shift_jis",
    "lemonde-1": "cp1252", "liberation-1": "cp1252", "folha": "cp1252", "la-nacion": "cp1252",
    "heise": "cp1252", "aktualne": "cp1250", "rtl-1": "cp1256", "rtl-2": "cp1255",
}
_META = re.compile(r"<meta[^>]*charset[^>]*>", re.IGNORECASE)


def read_fastwarc(path: Path) -> tuple[int, int]:
    from fastwarc.warc import ArchiveIterator

    records = payload = 0
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream, parse_http=True):
            records += 1
            payload += len(record.reader.read())
    return records, payload


def read_warcio(path: Path) -> tuple[int, int]:
    from warcio.archiveiterator import ArchiveIterator

    records = payload = 0
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream):
            records += 1
            payload += len(record.content_stream().read())
    return records, payload


def read_job(path: Path) -> tuple[int, int]:
    records = payload = 0
    for row in warc.read_file(str(path), "warc"):
        records += 1
        payload += len(row[6] or "")
    return records, payload


READERS: dict[str, Callable[[Path], tuple[int, int]]] = {
    "fastwarc": read_fastwarc, "warcio": read_warcio, "job reader (fastwarc)": read_job,
}


def write_warc(path: Path, records: Iterable[tuple[str, str, str, bytes]]) -> None:
    """Write WARC records with FastWARC: each (WARC-Type, target URI, WARC-Date, block), the
    block of a request or response being the whole HTTP message. One gzip member per record
    when the name ends in `.gz`."""
    from fastwarc.stream_io import GzipWriter
    from fastwarc.warc import WarcRecord, WarcRecordType

    gzipped = path.name.endswith(".gz")
    with open(path, "wb") as raw:
        for kind, url, date, block in records:
            out = GzipWriter(raw) if gzipped else raw
            record = WarcRecord()
            record.init_headers(record_type=getattr(WarcRecordType, kind), record_urn=f"uuid:{uuid.uuid4()}".encode())
            record.headers["WARC-Target-URI"] = url
            record.headers["WARC-Date"] = date
            message = "request" if kind == "request" else "response"
            record.headers["Content-Type"] = f"application/http; msgtype={message}"
            record.set_bytes_content(block)
            record.write(out)
            if gzipped:
                out.close()


def synthetic(records: int) -> list[Path]:
    """A gzip and a plain WARC of `records` HTML responses (and as many requests)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    gz, plain = BUILD / f"synthetic-{records}.warc.gz", BUILD / f"synthetic-{records}.warc"
    if gz.exists() and plain.exists():
        return [gz, plain]
    pages = [gzip.decompress(p.read_bytes()) for p in sorted((SHARED / "aeb" / "html").glob("*.html.gz"))]
    entries = []
    for i in range(records):
        body = pages[i % len(pages)].replace(b"</body>", f"<p>copy {i}</p></body>".encode(), 1)
        http = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "
                + str(len(body)).encode() + b"\r\n\r\n" + body)
        url = f"http://bench.example/{i}"
        entries.append(("request", url, "2024-03-01T00:00:00Z", b"GET / HTTP/1.1\r\nHost: bench.example\r\n\r\n"))
        entries.append(("response", url, "2024-03-01T00:00:01Z", http))
    write_warc(gz, entries)
    write_warc(plain, entries)
    return [gz, plain]


def measure(files: list[Path], repeats: int) -> dict[str, tuple[float, float, float, int]]:
    """reader -> (records/s, stored MB/s, uncompressed MB/s, records), medians of repeats."""
    stored = sum(f.stat().st_size for f in files)
    raw = sum(len(gzip.open(f).read()) if f.suffix == ".gz" else f.stat().st_size for f in files)
    times: dict[str, list[float]] = {name: [] for name in READERS}
    counts: dict[str, int] = {}
    for _ in range(repeats):
        for name, reader in READERS.items():
            start = time.perf_counter()
            counts[name] = sum(reader(f)[0] for f in files)
            times[name].append(time.perf_counter() - start)
    out = {}
    for name, values in times.items():
        t = statistics.median(values)
        out[name] = (counts[name] / t, stored / 1e6 / t, raw / 1e6 / t, counts[name])
    return out


def detectors(repeats: int) -> list[tuple[str, int, int, float]]:
    """(detector, pages decoded exactly, pages, pages/s)."""
    import charset_normalizer

    pages = []
    for name, codec in LEGACY.items():
        source = SHARED / "readability" / "test-pages" / name / "source.html"
        if source.exists():
            html = _META.sub("", source.read_text(encoding="utf-8"))
            raw = html.encode(codec, errors="xmlcharrefreplace")
            pages.append((raw, raw.decode(codec)))

    def uchardet(raw: bytes) -> str:
        return encoding.detect(raw)

    def normalizer(raw: bytes) -> str:
        best = charset_normalizer.from_bytes(raw).best()
        return best.encoding if best else "utf-8"

    rows = []
    for name, detect in (("uchardet (resiliparse)", uchardet), ("charset-normalizer", normalizer)):
        right = sum(raw.decode(detect(raw), errors="replace") == text for raw, text in pages)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            for raw, _ in pages:
                detect(raw)
            times.append(time.perf_counter() - start)
        rows.append((name, right, len(pages), len(pages) / statistics.median(times)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer records and repeats")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--records", type=int, default=2000, help="HTML responses in the synthetic WARC")
    args = parser.parse_args()
    repeats, records = (2, 500) if args.quick else (args.repeats, args.records)
    print(f"CPU: {cpu_model()}; one process; medians of {repeats} repeats\n")
    inputs = {"shared WARCs (11 files)": [SHARED / "warc" / n for n in SHARED_WHOLE]}
    gz, plain = synthetic(records)
    inputs[f"synthetic {gz.name} ({gz.stat().st_size / 1e6:.0f} MB)"] = [gz]
    inputs[f"synthetic {plain.name} ({plain.stat().st_size / 1e6:.0f} MB)"] = [plain]
    print("| input | reader | records | records/s | MB/s stored (uncompressed) | vs warcio |")
    print("|---|---|---:|---:|---:|---:|")
    for label, files in inputs.items():
        results = measure(files, repeats)
        base = results["warcio"][0]
        for name, (rps, mbs, raw_mbs, n) in results.items():
            print(f"| {label} | {name} | {n:,} | {rps:,.0f} | {mbs:.1f} ({raw_mbs:.1f}) | {rps / base:.1f}x |")
    print("\n| detector | pages decoded exactly | pages/s |")
    print("|---|---:|---:|")
    for name, right, total, pps in detectors(repeats):
        print(f"| {name} | {right} of {total} | {pps:,.0f} |")


if __name__ == "__main__":
    main()

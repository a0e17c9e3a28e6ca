"""WARC/WET input (`--format warc|wet`): the real job on real and written WARC files.

Expected counts come from warcio (the other WARC library) or from the offsets the test
writes, never from the job's own reader (FastWARC).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from generators import write_warc_records
from warcio.archiveiterator import ArchiveIterator as WarcioIterator

from simhash_udf.files import encoding, warc

WARC_DIR = "web/warc"
# Shared files every WARC reader reads to the end without complaint.
CLEAN = [
    "dupes.warc.gz", "example-extra.warc", "example-url-agnostic-orig.warc.gz",
    "example-url-agnostic-revisit.warc.gz", "example-wget-1-14.warc.gz", "example-wpull.warc.gz",
    "example.warc.gz", "example2.warc.gz", "httpbin-resource.warc.gz", "iana.warc.gz", "post-test.warc.gz",
]
HTML = ("text/html", "application/xhtml+xml")


def warcio_reason(record) -> str:
    """What the job should make of a record, decided from warcio's parse."""
    kind = record.rec_type
    if kind == "revisit":
        return "revisit"
    if kind != "response":
        return f"{kind}_record"
    if record.http_headers is None:
        return "not_http"
    content_type = record.http_headers.get_header("Content-Type")
    if content_type is None:
        head = record.content_stream().read(1024).lstrip().lower()
        return "document" if head.startswith((b"<!doctype html", b"<html")) else "non_html"
    return "document" if content_type.split(";")[0].strip().lower() in HTML else "non_html"


def warcio_records(path: Path) -> list[tuple[str, str, str | None, str | None]]:
    """(reason, record id, url, date) of every record, read with warcio."""
    out = []
    with open(path, "rb") as stream:
        for record in WarcioIterator(stream):
            h = record.rec_headers
            out.append((warcio_reason(record), h.get_header("WARC-Record-ID"),
                        h.get_header("WARC-Target-URI"), h.get_header("WARC-Date")))
    return out


def run_job(dedupe_main, spark, input_path: Path, output: Path, *extra: str) -> dict:
    assert dedupe_main(["--input", str(input_path), "--output", str(output), *extra], spark=spark) == 0
    return json.loads((output / "report.json").read_text())


def page(title: str, words: str) -> bytes:
    head = f"<!doctype html><html><head><title>{title}</title></head>"
    return f"{head}<body><article><h1>{title}</h1><p>{words}</p></article></body></html>".encode()


def http_response(body: bytes, content_type: str = "text/html; charset=utf-8", status: str = "200 OK") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


def synthetic_pages(n: int, seed: str) -> list[tuple[str, str, str, bytes]]:
    """n different HTML pages of a few sentences each, as `generators.write_warc_records` takes them."""
    words = ["river", "market", "council", "winter", "harbour", "garden", "station", "library", "bridge", "festival",
             "orchard", "museum", "factory", "island", "forest", "valley", "theatre", "airport", "school", "castle"]
    records = []
    for i in range(n):
        text = " ".join(f"{words[(i * 7 + j * 3) % 20]}{seed}{(i * 31 + j) % 97}" for j in range(60))
        records.append(("response", f"http://{seed}.example/{i}", f"2024-03-{1 + i % 28:02d}T10:00:00Z",
                        http_response(page(f"{seed} page {i}", text))))
        records.append(("request", f"http://{seed}.example/{i}", "2024-03-01T10:00:00Z", b"GET / HTTP/1.1\r\n\r\n"))
    return records


def member_spans(path: Path) -> list[tuple[str, str, int, int]]:
    """(reason, id, offset, end) of every record of a whole file, offsets in the file's bytes
    (gzip members for .gz), from warcio."""
    spans = []
    with open(path, "rb") as stream:
        it = WarcioIterator(stream)
        for record in it:
            reason = warcio_reason(record)
            record_id = record.rec_headers.get_header("WARC-Record-ID")
            it.read_to_end(record)
            offset = it.get_record_offset()
            spans.append((reason, record_id, offset, offset + it.get_record_length()))
    return spans


@pytest.mark.spark
@pytest.mark.slow
def test_shared_warcs_counts_by_reason_and_sources(spark, shared_data, dedupe_main, tmp_path):
    """The shared WARCs every library reads whole: the job's documents and its counts by
    reason equal warcio's; url and fetch_time reach clusters/ and deduped/; iana.warc.gz
    gives its 20 distinct pages and its revisits are skipped."""
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    expected: Counter = Counter()
    sources: dict[str, set] = {}
    copies: Counter = Counter()
    iana_urls = set()
    for name in CLEAN:
        shutil.copy(shared_data / WARC_DIR / name, crawl / name)
        for reason, record_id, url, date in warcio_records(crawl / name):
            expected[reason] += 1
            if reason == "document":
                # Some sample files share record ids (copies of one capture): the job keeps
                # one row of each id and rejects the others as duplicate_id.
                sources.setdefault(record_id, set()).add((url, date))
                copies[record_id] += 1
                if name == "iana.warc.gz":
                    iana_urls.add(url)
    report = run_job(dedupe_main, spark, crawl, tmp_path / "out", "--format", "warc")

    assert report["records"]["by_reason"] == dict(expected)
    assert report["counts"]["damaged_files"] == 0 and report["records"]["skipped_files"] == []
    assert len(iana_urls) == 20 and expected["revisit"] > 100
    clusters = spark.read.parquet(str(tmp_path / "out" / "clusters")).collect()
    assert {r["id"] for r in clusters} == set(sources)
    assert all((r["url"], r["fetch_time"]) in sources[r["id"]] for r in clusters)
    repeated = sum(n - 1 for n in copies.values())
    assert report["counts"]["rejected_rows"] == ({"duplicate_id": repeated} if repeated else {})
    deduped = spark.read.parquet(str(tmp_path / "out" / "deduped")).collect()
    kept = {r["id"]: (r["url"], r["fetch_time"]) for r in clusters if r["status"] == "kept"}
    assert {r["id"]: (r["url"], r["fetch_time"]) for r in deduped} == kept and kept
    # The HTML path applied (deduped keeps the page as read: HTML), and iana's pages were
    # fingerprinted as pages, not skipped.
    assert all("<" in r["text"] for r in deduped)
    assert report["counts"]["documents"] == len(sources) == expected["document"] - repeated


@pytest.mark.spark
@pytest.mark.slow
def test_damaged_files_beside_good_ones_lose_no_good_record(spark, shared_data, dedupe_main, tmp_path):
    """A truncated gzip, a gzip with garbage in one member, the shared damaged files and an
    ARC file beside a whole WARC: every good record is a document, each damaged file is named
    with a reason, the ARC file is skipped with its reason, and the job does not fail."""
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    whole = crawl / "whole.warc.gz"
    write_warc_records(whole, synthetic_pages(12, "whole"))
    expected = {i for r, i, _, _ in member_spans(whole) if r == "document"}

    cut_source = tmp_path / "cut-source.warc.gz"
    write_warc_records(cut_source, synthetic_pages(12, "cut"))
    data = cut_source.read_bytes()
    # In the middle of the member at three fifths of the file (not in its last bytes, which
    # hold no payload: see test_every_cut_keeps_the_records_before_it_and_is_named).
    inside = next(s for s in member_spans(cut_source) if s[2] <= len(data) * 3 // 5 < s[3])
    cut = (inside[2] + inside[3]) // 2
    (crawl / "truncated.warc.gz").write_bytes(data[:cut])
    expected |= {i for r, i, _, end in member_spans(cut_source) if r == "document" and end <= cut}

    garbled_source = tmp_path / "garbled-source.warc.gz"
    write_warc_records(garbled_source, synthetic_pages(12, "garbled"))
    spans = member_spans(garbled_source)
    hit = [s for s in spans if s[0] == "document"][5]  # garbage in the middle of the 6th page
    middle = (hit[2] + hit[3]) // 2
    garbled = bytearray(garbled_source.read_bytes())
    garbled[middle:middle + 40] = b"\x00" * 40
    (crawl / "garbled.warc.gz").write_bytes(bytes(garbled))
    expected |= {i for r, i, _, _ in spans if r == "document" and i != hit[1]}

    for name in ("missing-status-text.warc", "example-bad.warc.gz.bad", "bad.arc"):
        shutil.copy(shared_data / WARC_DIR / name, crawl / name)
    # example-bad is one gzip stream around every record (warcio refuses it): its records,
    # read from the decompressed bytes, must all be kept.
    plain_bad = tmp_path / "example-bad.warc"
    plain_bad.write_bytes(gzip.decompress((crawl / "example-bad.warc.gz.bad").read_bytes()))
    expected |= {i for r, i, _, _ in warcio_records(plain_bad) if r == "document"}

    report = run_job(dedupe_main, spark, crawl, tmp_path / "out", "--format", "warc")

    clusters = spark.read.parquet(str(tmp_path / "out" / "clusters")).collect()
    assert {r["id"] for r in clusters} == expected
    damaged = {Path(d["path"]).name: d["reason"] for d in report["damaged_files"]}
    assert set(damaged) == {"truncated.warc.gz", "garbled.warc.gz", "missing-status-text.warc"}
    assert all(damaged.values())
    assert [Path(f["path"]).name for f in report["records"]["skipped_files"]] == ["bad.arc"]
    by_reason = report["records"]["by_reason"]
    assert by_reason["document"] == len(expected)
    assert by_reason["damaged_record"] >= 3 and by_reason["arc_file"] == 1


@pytest.mark.slow
@pytest.mark.spark
def test_wet_input_plain_text_documents(spark, dedupe_main, tmp_path):
    """WET (inferred from .wet.gz): one document per conversion record, its plain text; the
    warcinfo record is counted; two copies of a text are exact duplicates."""
    text = "The council met on Tuesday to discuss the new harbour bridge and the winter festival. " * 5
    other = "A completely different report about the museum, the orchard and the island school. " * 5
    records = [("warcinfo", "", "2024-03-01T00:00:00Z", b"software: test\r\n")]
    records += [("conversion", f"http://w.example/{i}", f"2024-03-0{i + 1}T00:00:00Z", t.encode())
                for i, t in enumerate([text, text, other])]
    path = tmp_path / "crawl.warc.wet.gz"
    write_warc_records(path, records)
    report = run_job(dedupe_main, spark, path, tmp_path / "out")
    assert report["records"]["by_reason"] == {"document": 3, "warcinfo_record": 1}
    clusters = {r["url"]: r for r in spark.read.parquet(str(tmp_path / "out" / "clusters")).collect()}
    copies = [clusters["http://w.example/0"], clusters["http://w.example/1"]]
    assert sorted(r["status"] for r in copies) == ["exact_duplicate", "kept"]
    assert copies[0]["cluster_id"] == copies[1]["cluster_id"] != clusters["http://w.example/2"]["cluster_id"]
    assert clusters["http://w.example/0"]["fetch_time"] == "2024-03-01T00:00:00Z"
    deduped = spark.read.parquet(str(tmp_path / "out" / "deduped")).collect()
    assert sorted(r["text"] for r in deduped) == sorted([text, other])


CHINESE = [("qq", "gbk"), ("gmw", "gb2312"), ("pixnet", "big5")]
# The bytes are written with the codec browsers decode each label with (WHATWG: GBK and
# GB2312 are GB18030, Big5 is Big5-HKSCS); Python's own "big5" puts Japanese kana at code
# points HKSCS gives to Han characters, which no browser would show as kana.
WRITE_CODEC = {"gbk": "gbk", "gb2312": "gb2312", "big5": "big5hkscs"}
_META = re.compile(r"<meta[^>]*charset[^>]*>", re.IGNORECASE)


def encoded_pages(shared_data: Path) -> list[tuple[str, str, str, bytes]]:
    """Every Chinese test page re-encoded: (name, variant, what it should decode to, bytes)."""
    out = []
    for name, codec in CHINESE:
        source = (shared_data / "web/readability/test-pages" / name / "source.html").read_text(encoding="utf-8")
        html = _META.sub("", source)
        raw = html.encode(WRITE_CODEC[codec], errors="xmlcharrefreplace")
        out.append((name, "header", raw.decode(WRITE_CODEC[codec]), raw))
        meta = f'<meta http-equiv="Content-Type" content="text/html; charset={codec}">'
        with_meta = re.sub(r"<head\b[^>]*>", lambda m: m.group(0) + meta, html, count=1, flags=re.IGNORECASE)
        assert with_meta != html
        raw_meta = with_meta.encode(WRITE_CODEC[codec], errors="xmlcharrefreplace")
        out.append((name, "meta", raw_meta.decode(WRITE_CODEC[codec]), raw_meta))
        out.append((name, "none", raw.decode(WRITE_CODEC[codec]), raw))
    return out


def test_chinese_pages_decode_from_header_meta_or_detection(shared_data, tmp_path):
    """GBK, GB2312 and Big5 pages in WARC records (written with FastWARC): the text read is
    the page, whether the charset is in the HTTP header, only in <meta>, or nowhere."""
    pages = encoded_pages(shared_data)
    records = []
    for name, variant, _, raw in pages:
        codec = dict(CHINESE)[name]
        content_type = f"text/html; charset={codec}" if variant == "header" else "text/html"
        url = f"http://{name}.example/{variant}"
        records.append(("response", url, "2024-03-01T00:00:00Z", http_response(raw, content_type)))
    path = tmp_path / "chinese.warc.gz"
    write_warc_records(path, records)
    rows = [r for r in warc.read_file(str(path), "warc") if r[warc.SCHEMA.fieldNames().index(warc.SKIP_COLUMN)] is None]
    assert len(rows) == len(pages)
    names = warc.SCHEMA.fieldNames()
    for (name, variant, expected, _), row in zip(pages, rows, strict=True):
        got = dict(zip(names, row, strict=True))
        assert got["charset_source"] == {"header": "http", "meta": "meta", "none": "detected"}[variant], (name, variant)
        # Big5-HKSCS and GB18030 are the supersets browsers use: the page's characters all
        # decode the same way as with the codec it was written in.
        assert got["text"] == expected, (name, variant, got["charset"])
        assert "\ufffd" not in got["text"]


def test_charset_order_and_labels():
    """BOM, then HTTP, then <meta>, then detection; WHATWG labels (latin1 is windows-1252)."""
    body = '<meta charset="gbk"><p>中文内容，这是一个测试页面。</p>'.encode("gbk")
    assert encoding.choose_encoding(body, "big5")[1] == "http"
    assert encoding.choose_encoding(body, None) == ("gb18030", "meta")
    assert encoding.choose_encoding(body, "no-such-charset") == ("gb18030", "meta")
    assert encoding.choose_encoding(b"\xef\xbb\xbf" + body, "gbk")[1] == "bom"
    assert encoding.charset_label("ISO-8859-1") == "cp1252"
    assert encoding.content_type_charset('text/html; Charset="GB2312"') == "GB2312"
    assert encoding.decode_html("é".encode("utf-8"), None)[0] == "é"


def test_pages_with_bytes_invalid_in_their_charset_are_read_and_flagged(tmp_path):
    """A record whose HTML has bytes its declared charset cannot decode is a document (never
    an error), flagged `_invalid_bytes`; valid pages are not. The oracle is Python's strict
    decoder for the declared charset."""
    pages = [
        ("utf-8", "<html><p>café au lait</p></html>".encode()),
        ("utf-8", b"<html><p>caf\xff au lait</p></html>"),
        ("shift_jis", "<html><p>港の新しいターミナル</p></html>".encode("shift_jis")),
        ("shift_jis", "<html><p>港の新しいターミナル</p></html>".encode("shift_jis") + b"\x82 "),
        ("gbk", "<html><p>中文内容</p></html>".encode("gbk") + b"\x81"),
        (None, b"<html><p>no charset, valid</p></html>"),
    ]
    records = [
        ("response", f"http://bad.example/{i}", "2024-03-01T00:00:00Z",
         http_response(body, f"text/html; charset={charset}" if charset else "text/html"))
        for i, (charset, body) in enumerate(pages)
    ]
    path = tmp_path / "bad-bytes.warc"
    write_warc_records(path, records)
    rows = [dict(zip(warc.SCHEMA.fieldNames(), row)) for row in warc.read_file(str(path), "warc")]
    assert [r["url"] for r in rows] == [url for _, url, _, _ in records]

    def strict(body: bytes, charset: str | None) -> bool:
        try:
            body.decode(charset or "utf-8")
        except UnicodeDecodeError:
            return False
        return True

    assert [r[warc.INVALID_BYTES_COLUMN] for r in rows] == [not strict(b, c) for c, b in pages]
    assert all(r[warc.SKIP_COLUMN] is None and r["text"] for r in rows)
    # What is valid is read exactly; a bad UTF-8 byte costs that byte only.
    assert rows[0]["text"] == pages[0][1].decode() and rows[2]["text"] == pages[2][1].decode("shift_jis")
    assert "au lait" in rows[1]["text"] and "caf" in rows[1]["text"]


@pytest.mark.spark
@pytest.mark.slow
def test_chinese_encodings_through_the_job(spark, shared_data, dedupe_main, tmp_path):
    """The three encodings of each page (header, meta, detected) are one page to the job:
    exact duplicates of one another, and never of another site's page."""
    records = []
    for name, variant, _, raw in encoded_pages(shared_data):
        codec = dict(CHINESE)[name]
        content_type = f"text/html; charset={codec}" if variant == "header" else "text/html"
        url = f"http://{name}.example/{variant}"
        records.append(("response", url, "2024-03-01T00:00:00Z", http_response(raw, content_type)))
    path = tmp_path / "chinese.warc"
    write_warc_records(path, records)
    run_job(dedupe_main, spark, path, tmp_path / "out", "--extract", "all")
    clusters = spark.read.parquet(str(tmp_path / "out" / "clusters")).collect()
    by_site = {}
    for r in clusters:
        by_site.setdefault(r["url"].split("//")[1].split(".")[0], set()).add(r["cluster_id"])
    assert all(len(ids) == 1 for ids in by_site.values()), by_site
    assert len({next(iter(ids)) for ids in by_site.values()}) == 3
    assert Counter(r["status"] for r in clusters) == {"kept": 3, "exact_duplicate": 6}


def read_rows(path: Path, fmt: str = "warc") -> list[dict]:
    names = warc.SCHEMA.fieldNames()
    return [dict(zip(names, row, strict=True)) for row in warc.read_file(str(path), fmt)]


@pytest.mark.parametrize("suffix", [".warc.gz", ".warc"])
def test_every_cut_keeps_the_records_before_it_and_is_named(tmp_path, suffix):
    """A file cut at any of many offsets: exactly the documents whose records end before the
    cut (warcio's offsets in the whole file) are read, and the cut is reported unless only
    blank bytes after the last whole record were lost."""
    whole = tmp_path / f"whole{suffix}"
    write_warc_records(whole, synthetic_pages(6, "cut"))
    spans = member_spans(whole)
    with open(whole, "rb") as stream:
        pages = {r.rec_headers.get_header("WARC-Record-ID"): r.content_stream().read().decode()
                 for r in WarcioIterator(stream) if r.rec_type == "response"}
    data = whole.read_bytes()
    for cut in range(1, len(data), max(1, len(data) // 60)):
        part = tmp_path / f"part{suffix}"
        part.write_bytes(data[:cut])
        rows = read_rows(part)
        documents = {r["id"] for r in rows if r[warc.SKIP_COLUMN] is None}
        required = {i for reason, i, _, end in spans if reason == "document" and end <= cut}
        # A record that lost only what follows its payload (the closing CRLF CRLF, a gzip
        # member's trailer) may be read too, but only whole: never half a page.
        assert required <= documents, cut
        assert all(r["text"] == pages[r["id"]] for r in rows if r[warc.SKIP_COLUMN] is None), cut
        damaged = [r for r in rows if r[warc.SKIP_COLUMN] == warc.DAMAGED_RECORD]
        ends = [end for _, _, _, end in spans if end <= cut]
        only_blank_lost = bool(ends) and not data[max(ends):cut].strip(b"\r\n") and (
            cut in ends or suffix == ".warc")
        assert damaged or only_blank_lost, cut


def test_garbage_inside_a_plain_warc_loses_only_the_record_it_hits(tmp_path):
    """Bytes overwritten in the middle of one record of a plain WARC: the reader resumes at the
    next `WARC/1.` line; every other document is read."""
    whole = tmp_path / "whole.warc"
    write_warc_records(whole, synthetic_pages(8, "garbage"))
    spans = member_spans(whole)
    hit = [s for s in spans if s[0] == "document"][3]
    data = bytearray(whole.read_bytes())
    # Into the record's WARC header: its Content-Length no longer parses. (Garbage over its
    # WARC-Type line would make it a record of unknown type, counted as `unknown_record`.)
    length = data.index(b"Content-Length:", hit[2]) + len(b"Content-Length:")
    data[length:length + 4] = b" ###"
    broken = tmp_path / "broken.warc"
    broken.write_bytes(bytes(data))
    rows = read_rows(broken)
    documents = {r["id"] for r in rows if r[warc.SKIP_COLUMN] is None}
    assert documents == {i for reason, i, _, _ in spans if reason == "document" and i != hit[1]}
    assert sum(r[warc.SKIP_COLUMN] == warc.DAMAGED_RECORD for r in rows) >= 1


def test_a_file_is_streamed_not_loaded(tmp_path):
    """Reading a 120 MB WARC (in a fresh process) raises its peak memory by far less than the
    file's size: records are streamed one at a time."""
    import subprocess
    import sys

    body = http_response(page("big", "word " * 20_000))  # ~100 kB a page
    path = tmp_path / "big.warc"
    write_warc_records(path, [("response", f"http://big.example/{i}", "2024-03-01T00:00:00Z", body)
                                   for i in range(1200)])
    size_mb = path.stat().st_size / 2**20
    assert size_mb > 100
    script = (
        "import resource, sys\n"
        "from simhash_udf.files.warc import read_file\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "n = sum(r[7] is None for r in read_file(sys.argv[1], 'warc'))\n"
        "print(n, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True)
    documents, grown_mb = out.stdout.split()
    assert int(documents) == 1200
    assert float(grown_mb) < 40 < size_mb / 2, (grown_mb, size_mb)

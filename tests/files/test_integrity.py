"""simhash_udf.files.integrity against the real libraries' own reading (no Spark).

The oracle of "whole" is Python's gzip.GzipFile, bz2.BZ2File, zlib's decompressor and
pyarrow's Parquet reader: a file the check calls whole must read to its end with them, and a
file it calls damaged must fail with them. Files are cut at every byte (small files) or at
many points (a file that decompresses to more than the check's 1 MiB output piece), and
single bytes are flipped.
"""

from __future__ import annotations

import bz2
import gzip
import io
import random
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simhash_udf.files import integrity

WORDS = ["harbour", "terminal", "crane", "dredging", "contract", "rail", "depot", "fees", "port", "coast"]


def payload(seed: int, n_words: int) -> bytes:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(n_words)).encode()


def compress(codec: str, data: bytes) -> bytes:
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "bzip2":
        return bz2.compress(data)
    return zlib.compress(data)


def library_reads_to_the_end(codec: str, data: bytes) -> bool:
    """Whether the codec's Python library decompresses `data` without an error (zlib: and no
    bytes after the end of its one stream). Python's bz2 stops silently at a later stream it
    cannot read, so bzip2 files with a damaged second stream are tested on their own below."""
    try:
        if codec == "gzip":
            gzip.GzipFile(fileobj=io.BytesIO(data)).read()
        elif codec == "bzip2":
            bz2.decompress(data)
        else:
            decompressor = zlib.decompressobj()
            decompressor.decompress(data)
            return decompressor.eof and not decompressor.unused_data or not data
    except (OSError, EOFError, ValueError, zlib.error):
        return False
    return True


def small_file(codec: str, members: int = 2) -> bytes:
    """gzip and bzip2: `members` concatenated members (Hadoop reads them one after the other);
    zlib (.deflate) has a single stream."""
    if codec == "zlib":
        return compress(codec, payload(1, 60))
    return b"".join(compress(codec, payload(seed, 40 - 10 * seed)) for seed in range(1, members + 1))


CODECS = ["gzip", "bzip2", "zlib"]


@pytest.mark.parametrize("codec", CODECS)
def test_every_cut_of_a_small_file_is_damaged_exactly_when_the_library_fails(codec: str) -> None:
    data = small_file(codec)
    verdicts = []
    for cut in range(len(data) + 1):
        piece = data[:cut]
        damage = integrity.compression_damage(codec, piece)
        assert (damage is None) == library_reads_to_the_end(codec, piece), (cut, damage)
        verdicts.append(damage is None)
    # Whole at 0 bytes (an empty file), at the member boundary (gzip, bzip2) and at the end;
    # the library agreeing on every other cut means damaged there.
    assert verdicts[0] and verdicts[-1]
    assert verdicts.count(True) == (2 if codec == "zlib" else 3)


@pytest.mark.parametrize(("codec", "members"), [("gzip", 2), ("bzip2", 1), ("zlib", 1)])
def test_every_flipped_byte_of_a_small_file_is_judged_as_the_library_reads_it(codec: str, members: int) -> None:
    data = small_file(codec, members)
    # gzip: each member's flag byte (its 4th): 0x41 sets a reserved bit, which zlib refuses
    # (as RFC 1952 asks) and Python's gzip ignores; asserted on its own below.
    flag_bytes = {3, len(small_file("gzip", 1)) + 3} if codec == "gzip" else set()
    damaged = 0
    for position in range(len(data)):
        if position in flag_bytes:
            continue
        changed = bytearray(data)
        changed[position] ^= 0x41
        damage = integrity.compression_damage(codec, bytes(changed))
        assert (damage is None) == library_reads_to_the_end(codec, bytes(changed)), (position, damage)
        damaged += damage is not None
    # Checksums catch almost every flip (gzip's header mtime and OS bytes are not covered).
    assert damaged > len(data) * 0.8


@pytest.mark.parametrize("codec", CODECS)
def test_a_file_larger_than_the_output_piece_is_checked_to_its_end(codec: str) -> None:
    """More than 1 MiB decompressed: the check reads it in capped pieces."""
    original = payload(3, 120_000)
    assert len(original) > 1 << 20
    data = compress(codec, original)
    assert integrity.compression_damage(codec, data) is None
    assert library_reads_to_the_end(codec, data)
    rng = random.Random(4)
    for cut in sorted(rng.sample(range(1, len(data)), 8)):
        damage = integrity.compression_damage(codec, data[:cut])
        assert damage is not None and not library_reads_to_the_end(codec, data[:cut]), cut
        assert damage.startswith(f"truncated {codec} stream"), damage


def test_a_damaged_second_bzip2_stream_is_damage() -> None:
    """Hadoop reads every stream of a .bz2; Python's bz2 stops silently at one it cannot read,
    so the oracle here is the second stream read on its own."""
    first, second = compress("bzip2", payload(1, 40)), bytearray(compress("bzip2", payload(2, 30)))
    second[len(second) // 2] ^= 0x41
    assert not library_reads_to_the_end("bzip2", bytes(second))
    damage = integrity.compression_damage("bzip2", first + bytes(second))
    assert damage is not None and damage.startswith("corrupt bzip2 data after"), damage


def test_reserved_gzip_header_flags_are_damage() -> None:
    data = bytearray(small_file("gzip"))
    data[3] |= 0x40  # RFC 1952: "reserved FLG bits must be zero"
    assert integrity.compression_damage("gzip", bytes(data)) is not None


def test_an_empty_file_is_whole_in_every_codec() -> None:
    """Spark reads no row from an empty compressed file, and fails on none."""
    for codec in CODECS:
        assert integrity.compression_damage(codec, b"") is None


def test_gzip_zero_padding_is_whole_and_garbage_after_it_is_not() -> None:
    data = small_file("gzip")
    padded = data + bytes(512)
    assert integrity.compression_damage("gzip", padded) is None
    assert library_reads_to_the_end("gzip", padded)
    garbage = data + b"not gzip"
    assert integrity.compression_damage("gzip", garbage) is not None
    assert not library_reads_to_the_end("gzip", garbage)


def test_bytes_that_are_not_compressed_at_all_are_named_as_such() -> None:
    for codec in CODECS:
        damage = integrity.compression_damage(codec, b'{"id": 1, "text": "plain json"}\n')
        assert damage is not None and damage.startswith(f"not {codec} data"), damage


@pytest.mark.parametrize(
    ("name", "codec"),
    [
        ("part-0.json.gz", "gzip"), ("A.JSONL.GZ", "gzip"), ("x.txt.bz2", "bzip2"), ("x.csv.deflate", "zlib"),
        # Hadoop's own framings are not checked here: read strictly.
        ("x.json.zst", None), ("x.json.lz4", None), ("x.json.snappy", None), ("x.json", None), ("gz", None),
    ],
)
def test_codec_of_a_file_name(name: str, codec: str | None) -> None:
    assert integrity.codec_of(name) == codec


# -- Parquet ------------------------------------------------------------------------------
def parquet_bytes() -> bytes:
    table = pa.table({"id": list(range(300)), "text": [f"document {i} " * 5 for i in range(300)]})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=100)
    return sink.getvalue()


def pyarrow_reads(data: bytes) -> bool:
    try:
        pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError, ValueError):
        return False
    return True


def framing_damage(data: bytes) -> str | None:
    return integrity.parquet_damage(len(data), data[:4], data[-4:] if len(data) >= 4 else b"")


def test_a_whole_parquet_file_passes_and_every_cut_of_it_fails_as_in_pyarrow() -> None:
    data = parquet_bytes()
    assert framing_damage(data) is None and pyarrow_reads(data)
    cuts = list(range(0, 64)) + list(range(64, len(data), 97)) + list(range(len(data) - 64, len(data)))
    for cut in cuts:
        piece = data[:cut]
        assert not pyarrow_reads(piece), cut
        assert framing_damage(piece) is not None, cut


def test_parquet_reasons_name_what_is_missing() -> None:
    data = parquet_bytes()
    assert framing_damage(b"").startswith("empty file")
    assert "too short" in framing_damage(data[:8])
    assert "no PAR1 magic at the start" in framing_damage(b'{"id": 1, "text": "json, not parquet"}')
    assert "footer is missing" in framing_damage(data[: len(data) // 2])

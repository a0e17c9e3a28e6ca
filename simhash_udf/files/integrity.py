"""Is an input file whole? Pure checks of compressed streams and Parquet files.

Spark fails a whole job on a truncated or corrupt compressed file (an EOFException deep in a
task), and its `ignoreCorruptFiles` option keeps the rows read before the damage but says
nothing about which file was damaged. These checks name the damaged files up front, so the
reader (`inputs.read_input_files`) can read only those leniently and the report can list
them.
"""

from __future__ import annotations

import bz2
import zlib

# Compressed formats Hadoop reads that can be verified here (suffix -> format). Other codecs
# (.zst, .lz4, .snappy: Hadoop's own framing) are read as they are, strictly.
CHECKED_CODECS = {".gz": "gzip", ".bz2": "bzip2", ".deflate": "zlib"}
_CHUNK = 1 << 20
PARQUET_MAGIC = b"PAR1"


def codec_of(name: str) -> str | None:
    """The checkable compression format of a file name, or None."""
    lower = name.lower()
    for suffix, codec in CHECKED_CODECS.items():
        if lower.endswith(suffix):
            return codec
    return None


def _new_decompressor(codec: str):  # zlib/bz2 decompressor objects have no public type
    if codec == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if codec == "zlib":
        return zlib.decompressobj(zlib.MAX_WBITS)
    return bz2.BZ2Decompressor()


def _pending(decompressor) -> bytes | None:
    """Input the decompressor holds back because its output was capped; None when it wants more."""
    if isinstance(decompressor, bz2.BZ2Decompressor):
        return None if decompressor.needs_input else b""
    return decompressor.unconsumed_tail or None


def compression_damage(codec: str, data: bytes) -> str | None:
    """Why `data` (a whole file in `codec`) does not decompress to its end, or None if it does.

    Concatenated members (gzip, bzip2) are read one after another as Hadoop does; an empty
    file is whole (Spark reads no row from it). Checksums are verified by zlib and bz2.
    Output is produced and dropped in bounded pieces: a file that decompresses to gigabytes
    is checked in constant memory (besides `data` itself).
    """
    view = memoryview(data)
    position, decompressed, members = 0, 0, 0
    while position < len(view):
        if members and (codec == "zlib" or not any(view[position:])):
            if codec == "zlib":
                return f"{len(view) - position:,} bytes of garbage after the end of the zlib stream"
            return None  # zero padding after the last member (some writers pad blocks) is harmless
        decompressor = _new_decompressor(codec)
        members += 1
        try:
            while not decompressor.eof:
                buffer = _pending(decompressor)
                if buffer is None:
                    if position >= len(view):
                        return (
                            f"truncated {codec} stream: the file ends after {decompressed:,} "
                            "decompressed bytes, in the middle of the data"
                        )
                    buffer = view[position : position + _CHUNK]
                    position += len(buffer)
                decompressed += len(decompressor.decompress(buffer, _CHUNK))
        except (zlib.error, OSError, EOFError, ValueError) as error:
            if members == 1 and decompressed == 0:
                return f"not {codec} data ({error})"
            return f"corrupt {codec} data after {decompressed:,} decompressed bytes ({error})"
        position -= len(decompressor.unused_data)
    return None


def parquet_damage(size: int, head: bytes, tail: bytes) -> str | None:
    """Why a file of `size` bytes starting with `head` and ending with `tail` (4 bytes each)
    cannot be Parquet, or None if it can be (only the framing is checked: a file whose pages
    are corrupt inside still fails the read)."""
    if size == 0:
        return "empty file (0 bytes), not Parquet"
    if size < 12:
        return f"{size} bytes: too short to be Parquet"
    if head != PARQUET_MAGIC:
        return "not a Parquet file (no PAR1 magic at the start)"
    if tail != PARQUET_MAGIC:
        return "truncated Parquet file (no PAR1 magic at the end: the footer is missing)"
    return None

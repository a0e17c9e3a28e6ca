"""Every text of a set fingerprinted under several settings, spread over worker processes,
with the library's pure `fingerprints` / `signatures` (no Spark); and the software those
figures depend on.

A `Setting` is one way of turning text into features (tokenizer, n-gram, weighting), and
optionally the shingle sizes of the MinHash sketches to make beside the fingerprint. Each
setting fingerprints every text once with min_features=1: whether a text has a fingerprint at
another min_features is `n_features >= min_features` (bench/tune_defaults.py checks that
shortcut against the library at the start of every run). Likewise sketches are made with
min_chars=1: whether a text has one at another min_chars is `len(text) >= min_chars`
(tests/bench/test_job_rule.py checks that shortcut against `signatures`).
"""

from __future__ import annotations

import multiprocessing
import platform
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bench.machine import package_versions
from simhash_udf.core.config import FingerprintConfig, SketchConfig
from simhash_udf.core.fingerprint import fingerprints, signatures

CHUNK_TEXTS = 4_000  # texts per fingerprinting task (bounds memory, balances the pool)
FINGERPRINT_PACKAGES = ("jieba", "opencc", "selectolax", "xxhash")


@dataclass(frozen=True)
class Setting:
    """One way of turning text into features: what the first sweep compares.

    sketch_shingles: shingle sizes (tokens) of the sketches made beside the fingerprint
    (`SketchConfig.size` values each); none by default.
    """

    tokenizer: str
    ngram: int
    weighting: str
    sketch_shingles: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """Short name used in the tables, e.g. `auto-2 tf`."""
        return f"{self.tokenizer}-{self.ngram} {self.weighting}"

    def config(self, min_features: int = 1) -> FingerprintConfig:
        """The library's config for this setting."""
        return FingerprintConfig(
            tokenizer=self.tokenizer,
            ngram=self.ngram,
            weighting=self.weighting,
            min_features=min_features,
        )


_WORKER_TEXTS: list[str] = []  # set before the pool forks; workers read it, never pickle it


def sketch_config(shingle: int) -> SketchConfig:
    """The default sketch at this shingle size, made for every non-empty text (min_chars=1)."""
    return SketchConfig(shingle=shingle, min_chars=1)


def _fingerprint_task(
    task: tuple[int, Setting, int, int],
) -> tuple[int, int, np.ndarray, np.ndarray, dict[int, np.ndarray], float]:
    """Fingerprint (and sketch) texts[start:stop] with one setting (runs in a worker process);
    returns (setting index, start, fingerprints, feature counts, sketches by shingle size,
    CPU seconds)."""
    index, setting, start, stop = task
    began = time.process_time()
    chunk, config = _WORKER_TEXTS[start:stop], setting.config(min_features=1)
    sketches = {}
    if setting.sketch_shingles:
        for shingle in setting.sketch_shingles:  # each one tokenises again: sketches differ by shingle only
            signed = signatures(chunk, config, sketch_config(shingle))
            sketches[shingle] = signed.sketch
        values, n_features = signed.fingerprint, signed.n_features
    else:
        values, _, n_features = fingerprints(chunk, config)
    return index, start, values, n_features, sketches, time.process_time() - began


@dataclass
class Fingerprinted:
    """Every corpus text's fingerprint and distinct-feature count under one setting, and its
    sketches: shingle size -> uint16 array (texts, `SketchConfig.size`), a row of zeros for an
    empty text (empty when the setting makes none)."""

    values: np.ndarray
    n_features: np.ndarray
    cpu_seconds: float
    sketches: dict[int, np.ndarray]


def fingerprint_all(
    texts: list[str], settings: Sequence[Setting], workers: int
) -> list[Fingerprinted]:
    """Fingerprint the corpus with every setting, chunks spread over `workers` processes."""
    global _WORKER_TEXTS
    _WORKER_TEXTS = texts
    # Load jieba and OpenCC once, before the fork, so the workers inherit them.
    fingerprints(["预热 jieba 与 OpenCC", "warm up"], FingerprintConfig())
    n = len(texts)
    size = SketchConfig().size
    results = [Fingerprinted(np.zeros(n, np.int64), np.zeros(n, np.int32), 0.0,
                             {s: np.zeros((n, size), np.uint16) for s in setting.sketch_shingles})
               for setting in settings]
    tasks = [
        (i, s, start, min(start + CHUNK_TEXTS, len(texts)))
        for i, s in enumerate(settings)
        for start in range(0, len(texts), CHUNK_TEXTS)
    ]
    run: Callable[[Iterable], Iterable]
    if workers > 1:
        pool = multiprocessing.get_context("fork").Pool(workers)
        run = lambda ts: pool.imap_unordered(_fingerprint_task, ts)  # noqa: E731
    else:
        pool = None
        run = lambda ts: map(_fingerprint_task, ts)  # noqa: E731
    try:
        for i, start, values, n_features, sketches, seconds in run(tasks):
            results[i].values[start : start + len(values)] = values
            results[i].n_features[start : start + len(values)] = n_features
            for shingle, rows in sketches.items():
                results[i].sketches[shingle][start : start + len(values)] = rows
            results[i].cpu_seconds += seconds
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return results


def software(extra: Sequence[str] = ()) -> str:
    """Python and the versions of the packages the fingerprints depend on, then those of
    `extra` (shown as `absent` when not installed)."""
    text = (f"Python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
            + package_versions(FINGERPRINT_PACKAGES, missing=None))
    return text + (", " + package_versions(extra, missing="absent") if extra else "")

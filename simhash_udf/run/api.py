"""The surface of the library the jobs (jobs/dedupe.py, jobs/index.py) use: they import from
here only, so a job is argparse -> config -> run, and the layers under run stay free to move.

Each name is imported explicitly from the module that owns it (listed in `__all__`).
"""

from __future__ import annotations

from simhash_udf.core.config import (
    EXTRACT_MODES,
    SEGMENTERS,
    TOKENIZERS,
    WEIGHTINGS,
    ConfigError,
    DedupeConfig,
    FingerprintConfig,
    IndexOptions,
    SketchConfig,
    VerifyConfig,
)
from simhash_udf.core.limits import MAX_K
from simhash_udf.core.short_text_policy import parse_spec
from simhash_udf.files.inputs import FORMATS, InputError
from simhash_udf.files.outputs import OutputError
from simhash_udf.files.warc import named_like_warc
from simhash_udf.index.store import DEFAULT_MIN_AGE_SECONDS
from simhash_udf.run.job import compact_index, describe_index, explain_run, open_finder, remove_index_run, summary
from simhash_udf.run.pipeline import run
from simhash_udf.run.session import get_session, jvm_exit_code, memory_hint

__all__ = [
    "DEFAULT_MIN_AGE_SECONDS",
    "EXTRACT_MODES",
    "FORMATS",
    "MAX_K",
    "SEGMENTERS",
    "TOKENIZERS",
    "WEIGHTINGS",
    "ConfigError",
    "DedupeConfig",
    "FingerprintConfig",
    "IndexOptions",
    "InputError",
    "OutputError",
    "SketchConfig",
    "VerifyConfig",
    "compact_index",
    "describe_index",
    "explain_run",
    "get_session",
    "jvm_exit_code",
    "memory_hint",
    "named_like_warc",
    "open_finder",
    "parse_spec",
    "remove_index_run",
    "run",
    "summary",
]

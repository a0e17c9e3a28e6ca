"""OpenCC's converters, loaded once per Python process (pure functions otherwise, no Spark)."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def converter(config: str) -> Any:
    """OpenCC's converter for one of its configurations (`t2s`, `s2twp`, ...) or the path of a
    configuration file, loaded once per process."""
    import opencc

    return opencc.OpenCC(config)

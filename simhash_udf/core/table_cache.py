"""Tables derived from installed data, computed once per machine and kept as files.

Every Python worker of a run needs a few tables that take seconds to derive but never change
for one installation, such as the regional triggers read off OpenCC's dictionaries
(`normalise.regional_triggers`, ~2 s) or the token IDF tables (`idf.tables`, ~0.7 s parsed
from jieba's and wordfreq's files). A run on a small input spent most of its Python time
deriving them, once per worker process, and a cluster does so once per executor core.
`cached_json` and `cached_arrays` keep such a table in a cache folder under a key that changes
with everything it was derived from (the source files that derive it, the data files it reads,
the versions of the packages involved), so a stale table is never read.

JSON or numpy's .npz (`cached_arrays`, read with `allow_pickle=False`), not pickle: the folder
may be shared, and reading it must not run anyone's code. The file is written whole and renamed
into place, so concurrent workers read a whole table or none; a folder that cannot be written,
or a damaged file, only costs the derivation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np

log = logging.getLogger("simhash_udf")

# Where the tables go: this variable, else $XDG_CACHE_HOME/simhash_udf, else ~/.cache/simhash_udf.
CACHE_DIR_VARIABLE = "SIMHASH_UDF_CACHE_DIR"
# A stored table's permissions: readable by everyone (a table holds nothing private).
TABLE_MODE = 0o644


def cache_dir() -> Path:
    """The folder the tables are kept in (see `CACHE_DIR_VARIABLE`); it may not exist yet."""
    if os.environ.get(CACHE_DIR_VARIABLE):
        return Path(os.environ[CACHE_DIR_VARIABLE])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "simhash_udf"


def table_key(name: str, files: Iterable[Path], versions: Iterable[str]) -> str:
    """A key that changes when any of `files` (their names and bytes) or `versions` changes.

    Not their folders: a cluster's executors unpack the same environment under a new folder
    per container, and should share one table."""
    digest = hashlib.sha256(name.encode())
    for path in files:
        digest.update(Path(path).name.encode() + b"\0" + Path(path).read_bytes() + b"\0")
    for version in versions:
        digest.update(version.encode() + b"\0")
    return digest.hexdigest()[:24]


def cached_json(name: str, key: str, compute: Callable[[], Any]) -> Any:
    """The table `name` stored under `key`, or `compute()` (then stored) when there is none.

    compute returns a value JSON can hold; what comes back is that value as JSON reads it
    (tuples become lists), whether derived now or read.
    """
    path = cache_dir() / f"{name}-{key}.json"
    try:
        with path.open(encoding="utf-8") as stored:
            return json.load(stored)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as error:
        log.debug("cached table %s unreadable (%s): derived again", path, error)
    # Round-tripped, so that a table reads the same whether it was derived or stored.
    text = json.dumps(compute(), ensure_ascii=False)
    _store(path, name, lambda out: out.write(text.encode("utf-8")))
    return json.loads(text)


def cached_arrays(name: str, key: str, compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """`cached_json` for a table of numpy arrays (name -> array, plain dtypes only), kept as
    an uncompressed .npz: read in milliseconds where a JSON or text table of the same
    hundreds of thousands of entries is parsed in a few hundred."""
    path = cache_dir() / f"{name}-{key}.npz"
    try:
        with np.load(path, allow_pickle=False) as stored:
            return {field: stored[field] for field in stored.files}
    except FileNotFoundError:
        pass
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        log.debug("cached table %s unreadable (%s): derived again", path, error)
    arrays = compute()
    _store(path, name, lambda out: np.savez(out, **arrays))
    return arrays


def _store(path: Path, name: str, write: Callable[[IO[bytes]], None]) -> None:
    """Write a table through `write` to a temporary file beside `path`, then rename it into
    place; a folder that cannot be written only logs."""
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{name}-", suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            write(out)
        # mkstemp's file is its owner's alone; a shared folder's other users (executors that
        # run as another user than the driver) would derive the table again and replace it.
        os.chmod(temporary, TABLE_MODE)
        os.replace(temporary, path)
    except OSError as error:
        log.debug("cached table %s not written (%s)", path, error)
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)

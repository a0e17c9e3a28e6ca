"""Near-duplicate detection for web crawls: simhash fingerprints, a band-split self-join,
connected components, on PySpark.

Six packages in layers, each importing only those below it (docs/architecture.md; the
import-linter contracts in pyproject.toml, checked by tests/test_architecture.py):
:mod:`simhash_udf.run` > :mod:`simhash_udf.report` | :mod:`simhash_udf.index` >
:mod:`simhash_udf.stages` > :mod:`simhash_udf.files` > :mod:`simhash_udf.core`.
"""

__version__ = "0.1.0"

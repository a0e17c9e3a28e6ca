"""Near-duplicate detection for web crawls: simhash fingerprints, a band-split self-join,
connected components, on PySpark.

Pure modules (no Spark): :mod:`config`, :mod:`text`, :mod:`idf`, :mod:`fingerprint`,
:mod:`bands`. DataFrame transforms: :mod:`udfs`, :mod:`documents`, :mod:`join`,
:mod:`components`, :mod:`clusters`. Stages chained: :mod:`pipeline`; the run's report:
:mod:`report`. Reads and writes: :mod:`io`; the session: :mod:`session`.
"""

__version__ = "0.1.0"

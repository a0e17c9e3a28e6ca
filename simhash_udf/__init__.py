"""Near-duplicate detection for web crawls: simhash fingerprints, a band-split self-join,
connected components, on PySpark.

Pure modules (no Spark): :mod:`config`, :mod:`text`, :mod:`fingerprint`, :mod:`bands`.
DataFrame transforms: :mod:`udfs`, :mod:`join`, :mod:`components`, :mod:`clusters`.
Stages chained: :mod:`pipeline`. Reads and writes: :mod:`io`.
"""

__version__ = "0.1.0"

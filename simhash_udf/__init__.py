"""Near-duplicate detection for web crawls: simhash fingerprints, a band-split self-join,
connected components, on PySpark.

Pure modules (no Spark): :mod:`config`, :mod:`text`, :mod:`idf`, :mod:`fingerprint`,
:mod:`bands`, :mod:`textdiff` (two texts side by side), :mod:`checks` (judging a run's report),
:mod:`integrity` (is a compressed file complete). DataFrame transforms: :mod:`udfs`,
:mod:`documents`, :mod:`join`, :mod:`components`, :mod:`clusters`, :mod:`explore` (views for
tuning k on a sample). Stages chained: :mod:`pipeline`, with progress lines from
:mod:`progress`; the run's report: :mod:`report` and :mod:`report_html`. The persistent
index: :mod:`index` (layout, manifests, publishing), :mod:`index_match` (lookup against it),
:mod:`index_run` (a run with `--index`), :mod:`index_admin` (`jobs/index.py`). Reads and
writes: :mod:`io`; the session: :mod:`session`.
"""

__version__ = "0.1.0"

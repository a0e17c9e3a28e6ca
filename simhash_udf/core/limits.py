"""Every limit on k and on the band plan, in one place (pure Python).

Read by `simhash_udf.core.config` (what a run may ask for), `simhash_udf.core.bands` (what the
cost model may choose and list), `simhash_udf.report.explore` (how far a sample is explored) and
the jobs' --help (through `simhash_udf.run.api`).
"""

from __future__ import annotations

# Largest k accepted: where the band join stays exact on random data. Beyond it the chosen
# plan's random runs (fingerprints sharing a table's key and a sub-block) reach the hot
# threshold at 10^9 fingerprints (k = 8: ~600 members a run at 10^10, k = 10: ~3,800 at
# 10^9 against hot_runs.HOT_RUN_SIZE = 2,000), so unrelated pages would be summarised and
# pairs/ left incomplete. Up to k = 7 the mean random run stays at most ~120 members from
# 10^6 to 10^10 fingerprints (tests/core/test_pair_kernel.py checks it). A simhash match beyond
# ~7 bits of 64 says little about short texts anyway (docs/quality.md).
MAX_K = 7

# Plans with more tables than this are never chosen automatically: at C(B, k) > 1000 the
# shuffle dwarfs anything wider keys can save on the data sizes this job handles.
MAX_TABLES = 1000

# Most band tables an explicit --blocks may ask for (C(blocks, k)); the cost model never
# chooses more than MAX_TABLES.
MAX_EXPLICIT_TABLES = 5000

# The cost model lists every table's key width up to this many tables; beyond it (only for
# plans no run may use) every key is taken to have the mean width.
MAX_LISTED_TABLES = MAX_EXPLICIT_TABLES

# The largest k the tuning views of `simhash_udf.report.explore` cover: beyond ~10 bits of 64
# a match says little about the text (see MAX_K), and the exact join within 10 bits is still
# cheap on a sample.
MAX_EXPLORED_K = 10

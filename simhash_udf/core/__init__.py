"""Pure Python and numpy: text normalisation and tokens, IDF, the simhash fingerprint, the band plan
and its cost model, the pair kernel and hot runs. No pyspark import (the import contracts in
pyproject.toml enforce it), so every function here is testable without Spark.
"""

"""The algorithm in pure Python and numpy: parameters and limits, normalisation, HTML to text,
tokens, IDF, the simhash fingerprint, the band plan and its cost model, the pair kernel and hot
runs. Imports nothing else of simhash_udf and never pyspark, so all of it is testable without
Spark (the import contracts in pyproject.toml enforce both).
"""

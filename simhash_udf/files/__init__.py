"""Files at the edges: which input files, in which format, damaged or whole (integrity), WARC
records and page encodings, paths through Hadoop, and atomic output folders. Imports only
:mod:`simhash_udf.core`; a new input reader goes here.
"""

"""Files at the edges: which input files, in which format, damaged or whole (integrity),
WARC records and page encodings, and atomic output folders.
"""

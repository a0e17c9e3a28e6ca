"""A run end to end: the Spark session, reading the input, the stages in order, scratch
and staged output, progress logging.
"""

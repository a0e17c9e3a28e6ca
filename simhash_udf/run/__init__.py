"""A run end to end: the Spark session, reading the input, the finder chosen once, the outputs
written atomically and the report; and the surface jobs/ import (jobs import nothing else of
simhash_udf). The top layer: it may import every other package, and none imports it.
"""

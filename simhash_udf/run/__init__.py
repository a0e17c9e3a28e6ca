"""A run end to end: the Spark session, reading the input, the finder chosen once, the outputs
written atomically and the report; and `simhash_udf.run.api`, the surface jobs/ import (they
import nothing else of simhash_udf). The top layer: it may import every other package, and none
imports it.
"""

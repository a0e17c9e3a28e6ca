"""The persistent index: a store of versioned manifests and segments, its lookup of a batch,
one run against it (open, publish, undo), its finder, and its maintenance. Imports only
:mod:`simhash_udf.stages` and below, never :mod:`simhash_udf.report` or :mod:`simhash_udf.run`.
"""

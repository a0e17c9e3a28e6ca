"""The persistent index: a store of versioned manifests, segments and leases, its lookup of a
batch and the clusters that join indexed ones, one run against it (`session.IndexSession`:
open, publish, undo), its finder (`finder.IndexFinder`) and its maintenance. Imports only
:mod:`simhash_udf.stages` and below, never :mod:`simhash_udf.report` or :mod:`simhash_udf.run`.
"""

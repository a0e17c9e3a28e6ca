"""The persistent index: a store of versioned manifests and segments, its lookup of a
batch, the index run that finds a batch's duplicates against it, and its maintenance.
"""

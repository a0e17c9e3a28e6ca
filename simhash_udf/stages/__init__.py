"""DataFrame -> DataFrame stages of a run: the UDFs, documents (check, normalise, exact key,
fingerprint), the band join, the short-text check, connected components and clusters.
"""

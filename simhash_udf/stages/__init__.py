"""DataFrame -> DataFrame stages of a run: the UDFs, documents (check, normalise, exact key,
fingerprint), the band join, the short-text check, connected components and clusters, the
stage recorder, and the finder interface with the self-join finder. Imports only
:mod:`simhash_udf.files` and :mod:`simhash_udf.core`; a new stage goes here.
"""

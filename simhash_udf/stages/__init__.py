"""DataFrame -> DataFrame stages of a run: the UDFs, documents (check, normalise, exact key,
fingerprint), the band join, the short-text check, connected components and clusters; the
stage recorder (`scratch.Stages`) and progress lines; the finder interface (`finder.Finder`,
`NearDuplicates`) and the self-join finder (`self_join.SelfJoinFinder`). Imports only
:mod:`simhash_udf.files` and :mod:`simhash_udf.core`; a new stage goes here.
"""

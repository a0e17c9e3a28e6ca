"""What a run says about itself: report.json's summary, --explain, report.html, the checks of a
report against earlier days, two texts side by side, and what the notebooks explore. Imports
only :mod:`simhash_udf.stages` and below (the run hands it plain values), never
:mod:`simhash_udf.index` or :mod:`simhash_udf.run`.
"""

"""What a run says about itself: report.json's summary, --explain, report.html, the checks
of a report against earlier days, and what the notebooks explore.
"""

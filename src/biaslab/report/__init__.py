"""Reports: a self-contained ``report.html`` per run and an ``index.html`` over many runs.

``biaslab.report.browser`` (headless Chromium screenshots) is imported on demand, not here.
"""

from biaslab.report.html import render_index, render_inline, render_report

__all__ = ["render_index", "render_inline", "render_report"]

"""Reports: one self-contained HTML page per run, and the figures the studies share.

``repscope.report.Report`` builds the page; ``repscope.report.figures`` draws figures with
matplotlib.
"""

from repscope.report.html import QUICK_RUN_TEXT, Report, flatten_metrics, format_number, format_p_value, is_p_value_name

__all__ = ["QUICK_RUN_TEXT", "Report", "flatten_metrics", "format_number", "format_p_value", "is_p_value_name"]

"""Open a report a study test wrote in headless Chromium (repscope.report.browser) and fail on any problem.

For the studies whose end-to-end test already writes a real report (CANDLE, Morpho-MNIST diversity): the
check costs one browser start, not another run of the study. Where Chromium or playwright is missing the
check is left out here; tests/test_report_browser.py is then skipped with the reason.
"""

from __future__ import annotations

from pathlib import Path

from repscope.report.browser import BrowserMissingError, check_report


def assert_report_passes_browser_check(path: Path) -> None:
    """Fail with the report's problems (page wider than the window, a figure that does not load, markup
    that leaks) where a headless browser is installed."""
    try:
        problems = check_report(path)
    except BrowserMissingError:
        return
    assert problems == [], f"{path}:\n" + "\n".join(problems)

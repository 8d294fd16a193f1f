"""Look at a report the way a researcher does: open it in headless Chromium and list what is wrong.

:func:`check_report` loads a ``report.html`` in a 1280 x 800 px window of the system's Chromium
(Debian's ``chromium`` package; ``make test`` installs it where it can) through playwright, whose own
browser download is not needed, and returns one line per problem:

* the page is wider than the window (the reader would scroll sideways);
* a table is wider than the box that holds it (columns hidden behind a sideways scroll);
* an image did not load (``naturalWidth`` 0);
* markup leaks into the text: reStructuredText (double backticks, ``:mod:`` / ``:func:`` roles,
  ``**``) outside code blocks, HTML tags shown as text, entities escaped twice (``&amp;lt;``), or
  an unescaped ``<`` in the source that the browser took for an unknown element.

A number rounded to ``0`` although its value is not zero cannot be seen in the page: it is not checked.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from repscope.errors import InvalidArgumentError, RepscopeError

VIEWPORT_WIDTH = 1280
VIEWPORT_HEIGHT = 800
# a table may overhang its box by this many pixels (sub-pixel rounding of borders) before it counts
TOLERANCE_PX = 2
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ENV = "REPSCOPE_CHROMIUM"


class BrowserMissingError(RepscopeError):
    """No headless browser to check a report with (Chromium or playwright is not installed)."""


def find_chromium() -> str:
    """The path of the Chromium executable that checks reports.

    Returns
    -------
    str
        ``$REPSCOPE_CHROMIUM`` when set, else the first of ``chromium``, ``chromium-browser``,
        ``google-chrome``, ``google-chrome-stable`` on the ``PATH``.

    Raises
    ------
    BrowserMissingError
        When none is found; the message says how to install one.
    """
    given = os.environ.get(CHROMIUM_ENV)
    if given:
        if not (Path(given).is_file() and os.access(given, os.X_OK)):
            raise BrowserMissingError(f"{CHROMIUM_ENV}={given} is not an executable file")
        return given
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserMissingError(
        "no Chromium to check reports with: install it (Debian: apt-get install chromium) "
        f"or set {CHROMIUM_ENV} to its executable"
    )


def _playwright() -> Any:
    try:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415
    except ImportError:
        raise BrowserMissingError(
            "playwright is not installed: pip install playwright (or the dev extra: pip install -e '.[dev]'); "
            "its own browser download is not needed, the system's Chromium is used"
        ) from None
    return sync_playwright


# runs in the page; returns a list of problems (strings)
_CHECKS_JS = """
([viewport, tolerance]) => {
  const problems = [];
  const doc = document.documentElement;
  const pageWidth = Math.max(doc.scrollWidth, document.body ? document.body.scrollWidth : 0);
  if (pageWidth > viewport + tolerance) {
    problems.push(`the page is ${pageWidth} px wide, wider than the ${viewport} px window: ` +
                  'the reader scrolls sideways');
  }
  const headingBefore = (element) => {
    const headings = Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6'));
    let found = null;
    for (const heading of headings) {
      if (heading.compareDocumentPosition(element) & Node.DOCUMENT_POSITION_FOLLOWING) found = heading;
    }
    return found ? found.textContent.trim().replace(/\\s+/g, ' ') : null;
  };
  const tables = Array.from(document.querySelectorAll('table'));
  tables.forEach((table, i) => {
    const box = table.parentElement;
    const tableWidth = Math.ceil(table.getBoundingClientRect().width);
    const boxWidth = Math.floor(box.clientWidth);
    const under = headingBefore(table);
    const name = `table ${i + 1} of ${tables.length}` + (under ? ` (under "${under}")` : '');
    if (tableWidth > boxWidth + tolerance) {
      problems.push(`${name} is ${tableWidth} px wide in a ${boxWidth} px box: columns hide behind a sideways scroll`);
    }
  });
  const images = Array.from(document.images);
  images.forEach((img, i) => {
    if (!img.complete || img.naturalWidth === 0) {
      const alt = img.getAttribute('alt');
      const src = img.getAttribute('src') || '';
      const where = src.startsWith('data:') ? 'an embedded image' : src.slice(0, 80);
      problems.push(`image ${i + 1} of ${images.length}` + (alt ? ` ("${alt.slice(0, 80)}")` : '') +
                    ` did not load (${where})`);
    }
  });
  // text a reader sees, outside code blocks
  const texts = [];
  const walker = document.createTreeWalker(document.body || doc, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement && node.parentElement.closest('pre, code, script, style, textarea')) continue;
    texts.push(node.textContent);
  }
  const text = texts.join(' ');
  const leaks = [
    [/``[^`]*``|``/, 'reStructuredText literal (double backticks)'],
    [/:(?:py:)?(?:mod|func|class|meth|attr|data|obj|exc|ref|doc|math|term):`/, 'reStructuredText role'],
    [/\\*\\*/, 'reStructuredText/Markdown bold (**)'],
    [/<\\/?(?:a|b|i|em|strong|code|pre|p|div|span|br|table|tr|td|th|ul|ol|li|img|h[1-6]|script|sup|sub)\\b[^<>]{0,80}>/i,
     'an HTML tag shown as text'],
    [/&(?:lt|gt|amp|quot|#x?[0-9a-f]+);/i, 'an HTML entity escaped twice'],
  ];
  for (const [pattern, what] of leaks) {
    const match = text.match(pattern);
    if (match) {
      const start = Math.max(0, match.index - 30);
      const context = text.slice(start, match.index + match[0].length + 30).replace(/\\s+/g, ' ').trim();
      problems.push(`markup leaks into the text: ${what}: "${context}"`);
    }
  }
  const unknown = Array.from(document.querySelectorAll('*')).filter((el) => el instanceof HTMLUnknownElement);
  if (unknown.length) {
    const names = Array.from(new Set(unknown.map((el) => '<' + el.tagName.toLowerCase() + '>'))).slice(0, 5);
    problems.push(`unescaped "<" in the page: the browser read ${names.join(', ')} as element(s) and hides the text`);
  }
  return problems;
}
"""


def check_reports(paths: Iterable[str | os.PathLike], timeout_s: float = 30.0) -> dict[Path, list[str]]:
    """Open each report in one headless Chromium and list its problems (see the module docstring).

    Parameters
    ----------
    paths
        HTML files, or run directories (their ``report.html``).
    timeout_s
        How long one page may take to load, in seconds.

    Returns
    -------
    dict
        Path of each HTML file -> list of problems, one sentence each; an empty list for a report
        without problems.

    Raises
    ------
    InvalidArgumentError
        When a path is not a file, or ``timeout_s`` is not positive.
    BrowserMissingError
        When Chromium or playwright is not installed.
    """
    # a run directory stands for its report.html
    files = [Path(path) / "report.html" if Path(path).is_dir() else Path(path) for path in paths]
    if not files:
        raise InvalidArgumentError("paths: expected at least one report")
    for path in files:
        if not path.is_file():
            raise InvalidArgumentError(f"paths: {path} is not a file")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
        raise InvalidArgumentError(f"timeout_s: expected a positive number of seconds, got {timeout_s!r}")
    executable = find_chromium()
    sync_playwright = _playwright()
    results: dict[Path, list[str]] = {}
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(
                executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
        except Exception as error:  # noqa: BLE001  (playwright's errors carry the browser's own words)
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise BrowserMissingError(f"could not start {executable}: {first}") from None
        try:
            for path in files:
                problems: list[str] = []
                page = browser.new_page(viewport={"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT})
                page.set_default_timeout(timeout_s * 1000)
                page.on("pageerror", lambda error, found=problems: found.append(f"script error: {error}"))
                page.goto(path.resolve().as_uri(), wait_until="load")
                problems.extend(page.evaluate(_CHECKS_JS, [VIEWPORT_WIDTH, TOLERANCE_PX]))
                page.close()
                results[path] = problems
        finally:
            browser.close()
    return results


def check_report(path: str | os.PathLike, timeout_s: float = 30.0) -> list[str]:
    """Open one report in headless Chromium and list its problems (see the module docstring).

    Parameters
    ----------
    path
        An HTML file, or a run directory (its ``report.html``).
    timeout_s
        How long the page may take to load, in seconds.

    Returns
    -------
    list of str
        One sentence per problem; empty when the page shows as it should.
    """
    return next(iter(check_reports([path], timeout_s=timeout_s).values()))


__all__ = ["BrowserMissingError", "check_report", "check_reports", "find_chromium", "VIEWPORT_WIDTH"]

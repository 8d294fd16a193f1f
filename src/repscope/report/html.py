"""A self-contained single-file HTML report.

The page needs nothing but itself: the style sheet is inline, figures are embedded as base64 PNG
``data:`` URIs, and there is no script. Every piece of text a caller passes (titles, paragraphs,
metric names, table cells, captions, code) is HTML-escaped, so a value read from a data file can
never inject markup. Prose (headings, paragraphs, captions, warnings) often comes from docstrings:
its reStructuredText inline markup is turned into HTML (:func:`inline_html`), so the page never
shows raw double backticks or ``:func:`` roles. Wide tables get a smaller font, headers that break
inside long keys and the whole page width, so that every column shows without scrolling sideways
(``repscope report check`` verifies it in a browser).
"""

from __future__ import annotations

import base64
import html
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope import __version__
from repscope.errors import InvalidArgumentError
from repscope.fileio import write_text_atomic
from repscope.report.figures import save_png_bytes
from repscope.report.formatting import (  # noqa: F401  (format_value and MAX_SEQUENCE_ITEMS re-exported)
    BELOW_BASELINE_MARK,
    MAX_SEQUENCE_ITEMS,
    QUICK_RUN_TEXT,
    _column_baselines,
    _describe_baselines,
    _float_formatter,
    _is_number,
    _metric_permutations,
    _table_permutations,
    flatten_metrics,
    format_number,
    format_p_value,
    format_value,
    is_p_value_name,
    readable_label,
    resolve_label,
)
from repscope.validation import check_positive_int

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_NUM = ' class="num"'

_STYLE = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       max-width: 62rem; margin: 2rem auto; padding: 0 1.25rem; color: #1d1d1f; line-height: 1.5; }
header { border-bottom: 2px solid #d0d7de; margin-bottom: 1.5rem; }
h1 { font-size: 1.8rem; margin: 0 0 .25rem; }
.subtitle { color: #57606a; margin: 0 0 1rem; font-size: 1.1rem; }
h2 { font-size: 1.35rem; margin-top: 2.2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; }
h3 { font-size: 1.1rem; margin-top: 1.6rem; }
nav ol { margin: 0 0 1.5rem; padding-left: 1.4rem; color: #57606a; }
nav a { color: #0b5cad; text-decoration: none; }
table { border-collapse: collapse; margin: .5rem 0 1.2rem; font-size: .88rem; max-width: 100%; }
th, td { border: 1px solid #d0d7de; padding: .25rem .6rem; text-align: left; vertical-align: top; }
th, td { overflow-wrap: break-word; }
thead th { background: #f3f5f7; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; overflow-wrap: normal; }
td.long { overflow-wrap: anywhere; }  /* a token too long for any column (a path, a decoded caption) */
.table-wrap { overflow-x: auto; max-width: 100%; }
/* a table of many columns: smaller type, and the whole window's width rather than the text column's */
.table-wrap.wide { width: calc(100vw - 2rem); max-width: none; position: relative; left: calc(50% - 50vw + 1rem); }
table.wide { font-size: .76rem; }
table.wide th, table.wide td { padding: .2rem .35rem; }
table.wider { font-size: .64rem; }
table.wider th, table.wider td { padding: .12rem .2rem; }
table.widest { font-size: .56rem; }
table.widest th, table.widest td { padding: .1rem .15rem; }
caption, figcaption, .note { color: #57606a; font-size: .85rem; overflow-wrap: break-word; }
caption { caption-side: bottom; text-align: left; padding-top: .3rem; }
.wide caption { font-size: .85rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em;
       background: #f3f5f7; border-radius: 3px; padding: 0 .2em; overflow-wrap: anywhere; }
pre code { background: none; padding: 0; }
figure { margin: 1rem 0 1.6rem; }
figure img { max-width: 100%; height: auto; display: block; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 4px; padding: .7rem .9rem;
      overflow-x: auto; font-size: .85rem; white-space: pre-wrap; word-break: break-word; }
.banner, .warning { border-radius: 4px; padding: .6rem .9rem; margin: 0 0 1rem; }
.banner { background: #fff8c5; border: 1px solid #d4a72c; }
.warning { background: #ffebe9; border: 1px solid #cf222e; }
.warnings ul { margin: .3rem 0 0; padding-left: 1.3rem; }
.warnings a { color: #82071e; }
td.below-baseline { background: #ffebe9; font-weight: 600; }
footer { margin-top: 3rem; border-top: 1px solid #d0d7de; padding-top: .6rem; color: #57606a;
         font-size: .8rem; }
@media print {
  body { max-width: none; margin: 0; font-size: 10pt; }
  nav { display: none; }
  figure, table, pre { break-inside: avoid; page-break-inside: avoid; }
  h2, h3 { break-after: avoid; page-break-after: avoid; }
  .table-wrap { overflow: visible; }
  .table-wrap.wide { width: auto; left: 0; }
}
""".strip()


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


# reStructuredText inline markup in prose taken from docstrings, in the order it is matched
_RST_INLINE = re.compile(
    r"``(?P<literal>.+?)``"  # ``x``
    r"|:(?:[a-z]+:)?[a-z]+:`(?P<role>[^`]+)`"  # :func:`x`, :py:mod:`x`, :data:`~a.b`, :ref:`text <target>`
    r"|`(?P<link>[^`<]+?)(?:\s*<[^`>]+>)?`__?"  # `text <https://...>`_
    r"|(?<![\w`])`(?P<interpreted>[^`\s][^`]*?)`(?![\w`])"  # `x` (the default role)
    r"|(?<![\w*])\*\*(?P<strong>\S(?:.*?\S)?)\*\*(?![\w*])"  # **x**
    r"|(?<![\w*])\*(?P<em>[^\s*](?:[^*]*?[^\s*])?)\*(?![\w*])",  # *x*
    re.DOTALL,
)


def _role_text(target: str) -> str:
    """What Sphinx shows for a role's content: ``text`` of ``text <target>``, the last part of ``~a.b``."""
    named = re.fullmatch(r"(.*?)\s*<[^<>]+>", target, re.DOTALL)
    if named and named.group(1).strip():
        return named.group(1).strip()
    target = target.strip()
    if target.startswith("~"):
        return target[1:].rsplit(".", 1)[-1]
    return target.lstrip("!")


def inline_html(text: Any) -> str:
    """Prose as HTML: escaped, with reStructuredText inline markup turned into tags.

    Parameters
    ----------
    text
        Text, often from a docstring; it is HTML-escaped, so it cannot inject markup.

    Returns
    -------
    str
        The escaped text in which an inline literal (``x`` between double backticks), a role such as
        ``:func:`` or ``:mod:`` (``:func:`~a.b``` shows ``b``, ``:ref:`text <target>``` shows ``text``)
        and the default role (single backticks) become ``<code>x</code>``, a hyperlink reference
        becomes its text, ``**x**`` becomes ``<strong>x</strong>`` and ``*x*`` ``<em>x</em>``.
    """
    text = str(text)
    out = []
    last = 0
    for match in _RST_INLINE.finditer(text):
        out.append(_esc(text[last : match.start()]))
        kind = match.lastgroup
        inner = match.group(kind)
        if kind == "literal":
            out.append(f"<code>{_esc(inner)}</code>")
        elif kind == "role":
            out.append(f"<code>{_esc(_role_text(inner))}</code>")
        elif kind == "interpreted":
            out.append(f"<code>{_esc(inner)}</code>")
        elif kind == "link":
            out.append(_esc(inner.strip()))
        elif kind == "strong":
            out.append(f"<strong>{_esc(inner)}</strong>")
        else:
            out.append(f"<em>{_esc(inner)}</em>")
        last = match.end()
    out.append(_esc(text[last:]))
    return "".join(out)


def _breakable(text: str) -> str:
    """Escaped header text that may break after ``_`` and ``.`` (the long raw keys of wide tables)."""
    return re.sub(r"([_.])(?=[^_.])", r"\1<wbr>", _esc(text))


# a cell holding a word longer than this may break inside it (td.long), so that it cannot widen its table
LONG_TOKEN = 24


def _has_long_token(text: str) -> bool:
    return any(len(token) > LONG_TOKEN for token in str(text).split())


# a table of more columns than this gets the .wide style (smaller type, the whole window's width)
WIDE_COLUMNS = 7
WIDER_COLUMNS = 12
WIDEST_COLUMNS = 20
_WIDTH_CLASSES = (("wide", WIDE_COLUMNS), ("wider", WIDER_COLUMNS), ("widest", WIDEST_COLUMNS))


def _slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def _shows_index(df: pd.DataFrame) -> bool:
    """Whether :meth:`Report.add_table` shows ``df``'s index: all but the default 0..n-1 range."""
    index = df.index
    return not (isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 and index.name is None)


def _header_cells(df: pd.DataFrame, numeric_columns: list[bool], labels: Mapping[Any, str] | bool | None) -> list[str]:
    """The ``<th>`` cells of a table's header row: the index's name (when the index is shown), then the columns."""
    # in a wide table a raw key such as horizontal_gradient_row_std may break after each "_"
    shown_text = _breakable if 1 + len(df.columns) > WIDE_COLUMNS else _esc

    def header_cell(key: Any, attrs: str = "") -> str:
        raw = " / ".join(str(part) for part in key) if isinstance(key, tuple) else str(key)
        label = resolve_label(key, labels)
        tip = f' title="{_esc(raw)}"' if label != raw else ""
        return f"<th{attrs}{tip}>{shown_text(label)}</th>"

    header = []
    if _shows_index(df):
        names = [n for n in df.index.names if n is not None]
        header.append(header_cell(tuple(names) if len(names) > 1 else (names[0] if names else "")))
    for column, numeric in zip(df.columns, numeric_columns):
        header.append(header_cell(column, _NUM if numeric else ""))
    return header


def _row_label(value: Any, labels: Mapping[Any, str] | bool | None, fmt: Callable[[float], str]) -> str:
    """The ``<th>`` of a row's index value: relabelled by a mapping that lists it or by ``labels=True``."""
    if isinstance(labels, Mapping) and isinstance(value, str) and value in labels:
        return f'<th scope="row" title="{_esc(value)}">{_esc(str(labels[value]))}</th>'
    if labels is True and isinstance(value, str):
        label = readable_label(value)
        tip = f' title="{_esc(value)}"' if label != value else ""
        return f'<th scope="row"{tip}>{_esc(label)}</th>'
    return f'<th scope="row">{_esc(format_value(value, fmt))}</th>'


@dataclass(frozen=True)
class _CellRules:
    """How :meth:`Report.add_table` writes a data cell: the float format, the permutations of p-values
    (given, or a ``permutations`` column row by row) and the baselines a cell is compared with."""

    fmt: Callable[[float], str]
    permutations: int | Mapping[str, int] | None
    row_permutations: list[Any] | None
    baselines: dict[Any, float]
    higher_is_better: bool

    def is_worse(self, value: Any, limit: float) -> bool:
        """Whether ``value`` is on the wrong side of its baseline ``limit``."""
        return (value < limit) if self.higher_is_better else (value > limit)

    def cell(self, column: Any, value: Any, numeric: bool, is_p: bool, position: int) -> tuple[str, bool, bool]:
        """The ``<td>`` of ``value``, whether it was compared with a baseline, and whether it is worse."""
        # a missing value in a text column reads better blank than "NaN"
        missing = value is None or (not numeric and isinstance(value, float) and math.isnan(value))
        if missing:
            text = ""
        elif is_p:
            given = _table_permutations(column, self.permutations, self.row_permutations, position)
            text = format_p_value(value, given)
        else:
            text = format_value(value, self.fmt)
        classes = ["num"] if numeric else ["long"] if _has_long_token(text) else []
        limit = self.baselines.get(column)
        compared = limit is not None and _is_number(value)
        worse = compared and self.is_worse(value, limit)
        if worse:
            classes.append("below-baseline")
            text = f"{text} {BELOW_BASELINE_MARK}"
        class_attr = f' class="{" ".join(classes)}"' if classes else ""
        return f"<td{class_attr}>{_esc(text)}</td>", compared, worse

    def count_hidden(self, df: pd.DataFrame, shown_rows: int) -> tuple[int, int]:
        """Values compared with a baseline, and those worse, in the rows past the first ``shown_rows``."""
        compared = worse = 0
        for column, limit in self.baselines.items():
            for value in df[column].iloc[shown_rows:]:
                if _is_number(value):
                    compared += 1
                    worse += bool(self.is_worse(value, limit))
        return compared, worse


def _body_rows(
    df: pd.DataFrame,
    shown: pd.DataFrame,
    numeric_columns: list[bool],
    p_columns: list[bool],
    rules: _CellRules,
    labels: Mapping[Any, str] | bool | None,
) -> tuple[list[str], int, int]:
    """The ``<tr>`` rows of the ``shown`` rows, the values compared with a baseline and those worse."""
    show_index = _shows_index(df)
    compared = worse = 0
    body = []
    for position, (index_value, row) in enumerate(zip(shown.index, shown.itertuples(index=False, name=None))):
        cells = [_row_label(index_value, labels, rules.fmt)] if show_index else []
        for column, value, numeric, is_p in zip(df.columns, row, numeric_columns, p_columns):
            cell, was_compared, was_worse = rules.cell(column, value, numeric, is_p, position)
            cells.append(cell)
            compared += was_compared
            worse += was_worse
        body.append("<tr>" + "".join(cells) + "</tr>")
    return body, compared, worse


class Report:
    """A report built block by block and rendered to one self-contained HTML page.

    Examples
    --------
    >>> report = Report("Morpho-MNIST demo", subtitle="mnist-sample, seed 0")
    >>> report.add_metrics({"digits": {"train": 600}, "thickness_ratio": 1.9812})
    >>> page = report.render()
    """

    def __init__(self, title: str, subtitle: str | None = None, quick: bool = False) -> None:
        self.title = str(title)
        self.subtitle = None if subtitle is None else str(subtitle)
        self._quick: str | None = QUICK_RUN_TEXT if quick else None
        self._warnings: list[tuple[str, str | None]] = []  # (text, anchor of its box in the body or None)
        self._blocks: list[str] = []
        self._sections: list[tuple[str, str]] = []  # (anchor, text) of level-2 headings
        self._anchors: set[str] = set()
        self._figure_count = 0

    # -- notices at the top -----------------------------------------------------------------

    def mark_quick(self, text: str | None = None) -> None:
        """Say at the top of the page that this is a ``--quick`` run (default text:
        :data:`QUICK_RUN_TEXT`), so its numbers are not read as the paper's setting."""
        self._quick = QUICK_RUN_TEXT if text is None else str(text)

    @property
    def quick(self) -> bool:
        return self._quick is not None

    def add_warning(self, text: str) -> None:
        """A warning listed in the "Warnings" box at the top of the page, under the title (e.g. a
        result below a constant baseline); warnings keep the order they were added in.

        Parameters
        ----------
        text
            The warning (prose: escaped, reStructuredText inline markup shown as HTML).
        """
        self._warnings.append((str(text), None))

    def warning(self, text: str) -> None:
        """A warning box at this place of the page (next to the number it concerns), also listed,
        with a link to it, in the "Warnings" box at the top of the page.

        Use it when a number in the report is meaningless, e.g. a judge classifier whose accuracy is
        at chance makes the metric computed with it unreadable.

        Parameters
        ----------
        text
            The warning (prose: escaped, reStructuredText inline markup shown as HTML).
        """
        anchor = _slug(f"warning-{len(self._warnings) + 1}", self._anchors)
        self._warnings.append((str(text), anchor))
        self._blocks.append(f'<div class="warning" id="{anchor}" role="alert">Warning: {inline_html(text)}</div>')

    @property
    def warnings(self) -> list[str]:
        """The warnings in the order they were added (:meth:`add_warning` and :meth:`warning`)."""
        return [text for text, _ in self._warnings]

    # -- blocks -----------------------------------------------------------------------------

    def add_heading(self, text: str, level: int = 2) -> None:
        """A section heading; ``level`` 2 (section) to 6. Level-2 headings make the contents list."""
        if not isinstance(level, int) or not 2 <= level <= 6:
            raise InvalidArgumentError(f"level: expected 2 to 6 (1 is the report's title), got {level!r}")
        anchor = _slug(str(text), self._anchors)
        if level == 2:
            self._sections.append((anchor, str(text)))
        self._blocks.append(f'<h{level} id="{anchor}">{inline_html(text)}</h{level}>')

    def add_paragraph(self, text: str) -> None:
        """Paragraphs of text (escaped; blank lines start new paragraphs).

        Text from a docstring may hold reStructuredText inline markup (double backticks, ``:mod:``
        roles, ``**bold**``): it is shown as HTML (:func:`inline_html`).
        """
        for part in re.split(r"\n\s*\n", str(text)):
            if part.strip():
                self._blocks.append(f"<p>{inline_html(part.strip())}</p>")

    def add_metrics(
        self,
        metrics: Mapping[str, Any],
        title: str | None = None,
        float_format: Callable[[float], str] | str | None = None,
        permutations: int | Mapping[str, int] | None = None,
        labels: Mapping[str, str] | bool | None = None,
    ) -> None:
        """A two-column table of metrics; nested mappings are flattened to ``a.b`` names.

        ``labels`` shows readable names instead of the raw keys: a mapping flattened name -> label
        (names it lacks get :func:`readable_label`), ``True`` for :func:`readable_label` of every name,
        ``None`` for the raw keys. A relabelled row keeps its raw key as its tooltip.

        Floats are written with 4 significant digits (:func:`format_number`) unless
        ``float_format`` says otherwise. p-values (names as :func:`is_p_value_name`) are written by
        :func:`format_p_value`; the number of permutations of a permutation p-value comes from
        ``permutations`` (one number, or flattened name -> number) or else from a ``permutations``
        metric beside it (``x.permutations`` for ``x.p_value``, ``quadratic_permutations`` for
        ``quadratic_p_value``).
        """
        fmt = _float_formatter(float_format)
        flat = flatten_metrics(metrics)
        rows = []
        for name, value in flat.items():
            if is_p_value_name(name) and not isinstance(value, (list, tuple, np.ndarray, Mapping)):
                text = format_p_value(value, _metric_permutations(name, flat, permutations))
            else:
                text = format_value(value, fmt)
            numeric = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            cell_class = ' class="num"' if numeric else ' class="long"' if _has_long_token(text) else ""
            label = resolve_label(name, labels)
            tip = f' title="{_esc(name)}"' if label != name else ""
            rows.append(f'<tr><th scope="row"{tip}>{_esc(label)}</th><td{cell_class}>{_esc(text)}</td></tr>')
        if title is not None:
            self.add_heading(title, level=3)
        body = "\n".join(rows) if rows else '<tr><td colspan="2" class="note">no metrics</td></tr>'
        self._blocks.append(
            '<div class="table-wrap"><table class="metrics">\n'
            "<thead><tr><th>metric</th><th>value</th></tr></thead>\n"
            f"<tbody>\n{body}\n</tbody></table></div>"
        )

    def add_table(
        self,
        df: Any,
        title: str | None = None,
        caption: str | None = None,
        max_rows: int | None = 50,
        float_format: Callable[[float], str] | str | None = None,
        permutations: int | Mapping[str, int] | None = None,
        baseline: float | Mapping[str, float] | None = None,
        higher_is_better: bool = True,
        baseline_label: str = "constant baseline",
        labels: Mapping[Any, str] | bool | None = None,
    ) -> None:
        """A pandas DataFrame as an HTML table.

        A table of more than :data:`WIDE_COLUMNS` columns (index included) is set in smaller type
        across the whole window, with headers that may break inside long keys, so that no column hides
        behind a sideways scroll.

        Parameters
        ----------
        df
            The table. Its index is shown when it is not the default 0..n-1 range.
        title
            A level-3 heading above the table.
        caption
            Text under the table.
        max_rows
            Show at most this many rows (the first ones) and say how many there are; None shows all.
        float_format
            A callable, or a format spec such as ``".3f"`` or ``"{:.2%}"``, for float cells;
            default 4 significant digits (:func:`format_number`). p-value columns (names as
            :func:`is_p_value_name`) are always written by :func:`format_p_value`.
        permutations
            Permutations B behind permutation p-values: one number for every p-value column, or
            column -> number. When not given, a ``permutations`` column of the table is used row by row
            for every p-value column.
        baseline
            A constant baseline (e.g. the accuracy of always predicting the majority class): a number
            for every numeric column that is not a p-value, or column -> number. A cell worse than its
            baseline (below it, or above it when ``higher_is_better`` is false) is marked with
            ``\u25bc`` and highlighted, the caption says so, and :meth:`add_warning` records how many.
        higher_is_better
            Direction of the comparison with ``baseline`` (false for errors such as RMSE).
        baseline_label
            What the baseline is, for the caption and the warning.
        labels
            Readable headers instead of the raw keys: a mapping key -> label for column names, index
            names and text index values (keys it lacks get :func:`readable_label`), ``True`` for
            :func:`readable_label` of every one, ``None`` (default) for the raw keys. Index values
            are relabelled only by a mapping that lists them. A relabelled header keeps its raw key
            as its tooltip.
        """
        if not isinstance(df, pd.DataFrame):
            raise InvalidArgumentError(f"df: expected a pandas.DataFrame, got {type(df).__name__}")
        max_rows = check_positive_int(max_rows, "max_rows", allow_none=True)
        fmt = _float_formatter(float_format)
        if labels is not None and not isinstance(labels, (Mapping, bool)):
            raise InvalidArgumentError(
                f"labels: expected a mapping key -> label, True or None, got {type(labels).__name__}"
            )
        shown = df if max_rows is None else df.iloc[:max_rows]
        numeric_columns = [
            pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype) for dtype in df.dtypes
        ]
        p_columns = [is_p_value_name(column) for column in df.columns]
        rules = _CellRules(
            fmt=fmt,
            permutations=permutations,
            row_permutations=(
                df["permutations"].tolist() if permutations is None and "permutations" in df.columns else None
            ),
            baselines=_column_baselines(df.columns, numeric_columns, p_columns, baseline),
            higher_is_better=higher_is_better,
        )
        header = _header_cells(df, numeric_columns, labels)
        body, compared, worse = _body_rows(df, shown, numeric_columns, p_columns, rules, labels)
        # rows beyond max_rows count for the warning too
        hidden_compared, hidden_worse = rules.count_hidden(df, len(shown))
        if title is not None:
            self.add_heading(title, level=3)
        notes = []
        if caption is not None:
            notes.append(inline_html(caption))
        if len(shown) < len(df):
            notes.append(f"Showing the first {len(shown):,} of {len(df):,} rows.")
        if rules.baselines:
            notes.append(
                self._baseline_note(rules, title, baseline_label, compared + hidden_compared, worse + hidden_worse)
            )
        caption_html = f"<caption>{' '.join(notes)}</caption>\n" if notes else ""
        width = len(header)
        wide = "".join(f" {name}" for name, limit in _WIDTH_CLASSES if width > limit)
        wrap = "table-wrap wide" if wide else "table-wrap"
        self._blocks.append(
            f'<div class="{wrap}"><table class="data{wide}">\n'
            f"{caption_html}<thead><tr>{''.join(header)}</tr></thead>\n"
            "<tbody>\n" + "\n".join(body) + "\n</tbody></table></div>"
        )

    def _baseline_note(
        self, rules: _CellRules, title: str | None, baseline_label: str, compared: int, worse: int
    ) -> str:
        """The caption's note on the baseline marks; a warning (:meth:`add_warning`) when a value is worse."""
        side = "below" if rules.higher_is_better else "above"
        described = _describe_baselines(rules.baselines)
        if worse:
            self.add_warning(
                f"{title or 'A table'}: {worse} of {compared} values {side} the {baseline_label} ({described})."
            )
        return f"{BELOW_BASELINE_MARK} marks a value {side} the {baseline_label} ({described})."

    def add_figure(self, png: Any, caption: str | None = None, alt: str | None = None) -> None:
        """Embed a PNG figure as a base64 ``data:`` URI.

        Parameters
        ----------
        png
            A path to a PNG file, the PNG bytes, or a matplotlib Figure (encoded at 110 dpi).
        caption
            Text under the figure.
        alt
            Text for readers who cannot see the image (default: the caption, else "Figure N").
        """
        data = self._png_bytes(png)
        self._figure_count += 1
        if alt is None:
            alt = caption if caption is not None else f"Figure {self._figure_count}"
        encoded = base64.b64encode(data).decode("ascii")
        caption_html = f"\n<figcaption>{inline_html(caption)}</figcaption>" if caption is not None else ""
        self._blocks.append(
            f'<figure><img src="data:image/png;base64,{encoded}" alt="{_esc(alt)}">{caption_html}</figure>'
        )

    @staticmethod
    def _png_bytes(png: Any) -> bytes:
        if isinstance(png, (bytes, bytearray, memoryview)):
            data = bytes(png)
        elif isinstance(png, (str, os.PathLike)):
            path = Path(png)
            if not path.is_file():
                raise InvalidArgumentError(f"png: {path} is not a file")
            data = path.read_bytes()
        elif hasattr(png, "savefig"):
            data = save_png_bytes(png)
        else:
            raise InvalidArgumentError(
                f"png: expected a PNG path, PNG bytes or a matplotlib Figure, got {type(png).__name__}"
            )
        if not data.startswith(PNG_SIGNATURE):
            raise InvalidArgumentError("png: the data are not a PNG image (no PNG signature)")
        return data

    def add_code(self, text: str) -> None:
        """A preformatted block, e.g. the command that produced the run."""
        self._blocks.append(f"<pre><code>{_esc(text)}</code></pre>")

    def add_files(
        self,
        paths: Iterable[str | os.PathLike] | Mapping[str, Any],
        base: str | os.PathLike | None = None,
        title: str | None = None,
    ) -> None:
        """A list of links to files, e.g. a run's tables and figures.

        ``paths`` may be a mapping (name -> path, as :attr:`repscope.run_directory.RunDirectory.tables`);
        links are made relative to ``base`` (the folder that will hold the report) when given.
        """
        values = list(paths.values()) if isinstance(paths, Mapping) else list(paths)
        items = []
        for path in values:
            path = Path(path)
            if base is not None:
                try:
                    path = Path(os.path.relpath(path, base))
                except ValueError:  # another drive on Windows: keep it as given
                    pass
            href = path.as_posix()
            items.append(f'<li><a href="{_esc(href)}">{_esc(href)}</a></li>')
        if title is not None:
            self.add_heading(title, level=3)
        self._blocks.append(
            '<ul class="files">\n' + "\n".join(items) + "\n</ul>" if items else '<p class="note">no files</p>'
        )

    # -- output -----------------------------------------------------------------------------

    def render(self, now: datetime | None = None) -> str:
        """The whole page as a string; ``now`` is the generation time shown in the footer."""
        generated = (now or datetime.now().astimezone()).strftime("%Y-%m-%d %H:%M:%S %Z").strip()
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta name="generator" content="repscope {_esc(__version__)}">',
            f"<title>{_esc(self.title)}</title>",
            f"<style>\n{_STYLE}\n</style>",
            "</head>",
            "<body>",
            "<header>",
            f"<h1>{_esc(self.title)}</h1>",
        ]
        if self.subtitle is not None:
            parts.append(f'<p class="subtitle">{_esc(self.subtitle)}</p>')
        parts.append("</header>")
        if self._quick is not None:
            parts.append(f'<div class="banner" role="note"><strong>{_esc(self._quick)}</strong></div>')
        if self._warnings:
            items = []
            for text, anchor in self._warnings:
                where = f' <a href="#{anchor}">(in the report)</a>' if anchor is not None else ""
                items.append(f"<li>Warning: {inline_html(text)}{where}</li>")
            count = len(self._warnings)
            parts.append(
                '<section class="warning warnings" role="alert" aria-label="Warnings">'
                f"<strong>Warnings ({count})</strong><ul>{''.join(items)}</ul></section>"
            )
        if len(self._sections) >= 3:
            links = "".join(f'<li><a href="#{anchor}">{inline_html(text)}</a></li>' for anchor, text in self._sections)
            parts.append(f'<nav aria-label="Contents"><ol>{links}</ol></nav>')
        parts.append("<main>")
        parts.extend(self._blocks)
        parts.append("</main>")
        parts.append(f"<footer>Generated {_esc(generated)} by repscope {_esc(__version__)}.</footer>")
        parts.extend(["</body>", "</html>", ""])
        return "\n".join(parts)

    def write(self, path: str | os.PathLike, now: datetime | None = None) -> Path:
        """Write the page to ``path`` atomically and return the path."""
        path = Path(path)
        write_text_atomic(path, self.render(now=now))
        return path


__all__ = [
    "Report",
    "QUICK_RUN_TEXT",
    "flatten_metrics",
    "format_number",
    "format_p_value",
    "format_value",
    "inline_html",
    "is_p_value_name",
    "readable_label",
    "PNG_SIGNATURE",
]

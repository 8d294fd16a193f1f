"""A self-contained single-file HTML report.

The page needs nothing but itself: the style sheet is inline, figures are embedded as base64 PNG
``data:`` URIs, and there is no script. Every piece of text a caller passes (titles, paragraphs,
metric names, table cells, captions, code) is HTML-escaped, so a value read from a data file can
never inject markup.
"""

from __future__ import annotations

import base64
import html
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
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
)

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
table { border-collapse: collapse; margin: .5rem 0 1.2rem; font-size: .88rem; }
th, td { border: 1px solid #d0d7de; padding: .25rem .6rem; text-align: left; vertical-align: top; }
thead th { background: #f3f5f7; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.table-wrap { overflow-x: auto; }
caption, figcaption, .note { color: #57606a; font-size: .85rem; }
caption { caption-side: bottom; text-align: left; padding-top: .3rem; }
figure { margin: 1rem 0 1.6rem; }
figure img { max-width: 100%; height: auto; display: block; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 4px; padding: .7rem .9rem;
      overflow-x: auto; font-size: .85rem; white-space: pre-wrap; word-break: break-word; }
.banner, .warning { border-radius: 4px; padding: .6rem .9rem; margin: 0 0 1rem; }
.banner { background: #fff8c5; border: 1px solid #d4a72c; }
.warning { background: #ffebe9; border: 1px solid #cf222e; }
td.below-baseline { background: #ffebe9; font-weight: 600; }
footer { margin-top: 3rem; border-top: 1px solid #d0d7de; padding-top: .6rem; color: #57606a;
         font-size: .8rem; }
@media print {
  body { max-width: none; margin: 0; font-size: 10pt; }
  nav { display: none; }
  figure, table, pre { break-inside: avoid; page-break-inside: avoid; }
  h2, h3 { break-after: avoid; page-break-after: avoid; }
  .table-wrap { overflow: visible; }
}
""".strip()


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


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
        self._warnings: list[str] = []
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
        """A warning shown at the top of the page, under the title (e.g. a result below a constant
        baseline); warnings keep the order they were added in."""
        self._warnings.append(str(text))

    @property
    def warnings(self) -> list[str]:
        return list(self._warnings)

    # -- blocks -----------------------------------------------------------------------------

    def add_heading(self, text: str, level: int = 2) -> None:
        """A section heading; ``level`` 2 (section) to 6. Level-2 headings make the contents list."""
        if not isinstance(level, int) or not 2 <= level <= 6:
            raise InvalidArgumentError(f"level: expected 2 to 6 (1 is the report's title), got {level!r}")
        anchor = _slug(str(text), self._anchors)
        if level == 2:
            self._sections.append((anchor, str(text)))
        self._blocks.append(f'<h{level} id="{anchor}">{_esc(text)}</h{level}>')

    def add_paragraph(self, text: str) -> None:
        """A paragraph of plain text (escaped; blank lines start new paragraphs)."""
        for part in re.split(r"\n\s*\n", str(text)):
            if part.strip():
                self._blocks.append(f"<p>{_esc(part.strip())}</p>")

    def add_metrics(
        self,
        metrics: Mapping[str, Any],
        title: str | None = None,
        float_format: Callable[[float], str] | str | None = None,
        permutations: int | Mapping[str, int] | None = None,
    ) -> None:
        """A two-column table of metrics; nested mappings are flattened to ``a.b`` names.

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
            cell_class = ' class="num"' if numeric else ""
            rows.append(f'<tr><th scope="row">{_esc(name)}</th><td{cell_class}>{_esc(text)}</td></tr>')
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
    ) -> None:
        """A pandas DataFrame as an HTML table.

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
        """
        if not isinstance(df, pd.DataFrame):
            raise InvalidArgumentError(f"df: expected a pandas.DataFrame, got {type(df).__name__}")
        if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
            raise InvalidArgumentError(f"max_rows: expected a positive integer or None, got {max_rows!r}")
        fmt = _float_formatter(float_format)
        show_index = not (
            isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1 and df.index.name is None
        )
        shown = df if max_rows is None else df.iloc[:max_rows]
        numeric_columns = [
            pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype) for dtype in df.dtypes
        ]

        def column_name(column: Any) -> str:
            if isinstance(column, tuple):
                return " / ".join(str(part) for part in column)
            return str(column)

        header = []
        if show_index:
            index_name = " / ".join(str(n) for n in df.index.names if n is not None)
            header.append(f"<th>{_esc(index_name)}</th>")
        for column, numeric in zip(df.columns, numeric_columns):
            header.append(f"<th{_NUM if numeric else ''}>{_esc(column_name(column))}</th>")

        p_columns = [is_p_value_name(column) for column in df.columns]
        baselines = _column_baselines(df.columns, numeric_columns, p_columns, baseline)
        row_permutations = (
            df["permutations"].tolist() if permutations is None and "permutations" in df.columns else None
        )
        worse = 0
        compared = 0
        body = []
        for position, (index_value, row) in enumerate(zip(shown.index, shown.itertuples(index=False, name=None))):
            cells = []
            if show_index:
                cells.append(f'<th scope="row">{_esc(format_value(index_value, fmt))}</th>')
            for column, value, numeric, is_p in zip(df.columns, row, numeric_columns, p_columns):
                # a missing value in a text column reads better blank than "NaN"
                missing = value is None or (not numeric and isinstance(value, float) and math.isnan(value))
                if missing:
                    text = ""
                elif is_p:
                    text = format_p_value(value, _table_permutations(column, permutations, row_permutations, position))
                else:
                    text = format_value(value, fmt)
                classes = ["num"] if numeric else []
                limit = baselines.get(column)
                if limit is not None and _is_number(value):
                    compared += 1
                    if (value < limit) if higher_is_better else (value > limit):
                        worse += 1
                        classes.append("below-baseline")
                        text = f"{text} {BELOW_BASELINE_MARK}"
                class_attr = f' class="{" ".join(classes)}"' if classes else ""
                cells.append(f"<td{class_attr}>{_esc(text)}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        # rows beyond max_rows count for the warning too
        for column, limit in baselines.items():
            for value in df[column].iloc[len(shown) :]:
                if _is_number(value):
                    compared += 1
                    worse += bool((value < limit) if higher_is_better else (value > limit))

        if title is not None:
            self.add_heading(title, level=3)
        notes = []
        if caption is not None:
            notes.append(_esc(caption))
        if len(shown) < len(df):
            notes.append(f"Showing the first {len(shown):,} of {len(df):,} rows.")
        if baselines:
            side = "below" if higher_is_better else "above"
            described = _describe_baselines(baselines)
            notes.append(f"{BELOW_BASELINE_MARK} marks a value {side} the {baseline_label} ({described}).")
            if worse:
                self.add_warning(
                    f"{title or 'A table'}: {worse} of {compared} values {side} the {baseline_label} ({described})."
                )
        caption_html = f"<caption>{' '.join(notes)}</caption>\n" if notes else ""
        self._blocks.append(
            '<div class="table-wrap"><table class="data">\n'
            f"{caption_html}<thead><tr>{''.join(header)}</tr></thead>\n"
            "<tbody>\n" + "\n".join(body) + "\n</tbody></table></div>"
        )

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
        caption_html = f"\n<figcaption>{_esc(caption)}</figcaption>" if caption is not None else ""
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

        ``paths`` may be a mapping (name -> path, as :attr:`repscope.runs.RunDirectory.tables`);
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
        for warning in self._warnings:
            parts.append(f'<div class="warning" role="alert">Warning: {_esc(warning)}</div>')
        if len(self._sections) >= 3:
            links = "".join(f'<li><a href="#{anchor}">{_esc(text)}</a></li>' for anchor, text in self._sections)
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
    "is_p_value_name",
    "PNG_SIGNATURE",
]

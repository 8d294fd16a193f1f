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

from repscope.errors import InvalidArgumentError
from repscope.fileio import write_text_atomic

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_NUM = ' class="num"'
# A sequence metric longer than this is shortened on the page (metrics.json keeps it whole).
MAX_SEQUENCE_ITEMS = 20

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


def format_number(value: Any, digits: int = 4) -> str:
    """A number as text with ``digits`` significant digits for floats.

    Integers are written whole; floats use ``digits`` significant digits without trailing zeros,
    in plain notation from 1e-4 up to 1e6 (``12345.678`` -> ``12346``) and in scientific
    notation outside it. NaN and infinities are written ``NaN``, ``inf``, ``-inf``.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if 1e-4 <= magnitude < 1e6 and math.floor(math.log10(magnitude)) >= digits:
        return f"{value:.0f}"  # more integer digits than significant ones: round to a whole number
    text = f"{value:.{digits}g}"
    if "e" in text and 1e-4 <= magnitude < 1e6:
        text = f"{value:.{digits - 1 - math.floor(math.log10(magnitude))}f}"
    return text


def flatten_metrics(metrics: Mapping[str, Any], separator: str = ".") -> dict[str, Any]:
    """Flatten nested mappings: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``, keys in insertion order."""
    if not isinstance(metrics, Mapping):
        raise InvalidArgumentError(f"metrics: expected a mapping, got {type(metrics).__name__}")
    flat: dict[str, Any] = {}

    def visit(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping) and value:
            for key, item in value.items():
                visit(f"{prefix}{separator}{key}" if prefix else str(key), item)
        else:
            flat[prefix] = value

    for key, value in metrics.items():
        visit(str(key), value)
    return flat


def format_value(value: Any, float_format: Callable[[float], str] = format_number) -> str:
    """Text of a metric or table cell: numbers via ``float_format``, sequences item by item."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return float_format(value)
    if isinstance(value, (list, tuple)):
        shown = [format_value(item, float_format) for item in value[:MAX_SEQUENCE_ITEMS]]
        if len(value) > MAX_SEQUENCE_ITEMS:
            shown.append(f"… ({len(value)} items)")
        return "[" + ", ".join(shown) + "]"
    if isinstance(value, Mapping) and not value:
        return "{}"
    if value is None:
        return "None"
    return format_number(value)


def _float_formatter(float_format: Callable[[float], str] | str | None) -> Callable[[float], str]:
    if float_format is None:
        return format_number
    if callable(float_format):
        return float_format
    if isinstance(float_format, str):
        if "{" in float_format:
            return lambda x: float_format.format(x)
        return lambda x: format(x, float_format)
    raise InvalidArgumentError(
        f"float_format: expected a callable, a format spec such as '.3f' or None, got {float_format!r}"
    )


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

    def __init__(self, title: str, subtitle: str | None = None) -> None:
        self.title = str(title)
        self.subtitle = None if subtitle is None else str(subtitle)
        self._blocks: list[str] = []
        self._sections: list[tuple[str, str]] = []  # (anchor, text) of level-2 headings
        self._anchors: set[str] = set()
        self._figure_count = 0

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
        self, metrics: Mapping[str, Any], title: str | None = None,
        float_format: Callable[[float], str] | str | None = None,
    ) -> None:
        """A two-column table of metrics; nested mappings are flattened to ``a.b`` names.

        Floats are written with 4 significant digits (:func:`format_number`) unless
        ``float_format`` says otherwise.
        """
        fmt = _float_formatter(float_format)
        flat = flatten_metrics(metrics)
        rows = []
        for name, value in flat.items():
            text = format_value(value, fmt)
            numeric = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            cell_class = ' class="num"' if numeric else ""
            rows.append(f"<tr><th scope=\"row\">{_esc(name)}</th><td{cell_class}>{_esc(text)}</td></tr>")
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
            default 4 significant digits (:func:`format_number`).
        """
        import pandas as pd

        if not isinstance(df, pd.DataFrame):
            raise InvalidArgumentError(f"df: expected a pandas.DataFrame, got {type(df).__name__}")
        if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
            raise InvalidArgumentError(f"max_rows: expected a positive integer or None, got {max_rows!r}")
        fmt = _float_formatter(float_format)
        show_index = not (
            isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1
            and df.index.name is None
        )
        shown = df if max_rows is None else df.iloc[:max_rows]
        numeric_columns = [pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
                           for dtype in df.dtypes]

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

        body = []
        for index_value, row in zip(shown.index, shown.itertuples(index=False, name=None)):
            cells = []
            if show_index:
                cells.append(f"<th scope=\"row\">{_esc(format_value(index_value, fmt))}</th>")
            for value, numeric in zip(row, numeric_columns):
                # a missing value in a text column reads better blank than "NaN"
                missing = value is None or (not numeric and isinstance(value, float) and math.isnan(value))
                text = "" if missing else format_value(value, fmt)
                cells.append(f"<td{_NUM if numeric else ''}>{_esc(text)}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")

        if title is not None:
            self.add_heading(title, level=3)
        notes = []
        if caption is not None:
            notes.append(_esc(caption))
        if len(shown) < len(df):
            notes.append(f"Showing the first {len(shown):,} of {len(df):,} rows.")
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
            from repscope.report.figures import save_png_bytes

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

    def add_files(self, paths: Iterable[str | os.PathLike] | Mapping[str, Any], base: str | os.PathLike | None = None,
                  title: str | None = None) -> None:
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
        self._blocks.append("<ul class=\"files\">\n" + "\n".join(items) + "\n</ul>" if items
                            else '<p class="note">no files</p>')

    # -- output -----------------------------------------------------------------------------

    def render(self, now: datetime | None = None) -> str:
        """The whole page as a string; ``now`` is the generation time shown in the footer."""
        from repscope import __version__

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


__all__ = ["Report", "flatten_metrics", "format_number", "format_value", "PNG_SIGNATURE"]

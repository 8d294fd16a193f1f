"""The HTML report and the shared figures."""

from __future__ import annotations

import base64
import re
from datetime import datetime
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import repscope
from repscope.errors import InvalidArgumentError
from repscope.report import Report, flatten_metrics, format_number
from repscope.report.figures import PNG_SIGNATURE, distributions_by_class, image_grid, new_figure, save_png_bytes

EVIL = '<script>alert("x")</script>'
DATA_URI = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def _png(dpi: int = 30) -> bytes:
    fig = new_figure(1.5, 1)
    fig.add_subplot().plot([0, 1], [0, 1])
    return save_png_bytes(fig, dpi=dpi)


class _Collector(HTMLParser):
    """Collects start tags and the text of each tag, to check the page parses as intended."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Collector:
    parser = _Collector()
    parser.feed(page)
    parser.close()
    return parser


# -- metrics ----------------------------------------------------------------------------------


def test_flatten_metrics_nested_keys_in_order():
    metrics = {
        "digits": {"train": 600, "t10k": 200},
        "medians": {"plain": {"thickness": 2.5, "slant": 0.1}},
        "seconds": 1.5,
        "empty": {},
    }
    flat = flatten_metrics(metrics)
    assert list(flat) == [
        "digits.train",
        "digits.t10k",
        "medians.plain.thickness",
        "medians.plain.slant",
        "seconds",
        "empty",
    ]
    assert flat["medians.plain.thickness"] == 2.5 and flat["digits.t10k"] == 200


@pytest.mark.parametrize(
    "value, text",
    [
        (0.123456789, "0.1235"),
        (2.0, "2"),
        (1234.5678, "1235"),
        (12345.678, "12346"),
        (9999.7, "10000"),
        (0.00012345, "1.234e-4"),  # scientific below 1e-3: never rounds to 0
        (0.0012345, "0.001234"),
        (1.5e-7, "1.5e-7"),
        (-2.5e-10, "-2.5e-10"),
        (3.2e9, "3.2e9"),
        (1234567.0, "1.235e6"),
        (-2.71828, "-2.718"),
        (600, "600"),
        (np.int64(12345678), "12345678"),
        (np.float32(0.25), "0.25"),
        (float("nan"), "NaN"),
        (float("inf"), "inf"),
        (0.0, "0"),
        (True, "True"),
    ],
)
def test_format_number(value, text):
    assert format_number(value) == text


def test_add_metrics_renders_flattened_names_and_formatted_values():
    report = Report("r")
    report.add_metrics({"digits": {"train": 600}, "ratio": 1.98123456, "curve": [0.5, 1.0 / 3.0]}, title="Headline")
    page = report.render()
    rows = re.findall(r'<tr><th scope="row">([^<]*)</th><td[^>]*>([^<]*)</td></tr>', page)
    assert rows == [("digits.train", "600"), ("ratio", "1.981"), ("curve", "[0.5, 0.3333]")]
    assert '<h3 id="headline">Headline</h3>' in page


# -- figures in the page ----------------------------------------------------------------------


def test_figure_is_embedded_as_the_same_png_bytes(tmp_path):
    png = _png()
    path = tmp_path / "fig.png"
    path.write_bytes(_png(dpi=20))
    report = Report("Figures")
    report.add_figure(png, caption="from bytes")
    report.add_figure(path)
    page = report.render()
    embedded = [base64.b64decode(match, validate=True) for match in DATA_URI.findall(page)]
    assert embedded == [png, path.read_bytes()]
    assert all(data.startswith(PNG_SIGNATURE) for data in embedded)
    images = [attrs for tag, attrs in _parse(page).tags if tag == "img"]
    assert [img["alt"] for img in images] == ["from bytes", "Figure 2"]


def test_figure_object_is_accepted_and_non_png_refused():
    report = Report("r")
    fig = new_figure(1, 1)
    fig.add_subplot()
    report.add_figure(fig)
    (data,) = DATA_URI.findall(report.render())
    assert base64.b64decode(data).startswith(PNG_SIGNATURE)
    with pytest.raises(InvalidArgumentError, match="png"):
        report.add_figure(b"GIF89a not a png")
    with pytest.raises(InvalidArgumentError, match="png"):
        report.add_figure(12)


# -- self-contained, escaped ------------------------------------------------------------------


def test_page_is_self_contained_and_escapes_user_text():
    report = Report(EVIL, subtitle=EVIL)
    report.add_heading(EVIL)
    report.add_paragraph(EVIL)
    report.add_metrics({EVIL: {EVIL: EVIL}}, title=EVIL)
    report.add_table(pd.DataFrame({EVIL: [EVIL, "b"], "n": [1.0, 2.0]}), title=EVIL, caption=EVIL)
    report.add_figure(_png(), caption=EVIL, alt=EVIL)
    report.add_code(EVIL)
    report.add_files(["tables/" + EVIL])
    page = report.render()

    assert "<script" not in page
    assert 'src="http' not in page and "<link" not in page and "url(" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    parsed = _parse(page)
    assert {tag for tag, _ in parsed.tags}.isdisjoint({"script", "link", "iframe", "object"})
    # every image is embedded: the only sources are data URIs
    assert all(attrs["src"].startswith("data:image/png;base64,") for tag, attrs in parsed.tags if tag == "img")
    # the text reads back as the user wrote it
    assert "".join(parsed.text).count(EVIL) >= 10


def test_footer_has_time_and_version_and_write_is_atomic(tmp_path):
    report = Report("Run", subtitle="seed 0")
    report.add_paragraph("first\n\nsecond")
    now = datetime(2024, 5, 17, 9, 3, 7)
    path = report.write(tmp_path / "out" / "report.html", now=now)
    page = path.read_text(encoding="utf-8")
    assert page == report.render(now=now)
    assert "Generated 2024-05-17 09:03:07" in page and f"repscope {repscope.__version__}" in page
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    assert "<p>first</p>" in page and "<p>second</p>" in page
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]


def test_contents_list_links_sections():
    report = Report("r")
    for name in ("Data", "Model", "Data"):
        report.add_heading(name)
    page = report.render()
    assert '<a href="#data">Data</a>' in page and '<a href="#data-2">Data</a>' in page
    with pytest.raises(InvalidArgumentError, match="level"):
        report.add_heading("x", level=1)


# -- tables -----------------------------------------------------------------------------------


def test_table_truncates_and_formats():
    df = pd.DataFrame({"x": np.arange(60) / 7.0, "name": [f"row{i}" for i in range(60)]})
    df.loc[1, "name"] = None
    report = Report("r")
    report.add_table(df, title="Values", caption="sevenths")
    page = report.render()
    body = page.split("<tbody>")[1].split("</tbody>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body)
    assert len(rows) == 50
    assert rows[1] == '<td class="num">0.1429</td><td></td>'
    assert "sevenths Showing the first 50 of 60 rows." in page

    report = Report("r")
    report.add_table(df.head(3), float_format=".2f", max_rows=None)
    assert '<td class="num">0.29</td>' in report.render()


def test_table_shows_a_named_index():
    df = pd.DataFrame({"median": [2.5, 3.0]}, index=pd.Index([0, 1], name="label"))
    report = Report("r")
    report.add_table(df)
    page = report.render()
    assert '<thead><tr><th>label</th><th class="num">median</th></tr></thead>' in page
    assert '<tr><th scope="row">1</th><td class="num">3</td></tr>' in page
    with pytest.raises(InvalidArgumentError, match="df"):
        report.add_table([[1, 2]])


# -- figures ----------------------------------------------------------------------------------


def test_image_grid_shows_each_image_once():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(6, 28, 28), dtype=np.uint8)
    fig = image_grid(images, nrows=2, ncols=3, titles=list("abcdef"), row_labels=["plain", "thin"])
    assert isinstance(fig, Figure)
    axes = fig.axes
    assert len(axes) == 6
    for ax, image, title in zip(axes, images, "abcdef"):
        (shown,) = ax.get_images()
        np.testing.assert_array_equal(np.asarray(shown.get_array()), image)
        assert shown.get_clim() == (0, 255)
        assert ax.get_title() == title
        assert list(ax.get_xticks()) == [] and list(ax.get_yticks()) == []
    assert [axes[0].get_ylabel(), axes[3].get_ylabel()] == ["plain", "thin"]
    assert save_png_bytes(fig, dpi=30).startswith(PNG_SIGNATURE)


def test_image_grid_rgb_blank_cells_and_validation():
    images = np.zeros((4, 5, 5, 3), dtype=np.float32)
    images[1, ..., 0] = 1.0
    fig = image_grid(images, nrows=2, ncols=3)
    assert len(fig.axes) == 6
    assert [len(ax.get_images()) for ax in fig.axes] == [1, 1, 1, 1, 0, 0]
    np.testing.assert_array_equal(fig.axes[1].get_images()[0].get_array(), images[1])
    with pytest.raises(InvalidArgumentError, match="images"):
        image_grid(np.zeros((7, 5, 5)), nrows=2, ncols=3)
    with pytest.raises(InvalidArgumentError, match="images"):
        image_grid(np.zeros((5, 5)), nrows=1, ncols=1)
    with pytest.raises(InvalidArgumentError, match="titles"):
        image_grid(np.zeros((2, 5, 5)), nrows=1, ncols=2, titles=["one"])
    with pytest.raises(InvalidArgumentError, match="row_labels"):
        image_grid(np.zeros((2, 5, 5)), nrows=1, ncols=2, row_labels=["a", "b"])


def test_distributions_by_class_one_panel_per_column_nans_dropped():
    rng = np.random.default_rng(1)
    labels = np.repeat([0, 1, 2], 40)
    df = pd.DataFrame(
        {
            "label": labels,
            "thickness": rng.normal(2 + labels, 0.3),
            "slant": rng.normal(0, 0.2, size=labels.size),
        }
    )
    df.loc[df.index[:10], "thickness"] = np.nan  # in class 0
    df.loc[df.label == 2, "slant"] = 0.5  # a constant class: no violin possible
    fig = distributions_by_class(df, ["thickness", "slant"], column_labels={"thickness": "thickness (px)"})

    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 2
    assert [ax.get_xlabel() for ax in visible] == ["thickness (px)", "slant"]
    assert [t.get_text() for t in visible[0].get_yticklabels()] == ["0", "1", "2"]
    for ax, column in zip(visible, ["thickness", "slant"]):
        (medians,) = [line for line in ax.get_lines() if line.get_gid() == "medians"]
        expected = df.groupby("label")[column].median().to_numpy()  # pandas skips NaN
        np.testing.assert_allclose(medians.get_xdata(), expected)
        np.testing.assert_array_equal(medians.get_ydata(), [0, 1, 2])
    assert save_png_bytes(fig, dpi=30).startswith(PNG_SIGNATURE)


def test_distributions_by_class_validates_columns():
    df = pd.DataFrame({"label": [0, 1], "a": [1.0, 2.0]})
    with pytest.raises(InvalidArgumentError, match="columns"):
        distributions_by_class(df, ["a", "missing"])
    with pytest.raises(InvalidArgumentError, match="class_column"):
        distributions_by_class(df, ["a"], class_column="digit")


# -- p-values, quick runs, baselines ----------------------------------------------------------


@pytest.mark.parametrize(
    "p, permutations, text",
    [
        (7e-38, None, "7.0e-38"),  # was rounded to 6 decimals and shown as 0
        (0.0, None, "< 1e-300"),  # a normal tail that underflowed is not zero either
        (0.43, None, "0.43"),
        (0.02134, None, "0.0213"),
        (0.00099, None, "9.9e-4"),
        (0.002, 499, "<= 0.002"),  # no permuted statistic reached the observed one: p = 1/(B+1)
        (0.001, 999, "<= 0.001"),
        (0.004, 499, "0.004"),  # above the floor: the value itself
        (float("nan"), None, "NaN"),
    ],
)
def test_format_p_value(p, permutations, text):
    from repscope.report import format_p_value

    assert format_p_value(p, permutations) == text


def test_p_value_names():
    from repscope.report import is_p_value_name

    assert all(is_p_value_name(n) for n in ("p", "p_value", "pvalue", "quadratic_p_value", "mmd_p", "a.b.P_VALUE"))
    assert not any(is_p_value_name(n) for n in ("pp", "group", "slope", "p_value_count", "top"))


def test_metrics_and_tables_write_p_values_that_never_read_zero():
    report = Report("r")
    report.add_metrics(
        {"linear": {"p_value": 7e-38, "mmd2": 0.25}, "quadratic_p_value": 0.002, "quadratic_permutations": 499}
    )
    table = pd.DataFrame(
        {"model": ["vae", "gan"], "p_value": [0.01, 0.5], "permutations": [99, 999], "quadratic_p": [0.03, 0.001]}
    )
    report.add_table(table, float_format=".2f")
    cells = re.findall(r"<td[^>]*>(.*?)</td>", report.render())
    assert cells[:4] == ["7.0e-38", "0.25", "&lt;= 0.002", "499"]
    # the table's own permutations column sets the floor of its p columns, row by row
    assert cells[4:12] == ["vae", "&lt;= 0.01", "99", "0.03", "gan", "0.5", "999", "&lt;= 0.001"]
    report = Report("r")
    report.add_table(table[["model", "p_value"]].assign(p_value=[1e-12, 0.5]))  # no permutations: the value
    assert re.findall(r"<td[^>]*>(.*?)</td>", report.render())[1] == "1.0e-12"


def test_quick_run_banner_and_warnings_at_the_top():
    from repscope.report import QUICK_RUN_TEXT

    plain = Report("r").render()
    assert "banner" not in plain.split("<main>")[0].split("</style>")[1] and not Report("r").quick
    report = Report("r", quick=True)
    report.add_paragraph("body")
    report.add_warning(f"accuracy below baseline {EVIL}")
    page = report.render()
    top = page.split("<main>")[0]
    assert QUICK_RUN_TEXT.replace("'", "&#x27;") in top and "Warning: accuracy below baseline" in top
    assert EVIL not in page
    custom = Report("r")
    custom.mark_quick("Quick run: 2 epochs")
    assert "Quick run: 2 epochs" in custom.render() and custom.quick


def test_table_marks_results_below_a_constant_baseline():
    table = pd.DataFrame({"task": ["recognition", "abnormality"], "accuracy": [0.95, 0.70], "rmse": [0.4, 0.9]})
    report = Report("r")
    report.add_table(table, title="Table 3", baseline={"accuracy": 0.80})
    report.add_table(
        table,
        title="Errors",
        baseline={"rmse": 0.5},
        higher_is_better=False,
        baseline_label="constant-prediction baseline",
    )
    page = report.render()
    assert page.count('class="num below-baseline"') == 2
    assert '<td class="num below-baseline">0.7 \u25bc</td>' in page
    assert '<td class="num below-baseline">0.9 \u25bc</td>' in page
    assert report.warnings == [
        "Table 3: 1 of 2 values below the constant baseline (accuracy: 0.8).",
        "Errors: 1 of 2 values above the constant-prediction baseline (rmse: 0.5).",
    ]
    quiet = Report("r")
    quiet.add_table(table, baseline={"accuracy": 0.5})
    assert quiet.warnings == [] and "below-baseline" not in quiet.render().split("</style>")[1]
    with pytest.raises(InvalidArgumentError, match="baseline: no column named speed"):
        quiet.add_table(table, baseline={"speed": 1.0})

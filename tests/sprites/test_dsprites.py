"""dSprites drawn procedurally: grid, index mapping, geometry of the drawings, the .npz layout."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.data.dsprites import (
    FACTOR_SIZES,
    FACTOR_VALUES,
    SPRITE_RADIUS_PX,
    TOTAL,
    DSprites,
    classes_to_index,
    classes_to_values,
    index_to_classes,
    read_npz,
    render,
    values_to_classes,
    write_npz,
)
from repscope.errors import DataFormatError, InvalidArgumentError


def classes(shape=0, scale=5, orientation=0, x=16, y=16):
    return np.array([[0, shape, scale, orientation, x, y]])


def test_grid_size_and_values_match_the_original_layout():
    assert TOTAL == 737_280 == 3 * 6 * 40 * 32 * 32
    assert FACTOR_VALUES["scale"][0] == 0.5 and FACTOR_VALUES["scale"][-1] == 1.0
    assert FACTOR_VALUES["orientation"][-1] == pytest.approx(2 * np.pi)
    assert list(FACTOR_VALUES["shape"]) == [1.0, 2.0, 3.0]


def test_index_classes_values_round_trip():
    rng = np.random.default_rng(0)
    index = rng.integers(0, TOTAL, size=2000)
    found = index_to_classes(index)
    assert np.array_equal(classes_to_index(found), index)
    assert np.array_equal(values_to_classes(classes_to_values(found)), found)
    # row-major, posY fastest: index 1 is posY class 1, index 32 is posX class 1
    assert index_to_classes(1).tolist() == [0, 0, 0, 0, 0, 1]
    assert index_to_classes(32).tolist() == [0, 0, 0, 0, 1, 0]
    assert index_to_classes(TOTAL - 1).tolist() == [s - 1 for s in FACTOR_SIZES]
    with pytest.raises(InvalidArgumentError, match="index"):
        index_to_classes(TOTAL)
    with pytest.raises(InvalidArgumentError, match="shape"):
        classes_to_index([[0, 3, 0, 0, 0, 0]])


def test_images_are_binary_and_area_follows_the_shape_formula():
    square = render(classes(shape=0, scale=5))[0]
    assert set(np.unique(square)) == {0, 1}
    # square of side 2 * 9 px at scale 1: 324 px; ellipse pi * 9 * 4.5 = 127 px
    assert abs(int(square.sum()) - (2 * SPRITE_RADIUS_PX) ** 2) <= 2 * 2 * SPRITE_RADIUS_PX
    ellipse = render(classes(shape=1, scale=5))[0]
    assert abs(int(ellipse.sum()) - np.pi * SPRITE_RADIUS_PX * SPRITE_RADIUS_PX / 2) < 12
    heart = render(classes(shape=2, scale=5))[0]
    assert ellipse.sum() < heart.sum() < square.sum()


def test_area_scales_with_scale_squared_and_rotation_keeps_it():
    areas = np.array([render(classes(shape=0, scale=s))[0].sum() for s in range(6)])
    assert np.all(np.diff(areas) > 0)
    expected = areas[-1] * FACTOR_VALUES["scale"] ** 2
    assert np.all(np.abs(areas - expected) / expected < 0.1)
    rotated = [render(classes(shape=1, orientation=o))[0].sum() for o in range(0, 40, 7)]
    assert max(rotated) - min(rotated) < 0.08 * np.mean(rotated)
    # orientation 0 and 2 pi coincide, as in the original grid
    assert np.array_equal(render(classes(orientation=0)), render(classes(orientation=39)))


def test_position_moves_the_centre_of_mass_and_shapes_stay_whole():
    left = render(classes(x=0))[0]
    right = render(classes(x=31))[0]
    top = render(classes(y=0))[0]
    cols = np.arange(64) + 0.5
    assert (left.sum(0) * cols).sum() / left.sum() < 20 < 44 < (right.sum(0) * cols).sum() / right.sum()
    assert (top.sum(1) * cols).sum() / top.sum() < 20  # posY 0 is the top row, as the original
    # every shape at the largest scale, every orientation, in all four corners: nothing cut off
    for shape in range(3):
        for orientation in range(0, 40, 3):
            corners = np.array([[0, shape, 5, orientation, x, y] for x in (0, 31) for y in (0, 31)])
            images = render(corners)
            centre = render(np.array([[0, shape, 5, orientation, 16, 16]]))[0].sum()
            # pixel-grid aliasing changes the area of a shifted shape by a few pixels, a cut-off by far more
            assert np.all(np.abs(images.sum((1, 2)).astype(int) - int(centre)) <= max(6, 0.05 * centre))
            assert (
                images[:, 0, :].sum() == images[:, -1, :].sum() == images[:, :, 0].sum() == images[:, :, -1].sum() == 0
            )


def test_streaming_matches_random_access_and_sampling_is_seeded():
    data = DSprites()
    index = data.sample_indices(50, rng=3)
    assert np.array_equal(index, data.sample_indices(50, rng=3))
    images, found = next(data.batches(index, batch_size=50))
    for k in (0, 17, 49):
        image, cls = data[int(index[k])]
        assert np.array_equal(image, images[k]) and np.array_equal(cls, found[k])


def test_npz_export_is_readable_as_the_original_layout_and_round_trips(tmp_path):
    index = np.array([0, 1, 1000, 500_000, TOTAL - 1])
    path = write_npz(tmp_path / "dsprites.npz", index)
    original_style = np.load(path, allow_pickle=True, encoding="latin1")
    assert original_style["imgs"].shape == (5, 64, 64) and original_style["imgs"].dtype == np.uint8
    meta = original_style["metadata"][()]
    assert list(meta["latents_sizes"]) == list(FACTOR_SIZES)
    back = read_npz(path)
    assert np.array_equal(back["imgs"], DSprites().images(index))
    assert np.array_equal(back["latents_classes"], index_to_classes(index))
    assert np.allclose(back["latents_values"], classes_to_values(index_to_classes(index)))
    bad = tmp_path / "bad.npz"
    np.savez(bad, imgs=np.zeros((2, 64, 64), np.uint8))
    with pytest.raises(DataFormatError, match="missing latents_values"):
        read_npz(bad)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(DataFormatError, match="junk.npz"):
        read_npz(tmp_path / "junk.npz")


def whole_frame(classes_: np.ndarray) -> np.ndarray:
    """The drawing rule of the module docstring applied to every pixel of the 64x64 frame: a pixel
    is on when its centre lies inside the shape rotated counter-clockwise by the orientation, scaled
    to half-size ``scale * SPRITE_RADIUS_PX`` and centred at ``MARGIN_PX + pos * (64 - 2 MARGIN_PX)``."""
    from repscope.data import dsprites as d

    values = classes_to_values(classes_)
    span = 64 - 2.0 * d.MARGIN_PX
    centres = (np.arange(64) + 0.5)[None, :]
    out = np.zeros((len(classes_), 64, 64), dtype=np.uint8)
    for k, (shape, (scale, angle, pos_x, pos_y)) in enumerate(zip(classes_[:, 1], values[:, 2:])):
        dx = np.broadcast_to(centres - (d.MARGIN_PX + pos_x * span), (64, 64))  # columns
        dy = np.broadcast_to((d.MARGIN_PX + pos_y * span) - centres.T, (64, 64))  # rows, y up
        radius = scale * SPRITE_RADIUS_PX
        u = (np.cos(angle) * dx + np.sin(angle) * dy) / radius
        v = (np.cos(angle) * dy - np.sin(angle) * dx) / radius
        out[k] = d.inside_shape(int(shape), u, v)
    return out


def test_window_drawing_equals_whole_frame_drawing():
    rng = np.random.default_rng(5)
    # every shape x scale x orientation once, each at a corner, an edge or a random position
    grid = np.stack(np.meshgrid(np.arange(3), np.arange(6), np.arange(40), indexing="ij"), -1).reshape(-1, 3)
    extremes = np.array([[0, 0], [0, 31], [31, 0], [31, 31], [0, 15], [31, 16], [15, 0], [16, 31]])
    positions = np.where(
        np.arange(len(grid))[:, None] % 3 == 2,
        rng.integers(0, 32, size=(len(grid), 2)),
        extremes[np.arange(len(grid)) % len(extremes)],
    )
    classes_ = np.column_stack([np.zeros(len(grid), np.int64), grid, positions])
    drawn = render(classes_)
    expected = whole_frame(classes_)
    assert expected.sum(axis=(1, 2)).min() > 20  # every expected shape is there
    mismatched = np.flatnonzero((drawn != expected).any(axis=(1, 2)))
    assert mismatched.size == 0, f"{mismatched.size} images differ, first classes {classes_[mismatched[:3]].tolist()}"
    # the same images through the streaming access
    assert np.array_equal(DSprites().images(classes_to_index(classes_[:50])), expected[:50])

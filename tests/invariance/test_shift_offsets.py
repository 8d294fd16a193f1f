"""The shift augmentation (:func:`repscope.data.invariance.transforms.shift_each`) at offsets where the
roundings part ways: to the nearest pixel with a half to the even one (0.5 -> 0, 1.5 -> 2, -2.5 -> -2,
2.7 -> 3), where truncation, flooring, ceiling and rounding halves away from zero each move some of
these images by another pixel. Every expected image is written out by hand."""

from __future__ import annotations

import torch

from repscope.data.invariance.transforms import shift_each

# 4 rows x 6 columns, value 10 * row + column: a pixel names where it came from
IMAGE = [[10 * row + column for column in range(6)] for row in range(4)]

# (right, down) offsets in pixels, the whole-pixel move they round to, and the moved image:
# out[y][x] = IMAGE[clip(y - down)][clip(x - right)], the edge pixels repeated
CASES = [
    ((0.5, -0.5), IMAGE),  # (0, 0): halves go to the even 0 (floor would move up, ceil right)
    (
        (1.5, -1.5),  # (2, -2): truncation would move (1, -1)
        [[20, 20, 20, 21, 22, 23], [30, 30, 30, 31, 32, 33], [30, 30, 30, 31, 32, 33], [30, 30, 30, 31, 32, 33]],
    ),
    (
        (-2.5, 2.5),  # (-2, 2): rounding halves away from zero would move (-3, 3)
        [[2, 3, 4, 5, 5, 5], [2, 3, 4, 5, 5, 5], [2, 3, 4, 5, 5, 5], [12, 13, 14, 15, 15, 15]],
    ),
    (
        (2.7, -2.7),  # (3, -3): truncation would move (2, -2)
        [[30, 30, 30, 30, 31, 32]] * 4,
    ),
    (
        (-0.5, 1.5),  # (0, 2): floor would move left
        [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5], [10, 11, 12, 13, 14, 15]],
    ),
    (
        (-2.7, 0.5),  # (-3, 0)
        [[10 * row + column for column in (3, 4, 5, 5, 5, 5)] for row in range(4)],
    ),
]


def test_each_image_moves_by_its_offsets_rounded_to_the_nearest_even_on_halves():
    images = torch.tensor(IMAGE, dtype=torch.float32).expand(len(CASES), 1, 4, 6).clone()
    offsets = torch.tensor([offset for offset, _ in CASES])
    moved = shift_each(images, offsets)
    for k, (offset, expected) in enumerate(CASES):
        assert moved[k, 0].tolist() == expected, offset
    # float64 offsets and a batch given one image at a time move the same
    for k, (offset, expected) in enumerate(CASES):
        alone = shift_each(images[k : k + 1], torch.tensor([offset], dtype=torch.float64))
        assert alone[0, 0].tolist() == expected, offset


def test_a_shift_drawn_over_a_range_reaches_its_ends_half_as_often_as_the_pixels_between():
    """Uniform draws over [-2, 2] rounded to the nearest pixel: -2 and 2 each take 1/8 of the draws (the
    half-pixel at each end), -1, 0 and 1 a quarter each; truncation would never reach 2 and give 0 half."""
    from repscope.train.tasks import SupervisedTask

    task = SupervisedTask(
        network="attribute-cnn", num_outputs=3, image_shape=[1, 16, 16], augment="shift", augment_ranges=[[-2, 2]]
    )
    image = torch.zeros(1, 1, 16, 16)
    image[0, 0, 8, 8] = 1.0
    torch.manual_seed(7)
    moved = task.augmented(image.expand(1500, -1, -1, -1).clone())
    found = torch.nonzero(moved[:, 0] == 1.0)
    assert len(found) == 1500  # each image moved whole: its one bright pixel kept
    offsets = torch.cat([found[:, 1] - 8, found[:, 2] - 8])  # down, then right: 3,000 draws
    shares = {value: float((offsets == value).float().mean()) for value in range(-2, 3)}
    expected = {-2: 0.125, -1: 0.25, 0: 0.25, 1: 0.25, 2: 0.125}
    # binomial(3000, 1/4): sd 0.008; 0.035 is over 4 sd
    assert all(abs(shares[value] - expected[value]) < 0.035 for value in expected), shares

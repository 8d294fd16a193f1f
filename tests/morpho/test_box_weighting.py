"""Bounding boxes (the ``box`` field) and the VAE family's reconstruction weighting inside them."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from repscope.data import dsprites
from repscope.data.boxes import box_masks, foreground_boxes
from repscope.errors import InvalidArgumentError
from repscope.train.tasks.disentangling_vaes import FactorVAETask
from repscope.train.tasks.semi_supervised import SemiSupervisedBetaTCVAETask
from repscope.train.tasks.vae import VAETask, box_weight_map

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def test_foreground_boxes_by_hand():
    images = np.zeros((3, 2, 5, 6), np.uint8)
    images[0, 0, 1:3, 2] = 255  # rows 1-2 of column 2
    images[0, 1, 4, 5] = 10  # another channel: the bottom-right pixel
    images[1, 0, 0, 0] = 1
    boxes = foreground_boxes(images)
    np.testing.assert_array_equal(boxes, [[2, 1, 6, 5], [0, 0, 1, 1], [0, 0, 0, 0]])
    assert boxes.dtype == np.float32
    # a threshold leaves out the dim pixel
    np.testing.assert_array_equal(foreground_boxes(images, threshold=10)[0], [2, 1, 3, 3])
    with pytest.raises(InvalidArgumentError, match="images"):
        foreground_boxes(np.zeros((5, 6)))


def test_box_masks_hold_exactly_the_pixels_of_whole_pixel_boxes():
    mask = box_masks([[1, 2, 3, 4]], height=5, width=4)[0]
    expected = np.zeros((5, 4), bool)
    expected[2:4, 1:3] = True
    np.testing.assert_array_equal(mask, expected)
    # a fractional box holds the pixels whose centres it covers
    column_one = np.zeros((5, 4), bool)
    column_one[:, 1] = True
    np.testing.assert_array_equal(box_masks([[0.6, 0.0, 1.6, 5.0]], 5, 4)[0], column_one)
    with pytest.raises(InvalidArgumentError, match="boxes"):
        box_masks([[0, 0, 1]], 5, 4)


def test_dsprites_boxes_are_the_tight_boxes_of_the_sprites():
    rng = np.random.default_rng(0)
    sample = dsprites.DSprites().sample(rng.integers(0, dsprites.TOTAL, 200))
    images, boxes = sample["image"], sample["box"]
    masks = box_masks(boxes, 64, 64)
    lit = images[:, 0] > 0
    assert not (lit & ~masks).any()  # every sprite pixel inside its box
    # tight: each side of the box touches a lit pixel
    for image, (x0, y0, x1, y1) in zip(lit, boxes.astype(int)):
        assert image[y0, x0:x1].any() and image[y1 - 1, x0:x1].any()
        assert image[y0:y1, x0].any() and image[y0:y1, x1 - 1].any()
    # larger sprites have larger boxes on average (the scale factor)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    scale = sample["scale"]
    assert area[scale == 5].mean() > area[scale == 0].mean()


def test_box_weight_map_matches_the_numpy_masks():
    boxes = torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 6.0, 5.0], [0.0, 0.0, 0.0, 0.0]])
    weights = box_weight_map(boxes, 5, 6, 4.0)
    assert weights.shape == (3, 1, 5, 6)
    np.testing.assert_array_equal(weights[:, 0].numpy(), 1.0 + 3.0 * box_masks(boxes.numpy(), 5, 6))


def _losses_with_seed(task, batch, seed=0):
    torch.manual_seed(seed)
    with task.box_weighting(batch):
        return task.losses(batch["image"])


@pytest.mark.parametrize("cls", [VAETask, FactorVAETask, SemiSupervisedBetaTCVAETask])
def test_box_weight_adds_the_weighted_inside_pixels_to_the_reconstruction(cls):
    torch.manual_seed(1)
    plain = cls(latent_dim=6, image_shape=(1, 64, 64), architecture="conv64")
    weighted = cls(latent_dim=6, image_shape=(1, 64, 64), architecture="conv64", box_weight=5.0)
    weighted.load_state_dict(plain.state_dict())
    assert "box" in weighted.batch_fields and "box" not in plain.batch_fields
    sample = dsprites.DSprites().sample(np.arange(0, dsprites.TOTAL, 100_000))
    images = torch.from_numpy(sample["image"]).float() / 255
    batch = {"image": images, "box": torch.from_numpy(sample["box"])}
    base = _losses_with_seed(plain, batch)["reconstruction"]
    boosted = _losses_with_seed(weighted, batch)["reconstruction"]
    # the same eps: the difference is (w - 1) times the per-image BCE inside the boxes, batch-averaged
    torch.manual_seed(0)
    with torch.no_grad():
        mean, log_var = plain.encoder(images)
        z = mean + torch.randn_like(mean) * torch.exp(0.5 * log_var)
        logits = plain.decoder(z, logits=True)
        bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, images, reduction="none")
    inside = torch.from_numpy(box_masks(sample["box"], 64, 64))[:, None]
    expected_extra = 4.0 * (bce * inside).flatten(1).sum(1).mean()
    assert float(boosted - base) == pytest.approx(float(expected_extra), rel=1e-4)
    assert float(boosted - base) > 0
    # box_weight 1 ignores boxes; box_weight != 1 needs them
    assert float(_losses_with_seed(plain, {"image": images})["reconstruction"]) == pytest.approx(float(base))
    with pytest.raises(InvalidArgumentError, match="box_weight.*'box'"):
        _losses_with_seed(weighted, {"image": images})


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), True])
def test_box_weight_must_be_positive(value):
    with pytest.raises(InvalidArgumentError, match="box_weight"):
        VAETask(latent_dim=4, image_shape=(1, 64, 64), box_weight=value)


def test_box_weighted_model_trains_through_the_framework_on_dsprites(tmp_path):
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    runs = {}
    for weight in (1.0, 20.0):
        config = TrainConfig(
            model=Named(name="beta-vae-semi", params={"latent_dim": 6, "box_weight": weight}),
            data=Named(name="dsprites", params={"train_size": 96, "test_size": 32}),
            trainer=TrainerSection(max_epochs=1),
            batch_size=32,
            seed=0,
        )
        runs[weight] = fit(config, out=tmp_path / f"run-{weight}").metrics["final"]
    # the same seed and data: weighting the sprite's pixels by 20 raises the reconstruction term
    assert runs[20.0]["train_reconstruction_epoch"] > 2 * runs[1.0]["train_reconstruction_epoch"]

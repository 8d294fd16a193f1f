"""Invariance testing: transformation families, probes, variance matrices of a model's signals."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from repscope.data.invariance.transforms import (
    brighten,
    custom_family,
    rotate,
    symmetric_values,
    transform_family,
    zoom,
)
from repscope.errors import InvalidArgumentError
from repscope.metrics.invariance.variance_matrix import subsample_rows, variance_matrix, variance_matrix_of_dif
from repscope.models.morpho.baselines import LeNet5
from repscope.models.probes import convolution_names, resolve_positions, signal_sets
from repscope.studies.invariance.testing import matrices_and_features, model_signals, robust_accuracy


def dot(row: int, column: int, side: int = 9) -> torch.Tensor:
    image = torch.zeros(1, 1, side, side)
    image[0, 0, row, column] = 1.0
    return image


def brightest(image: torch.Tensor) -> tuple[int, int]:
    flat = int(image[0, 0].argmax())
    return divmod(flat, image.shape[-1])


def test_the_paper_families_have_31_values_with_the_identity_in_the_middle():
    rotation = transform_family("rotation")
    assert rotation.values == tuple(float(v) for v in range(-15, 16))
    brightness = transform_family("brightness")
    assert len(brightness) == 31 and brightness.values[0] == -0.3 and brightness.values[15] == 0.0
    assert brightness.values[16] == pytest.approx(0.02)
    scale = transform_family("scale")
    assert scale.values[0] == 0.7 and scale.values[15] == 1.0 and scale.values[-1] == 1.3
    images = torch.rand(3, 1, 12, 12)
    for family in (rotation, brightness, scale):
        assert torch.equal(family.transform(images, 15), images)  # t_k is the identity
    with pytest.raises(InvalidArgumentError, match="steps"):
        symmetric_values(15, 30)
    with pytest.raises(InvalidArgumentError, match="--transform"):
        transform_family("shear")


def test_rotation_turns_counter_clockwise_and_zoom_moves_away_from_the_centre():
    # a dot 3 pixels right of the centre of a 9x9 image, turned 90 degrees, is 3 pixels above it
    assert brightest(rotate(dot(4, 7), 90.0)) == (1, 4)
    assert brightest(rotate(dot(4, 7), -90.0)) == (7, 4)
    # zooming by 2 doubles its distance from the centre; by 0.5 halves it (to within a pixel)
    assert brightest(zoom(dot(4, 6), 2.0)) in {(4, 8)}
    assert brightest(zoom(dot(4, 8), 0.5)) == (4, 6)
    # rotation keeps a centred disc's mass (bilinear resampling, nothing leaves the frame)
    yy, xx = torch.meshgrid(torch.arange(15.0), torch.arange(15.0), indexing="ij")
    disc = (((yy - 7) ** 2 + (xx - 7) ** 2) < 16).float()[None, None]
    assert float(rotate(disc, 13.0).sum()) == pytest.approx(float(disc.sum()), rel=0.02)
    assert float(brighten(torch.full((1, 1, 2, 2), 0.9), 0.3).max()) == 1.0  # clipped
    assert float(brighten(torch.full((1, 1, 2, 2), 0.5), -0.3).max()) == pytest.approx(0.35)


def test_custom_family_checks_its_values():
    family = custom_family("shift", [-1, 0, 1], lambda images, v: torch.roll(images, int(v), dims=-1))
    assert torch.equal(family.transform(dot(0, 0), 2), dot(0, 1))
    with pytest.raises(InvalidArgumentError, match="values"):
        custom_family("bad", [0, 1], lambda images, v: images)


def test_variance_matrix_by_hand_and_against_the_loop_over_pairs():
    # one example with statistics 0, 1, 3: delta = |v_i - v_j|
    np.testing.assert_allclose(variance_matrix([[0.0, 1.0, 3.0]]), [[0, 1, 3], [1, 0, 2], [3, 2, 0]], atol=1e-12)
    # two examples: delta_01 = sqrt(((0 - 1)^2 + (2 - 5)^2) / 2) = sqrt(5)
    assert variance_matrix([[0.0, 1.0], [2.0, 5.0]])[0, 1] == pytest.approx(np.sqrt(5.0))
    rng = np.random.default_rng(0)
    values = 1e4 + rng.normal(size=(200, 31)).cumsum(axis=1) * 1e-3  # large signals, small differences
    fast = variance_matrix(values)
    slow = variance_matrix_of_dif(list(values.T), lambda a, b: a - b)
    np.testing.assert_allclose(fast, slow, rtol=1e-6, atol=1e-12)
    assert np.allclose(fast, fast.T) and np.all(np.diag(fast) == 0)
    with pytest.raises(InvalidArgumentError, match="values"):
        variance_matrix([[np.nan, 1.0]])
    rows = subsample_rows(100, 0.9, seed=3)
    assert len(rows) == 90 and len(set(rows.tolist())) == 90
    np.testing.assert_array_equal(rows, subsample_rows(100, 0.9, seed=3))


def test_probes_find_the_last_two_convolutions():
    model = LeNet5()
    assert convolution_names(model) == ["features.0", "features.3"]
    assert resolve_positions(model, ["CONF", "CONV-1", "CONV-2", "classifier.0"]) == {
        "CONF": None,
        "CONV-1": "features.3",
        "CONV-2": "features.0",
        "classifier.0": "classifier.0",
    }
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        resolve_positions(model, ["nope"])
    single = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.LazyLinear(3))
    with pytest.raises(InvalidArgumentError, match="CONV-2: the model has 1 convolution"):
        resolve_positions(single, ["CONV-2"])
    logits, signals = signal_sets(model.eval(), torch.rand(4, 1, 28, 28), resolve_positions(model, ["CONF", "CONV-1"]))
    assert signals["CONF"].shape == (4, 10) and torch.allclose(signals["CONF"].sum(1), torch.ones(4))
    assert signals["CONV-1"].shape == (4, 16 * 10 * 10)


def test_model_signals_match_a_direct_computation_and_an_invariant_model_gives_zeros():
    torch.manual_seed(0)
    model = LeNet5().eval()
    images = torch.rand(6, 1, 28, 28)
    labels = torch.arange(6) % 10
    family = transform_family("rotation", 6.0, steps=5)
    signals = model_signals(model, images, labels, family, batch_size=4, progress=False)
    assert set(signals.values) == {"max@CONF", "max@CONV-1", "mean@CONV-1", "max@CONV-2", "mean@CONV-2"}
    # max@CONF by hand: the highest softmax of each rotated image
    direct = np.stack(
        [torch.softmax(model(rotate(images, v)), 1).amax(1).detach().double().numpy() for v in family.values], 1
    )
    np.testing.assert_allclose(signals.values["max@CONF"], direct, rtol=1e-6)
    matrices, features = matrices_and_features(signals)
    # the matrix entry by hand from the signals it was computed from: the RMS difference of two columns
    # of nearly equal confidences amplifies the float32 rounding of the signals (checked against `direct`
    # above) far beyond their own 1e-6, so `direct` cannot stand in for them here
    conf = np.asarray(signals.values["max@CONF"], np.float64)
    expected = np.sqrt(np.mean((conf[:, 0] - conf[:, 4]) ** 2))
    assert matrices["max@CONF"][0, 4] == pytest.approx(expected, rel=1e-6)
    assert len(features["max@CONF"]) == 16

    # a model whose confidence does not depend on its input: every max@CONF entry is zero
    class Constant(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv_a = nn.Conv2d(1, 1, 1, bias=False)
            self.conv_b = nn.Conv2d(1, 1, 1, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            pooled = self.conv_b(self.conv_a(x)).mean(dim=(2, 3))
            return torch.cat([pooled * 0, pooled * 0 + 1], dim=1)

    constant = Constant()
    flat = model_signals(
        constant, torch.ones(3, 1, 8, 8), [1, 1, 1], transform_family("brightness", 0.3, 3), progress=False
    )
    assert np.all(matrices_and_features(flat)[0]["max@CONF"] == 0)


def test_correct_only_keeps_the_examples_right_at_the_identity_and_robust_accuracy():
    torch.manual_seed(1)
    model = LeNet5().eval()
    images = torch.rand(20, 1, 28, 28)
    predicted = model(images).argmax(1)
    labels = torch.where(torch.arange(20) < 8, predicted, (predicted + 1) % 10)  # the first 8 are right
    signals = model_signals(
        model, images, labels, transform_family("rotation", 2.0, 3), correct_only=True, progress=False
    )
    assert signals.kept.tolist() == [True] * 8 + [False] * 12
    assert signals.values["max@CONF"].shape == (8, 3)
    assert robust_accuracy([[True, True], [True, False], [False, False], [True, True]]) == 0.5


def test_invariance_test_cli_writes_matrices_features_and_a_report(tmp_path, run_cli):
    import json

    import pandas as pd

    from repscope.models.invariance.simplenet import SimpleNet

    torch.manual_seed(0)
    weights = tmp_path / "cnn5.pt"
    torch.save(SimpleNet().state_dict(), weights)
    out = tmp_path / "test"
    args = ["invariance", "test", "--model", str(weights), "--arch", "cnn5", "--data", "digits"]
    args += ["--data-param", "test_size=60", "--n", "40", "--range", "4", "--steps", "5", "--out", str(out)]
    code, stdout, stderr = run_cli(args)
    assert code == 0, stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["examples"] == 40 and 0 <= metrics["robust_accuracy"] <= metrics["accuracy"] <= 1
    matrix = np.load(out / "matrices" / "max_at_CONF.npy")
    assert matrix.shape == (5, 5) and np.allclose(matrix, matrix.T) and np.all(np.diag(matrix) == 0)
    table = pd.read_csv(out / "tables" / "features.csv")
    assert table["modality"].tolist() == ["max@CONF", "max@CONV-1", "mean@CONV-1", "max@CONV-2", "mean@CONV-2"]
    assert (out / "figures" / "matrix_max_at_CONF.png").exists() and (out / "report.html").exists()
    # the features command on the saved matrix gives the same 15 features (sensitivity needs the model)
    code, stdout, _ = run_cli(["invariance", "features", str(out / "matrices" / "max_at_CONF.npy")])
    printed = json.loads(stdout)["features"]
    assert len(printed) == 15 and "sensitivity" not in printed
    for name, value in printed.items():
        assert value == pytest.approx(metrics["features"]["max@CONF"][name], rel=1e-12, abs=1e-15)
    # --compat reference: the released code's modalities on the examples right at the identity, and its
    # features beside the paper's
    reference_out = tmp_path / "test-reference"
    code, _, stderr = run_cli([*args[:-1], str(reference_out), "--compat", "reference"])
    assert code == 0, stderr
    reference = json.loads((reference_out / "metrics.json").read_text())
    assert reference["compat"] == "reference" and metrics["compat"] == "paper"
    assert reference["examples"] == round(metrics["accuracy"] * 40)  # correct at the identity only
    assert "max_mean@CONV-1" in reference["features_reference"]
    assert "max_mean@CONV-1" not in metrics["features"]
    # an existing output is refused; weights of another network are one clear line
    code, _, stderr = run_cli(args)
    assert code == 1 and "exists" in stderr
    wrong = [*args[:5], "lenet5", *args[6:-1], str(tmp_path / "other")]
    code, _, stderr = run_cli(wrong)
    assert code == 1 and "not weights of network 'lenet5'" in stderr and len(stderr.strip().splitlines()) == 1
    code, _, stderr = run_cli(["invariance", "features", str(weights)])
    assert code == 1 and "not a .npy array" in stderr


def test_per_example_transforms_equal_the_batch_ones_and_draws_cover_the_ranges():
    from repscope.data.invariance.transforms import brighten_each, check_ranges, draw_values, rotate_each, zoom_each

    images = torch.rand(3, 1, 16, 16)
    angles = torch.tensor([-10.0, 0.0, 7.0])
    each = rotate_each(images, angles)
    for k, angle in enumerate(angles.tolist()):
        assert torch.allclose(each[k : k + 1], rotate(images[k : k + 1], angle), atol=1e-6)
    factors, changes = [0.8, 1.0, 1.25], [-0.2, 0.0, 0.1]
    zoomed, brightened = zoom_each(images, torch.tensor(factors)), brighten_each(images, torch.tensor(changes))
    for k in range(3):  # each image by its own value, whatever the others get
        assert torch.allclose(zoomed[k : k + 1], zoom(images[k : k + 1], factors[k]), atol=1e-6)
        assert torch.allclose(brightened[k : k + 1], brighten(images[k : k + 1], changes[k]))
    assert torch.equal(brightened[1], images[1]) and torch.allclose(zoomed[1], images[1], atol=1e-6)
    torch.manual_seed(0)
    values = draw_values(check_ranges("rotation", [[-15, -8], [8, 15]]), 4000)
    assert bool(((values.abs() >= 8) & (values.abs() <= 15)).all())  # the gap stays empty
    assert abs(float((values > 0).float().mean()) - 0.5) < 0.05
    with pytest.raises(InvalidArgumentError, match="augment_ranges"):
        check_ranges("rotation", [[5, -5]])
    with pytest.raises(InvalidArgumentError, match="augment"):
        check_ranges("shear", [[0, 1]])


def test_shift_moves_each_image_by_whole_pixels_and_repeats_the_edges():
    from repscope.data.invariance.transforms import shift_each

    image = torch.arange(20.0).reshape(1, 1, 4, 5)  # value 5 * row + column
    images = torch.cat([image, image + 100.0])
    moved = shift_each(images, torch.tensor([[2.0, 0.0], [-1.2, 1.0]]))  # right 2; left 1 (rounded), down 1
    # right 2: every row starts with its first pixel three times, then the pixels up to the third
    assert moved[0, 0, 2].tolist() == [10.0, 10.0, 10.0, 11.0, 12.0]
    # left 1 and down 1: the top row repeats, the last column repeats
    assert moved[1, 0, 0].tolist() == [101.0, 102.0, 103.0, 104.0, 104.0]
    assert moved[1, 0, 3].tolist() == [111.0, 112.0, 113.0, 114.0, 114.0]
    assert torch.equal(shift_each(images, torch.zeros(2, 2)), images)
    # channels move together
    rgb = torch.stack([image[0, 0], -image[0, 0], image[0, 0] * 2])[None]
    shifted = shift_each(rgb, torch.tensor([[0.0, -1.0]]))
    assert torch.equal(shifted[0, 1], -shifted[0, 0]) and shifted[0, 0, 0].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0]


def test_a_shift_augmented_task_draws_two_offsets_an_image_from_the_ranges():
    from repscope.train.tasks import SupervisedTask

    task = SupervisedTask(
        network="attribute-cnn",
        num_outputs=3,
        image_shape=[1, 16, 16],
        augment="shift",
        augment_ranges=[[-3, -2], [2, 3]],
    )
    image = torch.zeros(1, 1, 16, 16)
    image[0, 0, 8, 8] = 1.0  # one bright pixel in the middle
    torch.manual_seed(1)
    moved = task.augmented(image.expand(200, -1, -1, -1).clone())
    rows, columns = (index - 8 for index in torch.nonzero(moved[:, 0] == 1.0)[:, 1:].T)
    assert len(rows) == 200  # one pixel each, moved whole
    for offsets in (rows, columns):  # each in [-3, -2] or [2, 3], both signs, never 0 or 1
        assert set(offsets.abs().tolist()) <= {2, 3} and (offsets > 0).any() and (offsets < 0).any()
    assert not torch.equal(rows, columns)  # right and down are drawn apart


@pytest.mark.slow  # trains two classifiers to a measurable robustness gap
def test_rotation_augmentation_raises_robust_accuracy_under_rotation(tmp_path):
    from repscope.data.registry import load_dataset
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    data = Named(name="digits", params={"train_size": 1500, "test_size": 300, "target": "label"})
    robust = {}
    for augment, params in (("none", {}), ("rotation", {"augment": "rotation", "augment_ranges": [[-40, 40]]})):
        config = TrainConfig(
            model=Named(name="cnn5", params=params), data=data, trainer=TrainerSection(max_epochs=4), batch_size=32
        )
        outcome = fit(config, out=tmp_path / augment)
        assert outcome.task.augment == augment and outcome.task.hparams.augment == augment
        test = load_dataset("digits", **data.params).batch("test", np.arange(300), ["image", "target"])
        family = transform_family("rotation", 40.0, steps=9)
        signals = model_signals(outcome.task.network, test["image"], test["target"], family, progress=False)
        robust[augment] = robust_accuracy(signals.correct)
    # trained on digits turned by up to 40 degrees, the model stays right over more of the turns
    assert robust["rotation"] > robust["none"] + 0.1, robust

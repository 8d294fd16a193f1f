"""The classifier role of ``repscope assess``: labelled data, the invariance test, the attacks.

The classifiers are built here so that their properties are provable: one thresholds the mean pixel
(rotation about the centre keeps a centred line's mean, up to interpolation: invariant), one reads a
single pixel off the centre (a rotation moves the line away from it: not invariant), and one for the
attacks is fooled by lowering any one pixel (L0 at threshold 1 always wins, L-infinity within 1 never).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.studies.assess.classifier import assess_classifier, attack_assessment, invariance_assessment
from repscope.studies.assess.label_data import LabelData, load_label_data
from repscope.studies.zeroshot.attacks import attack

SIZE = 28


def line_images(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Half blank images (class 0), half a bright horizontal line through the centre, columns 4-23 (class 1)."""
    rng = np.random.default_rng(seed)
    images = np.zeros((count, 1, SIZE, SIZE), np.uint8)
    labels = np.arange(count) % 2
    for k in np.flatnonzero(labels):
        images[k, 0, 13:15, 4:24] = rng.integers(200, 256)
    return images, labels.astype(np.int64)


class PixelNet(nn.Module):
    """Two 1x1 identity convolutions, then two logits from one statistic of the image: its mean (``pixel``
    None) or one pixel; class 1 when the statistic exceeds ``threshold``."""

    def __init__(self, pixel: tuple[int, int] | None, threshold: float) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 1, 1), nn.Conv2d(1, 1, 1)
        for conv in (self.conv1, self.conv2):
            nn.init.ones_(conv.weight)
            nn.init.zeros_(conv.bias)
        self.pixel, self.threshold = pixel, threshold

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        signal = self.conv2(self.conv1(images))
        value = signal.mean(dim=(1, 2, 3)) if self.pixel is None else signal[:, 0, self.pixel[0], self.pixel[1]]
        margin = 3.0 * (value - self.threshold) / self.threshold
        return torch.stack([-margin, margin], dim=1)


class Classifier:
    """The adapter's interface around a network: uint8 or float [0, 1] (N, C, H, W) images."""

    def __init__(self, network: nn.Module, expose_network: bool = True) -> None:
        self._network = network.eval()
        self.expose_network = expose_network

    @property
    def network(self):  # noqa: D102
        if not self.expose_network:
            raise AttributeError("network")
        return self._network

    def soft_labels(self, images) -> np.ndarray:
        pixels = torch.as_tensor(np.asarray(images))
        pixels = pixels.float() / 255 if pixels.dtype == torch.uint8 else pixels.float()
        with torch.no_grad():
            return torch.softmax(self._network(pixels).double(), dim=1).numpy()

    def predict(self, images) -> np.ndarray:
        return self.soft_labels(images).argmax(axis=1)


@pytest.fixture(scope="module")
def lines() -> LabelData:
    images, labels = line_images(16)
    return load_label_data((images, labels))


@pytest.fixture(scope="module")
def assessor_folder(tmp_path_factory):
    """A decision tree calling a model invariant when its max@CONF matrix's squared mean is below 5e-7, for
    rotation, and one for scale (a family the tests do not run)."""
    from sklearn.tree import DecisionTreeClassifier

    from repscope.studies.invariance.assessor_files import save_assessors

    folder = tmp_path_factory.mktemp("assessors")
    tree = DecisionTreeClassifier().fit([[0.0], [1e-6]], [1, 0])
    for family in ("rotation", "scale"):
        (folder / family).mkdir()
        payload = {"assessors": {"tree": tree}, "columns": ["max@CONF:squared_value_mean"], "transform": family}
        save_assessors(folder / family / "assessors.skops", {**payload, "compat": "paper"})
    return folder


@pytest.fixture(scope="module")
def mean_vs_pixel(lines, assessor_folder):
    # the mean of a line image is >= 40 * 200 / 784 / 255 ~ 0.04; threshold half that; the pixel at column 21
    # of the centre row is 1 on the line, and a 15-degree turn moves it 7 * sin(15) ~ 1.8 rows away
    options = {"families": ("rotation",), "steps": 5, "bootstrap": 20, "progress": False, "assessor": assessor_folder}
    mean = invariance_assessment(Classifier(PixelNet(None, 0.02)), lines, **options)
    pixel = invariance_assessment(Classifier(PixelNet((13, 21), 0.5)), lines, **options)
    return mean, pixel


def test_mean_classifier_is_rotation_invariant(mean_vs_pixel):
    mean, _ = mean_vs_pixel
    metrics = mean.metrics["invariance/rotation"]
    assert metrics["accuracy"] == 1.0
    assert metrics["robust_accuracy"] == metrics["accuracy"]
    assert np.abs(mean.arrays["variance_rotation_max_at_CONF"]).max() < 1e-4
    assert mean.arrays["correct_rotation"].shape == (16, 5)
    assert len(mean.tables["invariance_rotation"]) == 5  # the paper's five modalities, 16 features each


def test_one_pixel_classifier_is_not(mean_vs_pixel):
    mean, pixel = mean_vs_pixel
    metrics = pixel.metrics["invariance/rotation"]
    assert metrics["accuracy"] == 1.0
    # the blank images stay right; every line image is lost at the extreme angles
    assert metrics["robust_accuracy"] == 0.5
    turned = np.abs(pixel.arrays["variance_rotation_max_at_CONF"]).max()
    assert turned > 100 * np.abs(mean.arrays["variance_rotation_max_at_CONF"]).max()
    rows = {row.metric: row for row in pixel.headline}
    assert rows["robust_accuracy"].chance == 0.5  # 1 / classes
    assert rows["robust_accuracy"].ci_low <= 0.5 <= rows["robust_accuracy"].ci_high


def test_assessors_tell_the_two_apart(mean_vs_pixel):
    mean, pixel = mean_vs_pixel
    assert mean.metrics["invariance/rotation"]["verdict"] == {"tree": 1}
    assert pixel.metrics["invariance/rotation"]["verdict"] == {"tree": 0}
    assert pixel.tables["invariance_verdicts"].to_dict("records") == [
        {"family": "rotation", "assessor": "tree", "invariant": 0}
    ]
    assert any("scale" in note for note in pixel.notes)  # given, not applied


def test_soft_labels_only_classifier_uses_the_output_modality(lines):
    result = invariance_assessment(
        Classifier(PixelNet((13, 21), 0.5), expose_network=False), lines,
        families=("rotation",), steps=5, bootstrap=0, progress=False,
    )  # fmt: skip
    assert list(result.metrics["invariance/rotation"]["modalities"]) == ["max@CONF"]
    assert result.metrics["invariance/rotation"]["robust_accuracy"] == 0.5  # same decisions as the network
    assert any("max@CONF" in note for note in result.notes)


def test_unknown_family_is_refused(lines):
    with pytest.raises(InvalidArgumentError, match="--transform"):
        invariance_assessment(Classifier(PixelNet(None, 0.02)), lines, families=("shear",), progress=False)


# ---------------------------------------------------------------------------------------------------
# attacks


class MinPixel:
    """Class 1 while every pixel is at least 250 (soft-label falls smoothly below it), else class 0."""

    network = None

    def soft_labels(self, images) -> np.ndarray:
        pixels = np.asarray(images, dtype=np.float64)
        pixels = pixels if np.asarray(images).dtype == np.uint8 else pixels * 255
        margin = (pixels.reshape(len(pixels), -1).min(axis=1) - 249.5) / 2
        one = 1 / (1 + np.exp(-margin))
        return np.stack([1 - one, one], axis=1)

    def predict(self, images) -> np.ndarray:
        return self.soft_labels(images).argmax(axis=1)


@pytest.fixture(scope="module")
def white() -> LabelData:
    images = np.full((3, 1, 6, 6), 255, np.uint8)
    return LabelData(images, np.ones(3, np.int64), 2, "white squares")


def test_one_pixel_decision_falls_to_l0_threshold_1(white):
    options = {"n": 3, "thresholds": (1,), "search": "both", "budget": 10, "bootstrap": 0, "progress": False}
    result = attack_assessment(MinPixel(), white, **options)
    rates = {(row.assessment, row.metric): row.value for row in result.headline}
    assert rates[("attacks/art", "l0_th1_success_rate")] == 1.0
    assert rates[("attacks/art", "linf_th1_success_rate")] == 0.0  # every value stays >= 254
    assert rates[("attacks/dqa", "linf_th1_success_rate")] == 0.0
    assert result.metrics["attacks"]["art"]["successes"]["l0_th1"] == 3
    counts = result.tables["attack_counts"]
    assert set(counts["search"]) == {"art", "dqa"} and counts["images"].eq(3).all()


def test_table1_rows_sit_beside_the_paper():
    cifar = LabelData(np.full((1, 1, 4, 4), 255, np.uint8), np.ones(1, np.int64), 2, "cifar10 (data_dir=x), test split")
    options = {"n": 1, "thresholds": (1, 3, 5, 10), "search": "dqa", "bootstrap": 0, "progress": False}
    result = attack_assessment(MinPixel(), cifar, **options)
    rows = {row.metric: row for row in result.headline}
    assert rows["l0_table1_success_rate"].paper == 337 / 400  # LeNet's 337 of 400 L0 attacks
    assert rows["linf_table1_success_rate"].paper == 340 / 400
    assert rows["total_table1_success_rate"].paper == 677 / 800
    # the total is the mean of the two norms' rates (same number of attacks each)
    per_norm = (rows["l0_table1_success_rate"].value + rows["linf_table1_success_rate"].value) / 2
    assert rows["total_table1_success_rate"].value == pytest.approx(per_norm)
    assert rows["l0_th1_success_rate"].paper is None  # Table 1 prints no per-threshold count


def test_attacks_skip_a_classifier_that_gets_nothing_right(white):
    wrong = LabelData(white.images, np.zeros(3, np.int64), 2, "white squares, labelled 0")
    result = attack_assessment(MinPixel(), wrong, n=3, thresholds=(1,), bootstrap=0, progress=False)
    assert result.headline == () and "none of the images" in result.notes[0]


def test_bad_attack_option_is_refused_before_any_work(white):
    with pytest.raises(InvalidArgumentError, match="--norm"):
        assess_classifier(MinPixel(), white, families=(), norms=("L2",), progress=False)
    with pytest.raises(InvalidArgumentError, match="--search"):
        assess_classifier(MinPixel(), white, families=(), search="pgd", progress=False)


def test_assess_classifier_merges_accuracy_and_attacks(white):
    result = assess_classifier(
        MinPixel(), white, families=(), attack_n=2, thresholds=(1,), norms=("L0",), bootstrap=0, progress=False
    )
    assert result.role == "classifier" and result.metrics["classifier"]["accuracy"] == 1.0
    assert result.arrays["soft_labels"].shape == (3, 2)
    assert result.metrics["attacks"]["images"] == 2
    assert result.settings["seed"] == 0 and result.settings["attacks"]["norms"] == ["l0"]
    # None (an option not given on the command line): the paper's three families, 100 images attacked
    defaults = assess_classifier(MinPixel(), white, families=None, steps=3, attack_n=None, thresholds=(1,),
                                 norms=("L0",), budget=2, bootstrap=0, progress=False)  # fmt: skip
    assert [key for key in defaults.metrics if key.startswith("invariance/")] == [
        "invariance/rotation", "invariance/brightness", "invariance/scale"
    ]  # fmt: skip
    assert defaults.settings["attacks"]["n"] == 100 and defaults.metrics["attacks"]["images"] == 3


def test_attack_accepts_progress_false(white):
    def predict(batch: np.ndarray) -> np.ndarray:  # the attacks' contract: float 0-255 images
        return MinPixel().soft_labels(batch / 255.0)

    images = white.images.astype(np.float32)
    quiet = attack("L0", predict, images, white.labels, 1, budget=5, progress=False)
    shown = attack("L0", predict, images, white.labels, 1, budget=5, progress=True)
    assert quiet.success.all() and np.array_equal(quiet.adversarial, shown.adversarial)
    with pytest.raises(InvalidArgumentError, match="progress"):
        attack("L0", predict, images, white.labels, 1, budget=5, progress="yes")


# ---------------------------------------------------------------------------------------------------
# labelled data


def test_npz_round_trip_channels_last(tmp_path):
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (12, 5, 7, 3), dtype=np.uint8)
    labels = np.array([0, 1, 2, 3] * 3)
    np.savez(tmp_path / "set.npz", images=images, labels=labels, class_names=np.array(["a", "b", "c", "d"]))
    data = load_label_data(tmp_path / "set.npz", n=100)
    assert data.images.shape == (12, 3, 5, 7) and data.image_shape == (3, 5, 7)
    assert np.array_equal(data.images, images.transpose(0, 3, 1, 2))
    assert np.array_equal(data.labels, labels) and data.num_classes == 4
    assert data.class_names == ("a", "b", "c", "d")
    few = load_label_data(tmp_path / "set.npz", n=5, seed=1)
    assert len(few) == 5 and np.all(np.diff(few.rows) > 0)
    assert np.array_equal(few.images, images.transpose(0, 3, 1, 2)[few.rows])
    assert np.array_equal(load_label_data(tmp_path / "set.npz", n=5, seed=1).rows, few.rows)


def test_float_grey_images_become_uint8_channels_first():
    images = np.linspace(0, 1, 2 * 4 * 4).reshape(2, 4, 4)
    data = load_label_data((images, np.array([1.0, 0.0])))
    assert data.images.shape == (2, 1, 4, 4) and data.images.dtype == np.uint8
    assert data.images[0, 0, 0, 0] == 0 and data.images[1, 0, 3, 3] == 255
    assert data.labels.dtype == np.int64 and data.num_classes == 2


def test_label_data_errors(tmp_path):
    np.savez(tmp_path / "nolabels.npz", images=np.zeros((3, 4, 4), np.uint8))
    with pytest.raises(DataFormatError, match="--data .*'labels'"):
        load_label_data(tmp_path / "nolabels.npz")
    np.savez(tmp_path / "short.npz", images=np.zeros((3, 4, 4), np.uint8), labels=np.zeros(2, int))
    with pytest.raises(DataFormatError, match="--data .*3 labels"):
        load_label_data(tmp_path / "short.npz")
    (tmp_path / "text.npz").write_text("not an archive")
    with pytest.raises(DataFormatError, match="not an npz"):
        load_label_data(tmp_path / "text.npz")
    with pytest.raises(InvalidArgumentError, match="--data no-such-set: not a registered dataset"):
        load_label_data("no-such-set")
    with pytest.raises(InvalidArgumentError, match="--data: labels must be non-negative"):
        load_label_data((np.zeros((2, 4, 4), np.uint8), np.array([0, -1])))
    with pytest.raises(InvalidArgumentError, match="--data: needed for a model of"):
        load_label_data(None, image_shape=(3, 32, 32))


def test_default_data_is_the_mnist_sample():
    data = load_label_data(n=30, seed=2, image_shape=(1, 28, 28))
    assert data.images.shape == (30, 1, 28, 28) and data.num_classes == 10
    assert data.source.startswith("digits (source=mnist-sample)")
    assert data.images.max() > 200  # real digits, 0-255


def test_dataset_folder_with_a_class_column(tmp_path):
    import pandas as pd

    from repscope.data.dsprites import FACTOR_NAMES
    from repscope.data.store import write_dataset

    masks = np.zeros((4, 64, 64), np.uint8)
    masks[:, 20:40, 20:40] = 1
    factors = pd.DataFrame(np.zeros((4, len(FACTOR_NAMES)), np.int64), columns=list(FACTOR_NAMES))
    factors["shape"] = [0, 1, 2, 1]
    options = {"generator": "dsprites", "level": None, "seed": 0, "params": {}, "image_shape": (64, 64)}
    folder = write_dataset(tmp_path / "sprites", [(masks, None, factors)], 4, **options)
    data = load_label_data(folder, params={"target": "shape"})
    assert data.images.shape == (4, 1, 64, 64) and set(np.unique(data.images)) == {0, 255}  # masks as 0-255
    assert list(data.labels) == [0, 1, 2, 1] and data.num_classes == 3
    with pytest.raises(InvalidArgumentError, match="target=NAME; columns: color, shape"):
        load_label_data(folder)

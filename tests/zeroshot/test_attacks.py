"""The Raw Zero-Shot black-box attacks (repscope.studies.zeroshot.attacks):
the same outcome as the adversarial-robustness-
toolbox's PixelAttack / ThresholdAttack (es=0) with the same cma seeds, the norm constraints, a model
fooled by one known pixel, determinism without touching numpy's global random state, and clear errors."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import cma
import numpy as np
import pytest
import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.studies.zeroshot.attacks import attack_counts, attack_seed, pixel_attack, threshold_attack
from repscope.studies.zeroshot.attacks.pixel_threshold import _pixel_images


def linear_predict(shape: tuple[int, int, int], classes: int = 3, scale: float = 0.02, seed: int = 0):
    """A hand-made softmax-linear model on 0-255 images (each row computed on its own)."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(int(np.prod(shape)), classes))

    def predict(batch: np.ndarray) -> np.ndarray:
        logits = scale * (batch.reshape(len(batch), -1).astype(np.float64) - 128.0) @ weights
        logits -= logits.max(axis=1, keepdims=True)
        probabilities = np.exp(logits)
        return (probabilities / probabilities.sum(axis=1, keepdims=True)).astype(np.float32)

    return predict


def one_pixel_predict(row: int, col: int):
    """Class 1 when pixel (row, col) of channel 0 is above 128, else class 0: logit ``(v - 128) / 8`` plus
    a weak pull of every other value (at most 0.01 per pixel, so it never decides the class) that keeps
    the soft-label from being flat, since cma ends a search whose whole population scores alike."""

    def predict(batch: np.ndarray) -> np.ndarray:
        values = batch.astype(np.float64)
        others = values[:, 0].sum(axis=(1, 2)) - values[:, 0, row, col] + values[:, 1:].sum(axis=(1, 2, 3))
        logit = (values[:, 0, row, col] - 128.0) / 8.0 + 0.01 * (others - 100.0 * (values[0].size - 1)) / 255.0
        bright = 1.0 / (1.0 + np.exp(-logit))
        return np.stack([1.0 - bright, bright], axis=1).astype(np.float32)

    return predict


def random_images(count: int, shape: tuple[int, int, int], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(count, *shape), dtype=np.uint8)


def states_equal(first, second) -> bool:
    return all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))


# ---------------------------------------------------------------------------------------------------
# against ART


class RowWise(nn.Module):
    """A tiny CNN on 0-255 images -> probabilities, one image per forward pass: a batch then gives the
    same bits as ART's one-image passes, so the comparison tests the search and not torch's kernels."""

    def __init__(self, channels: int, size: int, classes: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.core = nn.Sequential(
            nn.Conv2d(channels, 4, 3), nn.Tanh(), nn.Flatten(), nn.Linear(4 * (size - 2) ** 2, classes)
        )
        with torch.no_grad():
            for parameter in self.core.parameters():
                parameter.mul_(3.0)  # sharper decisions: some attacks succeed, some fail

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.softmax(self.core(images[i : i + 1] / 255.0), dim=1) for i in range(len(images))])


@pytest.fixture(scope="module")
def art():
    try:
        from art.attacks.evasion import PixelAttack, ThresholdAttack
        from art.estimators.classification import PyTorchClassifier
    except ImportError as error:  # ART, or the packaging module it needs, is missing
        pytest.skip(f"the attacks extra is not importable ({error}): pip install 'repscope[attacks]'")
    # thousands of one-image passes: one torch thread (several stall on a busy machine)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield {"L0": PixelAttack, "Linf": ThresholdAttack, "classifier": PyTorchClassifier}
    torch.set_num_threads(threads)


def run_art(art, module, norm, images, labels, threshold, budget, seed):
    """ART's attack with cma seeded as ours seeds it (ART itself never seeds cma)."""
    classifier = art["classifier"](
        module, nn.CrossEntropyLoss(), input_shape=images.shape[1:], nb_classes=3, clip_values=(0, 255)
    )
    seeds = iter([attack_seed(seed, norm, threshold, i) for i in range(len(images))])
    original = cma.CMAEvolutionStrategy

    class Seeded(original):
        def __init__(self, x0, sigma0, inopts=None):
            super().__init__(x0, sigma0, cma.CMAOptions(dict(inopts, seed=next(seeds))))

    state = np.random.get_state()
    cma.CMAEvolutionStrategy = Seeded
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="function_values is not a list of scalars")
            attack = art[norm](classifier, th=threshold, es=0, max_iter=budget, verbose=False)
            return attack.generate(images.astype(np.float32), labels)
    finally:
        cma.CMAEvolutionStrategy = original
        np.random.set_state(state)


@pytest.mark.parametrize(
    ("norm", "shape", "thresholds"),
    [("L0", (1, 7, 7), (1, 3)), ("L0", (3, 5, 5), (2,)), ("Linf", (1, 6, 6), (4, 20)), ("Linf", (3, 4, 4), (8,))],
)
def test_same_outcome_as_art(art, norm, shape, thresholds):
    module = RowWise(shape[0], shape[1], 3).eval()

    def predict(batch):
        with torch.no_grad():
            return module(torch.from_numpy(batch)).numpy()

    images = random_images(5, shape, seed=1)
    labels = predict(images.astype(np.float32)).argmax(axis=1)
    ours_attack = pixel_attack if norm == "L0" else threshold_attack
    flags = []
    for threshold in thresholds:
        expected = run_art(art, module, norm, images, labels, threshold, budget=12, seed=3)
        ours = ours_attack(predict, images, labels, threshold, budget=12, seed=3)
        art_success = predict(expected).argmax(axis=1) != labels
        np.testing.assert_array_equal(ours.success, art_success)
        np.testing.assert_array_equal(ours.adversarial.astype(np.float32), expected)
        assert ours.adversarial.dtype == np.uint8
        flags.extend(ours.success)
    assert any(flags) and not all(flags), "the case should hold both successes and failures"


# ---------------------------------------------------------------------------------------------------
# against ART's recorded outcome (runs without the attacks extra)

RECORDED = Path(__file__).parent.parent / "data" / "art-pixel-threshold-attacks.json"


def exact_probabilities(batch: np.ndarray) -> np.ndarray:
    """The classifier ART attacked when the fixture was recorded: an integer linear map of the pixels, then
    ``+ - * /`` only (no BLAS, no exp), so the same bits on any CPU and numpy. Logits ``(x - 128) @ W`` with
    ``W[i, k] = (7 i + 3 k) mod 9 - 4``; ``q_k = 1 / (1 + (d_k / 400)^2)`` of the gap to the top logit."""
    pixels = batch.reshape(len(batch), -1).astype(np.int64) - 128
    index = np.arange(pixels.shape[1])[:, None]
    logits = pixels @ ((7 * index + 3 * np.arange(3)[None, :]) % 9 - 4)
    gaps = (logits - logits.max(axis=1, keepdims=True)) / 400.0
    closeness = 1.0 / (1.0 + gaps * gaps)
    return (closeness / (closeness[:, 0] + closeness[:, 1] + closeness[:, 2])[:, None]).astype(np.float32)


@pytest.fixture(scope="module")
def art_recorded():
    return json.loads(RECORDED.read_text())


def test_same_outcome_as_art_recorded(art_recorded):
    """ART 1.20.1's own PixelAttack / ThresholdAttack on a fixed classifier (tests/data/README.md): the same
    cma seeds, the same success flags and the very same adversarial pixels, on 40 attacks of both norms."""
    assert art_recorded["provenance"]["adversarial-robustness-toolbox"] == "1.20.1"
    budget, seed = art_recorded["provenance"]["budget"], art_recorded["provenance"]["seed"]
    flags = {"L0": [], "Linf": []}
    for case in art_recorded["cases"]:
        images = np.array(case["images"], dtype=np.uint8)
        # this copy of the classifier is the one ART attacked
        np.testing.assert_array_equal(exact_probabilities(images), np.array(case["soft_labels"], np.float32))
        labels = np.array(case["labels"])
        attack = pixel_attack if case["norm"] == "L0" else threshold_attack
        ours = attack(exact_probabilities, images, labels, case["threshold"], budget=budget, seed=seed)
        where = (case["norm"], case["threshold"])
        assert ours.seeds.tolist() == case["cma_seeds"], where
        assert ours.success.tolist() == case["success"], where
        np.testing.assert_array_equal(ours.adversarial, np.array(case["adversarial"]), err_msg=str(where))
        flags[case["norm"]].extend(case["success"])
    assert all(any(f) and not all(f) for f in flags.values()), "each norm should hold successes and failures"


# ---------------------------------------------------------------------------------------------------
# what a result promises


@pytest.mark.parametrize("norm", ["L0", "Linf"])
def test_successes_stay_within_the_norm_and_fool_the_model(norm):
    shape = (2, 5, 5)
    predict = linear_predict(shape)
    images = random_images(8, shape, seed=2)
    labels = predict(images.astype(np.float32)).argmax(axis=1)
    threshold = 2 if norm == "L0" else 6
    attack = pixel_attack if norm == "L0" else threshold_attack
    result = attack(predict, images, labels, threshold, budget=15, seed=0)
    assert result.success.any() and result.success_count == int(result.success.sum())
    original, adversarial = images.astype(int), result.adversarial.astype(int)
    changed = adversarial != original
    if norm == "L0":
        assert (changed.any(axis=1).sum(axis=(1, 2)) <= threshold).all()  # pixel positions, any channel
    else:
        assert (np.abs(adversarial - original) <= threshold).all()
    predicted = predict(result.adversarial.astype(np.float32)).argmax(axis=1)
    np.testing.assert_array_equal(result.predicted, predicted)
    np.testing.assert_array_equal(result.success, predicted != labels)
    assert not changed[~result.success].any()  # failures return the original
    assert (result.iterations >= 1).all() and (result.iterations <= 15).all()
    # one population per iteration (cma's default size) and no extra pass for xbest: it is always one
    # of the candidates scored
    dimension = threshold * (2 + shape[0]) if norm == "L0" else int(np.prod(shape))
    np.testing.assert_array_equal(result.queries, result.iterations * int(4 + 3 * np.log(dimension)))


def test_one_pixel_model_is_fooled_by_the_one_pixel_attack():
    predict = one_pixel_predict(row=2, col=1)
    images = np.full((2, 1, 4, 4), 100.0)
    labels = np.array([0, 0])
    result = pixel_attack(predict, images, labels, 1, budget=100, seed=0)
    assert result.success.all()
    assert result.adversarial.dtype == np.float64
    changed = np.argwhere(result.adversarial != images)
    np.testing.assert_array_equal(changed[:, 1:], [[0, 2, 1], [0, 2, 1]])  # only that pixel, in each image
    assert (result.adversarial[:, 0, 2, 1] > 128).all()
    np.testing.assert_array_equal(result.predicted, [1, 1])
    # an L-infinity step of 10 cannot lift the pixel from 100 over 128
    result = threshold_attack(predict, images, labels, 10, budget=5, seed=0)
    assert not result.success.any()
    np.testing.assert_array_equal(result.adversarial, images)
    np.testing.assert_array_equal(result.iterations, [5, 5])


def test_pixel_images_follow_art_semantics():
    image = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    # slots (row, col, v0, v1): row 3 wraps to 0, col 5.9 truncates to 5 and wraps to 1, values truncate;
    # in the second candidate both slots hit pixel (1, 2): the later slot wins
    candidates = np.array([[3.0, 5.9, 10.7, 20.2, 1.5, 0.2, 7.9, 8.0], [1.2, 2.8, 1.0, 2.0, 1.9, 2.1, 3.0, 4.0]])
    batch = _pixel_images(image, candidates, threshold=2)
    expected = np.repeat(image[None], 2, axis=0)
    expected[0, :, 0, 1] = [10, 20]
    expected[0, :, 1, 0] = [7, 8]
    expected[1, :, 1, 2] = [3, 4]
    np.testing.assert_array_equal(batch, expected)
    assert batch.dtype == np.float32


# ---------------------------------------------------------------------------------------------------
# determinism and global state


def test_same_seed_same_result_and_global_random_state_untouched():
    shape = (1, 5, 5)
    predict = linear_predict(shape)
    images = random_images(4, shape, seed=3)
    labels = predict(images.astype(np.float32)).argmax(axis=1)
    np.random.seed(1234)
    before = np.random.get_state()
    first = threshold_attack(predict, images, labels, 5, budget=8, seed=7)
    assert states_equal(np.random.get_state(), before)
    second = threshold_attack(predict, images, labels, 5, budget=8, seed=7)
    for field in ("success", "adversarial", "predicted", "queries", "iterations", "seeds"):
        np.testing.assert_array_equal(getattr(first, field), getattr(second, field))
    other = threshold_attack(predict, images, labels, 5, budget=8, seed=8)
    assert not np.array_equal(first.seeds, other.seeds)

    def drawing_predict(batch):  # a model that draws from numpy's global generator
        np.random.random(3)
        return predict(batch)

    drawn = threshold_attack(drawing_predict, images, labels, 5, budget=8, seed=7)
    np.testing.assert_array_equal(drawn.adversarial, first.adversarial)


def test_attack_seeds_are_never_zero_and_differ_per_attack():
    seeds = {attack_seed(0, norm, th, i) for norm in ("L0", "Linf") for th in (1, 3, 5, 10) for i in range(50)}
    assert len(seeds) == 400 and 0 not in seeds
    assert all(1 <= s <= 2**32 - 1 for s in seeds)
    assert attack_seed(0, "L0", 1, 0) == attack_seed(0, "L0", 1, 0) != attack_seed(1, "L0", 1, 0)


def test_attack_counts_matches_the_single_attacks_and_reports_progress():
    shape = (1, 5, 5)
    predict = linear_predict(shape)
    images = random_images(3, shape, seed=4)
    labels = predict(images.astype(np.float32)).argmax(axis=1)
    calls = []
    table = attack_counts(
        predict, images, labels, thresholds=(1, 4), budget=6, seed=2, progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(done, 12) for done in range(1, 13)]
    assert set(table.counts) == {("L0", 1), ("L0", 4), ("Linf", 1), ("Linf", 4)}
    assert table.attempts == 12
    single = pixel_attack(predict, images, labels, 4, budget=6, seed=2)
    np.testing.assert_array_equal(table.results[("L0", 4)].adversarial, single.adversarial)
    assert table.counts[("L0", 4)] == single.success_count
    assert table.totals["L0"] == table.counts[("L0", 1)] + table.counts[("L0", 4)]
    assert table.total == sum(table.totals.values())


# ---------------------------------------------------------------------------------------------------
# errors at the boundary


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"threshold": 0}, "threshold"),
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": True}, "threshold"),
        ({"threshold": 17}, "H \\* W = 16"),
        ({"images": np.zeros((2, 4, 4), np.uint8)}, "images"),
        ({"images": np.zeros((2, 1, 4, 4), np.int16)}, "images"),
        ({"images": np.full((2, 1, 4, 4), 300.0)}, "images"),
        ({"images": np.full((2, 1, 4, 4), np.nan)}, "images"),
        ({"images": [[[[0]]]]}, "images"),
        ({"labels": np.array([0])}, "labels"),
        ({"labels": np.array([0.0, 1.0])}, "labels"),
        ({"labels": np.array([0, -1])}, "labels"),
        ({"labels": np.array([0, 2])}, "labels: class 2 is out of range for predict's 2 outputs"),
        ({"budget": 0}, "budget"),
        ({"seed": -1}, "seed"),
        ({"predict": "model"}, "predict"),
        ({"predict": lambda batch: np.zeros((len(batch), 2, 1))}, "predict"),
        ({"predict": lambda batch: np.full((len(batch), 2), np.nan)}, "predict"),
    ],
)
def test_bad_input_is_a_clear_error(change, message):
    arguments = {
        "predict": one_pixel_predict(0, 0),
        "images": np.zeros((2, 1, 4, 4), np.uint8),
        "labels": np.array([0, 1]),
        "threshold": 1,
        "budget": 3,
        "seed": 0,
    }
    arguments.update(change)
    with pytest.raises(InvalidArgumentError, match=message):
        pixel_attack(
            arguments["predict"],
            arguments["images"],
            arguments["labels"],
            arguments["threshold"],
            budget=arguments["budget"],
            seed=arguments["seed"],
        )


def test_bad_table_arguments_are_clear_errors():
    images, labels, predict = np.zeros((1, 1, 4, 4), np.uint8), np.array([0]), one_pixel_predict(0, 0)
    with pytest.raises(InvalidArgumentError, match="norms"):
        attack_counts(predict, images, labels, norms=("L2",))
    with pytest.raises(InvalidArgumentError, match="thresholds"):
        attack_counts(predict, images, labels, thresholds=(1, 1))
    with pytest.raises(InvalidArgumentError, match="thresholds"):
        attack_counts(predict, images, labels, thresholds=(0,))
    with pytest.raises(InvalidArgumentError, match="H \\* W = 16"):  # before any attack runs
        attack_counts(predict, images, labels, thresholds=(1, 17))
    with pytest.raises(InvalidArgumentError, match="norm"):
        attack_seed(0, "L2", 1, 0)


def test_the_package_needs_no_torch():
    import subprocess
    import sys

    code = "import sys, repscope.studies.zeroshot.attacks; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == (
        "False"
    )

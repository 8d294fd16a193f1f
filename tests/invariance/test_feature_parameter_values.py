"""Every parameter of the ML4ML features that a result records changes the value it records.

The sensitivity subsample (which rows, how many, from which seed), the significant-variance threshold
``tau`` and the seeds of the released code's assessor protocol are each set alone to a value away from
its default, and the feature or score is worked out here by hand: variance matrices by a loop over pairs,
the released code's diagonal fill written out for a 5x5 matrix, the assessors fitted with scikit-learn
on folds drawn here. The subsample rows are pinned as numbers, printed once from the paper mode's rule
``sorted(default_rng(seed).choice(count, round(fraction * count), replace=False))`` and from the released
code's (Zukang-Liao/ML4ML-invariance-testing, ``datamat.py``, ``get_corr_incorr_split``):
``numpy.random.seed(seed); numpy.random.choice(range(count), int(count * fraction), replace=False)``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from repscope.data.invariance.transforms import transform_family
from repscope.metrics.invariance import features as F
from repscope.metrics.invariance.variance_matrix import subsample_rows
from repscope.studies.invariance.assess import train_assessors
from repscope.studies.invariance.assess_reference import evaluate_assessors_reference
from repscope.studies.invariance.testing import (
    InvarianceSignals,
    matrices_and_features,
    reference_features,
    released_subsample_rows,
    run_invariance_test,
)

# subsample_rows(count, fraction, seed), printed once; the sizes are round(fraction * count) with
# Python's rounding: 0.9 * 15 = 13.5 -> 14 (truncation: 13), 0.9 * 16 = 14.4 -> 14 (ceiling: 15)
PINNED_ROWS = {
    (15, 0.9, 7): [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14],
    (16, 0.9, 7): [0, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15],
    (12, 0.75, 3): [0, 1, 3, 6, 7, 8, 9, 10, 11],
    (12, 0.9, 3): [0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11],
}
# The released code's draw (datamat.py): numpy.random.seed(seed), then numpy.random.choice(range(count),
# int(count * fraction), replace=False), sorted here; printed once. 0.9 * 15 = 13.5 -> 13 rows.
RELEASED_ROWS = {
    (15, 0.9, 2): [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14],
    (12, 0.9, 4): [0, 1, 2, 3, 4, 5, 6, 8, 9, 11],
    (10, 0.6, 5): [1, 2, 4, 5, 7, 9],
    (10, 0.9, 5): [0, 1, 2, 4, 5, 6, 7, 8, 9],
}


def variance_matrix_by_hand(values: np.ndarray) -> np.ndarray:
    """``delta[i, j] = sqrt(mean_x (v[x, i] - v[x, j])^2)``, pair by pair."""
    steps = values.shape[1]
    return np.array(
        [[math.sqrt(np.mean((values[:, i] - values[:, j]) ** 2)) for j in range(steps)] for i in range(steps)]
    )


def strict_lower(matrix: np.ndarray) -> list[float]:
    return [matrix[i, j] for i in range(len(matrix)) for j in range(i)]


def paper_sensitivity(full: np.ndarray, part: np.ndarray) -> float:
    """Feature 5: the mean over the strict lower triangle of the squared differences."""
    return float(np.mean([(a - b) ** 2 for a, b in zip(strict_lower(full), strict_lower(part))]))


def reference_filled_5x5(m: np.ndarray) -> np.ndarray:
    """The released ``fillin_relation_diagonal`` of a 5x5 matrix, in our orientation.

    The released code fills the row-flipped matrix ``F[r] = M[4 - r]``: its row 0 takes its last element
    from its second-last (our ``D[4, 4] = M[4, 3]``), its row 4 its first from its second (our
    ``D[0, 0] = M[0, 1]``), and its centre rows and columns 1..3 all take ``(F[1, 4] + F[4, 3]) / 2``,
    that is ``(M[3, 4] + M[0, 3]) / 2``, on our rows and columns 1..3 alike.
    """
    d = np.array(m, dtype=float)
    d[4, 4] = m[4, 3]
    d[0, 0] = m[0, 1]
    d[1:4, 1:4] = (m[3, 4] + m[0, 3]) / 2
    return d


# -- the sensitivity subsample ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(PINNED_ROWS))
def test_the_subsample_rows_are_pinned_by_count_fraction_and_seed(key):
    count, fraction, seed = key
    rows = subsample_rows(count, fraction, seed)
    assert rows.tolist() == PINNED_ROWS[key]  # sorted, round(fraction * count) of them
    assert len(rows) == {15: 14, 16: 14, 12: 9 if fraction == 0.75 else 11}[count]


@pytest.mark.parametrize("key", sorted(RELEASED_ROWS))
def test_the_released_codes_subsample_rows_are_pinned_by_count_fraction_and_seed(key):
    count, fraction, seed = key
    rows = released_subsample_rows(count, fraction, seed)
    assert rows.tolist() == RELEASED_ROWS[key]  # truncated: int(fraction * count) of them
    assert len(rows) == {15: 13, 12: 10, 10: 6 if fraction == 0.6 else 9}[count]


def test_the_paper_features_read_the_fraction_seed_and_tau_given():
    values = np.cos(np.arange(60).reshape(12, 5) * 0.7) * 0.5 + np.arange(5) * 0.15
    family = transform_family("rotation", 10.0, steps=5)
    signals = InvarianceSignals({"max@CONF": values}, np.ones((12, 5), bool), np.ones(12, bool), family)
    matrices, features = matrices_and_features(signals, subsample_fraction=0.75, seed=3, tau=0.4)
    full = variance_matrix_by_hand(values)
    np.testing.assert_allclose(matrices["max@CONF"], full, rtol=1e-10, atol=1e-12)
    part = variance_matrix_by_hand(values[PINNED_ROWS[(12, 0.75, 3)]])
    expected = paper_sensitivity(full, part)
    assert features["max@CONF"]["sensitivity"] == pytest.approx(expected, rel=1e-9)
    # the default fraction and seed draw other rows: the fixture tells the parameters apart
    default = paper_sensitivity(full, variance_matrix_by_hand(values[PINNED_ROWS[(12, 0.9, 3)]]))
    assert abs(default - expected) > 0.1 * expected
    # tau = 0.4: 6 of the 10 lower-triangle elements lie above it (0.15 counts all 10)
    above = sum(value > 0.4 for value in strict_lower(full))
    assert above == 6
    assert features["max@CONF"]["significant_variance"] == pytest.approx(above / 10)


def test_the_reference_features_read_the_fraction_and_tau_given():
    kept = np.array([True, False, True, True, True, False, True, True, False, True])
    values = np.sin(np.arange(35).reshape(7, 5) * 0.9) * 0.6 + np.arange(5) * 0.1
    family = transform_family("rotation", 10.0, steps=5)
    signals = InvarianceSignals({"max@CONF": values}, np.ones((10, 5), bool), kept, family)
    result = reference_features(signals, subsample_fraction=0.6, seed=5, tau=0.5)["max@CONF"]
    # drawn from all ten examples as the released code draws them (1, 2, 4, 5, 7, 9); the kept ones among
    # them are 2, 4, 7, 9: positions 1, 3, 5, 6 of the seven kept (0.9 would draw 9 of the ten)
    assert RELEASED_ROWS[(10, 0.6, 5)] == [1, 2, 4, 5, 7, 9]
    full = variance_matrix_by_hand(values)
    part = variance_matrix_by_hand(values[[1, 3, 5, 6]])
    assert result["sensitivity_reference"] == pytest.approx(np.abs(full - part).sum(), rel=1e-9)
    filled = reference_filled_5x5(full)
    expected = (filled > 0.5).sum() / 25
    assert result["significant_variance_reference"] == pytest.approx(expected)
    assert (filled > 0.15).sum() / 25 != pytest.approx(expected)  # tau = 0.5 is not the default's count


def test_matrix_features_hand_tau_to_both_modes():
    m = variance_matrix_by_hand(np.sin(np.arange(35).reshape(7, 5) * 0.9) * 0.6 + np.arange(5) * 0.1)
    paper = F.matrix_features(m, tau=0.5)
    assert paper["significant_variance"] == pytest.approx(sum(v > 0.5 for v in strict_lower(m)) / 10)
    reference = F.matrix_features(m, tau=0.5, compat="reference")
    filled = reference_filled_5x5(m)
    assert reference["significant_variance_reference"] == pytest.approx((filled > 0.5).sum() / 25)
    assert F.matrix_features(m, compat="reference")["significant_variance_reference"] == pytest.approx(
        (filled > 0.15).sum() / 25
    )
    assert (filled > 0.5).sum() != (filled > 0.15).sum()


@pytest.mark.parametrize("compat", ["paper", "reference"])
def test_the_features_command_records_and_uses_its_tau(tmp_path, run_cli, compat):
    m = variance_matrix_by_hand(np.sin(np.arange(35).reshape(7, 5) * 0.9) * 0.6 + np.arange(5) * 0.1)
    path = tmp_path / "m.npy"
    np.save(path, m)
    code, stdout, stderr = run_cli(["invariance", "features", str(path), "--tau", "0.5", "--compat", compat])
    assert code == 0, stderr
    printed = json.loads(stdout)
    assert printed["tau"] == 0.5
    if compat == "paper":
        expected = sum(v > 0.5 for v in strict_lower(m)) / 10
        assert printed["features"]["significant_variance"] == pytest.approx(expected)
    else:
        expected = (reference_filled_5x5(m) > 0.5).sum() / 25
        assert printed["features"]["significant_variance_reference"] == pytest.approx(expected)


# -- the seed of an invariance test reaches both sensitivity subsamples --------------------------------------

TEST_SIZE, SEED = 40, 6
BRIGHTNESS = (-0.2, -0.1, 0.0, 0.1, 0.2)


@pytest.fixture(scope="module")
def classifier_file(tmp_path_factory):
    """An untrained CNN5 whose logits are spread enough (fc2 x 40, three classes favoured) that 6 of the
    first 40 test digits are right at the identity, each by a margin far above float rounding."""
    from repscope.models.invariance.simplenet import SimpleNet

    torch.manual_seed(3)
    network = SimpleNet().eval()
    with torch.no_grad():
        network.fc2.weight.mul_(40.0)
        network.fc2.bias.copy_(torch.tensor([3.0, 3.0, 3.0] + [0.0] * 7))
    path = tmp_path_factory.mktemp("invariance-seed") / "cnn5.pt"
    torch.save(network.state_dict(), path)
    return path, network


def max_softmax_by_hand(network, images: np.ndarray, labels: np.ndarray):
    """max@CONF of every test digit under each brightness change, and which are right at the identity."""
    pixels = torch.as_tensor(images).float() / 255.0
    values, right = [], None
    with torch.no_grad():
        for change in BRIGHTNESS:
            logits = network((pixels * (1.0 + change)).clamp(0.0, 1.0))
            values.append(torch.softmax(logits, dim=1).amax(dim=1).double().numpy())
            if change == 0.0:
                top = torch.topk(logits, 2, dim=1).values
                assert float((top[:, 0] - top[:, 1]).min()) > 1e-3  # no near-tie a CPU could flip
                right = logits.argmax(dim=1).numpy() == labels
    return np.stack(values, axis=1), right


def test_the_seed_of_a_test_draws_both_sensitivity_subsamples(tmp_path, classifier_file, monkeypatch):
    from matplotlib.figure import Figure

    from repscope.data.registry import load_dataset
    from repscope.report import figures

    # the heat maps are not what this test reads: a blank figure each keeps it quick
    monkeypatch.setattr(figures, "variance_heatmap", lambda *args, **kwargs: Figure(figsize=(1, 1)))
    path, network = classifier_file
    metrics = run_invariance_test(
        path, tmp_path / "run", "brightness", arch="cnn5", data="digits", data_params={"test_size": TEST_SIZE},
        n=100, half_range=0.2, steps=5, seed=SEED, compat="reference",
    )  # fmt: skip
    dataset = load_dataset("digits", test_size=TEST_SIZE)
    batch = dataset.batch("test", np.arange(TEST_SIZE), ["image", "target"])  # n > 40: every test digit
    values, right = max_softmax_by_hand(network, batch["image"], batch["target"])
    kept = np.flatnonzero(right)
    assert kept.tolist() == [4, 5, 6, 7, 10, 11] and metrics["examples"] == 6
    full = variance_matrix_by_hand(values[kept])
    # the paper's subsample: round(0.9 * 6) = 5 of the kept rows, seed 6 -> 0, 1, 2, 4, 5 (seed 0: 1..5)
    assert subsample_rows(6, 0.9, SEED).tolist() == [0, 1, 2, 4, 5]
    paper = paper_sensitivity(full, variance_matrix_by_hand(values[kept[[0, 1, 2, 4, 5]]]))
    assert metrics["features"]["max@CONF"]["sensitivity"] == pytest.approx(paper, rel=1e-4)
    # the released code's: 36 of all 40 drawn with seed 6 leave out 9, 10, 20, 35 (seed 0: 0, 3, 9, 38)
    left_out = sorted(set(range(TEST_SIZE)) - set(released_subsample_rows(TEST_SIZE, 0.9, SEED).tolist()))
    assert left_out == [9, 10, 20, 35]
    reference = np.abs(full - variance_matrix_by_hand(values[[4, 5, 6, 7, 11]])).sum()
    assert metrics["features_reference"]["max@CONF"]["sensitivity_reference"] == pytest.approx(reference, rel=1e-4)
    # seed 0's subsamples give other values here, so a seed recorded but not used would show
    seed_zero_paper = paper_sensitivity(full, variance_matrix_by_hand(values[kept[1:]]))
    seed_zero_reference = 0.0  # seed 0 leaves out no kept example
    assert abs(seed_zero_paper - paper) > 0.01 * paper and abs(seed_zero_reference - reference) > 0.01 * reference
    config = (tmp_path / "run" / "config.yaml").read_text()
    assert f"seed: {SEED}" in config


# -- the seeds of the released code's assessor protocol -------------------------------------------------------


def reference_folds_by_hand(holdout: np.ndarray, seed: int, repeat: int):
    fixed, regular = np.flatnonzero(holdout), np.flatnonzero(~holdout)
    order = regular[np.random.default_rng([seed, repeat]).permutation(len(regular))]
    one, two = order[: len(order) // 2], order[len(order) // 2 :]
    return [(regular, fixed), (np.r_[one, fixed], two), (np.r_[two, fixed], one)]


def ensemble_scores_by_hand(features, labels, holdout, seed, repeat, state):
    """One repeat's 3-fold mean of the random forest and of AdaBoost with ``random_state = state``."""
    from sklearn.ensemble import AdaBoostClassifier, RandomForestClassifier

    folds = {"random forest": [], "AdaBoost": []}
    for train, test in reference_folds_by_hand(holdout, seed, repeat):
        for name, model in (
            ("random forest", RandomForestClassifier(n_estimators=100, random_state=state)),
            ("AdaBoost", AdaBoostClassifier(random_state=state)),
        ):
            fitted = model.fit(features[train], labels[train])
            folds[name].append(np.mean(fitted.predict(features[test]) == labels[test]))
    return {name: float(np.mean(v)) for name, v in folds.items()}


def noisy_models(count: int = 21, seed: int = 4):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(count, 5))
    labels = (features[:, 0] + 0.8 * rng.normal(size=count) > 0).astype(int)  # noisy: the draws matter
    robust = np.clip(0.5 + 0.3 * labels + rng.normal(scale=0.2, size=count), 0, 1)
    holdout = np.zeros(count, bool)
    holdout[[2, 5, 9, 14, 20]] = True
    return features, labels, robust, holdout


def test_the_reference_protocol_seeds_the_ensembles_by_repeat():
    features, labels, robust, holdout = noisy_models()
    table = evaluate_assessors_reference(features, labels, robust, holdout, repeats=2, seed=5).set_index("assessor")
    repeats = [ensemble_scores_by_hand(features, labels, holdout, 5, repeat, 5 + repeat) for repeat in (0, 1)]
    for name in ("random forest", "AdaBoost"):
        assert table.loc[name, "mean"] == pytest.approx((repeats[0][name] + repeats[1][name]) / 2, abs=1e-12), name
    # the second repeat's forest with the first repeat's seed scores otherwise on these models
    reused = ensemble_scores_by_hand(features, labels, holdout, 5, 1, 5)
    assert reused["random forest"] != pytest.approx(repeats[1]["random forest"], abs=1e-6)


def write_repository(folder, count: int = 15):
    """A repository as repo build writes it: two modalities, a few features each, noisy labels."""
    rng = np.random.default_rng(9)
    folder.mkdir()
    (folder / "repository.json").write_text(json.dumps({"config": {"transform": "rotation"}}))
    rows = []
    for k in range(count):
        invariant = k % 3 != 0
        model = folder / f"model-{k:03d}"
        model.mkdir()
        settings = {"model": f"{k:03d}", "augment": "covering" if invariant else "none", "anomaly": "none"}
        robust = float(rng.uniform(0.55, 0.9) if invariant else rng.uniform(0.3, 0.75))
        metadata = {"settings": settings, "accuracy": 0.95, "robust_accuracy": robust, "curves": {"val_loss": [1]}}
        (model / "metadata.json").write_text(json.dumps(metadata))
        names = ("mean", "std", "asymmetry")
        features = {m: {f: float(rng.normal()) for f in names} for m in ("max@CONF", "max@CONV-1")}
        features["max@CONF"]["mean"] = 0.05  # the rules read it: under 0.15 keeps the label from augment
        features["max@CONF"]["std"] += 0.8 * invariant
        (model / "features.json").write_text(json.dumps(features))
        rows.append(([v for m in features.values() for v in m.values()], int(invariant), robust))
    return folder, rows


def linear_and_baseline_by_hand(features, labels, robust, holdout, repeats, seed):
    from sklearn.linear_model import LinearRegression
    from sklearn.preprocessing import normalize

    scaled = normalize(features, axis=1)
    results = {"linear regression": [], "baseline": []}
    for repeat in range(repeats):
        folds = {name: [] for name in results}
        for train, test in reference_folds_by_hand(holdout, seed, repeat):
            line = LinearRegression().fit(scaled[train], labels[train])
            folds["linear regression"].append(np.mean((line.predict(scaled[test]) >= 0.5) == labels[test]))
            values = np.unique(robust[train])
            candidates = [values[0] - 1e-9, *((values[1:] + values[:-1]) / 2), values[-1] + 1e-9]
            best = max(candidates, key=lambda t: (np.mean((robust[train] >= t) == labels[train]), -t))
            folds["baseline"].append(np.mean((robust[test] >= best) == labels[test]))
        for name in results:
            results[name].append(np.mean(folds[name]))
    return {name: float(np.mean(v)) for name, v in results.items()}


def test_assess_train_reference_hands_its_seed_and_hold_out_to_the_protocol(tmp_path):
    repo, rows = write_repository(tmp_path / "repo")
    features = np.array([r[0] for r in rows])
    labels = np.array([r[1] for r in rows])
    robust = np.array([r[2] for r in rows])
    chosen = ["model-001", "model-006", "model-010", "model-013"]
    holdout = np.array([f"model-{k:03d}" in chosen for k in range(len(rows))])
    table = train_assessors(
        repo, tmp_path / "out", "rotation", seed=3, compat="reference", holdout=chosen, repeats=2
    ).set_index("assessor")
    expected = linear_and_baseline_by_hand(features, labels, robust, holdout, 2, 3)
    assert table.loc["linear regression", "mean"] == pytest.approx(expected["linear regression"], abs=1e-12)
    assert table.loc["robust accuracy (baseline)", "mean"] == pytest.approx(expected["baseline"], abs=1e-12)
    assert (table["repeats"] == 2).all() and (table["holdout_models"] == 4).all()
    # seed 0 or the default hold-out (the last third by name) give other scores on this repository
    seed_zero = linear_and_baseline_by_hand(features, labels, robust, holdout, 2, 0)
    last_third = np.arange(len(rows)) >= 10
    other_holdout = linear_and_baseline_by_hand(features, labels, robust, last_third, 2, 3)
    for other in (seed_zero, other_holdout):
        assert any(abs(other[name] - expected[name]) > 1e-6 for name in expected)
    saved = pd.read_csv(tmp_path / "out" / "table4.csv").set_index("assessor")
    assert saved.loc["linear regression", "mean"] == pytest.approx(expected["linear regression"], abs=1e-12)

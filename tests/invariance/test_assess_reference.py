"""ML4ML next to the authors' released code (Zukang-Liao/ML4ML-invariance-testing): CNN5 as their
``model.py`` SimpleNet, max_mean and correctly classified examples (``save_invariance_results.py``,
``datamat.py``), the assessor protocol of ``ML4MLassessor.py`` and the label coding."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from torch import nn
from torch.nn import functional as F

from repscope.data.invariance.transforms import transform_family
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.models.networks import build_classifier
from repscope.models.probes import resolve_positions
from repscope.studies.invariance.assess import train_assessors
from repscope.studies.invariance.assess_reference import (
    evaluate_assessors_reference,
    max_deviation,
    reference_folds,
    reference_holdout,
)
from repscope.studies.invariance.labels import repository_labels, rule_labels, to_our_coding
from repscope.studies.invariance.testing import (
    PAPER_MODALITIES,
    REFERENCE_MODALITIES,
    channel_max_mean,
    compat_modalities,
    model_signals,
)

# --- CNN5 = the reference's SimpleNet ---------------------------------------------------------------


def test_cnn5_has_the_layers_of_the_reference_simplenet():
    network = build_classifier("cnn5", (1, 28, 28), 10)
    shapes = {name: tuple(p.shape) for name, p in network.named_parameters()}
    # model.py: Conv2d(1, 6, 5), Conv2d(6, 16, 5), Conv2d(16, 32, 3), Linear(128, 64), Linear(64, 10)
    assert shapes == {
        "conv1.weight": (6, 1, 5, 5),
        "conv1.bias": (6,),
        "conv2.weight": (16, 6, 5, 5),
        "conv2.bias": (16,),
        "conv3.weight": (32, 16, 3, 3),
        "conv3.bias": (32,),
        "fc1.weight": (64, 128),
        "fc1.bias": (64,),
        "fc2.weight": (10, 64),
        "fc2.bias": (10,),
    }
    # (1*6*25 + 6) + (6*16*25 + 16) + (16*32*9 + 32) + (128*64 + 64) + (64*10 + 10)
    assert sum(p.numel() for p in network.parameters()) == 156 + 2416 + 4640 + 8256 + 650 == 16118
    # the probes measure the reference's two last convolutions, Conv2d_2 (CONV-1) and Conv2d_1 (CONV-2)
    assert resolve_positions(network, ["CONV-1", "CONV-2"]) == {"CONV-1": "conv3", "CONV-2": "conv2"}
    # colour 32x32: 32 -> 28 -> 14 -> 10 -> 5 -> 3, so fc1 reads 32 * 3 * 3 = 288 values
    assert tuple(build_classifier("cnn5", (3, 32, 32), 7).fc1.weight.shape) == (64, 288)
    with pytest.raises(InvalidArgumentError, match="image_shape"):
        build_classifier("cnn5", (1, 23, 23), 10)
    # the network cnn5 named before keeps a name: 3x3 convolutions with padding, 458,570 weights
    compact = build_classifier("cnn5-compact", (1, 28, 28), 10)
    assert sum(p.numel() for p in compact.parameters()) == 320 + 18496 + 36928 + 64 * 7 * 7 * 128 + 128 + 1290


def test_cnn5_forward_puts_dropout_where_the_reference_does():
    network = build_classifier("cnn5", (1, 28, 28), 10)
    images = torch.rand(3, 1, 28, 28)
    # model.py forward: pool(relu(dropout1(conv1(x)))), pool(relu(dropout1(conv2))), relu(dropout1(conv3)),
    # relu(dropout1(fc1)), fc2, with dropout1 p = 0.25; its Dropout(p=0.5) is never called
    torch.manual_seed(5)
    trained = network.train()(images)
    torch.manual_seed(5)
    x = F.max_pool2d(F.relu(F.dropout(network.conv1(images), 0.25, True)), 2)
    x = F.max_pool2d(F.relu(F.dropout(network.conv2(x), 0.25, True)), 2)
    x = F.relu(F.dropout(network.conv3(x), 0.25, True))
    assert tuple(x.shape) == (3, 32, 2, 2)
    x = F.relu(F.dropout(network.fc1(x.flatten(1)), 0.25, True))
    torch.testing.assert_close(trained, network.fc2(x))
    # in eval mode no dropout at all
    with torch.no_grad():
        x = F.max_pool2d(F.relu(network.conv1(images)), 2)
        x = F.relu(network.conv3(F.max_pool2d(F.relu(network.conv2(x)), 2)))
        expected = network.fc2(F.relu(network.fc1(x.flatten(1))))
        torch.testing.assert_close(network.eval()(images), expected)


# --- max_mean and correctly classified examples ----------------------------------------------------------


def test_max_mean_is_the_mean_over_channels_of_each_channels_maximum():
    activations = torch.tensor(
        [
            [[[1.0, 5.0, 2.0], [0.0, -1.0, 3.0]], [[-4.0, -2.0, -3.0], [-6.0, -5.0, -7.0]]],
            [[[0.5, 0.0, 0.0], [0.0, 0.0, 0.0]], [[9.0, 1.0, 1.0], [1.0, 1.0, 8.0]]],
        ]
    )  # (2 examples, 2 channels, 2, 3)
    # example 0: channel maxima 5 and -2 -> 1.5 (the plain mean is -17/12, the max 5)
    # example 1: channel maxima 0.5 and 9 -> 4.75
    torch.testing.assert_close(channel_max_mean(activations), torch.tensor([1.5, 4.75]))
    torch.testing.assert_close(channel_max_mean(torch.tensor([[1.0, 3.0, 8.0]])), torch.tensor([4.0]))
    assert compat_modalities("paper") == PAPER_MODALITIES
    assert compat_modalities("reference") == (
        ("max", "CONF"),
        ("max", "CONV-1"),
        ("max_mean", "CONV-1"),
        ("max", "CONV-2"),
        ("max_mean", "CONV-2"),
    )
    assert REFERENCE_MODALITIES == compat_modalities("reference")
    with pytest.raises(InvalidArgumentError, match="compat"):
        compat_modalities("published")


class TwoChannelNet(nn.Module):
    """1x1 convolution to 2 maps (weights 2 and -1, biases 0.5 and 0), then each map's maximum as a logit."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 1)
        with torch.no_grad():
            self.conv.weight.copy_(torch.tensor([2.0, -1.0]).reshape(2, 1, 1, 1))
            self.conv.bias.copy_(torch.tensor([0.5, 0.0]))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.conv(images).amax(dim=(2, 3))


def test_reference_signals_keep_only_examples_right_at_the_identity_with_their_max_mean():
    rng = np.random.default_rng(3)
    images = rng.uniform(0, 1, size=(6, 1, 8, 8)).astype(np.float32)
    labels = np.array([0, 1, 0, 0, 1, 0])
    # by hand at the identity: logits (2 max + 0.5, -min), pixels >= 0, so always class 0: right for label 0
    maxima, minima = images.reshape(6, -1).max(axis=1), images.reshape(6, -1).min(axis=1)
    logits = np.stack([2 * maxima + 0.5, -minima], axis=1)
    correct = logits.argmax(axis=1) == labels
    assert correct.tolist() == [True, False, True, True, False, True]
    family = transform_family("rotation", 10.0, steps=3)
    modalities = (("max", "CONF"), ("max_mean", "CONV-1"), ("mean", "CONV-1"))
    everything = model_signals(TwoChannelNet(), images, labels, family, modalities, progress=False)
    kept = model_signals(TwoChannelNet(), images, labels, family, modalities, correct_only=True, progress=False)
    assert kept.kept.tolist() == correct.tolist() and everything.kept.all()
    # max_mean at the identity: ((2 max + 0.5) + (-min)) / 2 per example, of the kept ones only
    by_hand = (2 * maxima + 0.5 - minima) / 2
    np.testing.assert_allclose(kept.values["max_mean@CONV-1"][:, 1], by_hand[correct], rtol=1e-6)
    np.testing.assert_allclose(everything.values["max_mean@CONV-1"][:, 1], by_hand, rtol=1e-6)
    # the plain mean differs: (2 mean + 0.5 - mean) / 2
    means = images.reshape(6, -1).mean(axis=1)
    np.testing.assert_allclose(everything.values["mean@CONV-1"][:, 1], (means + 0.5) / 2, rtol=1e-5)
    assert kept.values["max@CONF"].shape == (4, 3)


def test_reference_features_draw_the_sensitivity_subsample_from_all_examples():
    from repscope.metrics.invariance.variance_matrix import subsample_rows, variance_matrix
    from repscope.studies.invariance.testing import InvarianceSignals, reference_features

    rng = np.random.default_rng(8)
    kept = np.array([True, False, True, True, True, False, True, True, False, True, True, True])
    values = rng.normal(size=(int(kept.sum()), 7)).cumsum(axis=1)
    family = transform_family("rotation", 15.0, steps=7)
    signals = InvarianceSignals({"max@CONF": values}, np.ones((12, 7), bool), kept, family)
    features = reference_features(signals, seed=4)["max@CONF"]
    assert all(name.endswith("_reference") for name in features) and len(features) == 16
    # datamat.py: np.random.seed(4), then choice(range(12), int(12 * 0.9) = 10, replace=False) of all 12
    # examples (printed once: it leaves out 7 and 10, both kept), then the kept ones among them
    drawn = {0, 1, 2, 3, 4, 5, 6, 8, 9, 11}
    rows = [k for k, example in enumerate(np.flatnonzero(kept)) if example in drawn]
    assert rows == [0, 1, 2, 3, 4, 6, 8]
    full, part = variance_matrix(values), variance_matrix(values[rows])
    assert features["sensitivity_reference"] == pytest.approx(np.abs(full - part).sum(), rel=1e-12)
    assert features["sensitivity_reference"] > 0.1
    # drawing from the 9 kept examples instead (the paper's path) gives another subsample here
    assert sorted(rows) != subsample_rows(9, 0.9, 4).tolist()


@pytest.mark.slow  # trains one classifier and tests it under 31 rotations (about 20 s on 2 busy cores)
def test_a_reference_repository_measures_max_mean_on_correct_examples(tmp_path):
    from repscope.studies.invariance.repo import RepoConfig, build_repository

    config = RepoConfig(
        data={"name": "digits", "params": {"target": "label", "train_size": 300, "test_size": 60}},
        count=1,
        epochs=[1],
        test_n=40,
        anomaly=["none"],
        compat="reference",
        trainer={"logger": "none"},
    )
    result = build_repository(config, tmp_path / "repo")
    assert result.ok
    (folder,) = [p for p in (tmp_path / "repo").iterdir() if p.is_dir() and p.name.startswith("model-")]
    metadata = json.loads((folder / "metadata.json").read_text())
    features = json.loads((folder / "features.json").read_text())
    assert metadata["compat"] == "reference"
    assert sorted(features) == sorted(["max@CONF", "max@CONV-1", "max_mean@CONV-1", "max@CONV-2", "max_mean@CONV-2"])
    # the features come from the test examples right at the identity: accuracy x 40 of them
    assert metadata["feature_examples"] == round(metadata["accuracy"] * 40)
    assert 0 < metadata["feature_examples"] < 40
    assert (folder / "matrix_max_mean_at_CONV-1.npy").exists()
    reference = json.loads((folder / "features_reference.json").read_text())
    assert sorted(reference) == sorted(features) and "mean_reference" in reference["max_mean@CONV-2"]
    # the model read its images normalised to [-1, 1], as the released train.py trains it
    trained = yaml.safe_load(next(folder.glob("train-*/config.yaml")).read_text())
    assert trained["model"]["params"]["network_params"] == {"input_range": "symmetric"}
    with pytest.raises(ValueError, match="compat"):
        RepoConfig(compat="published")


def test_a_symmetric_input_network_is_the_unit_one_on_normalised_images():
    import torch

    from repscope.errors import InvalidArgumentError
    from repscope.models.invariance.simplenet import SimpleNet
    from repscope.models.morpho.baselines import VGG13BN

    for network, shape in ((SimpleNet, (1, 28, 28)), (VGG13BN, (3, 32, 32))):
        torch.manual_seed(0)
        unit = network(10, shape).eval()
        torch.manual_seed(0)
        symmetric = network(10, shape, input_range="symmetric").eval()
        batch = torch.rand(3, *shape, generator=torch.Generator().manual_seed(4))
        with torch.no_grad():
            # the reference's Normalize((0.5,), (0.5,)): (x - 0.5) / 0.5, written out here
            assert torch.allclose(symmetric(batch), unit((batch - 0.5) / 0.5), atol=1e-6)
            if network is SimpleNet:  # (the untrained VGG's outputs barely depend on its input)
                assert not torch.allclose(symmetric(batch), unit(batch), atol=1e-3)
        with pytest.raises(InvalidArgumentError, match="input_range"):
            network(10, shape, input_range="centred")


# --- the reference assessor protocol ---------------------------------------------------------------------


def test_max_deviation_is_the_largest_distance_of_the_repeat_scores_from_their_mean():
    scores = [0.9, 0.8, 0.75, 0.55]  # mean 0.75: max - mean = 0.15, mean - min = 0.2
    assert max_deviation(scores) == pytest.approx(0.2)
    assert max_deviation([0.6, 0.9, 0.9]) == pytest.approx(0.2)  # mean 0.8: 0.1 above, 0.2 below
    assert np.std(scores) == pytest.approx(0.12748, abs=1e-5)  # not the std


def test_reference_folds_keep_the_hold_out_as_one_fold_and_halve_the_rest():
    holdout = np.array([False, False, True, False, False, True, False])
    regular = np.array([0, 1, 3, 4, 6])
    order = regular[np.random.default_rng(11).permutation(5)]
    fold1, fold2 = sorted(order[:2]), sorted(order[2:])  # 5 // 2 = 2 in the first half
    folds = reference_folds(holdout, np.random.default_rng(11))
    as_sets = [(sorted(train), sorted(test)) for train, test in folds]
    assert as_sets == [
        ([0, 1, 3, 4, 6], [2, 5]),
        (sorted([*fold1, 2, 5]), fold2),
        (sorted([*fold2, 2, 5]), fold1),
    ]
    assert reference_holdout(["m5", "m1", "m3", "m0", "m2", "m4"]).tolist() == [True, False, False, False, False, True]
    with pytest.raises(InvalidArgumentError, match="holdout"):
        reference_folds(np.zeros(5, bool), np.random.default_rng(0))


def _protocol_by_hand(features, labels, robust, holdout, repeats, seed, scale_rows=True):
    """ML4MLassessor.py's rules written out with scikit-learn: folds, L2-normalised linear regression at
    0.5, a brute-force greedy threshold, per-repeat means of the three folds, mean and max deviation."""
    from sklearn.linear_model import LinearRegression
    from sklearn.preprocessing import normalize
    from sklearn.tree import DecisionTreeClassifier

    fixed, regular = np.flatnonzero(holdout), np.flatnonzero(~holdout)
    results = {"decision tree": [], "linear regression": [], "baseline": []}
    for repeat in range(repeats):
        order = regular[np.random.default_rng([seed, repeat]).permutation(len(regular))]
        one, two = order[: len(order) // 2], order[len(order) // 2 :]
        folds = [(regular, fixed), (np.r_[one, fixed], two), (np.r_[two, fixed], one)]
        scores = {name: [] for name in results}
        for train, test in folds:
            tree = DecisionTreeClassifier(random_state=seed + repeat).fit(features[train], labels[train])
            scores["decision tree"].append(np.mean(tree.predict(features[test]) == labels[test]))
            rows = normalize(features, axis=1) if scale_rows else features
            line = LinearRegression().fit(rows[train], labels[train])
            predicted = (line.predict(rows[test]) >= 0.5).astype(int)
            scores["linear regression"].append(np.mean(predicted == labels[test]))
            values = np.sort(np.unique(robust[train]))
            candidates = [values[0] - 1e-9, *((values[1:] + values[:-1]) / 2), values[-1] + 1e-9]
            best = max(candidates, key=lambda t: (np.mean((robust[train] >= t) == labels[train]), -t))
            scores["baseline"].append(np.mean((robust[test] >= best) == labels[test]))
        for name in results:
            results[name].append(np.mean(scores[name]))
    return {name: (np.mean(v), max(np.max(v) - np.mean(v), np.mean(v) - np.min(v))) for name, v in results.items()}


def test_the_reference_protocol_matches_the_rules_written_out():
    rng = np.random.default_rng(4)
    features = rng.normal(size=(21, 5)) * rng.uniform(0.2, 5.0, size=(21, 1))  # rows of unequal norms
    labels = (features[:, 0] + 0.3 * features[:, 1] > 0).astype(int)
    robust = np.clip(0.5 + 0.3 * labels + rng.normal(scale=0.2, size=21), 0, 1)
    holdout = np.zeros(21, bool)
    holdout[[2, 5, 9, 14, 20]] = True
    table = evaluate_assessors_reference(features, labels, robust, holdout, repeats=4, seed=2)
    rows = table.set_index("assessor")
    expected = _protocol_by_hand(features, labels, robust, holdout, repeats=4, seed=2)
    for name, column in (("decision tree", "decision tree"), ("linear regression", "linear regression")):
        assert rows.loc[name, "mean"] == pytest.approx(expected[column][0], abs=1e-12)
        assert rows.loc[name, "max_deviation"] == pytest.approx(expected[column][1], abs=1e-12)
    base = rows.loc["robust accuracy (baseline)"]
    assert (base["mean"], base["max_deviation"]) == pytest.approx(expected["baseline"], abs=1e-12)
    assert (table["compat"] == "reference").all() and (table["folds"] == 12).all()
    assert (table["holdout_models"] == 5).all() and "std" not in table.columns
    # the L2 row scaling matters on these features (the check above would miss its absence otherwise)
    unscaled = _protocol_by_hand(features, labels, robust, holdout, repeats=4, seed=2, scale_rows=False)
    assert unscaled["linear regression"][0] != pytest.approx(expected["linear regression"][0], abs=1e-3)


# --- label coding ----------------------------------------------------------------------------------------


def small_repository(folder, count: int = 15, seed: int = 0):
    """A repository as repo build writes it: every third model variant (no augmentation), told apart by
    its max@CONF std, and a robust accuracy that tracks the label (so the baseline can read it)."""
    from repscope.metrics.invariance.features import FEATURE_NAMES

    modalities = ["max@CONF", "max@CONV-1", "mean@CONV-1", "max@CONV-2", "mean@CONV-2"]
    rng = np.random.default_rng(seed)
    folder.mkdir()
    (folder / "repository.json").write_text(json.dumps({"config": {"transform": "rotation"}}))
    invariant = [k % 3 != 0 for k in range(count)]
    for k in range(count):
        model = folder / f"model-{k:03d}"
        model.mkdir()
        settings = {"model": f"{k:03d}", "augment": "covering" if invariant[k] else "none", "anomaly": "none"}
        robust = float(rng.uniform(0.7, 0.9) if invariant[k] else rng.uniform(0.3, 0.72))
        metadata = {"settings": settings, "accuracy": 0.95, "robust_accuracy": robust, "curves": {"val_loss": [1]}}
        (model / "metadata.json").write_text(json.dumps(metadata))
        features = {m: {f: float(rng.normal()) for f in FEATURE_NAMES} for m in modalities}
        features["max@CONF"]["mean"] = 0.05
        features["max@CONF"]["std"] = 0.01 if invariant[k] else 0.2
        (model / "features.json").write_text(json.dumps(features))
    return folder


def test_to_our_coding_flips_the_papers_labels_only():
    assert to_our_coding([0, 1, 1, 0], "paper").tolist() == [1, 0, 0, 1]
    assert to_our_coding([0, 1, 1, 0], "ours").tolist() == [0, 1, 1, 0]
    with pytest.raises(InvalidArgumentError, match="label: expected 0 or 1"):
        to_our_coding([0, 2], "ours")
    with pytest.raises(InvalidArgumentError, match="label_coding"):
        to_our_coding([0, 1], "inverted")


def test_labels_in_the_papers_coding_give_the_same_assessors_as_ours(tmp_path):
    repo = small_repository(tmp_path / "repo")
    from repscope.studies.invariance.assess import read_repository

    table = read_repository(repo)
    rules = rule_labels(table)
    assert (rules["label_coding"] == "ours").all() and rules["label"].tolist() == [k % 3 != 0 for k in range(15)]
    ours, paper, bare = tmp_path / "ours.csv", tmp_path / "paper.csv", tmp_path / "bare.csv"
    pd.DataFrame({"name": rules["name"], "label": rules["label"], "label_coding": "ours"}).to_csv(ours, index=False)
    paper_labels = pd.DataFrame({"name": rules["name"], "label": 1 - rules["label"], "label_coding": "paper"})
    paper_labels.to_csv(paper, index=False)
    paper_labels.drop(columns="label_coding").to_csv(bare, index=False)
    assert repository_labels(repo, table, paper)["label"].tolist() == rules["label"].tolist()
    a = train_assessors(repo, tmp_path / "a", "rotation", ours, compat="reference", repeats=1)
    b = train_assessors(repo, tmp_path / "b", "rotation", paper, compat="reference", repeats=1)
    pd.testing.assert_frame_equal(a, b)
    # a file without the column, read with the coding said: the same labels, so the same table
    pd.testing.assert_frame_equal(repository_labels(repo, table, bare, "paper"), repository_labels(repo, table, ours))
    baseline = a.set_index("assessor").loc["robust accuracy (baseline)", "mean"]
    # the same file read as ours inverts every label: the baseline, which predicts invariant for a high
    # robust accuracy, then fails where it succeeded
    wrong = train_assessors(
        repo, tmp_path / "wrong", "rotation", bare, compat="reference", label_coding="ours", repeats=1
    )
    inverted = wrong.set_index("assessor").loc["robust accuracy (baseline)", "mean"]
    assert baseline > 0.9 and inverted < baseline - 0.3, (baseline, inverted)
    saved = json.loads((tmp_path / "a" / "assessors.json").read_text())
    assert saved["compat"] == "reference" and saved["label_coding"] == "ours" and len(saved["holdout_models"]) == 5
    written = pd.read_csv(tmp_path / "b" / "labels.csv")
    assert (written["label_coding"] == "ours").all() and written["label"].tolist() == rules["label"].tolist()
    with pytest.raises(DataFormatError, match="say how its labels are coded"):
        repository_labels(repo, table, bare)
    with pytest.raises(DataFormatError, match="says paper"):
        repository_labels(repo, table, paper, label_coding="ours")


def test_assess_train_cli_reference_mode(tmp_path, run_cli):
    repo = small_repository(tmp_path / "repo")
    labels = tmp_path / "paper.csv"
    names = [f"model-{k:03d}" for k in range(15)]
    pd.DataFrame({"name": names, "label": [int(k % 3 == 0) for k in range(15)]}).to_csv(labels, index=False)
    args = ["invariance", "assess", "train", str(repo), "--labels", str(labels), "--compat", "reference"]
    code, _, err = run_cli([*args, "--out", str(tmp_path / "x")])
    assert code == 1 and "say how its labels are coded" in err and len(err.strip().splitlines()) == 1
    hold = ["--holdout", "model-000", "--holdout", "model-004", "--holdout", "model-007"]
    code, out, err = run_cli([*args, "--label-coding", "paper", *hold, "--repeats", "2", "--out", str(tmp_path / "a")])
    assert code == 0, err
    assert "(max_deviation)" in out
    table = pd.read_csv(tmp_path / "a" / "table4.csv")
    assert (table["compat"] == "reference").all() and (table["holdout_models"] == 3).all()
    assert (table["repeats"] == 2).all() and (table["folds"] == 6).all()
    saved = json.loads((tmp_path / "a" / "assessors.json").read_text())
    assert saved["holdout_models"] == ["model-000", "model-004", "model-007"]
    assert saved["features"] == "features.json"
    # a repository built with compat reference also has the released code's features: those are used
    for folder in repo.glob("model-*"):
        paper = json.loads((folder / "features.json").read_text())
        reference = {m: {f"{k}_reference": v for k, v in values.items()} for m, values in paper.items()}
        (folder / "features_reference.json").write_text(json.dumps(reference))
    code, out, err = run_cli([*args, "--label-coding", "paper", "--repeats", "1", "--out", str(tmp_path / "r")])
    assert code == 0, err
    saved = json.loads((tmp_path / "r" / "assessors.json").read_text())
    assert saved["features"] == "features_reference.json"
    assert all(column.endswith("_reference") for column in saved["columns"]) and len(saved["columns"]) == 80
    code, _, err = run_cli(
        ["invariance", "assess", "train", str(repo), "--holdout", "model-000", "--out", str(tmp_path / "b")]
    )
    assert code == 1 and "--compat reference" in err

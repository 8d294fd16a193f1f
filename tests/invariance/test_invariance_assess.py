"""ML4ML labels and assessors: rules, kappas, the greedy baseline and the cross-validated assessors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from repscope.errors import InvalidArgumentError
from repscope.studies.invariance.assess import evaluate_assessors
from repscope.studies.invariance.assessor_models import greedy_threshold
from repscope.studies.invariance.labels import agreement, fleiss_kappa, rule_labels


def test_rule_labels_name_every_failed_rule():
    columns = ["name", "augment", "anomaly", "accuracy", "val_loss", "max@CONF:mean"]
    rows = [
        ["a", "covering", "none", 0.95, [0.5, 0.4], 0.05],
        ["b", "gap", "leak", 0.95, [0.5, 0.4], 0.05],
        ["c", "covering", "none", 0.5, [0.3, 0.5], 0.3],
    ]
    table = pd.DataFrame(rows, columns=columns)
    labels = rule_labels(table)
    assert labels["label"].tolist() == [1, 0, 0]
    assert labels["reasons"][1] == "augmentation gap; anomaly leak"
    assert labels["reasons"][2] == "under-fits; over-fits; max@CONF matrix not normal"


def test_fleiss_kappa_by_hand_and_cohen_per_pair():
    # 4 subjects, 3 raters. Counts per subject (class 0, class 1): (3,0) (0,3) (2,1) (1,2)
    # P_i = (sum n^2 - 3) / 6: 1, 1, 1/3, 1/3 -> P_bar = 2/3; shares 6/12, 6/12 -> P_e = 1/2
    ratings = [[0, 0, 0], [1, 1, 1], [0, 0, 1], [1, 1, 0]]
    assert fleiss_kappa(ratings) == pytest.approx((2 / 3 - 1 / 2) / (1 - 1 / 2))
    assert fleiss_kappa([[1, 1], [0, 0], [1, 1]]) == pytest.approx(1.0)
    labels = pd.DataFrame({"name": list("abcd"), "ann1": [0, 1, 0, 1], "ann2": [0, 1, 0, 1], "ann3": [0, 1, 1, 0]})
    result = agreement(labels)
    assert result["cohen"]["ann1 vs ann2"] == pytest.approx(1.0)
    assert result["cohen"]["ann1 vs ann3"] == pytest.approx(0.0)
    with pytest.raises(InvalidArgumentError, match="two or more"):
        agreement(labels[["name", "ann1"]])


def test_greedy_threshold_separates_when_it_can():
    scores = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    labels = np.array([0, 0, 0, 1, 1, 1])
    threshold = greedy_threshold(scores, labels)
    assert 0.3 < threshold <= 0.7 and np.all((scores >= threshold) == labels.astype(bool))


def test_assessors_learn_a_label_the_features_carry_and_the_baseline_cannot():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(60, 10))
    labels = (features[:, 3] > 0).astype(int)  # the label is one feature's sign
    robust = rng.uniform(size=60)  # a baseline score unrelated to the label
    table = evaluate_assessors(features, labels, robust, folds=3, repeats=3, seed=1)
    means = dict(zip(table["assessor"], table["mean"]))
    assert means["decision tree"] > 0.9 and means["random forest"] > 0.8
    assert means["random forest"] > means["robust accuracy (baseline)"] + 0.2
    assert (table["folds"] == 9).all() and (table["balanced_models"] == 2 * min(labels.sum(), 60 - labels.sum())).all()
    with pytest.raises(InvalidArgumentError, match="invariant and"):
        evaluate_assessors(features, np.r_[np.ones(58, int), [0, 0]], robust)


def fake_repository(folder, count: int = 24, seed: int = 0):
    """A repository as repo build writes it, with features that carry the rule label."""
    import json

    from repscope.metrics.invariance.features import FEATURE_NAMES

    modalities = ["max@CONF", "max@CONV-1", "mean@CONV-1", "max@CONV-2", "mean@CONV-2"]
    rng = np.random.default_rng(seed)
    folder.mkdir()
    (folder / "repository.json").write_text(json.dumps({"config": {"transform": "rotation"}}))
    for k in range(count):
        invariant = k % 2 == 0
        model = folder / f"model-{k:03d}"
        model.mkdir()
        settings = {"model": f"{k:03d}", "augment": "covering" if invariant else "none", "anomaly": "none"}
        metadata = {"settings": settings, "accuracy": 0.95, "robust_accuracy": float(rng.uniform(0.5, 0.9))}
        metadata["curves"] = {"val_loss": [0.5, 0.4]}
        (model / "metadata.json").write_text(json.dumps(metadata))
        features = {m: {f: float(rng.normal()) for f in FEATURE_NAMES} for m in modalities}
        features["max@CONF"]["mean"] = 0.05 if invariant else 0.1  # below the rule's 0.15 either way
        features["max@CONF"]["std"] = 0.01 if invariant else 0.2  # what an assessor can learn
        (model / "features.json").write_text(json.dumps(features))
    return folder


def test_label_and_assess_from_the_cli_then_a_verdict(tmp_path, run_cli):
    import torch

    from repscope.models.invariance.simplenet import SimpleNet

    run = run_cli
    repo = fake_repository(tmp_path / "repo")
    code, out, err = run(["invariance", "repo", "label", str(repo), "--out", str(tmp_path / "labels.csv")])
    assert code == 0, err
    assert "12 of 24 models invariant by the rules" in out
    human = pd.read_csv(tmp_path / "labels.csv")[["name", "label"]].rename(columns={"label": "ann1"})
    human["ann2"] = human["ann1"]
    human.loc[:3, "ann2"] = 1 - human.loc[:3, "ann2"]
    # the annotators wrote the paper's coding (0 = invariant): read as such, ann1 agrees with the rules
    paper_coded = human.assign(ann1=1 - human["ann1"], ann2=1 - human["ann2"])
    paper_coded.to_csv(tmp_path / "human.csv", index=False)
    label_args = ["invariance", "repo", "label", str(repo), "--human", str(tmp_path / "human.csv")]
    code, out, err = run([*label_args, "--out", str(tmp_path / "l2.csv"), "--label-coding", "paper"])
    assert code == 0, err
    assert "Cohen's kappa ann1 vs rules: 1.000" in out and "Fleiss' kappa" in out
    # a file that does not say its coding is refused in one line, before any labels are written
    code, _, err = run([*label_args, "--out", str(tmp_path / "l3.csv")])
    assert code == 1 and "label_coding" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "l3.csv").exists()
    code, out, err = run(["invariance", "assess", "train", str(repo), "--out", str(tmp_path / "assess")])
    assert code == 0, err
    table = pd.read_csv(tmp_path / "assess" / "table4.csv")
    assert "Table IV layout" in (tmp_path / "assess" / "report.html").read_text()
    assert table["assessor"].tolist()[-1] == "robust accuracy (baseline)" and len(table) == 5
    means = dict(zip(table["assessor"], table["mean"]))
    assert means["decision tree"] > 0.9  # the std of max@CONF separates the classes
    assert f"report: {tmp_path / 'assess' / 'report.html'}" in out
    # a mean at or below a constant guess's 0.5 (the protocol's labels are balanced) is said to be at chance
    below = [name for name, mean in means.items() if mean <= 0.5]
    assert ("at or below chance" in out) == bool(below) and all(name in out for name in below)
    code, _, err = run(
        ["invariance", "assess", "train", str(repo), "--transform", "scale", "--out", str(tmp_path / "x")]
    )
    assert code == 1 and "tested with rotation" in err
    torch.manual_seed(0)
    torch.save(SimpleNet().state_dict(), tmp_path / "cnn5.pt")
    args = ["invariance", "test", "--model", str(tmp_path / "cnn5.pt"), "--arch", "cnn5", "--data", "digits"]
    args += ["--data-param", "test_size=40", "--n", "20", "--steps", "5", "--range", "4", "--out", str(tmp_path / "t")]
    code, out, err = run([*args, "--assessor", str(tmp_path / "assess" / "assessors.skops")])
    assert code == 0, err
    assert "random forest: " in out and ("invariant" in out or "variant" in out)

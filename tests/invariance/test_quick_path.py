"""The README's quick path reaches the assessors: `repo build --quick` makes both label classes by construction."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from repscope.studies.invariance.assess import evaluate_assessors, read_repository
from repscope.studies.invariance.labels import rule_labels
from repscope.studies.invariance.repo import RepoConfig, build_repository, quick, repository_points

FOLDS = 3  # assess train's 3-fold protocol needs this many models of each class


def test_the_quick_grid_holds_four_models_the_rules_can_call_invariant_and_four_they_cannot():
    config = quick(RepoConfig(seed=5))
    points = [dict(point) for point in repository_points(config)]
    assert len(points) == 8 and [p["model"] for p in points] == [f"{k:03d}" for k in range(8)]
    # every point once, whatever the seed: only the order of the models follows it
    augment = sorted(p["augment"] for p in points)
    assert augment == ["covering"] * 4 + ["gap", "none", "none", "partial"]
    assert sorted(p["augment"] for p in map(dict, repository_points(quick(RepoConfig(seed=6))))) == augment
    assert points == [dict(point) for point in repository_points(quick(RepoConfig(seed=5)))]  # deterministic
    # the recipe that trained invariant models in the 60-model repository, the same for every model
    for point in points:
        assert (point["lr"], point["epochs"], point["batch_size"], point["anomaly"], point["optimizer"]) == (
            "0.001",
            "3",
            "32",
            "none",
            "adam",
        )
    assert config.count == 8 and config.test_n == 200 and config.data.params["train_size"] == 3000
    assert config.transform == "rotation" and config.model == "cnn5"  # what the user set is kept


def test_rule_labels_of_the_quick_grid_meet_the_assessors_needs_when_the_covering_models_learn():
    points = [dict(point) for point in repository_points(quick(RepoConfig()))]
    # the accuracies the quick build measured (0.855-0.91 at the identity), matrices of normal size
    table = pd.DataFrame(
        [
            {
                "name": f"model-{p['model']}",
                **p,
                "accuracy": 0.85 + 0.01 * k,
                "robust_accuracy": 0.7,
                "val_loss": [0.9, 0.5, 0.4],
                "max@CONF:mean": 0.1,
            }
            for k, p in enumerate(points)
        ]
    )
    labels = rule_labels(table)
    by_hand = [int(p["augment"] == "covering") for p in points]  # covering, no anomaly, >= 0.8, no over-fit
    assert labels["label"].tolist() == by_hand and sum(by_hand) == 4
    rng = np.random.default_rng(0)
    result = evaluate_assessors(rng.normal(size=(8, 5)), labels["label"], rng.uniform(size=8), repeats=1)
    assert set(result["folds"]) == {FOLDS} and set(result["balanced_models"]) == {8}


def test_the_assessors_cross_validation_reports_its_folds(monkeypatch, capsys):
    monkeypatch.setenv("REPSCOPE_PROGRESS", "lines")
    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0")
    labels = np.array([1, 0, 1, 0, 1, 0, 1, 0])
    evaluate_assessors(np.random.default_rng(1).normal(size=(8, 4)), labels, np.linspace(0, 1, 8), repeats=2)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("cross-validating")]
    assert lines[0].startswith("cross-validating 4 assessors on 8 models (2 x 3 folds): 1/6 ")
    counts = [int(line.split(": ")[1].split("/")[0]) for line in lines[:-1]]
    assert counts == [1, 2, 3, 4, 5] and "~" in lines[1]  # n of m, with the time left
    assert lines[-1].startswith("cross-validating 4 assessors on 8 models (2 x 3 folds): 6/6 done in")


@pytest.mark.slow  # trains the 8 quick models: about 50 s on 2 cores
def test_the_quick_repository_is_labelled_with_both_classes_in_the_counts_assess_train_needs(tmp_path):
    config = quick(RepoConfig())
    result = build_repository(config, tmp_path / "repo")
    assert not result.failed
    table = read_repository(tmp_path / "repo")
    labels = rule_labels(table).merge(table[["name", "augment"]], on="name")
    assert len(labels) == 8
    # four are variant by their augmentation whatever they learnt; the covering ones learn enough
    assert set(labels.loc[labels["augment"] != "covering", "label"]) == {0}
    assert (labels["label"] == 1).sum() >= FOLDS and (labels["label"] == 0).sum() >= FOLDS
    stored = json.loads((tmp_path / "repo" / "repository.json").read_text())["config"]
    assert stored["augment"] == ["covering"] * 4 + ["none", "partial", "gap", "none"]

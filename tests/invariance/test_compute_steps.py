"""The invariance studies' compute steps: results from a model and arrays or tables, without a run directory,
equal to what the run functions write."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from repscope.data.invariance.transforms import TransformFamily
from repscope.studies.invariance.assess import compute_assessors, evaluate_assessors, write_assessors
from repscope.studies.invariance.correlate import compute_correlations, feature_correlations, write_correlations
from repscope.studies.invariance.testing import (
    compute_invariance_test,
    invariance_test_metrics,
    matrices_and_features,
    model_signals,
    robust_accuracy,
)

STUDIES = Path(__file__).resolve().parents[2] / "src" / "repscope" / "studies" / "invariance"


def _brightness_family() -> TransformFamily:
    factors = (0.5, 0.75, 1.0, 1.25, 1.5)  # five: the released code's features need a 5x5 matrix
    return TransformFamily("brightness", factors, "factor", lambda images, value: (images * value).clamp(0, 1))


def _classifier() -> nn.Module:
    torch.manual_seed(0)  # two convolutions: the paper's positions CONV-1 and CONV-2
    layers = [nn.Conv2d(1, 2, 1), nn.ReLU(), nn.Conv2d(2, 2, 1), nn.Flatten(), nn.Linear(8, 3)]
    return nn.Sequential(*layers).eval()


def test_the_test_computes_from_a_network_and_arrays_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    images, labels = rng.uniform(size=(12, 1, 2, 2)), rng.integers(0, 3, size=12)
    network, family = _classifier(), _brightness_family()
    result = compute_invariance_test(network, images, labels, family, seed=3, progress=False)
    signals = model_signals(network, images, labels, family, progress=False)
    matrices, features = matrices_and_features(signals, seed=3)
    assert list(tmp_path.iterdir()) == []
    assert list(result.matrices) == list(matrices) and len(matrices) == 5
    assert all(np.array_equal(result.matrices[name], matrices[name]) for name in matrices)
    assert result.features == features and result.features_reference is None and result.verdict is None
    assert result.robust_accuracy == robust_accuracy(signals.correct)
    assert result.accuracy == float(signals.correct[:, 2].mean()) and result.test_examples == 12
    metrics = invariance_test_metrics(result)
    assert list(metrics) == ["robust_accuracy", "accuracy", "examples", "transform", "compat", "features"]
    assert metrics["transform"] == "brightness" and metrics["examples"] == 12
    reference = compute_invariance_test(network, images, labels, family, compat="reference", seed=3, progress=False)
    assert reference.correct_only and np.array_equal(reference.kept, reference.correct[:, 2])
    assert sorted(reference.features_reference) == sorted(reference.matrices)
    assert "max_mean@CONV-1" in reference.matrices
    assert list(invariance_test_metrics(reference))[-1] == "features_reference"
    table = result.features_table
    assert table["modality"].tolist() == list(features) and table.loc[0, "mean"] == features["max@CONF"]["mean"]


def _models_table(count: int = 12, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    names = [f"model-{k:03d}" for k in range(count)]
    table = pd.DataFrame(
        {
            "name": names,
            "accuracy": rng.uniform(0.8, 1.0, count),
            "robust_accuracy": rng.uniform(0.0, 0.8, count),
            "max@CONF:mean": rng.normal(size=count),
            "max@CONF:asymmetry": rng.normal(size=count),
        }
    )
    labels = pd.DataFrame({"name": names, "label": [k % 2 for k in range(count)], "label_coding": "ours"})
    return table, labels


def test_the_assessors_compute_from_tables_as_the_protocol_scores_them(tmp_path):
    table, labels = _models_table()
    result = compute_assessors(table, labels, "rotation", repeats=2, seed=1)
    features = table[["max@CONF:mean", "max@CONF:asymmetry"]].to_numpy()
    expected = evaluate_assessors(features, labels["label"], table["robust_accuracy"], repeats=2, seed=1)
    pd.testing.assert_frame_equal(result.table.drop(columns="compat"), expected)
    assert result.columns == ("max@CONF:mean", "max@CONF:asymmetry") and result.models == 12 and result.invariant == 6
    assert result.holdout_models is None and set(result.assessors) == set(expected["assessor"][:-1])
    reference = compute_assessors(table, labels, "rotation", compat="reference", holdout=["model-000"], repeats=2)
    assert reference.holdout_models == ("model-000",) and (reference.table["holdout_models"] == 1).all()
    write_assessors(reference, tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "assessors.json").read_text())
    assert summary["holdout_models"] == ["model-000"] and summary["compat"] == "reference"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "assessors.json",
        "assessors.skops",
        "labels.csv",
        "table4.csv",
    ]


def test_table5_computes_from_a_table_and_is_written_as_computed(tmp_path):
    table, _ = _models_table(count=5)
    result = compute_correlations(table)
    pd.testing.assert_frame_equal(result.correlations, feature_correlations(table))
    assert result.models == 5 and result.names == tuple(table["name"])
    write_correlations(result, tmp_path / "out", tmp_path / "repo")
    written = json.loads((tmp_path / "out" / "correlations.json").read_text())
    assert written["models"] == 5 and written["repository"] == str((tmp_path / "repo").resolve())
    assert pd.read_csv(tmp_path / "out" / "correlations.csv").shape == result.correlations.shape


def _imported_modules(path: Path) -> set[str]:
    """Every repscope module a file imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("repscope"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("repscope"))
    return found


@pytest.mark.parametrize("pair", [("assess", "assess_reference"), ("testing", "assess"), ("repo", "testing")])
def test_no_two_invariance_studies_import_each_other(pair):
    """Shared pieces live below both (assessor_models): an import circle would be a second home of one idea."""
    first, second = pair
    assert f"repscope.studies.invariance.{first}" not in _imported_modules(STUDIES / f"{second}.py")

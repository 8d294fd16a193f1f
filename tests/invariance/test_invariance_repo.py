"""The ML4ML model repository: anomalies injected into training sets; a small repository built by the sweeps."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from repscope.data.registry import load_dataset
from repscope.errors import InvalidArgumentError
from repscope.studies.invariance.repo import RepoConfig, augment_ranges, build_repository, repository_points

BASE = {"base": "digits", "base_params": {"train_size": 200, "test_size": 50}, "fraction": 0.25, "seed": 1}


def train_split(anomaly: str) -> dict[str, np.ndarray]:
    dataset = load_dataset("anomalous", anomaly=anomaly, **BASE)
    return dataset.arrays("train", ["image", "target"]), dataset


def test_each_anomaly_changes_the_training_split_as_described():
    clean, dataset = train_split("none")
    test = dataset.arrays("test", ["image", "target"])
    assert len(clean["target"]) == 200
    noise, _ = train_split("noise")
    assert len(noise["target"]) == 250 and np.array_equal(noise["image"][:200], clean["image"])
    assert noise["image"][200:].std() > 60  # uniform noise, not digits on black
    leak, _ = train_split("leak")
    assert len(leak["target"]) == 250 and np.array_equal(leak["image"][200:], test["image"])
    impaired, _ = train_split("impaired")
    changed = impaired["target"] != clean["target"]
    assert changed.sum() == 50 and np.array_equal(impaired["image"], clean["image"])  # 25%, always wrong
    small, _ = train_split("small")
    assert len(small["target"]) == 50
    # the test split is never touched
    assert np.array_equal(
        load_dataset("anomalous", anomaly="leak", **BASE).arrays("test", ["target"])["target"], test["target"]
    )
    with pytest.raises(InvalidArgumentError, match="anomaly"):
        load_dataset("anomalous", anomaly="typo", **BASE)


def test_repository_points_and_coverages():
    config = RepoConfig(count=12, seed=3)
    points = repository_points(config)
    assert len(points) == 12 and points == repository_points(RepoConfig(count=12, seed=3))
    assert len({tuple(p[1:]) for p in points}) == 12  # drawn without replacement from the grid
    assert {dict(p)["optimizer"] for p in repository_points(RepoConfig(count=40, optimizer=["adam", "sgd"]))} == {
        "adam",
        "sgd",
    }
    assert augment_ranges("covering", 15, 0) == [[-15.0, 15.0]]
    assert augment_ranges("gap", 15, 0) == [[-15.0, -7.5], [7.5, 15.0]]
    assert augment_ranges("partial", 0.3, 1.0) == [[0.85, 1.15]]


def test_a_small_repository_is_built_tested_and_resumed(tmp_path):
    config = RepoConfig(
        data={"name": "digits", "params": {"target": "label", "train_size": 300, "test_size": 60}},
        count=3,
        epochs=[1],
        test_n=40,
        anomaly=["none", "impaired"],
        trainer={"logger": "none", "max_epochs": 9},  # the trainer flags reach every model; epochs do not
    )
    out = tmp_path / "repo"
    result = build_repository(config, out)
    assert result.ok and len(result.ran) == 3
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 3 and (summary["robust_accuracy"] <= summary["accuracy"]).all()
    assert "max@CONV-2:asymmetry" in summary.columns and "mean@CONV-1:sensitivity" in summary.columns
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and p.name.startswith("model-")):
        metadata = json.loads((folder / "metadata.json").read_text())
        assert metadata["settings"]["anomaly"] in ("none", "impaired") and metadata["test_examples"] == 40
        matrix = np.load(folder / "matrix_max_at_CONF.npy")
        assert matrix.shape == (31, 31) and np.allclose(matrix, matrix.T)
        assert len(json.loads((folder / "features.json").read_text())) == 5
        (train_config,) = folder.glob("train-*/config.yaml")
        trained = yaml.safe_load(train_config.read_text())["trainer"]
        assert trained["logger"] == "none" and trained["max_epochs"] == 1  # the model's draw from epochs
    again = build_repository(config, out)  # a finished model is not trained twice
    assert again.ran == [] and len(again.reused) == 3


@pytest.mark.slow  # starts Ray; test_sweeps.py's Ray test covers the backend in make test
def test_a_repository_built_on_ray_matches_the_local_one(tmp_path, monkeypatch):
    pytest.importorskip("ray", reason="the Ray backend needs the optional extra: pip install 'repscope[ray]'")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # Ray's local instance must not write there
    config = RepoConfig(
        data={"name": "digits", "params": {"target": "label", "train_size": 200, "test_size": 40}},
        count=1,
        epochs=[1],
        test_n=20,
    )
    local = build_repository(config, tmp_path / "local")
    ray = build_repository(config, tmp_path / "ray", backend="ray", workers=1)
    assert local.ok and ray.ok
    columns = ["accuracy", "robust_accuracy", "max@CONF:mean", "mean@CONV-1:mean"]
    # one model, same seed: the same training and test (only the threads' summation order may differ)
    assert np.allclose(ray.summary[columns].to_numpy(float), local.summary[columns].to_numpy(float), atol=1e-3)


def test_the_supervised_task_trains_with_adam_or_sgd():
    import torch

    from repscope.train.tasks.supervised import SupervisedTask

    sgd = SupervisedTask(network="cnn5", optimizer="sgd", lr=0.01).configure_optimizers()
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["momentum"] == 0.9 and sgd.defaults["lr"] == 0.01
    assert isinstance(SupervisedTask(network="cnn5").configure_optimizers(), torch.optim.Adam)
    with pytest.raises(InvalidArgumentError, match="optimizer"):
        SupervisedTask(network="cnn5", optimizer="rmsprop")

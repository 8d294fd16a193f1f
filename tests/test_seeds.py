"""Seeds reach the weights: same seed, same weights; different seed, different weights, whatever
the caller's global random state. Through the CLI: ``repscope train`` and ``repscope sprites
train-judges``."""

from __future__ import annotations

import torch
import yaml
from typer.testing import CliRunner

from repscope.cli import app

TINY_TRAIN = {
    # lr 1e-9: Adam moves each weight by ~1e-9 per step, so the final weights show the initialisation
    "model": {"name": "lenet5", "params": {"lr": 1e-9}},
    "data": {
        "name": "digits",
        "params": {"source": "mnist-sample", "train_size": 100, "test_size": 50, "target": "label"},
    },
    "trainer": {"max_epochs": 1},
    "batch_size": 50,
    "seed": 0,
}


def state_dict(path) -> dict[str, torch.Tensor]:
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    return checkpoint.get("state_dict", checkpoint)


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    assert a.keys() == b.keys() and len(a) > 0
    return all(torch.equal(a[key], b[key]) for key in a)


def largest_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[key].double() - b[key].double()).abs().max()) for key in a if a[key].is_floating_point())


def train_run(config, out, seed: int, global_seed: int, lr: float = 1e-9) -> dict[str, torch.Tensor]:
    """``repscope train CONFIG --set seed=N`` with the process's global torch state set to ``global_seed``."""
    torch.manual_seed(global_seed)
    result = CliRunner().invoke(
        app,
        [
            "train",
            str(config),
            "--set",
            f"seed={seed}",
            "--set",
            "trainer.max_epochs=1",
            "--set",
            f"model.params.lr={lr:.1e}",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    return state_dict(out / "checkpoints" / "final.ckpt")


def test_train_seed_sets_the_initial_weights(tmp_path, isolated_home):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY_TRAIN))
    first = train_run(config, tmp_path / "a", seed=1, global_seed=100)
    again = train_run(config, tmp_path / "b", seed=1, global_seed=200)
    other = train_run(config, tmp_path / "c", seed=2, global_seed=100)
    assert same_weights(first, again)
    # different initial weights, not just the ~1e-8 a different data order makes at this learning rate
    assert largest_difference(first, other) > 1e-2


def test_train_seed_makes_training_reproducible(tmp_path, isolated_home):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY_TRAIN))
    first = train_run(config, tmp_path / "a", seed=3, global_seed=1, lr=0.01)
    again = train_run(config, tmp_path / "b", seed=3, global_seed=2, lr=0.01)
    assert same_weights(first, again)


def classifier_run(home, seed: int, global_seed: int) -> dict[str, dict[str, torch.Tensor]]:
    """Train level-1 classifiers with ``--seed`` and read every cached checkpoint back."""
    torch.manual_seed(global_seed)
    result = CliRunner().invoke(
        app,
        [
            "sprites",
            "train-judges",
            "--level",
            "1",
            "--train-size",
            "64",
            "--val-size",
            "32",
            "--epochs",
            "1",
            "--seed",
            str(seed),
        ],
    )
    assert result.exit_code == 0, result.output
    checkpoints = sorted((home / "classifiers" / "cdsprites-level1").glob("*.ckpt"))
    assert checkpoints, "no classifier checkpoint cached"
    return {path.name: state_dict(path) for path in checkpoints}


def test_classifier_seed_sets_the_weights_whatever_the_global_state(isolated_home):
    first = classifier_run(isolated_home, seed=5, global_seed=10)
    again = classifier_run(isolated_home, seed=5, global_seed=20)
    other = classifier_run(isolated_home, seed=6, global_seed=10)
    assert first.keys() == again.keys() == other.keys()
    for name in first:
        assert same_weights(first[name], again[name]), name
        # 64 samples in batches of 64: one Adam step, which moves a weight by at most lr = 2e-3, so
        # larger differences are the initialisation's (batch-norm statistics follow the data: left out)
        learnt = {
            key: value for key, value in first[name].items() if "running_" not in key and "num_batches" not in key
        }
        assert largest_difference(learnt, {key: other[name][key] for key in learnt}) > 0.05, name

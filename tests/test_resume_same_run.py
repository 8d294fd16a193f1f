"""A resumed training is the run it continues: every model family, stopped by Ctrl-C after an epoch and
resumed, ends with the weights, the optimizer state and the random states of the uninterrupted run, bit
for bit on the CPU, on both data placements.

The cases are read from the model registry when the tests are collected: every VAE, GAN, multimodal and
semi-supervised entry, and one entry of each supervised task class (LeNet-5 with a drawn augmentation,
a tiny CapsNet). A new entry is a new case, and :func:`test_every_task_class_has_a_resume_case` fails
while a task class has none.

Each case trains two epochs of two batches: the uninterrupted run, then a run stopped (as by Ctrl-C) as
its second epoch starts and resumed on the other data placement: the cases alternate between stopping
on ``device`` and on ``loader``, so that in every family each placement saves and restores (and a
placement changed on resume keeps the run).
"""

from __future__ import annotations

import inspect
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from lightning.pytorch.callbacks import Callback

import repscope.train.fitting as train_run
from repscope.train.config import TrainConfig
from repscope.train.fitting import fit, read_checkpoint
from repscope.train.registry import MODELS, task_class

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

EPOCHS = 2  # the stop comes as the second starts: one epoch saved, one trained after the resume
BATCH = 8  # 18 training rows: two batches an epoch (the last short one dropped)
DIGITS = {"source": "mnist-sample", "train_size": 20, "test_size": 4}

# what makes a model tiny: applied where the task's constructor takes the parameter
TINY_PARAMS = {
    "latent_dim": 6,  # the semi-supervised models need one per dSprites factor
    "private_dim": 2,
    "discriminator_width": 16,
    "discriminator_layers": 2,
    "labelled_fraction": 0.5,  # a few labelled rows in 18 for the semi-supervised stream
}
# the CdSprites+ image and caption with narrow networks (what the multimodal tasks take as modalities)
TINY_MODALITIES = {
    "image": {
        "field": "image",
        "network": "fc-image",
        "likelihood": "gaussian",
        "scale": 0.75,
        "params": {"hidden": 32},
    },
    "text": {
        "field": "text",
        "network": "text-transformer",
        "likelihood": "categorical",
        "mask": "mask",
        "pad_class": 0,
        "params": {"width": 16, "layers": 1, "hidden": 32},
    },
}
# the supervised entries that stand for their task class, with what they draw at random
SUPERVISED_CASES: dict[str, dict[str, Any]] = {
    "lenet5": {"augment": "rotation", "augment_ranges": [[-20.0, 20.0]]},
    "capsnet": {"network_params": {"conv_channels": 8, "primary_types": 2, "class_dim": 4}},
}


def resume_cases() -> list[str]:
    """Every VAE, GAN and multimodal entry of the registry, and the supervised stand-ins."""
    return [name for name, entry in MODELS.items() if entry.family != "supervised"] + list(SUPERVISED_CASES)


def model_params(name: str) -> dict[str, Any]:
    accepted = inspect.signature(task_class(name)).parameters
    params = {key: value for key, value in TINY_PARAMS.items() if key in accepted}
    if "modalities" in accepted:
        params["modalities"] = TINY_MODALITIES
    return {**params, **SUPERVISED_CASES.get(name, {})}


def model_data(name: str) -> dict[str, Any]:
    """The family's data: CdSprites+ level 1 for the multimodal VAEs; dSprites, drawn on demand, for the
    VAEs (the 64x64 network trains 2.6 times faster than the 28x28 one; the semi-supervised ones read its
    factors and indices); digits held in memory for the GANs (28x28 only) and the supervised models."""
    entry = MODELS[name]
    if entry.family == "multimodal":
        return {"name": "cdsprites", "params": {"level": 1, "train_size": 18, "val_size": 4, "test_size": 4}}
    if entry.family == "vae":
        return {"name": "dsprites", "params": {"train_size": 20, "test_size": 4}}
    return {"name": "digits", "params": {**DIGITS, "target": "label" if entry.supervised else "none"}}


def config_of(name: str, placement: str) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "model": {"name": name, "params": model_params(name)},
            "data": model_data(name),
            "trainer": {"max_epochs": EPOCHS, "data_placement": placement, "logger": "none"},
            "batch_size": BATCH,
            "seed": 5,
        }
    )


class InterruptAtEpoch(Callback):
    """Ctrl-C as the given (0-based) epoch starts, i.e. once ``epoch`` epochs are complete."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        if trainer.current_epoch == self.epoch:
            raise KeyboardInterrupt


def stop_after_first_epoch(config: TrainConfig, out: Path) -> None:
    """``fit`` stopped as by Ctrl-C when the second epoch starts, every epoch end saved."""
    original = train_run.make_trainer

    def with_interrupt(c, r, extra_callbacks=None, description=None):
        return original(c, r, [InterruptAtEpoch(1)], description)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(train_run, "CHECKPOINT_SHARE", None)  # every epoch, whatever the clock says
        patch.setattr(train_run, "make_trainer", with_interrupt)
        with pytest.raises(KeyboardInterrupt):
            fit(config, out=out, report=False)


def assert_identical(whole: Any, resumed: Any, where: str) -> None:
    """Every tensor equal with ``torch.equal``, every other value with ``==``, the same keys and lengths."""
    if isinstance(whole, torch.Tensor):
        assert isinstance(resumed, torch.Tensor) and whole.dtype == resumed.dtype, where
        assert torch.equal(whole, resumed), f"{where}: differs by {(whole.double() - resumed.double()).abs().max()}"
    elif isinstance(whole, dict):
        assert isinstance(resumed, dict) and list(whole) == list(resumed), f"{where}: keys {list(whole)}"
        for key, value in whole.items():
            assert_identical(value, resumed[key], f"{where}.{key}")
    elif isinstance(whole, list | tuple):
        assert len(whole) == len(resumed), where
        for index, (before, after) in enumerate(zip(whole, resumed, strict=True)):
            assert_identical(before, after, f"{where}[{index}]")
    else:
        assert whole == resumed, f"{where}: {whole!r} != {resumed!r}"


def end_state(path: Path) -> dict[str, Any]:
    """What must match: the weights, the optimizers, the steps, the random states at the end."""
    checkpoint = read_checkpoint(path)
    random_states = [v["rng"] for k, v in checkpoint["callbacks"].items() if k.startswith("EpochCheckpoint")]
    # a task's own state beside Lightning's (the semi-supervised stream's position)
    own = {k: v for k, v in checkpoint.items() if k not in ("loops", "callbacks", "hparams_name")}
    return {**own, "random_states": random_states}


@pytest.fixture(scope="module", autouse=True)
def isolated_home(tmp_path_factory):
    """REPSCOPE_HOME in a temporary folder for the module (dataset caches are built there)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REPSCOPE_HOME", str(tmp_path_factory.mktemp("home")))
        yield


def placements(cases: list[str]) -> list[tuple[str, str, str]]:
    """Each case with the placement it stops on and the one it resumes on, alternating in registry order,
    so that in every family one model stops on the device and another on the loader."""
    orders = (("device", "loader"), ("loader", "device"))
    return [(name, *orders[k % 2]) for k, name in enumerate(cases)]


@pytest.mark.parametrize(("name", "stop_on", "resume_on"), placements(resume_cases()), ids=resume_cases())
def test_a_run_resumed_after_ctrl_c_ends_as_the_uninterrupted_run(name, stop_on, resume_on, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = fit(config_of(name, stop_on), out=tmp_path / "whole", report=False)
        assert whole.metrics["data_placement"] == stop_on
        out = tmp_path / "stopped"
        stop_after_first_epoch(config_of(name, stop_on), out)
        assert read_checkpoint(out / "checkpoints" / "last.ckpt")["epoch"] == 0  # one epoch kept
        resumed = fit(config_of(name, resume_on), out=out, resume=True, report=False)
    assert resumed.metrics["data_placement"] == resume_on and resumed.metrics["epochs"] == EPOCHS
    expected = end_state(tmp_path / "whole" / "checkpoints" / "final.ckpt")
    got = end_state(out / "checkpoints" / "final.ckpt")
    assert got["global_step"] == expected["global_step"] > 0
    assert_identical(expected, got, f"{name} stopped on {stop_on}, resumed on {resume_on}")


def test_every_task_class_has_a_resume_case():
    covered = {task_class(name) for name in resume_cases()}
    missing = sorted(name for name in MODELS if task_class(name) not in covered)
    assert not missing, f"registered models whose task class has no resume case: {missing}"
    # the families the README promises bit-for-bit resumes of are all there
    assert {MODELS[name].family for name in resume_cases()} == {"supervised", "vae", "gan", "multimodal"}


# --------------------------------------------------------------------------------------------
# `repscope mmvae train` as users run it

MMVAE_TINY = [
    "data.train_size=36",
    "data.val_size=8",
    "data.test_size=8",
    "batch_size=16",
    "latent_dim=4",
    "modalities.image.params.hidden=32",
    "modalities.text.params.width=16",
    "modalities.text.params.layers=1",
    "modalities.text.params.hidden=32",
]


def test_mmvae_train_resumed_after_ctrl_c_ends_as_the_uninterrupted_run(tmp_path, run_cli, monkeypatch):
    base = ["mmvae", "train", "--epochs", "2", "--no-evaluate", *(f for s in MMVAE_TINY for f in ("--set", s))]
    code, _, err = run_cli([*base, "--out", str(tmp_path / "whole")])
    assert code == 0, err
    original = train_run.make_trainer
    with monkeypatch.context() as patch:
        patch.setattr(train_run, "CHECKPOINT_SHARE", None)
        patch.setattr(
            train_run,
            "make_trainer",
            lambda c, r, extra_callbacks=None, description=None: original(c, r, [InterruptAtEpoch(1)], description),
        )
        code, _, err = run_cli([*base, "--out", str(tmp_path / "stopped")])
    assert code == 130 and "pass --resume to go on from epoch 2" in err, err
    # resumed where the work runs differently (no log, the rows served by a DataLoader): the same run
    moved = ["--logger", "none", "--set", "trainer.data_placement=loader"]
    code, _, err = run_cli([*base, "--out", str(tmp_path / "stopped"), "--resume", *moved])
    assert code == 0, err
    expected = end_state(tmp_path / "whole" / "checkpoints" / "final.ckpt")
    got = end_state(tmp_path / "stopped" / "checkpoints" / "final.ckpt")
    assert got["global_step"] == expected["global_step"] == 2 * 2
    assert_identical(expected, got, "mmvae train --resume")


@pytest.mark.parametrize("name", ["lenet5", "mvae"])
def test_a_finished_run_resumed_for_more_epochs_ends_as_the_longer_run(name, tmp_path):
    """``last.ckpt`` of a finished run is its end state: ``--resume`` with more epochs goes on from there."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(config_of(name, "loader"), out=tmp_path / "whole", report=False)
        shorter = config_of(name, "device").model_copy(deep=True)
        shorter.trainer.max_epochs = 1
        fit(shorter, out=tmp_path / "extended", report=False)
        fit(config_of(name, "device"), out=tmp_path / "extended", resume=True, report=False)
    expected = end_state(tmp_path / "whole" / "checkpoints" / "final.ckpt")
    got = end_state(tmp_path / "extended" / "checkpoints" / "final.ckpt")
    assert got["global_step"] == expected["global_step"] > 0
    assert_identical(expected, got, f"{name} trained for 1 epoch, then resumed for 2")

"""``repscope train --resume`` refuses what it cannot continue as the same run, naming why, before anything
is written; and continues what only changes where the work runs.

* a changed config: every setting that differs, with its stored and its new value (a setting one side
  lacks is ``not set``);
* a checkpoint missing part of its state: each of Lightning's training-state keys removed alone, the
  fit loop's state, and the random states the resume restores, each named;
* the trainer's logger, devices, data placement and compile setting, and more epochs: resumed.
"""

from __future__ import annotations

import logging
import shutil
import warnings
from pathlib import Path

import pytest
import torch
import yaml
from lightning.pytorch.callbacks import Callback

import repscope.train.fitting as train_run
from repscope.config import load_config
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.train.config import TrainConfig
from repscope.train.fitting import check_same_training, fit, read_checkpoint

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

CONFIG = {
    "model": {"name": "lenet5", "params": {"lr": 0.002}},
    "data": {
        "name": "digits",
        "params": {"source": "mnist-sample", "train_size": 40, "test_size": 8, "target": "label"},
    },
    "trainer": {"max_epochs": 2},
    "batch_size": 16,
    "seed": 3,
}
EPOCH_STATE = "callbacks.EpochCheckpoint"


class InterruptAtEpoch(Callback):
    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_train_epoch_start(self, trainer, pl_module):
        if trainer.current_epoch == self.epoch:
            raise KeyboardInterrupt


def config_with(folder: Path, *overrides: str, **changes) -> TrainConfig:
    """The config file's config with ``--set`` overrides, and whole sections replaced by ``changes``."""
    path = folder / "train.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, **changes}))
    return load_config(path, TrainConfig, list(overrides))


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A LeNet-5 run stopped (as by Ctrl-C) after its first epoch: ``last.ckpt`` holds epoch 0."""
    root = tmp_path_factory.mktemp("stopped")
    original = train_run.make_trainer
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        patch.setattr(train_run, "CHECKPOINT_SHARE", None)
        patch.setattr(
            train_run,
            "make_trainer",
            lambda c, r, extra_callbacks=None, description=None: original(c, r, [InterruptAtEpoch(1)], description),
        )
        with pytest.raises(KeyboardInterrupt):
            fit(config_with(root), out=root / "run", report=False)
    assert read_checkpoint(root / "run" / "checkpoints" / "last.ckpt")["epoch"] == 0
    return root / "run"


@pytest.fixture
def run(stopped, tmp_path):
    """A copy of the stopped run, free to be resumed or spoiled."""
    copy = tmp_path / "run"
    shutil.copytree(stopped, copy)
    return copy


# --------------------------------------------------------------------------------------------
# a changed config


def test_a_changed_config_is_refused_naming_every_setting_with_both_values(run, tmp_path):
    before = files(run)
    changed = config_with(tmp_path, "model.params.lr=0.001", "batch_size=8", "trainer.precision=bf16-mixed")
    with pytest.raises(InvalidArgumentError) as refused:
        fit(changed, out=run, resume=True, report=False)
    message = str(refused.value)
    assert message.startswith(
        f"--resume: {run} was trained with model.params.lr 0.002, now 0.001; trainer.precision '32-true', now "
        "'bf16-mixed'; batch_size 16, now 8 (on resume only trainer.max_epochs and where the work runs ("
    ), message
    for allowed in ("accelerator", "devices", "strategy", "logger", "data_placement", "compile"):
        assert allowed in message.split("(on resume only", 1)[1]
    assert "\n" not in message
    assert files(run) == before  # nothing written, nothing lost


def test_a_stored_setting_absent_now_and_a_new_one_are_differences(run, tmp_path):
    before = files(run)
    # the run was trained with model.params.lr 0.002; without it the model would train with the default
    dropped = config_with(tmp_path, model={"name": "lenet5", "params": {}})
    with pytest.raises(InvalidArgumentError, match=r"was trained with model\.params\.lr 0\.002, now not set \("):
        fit(dropped, out=run, resume=True, report=False)
    # the reverse: a setting the stored config does not hold, given now
    added = config_with(tmp_path, "model.params.schedule=cosine")
    with pytest.raises(
        InvalidArgumentError, match=r"was trained with model\.params\.schedule not set, now 'cosine' \("
    ):
        fit(added, out=run, resume=True, report=False)
    # a data parameter only the stored config holds
    data = {"name": "digits", "params": {"source": "mnist-sample", "train_size": 40, "target": "label"}}
    with pytest.raises(InvalidArgumentError, match=r"with data\.params\.test_size 8, now not set \("):
        fit(config_with(tmp_path, data=data), out=run, resume=True, report=False)
    assert files(run) == before


def test_a_long_value_is_cut_in_the_refusal(run, tmp_path):
    long_source = "x" * 5000
    data = {"name": "digits", "params": {**CONFIG["data"]["params"], "source": long_source}}
    config = config_with(tmp_path, data=data)
    with pytest.raises(InvalidArgumentError) as refused:
        check_same_training(run, config)
    message = str(refused.value)
    assert "data.params.source 'mnist-sample', now 'xxxx" in message and "(5000 characters)" in message
    assert len(message) < 600


def test_where_the_work_runs_may_change_and_the_run_goes_on(run, tmp_path):
    # logger, devices, data placement and more epochs: the run continues where it stopped
    moved = config_with(
        tmp_path,
        "trainer.logger=none",
        "trainer.devices=auto",
        "trainer.data_placement=loader",
        "trainer.max_epochs=3",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        resumed = fit(moved, out=run, resume=True, report=False)
    assert resumed.metrics["epochs"] == 3 and resumed.metrics["data_placement"] == "loader"
    # one epoch before the stop, two after: 3 x 2 batches (36 training rows, batches of 16, the short one dropped)
    assert read_checkpoint(run / "checkpoints" / "final.ckpt")["global_step"] == 3 * 2
    assert not (run / "logs-resume-1").exists()  # no logger this time: no second log folder
    # compiling the networks, another strategy or node count: accepted by the check (not trained here)
    for override in ("trainer.compile=default", "trainer.strategy=ddp", "trainer.num_nodes=2"):
        check_same_training(run, config_with(tmp_path, "trainer.max_epochs=3", override))


# --------------------------------------------------------------------------------------------
# a checkpoint missing part of its state


def without(checkpoint: dict, dotted: str) -> dict:
    """``checkpoint`` with the entry at ``dotted`` removed (``callbacks.EpochCheckpoint`` is the callback's
    whole state, found by the prefix of its key)."""
    *parents, last = dotted.split(".")
    holder = checkpoint
    for part in parents:
        if part == "EpochCheckpoint":
            part = next(key for key in holder if key.startswith("EpochCheckpoint"))
        holder = holder[part]
    if last == "EpochCheckpoint":
        last = next(key for key in holder if key.startswith("EpochCheckpoint"))
    del holder[last]
    return checkpoint


# each part of the state removed alone, where a check that reads the parts together would still pass
MISSING_STATE = [
    ("epoch", "(epoch)"),
    ("global_step", "(global_step)"),
    ("loops", "(loops)"),
    ("loops.fit_loop", "(loops.fit_loop)"),
    ("optimizer_states", "(optimizer_states)"),
    ("lr_schedulers", "(lr_schedulers)"),
    ("callbacks", f"({EPOCH_STATE})"),
    (EPOCH_STATE, f"({EPOCH_STATE})"),
    (f"{EPOCH_STATE}.rng.torch", f"({EPOCH_STATE}.rng.torch)"),
    (f"{EPOCH_STATE}.rng.numpy", f"({EPOCH_STATE}.rng.numpy)"),
    (f"{EPOCH_STATE}.rng.python", f"({EPOCH_STATE}.rng.python)"),
    (f"{EPOCH_STATE}.rng", f"({EPOCH_STATE}.rng.torch, {EPOCH_STATE}.rng.numpy, {EPOCH_STATE}.rng.python)"),
    (f"{EPOCH_STATE}.loader_generators", f"({EPOCH_STATE}.loader_generators)"),
]


@pytest.mark.parametrize(("removed", "named"), MISSING_STATE, ids=[removed for removed, _ in MISSING_STATE])
def test_a_checkpoint_missing_part_of_its_state_is_refused_naming_it(run, tmp_path, removed, named):
    last = run / "checkpoints" / "last.ckpt"
    torch.save(without(read_checkpoint(last), removed), last)
    before = files(run)
    with pytest.raises(DataFormatError) as refused:
        fit(config_with(tmp_path), out=run, resume=True, report=False)
    message = str(refused.value)
    assert message.startswith(f"checkpoint {last}: lacks ") and named in message, message
    assert files(run) == before

"""`repscope train` keeps a rolling checkpoint of every complete epoch: Ctrl-C loses at most one epoch."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
import yaml
from lightning.pytorch.callbacks import Callback

import repscope.train.fitting as train_run
from repscope.config import load_config
from repscope.train.config import TrainConfig
from repscope.train.fitting import fit, read_checkpoint, resume_epoch, save_checkpoint_atomically

CONFIG = {
    "model": {"name": "lenet5", "params": {"lr": 0.002}},
    "data": {
        "name": "digits",
        "params": {"source": "mnist-sample", "train_size": 120, "test_size": 40, "target": "label"},
    },
    "trainer": {"max_epochs": 3},
    "batch_size": 32,
    "seed": 3,
}


class InterruptAtEpoch(Callback):
    """Ctrl-C as the given (0-based) epoch starts, i.e. once ``epoch`` epochs are complete."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_train_epoch_start(self, trainer, pl_module):
        if trainer.current_epoch == self.epoch:
            raise KeyboardInterrupt


def _config(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    return load_config(path, TrainConfig)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("epochs")
    config = _config(root)
    whole = fit(config, out=root / "whole", report=False)
    original = train_run.make_trainer
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(train_run, "CHECKPOINT_SHARE", None)  # every epoch, whatever the clock says
        patch.setattr(
            train_run,
            "make_trainer",
            lambda c, r, extra_callbacks=None, description=None: original(c, r, [InterruptAtEpoch(2)], description),
        )
        with pytest.raises(KeyboardInterrupt):
            fit(config, out=root / "stopped", report=False)
    stopped = read_checkpoint(root / "stopped" / "checkpoints" / "last.ckpt")
    listing = sorted(p.name for p in (root / "stopped" / "checkpoints").iterdir())
    epoch_from = resume_epoch(root / "stopped")
    resumed = fit(config, out=root / "stopped", resume=True, report=False)
    return SimpleNamespace(
        root=root, whole=whole, resumed=resumed, stopped=stopped, listing=listing, epoch_from=epoch_from
    )


def test_an_interrupted_run_keeps_its_last_complete_epoch(runs):
    # two epochs (0 and 1) ended before Ctrl-C: the checkpoint holds epoch index 1, one file only
    assert runs.listing == ["last.ckpt"]
    assert runs.stopped["epoch"] == 1
    assert runs.stopped["global_step"] == 2 * 3  # 108 training rows, batches of 32, the last short one dropped
    assert runs.epoch_from == 3  # --resume continues with the third epoch (counted from 1)


def test_resume_ends_where_an_uninterrupted_run_ends(runs):
    assert runs.resumed.metrics["epochs"] == runs.whole.metrics["epochs"] == 3
    curves = pd.read_csv(runs.resumed.run.root / "tables" / "training_curves.csv")
    assert list(curves["epoch"]) == [0, 1, 2]
    final = read_checkpoint(runs.resumed.run.root / "checkpoints" / "final.ckpt")
    whole = read_checkpoint(runs.whole.run.root / "checkpoints" / "final.ckpt")
    assert final["global_step"] == whole["global_step"] == 3 * 3
    # same seed, same batches: the resumed weights are the uninterrupted run's, bit for bit
    assert final["state_dict"].keys() == whole["state_dict"].keys()
    for key, value in whole["state_dict"].items():
        assert torch.equal(final["state_dict"][key], value), key
    metrics = json.loads((runs.resumed.run.root / "metrics.json").read_text())
    assert metrics["test_accuracy"] == runs.whole.metrics["test_accuracy"]


def test_the_rolling_checkpoint_is_replaced_every_epoch(tmp_path, monkeypatch):
    """Each epoch end saves once and leaves the one file; its stored epoch follows the training."""
    seen = []

    class Watch(Callback):
        def on_train_epoch_start(self, trainer, pl_module):
            last = tmp_path / "run" / "checkpoints" / "last.ckpt"
            seen.append(read_checkpoint(last)["epoch"] if last.exists() else None)

    original = train_run.make_trainer
    monkeypatch.setattr(train_run, "CHECKPOINT_SHARE", None)
    monkeypatch.setattr(
        train_run,
        "make_trainer",
        lambda c, r, extra_callbacks=None, description=None: original(c, r, [Watch()], description),
    )
    fit(_config(tmp_path), out=tmp_path / "run", report=False)
    assert seen == [None, 0, 1]
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == ["final.ckpt", "last.ckpt"]
    checkpoints = tmp_path / "run" / "checkpoints"
    assert resume_epoch(tmp_path / "run") == 4  # three epochs done: a longer run goes on with the fourth
    # the end state: last.ckpt is final.ckpt (one save, linked), so a longer --resume starts there
    assert (checkpoints / "last.ckpt").read_bytes() == (checkpoints / "final.ckpt").read_bytes()


class _Trainer:
    """The three things save_checkpoint_atomically uses; the save writes a few bytes then fails."""

    is_global_zero = True

    def __init__(self, error):
        self.error = error
        self.strategy = SimpleNamespace(barrier=lambda: None)

    def save_checkpoint(self, path, weights_only=False):
        with open(path, "wb") as handle:
            handle.write(b"PK\x03\x04 half")
        if self.error is not None:
            raise self.error


@pytest.mark.parametrize("error", [KeyboardInterrupt(), OSError("disk full")])
def test_an_interrupted_save_leaves_the_previous_checkpoint_whole(tmp_path, error):
    last = tmp_path / "checkpoints" / "last.ckpt"
    last.parent.mkdir()
    last.write_bytes(b"epoch 4 complete")
    with pytest.raises(type(error)):
        save_checkpoint_atomically(_Trainer(error), last)
    assert last.read_bytes() == b"epoch 4 complete"
    assert [p.name for p in last.parent.iterdir()] == ["last.ckpt"]  # no temporary file left
    save_checkpoint_atomically(_Trainer(None), last)
    assert last.read_bytes() == b"PK\x03\x04 half"
    assert [p.name for p in last.parent.iterdir()] == ["last.ckpt"]


def test_resume_epoch_without_a_checkpoint_is_none(tmp_path):
    assert resume_epoch(tmp_path) is None
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "last.ckpt").write_bytes(b"not a checkpoint")
    assert resume_epoch(tmp_path) is None


def test_short_epochs_are_saved_less_often_so_saving_stays_a_tenth(tmp_path, monkeypatch):
    """A save of 2 s: the next one waits 2 * 0.9 / 0.1 = 18 s after it ended; the first epoch is always saved."""
    now = [0.0]
    saved = []

    def save(trainer, path):
        saved.append(trainer.current_epoch)
        now[0] += 2.0  # each save takes 2 s

    monkeypatch.setattr(train_run, "save_checkpoint_atomically", save)
    callback = train_run.EpochCheckpoint(tmp_path / "last.ckpt", max_share=0.1, clock=lambda: now[0])
    trainer = SimpleNamespace(
        sanity_checking=False,
        fast_dev_run=False,
        max_epochs=8,
        current_epoch=0,
        strategy=SimpleNamespace(broadcast=lambda value, src=0: value),
    )
    for epoch in range(8):  # epochs of 5 s of training each, plus the time the saves took
        trainer.current_epoch = epoch
        now[0] = 5.0 * (epoch + 1) + 2.0 * len(saved)
        callback.on_train_epoch_end(trainer, None)
    # by hand: epoch 0 ends at 5, saved (ends 7, next save from 25); epochs 1-3 end at 12, 17, 22: skipped;
    # epoch 4 ends at 27: saved (ends 29, next from 47); epochs 5-7 end at 34, 39, 44: skipped (fit then
    # makes last.ckpt the final state)
    assert saved == [0, 4]
    with pytest.raises(train_run.InvalidArgumentError, match="max_share"):
        train_run.EpochCheckpoint(tmp_path / "last.ckpt", max_share=0)


def test_the_ctrl_c_line_names_the_epoch_resume_continues_from(runs, monkeypatch, capsys):
    import signal

    import repscope.cli as cli
    import repscope.outputs as outputs

    previous = signal.getsignal(signal.SIGINT)
    try:
        monkeypatch.setattr(outputs, "incomplete_outputs", lambda: [(runs.root / "whole", "--out", True)])
        assert cli._interrupted_exit().code == 130
        line = capsys.readouterr().err.strip()
        assert line.endswith("(pass --resume to go on from epoch 4 or --overwrite to replace it)"), line
        # an output that cannot resume, or a folder that is no training run, names no epoch
        monkeypatch.setattr(outputs, "incomplete_outputs", lambda: [(runs.root / "whole", "--out", False)])
        cli._interrupted_exit()
        assert capsys.readouterr().err.strip().endswith("(pass --overwrite to replace it)")
        monkeypatch.setattr(outputs, "incomplete_outputs", lambda: [(runs.root, "--out", True)])
        cli._interrupted_exit()
        assert capsys.readouterr().err.strip().endswith("(pass --resume to go on or --overwrite to replace it)")
    finally:
        signal.signal(signal.SIGINT, previous)

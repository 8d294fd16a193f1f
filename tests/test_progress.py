"""Progress: one shared rich display on a terminal (nesting never crashes), lines elsewhere, and a
Lightning callback that reports training and turns Lightning's Ctrl-C exit back into an interrupt."""

from __future__ import annotations

import io
import signal

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from repscope import progress, progress_display
from repscope.train.progress_callback import TrainingProgress


@pytest.fixture
def fake_terminal(monkeypatch):
    """stderr looks like a terminal; rich draws into a buffer with terminal control codes."""
    from rich.console import Console

    buffer = io.StringIO()
    monkeypatch.delenv("REPSCOPE_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "interactive", lambda: True)
    monkeypatch.setattr(progress_display, "_make_console", lambda: Console(file=buffer, force_terminal=True, width=120))
    return buffer


@pytest.fixture
def pipe(monkeypatch):
    monkeypatch.delenv("REPSCOPE_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "interactive", lambda: False)


class TinyTask:
    """A LightningModule on 8 random 1-d points; ``fail_at`` raises KeyboardInterrupt at that step."""

    def __new__(cls, fail_at: int | None = None):
        import lightning.pytorch as pl

        class Task(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.layer = nn.Linear(1, 1)

            def training_step(self, batch, batch_idx):
                if fail_at is not None and self.global_step == fail_at:
                    raise KeyboardInterrupt
                x, y = batch
                return nn.functional.mse_loss(self.layer(x), y)

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)

        return Task()


def loader():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(8, 1, generator=generator)
    return DataLoader(TensorDataset(x, 2 * x), batch_size=2)


def trainer(callback, epochs=2):
    import lightning.pytorch as pl

    return pl.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback],
    )


def test_nested_bars_share_one_display(fake_terminal):
    with progress.progress_bar("outer loop", total=2) as outer:
        display = progress_display.DISPLAY._progress
        assert display is not None
        with progress.progress_bar("inner loop", total=3) as inner:
            assert progress_display.DISPLAY._progress is display  # joined, not a second live display
            assert len(display.tasks) == 2
            with progress.progress_bar("innermost") as innermost:
                innermost(5, total=5)
                assert len(display.tasks) == 3
            inner(3)
        outer(1)
        assert [task.description for task in display.tasks] == ["outer loop"]
    assert not progress_display.DISPLAY.active
    # a fresh display starts after the last bar ended
    with progress.progress_bar("again", total=1) as update:
        update(1)
    assert not progress_display.DISPLAY.active


def test_display_closes_when_the_inner_loop_fails(fake_terminal):
    with pytest.raises(RuntimeError, match="boom"):
        with progress.progress_bar("outer", total=2):
            with progress.progress_bar("inner", total=2):
                raise RuntimeError("boom")
    assert not progress_display.DISPLAY.active


def test_training_inside_bars_on_a_terminal(fake_terminal):
    callback = TrainingProgress("training Tiny shape (1 of 2)")
    with progress.progress_bar("classifying", total=1) as update:
        with progress.progress_bar("generating 8 samples", total=8) as inner:
            inner(8)
        trainer(callback).fit(TinyTask(), train_dataloaders=loader())
        update(1)
    assert not progress_display.DISPLAY.active
    assert "training Tiny shape (1 of 2): epoch" in fake_terminal.getvalue()


def test_a_long_description_gives_way_to_the_numbers_on_a_narrow_terminal(monkeypatch):
    """At 80 columns rich squashed every column, so counts and times read '0/…' and '0:0…'."""
    from rich.console import Console

    buffer = io.StringIO()
    monkeypatch.setattr(progress, "interactive", lambda: True)
    monkeypatch.setattr(
        progress_display,
        "_make_console",
        lambda: Console(file=buffer, force_terminal=True, width=80, color_system=None),
    )
    description = "training lenet5-recognition (2 of 4): epoch 1 of 5 on a very long description"
    with progress.progress_bar(description, total=2800) as update:
        update(140)
        progress_display.DISPLAY._progress.refresh()
    drawn = buffer.getvalue()
    assert "140/2800" in drawn and "training lenet5-recognition" in drawn
    assert "…" in drawn  # the description is what was cut


def test_lines_when_not_a_terminal(pipe, capsys):
    with progress.progress_bar("measuring 4 digits", total=4, every_seconds=0) as update:
        for done in range(1, 5):
            update(done)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("measuring 4 digits: 1/4 (25%), ")
    assert "elapsed, ~" in lines[0] and lines[0].endswith(" left")
    assert lines[-1].startswith("measuring 4 digits: 4/4 done in ")
    assert len(lines) == 4  # 1/4, 2/4, 3/4 and the final line (4/4 is said once)


def test_short_loops_stay_silent_in_lines_mode(pipe, capsys):
    with progress.progress_bar("quick", total=3, every_seconds=60) as update:
        update(3)
    assert capsys.readouterr().err == ""


def test_unknown_total_and_off(pipe, capsys, monkeypatch):
    with progress.progress_bar("importing x.h5", every_seconds=0) as update:
        update(7)
    assert capsys.readouterr().err.splitlines()[0].startswith("importing x.h5: 7 done, ")
    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    with progress.progress_bar("silent", total=2, every_seconds=0) as update:
        update(1)
    with progress.progress_bar("disabled", total=2, every_seconds=0, enabled=False) as update:
        update(1)
    assert capsys.readouterr().err == ""


def test_training_lines_name_the_model_and_epoch(pipe, capsys):
    trainer(TrainingProgress("training Tiny size (2 of 2)", every_seconds=0), epochs=2).fit(
        TinyTask(), train_dataloaders=loader()
    )
    err = capsys.readouterr().err
    assert "training Tiny size (2 of 2): epoch 1 of 2: 1/8 (12%)" in err
    assert "training Tiny size (2 of 2): epoch 2 of 2: 8/8 done in" in err


def test_interrupt_inside_fit_is_an_interrupt(fake_terminal):
    before = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            with progress.progress_bar("outer", total=1):
                trainer(TrainingProgress("training Tiny")).fit(TinyTask(fail_at=2), train_dataloaders=loader())
        # Lightning set SIGINT to be ignored; the callback put the default handler back
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert not progress_display.DISPLAY.active
    finally:
        signal.signal(signal.SIGINT, before)


def test_format_seconds_and_line():
    assert progress.format_seconds(3.14) == "3.1 s"
    assert progress.format_seconds(42.4) == "42 s"
    assert progress.format_seconds(125) == "2 min 05 s"
    assert progress.format_seconds(3720) == "1 h 02 min"
    assert progress.progress_line("measuring 5000 digits", 1200, 5000, 3.1) == (
        "measuring 5000 digits: 1200/5000 (24%), 3.1 s elapsed, ~9.8 s left"
    )

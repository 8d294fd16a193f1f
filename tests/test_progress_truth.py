"""Progress that tells the truth: an interrupted loop says where it stopped (never ``n/m done``), an
interrupted sweep ends with its ``--resume`` hint, a resumed training reports its whole training time,
and the time left after a resume follows the rate of this process only."""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from repscope import progress, progress_display
from repscope.train.progress_callback import TrainingProgress


@pytest.fixture
def pipe(monkeypatch):
    """stderr is no terminal: progress lines."""
    monkeypatch.delenv("REPSCOPE_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "interactive", lambda: False)


@pytest.fixture
def fake_terminal(monkeypatch):
    """stderr looks like a terminal; rich draws into a buffer."""
    from rich.console import Console

    buffer = io.StringIO()
    monkeypatch.delenv("REPSCOPE_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "interactive", lambda: True)
    monkeypatch.setattr(
        progress_display,
        "_make_console",
        lambda: Console(file=buffer, force_terminal=True, width=120, color_system=None),
    )
    return buffer


@pytest.fixture
def ticking_clock(monkeypatch):
    """The bars' clock goes up by exactly one second at each reading (the timer lines, which would read
    it too, wait an hour)."""
    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "3600")
    ticks = itertools.count(100)
    monkeypatch.setattr(progress_display, "time", SimpleNamespace(monotonic=lambda: float(next(ticks))))


def err_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


# -- an interrupted or failed loop -----------------------------------------------------------------


def test_an_interrupted_loop_ends_with_interrupted_at_n_of_m_in_lines_mode(pipe, capsys):
    with pytest.raises(KeyboardInterrupt):
        with progress.progress_bar("sweep mmvae", total=138, every_seconds=0) as update:
            for done in range(1, 21):
                update(done)
            raise KeyboardInterrupt
    lines = err_lines(capsys)
    assert lines[0].startswith("sweep mmvae: 1/138 (1%), ")
    assert lines[-2].startswith("sweep mmvae: 20/138 (14%), ")
    assert re.fullmatch(r"sweep mmvae: interrupted at 20/138 after \d+\.\d s", lines[-1]), lines[-1]
    assert not any("done" in line for line in lines)


def test_a_short_interrupted_loop_still_says_so_while_a_short_finished_one_stays_silent(pipe, capsys):
    with progress.progress_bar("quick", total=3, every_seconds=60) as update:
        update(3)
    assert capsys.readouterr().err == ""
    with pytest.raises(KeyboardInterrupt):
        with progress.progress_bar("rendering 9 images", total=9, every_seconds=60) as update:
            update(4)
            raise KeyboardInterrupt
    lines = err_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("rendering 9 images: interrupted at 4/9 after ")


def test_an_interrupted_bar_on_a_terminal_leaves_its_line(fake_terminal):
    with pytest.raises(KeyboardInterrupt):
        with progress.progress_bar("outer", total=5) as outer:
            outer(2)
            with progress.progress_bar("sweep mmvae", total=138) as update:
                update(20)
                raise KeyboardInterrupt
    drawn = fake_terminal.getvalue()
    assert "sweep mmvae: interrupted at 20/138 after " in drawn
    assert "outer: interrupted at 2/5 after " in drawn
    # the inner bar ended first, so its line comes first
    assert drawn.index("sweep mmvae: interrupted") < drawn.index("outer: interrupted")
    assert "20/138 done" not in drawn
    assert not progress_display.DISPLAY.active


def test_a_failed_loop_says_it_stopped_by_an_error_and_a_loop_left_by_break_says_nothing(pipe, capsys):
    with pytest.raises(ValueError, match="bad digit"):
        with progress.progress_bar("measuring 7 digits", total=7, every_seconds=0) as update:
            update(3)
            raise ValueError("bad digit")
    assert err_lines(capsys)[-1].startswith("measuring 7 digits: stopped by an error at 3/7 after ")
    for _ in progress.track(range(6), "scanning", every_seconds=60):
        break
    assert capsys.readouterr().err == ""


def test_a_mistake_found_at_once_adds_no_line_to_the_error_on_a_terminal(fake_terminal):
    with pytest.raises(ValueError):
        with progress.progress_bar("checking 3 configs", total=3, every_seconds=5) as update:
            update(1)
            raise ValueError("bad key")
    assert "checking 3 configs: stopped" not in fake_terminal.getvalue()
    with pytest.raises(ValueError):
        with progress.progress_bar("measuring 8 digits", total=8, every_seconds=0) as update:
            update(5)
            raise ValueError("bad digit")
    assert "measuring 8 digits: stopped by an error at 5/8 after " in fake_terminal.getvalue()


def test_stopped_line_format():
    assert progress.stopped_line("sweep", 20, 138, 65.0) == "sweep: interrupted at 20/138 after 1 min 05 s"
    assert progress.stopped_line("import", 7, None, 3.14, "stopped by an error") == (
        "import: stopped by an error at 7 after 3.1 s"
    )


def test_a_step_without_updates_gets_timed_lines_and_claims_no_count(pipe, capsys):
    import time

    with progress.progress_bar("fitting svm on 4000 digits", every_seconds=0.1):
        time.sleep(0.45)  # one long call: no update at all
    lines = err_lines(capsys)
    assert len(lines) >= 3, lines
    assert all(re.fullmatch(r"fitting svm on 4000 digits: \d\.\d s elapsed", line) for line in lines[:-1]), lines
    assert re.fullmatch(r"fitting svm on 4000 digits: done in 0\.[45] s", lines[-1]), lines
    assert not any("0 done" in line for line in lines)


def test_a_bar_with_a_line_at_each_update_still_gets_timed_lines_between_them(pipe, capsys, monkeypatch):
    import time

    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0.1")
    with progress.progress_bar("fitting svm on 4000 digits", total=1, every_seconds=0) as update:
        update(0)  # said at once
        time.sleep(0.35)
        update(1)
    lines = err_lines(capsys)
    assert lines[0].startswith("fitting svm on 4000 digits: 0/1 (0%), 0.0 s elapsed")
    assert len([line for line in lines if line.startswith("fitting svm on 4000 digits: 0/1 (0%), ")]) >= 3, lines
    assert lines[-1].startswith("fitting svm on 4000 digits: 1/1 done in ")


def test_a_slow_step_between_updates_still_gets_its_lines(pipe, capsys):
    import time

    with progress.progress_bar("rendering 3 images", total=3, every_seconds=0.1) as update:
        update(1)
        time.sleep(0.35)
        update(3)
    lines = err_lines(capsys)
    beats = [line for line in lines if line.startswith("rendering 3 images: 1/3 (33%), ")]
    assert len(beats) >= 2, lines  # the count stays at 1 while the second image renders
    assert lines[-1].startswith("rendering 3 images: 3/3 done in ")


# -- track ----------------------------------------------------------------------------------------


def test_track_counts_n_of_m_with_time_left_and_ends_done(pipe, capsys, ticking_clock):
    items = ["a", "b", "c", "d"]
    seen = list(progress.track(items, "measuring 4 digits", every_seconds=0))
    assert seen == items
    lines = err_lines(capsys)
    # the bar starts at 100 s and each update reads 1 s later: n done after n s, 4 - n left at 1 s each;
    # update(4) at 104 s says nothing (4/4 is said once), the close at 105 s says done in 5 s
    assert lines == [
        "measuring 4 digits: 1/4 (25%), 1.0 s elapsed, ~3.0 s left",
        "measuring 4 digits: 2/4 (50%), 2.0 s elapsed, ~2.0 s left",
        "measuring 4 digits: 3/4 (75%), 3.0 s elapsed, ~1.0 s left",
        "measuring 4 digits: 4/4 done in 5.0 s",
    ]


def test_track_without_len_and_with_an_explicit_total(pipe, capsys):
    list(progress.track((x for x in range(3)), "reading", every_seconds=0))
    lines = err_lines(capsys)
    assert [line.split(",")[0] for line in lines[:3]] == ["reading: 1 done", "reading: 2 done", "reading: 3 done"]
    assert len(lines) == 4 and lines[3].startswith("reading: 3 done in ")
    list(progress.track((x for x in range(2)), "reading", total=2, every_seconds=0))
    assert err_lines(capsys)[-1].startswith("reading: 2/2 done in ")


def test_a_ctrl_c_in_the_body_of_a_tracked_loop_ends_it_as_interrupted(pipe, capsys):
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            for item in progress.track(range(5), "attacking 5 images", every_seconds=0):
                if item == 2:  # items 0 and 1 are done; the Ctrl-C lands in the body of the third
                    os.kill(os.getpid(), signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)
    lines = err_lines(capsys)
    assert lines[-1].startswith("attacking 5 images: interrupted at 2/5 after ")
    assert [line.split(": ")[1].split(" ")[0] for line in lines[:-1]] == ["1/5", "2/5"]


# -- time left after a resume: this process's rate only --------------------------------------------


def test_time_left_uses_the_steps_done_since_the_start_only():
    # 10 steps in 10 s since the resume at 50: 40 to go at 1 s each (not 10 s * 40 / 60 = 6.7 s)
    assert progress.progress_line("training", 60, 100, 10.0, initial=50) == (
        "training: 60/100 (60%), 10 s elapsed, ~40 s left"
    )
    # nothing done here yet: no estimate
    assert progress.progress_line("training", 50, 100, 3.0, initial=50) == "training: 50/100 (50%), 3.0 s elapsed"


def test_a_bar_with_initial_steps_counts_from_there_and_its_rate_from_this_process(pipe, capsys, ticking_clock):
    with progress.progress_bar("sweep", total=10, every_seconds=0, initial=6) as update:
        update(6)
        update(8)
    lines = err_lines(capsys)
    # started at 100 s; update(6) at 101 s: none done here, no estimate; update(8) at 102 s: 2 in 2 s, 2 left
    assert lines[0] == "sweep: 6/10 (60%), 1.0 s elapsed"
    assert lines[1] == "sweep: 8/10 (80%), 2.0 s elapsed, ~2.0 s left"


def test_a_resumed_bar_on_a_terminal_starts_at_initial(fake_terminal):
    with progress.progress_bar("sweep", total=10, initial=6) as update:
        task = progress_display.DISPLAY._progress.tasks[0]
        assert task.completed == 6
        update(7)
        # rich's speed comes from the steps advanced here: one step, not seven
        assert sum(sample.completed for sample in task._progress) == 1


def test_a_bar_at_n_of_n_still_open_keeps_its_clock_running_on_a_terminal(fake_terminal, monkeypatch):
    """The work after the last count (a build writing its files) must not freeze the screen: rich stops
    a task's elapsed time at n of n, our column does not."""
    with progress.progress_bar("building 3 sets", total=3) as update:
        update(3)
        display = progress_display.DISPLAY._progress
        task = display.tasks[0]
        assert task.finished  # rich's own column would now show a frozen time
        column = next(c for c in display.columns if type(c).__name__ == "RunningTimeColumn")
        start = task.start_time
        monkeypatch.setattr(task, "_get_time", lambda: start + 65.0)
        assert column.render(task).plain == "0:01:05"
        monkeypatch.setattr(task, "_get_time", lambda: start + 66.0)
        assert column.render(task).plain == "0:01:06"


def test_a_line_at_n_of_n_while_the_step_goes_on_says_finishing():
    assert progress.progress_line("building", 37000, 37000, 12.0).endswith(
        "37000/37000 (100%), 12 s elapsed, finishing"
    )
    assert "finishing" not in progress.progress_line("building", 5, 10, 12.0)
    assert progress.progress_line("building", 37000, 37000, 19.0, final=True) == "building: 37000/37000 done in 19 s"


def _tiny_task():
    import lightning.pytorch as pl

    class Task(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(1, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return nn.functional.mse_loss(self.layer(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Task()


def _trainer(callback, epochs):
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


def test_resumed_training_lines_estimate_time_left_from_this_process_only(pipe, capsys, tmp_path, ticking_clock):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(8, 1, generator=generator)
    loader = DataLoader(TensorDataset(x, 3 * x - 1), batch_size=2)  # 4 batches an epoch
    first = _trainer(TrainingProgress("training Tiny", every_seconds=0), epochs=2)
    first.fit(_tiny_task(), train_dataloaders=loader)
    first.save_checkpoint(tmp_path / "two.ckpt")
    capsys.readouterr()
    _trainer(TrainingProgress("training Tiny", every_seconds=0), epochs=5).fit(
        _tiny_task(), train_dataloaders=loader, ckpt_path=tmp_path / "two.ckpt", weights_only=False
    )
    lines = [line for line in err_lines(capsys) if line.startswith("training Tiny")]  # not Lightning's logs
    # 8 of 20 batches done before: the bar starts there (opened at 100 s; its first update at 101 s, the
    # epoch start at 102 s); the first batch here ends at 103 s: 1 batch in 3 s, 11 left at 3 s each
    assert lines[0] == "training Tiny: epoch 3 of 5: 8/20 (40%), 1.0 s elapsed"
    assert lines[2] == "training Tiny: epoch 3 of 5: 9/20 (45%), 3.0 s elapsed, ~33 s left"
    assert lines[-1].startswith("training Tiny: epoch 5 of 5: 20/20 done in ")


# -- an interrupted sweep: the --resume hint ---------------------------------------------------------


def stop_at_flag(overrides: list[str], run_dir: Path, resume: bool, *, flag: str) -> dict:
    """A sweep point that is Ctrl-C'd while ``flag`` exists and its model is ``c``."""
    values = dict(item.split("=", 1) for item in overrides)
    run_dir.mkdir(parents=True, exist_ok=True)
    if values["model"] == "c" and Path(flag).exists():
        raise KeyboardInterrupt
    return {"letter": values["model"], "resumed": resume}


def _interrupted_sweep(tmp_path):
    from repscope.sweeps import expand_grid, run_sweep

    flag = tmp_path / "stop"
    flag.write_text("1")
    points = expand_grid(["model=a,b,c,d,e"])
    out = tmp_path / "sweep"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(points, f"{__name__}:stop_at_flag", out, common={"flag": str(flag)}, description="sweep letters")
    return points, out, flag


def test_an_interrupted_sweep_ends_with_the_resume_hint(pipe, capsys, tmp_path, monkeypatch):
    import repscope.cli as cli
    import repscope.outputs as outputs
    from repscope.sweeps import InterruptedSweep, interrupted_sweeps

    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0")
    points, out, _ = _interrupted_sweep(tmp_path)
    lines = err_lines(capsys)
    assert lines[-1].startswith("sweep letters: interrupted at 2/5 after ")
    assert interrupted_sweeps()[-1] == InterruptedSweep(out.absolute(), 2, 0, 5)

    previous = signal.getsignal(signal.SIGINT)
    try:
        # no --out given: the command names the folder it made
        monkeypatch.setattr(outputs, "incomplete_outputs", lambda: [])
        assert cli._interrupted_exit().code == 130
        assert capsys.readouterr().err.strip() == (
            f"repscope: interrupted; 2 of 5 runs complete in {out.absolute()} "
            f"(pass --resume --out {out.absolute()} to go on)"
        )
        # --out given: the same option again, with --resume
        monkeypatch.setattr(outputs, "incomplete_outputs", lambda: [(out, "--out", True)])
        cli._interrupted_exit()
        assert capsys.readouterr().err.strip() == (
            f"repscope: interrupted; --out {out} holds an incomplete output: 2 of 5 runs complete "
            "(pass --resume with the same --out to go on or --overwrite to replace it)"
        )
        # a study whose output holds the sweep in a subfolder: the study's own output is named
        monkeypatch.setattr(outputs, "incomplete_outputs", lambda: [(tmp_path, "-o", True)])
        cli._interrupted_exit()
        assert (
            capsys.readouterr()
            .err.strip()
            .endswith(
                f"-o {tmp_path} holds an incomplete output: 2 of 5 runs complete "
                "(pass --resume with the same -o to go on or --overwrite to replace it)"
            )
        )
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_continued_sweep_counts_from_the_reused_runs_and_its_rate_is_this_calls(
    pipe, capsys, tmp_path, monkeypatch, ticking_clock
):
    from repscope.sweeps import run_sweep

    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0")
    points, out, flag = _interrupted_sweep(tmp_path)
    flag.unlink()
    capsys.readouterr()
    result = run_sweep(points, f"{__name__}:stop_at_flag", out, common={"flag": str(flag)}, description="sweep letters")
    assert result.reused == [points[0].name, points[1].name] and result.ok
    lines = err_lines(capsys)
    # a, b reused: the count starts at 2 with no estimate; c ends 2 s in: 1 run in 2 s, 2 runs left
    assert lines[0] == "sweep letters: 2/5 (40%), 1.0 s elapsed"
    assert lines[1] == "sweep letters: 3/5 (60%), 2.0 s elapsed, ~4.0 s left"
    assert lines[-1].startswith("sweep letters: 5/5 done in ")


def test_a_finished_sweep_adds_no_hint(pipe, tmp_path):
    from repscope.sweeps import expand_grid, interrupted_sweeps, run_sweep

    before = len(interrupted_sweeps())
    run_sweep(expand_grid(["model=a,b"]), f"{__name__}:stop_at_flag", tmp_path / "s", common={"flag": "/nonexistent"})
    assert len(interrupted_sweeps()) == before


# -- a resumed training reports its whole training time -------------------------------------------

CONFIG = {
    "model": {"name": "lenet5", "params": {"lr": 0.002}},
    "data": {
        "name": "digits",
        "params": {"source": "mnist-sample", "train_size": 120, "test_size": 40, "target": "label"},
    },
    "trainer": {"max_epochs": 2},
    "batch_size": 32,
    "seed": 5,
}


def test_a_resumed_training_reports_its_whole_training_time(tmp_path, run_cli, monkeypatch):
    from repscope.train.fitting import read_checkpoint

    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    config = tmp_path / "train.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    run = tmp_path / "run"
    code, out, err = run_cli(["train", str(config), "--out", str(run)])
    assert code == 0, err
    first = json.loads((run / "metrics.json").read_text())
    stored = [
        state["train_seconds"]
        for key, state in read_checkpoint(run / "checkpoints" / "last.ckpt")["callbacks"].items()
        if key.startswith("EpochCheckpoint")
    ][0]
    # the checkpoint's time is the first session's (taken a moment after fit_seconds: the final save)
    assert first["fit_seconds"] <= round(stored, 2) < first["fit_seconds"] + 5
    assert "fit_seconds_before_resume" not in first

    code, out, err = run_cli(["train", str(config), "--out", str(run), "--resume", "--set", "trainer.max_epochs=3"])
    assert code == 0, err
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["epochs"] == 3
    assert metrics["fit_seconds_before_resume"] == round(stored, 2)
    assert metrics["fit_seconds"] == pytest.approx(stored + metrics["fit_seconds_since_resume"], abs=0.011)
    assert metrics["fit_seconds"] > metrics["fit_seconds_since_resume"]
    # the command's line gives the whole time
    assert f"trained lenet5 for 3 epochs in {metrics['fit_seconds']:.1f} s" in out


def test_a_resume_from_a_checkpoint_without_its_time_counts_this_session_only(tmp_path, monkeypatch):
    from repscope.config import load_config
    from repscope.train.config import TrainConfig
    from repscope.train.fitting import fit

    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, "trainer": {"max_epochs": 1}}))
    config = load_config(path, TrainConfig)
    fit(config, out=tmp_path / "run", report=False)
    last = tmp_path / "run" / "checkpoints" / "last.ckpt"
    checkpoint = torch.load(last, weights_only=False)
    for key in checkpoint["callbacks"]:
        if key.startswith("EpochCheckpoint"):
            del checkpoint["callbacks"][key]["train_seconds"]  # as an older version wrote it
    torch.save(checkpoint, last)
    longer = config.model_copy(update={"trainer": config.trainer.model_copy(update={"max_epochs": 2})})
    resumed = fit(longer, out=tmp_path / "run", resume=True, report=False)
    assert resumed.metrics["fit_seconds_before_resume"] is None
    assert resumed.metrics["fit_seconds"] == resumed.metrics["fit_seconds_since_resume"]


# -- the silence of a whole command ----------------------------------------------------------------


def test_short_steps_after_a_long_silence_in_a_command_say_they_finished(pipe, capsys, monkeypatch):
    """Inside a command, a step too short for a line of its own still writes its end line when the command
    has been silent for the interval: a run of short steps cannot add up to a long silence."""
    now = [1000.0]
    monkeypatch.setattr(progress_display, "time", SimpleNamespace(monotonic=lambda: now[0]))
    with progress.command_progress():
        now[0] += 6.0  # 6 s of work that reports nothing (imports, loading)
        with progress.progress_bar("predicting 500 digits", total=500, every_seconds=5) as update:
            now[0] += 2.0
            update(500)
        first = err_lines(capsys)
        # the line just written restarts the command's clock: the next short step stays silent
        with progress.progress_bar("scoring 3 metrics", total=3, every_seconds=5) as update:
            now[0] += 2.0
            update(3)
        second = err_lines(capsys)
    assert first == ["predicting 500 digits: 500/500 done in 2.0 s"]
    assert second == []
    # outside a command each bar keeps its own clock: the same short step after a long silence says nothing
    now[0] += 60.0
    with progress.progress_bar("predicting 500 digits", total=500, every_seconds=5) as update:
        now[0] += 2.0
        update(500)
    assert err_lines(capsys) == []


def test_a_bar_opened_late_in_a_silent_command_writes_its_first_line_at_once(pipe, capsys):
    """The timer of a bar that gives no count looks at the command's silence: after 0.3 s of silence
    with a 0.2 s interval its first line comes at once, not an interval after the bar opened."""
    import time as real_time

    with progress.command_progress():
        real_time.sleep(0.3)
        with progress.progress_bar("fitting svm on 4000 digits", total=1, every_seconds=0.2):
            real_time.sleep(0.12)  # less than the bar's own interval
            lines = err_lines(capsys)
    assert lines and lines[0].startswith("fitting svm on 4000 digits: 0/1 (0%), "), lines


def test_work_outside_any_bar_in_a_silent_command_gets_its_lines(pipe, capsys, monkeypatch):
    """Imports, loading data, a step that reports nothing: the command says it is still working, with its
    words, whenever it has been silent for the interval (the first time: twice the interval) and no bar
    speaks for it."""
    import time as real_time

    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0.1")
    with progress.command_progress("repscope zeroshot study"):
        real_time.sleep(0.55)
        outside = err_lines(capsys)
        with progress.progress_bar("training LeNet", total=10, every_seconds=30) as update:
            real_time.sleep(0.35)  # an open bar speaks for the command (by its own interval, here 30 s)
            update(10)
            inside = err_lines(capsys)  # read while the bar is open: once it closes the command may speak again
        real_time.sleep(0.35)
        after = err_lines(capsys)  # the bar is closed: the command speaks for itself again
    assert len(outside) >= 2 and all(re.fullmatch(r"repscope zeroshot study: \d+\.\d s elapsed", x) for x in outside)
    # the first line only after twice the interval (a command failing right after its imports stays one line)
    assert float(outside[0].split(": ")[1].split()[0]) >= 0.2, outside
    assert not any(line.startswith("repscope zeroshot study") for line in inside), inside
    assert any(line.startswith("repscope zeroshot study") for line in after), after
    real_time.sleep(0.3)  # the command is over: no more lines
    assert err_lines(capsys) == []


def test_a_bar_with_a_speaking_nested_bar_adds_no_lines_of_its_own_but_speaks_for_a_quiet_one(
    pipe, capsys, monkeypatch
):
    """``1 factor classifiers: 0/1`` repeated between every line of the training inside it doubled a
    piped log: while a nested bar writes its lines the outer one stays quiet; while the nested bar is
    quiet (its own interval long) the outer one still bounds the silence (an interval and a half)."""
    import time as real_time

    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0.5")
    with progress.progress_bar("1 factor classifiers", total=2) as outer:
        with progress.progress_bar("training rotation", total=200) as inner:
            for done in range(1, 201):
                real_time.sleep(0.01)  # a batch: the nested bar writes at the first update past its interval
                inner(done)
        speaking = err_lines(capsys)
        outer(1)
        with progress.progress_bar("quiet step", total=1, every_seconds=30):
            real_time.sleep(2.0)
        quiet = err_lines(capsys)
    assert sum(line.startswith("training rotation: ") for line in speaking) >= 3, speaking
    assert not any(line.startswith("1 factor classifiers") for line in speaking), speaking
    # the update's line, then timer lines an interval and a half apart (a slow machine only widens the gaps)
    times = [float(re.search(r", (\d+\.\d) s elapsed", line)[1]) for line in quiet if line.startswith("1 factor")]
    assert len(times) >= 2, quiet
    # the times are printed to 0.1 s: 2.8 - 2.1 is 0.6999... in floating point, a gap of 0.7 as printed
    assert all(round(later - earlier, 1) >= 0.7 for earlier, later in zip(times, times[1:])), quiet
    assert not any(line.startswith("quiet step") for line in quiet), quiet


def test_the_command_words_stop_at_the_first_option_or_path():
    from repscope.cli import _command_words

    assert _command_words(["zeroshot", "study", "--quick"]) == "repscope zeroshot study"
    assert _command_words(["invariance", "assess", "train", "repo/"]) == "repscope invariance assess train"
    assert _command_words(["train", "runs/x.yaml"]) == "repscope train"
    assert _command_words(["--version"]) == "repscope"

"""The CLI conventions every verb follows: --out/-o and one rule for existing outputs, choices listed
in --help, --workers -1, --version, and Ctrl-C ending in one line with exit status 130."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from repscope import __version__
from repscope.cli import app, main
from repscope.errors import InvalidArgumentError, OutputExistsError
from repscope.outputs import output_target, prepare_output
from repscope.resources import configure_torch_threads, resolve_jobs, usable_cores

runner = CliRunner()
REPSCOPE = Path(sys.executable).with_name("repscope")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def digits(tmp_path):
    from repscope.data.sources import load_source

    path = tmp_path / "digits.npy"
    np.save(path, load_source("mnist-sample").images[:12])
    return path


# --------------------------------------------------------------------------------------------
# --version, choices, --workers


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.output.strip() == f"repscope {__version__}"


@pytest.mark.parametrize(
    "command, shown",
    [
        (["morpho", "measure"], ["<train|t10k|all>", "<fast|reference>", "-o, --out"]),
        (["morpho", "build"], ["-o, --out", "--overwrite", "--resume"]),
        (["sprites", "generate"], ["<cdsprites|dsprites>", "<train|val|test>", "[1|2|3|4|5]", "-o, --out"]),
        (["sprites", "import-h5"], ["[1|2|3|4|5]", "-o, --out"]),
        (["sprites", "evaluate"], ["[1|2|3|4|5]", "-o, --out"]),
        (["demo"], ["-o, --out", "--overwrite"]),
    ],
)
def test_help_lists_choices_and_out(command, shown):
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    for text in shown:
        assert text in result.output, text


def test_the_former_option_names_are_gone(tmp_path):
    # --output (morpho measure) and --dest (data download) were aliases of --out before 0.1.0
    assert invoke("morpho", "measure", "mnist-sample", "--output", tmp_path / "m.csv").exit_code == 2
    assert invoke("data", "download", "mnist", "--dest", tmp_path / "d").exit_code == 2
    assert not any(tmp_path.iterdir())


def test_a_value_outside_the_choices_is_refused():
    result = invoke("morpho", "measure", "mnist-sample", "-o", "x.csv", "--split", "validation")
    assert result.exit_code == 2 and "validation" in result.output and not Path("x.csv").exists()


def test_resolve_jobs():
    cores = usable_cores()
    assert resolve_jobs(3) == 3
    assert resolve_jobs(-1) == cores
    assert resolve_jobs(-2) == max(1, cores - 1)
    assert resolve_jobs(-1000) == 1
    with pytest.raises(InvalidArgumentError, match="^--workers: must be a positive"):
        resolve_jobs(0)
    with pytest.raises(InvalidArgumentError, match="^-j: expected an integer"):
        resolve_jobs("two", name="-j")


def test_workers_zero_is_one_line_naming_the_option(digits, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["morpho", "measure", str(digits), "-o", str(tmp_path / "m.csv"), "--workers", "0"])
    assert info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("repscope: error: --workers:") and "\n" not in err


def test_workers_minus_one_measures_like_one_worker(digits, tmp_path):
    assert invoke("morpho", "measure", digits, "-o", tmp_path / "a.csv", "--workers", "-1").exit_code == 0
    assert invoke("morpho", "measure", digits, "-o", tmp_path / "b.csv").exit_code == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_configure_torch_threads_stays_within_the_cores(monkeypatch):
    import torch

    before = torch.get_num_threads()
    try:
        monkeypatch.delenv("REPSCOPE_TORCH_THREADS", raising=False)
        chosen = configure_torch_threads()
        assert 1 <= chosen <= usable_cores() and torch.get_num_threads() == chosen
        assert configure_torch_threads(1) == 1 and torch.get_num_threads() == 1
        assert configure_torch_threads(-1) == usable_cores()
        monkeypatch.setenv("REPSCOPE_TORCH_THREADS", "1")
        assert configure_torch_threads() == 1
        monkeypatch.setenv("REPSCOPE_TORCH_THREADS", "many")
        with pytest.raises(InvalidArgumentError, match="REPSCOPE_TORCH_THREADS"):
            configure_torch_threads()
    finally:
        torch.set_num_threads(before)


# --------------------------------------------------------------------------------------------
# one rule for existing outputs


def test_prepare_output_rule(tmp_path):
    assert prepare_output(tmp_path / "new.csv") == tmp_path / "new.csv"
    (tmp_path / "empty").mkdir()
    assert prepare_output(tmp_path / "empty", kind="directory") == tmp_path / "empty"
    (tmp_path / "taken.csv").write_text("old")
    with pytest.raises(OutputExistsError) as info:
        prepare_output(tmp_path / "taken.csv")
    assert str(info.value) == f"--out {tmp_path / 'taken.csv'}: exists; pass --overwrite to replace it"
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("keep")
    with pytest.raises(OutputExistsError) as info:
        prepare_output(full, kind="directory", resume=False)
    assert str(info.value).endswith("pass --overwrite to replace it, or --resume to continue it")
    assert prepare_output(full, kind="directory", resume=True) == full
    assert prepare_output(full, kind="directory", overwrite=True) == full
    with pytest.raises(InvalidArgumentError, match="--overwrite and --resume"):
        prepare_output(full, kind="directory", overwrite=True, resume=True)
    with pytest.raises(OutputExistsError, match="not a directory"):
        prepare_output(tmp_path / "taken.csv", kind="directory", overwrite=True)


def test_output_target_replaces_only_once_complete(tmp_path):
    old = tmp_path / "run"
    old.mkdir()
    (old / "metrics.json").write_text("old")
    with pytest.raises(RuntimeError):
        with output_target(old, overwrite=True, kind="directory") as target:
            assert target != old and target.is_dir() and not any(target.iterdir())
            (target / "metrics.json").write_text("half")
            raise RuntimeError("failed half way")
    assert (old / "metrics.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # nothing left behind
    with output_target(old, overwrite=True, kind="directory") as target:
        (target / "metrics.json").write_text("new")
    assert sorted(p.name for p in old.iterdir()) == ["metrics.json"] and (old / "metrics.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    file = tmp_path / "m.csv"
    file.write_text("old")
    with output_target(file, overwrite=True) as target:
        assert target.suffix == ".csv" and not target.exists()
        target.write_text("new")
    assert file.read_text() == "new"


def test_an_interrupted_fresh_output_is_kept_and_named_in_the_last_line(tmp_path, capsys):
    from repscope.cli import _interrupted_exit
    from repscope.outputs import incomplete_outputs

    run = tmp_path / "study"
    with pytest.raises(KeyboardInterrupt):
        with output_target(run, kind="directory") as target:
            assert target == run
            run.mkdir()
            (run / "judges").mkdir()  # what a study writes before its models are trained
            raise KeyboardInterrupt
    assert (run / "judges").is_dir()  # kept: no work is thrown away
    assert incomplete_outputs()[-1] == (run, "--out", False)
    before = signal.getsignal(signal.SIGINT)
    try:
        assert _interrupted_exit().code == 130  # it ignores SIGINT from then on: restored below
    finally:
        signal.signal(signal.SIGINT, before)
    assert capsys.readouterr().err.strip() == (
        f"repscope: interrupted; --out {run} holds an incomplete output (pass --overwrite to replace it)"
    )
    # a verb that can resume says so; an output never started is not named
    with pytest.raises(KeyboardInterrupt):
        with output_target(tmp_path / "train", kind="directory", resume=False) as target:
            target.mkdir()
            (target / "checkpoints").mkdir()
            raise KeyboardInterrupt
    assert incomplete_outputs()[-1] == (tmp_path / "train", "--out", True)
    count = len(incomplete_outputs())
    with pytest.raises(KeyboardInterrupt):
        with output_target(tmp_path / "never", kind="directory"):
            raise KeyboardInterrupt
    assert len(incomplete_outputs()) == count


def test_an_interrupt_before_anything_was_written_says_so(tmp_path, capsys, monkeypatch):
    """A verb that writes its output only once complete (``zeroshot attack``) stopped with Ctrl-C: the
    last line says that nothing was written there, or that the old output was kept (``--overwrite``)."""
    from repscope import outputs
    from repscope.cli import _interrupted_exit

    monkeypatch.setattr(outputs, "_incomplete", [])
    monkeypatch.setattr(outputs, "_untouched", [])

    def last_line() -> str:
        before = signal.getsignal(signal.SIGINT)
        try:
            assert _interrupted_exit().code == 130
        finally:
            signal.signal(signal.SIGINT, before)
        return capsys.readouterr().err.strip()

    fresh = tmp_path / "attacks"
    with pytest.raises(KeyboardInterrupt):
        with output_target(fresh, kind="directory", option="-o"):
            raise KeyboardInterrupt  # stopped while computing, before the folder is written
    assert not fresh.exists()
    assert last_line() == f"repscope: interrupted; -o {fresh}: nothing written"
    old = tmp_path / "counts.csv"
    old.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with output_target(old, overwrite=True) as target:
            target.write_text("half")
            raise KeyboardInterrupt
    assert old.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["counts.csv"]
    assert last_line() == f"repscope: interrupted; --out {old}: the old output is kept as it was"
    # an output half written in place is named as such, not as untouched
    with pytest.raises(KeyboardInterrupt):
        with output_target(tmp_path / "run", kind="directory", resume=False) as target:
            target.mkdir()
            (target / "checkpoints").mkdir()
            raise KeyboardInterrupt
    assert last_line().endswith("holds an incomplete output (pass --resume to go on or --overwrite to replace it)")


def test_measure_refuses_then_overwrites(digits, tmp_path, capsys):
    out = tmp_path / "m.csv"
    assert invoke("morpho", "measure", digits, "-o", out).exit_code == 0
    first = out.read_bytes()
    out.write_text("mine")
    with pytest.raises(SystemExit):
        main(["morpho", "measure", str(digits), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert err == f"repscope: error: --out {out}: exists; pass --overwrite to replace it"
    assert out.read_text() == "mine"
    assert invoke("morpho", "measure", digits, "--out", out, "--overwrite").exit_code == 0
    assert out.read_bytes() == first


def test_generate_and_build_follow_the_rule(tmp_path, capsys):
    out = tmp_path / "sprites"
    assert invoke("sprites", "generate", "--level", 1, "--n", 6, "-o", out).exit_code == 0
    refused = invoke("sprites", "generate", "--level", 1, "--n", 6, "-o", out)
    assert refused.exit_code == 1
    again = invoke("sprites", "generate", "--level", 2, "--n", 6, "-o", out, "--overwrite")
    assert again.exit_code == 0, again.output
    from repscope.data.store import read_dataset

    assert read_dataset(out).level == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sprites"]

    taken = tmp_path / "built"
    taken.mkdir()
    (taken / "x").write_text("keep")
    with pytest.raises(SystemExit):
        main(["morpho", "build", "-o", str(taken), "--sets", "plain", "--train-size", "10", "--test-size", "5"])
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"--out {taken}: exists; pass --overwrite to replace it, or --resume to continue it")


def test_show_overwrites_only_when_asked(tmp_path):
    invoke("sprites", "generate", "--level", 1, "--n", 6, "-o", tmp_path / "d")
    png = tmp_path / "d" / "samples.png"
    assert invoke("sprites", "show", tmp_path / "d", "--count", 4).exit_code == 0
    png.write_bytes(b"mine")
    assert invoke("sprites", "show", tmp_path / "d").exit_code == 1 and png.read_bytes() == b"mine"
    assert invoke("sprites", "show", tmp_path / "d", "--count", 4, "--overwrite").exit_code == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


# --------------------------------------------------------------------------------------------
# Ctrl-C


def _environment(**extra):
    env = dict(os.environ)
    env.update({"PYTHONUNBUFFERED": "1", **extra})
    return env


def test_ctrl_c_in_a_worker_pool_is_one_line_and_130(tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it, while two workers measure."""
    out = tmp_path / "m.csv"
    process = subprocess.Popen(
        [str(REPSCOPE), "morpho", "measure", "mnist-sample", "-o", str(out), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=_environment(REPSCOPE_PROGRESS="lines", REPSCOPE_PROGRESS_SECONDS="0"),
    )
    lines: list[str] = []
    started = threading.Event()

    def read():
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            if line.startswith("measuring "):
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert started.wait(120), f"no progress line: {lines}"
        progress_lines = len(lines)
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    reader.join(10)
    after = [line for line in lines[progress_lines:] if not line.startswith("measuring ")]
    assert code == 130, lines
    assert after == ["repscope: interrupted"], lines
    assert not out.exists()


def test_ctrl_c_under_a_live_bar_on_a_terminal(tmp_path):
    """The same on a pseudo-terminal, where the rich display is live when the interrupt comes."""
    out = tmp_path / "m.csv"
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [str(REPSCOPE), "morpho", "measure", "mnist-sample", "-o", str(out), "--workers", "2"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
        env=_environment(REPSCOPE_PROGRESS="bar", COLUMNS="100", TERM="xterm"),
    )
    os.close(terminal)
    seen = b""

    def drain(seconds):
        nonlocal seen
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                seen += chunk

    try:
        deadline = time.monotonic() + 120
        while b"measuring" not in seen and time.monotonic() < deadline and process.poll() is None:
            drain(0.1)
        assert b"measuring" in seen, seen[-500:]
        drain(0.3)
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(60)
        drain(0.5)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        os.close(controller)
    text = seen.decode("utf-8", "replace")
    assert code == 130, text[-2000:]
    assert text.count("repscope: interrupted") == 1 and "Traceback" not in text, text[-2000:]
    assert not out.exists()


@pytest.mark.parametrize(
    "busy, preset, expected",
    [(1, None, "PASSIVE"), (0, None, None), (1, "ACTIVE", "ACTIVE")],
)
def test_openmp_waits_passively_only_beside_busy_cores_and_keeps_the_users_choice(busy, preset, expected):
    """Beside a busy process, spinning OpenMP threads made training 5-7x slower; on a quiet machine
    passive waiting costs speed, and a value the user set is theirs. Run in a fresh interpreter:
    the policy must be set before torch loads."""
    import os
    import subprocess
    import sys

    code = (
        "import os, sys\n"
        "import repscope.resources as r\n"
        f"r.busy_cores = lambda: {busy}\n"
        "acted = r.wait_passively_when_busy()\n"
        "assert 'torch' not in sys.modules\n"
        "print(acted, os.environ.get('OMP_WAIT_POLICY'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if preset is not None:
        env["OMP_WAIT_POLICY"] = preset
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(expected == "PASSIVE" and preset is None), str(expected)]


# --------------------------------------------------------------------------------------------
# config-driven commands: one builder, the same options everywhere (read from the registry)

TRAINER_OPTIONS = {"--accelerator", "--devices", "--num-nodes", "--precision", "--deterministic", "--logger"}


def _click_command(words):
    import typer

    node = typer.main.get_command(app)
    for word in words:
        node = node.commands[word]
    return node


def _options(command):
    return {option for param in command.params for option in (*param.opts, *param.secondary_opts)}


def test_every_config_driven_command_offers_the_same_options():
    from repscope.studies.registry import COMMANDS

    assert {" ".join(entry.words) for entry in COMMANDS} >= {
        "train",
        "mmvae train",
        "mmvae sweep",
        "invariance repo build",
    }
    for entry in COMMANDS:
        name = " ".join(entry.words)
        options = _options(_click_command(entry.words))
        assert {"--set", "--print-config", "--out", "-o", "--overwrite"} <= options, name
        assert ("--quick" in options) == bool(entry.quick), name
        assert ("--resume" in options) == entry.resumable, name
        assert (TRAINER_OPTIONS <= options) == entry.trains and (TRAINER_OPTIONS & options) <= (
            TRAINER_OPTIONS if entry.trains else set()
        ), name
        assert ("--epochs" in options) == (entry.max_epochs or any(a.key == "epochs" for a in entry.arguments)), name
        if entry.trains:  # the trainer flags are shown together
            params = [p for p in _click_command(entry.words).params if set(p.opts) & TRAINER_OPTIONS]
            assert {p.rich_help_panel for p in params} == {"Trainer"}, name


def test_every_command_with_the_config_options_is_in_the_registry():
    from repscope.studies.registry import COMMANDS

    registered = {entry.words for entry in COMMANDS}
    found = set()

    def walk(command, words):
        if hasattr(command, "commands"):  # a group
            for word, child in command.commands.items():
                walk(child, (*words, word))
        elif {"--set", "--print-config"} & _options(command):
            found.add(words)

    walk(_click_command(()), ())
    assert found == registered


def test_the_shared_options_are_defined_only_by_the_builder():
    import repscope.cli

    builder = Path(repscope.cli.__file__).with_name("studies.py")
    # the table of former names spells --max-epochs to refuse it; it defines no option at all
    renamed = Path(repscope.cli.__file__).with_name("renamed_options.py")
    assert "Option(" not in renamed.read_text(encoding="utf-8")
    for path in Path(repscope.cli.__file__).parent.glob("*.py"):
        if path in (builder, renamed):
            continue
        source = path.read_text(encoding="utf-8")
        for option in ("--accelerator", "--devices", "--precision", "--logger", "--print-config", "--max-epochs"):
            assert f'"{option}' not in source, f"{path.name} defines {option}"
        assert '"--set"' not in source and '"--quick"' not in source, path.name


@pytest.mark.parametrize(
    "argv, key, value",
    [
        (["mmvae", "train", "--quick", "--epochs", "2", "--accelerator", "cpu"], "epochs", 2),
        (["mmvae", "sweep", "--set", "latent_dim=3", "--devices", "0,1"], "trainer", {"devices": [0, 1]}),
        (["invariance", "repo", "build", "-o", "unused", "--quick", "--set", "count=2"], "count", 2),
    ],
)
def test_the_moved_commands_print_their_config(capsys, argv, key, value):
    import yaml

    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--print-config"])
    assert exit_info.value.code in (0, None)
    printed = yaml.safe_load(capsys.readouterr().out)
    if isinstance(value, dict):
        assert value.items() <= printed[key].items()
    else:
        assert printed[key] == value
    assert not Path("unused").exists()


def test_train_prints_its_config_with_the_trainer_flags(tmp_path, capsys):
    import yaml

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"model": {"name": "mlp"}, "data": {"name": "digits"}}))
    with pytest.raises(SystemExit) as exit_info:
        main(
            ["train", str(config), "--epochs", "3", "--precision", "bf16-mixed", "--compile", "reduce-overhead"]
            + ["--print-config"]
        )
    assert exit_info.value.code in (0, None)
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["trainer"]["max_epochs"] == 3 and printed["trainer"]["precision"] == "bf16-mixed"
    assert printed["trainer"]["compile"] == "reduce-overhead"
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--print-config"])  # CONFIG is required
    assert exit_info.value.code == 2


def test_repo_build_runs_through_the_builder_and_follows_the_output_rule(tmp_path, monkeypatch):
    """The command's wiring (output rule, --resume, run arguments, what it prints), with the repository's
    build replaced by a stand-in bound to its real signature (its training is tested in tests/invariance)."""
    import inspect
    from types import SimpleNamespace

    import repscope.studies.invariance.repo as repo_module

    signature = inspect.signature(repo_module.build_repository)
    calls = []

    def build(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)  # a keyword the real function does not take fails here
        calls.append(bound.arguments)
        (Path(bound.arguments["out"]) / "summary.csv").parent.mkdir(parents=True, exist_ok=True)
        (Path(bound.arguments["out"]) / "summary.csv").write_text("name\n")
        return SimpleNamespace(status={"model-000": "done", "model-001": "failed"}, failed=[])

    build.__signature__ = signature
    monkeypatch.setattr(repo_module, "build_repository", build)
    out = tmp_path / "repo"
    first = invoke("invariance", "repo", "build", "--set", "count=2", "-o", out, "--workers", "2", "--quick")
    assert first.exit_code == 0, first.output
    assert "1 of 2 models built; failed: 0" in first.output and f"summary: {out / 'summary.csv'}" in first.output
    assert calls[0]["out"] == out and calls[0]["workers"] == 2 and calls[0]["backend"] == "local"
    # --set, then --quick (3 epochs: one left every CNN5 under-fitted)
    assert calls[0]["config"].count == 2 and calls[0]["config"].epochs == [3]
    refused = invoke("invariance", "repo", "build", "-o", out)
    assert refused.exit_code == 1 and len(calls) == 1
    assert invoke("invariance", "repo", "build", "-o", out, "--resume").exit_code == 0 and calls[1]["out"] == out
    replaced = invoke("invariance", "repo", "build", "-o", out, "--overwrite")
    assert replaced.exit_code == 0 and calls[2]["out"] != out and (out / "summary.csv").is_file()


def test_our_warnings_show_as_one_line_and_other_libraries_as_python_shows_them(capsys):
    from repscope.cli import _show_warning

    _show_warning(RuntimeWarning("below the\n   target"), RuntimeWarning, "/x/src/repscope/cli/sprites.py", 196)
    assert capsys.readouterr().err == "warning: below the target\n"  # no file, line number nor source line
    _show_warning(UserWarning("theirs"), UserWarning, "/x/site-packages/lightning/trainer.py", 7)
    theirs = capsys.readouterr().err  # as warnings.formatwarning writes it (which a library may replace)
    assert "trainer.py:7" in theirs and "theirs" in theirs and not theirs.startswith("warning:")

"""YAML from users is loaded in one place (repscope.config.load_yaml): a key given twice is refused naming the
key, the file and the line, and aliases expand under a limit, so that an alias bomb ("billion laughs") is
refused at once, whether it comes in a config file, through --set or in the data section of a config."""

from __future__ import annotations

import os
import re
import signal
import threading
from contextlib import contextmanager

import pytest

from repscope.config import MAX_ALIAS_VALUES, load_yaml, read_yaml_mapping
from repscope.errors import DataFormatError, InvalidArgumentError

# the classic bomb as one flow value: nine levels of nine aliases, a billion strings once expanded
_LEVELS = "abcdefghi"
BOMB = (
    "["
    + ", ".join(
        [f"&a [{', '.join(['lol'] * 9)}]"]
        + [f"&{name} [{', '.join([f'*{below}'] * 9)}]" for below, name in zip(_LEVELS, _LEVELS[1:])]
    )
    + "]"
)


@contextmanager
def _no_hang(seconds: int = 60):
    """Fail the test instead of hanging it: the bomb used to expand inside validation for minutes."""

    def stop(signum, frame):
        raise AssertionError(f"still running after {seconds} s: the aliases were expanded")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _error_line(run_cli, args):
    with _no_hang():
        code, _, err = run_cli(args)
    assert code == 1, err
    # on a slow first import the command's progress line ("repscope train: 8.0 s elapsed") may come first
    lines = [line for line in err.strip().splitlines() if not re.fullmatch(r"repscope [\w ]+: [\d.]+ s elapsed", line)]
    assert len(lines) == 1 and lines[0].startswith("repscope: error: "), err
    return lines[0]


def test_an_alias_bomb_in_a_config_value_is_refused_naming_the_file(tmp_path, run_cli):
    config = tmp_path / "bomb.yaml"
    config.write_text(f"model:\n  name: cnn5\n  params:\n    lr: {BOMB}\ndata: {{name: digits}}\n")
    out = tmp_path / "run"
    line = _error_line(run_cli, ["train", str(config), "--out", str(out)])
    assert line == f"repscope: error: config {config}: aliases expand past {MAX_ALIAS_VALUES} values (an alias bomb?)"
    assert not out.exists()


def test_an_alias_bomb_through_set_is_refused_naming_the_option(tmp_path, run_cli):
    out = tmp_path / "run"
    line = _error_line(run_cli, ["train", "train-cnn5", "--set", f"model.params.lr={BOMB}", "--out", str(out)])
    assert line.startswith("repscope: error: --set 'model.params.lr=[&a [lol, lol")
    assert line.endswith(
        f"({len('model.params.lr=' + BOMB)} characters): aliases expand past 10000 values (an alias bomb?)"
    )
    assert not out.exists()


@pytest.mark.parametrize("command", [["train"], ["mmvae", "train"]])
def test_an_alias_bomb_in_the_data_of_a_config_is_refused(tmp_path, run_cli, command):
    config = tmp_path / "data-bomb.yaml"
    config.write_text(f"model: {{name: mmvae}}\ndata:\n  name: digits\n  params:\n    source: {BOMB}\n")
    out = tmp_path / "run"
    line = _error_line(run_cli, [*command, str(config), "--out", str(out)])
    assert line == f"repscope: error: config {config}: aliases expand past 10000 values (an alias bomb?)"
    assert not out.exists()


def test_a_key_given_twice_is_refused_naming_the_key_the_file_and_the_line(tmp_path, run_cli):
    config = tmp_path / "twice.yaml"
    config.write_text(
        "model:\n"
        "  name: beta-vae\n"
        "  params:\n"
        "    beta: 4.0\n"
        "    latent_dim: 6\n"
        "    lr: 0.001\n"
        "    beta: 1.0\n"
        "data: {name: digits}\n"
    )
    # --print-config: the config is read and validated as for a training, and nothing trains if it passes
    line = _error_line(run_cli, ["train", str(config), "--print-config"])
    assert line == f"repscope: error: config {config} line 7: key 'beta' given twice"


def test_a_key_given_twice_in_a_set_value_is_refused(tmp_path, run_cli):
    line = _error_line(run_cli, ["train", "train-cnn5", "--set", "model.params={lr: 0.1, lr: 0.2}", "--print-config"])
    assert line == "repscope: error: --set 'model.params={lr: 0.1, lr: 0.2}' line 1: key 'lr' given twice"


def test_merges_and_aliases_within_the_limit_still_load():
    text = "base: &base {lr: 0.1, beta: 2}\nrun:\n  <<: *base\n  beta: 4\nsame: *base\n"
    assert load_yaml(text, "t") == {
        "base": {"lr": 0.1, "beta": 2},
        "run": {"lr": 0.1, "beta": 4},
        "same": {"lr": 0.1, "beta": 2},
    }
    # 100 aliases of a 99-item list add 100 * (1 + 99) values: exactly the limit
    row = ", ".join(["0"] * 99)
    at_limit = f"a: &a [{row}]\ns: &s 1\nb: [{', '.join(['*a'] * 100)}]\n"
    loaded = load_yaml(at_limit, "t")
    assert len(loaded["b"]) == 100 and loaded["b"][99] == [0] * 99
    with pytest.raises(DataFormatError, match=r"^t: aliases expand past 10000 values \(an alias bomb\?\)$"):
        load_yaml(at_limit + "c: [*s]\n", "t")  # one value more


def test_a_recursive_alias_is_refused_and_the_error_type_is_the_callers():
    with pytest.raises(InvalidArgumentError, match=r"^--set 'x': an alias refers to a value that holds it"):
        load_yaml("&a [1, *a]", "--set 'x'", InvalidArgumentError)


def test_a_config_given_as_a_pipe_is_read_once(tmp_path, run_cli):
    text = b"model: {name: cnn5}\ndata: {name: digits}\ntrainer: {max_epochs: 7}\n"
    read, write = os.pipe()
    os.write(write, text)
    os.close(write)
    try:
        path = f"/dev/fd/{read}"  # what a shell's <(...) passes
        assert read_yaml_mapping(path)["trainer"] == {"max_epochs": 7}
        # a second read of the same pipe gets the mapping kept, not an empty file
        assert read_yaml_mapping(path)["trainer"] == {"max_epochs": 7}
    finally:
        os.close(read)


def test_a_config_given_as_a_named_pipe_is_read_by_the_command(tmp_path, run_cli):
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    writer = threading.Thread(
        target=lambda: fifo.write_text("model: {name: cnn5}\ndata: {name: digits}\ntrainer: {max_epochs: 7}\n"),
        daemon=True,
    )
    writer.start()
    with _no_hang():
        code, out, err = run_cli(["train", str(fifo), "--print-config"])
    writer.join(5)
    if writer.is_alive():  # the command never opened the pipe: open it here so that the writer ends
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer.join(5)
        os.close(reader)
    assert code == 0, err
    assert "max_epochs: 7" in out and "name: cnn5" in out

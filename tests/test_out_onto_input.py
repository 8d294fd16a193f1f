"""No command can destroy its own input: an ``--out`` that is an input of the command, holds one or lies
inside one is refused in one line before anything is written, ``--overwrite`` or not (issue 45).

Every command that takes ``--out`` has a case below (a test lists them from the app, so a new command cannot be
forgotten). The inputs are tiny but real files and folders: the refusal comes before any of them is read, so a
run directory needs only the look of one. Each case is run with ``--out`` on the input, on a folder holding it
and on a path inside it, with and without ``--overwrite``; the whole working tree is hashed before and after.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import typer

from repscope.cli import app
from repscope.data.idx import write_mnist_pair
from repscope.errors import OutputExistsError, OutputOntoInputError
from repscope.outputs import CommandInput, inputs_in_mapping, output_target, prepare_output, refuse_output_onto_inputs
from repscope.run_directory import RunDirectory

# --------------------------------------------------------------------------------------------
# the mechanism


@pytest.fixture
def places(tmp_path):
    """``runs/run`` (a run with a config and a checkpoint), its sibling ``runs/run2`` and a link to the run."""
    run = tmp_path / "runs" / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("seed: 0\n")
    (run / "checkpoints" / "last.ckpt").write_bytes(b"weights")
    (tmp_path / "runs" / "run2").mkdir()
    (tmp_path / "link").symlink_to(run, target_is_directory=True)
    return tmp_path


def _relation(out, given):
    """The relation the refusal names, or None when ``out`` is accepted."""
    try:
        refuse_output_onto_inputs(out, [given])
    except OutputOntoInputError as error:
        text = str(error)
        assert text.startswith(f"--out {out}: ") and f"({given.path})" in text and text.endswith("choose another --out")
        return text.split(": ", 1)[1].split(" the ")[0]
    return None


def test_an_output_on_the_run_around_it_or_in_it_is_refused_and_a_sibling_is_not(places, monkeypatch):
    monkeypatch.chdir(places)
    run = CommandInput("runs/run", "RUN_DIR", "the run")
    assert _relation("runs/run", run) == "is"
    assert _relation(places / "runs" / "run", run) == "is"  # absolute and relative: one place
    assert _relation("runs/run2/../run", run) == "is"
    assert _relation("link", run) == "is"  # a link to the run
    assert _relation("runs", run) == "holds"
    assert _relation(".", run) == "holds"
    assert _relation("runs/run/checkpoints", run) == "lies inside"  # existing
    assert _relation("runs/run/new/deeper", run) == "lies inside"  # not there yet: through its nearest parent
    assert _relation("link/evaluation", run) == "lies inside"  # through the link
    # '..' after a link is the parent of the link's target (runs/), not of the link: runs/run/new, inside
    assert _relation("link/../run/new", run) == "lies inside"
    assert _relation("link/../run", run) == "is"
    assert _relation("runs/run/", run) == "is"
    # a shared prefix is not a shared place, either way round
    assert _relation("runs/run2", run) is None
    assert _relation("runs/run2/x", run) is None
    assert _relation("runs/runx", run) is None
    assert _relation("runs/run", CommandInput("runs/run2", "RUN_DIR")) is None
    # an input that is not on disk (a registered name) clashes with nothing
    assert _relation("runs", CommandInput("runs/missing", "--data")) is None


def test_a_link_inside_an_input_is_part_of_it(places, monkeypatch):
    """An output that is a link inside the run would replace the link, wherever it points."""
    monkeypatch.chdir(places)
    (places / "runs" / "run" / "elsewhere").symlink_to(places / "runs" / "run2", target_is_directory=True)
    assert _relation("runs/run/elsewhere", CommandInput("runs/run", "RUN_DIR", "the run")) == "lies inside"


def test_the_command_s_own_room_inside_an_input_is_no_clash(places, monkeypatch):
    monkeypatch.chdir(places)
    run = CommandInput("runs/run", "RUN_DIR", "the run", room=("evaluation",))
    assert _relation("runs/run/evaluation", run) is None
    assert _relation("runs/run/evaluation/deeper", run) is None
    assert _relation("runs/run/evaluation2", run) == "lies inside"
    assert _relation("runs/run/checkpoints", run) == "lies inside"
    assert _relation("runs/run", run) == "is"


def test_prepare_output_refuses_before_the_exists_rule_and_resume_continues_its_own_run(places, monkeypatch):
    monkeypatch.chdir(places)
    config = CommandInput("runs/run/config.yaml", "CONFIG", "the config")
    for overwrite in (False, True):
        with pytest.raises(OutputOntoInputError, match=r"^--out runs/run: holds the config given as CONFIG "):
            prepare_output("runs/run", overwrite=overwrite, kind="directory", inputs=[config])
    # the rule of existing outputs is unchanged where nothing is an input
    with pytest.raises(OutputExistsError, match="exists; pass --overwrite"):
        prepare_output("runs/run", kind="directory", inputs=[CommandInput("runs/run2", "RUN_DIR")])
    # --resume continues the run that holds its own config: no clash
    assert prepare_output("runs/run", resume=True, kind="directory", inputs=[config]) == Path("runs/run")
    before = _tree(places)
    with pytest.raises(OutputOntoInputError):
        with output_target("runs", overwrite=True, kind="directory", inputs=[config]):
            raise AssertionError("the block must not run")
    with pytest.raises(OutputOntoInputError):
        RunDirectory.create("demo", out="runs/run/checkpoints", inputs=[CommandInput("runs/run", "RUN_DIR")])
    assert _tree(places) == before


def test_inputs_in_mapping_finds_the_paths_a_config_names():
    config = {
        "seed": 3,
        "data": {"name": "digits", "params": {"source": "mnist-sample", "data_dir": "d", "target": "label"}},
        "models": [{"name": "beta-vae", "checkpoint": "runs/a"}, {"name": "gan", "checkpoint": None}],
        "note": "some/where",
        "trainer": {"accelerator": "cpu"},
    }
    found = {item.given_as: os.fspath(item.path) for item in inputs_in_mapping(config, "{key} in the config")}
    assert found == {
        "data.params.source in the config": "mnist-sample",
        "data.params.data_dir in the config": "d",
        "models[0].checkpoint in the config": "runs/a",
        "note in the config": "some/where",
    }


# --------------------------------------------------------------------------------------------
# every command that takes --out


def _tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` with its kind, and a file's bytes as a digest."""
    found = {}
    for folder, names, files in os.walk(root):
        for name in names:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = "link" if path.is_symlink() else "dir"
        for name in files:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _run_dir(path: Path) -> Path:
    """The look of a run directory (nothing reads it before the refusal)."""
    (path / "checkpoints").mkdir(parents=True)
    (path / "config.yaml").write_text("model:\n  name: mmvae\nseed: 0\n")
    (path / "metrics.json").write_text('{"epochs": 1}\n')
    (path / "checkpoints" / "last.ckpt").write_bytes(b"\x80\x02weights")
    return path


def _folder(path: Path, *names: str) -> Path:
    path.mkdir(parents=True)
    for name in names or ("data.bin",):
        (path / name).write_bytes(b"\x00\x01" + name.encode())
    return path


def _file(path: Path, data: bytes = b"\x93NUMPY data") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@dataclass(frozen=True)
class Case:
    """A command, how to build its inputs in a work folder ``W``, and the outs to try.

    ``build(W, mnist)`` writes the inputs (``mnist``: a tiny MNIST folder already in ``W``) and returns the
    command line without ``--out`` and the outs: (out, relation, given_as, input) each.
    """

    words: tuple[str, ...]
    build: Callable[[Path, Path], tuple[list[str], list[tuple[Path, str, str, Path]]]]
    # the output the message names, from --out (a command that writes named files into --out names the file)
    shown: Callable[[Path], Path] = lambda out: out


def _around(given: Path, given_as: str, inside: str | None = "new") -> list[tuple[Path, str, str, Path]]:
    """The input itself, the folder holding it and (a folder input) a path inside it."""
    outs = [(given, "is", given_as, given), (given.parent, "holds", given_as, given)]
    if inside is not None:
        outs.append((given / inside, "lies inside", given_as, given))
    return outs


def _config_case(words, text, path_key, path_value, config_option="CONFIG", arguments=()):
    """A config-driven command: CONFIG itself and the folder holding it; a path in its config (--set) for inside."""

    def build(work, mnist):
        config = _file(work / "configs" / "config.yaml", text.encode())
        folder = mnist if path_value == "mnist" else _folder(work / path_value)
        config_args = ["--config", str(config)] if config_option == "--config" else [str(config)]
        argv = [*words, *arguments, *config_args, "--set", f"{path_key}={folder}"]
        outs = _around(config, config_option, inside=None)
        outs.append((folder / "run", "lies inside", f"{path_key} in the config", folder))
        return argv, outs

    return Case(tuple(words), build)


def _plain_case(words, make, given_as, argv, inside="new"):
    """A command with its own arguments: ``make(W, mnist)`` returns the input, ``argv(input)`` the command line."""

    def build(work, mnist):
        given = make(work, mnist)
        return [*words, *argv(given)], _around(given, given_as, inside=inside if given.is_dir() else None)

    return Case(tuple(words), build)


CASES = [
    _config_case(
        ["train"],
        "model:\n  name: cnn5\ndata:\n  name: digits\n  params:\n    source: mnist-sample\n",
        "data.params.source",
        "mnist",
    ),
    _config_case(["morpho", "diversity"], "seed: 1\n", "data.source", "mnist"),
    _config_case(["morpho", "disentangle"], "seed: 1\n", "data.source", "mnist"),
    _config_case(["morpho", "supervised"], "seed: 1\n", "data.source", "mnist"),
    _config_case(["mmvae", "train"], "model: mmvae\nseed: 1\n", "data.params.texture_dir", "textures"),
    _config_case(["mmvae", "sweep"], "model: mmvae\nseed: 1\n", "data.params.texture_dir", "textures"),
    _config_case(["disentangle", "study"], "seed: 1\n", "judges_dir", "judges"),
    _config_case(["candle", "study"], "seed: 1\n", "render.data_dir", "renders"),
    _config_case(["invariance", "repo", "build"], "seed: 1\n", "data.params.source", "mnist"),
    _config_case(["zeroshot", "study"], "seed: 1\n", "data.params.source", "mnist"),
    _config_case(["zeroshot", "evaluate"], "seed: 1\n", "data.params.source", "mnist", "--config", ["LeNet"]),
    _plain_case(
        ["sprites", "evaluate"],
        lambda w, m: _folder(w / "outputs" / "text_to_image", "truth.txt").parent,
        "FOLDER",
        lambda given: [str(given), "--level", "2"],
    ),
    _plain_case(["morpho", "measure"], lambda w, m: m, "SOURCE", lambda given: [str(given)]),
    _plain_case(["morpho", "build"], lambda w, m: m, "--source", lambda given: ["--source", str(given)]),
    _plain_case(
        ["sprites", "generate"],
        lambda w, m: _folder(w / "photos", "wood.png"),
        "--texture-dir",
        lambda given: ["--texture-dir", str(given), "--n", "4"],
    ),
    _plain_case(
        ["sprites", "show"], lambda w, m: _folder(w / "sprites", "dataset.json"), "DATASET_DIR", lambda g: [str(g)]
    ),
    _plain_case(
        ["sprites", "export-h5"], lambda w, m: _folder(w / "sprites", "dataset.json"), "DATASET_DIR", lambda g: [str(g)]
    ),
    _plain_case(
        ["sprites", "import-h5"],
        lambda w, m: _file(w / "h5" / "traindata.h5", b"\x89HDF\r\n\x1a\n"),
        "IN_H5",
        lambda given: [str(given), "--level", "1"],
    ),
    _plain_case(
        ["mmvae", "evaluate"],
        lambda w, m: _run_dir(w / "runs" / "mm_in"),
        "RUN_DIR",
        lambda given: [str(given), "--n", "20"],
        inside="checkpoints",  # what --overwrite replaced
    ),
    _plain_case(
        ["mmvae", "leaderboard"], lambda w, m: _run_dir(w / "runs" / "mm_in"), "RUN_DIRS", lambda given: [str(given)]
    ),
    _plain_case(
        ["assess"],
        lambda w, m: _file(w / "models" / "mine.onnx"),
        "MODEL",
        lambda given: [str(given), "--role", "encoder"],
    ),
    _plain_case(
        ["disentangle", "score"],
        lambda w, m: _file(w / "codes" / "x.npz"),
        "FILE",
        lambda given: [str(given)],
    ),
    _plain_case(
        ["disentangle", "train-judges"],
        lambda w, m: _folder(w / "candle-images", "0.png", "0.json"),
        "--data-param data_dir",
        lambda given: ["--data", "candle", "--data-param", f"data_dir={given}"],
    ),
    _plain_case(
        ["candle", "render"],
        lambda w, m: _folder(w / "hdri", "indoor.hdr"),
        "--hdri-dir",
        lambda given: ["--hdri-dir", str(given), "--limit", "1"],
    ),
    _plain_case(
        ["candle", "pairs"],
        lambda w, m: _folder(w / "candle-images", "0.png", "0.json"),
        "DATA_DIR",
        lambda given: [str(given), "--differ", "object"],
    ),
    _plain_case(["invariance", "features"], lambda w, m: _file(w / "matrices" / "m.npy"), "MATRIX", lambda g: [str(g)]),
    _plain_case(
        ["invariance", "correlate"], lambda w, m: _run_dir(w / "repo" / "m0").parent, "REPO", lambda g: [str(g)]
    ),
    _plain_case(
        ["invariance", "test"],
        lambda w, m: _run_dir(w / "runs" / "lenet_in"),
        "--model",
        lambda given: ["--model", str(given), "--n", "10"],
        inside="checkpoints",
    ),
    _plain_case(
        ["invariance", "repo", "label"], lambda w, m: _run_dir(w / "repo" / "m0").parent, "REPO", lambda g: [str(g)]
    ),
    _plain_case(
        ["invariance", "assess", "train"],
        lambda w, m: _run_dir(w / "repo" / "m0").parent,
        "REPO",
        lambda given: [str(given)],
    ),
    _plain_case(
        ["zeroshot", "metrics"], lambda w, m: _file(w / "labels" / "softlabels.npz"), "SOFT_LABELS", lambda g: [str(g)]
    ),
    _plain_case(
        ["zeroshot", "attack"],
        lambda w, m: _run_dir(w / "runs" / "lenet_in"),
        "--model",
        lambda given: ["--model", str(given), "--n", "2"],
        inside="checkpoints",
    ),
]

# sprites classify writes two named files into --out (default: the dataset's folder, their place), so the
# folder itself may be the dataset; a folder inside the dataset may not
CLASSIFY = Case(
    ("sprites", "classify"),
    lambda w, m: (
        ["sprites", "classify", str(_folder(w / "sprites", "dataset.json"))],
        [(w / "sprites" / "sub", "lies inside", "DATASET_DIR", w / "sprites")],
    ),
    shown=lambda out: out / "predictions.csv",
)
CASES.append(CLASSIFY)

# commands whose --out receives what they make from nothing of the user's
NO_INPUT = {("demo",): "the embedded digits", ("data", "download"): "files from the network"}


def _commands_with_out(group, words=()) -> set[tuple[str, ...]]:
    found = set()
    for name, command in getattr(group, "commands", {}).items():
        if hasattr(command, "commands"):
            found |= _commands_with_out(command, (*words, name))
        elif any("--out" in getattr(param, "opts", ()) for param in command.params):
            found.add((*words, name))
    return found


def test_every_command_that_takes_out_has_a_case():
    commands = _commands_with_out(typer.main.get_command(app))
    cased = {case.words for case in CASES}
    assert len(cased) == len(CASES)
    assert commands - cased - set(NO_INPUT) == set(), "a command with --out and no case here"
    assert cased | set(NO_INPUT) <= commands


@pytest.fixture
def work(tmp_path, tiny_mnist, monkeypatch):
    """The working directory (REPSCOPE_HOME inside it: nothing may appear there either) and a tiny MNIST folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path / "home"))
    mnist = tmp_path / "work" / "mnist"
    for split, (images, labels) in tiny_mnist.items():
        write_mnist_pair(
            mnist / f"{split}-images-idx3-ubyte.gz", mnist / f"{split}-labels-idx1-ubyte.gz", images, labels
        )
    return tmp_path


@pytest.mark.parametrize("case", CASES, ids=lambda case: " ".join(case.words))
def test_out_on_the_command_s_input_is_refused_and_nothing_changes(case, work, run_cli):
    argv, outs = case.build(work / "work", work / "work" / "mnist")
    before = _tree(work)
    assert outs
    for out, relation, given_as, given in outs:
        for overwrite in ([], ["--overwrite"]):
            code, _, err = run_cli([*argv, "--out", str(out), *overwrite])
            errors = [line for line in err.splitlines() if line.startswith("repscope: error:")]
            assert code == 1 and len(errors) == 1, (out, overwrite, err)
            assert errors[0].startswith(f"repscope: error: --out {case.shown(out)}: {relation} "), errors[0]
            assert errors[0].endswith(f" given as {given_as} ({given}); choose another --out"), errors[0]
            assert _tree(work) == before, (out, overwrite)


def test_a_sibling_of_an_input_is_written(work, run_cli):
    """The control: an out beside the input, its name starting with the input's, is no clash."""
    matrix = work / "work" / "m.npy"
    np.save(matrix, np.array([[0.2, 0.1, 0.0], [0.1, 0.9, 0.3], [0.0, 0.3, 0.5]]))
    code, out, err = run_cli(["invariance", "features", str(matrix), "--out", str(matrix) + ".json"])
    assert code == 0, err
    assert (work / "work" / "m.npy.json").is_file()

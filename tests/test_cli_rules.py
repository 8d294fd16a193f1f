"""One set of CLI rules: ``--set`` wins over ``--quick``, every config-driven command takes a shipped config's
name as well as a path (``repscope configs`` lists them), CONFIG's help says where its keys are, one name per
option (``--workers``, ``--epochs``), and ``repscope --help`` imports no numerical library."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from repscope.cli import app, main
from repscope.errors import InvalidArgumentError
from repscope.studies.registry import COMMANDS

runner = CliRunner()
SHIPPED = Path(__file__).parents[1] / "src" / "repscope" / "configs"


def _printed_config(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--print-config"])
    captured = capsys.readouterr()
    assert exit_info.value.code in (0, None), captured.err
    return yaml.safe_load(captured.out)


def _argv(entry, config=None):
    """The command line of ``entry`` with its required arguments filled (nothing runs: --print-config)."""
    argv = list(entry.words) + ["unused"] * sum(a.positional for a in entry.arguments)
    if config is not None:
        argv += ["--config", config] if any(a.positional for a in entry.arguments) else [config]
    if entry.out_required:
        argv += ["-o", "unused-out"]
    argv += [f"--{a.key}" for a in entry.arguments if a.destination == "config" and a.required and a.type is int][:1]
    if argv[-1].startswith("--"):
        argv.append("1")
    return argv


def _leaves(data, prefix=""):
    """Every leaf of a nested mapping as ``dotted.key -> value``."""
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# --------------------------------------------------------------------------------------------
# --set wins over --quick


@pytest.mark.parametrize("entry", [e for e in COMMANDS if e.quick], ids=lambda e: " ".join(e.words))
def test_set_wins_over_quick_for_every_command(entry, capsys, tmp_path, monkeypatch):
    """The key is one that the command's quick() changes (an integer), set to one more than quick's value."""
    monkeypatch.chdir(tmp_path)
    full = _leaves(_printed_config(capsys, _argv(entry)))
    quick = _leaves(_printed_config(capsys, [*_argv(entry), "--quick"]))
    changed = [
        key
        for key, value in quick.items()
        if type(value) is int and full.get(key) != value and key not in ("seed",)  # noqa: E721
    ]
    assert changed, f"{' '.join(entry.words)}: --quick changes no integer key"
    key = changed[0]
    wanted = quick[key] + 1
    printed = _leaves(_printed_config(capsys, [*_argv(entry), "--quick", "--set", f"{key}={wanted}"]))
    assert printed[key] == wanted
    # every other key stays as --quick made it
    assert {k: v for k, v in printed.items() if k != key} == {k: v for k, v in quick.items() if k != key}
    assert not (tmp_path / "unused-out").exists()


@pytest.mark.parametrize(
    "argv, key, quick_value, wanted",
    [
        # the cases: --quick used to replace these
        (["invariance", "repo", "build", "-o", "unused", "--quick"], "count", 8, 20),
        (["morpho", "supervised", "--quick"], "data.copies", 1, 3),
        (["disentangle", "study", "--quick"], "training.trainer.max_epochs", 1, 4),
        (["mmvae", "train", "--quick"], "epochs", 3, 9),
    ],
)
def test_set_wins_over_quick_in_the_reported_commands(capsys, tmp_path, monkeypatch, argv, key, quick_value, wanted):
    monkeypatch.chdir(tmp_path)
    assert _leaves(_printed_config(capsys, argv))[key] == quick_value
    assert _leaves(_printed_config(capsys, [*argv, "--set", f"{key}={wanted}"]))[key] == wanted


def test_a_config_key_option_and_a_trainer_flag_win_over_quick(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # mmvae train --epochs is the config key epochs; --quick alone makes it 3
    assert _printed_config(capsys, ["mmvae", "train", "--quick", "--epochs", "9"])["epochs"] == 9
    # the Lightning flags are --set overrides of the trainer section: --quick makes max_epochs 8 here
    printed = _printed_config(capsys, ["morpho", "diversity", "--quick", "--set", "training.trainer.max_epochs=11"])
    assert printed["training"]["trainer"]["max_epochs"] == 11


def test_mmvae_sweep_points_keep_the_set_over_quick(tmp_path):
    """A sweep loads every point again (load_multimodal_config): --set wins there too."""
    from repscope.studies.multimodal.train import load_multimodal_config

    config, _ = load_multimodal_config(None, ["epochs=7", "data.train_size=4000"], quick=True)
    assert config.epochs == 7 and config.data.train_size == 4000
    config, _ = load_multimodal_config(None, [], quick=True)
    assert config.epochs == 3 and config.data.train_size == 3000


# --------------------------------------------------------------------------------------------
# shipped configs by name


def test_every_shipped_config_has_a_command():
    from repscope.config import shipped_config_names
    from repscope.studies.registry import config_takers

    names = shipped_config_names()
    assert names == sorted(p.stem for p in SHIPPED.glob("*.yaml")) and "train-cnn5" in names
    assert config_takers("train-cnn5") == ["train"]
    assert config_takers("mmvae-cdsprites-paper") == ["mmvae train", "mmvae sweep"]
    assert config_takers("zeroshot-fashion") == ["zeroshot study", "zeroshot evaluate"]
    assert config_takers("no-such") == []
    assert all(config_takers(name) for name in names)


def _entry(words):
    return next(e for e in COMMANDS if " ".join(e.words) == words)


def _shipped_cases():
    from repscope.config import shipped_config_names
    from repscope.studies.registry import config_takers

    return [(name, taker) for name in shipped_config_names() for taker in config_takers(name)]


@pytest.mark.parametrize("name, taker", _shipped_cases())
def test_every_command_takes_its_shipped_configs_by_name(name, taker, capsys, tmp_path, monkeypatch):
    """By name from any directory, the same config as the file given by its path."""
    monkeypatch.chdir(tmp_path)
    entry = _entry(taker)
    by_name = _printed_config(capsys, _argv(entry, name))
    by_path = _printed_config(capsys, _argv(entry, str(SHIPPED / f"{name}.yaml")))
    assert by_name == by_path
    # the file's own values are there (not the schema's defaults)
    written = yaml.safe_load((SHIPPED / f"{name}.yaml").read_text())
    leaves = _leaves(by_name)
    scalars = {k: v for k, v in _leaves(written).items() if isinstance(v, (int, float, str)) and "per_model" not in k}
    assert scalars and all(leaves[k] == v for k, v in scalars.items()), name


def test_train_by_name_reads_the_shipped_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    printed = _printed_config(capsys, ["train", "train-cnn5"])
    # train-cnn5.yaml: model cnn5, lr 0.001, 3 epochs on the MNIST sample
    assert printed["model"] == {"name": "cnn5", "params": {"lr": 0.001}}
    assert printed["trainer"]["max_epochs"] == 3
    assert printed["data"]["params"]["source"] == "mnist-sample"
    assert _printed_config(capsys, ["train", "train-cnn5.yaml", "--epochs", "5"])["trainer"]["max_epochs"] == 5


def test_a_file_in_the_working_directory_wins_over_a_shipped_name(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    local = {"model": {"name": "mlp"}, "data": {"name": "digits"}, "trainer": {"max_epochs": 7}}
    (tmp_path / "train-cnn5.yaml").write_text(yaml.safe_dump(local))
    (tmp_path / "sub" / "mine.yaml").write_text(yaml.safe_dump({**local, "trainer": {"max_epochs": 2}}))
    assert _printed_config(capsys, ["train", "train-cnn5.yaml"])["trainer"]["max_epochs"] == 7  # the local file
    assert _printed_config(capsys, ["train", "train-cnn5"])["trainer"]["max_epochs"] == 3  # the shipped config
    assert _printed_config(capsys, ["train", "sub/mine.yaml"])["trainer"]["max_epochs"] == 2  # relative to the cwd


@pytest.mark.parametrize(
    "given, expected",
    [
        ("train-cnn", "close: train-cnn5"),
        ("morpho-diversty", "close: morpho-diversity"),
        ("xyzzy", "no shipped config of that name (repscope configs lists them)"),
        ("elsewhere/src/repscope/configs/train-cnn5.yaml", "give its name, train-cnn5"),
    ],
)
def test_an_unknown_config_is_one_line_with_close_names(given, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["train", given, "--print-config"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"repscope: error: config {given}: no such file")
    assert expected in err


def test_resolve_config_path_and_shipped_config_path(tmp_path, monkeypatch):
    from repscope.config import SHIPPED_DIR, resolve_config_path, shipped_config_path

    monkeypatch.chdir(tmp_path)
    assert resolve_config_path("zeroshot-fashion") == SHIPPED_DIR / "zeroshot-fashion.yaml"
    assert shipped_config_path("train-beta-vae.yaml") == SHIPPED_DIR / "train-beta-vae.yaml"
    (tmp_path / "folder").mkdir()
    with pytest.raises(InvalidArgumentError, match="a folder"):
        resolve_config_path("folder")
    with pytest.raises(
        InvalidArgumentError, match=r"'train-beta': no shipped config of that name; close: train-beta-vae"
    ):
        shipped_config_path("train-beta")
    with pytest.raises(InvalidArgumentError, match="no shipped config"):
        shipped_config_path("../configs/train-cnn5")


def test_config_description(tmp_path):
    from repscope.config import config_description

    path = tmp_path / "c.yaml"
    path.write_text("# repscope mmvae train: a model (Smith et al. 2020) on CdSprites+. Then more.\n# next\nx: 1\n")
    assert config_description(path) == "A model (Smith et al. 2020) on CdSprites+"
    path.write_text("# First line goes on\n# over two lines: e.g. this. Second\n\n# not read\n")
    assert config_description(path) == "First line goes on over two lines: e.g. this"
    path.write_text("# " + "word " * 30 + "\n")
    # 19 words: cut at 97 characters, then at the last space
    assert config_description(path) == "Word " + "word " * 17 + "word..."
    path.write_text("x: 1\n# late comment\n")
    assert config_description(path) == ""


def test_configs_lists_every_shipped_config():
    result = runner.invoke(app, ["configs"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["name", "command", "description"]
    rows = {line.split()[0]: line for line in lines[1:-1]}
    assert sorted(rows) == sorted(p.stem for p in SHIPPED.glob("*.yaml"))
    assert re.fullmatch(
        r"train-cnn5 +train +CNN5 \(the ML4ML repository classifier\) on the MNIST sample, the model an "
        r"invariance test starts from",
        rows["train-cnn5"],
    )
    assert re.match(
        r"zeroshot-fashion +zeroshot study, zeroshot evaluate +The Raw Zero-Shot study", rows["zeroshot-fashion"]
    )
    assert re.match(
        r"mmvae-cdsprites +mmvae train, mmvae sweep +A multimodal VAE on CdSprites\+ images", rows["mmvae-cdsprites"]
    )
    assert lines[-1].startswith("files: ") and Path(lines[-1].removeprefix("files: ")).resolve() == SHIPPED.resolve()


# --------------------------------------------------------------------------------------------
# help: where CONFIG's keys are


def _click_command(words):
    import typer.main

    command = typer.main.get_command(app)
    for word in words:
        command = command.commands[word]
    return command


def test_config_help_says_where_its_keys_are():
    for entry in COMMANDS:
        command = _click_command(entry.words)
        (param,) = [p for p in command.params if p.name == "config"]
        text = " ".join(param.help.split())
        assert "holding the keys below" not in text, entry.words
        assert "shipped config's name" in text, entry.words
        if "--print-config" not in text:  # else it names the top-level keys of its schema
            schema, _, _ = entry.load()
            assert all(key in text for key in schema.model_fields), entry.words


# --------------------------------------------------------------------------------------------
# one name per option


def _every_option():
    """(command words, option string, help) of every option of every command."""
    out = []

    def walk(command, words):
        if hasattr(command, "commands"):
            for word, child in command.commands.items():
                walk(child, (*words, word))
            return
        for param in command.params:
            for opt in [*param.opts, *getattr(param, "secondary_opts", [])]:
                if opt.startswith("-"):
                    out.append((" ".join(words), opt, getattr(param, "help", "") or ""))

    walk(_click_command(()), ())
    return out


def test_option_names_follow_the_rules():
    """Worker processes: --workers (no --jobs, no -j); epochs of what a command trains: --epochs, of another
    training: --<what>-epochs (--diversity-epochs); never --max-epochs."""
    options = _every_option()
    assert len({words for words, _, _ in options}) > 30
    for words, opt, help_text in options:
        assert opt not in ("--jobs", "-j", "--max-epochs", "--n-jobs", "--processes"), (words, opt)
        if "epoch" in opt:
            assert re.fullmatch(r"--(?:[a-z]+-)*epochs", opt), (words, opt)
        if "worker processes" in help_text:
            assert opt == "--workers", (words, opt, help_text)
    found = {(words, opt) for words, opt, _ in options}
    assert {("morpho measure", "--workers"), ("morpho build", "--workers"), ("demo", "--workers")} <= found
    assert {("train", "--epochs"), ("mmvae train", "--epochs"), ("disentangle train-judges", "--epochs")} <= found
    assert ("demo", "--diversity-epochs") in found


def test_workers_is_one_line_naming_the_option(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--workers", "0", "--out", str(tmp_path / "d")])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("repscope: error: --workers: must be a positive") and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


# --------------------------------------------------------------------------------------------
# start-up


@pytest.mark.parametrize("argv", [["--help"], ["sprites", "generate", "--help"], ["configs"]])
def test_start_up_imports_no_numerical_library(argv):
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "repscope", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time")}
    assert "repscope.cli" in imported
    heavy = {"numpy", "torch", "pandas", "scipy", "sklearn", "lightning", "matplotlib"} & imported
    assert not heavy, heavy


def test_the_cli_copy_of_the_judge_threshold_is_the_metric_s():
    from repscope.cli.disentangle import DEFAULT_MIN_JUDGE_ACCURACY
    from repscope.metrics.disentanglement import counterfactual

    assert DEFAULT_MIN_JUDGE_ACCURACY == counterfactual.DEFAULT_MIN_JUDGE_ACCURACY

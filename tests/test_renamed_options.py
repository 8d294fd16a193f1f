"""An option, command or config key renamed since 0.1.0 is refused in one line naming the new name."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("command", "words", "old", "new"),
    [
        (["morpho", "measure", "mnist-sample"], 2, "--jobs", "--workers"),
        (["morpho", "measure", "mnist-sample"], 2, "-j", "--workers"),
        (["morpho", "build"], 2, "--jobs", "--workers"),
        (["demo"], 1, "--jobs", "--workers"),
        (["train", "train-cnn5"], 1, "--max-epochs", "--epochs"),
        (["disentangle", "train-judges", "dsprites"], 2, "--size", "--train-size"),
        (["morpho", "build"], 2, "--max-train", "--train-size"),
        (["morpho", "build"], 2, "--max-test", "--test-size"),
        (["disentangle", "score", "codes.npz"], 2, "--classifiers", "--judges"),
    ],
)
def test_a_renamed_option_names_its_new_name_in_one_line(tmp_path, run_cli, command, words, old, new):
    out = tmp_path / "out"
    code, stdout, err = run_cli([*command, old, "2", "--out", str(out)])
    assert code == 2
    path = " ".join(["repscope", *command[:words]])
    assert err == f"repscope: error: {path}: unknown option {old} (renamed {new})\n"
    assert stdout == "" and not out.exists()


def test_an_old_name_on_a_command_that_never_had_the_option_keeps_clicks_message(run_cli):
    # morpho measure has no --train-size: --size there is a plain unknown option
    code, _, err = run_cli(["morpho", "measure", "mnist-sample", "--size", "3"])
    assert code == 2
    assert "No such option: --size" in err and "renamed" not in err


@pytest.mark.parametrize(
    "arguments",
    [[], ["--out", "judges", "--epochs", "1"], ["--help"], ["dsprites", "--no-such-option", "-x"]],
)
def test_a_renamed_command_names_its_new_name_in_one_line_and_does_nothing(tmp_path, monkeypatch, run_cli, arguments):
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run_cli(["disentangle", "classifiers", *arguments])
    assert code == 2
    assert err == "repscope: error: repscope disentangle classifiers: renamed repscope disentangle train-judges\n"
    assert stdout == "" and not any(tmp_path.iterdir())


def test_the_sprites_judges_command_answers_under_its_old_name_in_one_line(tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run_cli(["sprites", "train-classifiers", "--level", "2", "--epochs", "1"])
    assert code == 2 and stdout == "" and not any(tmp_path.iterdir())
    assert err == "repscope: error: repscope sprites train-classifiers: renamed repscope sprites train-judges\n"


@pytest.mark.parametrize("group, old", [("disentangle", "classifiers"), ("sprites", "train-classifiers")])
def test_a_renamed_command_is_hidden_from_help(run_cli, group, old):
    code, stdout, _ = run_cli([group, "--help"])
    listed = [line.split()[0] for line in stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert code == 0 and "train-judges" in listed and old not in listed


def test_every_renamed_command_is_named_in_the_table():
    from repscope.cli.renamed_options import RENAMED_COMMANDS

    assert RENAMED_COMMANDS[("disentangle", "classifiers")] == "train-judges"
    assert RENAMED_COMMANDS[("sprites", "train-classifiers")] == "train-judges"


@pytest.mark.parametrize("given", ["file", "--set"])
def test_a_renamed_config_key_names_its_new_name_in_one_line(tmp_path, run_cli, given):
    config = tmp_path / "old.yaml"
    config.write_text("classifiers_dir: packaged\n")
    out = tmp_path / "study"
    source = [str(config)] if given == "file" else ["--set", "classifiers_dir=packaged"]
    code, stdout, err = run_cli(["disentangle", "study", *source, "--out", str(out)])
    assert code == 1
    assert err.endswith(": unknown key classifiers_dir (renamed judges_dir)\n") and err.count("\n") == 1
    assert err.startswith("repscope: error: ")
    assert stdout == "" and not out.exists()

"""An option renamed since 0.1.0, given to a command that had it, is refused in one line naming the new name."""

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
        (["disentangle", "classifiers", "dsprites"], 2, "--size", "--train-size"),
        (["morpho", "build"], 2, "--max-train", "--train-size"),
        (["morpho", "build"], 2, "--max-test", "--test-size"),
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

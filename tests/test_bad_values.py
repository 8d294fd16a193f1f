"""Values that used to pass silently or to fill the terminal: a CANDLE record field that is not a name, factor
classes int64 cannot hold, classes too small for the metrics, a sweep resumed into a folder that never held one,
and user values echoed whole in an error. Each ends in one line naming the file, option or column."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from repscope.data.candle.dataset import folder_records
from repscope.errors import DataFormatError, InvalidArgumentError, one_line, shown
from repscope.studies.candle.score_arrays import read_codes_npz
from repscope.studies.multimodal.run_commands import check_holds_a_sweep
from repscope.validation import check_factors_codes

_PROGRESS = re.compile(r"repscope [\w -]+: [\d.]+ s elapsed")


def _error(run_cli, args, status=1):
    code, _, err = run_cli([str(arg) for arg in args])
    # on a slow first import the command's progress line ("repscope train: 8.0 s elapsed") may come first
    lines = [line for line in err.splitlines() if not _PROGRESS.fullmatch(line)]
    assert code == status and len(lines) == 1 and lines[0].startswith("repscope: error: "), err[:2000]
    return lines[0]


# --------------------------------------------------------------------------------------------------------------
# CANDLE records


def _record(**fields):
    record = {
        "scene": "indoor",
        "lights": "left",
        "objects": {
            "Cube_0": {"object_type": "cube", "color": "red", "size": 1, "rotation": 60, "bounds": [[8, 5], [30, 20]]}
        },
    }
    record.update(fields)
    return json.dumps(record)


def test_a_candle_scene_that_is_a_long_list_is_refused_naming_the_file_and_the_key(tmp_path, run_cli):
    folder = tmp_path / "candle"
    folder.mkdir()
    (folder / "a.json").write_text(_record())
    (folder / "b.json").write_text(_record(scene=list(range(200_000))))
    with pytest.raises(DataFormatError) as info:
        folder_records(folder)
    assert str(info.value) == (
        f"{folder / 'b.json'}: scene must be a name (a non-empty string of at most 100 characters), got a JSON list "
        "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ...] (200000 items)"
    )
    out = tmp_path / "pairs.csv"
    line = _error(run_cli, ["candle", "pairs", folder, "--differ", "scene", "--n", 10, "--out", out])
    assert line == f"repscope: error: {info.value}"
    assert not out.exists()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"lights": 2}, "lights must be a name (a non-empty string of at most 100 characters), got a JSON int 2"),
        ({"scene": "x" * 101}, "scene must be a name (a non-empty string of at most 100 characters), got a string 'xx"),
        ({"scene": " "}, "scene must be a name (a non-empty string of at most 100 characters), got a string ' '"),
    ],
)
def test_a_candle_name_field_must_be_a_short_string(tmp_path, fields, message):
    folder = tmp_path / "candle"
    folder.mkdir()
    (folder / "a.json").write_text(_record(**fields))
    with pytest.raises(DataFormatError, match=f"^{re.escape(str(folder / 'a.json'))}: {re.escape(message)}"):
        folder_records(folder)


def test_a_new_scene_name_of_a_hundred_characters_is_still_a_class(tmp_path):
    folder = tmp_path / "candle"
    folder.mkdir()
    (folder / "a.json").write_text(_record(scene="Night_" + "x" * 94))
    records = folder_records(folder)
    assert records["scenes"][-1] == "night_" + "x" * 94 and records["factors"][0, 4] == 3


# --------------------------------------------------------------------------------------------------------------
# factor classes


def test_factor_classes_beyond_what_int64_holds_exactly_are_refused_naming_the_column(tmp_path, run_cli):
    rows = 20
    factors = np.stack([np.arange(rows) % 2, np.where(np.arange(rows) < 10, 1e30, 2e30)], axis=1)
    path = tmp_path / "big.npz"
    np.savez(path, factors=factors, codes=np.random.default_rng(0).normal(size=(rows, 2)))
    out = tmp_path / "scores.json"
    line = _error(run_cli, ["disentangle", "score", path, "--out", out])
    assert line == (
        f"repscope: error: {path}: 'factors' column 1 holds 1e+30 in row 0, beyond the floats within +-2**53 (the "
        "whole numbers a float holds exactly): two such classes could become one; number the classes 0, 1, 2, ..."
    )
    assert not out.exists()
    # just below 2**53 two classes two apart stay two classes, exactly
    near = np.stack([np.arange(rows) % 2, np.where(np.arange(rows) < 10, 2.0**53 - 4, 2.0**53 - 2)], axis=1)
    np.savez(path, factors=near, codes=np.ones((rows, 2)))
    assert sorted(set(read_codes_npz(path)[0][:, 1].tolist())) == [2**53 - 4, 2**53 - 2]


def test_an_unsigned_class_past_int64_is_refused_instead_of_wrapping_around():
    factors = np.array([[0], [2**63], [0], [2**63]], dtype=np.uint64)
    with pytest.raises(InvalidArgumentError, match=r"^factors: column 0 holds 9223372036854775808 in row 1, beyond "):
        check_factors_codes(factors, np.zeros((4, 1)))
    assert check_factors_codes(factors // 2, np.zeros((4, 1)))[0][:, 0].tolist() == [0, 2**62] * 2


def test_two_rows_per_class_are_refused_before_noise_scores_as_disentangled(tmp_path, run_cli):
    rng = np.random.default_rng(0)
    # 100 classes of 2 rows each: pure-noise codes scored IRS 0.81 on such a factor
    factors = np.repeat(np.arange(100), 2)[:, None]
    path = tmp_path / "pairs.npz"
    np.savez(path, factors=factors, codes=rng.normal(size=(200, 5)))
    out = tmp_path / "scores.json"
    line = _error(run_cli, ["disentangle", "score", path, "--metric", "irs", "--out", out])
    assert line == (
        f"repscope: error: {path}: 'factors' column 0 has 100 classes over 200 rows (2.00 rows per class); at least "
        "5 rows per class on average are needed, fewer make noise look disentangled (bin the factor or add rows)"
    )
    assert not out.exists()


# --------------------------------------------------------------------------------------------------------------
# a sweep resumed into a folder that never held one


def test_a_sweep_resumed_into_a_folder_of_other_files_is_refused_and_the_folder_left_as_it_was(
    tmp_path, run_cli, monkeypatch
):
    ran = []
    # a stand-in for the training of a point: were the refusal missing, the points would run (and write) at once
    monkeypatch.setattr(
        "repscope.studies.multimodal.train.sweep_point", lambda overrides, run_dir, *a, **k: ran.append(1)
    )
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my notes\n")
    line = _error(run_cli, ["mmvae", "sweep", "--quick", "--grid", "model=mvae,mmvae", "--resume", "--out", folder])
    assert line == (
        f"repscope: error: --resume: {folder} holds no sweep record (sweep.json), so it never held a sweep; give the "
        "folder of the sweep to continue, or another --out to start one"
    )
    assert [p.name for p in folder.iterdir()] == ["notes.txt"] and (folder / "notes.txt").read_text() == "my notes\n"
    assert ran == []


def test_a_sweep_folder_or_an_empty_one_may_be_resumed(tmp_path):
    check_holds_a_sweep(tmp_path / "not-yet")  # missing: a sweep stopped before it made its folder
    (tmp_path / "empty").mkdir()
    check_holds_a_sweep(tmp_path / "empty")
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text("{}")
    (sweep / "model=mvae").mkdir()
    check_holds_a_sweep(sweep)


# --------------------------------------------------------------------------------------------------------------
# user values echoed in an error


def test_shown_cuts_a_long_value_to_80_characters_with_its_length():
    assert shown("abc") == "'abc'"
    assert shown("a" * 10_000_000) == "'" + "a" * 80 + "'… (10000000 characters)"
    assert shown(list(range(200_000))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ...] (200000 items)"
    assert shown(2.5) == "2.5" and shown(None) == "None"
    assert len(shown(b"x" * 1000)) < 120 and shown(b"x" * 1000).endswith("(1000 bytes)")


def test_one_line_cuts_a_word_no_message_cut():
    assert one_line("model 'm'\n  is\tbad") == "model 'm' is bad"
    long = "/" + "d" * 1023
    assert one_line(f"path {long} missing") == f"path {long} missing"  # a long path stays whole
    assert one_line(f"name '{'x' * 5000}' unknown") == "name '" + "x" * 79 + "… (5002 characters) unknown"


def test_a_long_model_name_is_cut_in_the_error(tmp_path, run_cli):
    out = tmp_path / "run"
    line = _error(run_cli, ["train", "train-cnn5", "--set", "model.name=" + "m" * 1_000_000, "--out", out])
    assert line.startswith("repscope: error: model.name: unknown model '" + "m" * 80 + "'… (1000000 characters)")
    assert len(line) < 1000 and not out.exists()


def test_a_long_bad_caption_line_is_cut_in_the_error(tmp_path, run_cli):
    part = tmp_path / "outputs" / "text_to_image"
    part.mkdir(parents=True)
    (part / "truth.txt").write_text("square\n" + "q" * 10_000_000 + "\n")
    line = _error(run_cli, ["sprites", "evaluate", tmp_path / "outputs", "--level", 1, "--out", tmp_path / "ev"])
    assert line == (
        f"repscope: error: {part / 'truth.txt'}: line 2 '" + "q" * 80 + "'… (10000000 characters) is not a level-1 "
        "caption"
    )
    assert not (tmp_path / "ev").exists()

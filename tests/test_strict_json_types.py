"""Strict JSON of every value type the writer takes (:func:`repscope.fileio.dumps_json`): numpy scalars of
each kind, 0-d arrays, tuples, paths, non-string keys and non-finite numbers nested at known positions.
Each expected text is written out by hand: the value, its type as JSON shows it (``-7`` is not ``-7.0``,
``true`` is not ``1``) and the note beside every non-finite number."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import numpy as np
import pytest

from repscope.fileio import dumps_json, write_json_atomic


def strict_load(text: str):
    """json.loads that refuses the bare NaN / Infinity tokens Python's json would otherwise accept."""

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def compact(obj) -> str:
    return dumps_json(obj, indent=None)


def test_numpy_scalars_are_written_as_the_plain_numbers_they_hold():
    record = {
        "f64": np.float64(0.1),
        "f32": np.float32(0.1),  # the float32 nearest 0.1, printed as the double it is
        "f16": np.float16(0.1),
        "i64": np.int64(-7),
        "i8": np.int8(-128),
        "u64": np.uint64(2**64 - 1),  # beyond a double's integers: an int stays exact
        "yes": np.bool_(True),
        "no": np.bool_(False),
        "text": np.str_("ok"),
    }
    assert compact(record) == (
        '{"f64": 0.1, "f32": 0.10000000149011612, "f16": 0.0999755859375, "i64": -7, "i8": -128, '
        '"u64": 18446744073709551615, "yes": true, "no": false, "text": "ok"}'
    )


def test_non_finite_numpy_scalars_of_every_float_kind_are_null_with_their_note():
    record = {
        "half": np.float16(-np.inf),
        "single": np.float32(np.nan),
        "double": np.float64(np.inf),
        "long": np.longdouble("-inf"),
        "zero_d": np.array(np.nan, dtype=np.float32),
        "zero_d_int": np.array(3, dtype=np.int16),
        "zero_d_bool": np.array(True),
    }
    assert compact(record) == (
        '{"half": null, "half_not_finite": "-inf", "single": null, "single_not_finite": "nan", '
        '"double": null, "double_not_finite": "inf", "long": null, "long_not_finite": "-inf", '
        '"zero_d": null, "zero_d_not_finite": "nan", "zero_d_int": 3, "zero_d_bool": true}'
    )


def test_long_doubles_are_written_as_the_nearest_double():
    # numpy keeps long doubles (float80 / float128) as numpy scalars in tolist(); beyond a double's
    # range the value is infinite as a double, and noted so
    record = {
        "x": np.longdouble(0.1),
        "row": np.array([1.5, np.nan], dtype=np.longdouble),
        "huge": np.longdouble("1e4000"),
    }
    assert compact(record) == (
        '{"x": 0.1, "row": [1.5, null], "row_not_finite": {"[1]": "nan"}, "huge": null, "huge_not_finite": "inf"}'
    )
    with pytest.raises(TypeError, match="cannot write (clongdouble|complex)"):
        compact({"z": np.clongdouble(1 + 2j)})


def test_tuples_and_nested_lists_note_each_non_finite_number_at_its_position():
    record = {
        "pair": (1.5, float("-inf")),
        "deep": [[1, [np.float32(np.nan), 2]], (np.array([0.5, np.inf]),), []],
        # a mapping inside a list notes its own values; the list's note leaves them out
        "mixed": [(7, float("nan")), {"b": [np.float16(np.inf)]}],
    }
    assert compact(record) == (
        '{"pair": [1.5, null], "pair_not_finite": {"[1]": "-inf"}, '
        '"deep": [[1, [null, 2]], [[0.5, null]], []], "deep_not_finite": {"[0][1][0]": "nan", "[1][0][1]": "inf"}, '
        '"mixed": [[7, null], {"b": [null], "b_not_finite": {"[0]": "inf"}}], "mixed_not_finite": {"[0][1]": "nan"}}'
    )


def test_two_dimensional_arrays_note_row_then_column():
    grid = np.array([[0.0, 1.0, np.nan], [np.inf, 4.0, 5.0]])  # 2 x 3: [0][2] and [1][0], not [2][0]
    assert compact({"grid": grid}) == (
        '{"grid": [[0.0, 1.0, null], [null, 4.0, 5.0]], "grid_not_finite": {"[0][2]": "nan", "[1][0]": "inf"}}'
    )


def test_paths_are_written_as_their_text():
    record = {"run": Path("/data/runs/a b"), "posix": PurePosixPath("relative/x.npz"), "list": [Path("c")]}
    assert compact(record) == '{"run": "/data/runs/a b", "posix": "relative/x.npz", "list": ["c"]}'


def test_keys_are_written_as_json_writes_them_and_their_notes_follow():
    record = {np.int64(3): np.float32(np.inf), 0.5: "half", True: 1, None: 2, np.bool_(False): [np.nan]}
    # JSON's own spelling of a non-string key: true and null, not True and None
    assert compact(record) == (
        '{"3": null, "3_not_finite": "inf", "0.5": "half", "true": 1, "null": 2, '
        '"false": [null], "false_not_finite": {"[0]": "nan"}}'
    )
    plain = {3: "a", 0.5: "b", True: "c", None: "d"}
    assert compact(plain) == json.dumps(plain)


def test_a_bare_value_is_written_without_a_note():
    assert compact(np.float32(np.nan)) == "null"
    assert compact((np.int64(1), np.float64(np.inf))) == "[1, null]"
    assert compact(np.array([[np.bool_(True)]])) == "[[true]]"


def test_every_type_round_trips_through_a_strict_reader(tmp_path):
    record = {"a": (np.float16(-np.inf), np.uint8(255)), "b": Path("p"), "c": np.array(np.nan), 2: np.bool_(True)}
    path = tmp_path / "record.json"
    write_json_atomic(path, record)
    assert strict_load(path.read_text()) == {
        "a": [None, 255],
        "a_not_finite": {"[0]": "-inf"},
        "b": "p",
        "c": None,
        "c_not_finite": "nan",
        "2": True,
    }

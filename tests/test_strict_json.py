"""Every JSON file repscope writes is strict JSON: non-finite numbers become null with a note beside them."""

import json
import math

import numpy as np
import pytest

from repscope.fileio import dumps_json, write_json_atomic


def strict_load(text: str):
    """json.loads that refuses the bare NaN / Infinity tokens Python's json would otherwise accept."""

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_are_null_with_what_they_were_beside_them(tmp_path):
    record = {
        "irs": float("nan"),
        "uc": 0.5,
        "per_factor": np.array([0.25, np.inf, -np.inf]),
        "nested": {"mig": np.float32("nan"), "n": np.int64(3)},
        "rows": [[1.0, float("nan")], [float("inf"), 2.0]],
    }
    path = tmp_path / "result.json"
    write_json_atomic(path, record)
    loaded = strict_load(path.read_text())
    assert loaded["irs"] is None and loaded["irs_not_finite"] == "nan"
    assert loaded["uc"] == 0.5 and "uc_not_finite" not in loaded
    assert loaded["per_factor"] == [0.25, None, None]
    assert loaded["per_factor_not_finite"] == {"[1]": "inf", "[2]": "-inf"}
    assert loaded["nested"] == {"mig": None, "mig_not_finite": "nan", "n": 3}
    assert loaded["rows"] == [[1.0, None], [None, 2.0]]
    assert loaded["rows_not_finite"] == {"[0][1]": "nan", "[1][0]": "inf"}
    # the note follows the value it explains
    keys = list(loaded)
    assert keys.index("irs_not_finite") == keys.index("irs") + 1


def test_finite_records_are_written_exactly_as_json_would():
    record = {"a": 1, "b": [0.1, 2.5e-300, 1e308], "c": "x", "d": None, "e": True, 3: "int key"}
    assert json.loads(dumps_json(record)) == json.loads(json.dumps(record))


def test_a_key_already_named_like_the_note_is_kept():
    loaded = strict_load(dumps_json({"x": math.nan, "x_not_finite": "given"}))
    assert loaded == {"x": None, "x_not_finite": "given"}


def test_objects_json_cannot_hold_are_refused():
    with pytest.raises(TypeError, match="set"):
        dumps_json({"a": {1, 2}})

"""The run directory: creation rules, atomic writers and their round trips."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import repscope
from repscope.errors import InvalidArgumentError, OutputExistsError
from repscope.fileio import TEMP_PREFIX
from repscope.report.figures import PNG_SIGNATURE, new_figure
from repscope.run_directory import RunDirectory, to_plain, validate_name

NOW = datetime(2024, 5, 17, 9, 3, 7)


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _small_figure():
    fig = new_figure(2, 1.5)
    ax = fig.add_subplot()
    ax.plot([0, 1, 2], [1, 0, 1])
    return fig


# -- creation ---------------------------------------------------------------------------------


def test_default_names_are_distinct_at_the_same_time(tmp_path):
    first = RunDirectory.create("demo", root=tmp_path / "runs", now=NOW)
    second = RunDirectory.create("demo", root=tmp_path / "runs", now=NOW)
    third = RunDirectory.create("demo", root=tmp_path / "runs", now=NOW)
    assert first.root.name == "demo-20240517-090307"
    assert second.root.name == "demo-20240517-090307-2"
    assert third.root.name == "demo-20240517-090307-3"
    assert all(run.root.is_dir() for run in (first, second, third))


def test_default_name_skips_an_existing_empty_folder(tmp_path):
    (tmp_path / "demo-20240517-090307").mkdir()
    run = RunDirectory.create("demo", root=tmp_path, now=NOW)
    assert run.root.name == "demo-20240517-090307-2"


def test_refuses_non_empty_out_and_leaves_it_untouched(tmp_path):
    out = tmp_path / "previous"
    (out / "tables").mkdir(parents=True)
    (out / "metrics.json").write_text('{"accuracy": 0.9}\n')
    (out / "tables" / "scores.csv").write_text("a\n1\n")
    before = _snapshot(out)

    with pytest.raises(OutputExistsError, match="previous") as info:
        RunDirectory.create("demo", out=out)
    assert "--overwrite" in str(info.value) and "--resume" not in str(info.value)  # demo runs cannot resume
    with pytest.raises(OutputExistsError, match="previous") as info:
        RunDirectory.create("train", out=out, resumable=True)
    assert "--resume" in str(info.value)
    assert _snapshot(out) == before
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "tables"]


def test_out_that_is_a_file_is_refused(tmp_path):
    out = tmp_path / "results"
    out.write_text("keep me")
    with pytest.raises(OutputExistsError, match="not a directory"):
        RunDirectory.create("demo", out=out)
    assert out.read_text() == "keep me"


def test_out_missing_or_empty_is_used(tmp_path):
    missing = tmp_path / "deep" / "new"
    assert RunDirectory.create("demo", out=missing).root == missing
    assert missing.is_dir()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert RunDirectory.create("demo", out=empty).root == empty


def test_resume_reopens_and_records_existing_outputs(tmp_path):
    run = RunDirectory.create("train", out=tmp_path / "run")
    run.write_table("losses", pd.DataFrame({"epoch": [0, 1], "loss": [1.0, 0.5]}))
    run.save_figure("curve", _small_figure())
    (run.root / "tables" / f"{TEMP_PREFIX}half.csv.x").write_text("interrupted")

    resumed = RunDirectory.create("train", out=tmp_path / "run", resume=True)
    assert resumed.tables == {"losses": run.root / "tables" / "losses.csv"}
    assert resumed.figures == {"curve": run.root / "figures" / "curve.png"}


def test_resume_without_out_is_an_error(tmp_path):
    with pytest.raises(InvalidArgumentError, match="resume"):
        RunDirectory.create("demo", root=tmp_path, resume=True)


@pytest.mark.parametrize("kind", ["", "../up", "a/b", ".hidden"])
def test_kind_is_validated(tmp_path, kind):
    with pytest.raises(InvalidArgumentError, match="kind"):
        RunDirectory.create(kind, root=tmp_path, now=NOW)
    assert list(tmp_path.iterdir()) == []


# -- writers ----------------------------------------------------------------------------------


def test_write_table_round_trip(tmp_path):
    run = RunDirectory.create("demo", out=tmp_path / "run")
    df = pd.DataFrame(
        {
            "label": np.arange(5, dtype=np.int64),
            "thickness": [1.0 / 3.0, 2.718281828459045, np.nan, -1e-12, 123456789.123],
            "set": ["plain", "thin", "thic", "swel", "frac, with comma"],
            "valid": [True, False, True, True, False],
        }
    )
    path = run.write_table("morphometrics", df)
    assert path == run.root / "tables" / "morphometrics.csv"
    pd.testing.assert_frame_equal(pd.read_csv(path), df, check_dtype=False)
    assert pd.read_csv(path)["thickness"].tolist()[:2] == df["thickness"].tolist()[:2]  # full precision
    assert run.tables == {"morphometrics": path}


def test_write_config_round_trip_with_version_and_order(tmp_path):
    run = RunDirectory.create("demo", out=tmp_path / "run")
    config = {
        "study": "morpho-demo",
        "seed": np.int64(7),
        "lr": np.float32(0.1),
        "sizes": (np.int32(3), 4),
        "weights": np.array([0.5, 0.25]),
        "data": {"source": Path("/data/mnist"), "flag": np.bool_(True), "train_size": 600},
        "note": None,
    }
    path = run.write_config(config)
    loaded = yaml.safe_load(path.read_text())
    expected = {
        "study": "morpho-demo",
        "seed": 7,
        "lr": 0.1,
        "sizes": [3, 4],
        "weights": [0.5, 0.25],
        "data": {"source": "/data/mnist", "flag": True, "train_size": 600},
        "note": None,
        "repscope_version": repscope.__version__,
    }
    assert loaded == expected
    assert list(loaded) == list(config) + ["repscope_version"]
    assert list(loaded["data"]) == ["source", "flag", "train_size"]
    assert "!!" not in path.read_text()  # no python-specific YAML tags


def test_write_config_with_unwritable_value_keeps_previous_file(tmp_path):
    run = RunDirectory.create("demo", out=tmp_path / "run")
    run.write_config({"seed": 1})
    before = run.config_path.read_bytes()
    with pytest.raises(InvalidArgumentError, match=r"config\.model\.layer"):
        run.write_config({"seed": 2, "model": {"layer": object()}})
    assert run.config_path.read_bytes() == before
    assert [p.name for p in run.root.iterdir()] == ["config.yaml"]  # no temporary file left


def test_write_metrics_round_trip(tmp_path):
    run = RunDirectory.create("demo", out=tmp_path / "run")
    metrics = {"digits": {"train": np.int64(600)}, "ratio": np.float64(1.98), "per_class": np.array([1, 2])}
    path = run.write_metrics(metrics)
    assert json.loads(path.read_text()) == {"digits": {"train": 600}, "ratio": 1.98, "per_class": [1, 2]}


def test_save_figure_writes_png_and_records_it(tmp_path):
    run = RunDirectory.create("demo", out=tmp_path / "run")
    path = run.save_figure("curve.png", _small_figure())
    assert path == run.root / "figures" / "curve.png"
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (220, 165)  # 2 x 1.5 inches at 110 dpi
    run.write_table("t", pd.DataFrame({"a": [1]}))
    assert list(run.figures) == ["curve"] and list(run.tables) == ["t"]
    assert not any(p.name.startswith(TEMP_PREFIX) for p in run.root.rglob("*"))


def test_save_figure_closes_a_pyplot_figure(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    fig = plt.figure()
    number = fig.number
    RunDirectory.create("demo", out=tmp_path / "run").save_figure("f", fig)
    assert number not in plt.get_fignums()


@pytest.mark.parametrize("bad", ["../escape", "a/b", "a\\b", "", ".hidden", "x..y", 3])
def test_names_are_validated(tmp_path, bad):
    run = RunDirectory.create("demo", out=tmp_path / "run")
    with pytest.raises(InvalidArgumentError, match="name"):
        run.write_table(bad, pd.DataFrame({"a": [1]}))
    with pytest.raises(InvalidArgumentError, match="name"):
        run.save_figure(bad, _small_figure())
    assert list(run.root.iterdir()) == []
    assert not (tmp_path / "escape.csv").exists()


def test_path_stays_inside_the_run(tmp_path):
    run = RunDirectory.create("demo", out=tmp_path / "run")
    assert run.path("dataset", "plain") == run.root / "dataset" / "plain"
    assert run.path() == run.root
    assert not (run.root / "dataset").exists()  # nothing created
    for parts in (("..", "x"), ("a/../../x",), (os.path.abspath(os.sep),)):
        with pytest.raises(InvalidArgumentError, match="parts"):
            run.path(*parts)


def test_checkpoints_folder_and_report_path(tmp_path):
    run = RunDirectory.create("train", out=tmp_path / "run")
    assert run.checkpoints == run.root / "checkpoints" and run.checkpoints.is_dir()
    assert run.report_path == run.root / "report.html"
    assert os.fspath(run) == os.fspath(run.root)


def test_validate_name_and_to_plain_helpers():
    assert validate_name("plain_medians-per.class") == "plain_medians-per.class"
    with pytest.raises(InvalidArgumentError, match="table_name"):
        validate_name("a/b", "table_name")
    assert to_plain({np.int64(1): np.float32(0.25)}) == {1: 0.25}
    assert type(to_plain(np.float64(0.5))) is float

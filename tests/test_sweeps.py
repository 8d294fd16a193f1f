"""The sweep runner: grid expansion, run directories and markers, restarts, failures, workers, Ray.

The target functions live in this module: worker processes (spawned) import it by name through the
``sys.path`` they inherit from pytest, and Ray trials through ``runtime_env`` (``PYTHONPATH``).
Each call appends a line to ``<log>/<point>.calls`` so a test can count the calls.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.resources import THREADS_ENV, usable_cores
from repscope.sweeps import DONE_MARKER, SweepPoint, expand_grid, point_name, run_sweep

TARGET = f"{__name__}:record_point"
TESTS_DIR = str(Path(__file__).resolve().parent)


def record_point(
    overrides: list[str],
    run_dir: Path,
    resume: bool,
    *,
    log: str,
    pause: float = 0.0,
    report_threads: bool = False,
    config: dict | None = None,
) -> dict:
    """A tiny run: writes ``output.txt`` and returns ``score = 100 * level + seed`` (model 'bad' raises);
    with ``report_threads`` also the torch thread count its process was given; ``config`` is not read."""
    values = dict(item.split("=", 1) for item in overrides)
    with open(Path(log) / f"{run_dir.name}.calls", "a") as handle:
        handle.write(f"resume={resume}\n")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "started").write_text("1")
    if values.get("model") == "bad":
        raise ValueError(f"no such model for seed {values['seed']}")
    if values.get("model") == "slow":
        time.sleep(pause)
    if values.get("model") == "ctrl-c":
        raise KeyboardInterrupt
    (run_dir / "output.txt").write_text(" ".join(overrides))
    score = 100 * int(values.get("data.level", 0)) + int(values["seed"])
    row = {"score": score, "half": score / 2, "model_name": values["model"], "resumed": resume}
    if report_threads:
        row.update(threads=int(os.environ.get(THREADS_ENV, 0)), omp=int(os.environ.get("OMP_NUM_THREADS", 0)))
    return row


def return_list(overrides: list[str], run_dir: Path, resume: bool) -> dict:
    return {"values": [1, 2]}


def return_override_key(overrides: list[str], run_dir: Path, resume: bool) -> dict:
    return {"seed": 3}


def calls(log: Path, name: str) -> list[str]:
    path = log / f"{name}.calls"
    return path.read_text().split() if path.exists() else []


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "log"
    path.mkdir()
    return path


GRID = ["model=mvae,mmvae", "data.level=1,2", "seed=0,1"]


# -- grid -----------------------------------------------------------------------------------------


def test_expand_grid_order_and_names():
    points = expand_grid(GRID)
    assert [point.name for point in points] == [
        "model-mvae_data.level-1_seed-0",
        "model-mvae_data.level-1_seed-1",
        "model-mvae_data.level-2_seed-0",
        "model-mvae_data.level-2_seed-1",
        "model-mmvae_data.level-1_seed-0",
        "model-mmvae_data.level-1_seed-1",
        "model-mmvae_data.level-2_seed-0",
        "model-mmvae_data.level-2_seed-1",
    ]
    assert points[5].overrides == (("model", "mmvae"), ("data.level", "1"), ("seed", "1"))
    assert points[5].as_set_arguments() == ["model=mmvae", "data.level=1", "seed=1"]
    # blanks around keys and values are dropped; the name depends only on the overrides
    assert expand_grid([" seed = 0 , 1 "]) == [
        SweepPoint("seed-0", (("seed", "0"),)),
        SweepPoint("seed-1", (("seed", "1"),)),
    ]
    assert point_name(points[5].overrides) == points[5].name


def test_point_names_stay_unique_and_safe_for_awkward_values():
    # without the hash these two would both read a-1_b-2_b-3
    first = point_name((("a", "1_b-2"), ("b", "3")))
    second = point_name((("a", "1"), ("b", "2_b-3")))
    assert first != second
    paths = expand_grid(["path=data/a b,data/a_b,data-a-b"])
    names = [point.name for point in paths]
    assert len(set(names)) == 3
    assert names[2] == "path-data-a-b"  # a safe value is kept as it is
    for name in names:
        assert "/" not in name and " " not in name
    # the others keep their safe characters, then '~' and a hash of the exact value
    assert names[0].startswith("path-data-a-b~") and names[1].startswith("path-data-a-b~")
    assert expand_grid(["path=data/a b"])[0].name == names[0]  # stable
    # long grids give names a file system takes
    long = point_name(tuple((f"key{i}", "v" * 30) for i in range(20)))
    assert len(long) <= 180
    assert long != point_name(tuple((f"key{i}", "v" * 30) for i in range(19)) + (("key19", "w" * 30),))


@pytest.mark.parametrize(
    ("grid", "expected"),
    [
        ([], "at least one"),
        (["model"], "no '='"),
        (["=a,b"], "empty key"),
        (["model="], "lists no values"),
        (["model=a,,b"], "empty value"),
        (["model=a,"], "empty value"),
        (["seed=0", "seed=1"], "given twice"),
        (["seed=0,1,0"], "more than once"),
        (["my key=1"], "must start with"),
    ],
)
def test_expand_grid_errors_name_the_option(grid, expected):
    with pytest.raises(InvalidArgumentError, match=expected) as info:
        expand_grid(grid)
    assert str(info.value).startswith("--grid:")


# -- sequential sweeps ----------------------------------------------------------------------------


def test_sequential_sweep_writes_runs_markers_and_summary(tmp_path, log):
    points = expand_grid(GRID)
    result = run_sweep(points, TARGET, tmp_path / "sweep", common={"log": str(log)}, progress=False)
    out = tmp_path / "sweep"
    assert result.ok and result.failed == [] and result.ran == [point.name for point in points]
    for point in points:
        run_dir = out / point.name
        assert (run_dir / "output.txt").read_text() == " ".join(point.as_set_arguments())
        marker = json.loads((run_dir / DONE_MARKER).read_text())
        assert marker["overrides"] == [list(pair) for pair in point.overrides]
        values = dict(point.overrides)
        assert marker["row"]["score"] == 100 * int(values["data.level"]) + int(values["seed"])
        assert calls(log, point.name) == ["resume=False"]

    table = pd.read_csv(out / "summary.csv")
    assert list(table.columns) == [
        "name",
        "model",
        "data.level",
        "seed",
        "status",
        "score",
        "half",
        "model_name",
        "resumed",
    ]
    assert list(table["name"]) == [point.name for point in points]
    assert list(table["score"]) == [100, 101, 200, 201, 100, 101, 200, 201]
    assert list(table["half"]) == [50.0, 50.5, 100.0, 100.5, 50.0, 50.5, 100.0, 100.5]
    assert list(table["model"]) == ["mvae"] * 4 + ["mmvae"] * 4
    assert set(table["status"]) == {"done"}
    assert list(result.summary["score"]) == list(table["score"])
    markdown = (out / "summary.md").read_text()
    assert "| model-mmvae_data.level-2_seed-1 | mmvae | 2 | 1 | done | 201 | 100.5 | mmvae | False |" in markdown

    record = json.loads((out / "sweep.json").read_text())
    assert record["target"] == TARGET and record["finished"] and record["interrupted"] is False
    assert record["counts"] == {"points": 8, "done": 8, "failed": 0}
    assert [entry["status"] for entry in record["points"]] == ["done"] * 8
    assert record["points"][2]["overrides"] == {"model": "mvae", "data.level": "2", "seed": "0"}


def test_restart_skips_finished_points_and_resumes_an_interrupted_one(tmp_path, log):
    points = expand_grid(["model=mvae", "seed=0,1,2"])
    out = tmp_path / "sweep"
    first = run_sweep(points, TARGET, out, common={"log": str(log)}, progress=False)
    # seed 1 as if interrupted: its directory holds files but no marker
    (out / points[1].name / DONE_MARKER).unlink()
    second = run_sweep(points, TARGET, out, common={"log": str(log)}, progress=False)
    assert calls(log, points[0].name) == ["resume=False"]  # not called again
    assert calls(log, points[2].name) == ["resume=False"]
    assert calls(log, points[1].name) == ["resume=False", "resume=True"]
    assert second.ran == [points[1].name] and second.reused == [points[0].name, points[2].name]
    assert list(second.summary["resumed"]) == [False, True, False]
    assert list(second.summary["score"]) == list(first.summary["score"]) == [0, 1, 2]
    # a third run has nothing left to do
    third = run_sweep(points, TARGET, out, common={"log": str(log)}, progress=False)
    assert third.ran == [] and third.summary.equals(second.summary)
    assert sum(len(calls(log, point.name)) for point in points) == 4


def test_a_restart_with_other_settings_or_points_is_refused_naming_them(tmp_path, log):
    points = expand_grid(["model=mvae", "seed=0,1"])
    out = tmp_path / "sweep"
    common = {"log": str(log), "config": {"lr": 0.1, "trainer": {"devices": 1, "max_epochs": 3}, "workers": 1}}
    run_sweep(points, TARGET, out, common=common, progress=False)
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    # the devices say where the points train (they may change); the epochs what they learn
    changed = {**common, "config": {**common["config"], "trainer": {"devices": 2, "max_epochs": 4}}}
    with pytest.raises(InvalidArgumentError, match=r"was started with config\.trainer\.max_epochs 3, now 4 \(") as info:
        run_sweep(points, TARGET, out, common=changed, progress=False)
    assert "devices 1" not in str(info.value)
    with pytest.raises(InvalidArgumentError, match="with the grid model=mvae seed=0,1, not model=mvae seed=0,2"):
        run_sweep(expand_grid(["model=mvae", "seed=0,2"]), TARGET, out, common=common, progress=False)
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before  # nothing ran
    assert sum(len(calls(log, point.name)) for point in points) == 2
    # a caller's own identity, and what its messages call a setting
    labels = {"lr": "the learning rate", "points": "--grid"}
    run_sweep(points[:1], TARGET, tmp_path / "b", common=common, identity={"lr": 0.1}, labels=labels, progress=False)
    with pytest.raises(InvalidArgumentError, match=r"started with the learning rate 0.1, now 0.5 \("):
        run_sweep(points[:1], TARGET, tmp_path / "b", common=common, identity={"lr": 0.5}, labels=labels)
    with pytest.raises(InvalidArgumentError, match="started with --grid model=mvae seed=0, not model=mvae seed=0,1"):
        run_sweep(points, TARGET, tmp_path / "b", common=common, identity={"lr": 0.1}, labels=labels)
    # how the work is spread may change (at any depth), and so may the order of the points
    spread = {**common, "config": {**common["config"], "workers": 4}}
    again = run_sweep(points[::-1], TARGET, out, common=spread, progress=False)
    assert again.ran == [] and sorted(again.reused) == sorted(point.name for point in points)
    stored = json.loads((out / "sweep.json").read_text())
    assert stored["identity"] == {"log": str(log), "config": {"lr": 0.1, "trainer": {"devices": 1, "max_epochs": 3}}}
    # a record written before identities were stored is compared by its common arguments
    del stored["identity"]
    (out / "sweep.json").write_text(json.dumps(stored))
    with pytest.raises(InvalidArgumentError, match=r"started with config\.lr 0.1, now 0.2 \("):
        run_sweep(points, TARGET, out, common={**common, "config": {**common["config"], "lr": 0.2}}, identity={"x": 1})
    assert run_sweep(points, TARGET, out, common=common, identity={"x": 1}, progress=False).ran == []


def test_failing_point_is_reported_and_the_others_finish(tmp_path, log):
    points = expand_grid(["model=mvae,bad", "seed=0,1"])
    out = tmp_path / "sweep"
    result = run_sweep(points, TARGET, out, common={"log": str(log)}, progress=False)
    assert not result.ok
    assert [failure.name for failure in result.failed] == ["model-bad_seed-0", "model-bad_seed-1"]
    assert result.failed[1].error_type == "ValueError"
    assert result.failed[1].message == "no such model for seed 1"
    assert result.status == {
        "model-mvae_seed-0": "done",
        "model-mvae_seed-1": "done",
        "model-bad_seed-0": "failed",
        "model-bad_seed-1": "failed",
    }
    assert not (out / "model-bad_seed-0" / DONE_MARKER).exists()
    table = pd.read_csv(out / "summary.csv")
    assert list(table["status"]) == ["done", "done", "failed", "failed"]
    assert table["score"].isna().tolist() == [False, False, True, True]
    record = json.loads((out / "sweep.json").read_text())
    assert record["points"][2]["error"] == {"type": "ValueError", "message": "no such model for seed 0"}
    assert "`model-bad_seed-1`: ValueError: no such model for seed 1" in (out / "summary.md").read_text()
    # a failed point runs again on restart (resumed: it left files), the finished ones do not
    run_sweep(points, TARGET, out, common={"log": str(log)}, progress=False)
    assert calls(log, "model-bad_seed-0") == ["resume=False", "resume=True"]
    assert calls(log, "model-mvae_seed-0") == ["resume=False"]


def test_rows_that_are_not_flat_scalars_fail_the_point(tmp_path):
    points = expand_grid(["seed=0"])
    listed = run_sweep(points, f"{__name__}:return_list", tmp_path / "a", progress=False)
    assert listed.failed[0].error_type == "InvalidArgumentError" and "'values' is list" in listed.failed[0].message
    clash = run_sweep(points, f"{__name__}:return_override_key", tmp_path / "b", progress=False)
    assert "clashes" in clash.failed[0].message


def test_bad_arguments_are_named(tmp_path, log):
    points = expand_grid(["seed=0"])
    with pytest.raises(InvalidArgumentError, match="^target:"):
        run_sweep(points, "no_colon", tmp_path / "a")
    with pytest.raises(InvalidArgumentError, match="^target: cannot import"):
        run_sweep(points, "repscope.no_such_module:f", tmp_path / "a")
    with pytest.raises(InvalidArgumentError, match="^--workers"):
        run_sweep(points, TARGET, tmp_path / "a", workers=0)
    with pytest.raises(InvalidArgumentError, match="^--address"):
        run_sweep(points, TARGET, tmp_path / "a", address="auto")
    with pytest.raises(InvalidArgumentError, match="^--backend"):
        run_sweep(points, TARGET, tmp_path / "a", backend="slurm")
    with pytest.raises(InvalidArgumentError, match="^points:"):
        run_sweep(points + points, TARGET, tmp_path / "a")
    with pytest.raises(InvalidArgumentError, match="^--gpus-per-run: only with --backend ray"):
        run_sweep(points, TARGET, tmp_path / "a", gpus_per_run=0.25)
    for share in (0, -1, 1.5, True):
        with pytest.raises(InvalidArgumentError, match="^--gpus-per-run: expected a share"):
            run_sweep(points, TARGET, tmp_path / "a", backend="ray", gpus_per_run=share)
    assert not (tmp_path / "a").exists()  # refused before anything is written
    run_sweep(points, TARGET, tmp_path / "b", common={"log": str(log)}, progress=False)
    with pytest.raises(InvalidArgumentError, match="^--out: .* holds a sweep of"):
        run_sweep(points, f"{__name__}:return_list", tmp_path / "b")
    (tmp_path / "b" / "seed-0" / DONE_MARKER).write_text("{not json")
    with pytest.raises(DataFormatError, match=DONE_MARKER):
        run_sweep(points, TARGET, tmp_path / "b", common={"log": str(log)})


def test_interrupt_in_process_keeps_finished_markers_only(tmp_path, log):
    points = expand_grid(["model=mvae,ctrl-c,mmvae", "seed=0"])
    out = tmp_path / "sweep"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(points, TARGET, out, common={"log": str(log)}, progress=False)
    assert (out / "model-mvae_seed-0" / DONE_MARKER).exists()
    assert not (out / "model-ctrl-c_seed-0" / DONE_MARKER).exists()
    assert calls(log, "model-mmvae_seed-0") == []
    record = json.loads((out / "sweep.json").read_text())
    assert record["interrupted"] is True and record["finished"] is None
    assert [entry["status"] for entry in record["points"]] == ["done", "pending", "pending"]
    assert list(pd.read_csv(out / "summary.csv")["status"]) == ["done", "pending", "pending"]


# -- worker processes -----------------------------------------------------------------------------


def test_two_workers_give_the_summary_of_one(tmp_path, log, monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    points = expand_grid(["model=mvae,bad,mmvae", "data.level=1,2", "seed=3"])
    common = {"log": str(log), "report_threads": True}
    one = run_sweep(points, TARGET, tmp_path / "one", common=common, progress=False)
    two = run_sweep(points, TARGET, tmp_path / "two", common=common, workers=2, progress=False)
    threads = ["threads", "omp"]
    assert two.summary.drop(columns=threads).equals(one.summary.drop(columns=threads))
    assert list(two.summary.columns) == list(one.summary.columns)
    # in this process nothing is set; each of the two workers gets half the cores for torch
    assert one.summary["threads"].dropna().tolist() == [0, 0, 0, 0]
    expected = max(1, usable_cores() // 2)
    assert two.summary["threads"].dropna().tolist() == two.summary["omp"].dropna().tolist() == [expected] * 4
    assert list(two.summary["score"].fillna(-1)) == [103, 203, -1, -1, 103, 203]
    assert [failure.message for failure in two.failed] == ["no such model for seed 3"] * 2
    for point in points:
        assert len(calls(log, point.name)) == 2  # once by each sweep


def test_ctrl_c_stops_the_workers(tmp_path, log, monkeypatch):
    """SIGINT while a worker sleeps: the sweep ends at once, the sleeping point has no marker."""
    points = expand_grid(["model=mmvae,slow", "seed=0"])
    out = tmp_path / "sweep"
    started = out / "model-slow_seed-0" / "started"

    def interrupt_when_started() -> None:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    clock = time.monotonic()
    try:
        threading.Thread(target=interrupt_when_started, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_sweep(points, TARGET, out, common={"log": str(log), "pause": 120.0}, workers=2, progress=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - clock < 60  # the 120 s sleep was cut short: the worker was stopped
    assert started.exists() and not (out / "model-slow_seed-0" / DONE_MARKER).exists()
    assert json.loads((out / "sweep.json").read_text())["interrupted"] is True


# -- Ray ------------------------------------------------------------------------------------------


def test_ray_backend_gives_the_local_summary(tmp_path, log, monkeypatch):
    pytest.importorskip("ray", reason="the Ray backend needs the optional extra: pip install 'repscope[ray]'")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # Ray's local instance must not write there (auth token, results)
    points = expand_grid(["model=mvae,bad", "seed=0,1"])
    local = run_sweep(points, TARGET, tmp_path / "local", common={"log": str(log)}, progress=False)
    ray_result = run_sweep(
        points,
        TARGET,
        tmp_path / "ray",
        common={"log": str(log)},
        backend="ray",
        workers=2,
        runtime_env={"env_vars": {"PYTHONPATH": TESTS_DIR}},
        progress=False,
    )
    assert (tmp_path / "ray" / "summary.csv").read_bytes() == (tmp_path / "local" / "summary.csv").read_bytes()
    assert ray_result.summary.equals(local.summary)
    assert [failure.name for failure in ray_result.failed] == ["model-bad_seed-0", "model-bad_seed-1"]
    assert (tmp_path / "ray" / "model-mvae_seed-1" / DONE_MARKER).exists()
    record = json.loads((tmp_path / "ray" / "sweep.json").read_text())
    assert record["backend"] == "ray" and record["counts"] == {"points": 4, "done": 2, "failed": 2}
    # a restart with fewer points is refused before Ray starts; one with the same points skips the finished ones
    with pytest.raises(InvalidArgumentError, match="with the grid model=mvae,bad seed=0,1, not model=mvae seed"):
        run_sweep(points[:2], TARGET, tmp_path / "ray", common={"log": str(log)}, backend="ray", progress=False)
    again = run_sweep(
        points,
        TARGET,
        tmp_path / "ray",
        common={"log": str(log)},
        backend="ray",
        runtime_env={"env_vars": {"PYTHONPATH": TESTS_DIR}},
        progress=False,
    )
    assert again.reused == ["model-mvae_seed-0", "model-mvae_seed-1"]
    assert calls(log, "model-mvae_seed-0") == ["resume=False", "resume=False"]  # local once, Ray once
    assert list(home.iterdir()) == []


def test_the_ray_backend_without_ray_is_one_line_naming_the_extra(tmp_path, log, monkeypatch):
    """Runs where the ray extra is missing too: import ray fails, the sweep says how to install it."""
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    points = expand_grid(["model=mvae", "seed=0"])
    expected = r"^--backend ray: Ray is not installed; pip install 'repscope\[ray\]'"
    with pytest.raises(InvalidArgumentError, match=expected):
        run_sweep(points, TARGET, tmp_path / "out", common={"log": str(log)}, backend="ray")
    assert list(log.iterdir()) == []  # no point ran
    assert not (tmp_path / "out").exists()  # refused before the sweep's folder and records are written


def test_a_ray_address_where_no_cluster_answers_is_one_line_naming_it(tmp_path, log, monkeypatch):
    ray = pytest.importorskip("ray", reason="the Ray backend needs the optional extra: pip install 'repscope[ray]'")

    def no_cluster(*args, **kwargs):  # what ray.init(address="auto") raises with no instance running
        raise ConnectionError("Could not find any running Ray instance.")

    monkeypatch.setattr(ray, "init", no_cluster)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    points = expand_grid(["model=mvae", "seed=0"])
    with pytest.raises(InvalidArgumentError, match=r"^--address auto: no Ray cluster answers there") as info:
        run_sweep(points, TARGET, tmp_path / "out", common={"log": str(log)}, backend="ray", address="auto")
    assert "ray start --head" in str(info.value) and "\n" not in str(info.value)

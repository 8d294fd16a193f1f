"""Bad inputs of ``repscope invariance``: assessor files that cannot carry code, early refusal of broken
``--assessor`` and ``--model`` files, ``repo build --resume`` with changed settings, broken variance matrices."""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.studies.invariance import testing
from repscope.studies.invariance.assess_reference import reference_assessors
from repscope.studies.invariance.assessor_files import ASSESSOR_FILE, load_assessors, save_assessors, verdict
from repscope.studies.invariance.assessor_models import assessors
from repscope.studies.invariance.repo import RepoConfig, build_repository, check_resume

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class _Marker:
    """Creates its marker file when unpickled (a pickle payload) or when its state is set (a skops payload)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


class _SkopsMarker:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __setstate__(self, state):
        Path(state["marker"]).touch()
        self.__dict__.update(state)

    def predict(self, features):  # looks like an estimator
        return np.zeros(len(features), dtype=int)


def _fitted(factory, seed=3):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(40, 4)) * np.array([1.0, 2.0, 0.5, 3.0])
    labels = ((features[:, 0] - 0.3 * features[:, 3]) > 0.1).astype(int)
    return {name: model.fit(features, labels) for name, model in factory(seed).items()}, features


def _payload(fitted, transform="rotation"):
    columns = ["max@CONF:mean", "max@CONV-1:std", "mean@CONV-2:asymmetry", "max@CONV-2:discontinuity"]
    return {"assessors": fitted, "columns": columns, "transform": transform, "compat": "paper"}


def _one_line_error(code, err, *needles):
    lines = err.strip().splitlines()
    assert code != 0 and len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("factory", [assessors, reference_assessors])
def test_assessors_round_trip_predict_the_same(tmp_path, factory):
    fitted, features = _fitted(factory)
    path = save_assessors(tmp_path / ASSESSOR_FILE, _payload(fitted))
    assert zipfile.is_zipfile(path)  # skops: an archive of JSON and arrays, no pickle stream
    back = load_assessors(path)
    assert back["columns"] == _payload(fitted)["columns"] and back["transform"] == "rotation"
    probe = np.random.default_rng(9).normal(size=(25, 4)) * 2.0
    for name, model in fitted.items():
        np.testing.assert_array_equal(back["assessors"][name].predict(probe), model.predict(probe))
        np.testing.assert_array_equal(back["assessors"][name].predict(features), model.predict(features))
    # the verdict reads the columns by name, in the saved order
    row = probe[0]
    flat = {"max@CONF": {"mean": row[0]}, "max@CONV-1": {"std": row[1]}, "mean@CONV-2": {"asymmetry": row[2]}}
    flat["max@CONV-2"] = {"discontinuity": row[3]}
    expected = {}
    for name, model in fitted.items():
        output = model.predict(row[None, :])
        expected[name] = int(output[0] >= 0.5) if output.dtype.kind == "f" else int(output[0])
    assert verdict(path, flat, "rotation") == expected
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temporary file


def test_a_pickle_is_refused_without_running_its_code(tmp_path):
    marker = tmp_path / "ran.txt"
    crafted = tmp_path / "assessors.joblib"
    crafted.write_bytes(pickle.dumps({"assessors": _Marker(str(marker))}))
    with pytest.raises(DataFormatError) as info:
        load_assessors(crafted)
    message = str(info.value)
    assert str(crafted) in message and "pickle" in message and "repscope invariance assess train" in message
    assert not marker.exists()


def test_a_skops_file_with_a_foreign_type_is_refused_without_running_its_code(tmp_path):
    import skops.io as sio

    marker = tmp_path / "ran.txt"
    fitted, _ = _fitted(assessors)
    payload = _payload({**fitted, "evil": _SkopsMarker(str(marker))})
    crafted = tmp_path / "crafted.skops"
    sio.dump(payload, crafted)
    assert not marker.exists()
    with pytest.raises(DataFormatError) as info:
        load_assessors(crafted)
    assert str(crafted) in str(info.value) and "_SkopsMarker" in str(info.value)
    assert not marker.exists()


def test_a_skops_file_of_something_else_is_refused(tmp_path):
    import skops.io as sio

    path = tmp_path / "other.skops"
    sio.dump({"columns": ["a"], "transform": "rotation"}, path)  # no assessors
    with pytest.raises(DataFormatError, match="not assessors of"):
        load_assessors(path)
    broken = tmp_path / "broken.skops"
    broken.write_bytes(b"PK\x03\x04" + b"\x00" * 40)  # a zip header and nothing else
    with pytest.raises(DataFormatError, match="broken.skops"):
        load_assessors(broken)


@pytest.fixture
def cnn5_weights(tmp_path):
    from repscope.models.networks import build_classifier

    torch.manual_seed(0)
    path = tmp_path / "cnn5.pt"
    torch.save(build_classifier("cnn5", (1, 28, 28), 10).state_dict(), path)
    return path


def _test_args(model, out):
    args = ["invariance", "test", "--model", str(model), "--arch", "cnn5", "--data", "digits"]
    return [*args, "--data-param", "test_size=40", "--n", "8", "--steps", "5", "--range", "4", "--out", str(out)]


@pytest.fixture
def no_test(monkeypatch):
    """Fails the test if the invariance test (or a dataset load) starts."""
    started = []

    def refuse(*args, **kwargs):
        started.append(True)
        raise AssertionError("the test ran")

    monkeypatch.setattr(testing, "model_signals", refuse)
    monkeypatch.setattr("repscope.data.registry.load_dataset", refuse)
    return started


@pytest.mark.parametrize("kind", ["missing", "empty", "pickle", "text"])
def test_a_broken_assessor_is_refused_before_the_test_runs(tmp_path, run_cli, cnn5_weights, no_test, kind):
    marker = tmp_path / "ran.txt"
    assessor = tmp_path / f"assessors-{kind}"
    if kind == "empty":
        assessor.write_bytes(b"")
    elif kind == "pickle":
        assessor.write_bytes(pickle.dumps({"assessors": _Marker(str(marker))}))
    elif kind == "text":
        assessor.write_text("decision tree: invariant\n")
    out = tmp_path / "t"
    code, _, err = run_cli([*_test_args(cnn5_weights, out), "--assessor", str(assessor)])
    expected = {"missing": "no such file", "empty": "empty", "pickle": "pickle", "text": "not a skops file"}[kind]
    _one_line_error(code, err, "--assessor", str(assessor), expected)
    assert not out.exists() and not no_test and not marker.exists()


def test_assessors_of_another_family_or_modalities_are_refused_before_the_test_runs(
    tmp_path, run_cli, cnn5_weights, no_test
):
    fitted, _ = _fitted(assessors)
    scale = save_assessors(tmp_path / "scale.skops", _payload(fitted, transform="scale"))
    code, _, err = run_cli([*_test_args(cnn5_weights, tmp_path / "a"), "--assessor", str(scale)])
    _one_line_error(code, err, str(scale), "trained for scale, not rotation")
    # columns of the paper's modalities (mean@CONV-2) against a compat reference test (max_mean@CONV-2)
    paper = save_assessors(tmp_path / "paper.skops", _payload(fitted))
    args = [*_test_args(cnn5_weights, tmp_path / "b"), "--assessor", str(paper), "--compat", "reference"]
    code, _, err = run_cli(args)
    _one_line_error(code, err, str(paper), "mean@CONV-2:asymmetry", "compat paper")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and not no_test


@pytest.mark.parametrize("kind", ["empty", "custom object", "text", "not a mapping"])
def test_a_broken_state_dict_is_refused_before_the_data_loads(tmp_path, run_cli, no_test, kind):
    marker = tmp_path / "ran.txt"
    model = tmp_path / "weights.pt"
    if kind == "empty":
        model.write_bytes(b"")
    elif kind == "custom object":  # torch's weights-only loader refuses it (and runs nothing)
        torch.save({"conv.weight": _Marker(str(marker))}, model)
    elif kind == "text":
        model.write_text("conv.weight = 1\n")
    else:
        torch.save(torch.zeros(3), model)
    out = tmp_path / "t"
    code, _, err = run_cli(_test_args(model, out))
    expected = {"empty": "empty", "custom object": "weights_only", "text": "not a state_dict"}
    _one_line_error(code, err, "--model", str(model), expected.get(kind, "not a state_dict"))
    assert not out.exists() and not no_test and not marker.exists()


def _stored_repository(folder: Path, **settings) -> RepoConfig:
    config = RepoConfig(**settings)
    folder.mkdir()
    (folder / "repository.json").write_text(json.dumps({"config": json.loads(config.model_dump_json())}))
    return config


def test_resume_with_another_count_is_refused_and_nothing_trains(tmp_path, monkeypatch, run_cli):
    repo = tmp_path / "repo"
    _stored_repository(repo, count=20, seed=4)
    trained = []
    monkeypatch.setattr("repscope.sweeps.run_sweep", lambda *a, **k: trained.append(a))
    before = (repo / "repository.json").read_text()
    code, _, err = run_cli(
        ["invariance", "repo", "build", "--out", str(repo), "--set", "count=30", "--set", "seed=4", "--resume"]
    )
    _one_line_error(code, err, "--resume", str(repo), "was started with count 20, now 30 (")
    assert not trained and (repo / "repository.json").read_text() == before
    assert sorted(p.name for p in repo.iterdir()) == ["repository.json"]


def test_check_resume_names_the_setting_and_allows_placement(tmp_path, monkeypatch):
    monkeypatch.setattr("repscope.sweeps.run_sweep", lambda *a, **k: pytest.fail("a model trained"))
    repo = tmp_path / "repo"
    stored = _stored_repository(repo, count=20, lr=[1e-3, 3e-4])
    check_resume(stored, repo)  # the same settings continue
    moved = stored.model_copy(deep=True)
    moved.trainer.accelerator, moved.trainer.devices = "gpu", 2  # where it trains: allowed
    check_resume(moved, repo)
    cases = [
        ({"lr": [3e-4, 1e-3]}, "lr [0.001, 0.0003], now [0.0003, 0.001]"),
        ({"epochs": [1, 3]}, "epochs [1, 3, 6], now [1, 3]"),
        ({"compat": "reference"}, "compat 'paper', now 'reference'"),
    ]
    for change, expected in cases:
        with pytest.raises(InvalidArgumentError) as info:
            check_resume(stored.model_copy(update=change), repo)
        assert expected in str(info.value)
    precise = stored.model_copy(deep=True)
    precise.trainer.precision = "bf16-mixed"
    with pytest.raises(InvalidArgumentError, match="trainer.precision '32-true', now 'bf16-mixed'"):
        check_resume(precise, repo)
    (repo / "repository.json").write_text("{")
    with pytest.raises(DataFormatError, match="repository.json: not a repository manifest"):
        build_repository(stored, repo)


def test_features_of_an_empty_file_is_one_line(tmp_path, run_cli):
    empty = tmp_path / "m.npy"
    empty.write_bytes(b"")
    out = tmp_path / "f.json"
    code, _, err = run_cli(["invariance", "features", str(empty), "--out", str(out)])
    _one_line_error(code, err, str(empty), "empty")
    assert not out.exists()


@pytest.mark.parametrize(
    ("matrix", "expected"),
    [
        (np.array([[0.0, 0.2, 0.4], [0.1, 0.0, -0.3], [0.5, 0.2, 0.0]]), "1 negative entries (min -0.3)"),
        (np.array([[False, True, True], [True, False, False], [True, True, False]]), "dtype bool"),
        (np.array([[0.0, 1e308, 0.4], [0.1, 0.0, 0.3], [0.5, 0.2, 0.0]]), "entry 1e+308 exceeds 1e+100"),
        (np.array([[0.0, np.nan, 0.4], [0.1, 0.0, 0.3], [0.5, 0.2, 0.0]]), "1 NaN or infinite entries"),
        (np.zeros((3, 4)), "got shape (3, 4)"),
    ],
    ids=["negative", "bool", "1e308", "nan", "not square"],
)
@pytest.mark.parametrize("compat", ["paper", "reference"])
def test_features_refuses_matrices_that_are_no_variances(tmp_path, run_cli, matrix, expected, compat):
    path = tmp_path / "m.npy"
    np.save(path, matrix)
    out = tmp_path / "f.json"
    out.write_text("kept")
    args = ["invariance", "features", str(path), "--out", str(out), "--overwrite", "--compat", compat]
    code, _, err = run_cli(args)
    _one_line_error(code, err, str(path), expected)
    assert out.read_text() == "kept"


def test_repository_matrices_are_checked(tmp_path):
    from repscope.studies.invariance.correlate import _reference_features

    folder = tmp_path / "model-03"
    folder.mkdir()
    good = np.abs(np.random.default_rng(1).normal(size=(5, 5)))
    np.save(folder / "matrix_max_at_CONF.npy", good)
    np.save(folder / "matrix_max_at_CONV-1.npy", -good)
    with pytest.raises(DataFormatError, match=r"model model-03: .*matrix_max_at_CONV-1.npy: holds 25 negative"):
        _reference_features(folder)

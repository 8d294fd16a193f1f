"""``repscope assess``: a model from outside (a factory in a file written here, never registered) through the
command, its run directory, and the refusals that come before any work (one line, nothing written)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

NETS = '''
import torch
from torch import nn


class Codes(nn.Module):
    """Codes that carry the first two factors of a 12x12 image: the mean row and column of its pixels."""

    def forward(self, x):
        weights = x[:, 0] / x[:, 0].sum(dim=(1, 2), keepdim=True).clamp_min(1e-6)
        grid = torch.arange(x.shape[-1], dtype=x.dtype)
        rows = (weights.sum(2) * grid).sum(1, keepdim=True)
        columns = (weights.sum(1) * grid).sum(1, keepdim=True)
        return torch.cat([columns, rows, torch.zeros_like(rows)], dim=1)


def encoder():
    return Codes()


def classifier(num_classes=3):
    torch.manual_seed(0)
    layers = [nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Conv2d(2, 2, 3), nn.Flatten(), nn.Linear(2 * 8 * 8, num_classes)]
    return nn.Sequential(*layers)


def nan_classifier(num_classes=3):
    class NaNs(nn.Module):
        def forward(self, x):
            return torch.full((x.shape[0], num_classes), float("nan"))
    return NaNs()


def raising():
    raise RuntimeError("the factory broke")
'''


def square_images(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """12x12 images of a 3x3 square at (column, row) factors 0-8, and those factors."""
    factors = rng.integers(0, 9, size=(n, 2))
    images = np.zeros((n, 12, 12), np.uint8)
    for image, (column, row) in zip(images, factors):
        image[row : row + 3, column : column + 3] = 255
    return images, factors


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("assess-command")
    (folder / "mynets.py").write_text(NETS)
    rng = np.random.default_rng(3)
    images, factors = square_images(150, rng)
    np.savez(folder / "squares.npz", images=images, factors=factors, factor_names=np.array(["x", "y"]))
    labels = factors[:, 0] // 3  # three classes: the square's column band
    np.savez(folder / "labelled.npz", images=images, labels=labels)
    return folder


def test_encoder_from_a_factory_file_writes_a_run_directory(workspace, run_cli, tmp_path):
    out = tmp_path / "run"
    code, stdout, stderr = run_cli(
        ["assess", f"{workspace / 'mynets.py'}:encoder", "--role", "encoder", "--data", str(workspace / "squares.npz"),
         "--metric", "mig", "--metric", "sap", "--out", str(out)]
    )  # fmt: skip
    assert code == 0, stderr
    metrics = json.loads((out / "metrics.json").read_text())
    # the codes' first two columns are the square's position, exactly: each factor has one informative latent
    # (below 1 only because MIG bins the codes into 20 histogram bins); shuffled codes carry nothing
    assert metrics["disentanglement"]["mig"] > 0.8
    headline = {row["metric"]: row for row in metrics["headline"]}
    assert headline["mig"]["chance"] < 0.1
    assert (out / "tables" / "headline.csv").is_file()
    assert (out / "report.html").is_file() and (out / "arrays.npz").is_file()
    codes = np.load(out / "arrays.npz")["codes"]
    assert codes.shape == (150, 3)
    rows = [line for line in stdout.splitlines() if line.startswith("disentanglement")]
    assert any(" mig " in f" {line} " for line in rows)
    assert stdout.rstrip().endswith(f"report: {out / 'report.html'}")


def _refused(run_cli, args, out):
    code, stdout, stderr = run_cli([*args, "--out", str(out)])
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code != 0
    assert len(lines) == 1 and lines[0].startswith("repscope: error:"), stderr
    assert not out.exists(), "nothing is written when the model is refused"
    return lines[0]


@pytest.mark.parametrize(
    "model, extra, expected",
    [
        ("mynets.py:classifier", ["--model-arg", "num_classes=7"], "7"),
        ("mynets.py:nan_classifier", [], "NaN"),
        ("mynets.py:raising", [], "the factory broke"),
        ("no_such_module_anywhere:make", [], "no_such_module_anywhere"),
    ],
    ids=["wrong-output-size", "nan-outputs", "factory-raises", "missing-module"],
)
def test_a_bad_classifier_is_refused_in_one_line(workspace, run_cli, tmp_path, model, extra, expected):
    source = f"{workspace / model}" if model.startswith("mynets") else model
    line = _refused(
        run_cli,
        ["assess", source, "--role", "classifier", "--data", str(workspace / "labelled.npz"), "--no-attacks", *extra],
        tmp_path / "run",
    )
    assert expected.lower() in line.lower()


def test_an_input_size_mismatch_names_the_option(workspace, run_cli, tmp_path):
    line = _refused(
        run_cli,
        ["assess", f"{workspace / 'mynets.py'}:classifier", "--role", "classifier",
         "--data", str(workspace / "labelled.npz"), "--input-size", "28", "--no-attacks"],
        tmp_path / "run",
    )  # fmt: skip
    assert "--input-size" in line


class _Payload:
    """Unpickling this object would create the file named in it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_pickled_model_is_refused_without_being_unpickled(run_cli, tmp_path):
    target = tmp_path / "created-by-the-payload"
    model = tmp_path / "model.pt"
    model.write_bytes(pickle.dumps(_Payload(str(target))))
    line = _refused(run_cli, ["assess", str(model), "--role", "encoder"], tmp_path / "run")
    assert "MODEL" in line or "--model" in line
    assert not target.exists()


def test_the_python_call_takes_progress_as_a_bool(workspace):
    import importlib.util

    import repscope

    spec = importlib.util.spec_from_file_location("assess_command_nets", workspace / "mynets.py")
    nets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nets)
    data = str(workspace / "squares.npz")
    rows = []
    for progress in (False, True, None):
        assessment = repscope.assess(
            nets.encoder(), role="encoder", data=data, metrics=["mig"], bootstrap=3, progress=progress
        )
        rows.append(assessment.to_frame().set_index("metric").loc["mig"])
    # the same numbers (value and bootstrap interval) whether bars are drawn or not
    for row in rows[1:]:
        assert (row[["value", "ci_low", "ci_high"]] == rows[0][["value", "ci_low", "ci_high"]]).all()
    assert rows[0]["value"] > 0.8 and rows[0]["ci_low"] <= rows[0]["ci_high"]


def test_a_number_whose_interval_holds_its_chance_level_gets_a_note():
    from repscope.studies.assess.assessment import HeadlineRow, chance_notes

    rows = (
        HeadlineRow("classifier", "accuracy", 0.08, chance=0.1, ci_low=0.04, ci_high=0.13),  # chance inside
        HeadlineRow("classifier", "robust_accuracy", 0.7, chance=0.1, ci_low=0.6, ci_high=0.8),  # well above
        HeadlineRow("attacks", "l0_th1_success_rate", 0.0, ci_low=0.0, ci_high=0.0),  # no chance level
        HeadlineRow("disentanglement", "mig", 0.02, chance=0.03),  # no interval
    )
    notes = chance_notes(rows)
    assert len(notes) == 1 and notes[0].startswith("classifier accuracy: 0.08 is within chance (0.1")

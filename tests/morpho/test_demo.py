"""The demo study end to end on a few real digits: files, effects and the CLI contract."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from repscope.cli import app
from repscope.studies.morpho.demo import DemoConfig, _one_per_class, run_demo


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "run"
    config = DemoConfig(
        train_size=60, test_size=40, seed=1, diversity_epochs=1, diversity_samples=150, diversity_train=200
    )
    report = run_demo(config, out=out)
    return out, report


def test_demo_writes_a_complete_run_directory(demo_run):
    out, report = demo_run
    assert report == out / "report.html"
    html = report.read_text()
    # self-contained: figures inlined, nothing fetched from elsewhere
    assert html.count("data:image/png;base64,") >= 3
    assert 'src="http' not in html and 'href="http' not in html
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["seed"] == 1 and config["build"]["train_size"] == 60
    assert (out / "dataset" / "dataset.json").exists()
    assert (out / "tables" / "perturbation_effects.csv").exists()
    # the CdSprites+ panel: one row per level
    assert (out / "figures" / "cdsprites_levels.png").exists() and "CdSprites+ (generated)" in html


def test_demo_metrics_show_the_perturbations_effects(demo_run):
    out, _ = demo_run
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["digits"] == {"train": 60, "t10k": 40}
    assert metrics["thickness_ratio_thickened"] > 1.6
    assert metrics["thickness_ratio_thinned"] < 0.8
    assert metrics["area_ratio_swollen"] > 1.0
    assert metrics["fractured_share_with_more_components"] > 0.8
    assert metrics["invalid_digits"] == 0
    assert 1.5 < metrics["plain_test_medians"]["thickness"] < 4.0
    assert set(metrics["diversity"]["models"]) == {"VAE 2-d", "VAE 16-d"}
    assert (out / "figures" / "pairplot_vae-2-d.png").exists()


def test_examples_take_every_class_in_turn():
    labels = np.array([0, 0, 0, 1, 1, 2])
    assert _one_per_class(labels, 4).tolist() == [0, 3, 5, 1]
    assert _one_per_class(labels, 10).tolist() == [0, 3, 5, 1, 4, 2]


def test_cli_demo_prints_the_report_path_and_refuses_to_overwrite(tmp_path):
    runner = CliRunner()
    out = tmp_path / "run"
    result = runner.invoke(app, ["demo", "--out", str(out), "--train", "20", "--test", "10", "--no-diversity"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"report: {out / 'report.html'}"
    before = (out / "metrics.json").read_bytes()
    again = runner.invoke(app, ["demo", "--out", str(out), "--train", "20", "--test", "10", "--no-diversity"])
    assert again.exit_code != 0
    assert (out / "metrics.json").read_bytes() == before

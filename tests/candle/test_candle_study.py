"""The CANDLE study: renders its grid into $REPSCOPE_HOME once, trains box-weighted VAEs, writes Table 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from browser_checks import assert_report_passes_browser_check  # tests/browser_checks.py
from repscope.data.candle.dataset import read_folder
from repscope.studies.candle.candle_half import QUICK_GRID, CandleStudyConfig, quick, render_folder, run_candle_study
from repscope.studies.common import MemberModel

# every factor varies (a constant factor has no information to score), the images stay tiny: the
# 160 points of this sub-grid are the cubes and spheres in 5 colours, 64 of them in the confounded subset
GRID = ["object=cube,sphere", "size=small,large", "rotation=0,45", "scene=indoor,outdoor", "light=left,right"]
LIMIT = None


def tiny_config() -> CandleStudyConfig:
    config = CandleStudyConfig(
        render={"grid": GRID, "limit": LIMIT, "resolution": "48x36", "samples": 1},
        models=[
            MemberModel(label="beta-VAE", name="beta-vae", params={"latent_dim": 6, "box_weight": 10.0}),
            MemberModel(label="SS-beta-VAE", name="beta-vae-semi", params={"latent_dim": 6, "box_weight": 10.0}),
        ],
        evaluation_n=10,
        classifier_epochs=1,
    )
    config.training.trainer.max_epochs = 1
    return config


def test_the_study_renders_once_trains_and_writes_the_candle_half_of_table_2(tmp_path, monkeypatch):
    pytest.importorskip("bpy", reason="the candle extra (bpy) is not installed: pip install 'repscope[candle]'")
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path / "home"))
    config = tiny_config()
    folder = render_folder(config.render)
    assert folder.parent == tmp_path / "home" / "candle"
    data = read_folder(folder, image_size=8)
    # the confounded subset only: cube in red and blue, sphere in blue and yellow, x 16 other points
    assert len(data["factors"]) == 64
    pairs = {(int(o), int(c)) for o, c in data["factors"][:, :2]}
    assert pairs == {(0, 0), (0, 1), (1, 1), (1, 2)}
    stamps = {path.name: path.stat().st_mtime_ns for path in folder.glob("*.png")}

    report = run_candle_study(config, out=tmp_path / "study")
    # the render was found again, not redone
    assert {path.name: path.stat().st_mtime_ns for path in folder.glob("*.png")} == stamps
    assert "The paper&#x27;s Table 2, CANDLE half" in report.read_text()
    assert_report_passes_browser_check(report)  # as a researcher sees it: tables fit, figures load
    table = pd.read_csv(tmp_path / "study" / "tables" / "table2.csv")
    assert table["model"].tolist() == ["beta-VAE", "SS-beta-VAE"]
    for column in ("irs", "uc_rho1", "cg_rho1", "uc_rho2", "cg_rho2"):
        assert table[column].between(0.0, 1.0).all(), column
    metrics = json.loads((tmp_path / "study" / "metrics.json").read_text())
    assert set(metrics["classifier_accuracy"]) == {"object", "color", "size", "rotation", "scene", "light"}
    stored = yaml.safe_load((tmp_path / "study" / "config.yaml").read_text())
    assert stored["data"]["params"]["data_dir"] == str(folder)  # the run records where its images came from


def test_quick_renders_a_small_low_resolution_grid():
    shrunk = quick(CandleStudyConfig())
    assert shrunk.render.grid == QUICK_GRID
    assert shrunk.render.resolution == "160x120" and shrunk.render.samples == 4
    assert shrunk.training.trainer.max_epochs == 1
    # a folder given by the user is used as it is
    given = quick(CandleStudyConfig(render={"data_dir": "/data/candle"}))
    assert given.render.data_dir == "/data/candle" and given.render.grid == []

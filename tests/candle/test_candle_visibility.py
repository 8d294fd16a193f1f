"""What a researcher sees of CANDLE: ``--limit`` across the whole grid, the study's folder name and its
sample of rendered images, and one line naming the Python version when bpy is missing."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from PIL import Image

from repscope.data.candle.grid import grid_points, parse_grid
from repscope.data.candle.render import select_points
from repscope.data.candle.scene import import_bpy, missing_bpy_message
from repscope.errors import InvalidArgumentError
from repscope.report import Report
from repscope.studies.candle import candle_half as candle_study
from repscope.studies.candle.candle_half import CandleStudyConfig, rendered_sample


def test_limit_takes_points_across_the_whole_grid():
    points = select_points(["object=cube,torus"], limit=20)
    # 2 objects x 810 points (5 colours x 3 sizes x 6 rotations x 3 scenes x 3 lights); position k * 1620 // 20
    # = 81 k; the cube's points hold full-grid indices 0-809, the torus's 3240-4049 (object 4 x 810)
    expected = [81 * k if k < 10 else 3240 + 81 * k - 810 for k in range(20)]
    assert [p["index"] for p in points] == expected
    assert {p["object"] for p in points} == {"cube", "torus"}
    assert {p["color"] for p in points if p["object"] == "cube"} == {"red", "blue", "yellow", "purple", "orange"}
    # deterministic, in grid order, and a limit at or above the size keeps every point
    assert select_points(["object=cube,torus"], limit=20) == points
    assert len(grid_points(parse_grid(["object=cube", "color=red", "scene=indoor"]), limit=1000)) == 3 * 6 * 3


def test_the_help_of_limit_says_it_spreads_over_the_grid(run_cli):
    code, out, _ = run_cli(["candle", "render", "--help"])
    assert code == 0 and "spread evenly over the whole" in " ".join(out.split())


def test_a_missing_bpy_is_one_line_naming_the_python_version(monkeypatch, run_cli, tmp_path):
    line = missing_bpy_message((3, 12, 1), ImportError("No module named 'bpy'"))
    assert "Python 3.12" in line and "needs Python 3.11 exactly" in line and "\n" not in line
    inside = missing_bpy_message((3, 11, 7), ImportError("No module named 'bpy'"))
    assert "this Python 3.11" in inside and "pip install 'repscope[candle]'" in inside
    monkeypatch.setitem(sys.modules, "bpy", None)  # import bpy raises ImportError
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    with pytest.raises(InvalidArgumentError, match=rf"Python {running}"):
        import_bpy()
    code, _, err = run_cli(["candle", "render", "--out", str(tmp_path / "r"), "--limit", "1"])
    assert code != 0 and len(err.strip().splitlines()) == 1 and f"Python {running}" in err
    assert not (tmp_path / "r").exists()


def write_image(folder, name, obj, color, pixels):
    Image.fromarray(pixels).save(folder / f"{name}.png")
    record = {
        "scene": "indoor",
        "lights": "left",
        "objects": {
            "o": {"object_type": obj, "color": color, "size": "small", "rotation": 15, "bounds": [[1, 1], [4, 4]]}
        },
    }
    (folder / f"{name}.json").write_text(json.dumps(record))


def test_the_candle_study_writes_candle_study_and_shows_rendered_images(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    folder = tmp_path / "images"
    folder.mkdir()
    for k in range(5):
        write_image(folder, f"{k:02d}", ("cube", "sphere")[k % 2], "red", rng.integers(0, 255, (12, 16, 3), np.uint8))
    images, titles = rendered_sample(folder, n=3)
    # rows k * 5 // 3 = 0, 1, 3 of the sorted files: cube, sphere, sphere
    assert images.shape == (3, 12, 16, 3) and [title.split()[0] for title in titles] == ["cube", "sphere", "sphere"]
    assert "15° indoor left" in titles[0]

    seen = {}

    def recorded(config, **kwargs):
        seen.update(kwargs, data_dir=config.data.params["data_dir"])
        return tmp_path / "report.html"

    monkeypatch.setattr(candle_study, "run_disentangle_study", recorded)
    config = CandleStudyConfig(render={"data_dir": str(folder)})
    candle_study.run_candle_study(config, root=tmp_path / "runs", resume=False)
    assert seen["kind"] == "candle-study" and seen["data_dir"] == str(folder) and seen["resume"] is False
    report = Report("t")
    seen["add_intro"](report)
    html = report.render()
    assert "The rendered images" in html and "<img" in html and "flat" not in html
    # a render that shows nothing: flat grey images are said to be so, at the top
    grey = tmp_path / "grey"
    grey.mkdir()
    for k in range(3):
        write_image(grey, f"{k:02d}", "cube", "red", np.full((12, 16, 3), 128, np.uint8))
    candle_study.run_candle_study(CandleStudyConfig(render={"data_dir": str(grey)}), root=tmp_path / "runs")
    report = Report("t")
    seen["add_intro"](report)
    assert any("3 rendered images shown are flat" in warning for warning in report.warnings)

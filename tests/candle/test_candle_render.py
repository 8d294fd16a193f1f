"""The CANDLE renderer (Blender's bpy, the candle extra): files, boxes, determinism, resume, shards, errors.

Renders are tiny (64x48 or so, 1-2 samples) to keep the tests short; the code path is the real one.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from repscope.data.candle.dataset import folder_records, read_folder, read_record
from repscope.data.candle.grid import grid_points, image_seed, image_stem, parse_grid
from repscope.data.candle.render import (
    RenderSettings,
    _counting_written_images,
    render_grid,
    select_points,
    written_images,
)
from repscope.data.candle.scene import CandleStage


@pytest.fixture(scope="module")
def blender():
    """Blender's bpy, for the tests that render; the others (counting, interruption, subsets, settings)
    run without the extra, and tests/candle/test_candle_pose.py checks the scene's numbers against a
    recording of Blender's."""
    return pytest.importorskip("bpy", reason="the candle extra (bpy) is not installed: pip install 'repscope[candle]'")


TINY = ["--resolution", "64x48", "--samples", "2", "--device", "cpu"]
FEW = ["--grid", "object=cube,torus", "--grid", "size=large", "--grid", "rotation=0,45", "--grid", "scene=indoor"]


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB")).astype(np.int16)


def test_render_writes_images_and_candle_json_the_dataset_reads(tmp_path, run_cli, blender):
    out = tmp_path / "render"
    code, stdout, stderr = run_cli(["candle", "render", "--out", str(out), *FEW, "--limit", "4", *TINY])
    assert code == 0, stderr
    points = grid_points(parse_grid(FEW[1::2]), limit=4)
    assert [p["index"] for p in points] == sorted(p["index"] for p in points)
    for point in points:
        stem = image_stem(point["index"])
        assert pixels(out / f"{stem}.png").shape == (48, 64, 3)
        record = read_record(out / f"{stem}.json")
        for name in ("object", "color", "size", "rotation", "scene", "light"):
            assert record[name] == point[name]
        x0, y0, x1, y1 = record["bounds"]
        assert 0 <= x0 < x1 <= 64 and 0 <= y0 < y1 <= 48  # fully in frame
        raw = json.loads((out / f"{stem}.json").read_text())
        assert raw["seed"] == image_seed(point["index"])
        assert 0.0 <= raw["confounder"]["scene_light"] <= 1.0
    manifest = json.loads((out / "render.json").read_text())
    assert manifest["settings"]["resolution"] == [64, 48] and manifest["settings"]["samples"] == 2
    assert "rendered 4 images (0 already there) of 4" in stdout
    data = read_folder(out, image_size=16)  # render.json is not an image record
    assert data["image"].shape == (4, 3, 16, 16)
    # a folder of several renders (one per seed, say), each with its own render.json, is read whole
    for name in ("seed0", "seed1"):
        shutil.copytree(out, tmp_path / "renders" / name)
    both = read_folder(tmp_path / "renders", image_size=16)
    assert both["image"].shape == (8, 3, 16, 16) and np.array_equal(both["factors"][:4], data["factors"])
    # --limit 4 spreads over the 60-point sub-grid (positions 0, 15, 30, 45): two cubes, then two tori
    assert data["factors"][:, 0].tolist() == [0, 0, 4, 4]


def test_the_box_encloses_exactly_the_pixels_the_object_changes(tmp_path, blender):
    # the same point in two colours: same seed, so the same position, camera and sampling pattern;
    # the pixels that differ are the object's (and a little of its coloured light on the floor)
    stage = CandleStage(resolution=(160, 120), samples=2, denoise=False, device="cpu")
    point = {"index": 7, "object": "cube", "color": "red", "size": "large", "rotation": 30}
    point.update(scene="outdoor", light="middle")
    first = stage.render(point, 11, tmp_path / "red.png")
    second = stage.render({**point, "color": "blue"}, 11, tmp_path / "blue.png")
    assert first["objects"]["Cube_0"]["bounds"] == second["objects"]["Cube_0"]["bounds"]
    (x0, y0), (x1, y1) = first["objects"]["Cube_0"]["bounds"]
    changed = np.abs(pixels(tmp_path / "red.png") - pixels(tmp_path / "blue.png")).max(axis=2) > 60
    rows, columns = np.nonzero(changed)
    assert rows.size > 50
    # every strongly changed pixel centre lies in the box (one pixel of slack for antialiasing)
    assert columns.min() + 0.5 >= x0 - 1 and columns.max() + 0.5 <= x1 + 1
    assert rows.min() + 0.5 >= y0 - 1 and rows.max() + 0.5 <= y1 + 1
    # and the box is tight: the changed pixels reach within two pixels of each side
    assert columns.min() <= x0 + 2 and columns.max() + 1 >= x1 - 2
    assert rows.min() <= y0 + 2 and rows.max() + 1 >= y1 - 2


def test_factors_change_the_image_as_the_causal_graph_says(tmp_path, blender):
    stage = CandleStage(resolution=(96, 72), samples=2, denoise=False, device="cpu")
    base = {"index": 0, "object": "cube", "color": "red", "size": "small", "rotation": 0, "scene": "indoor"}
    base["light"] = "left"

    def box(point: dict) -> np.ndarray:
        record = stage.render(point, 5, tmp_path / "x.png")
        return np.asarray(next(iter(record["objects"].values()))["bounds"], float).reshape(-1)

    small, large = box(base), box({**base, "size": "large"})
    assert (large[2] - large[0]) > 1.5 * (small[2] - small[0])  # 0.75 m against 0.4 m across
    # the light moves relative to the object: the floor beside the cube is brighter on the light's side
    # (and in the shadow on the other), so left-minus-right falls from the left light to the right one
    x0, y0, x1, y1 = (int(round(v)) for v in large)
    width, rows = x1 - x0, slice((y0 + y1) // 2, min(72, y1 + 2))
    contrast = {}
    for light in ("left", "middle", "right"):
        stage.render({**base, "size": "large", "light": light}, 5, tmp_path / f"{light}.png")
        grey = pixels(tmp_path / f"{light}.png").mean(axis=2)
        contrast[light] = grey[rows, max(0, x0 - width) : x0].mean() - grey[rows, x1 + 1 : x1 + width].mean()
    assert contrast["left"] > contrast["middle"] > contrast["right"], contrast
    left = pixels(tmp_path / "left.png")
    # a sphere turned about the vertical axis looks the same; a cube does not
    sphere = {**base, "object": "sphere", "size": "large"}
    stage.render(sphere, 5, tmp_path / "s0.png")
    stage.render({**sphere, "rotation": 45}, 5, tmp_path / "s45.png")
    stage.render({**base, "size": "large", "rotation": 45}, 5, tmp_path / "c45.png")
    assert np.abs(pixels(tmp_path / "s0.png") - pixels(tmp_path / "s45.png")).max() <= 2
    assert np.abs(left[y0:y1, x0:x1] - pixels(tmp_path / "c45.png")[y0:y1, x0:x1]).max() > 30


def test_an_index_renders_the_same_image_in_any_shard_and_process(tmp_path, run_cli, monkeypatch, blender):
    whole, sharded = tmp_path / "whole", tmp_path / "sharded"
    args = [*FEW, "--limit", "3", *TINY]
    assert run_cli(["candle", "render", "--out", str(whole), *args])[0] == 0
    for shard in ("1/2", "0/2"):  # machines sharing a folder: each continues it with its shard
        code, _, stderr = run_cli(["candle", "render", "--out", str(sharded), *args, "--shard", shard, "--resume"])
        assert code == 0, stderr
    names = sorted(p.name for p in whole.glob("*.png"))
    assert names == sorted(p.name for p in sharded.glob("*.png")) and len(names) == 3
    for name in names:
        assert np.array_equal(pixels(whole / name), pixels(sharded / name))
        stem = name[:-4]
        assert json.loads((whole / f"{stem}.json").read_text()) == json.loads((sharded / f"{stem}.json").read_text())
    # two local worker processes, each with one thread: the same pixels again
    workers = tmp_path / "workers"
    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0.2")
    code, stdout, stderr = run_cli(["candle", "render", "--out", str(workers), *args, "--workers", "2"])
    assert code == 0, stderr
    # the bar counts images, not the two parts (which stood at 0/2 until the end of a long render)
    assert "rendering 3 CANDLE images in 2 processes: 3/3 done" in stderr and "CANDLE parts" not in stderr
    for name in names:
        assert np.array_equal(pixels(whole / name), pixels(workers / name))
    assert read_folder(workers, 8)["image"].shape[0] == 3  # the hidden .render/ state is not read


def test_the_parallel_render_counts_images_as_they_are_written(tmp_path):
    """The count a parallel render shows is read off the folder while the parts run: a record (written
    after its image) counts, for the render's own points only; a half-written temporary file does not."""
    points = grid_points(parse_grid(["object=cube", "size=large", "scene=indoor", "light=left"]))[:4]
    stems = [image_stem(point["index"]) for point in points]
    (tmp_path / "99999.json").write_text("{}")  # another render's point
    (tmp_path / f".{stems[2]}.json.tmp").write_text("{")
    (tmp_path / f"{stems[3]}.png").write_bytes(b"")  # an image whose record is not written yet
    counts: list[int] = []
    with _counting_written_images(tmp_path, points, counts.append, every_seconds=0.02):
        for stem in stems[:2]:
            time.sleep(0.2)
            (tmp_path / f"{stem}.json").write_text("{}")
        time.sleep(0.2)
    assert written_images(tmp_path, points) == 2
    assert counts[0] == 0 and 1 in counts and counts[-1] == 2 and counts == sorted(counts)


def test_an_interrupted_parallel_render_counts_the_images_it_made(tmp_path, monkeypatch, capsys):
    """Ctrl-C in a render on two processes: the last line counts images (earlier ones included), not the
    two parts, which stay at "0 of 2 runs complete" until a whole part has ended."""
    import signal

    import repscope.cli as cli
    import repscope.outputs as outputs
    import repscope.sweeps as sweeps

    points = select_points(["object=cube", "size=large", "scene=indoor", "rotation=0"], None, "all")[:5]
    out = tmp_path / "render"
    settings = RenderSettings(resolution=(64, 48), samples=1)
    out.mkdir()
    (out / f"{image_stem(points[0]['index'])}.png").write_bytes(b"")  # rendered by an earlier run
    (out / f"{image_stem(points[0]['index'])}.json").write_text("{}")

    def stopped_after_two_images(grid, target, state, **kwargs):
        for point in kwargs["common"]["points"][:2]:
            (out / f"{image_stem(point['index'])}.json").write_text("{}")
        Path(state).mkdir(parents=True)  # the sweep's bookkeeping, inside --out
        sweeps._interrupted.append(sweeps.InterruptedSweep(Path(state).absolute(), 0, 0, len(grid)))
        raise KeyboardInterrupt

    monkeypatch.setattr(sweeps, "run_sweep", stopped_after_two_images)
    with pytest.raises(KeyboardInterrupt):
        render_grid(out, settings, points, workers=2, progress=False)
    assert sweeps.interrupted_sweeps()[-1].counts_text() == "3 of 5 images rendered"
    monkeypatch.setattr(outputs, "incomplete_outputs", lambda: [(out, "--out", True)])
    previous = signal.getsignal(signal.SIGINT)
    try:
        assert cli._interrupted_exit().code == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    assert capsys.readouterr().err.strip() == (
        f"repscope: interrupted; --out {out} holds an incomplete output: 3 of 5 images rendered "
        "(pass --resume with the same --out to go on or --overwrite to replace it)"
    )


def test_resume_renders_only_what_is_missing_and_refuses_other_settings(tmp_path, run_cli, blender):
    out = tmp_path / "render"
    args = [*FEW, "--limit", "4", *TINY]
    assert run_cli(["candle", "render", "--out", str(out), *args])[0] == 0
    stems = sorted(p.stem for p in out.glob("*.png"))
    kept = {stem: (out / f"{stem}.png").stat().st_mtime_ns for stem in stems[1:]}
    (out / f"{stems[0]}.png").unlink()  # as if stopped between an image and its JSON
    # a render killed while writing leaves its temporary (fileio.atomic_path's hidden sibling), never the image
    leftover = out / f".tmp-{stems[0]}.killed.png"
    leftover.write_bytes(b"half an image")
    code, stdout, _ = run_cli(["candle", "render", "--out", str(out), *args])
    assert code == 1  # an existing folder needs --resume or --overwrite
    code, stdout, stderr = run_cli(["candle", "render", "--out", str(out), *args, "--resume"])
    assert code == 0, stderr
    assert "rendered 1 image (3 already there) of 4" in stdout
    assert (out / f"{stems[0]}.png").read_bytes() != leftover.read_bytes()
    assert len(folder_records(out)["files"]) == 4  # the hidden temporary is no image of the folder
    assert {stem: (out / f"{stem}.png").stat().st_mtime_ns for stem in stems[1:]} == kept
    code, _, stderr = run_cli(
        ["candle", "render", "--out", str(out), *FEW, "--resume", "--resolution", "64x48", "--samples", "3"]
    )
    assert code == 1 and "was rendered with samples 2, now 3 (" in stderr and len(stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--resolution", "10x10"], "--resolution"),
        (["--shard", "2/2"], "--shard"),
        (["--grid", "colour=red"], "unknown factor 'colour'"),
        (["--grid", "rotation=10"], "rotation has no value '10'"),
        (["--limit", "0"], "--limit"),
        (["--samples", "0"], "--samples"),
        (["--address", "auto"], "--address: only with --backend ray"),
    ],
)
def test_bad_options_are_one_line_errors_and_write_nothing(tmp_path, run_cli, args, message):
    out = tmp_path / "render"
    code, _, stderr = run_cli(["candle", "render", "--out", str(out), *args])
    assert code == 1 and message in stderr and len(stderr.strip().splitlines()) == 1
    assert not out.exists()


def write_hdr(path: Path, rgb: np.ndarray) -> None:
    """A Radiance .hdr file, flat (uncompressed) RGBE scanlines."""
    height, width, _ = rgb.shape
    top = rgb.max(axis=2)
    exponent = np.where(top > 1e-32, np.ceil(np.log2(np.maximum(top, 1e-32))), -128).astype(int)
    mantissa = np.where(top[..., None] > 1e-32, rgb / np.exp2(exponent)[..., None] * 255.999, 0)
    rgbe = np.concatenate([mantissa.astype(np.uint8), (exponent + 128).clip(0, 255).astype(np.uint8)[..., None]], 2)
    header = f"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y {height} +X {width}\n".encode()
    path.write_bytes(header + rgbe.tobytes())


def test_hdri_panoramas_replace_the_procedural_scenes(tmp_path, run_cli, blender):
    panoramas = tmp_path / "hdri"
    panoramas.mkdir()
    sky = np.ones((16, 32, 3), np.float32) * np.array([0.2, 0.4, 1.0], np.float32)  # a blue world
    write_hdr(panoramas / "indoor.hdr", sky)
    out = tmp_path / "render"
    code, _, stderr = run_cli(
        ["candle", "render", "--out", str(out), "--hdri-dir", str(panoramas), *FEW, "--limit", "1", *TINY]
    )
    assert code == 0, stderr
    image = pixels(next(out.glob("*.png")))
    top = image[:5].reshape(-1, 3).mean(axis=0)  # the top rows show the panorama
    assert top[2] > top[0] + 40, top  # blue, not the indoor wall's beige
    # every scene rendered needs its panorama
    code, _, stderr = run_cli(["candle", "render", "--out", str(tmp_path / "x"), "--hdri-dir", str(panoramas)])
    assert code == 1 and "no playground.hdr" in stderr
    assert not (tmp_path / "x").exists()


def test_confounded_subset_keeps_two_colours_per_object():
    points = select_points(subset="confounded")
    assert len(points) == 1620  # 10 of the 25 object-colour pairs
    pairs = {(p["object"], p["color"]) for p in points}
    assert pairs == {
        ("cube", "red"), ("cube", "blue"), ("sphere", "blue"), ("sphere", "yellow"), ("cylinder", "yellow"),
        ("cylinder", "purple"), ("cone", "purple"), ("cone", "orange"), ("torus", "orange"), ("torus", "red"),
    }  # fmt: skip
    assert len({p["index"] for p in points}) == 1620


@pytest.mark.slow  # starts Ray; test_sweeps.py's Ray test covers the backend in make test
def test_ray_backend_renders_the_same_images(tmp_path, blender):
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'repscope[ray]'")
    settings = RenderSettings(resolution=(48, 36), samples=1, device="cpu")
    points = select_points(["object=cone", "size=small", "rotation=0", "scene=outdoor"], limit=2)
    local, remote = tmp_path / "local", tmp_path / "ray"
    render_grid(local, settings, points, progress=False)
    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    summary = render_grid(remote, settings, points, backend="ray", workers=1, progress=False)
    assert summary["rendered"] == 2
    for point in points:
        name = f"{image_stem(point['index'])}.png"
        assert np.array_equal(pixels(local / name), pixels(remote / name))


def test_settings_identity_names_what_the_images_depend_on():
    one = RenderSettings(threads=1, device="cpu").identity()
    assert one == RenderSettings(threads=4, device="auto").identity()  # where it renders is not identity
    assert one != RenderSettings(samples=16).identity()
    assert set(one) == {"resolution", "samples", "denoise", "hdri_dir", "seed"}

"""The CANDLE folder reader: JSON factors, resized images with scaled boxes, the confounded subset, pairs."""

from __future__ import annotations

import itertools
import json
import logging

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from repscope.data.boxes import box_masks
from repscope.data.candle.dataset import (
    COLORS,
    CONFOUNDED_COLORS,
    OBJECTS,
    confounded_mask,
    pair_table,
    paired_rows,
    read_folder,
    read_record,
)
from repscope.data.registry import load_dataset
from repscope.errors import DataFormatError, InvalidArgumentError

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

WIDTH, HEIGHT = 80, 60  # a quarter of CANDLE's 320x240
RGB = {
    "red": (220, 30, 30),
    "blue": (30, 30, 220),
    "yellow": (230, 220, 40),
    "purple": (140, 40, 160),
    "orange": (240, 140, 30),
}


def write_render(folder, name, obj, color, size, rotation, scene, light, bounds):
    """A render as the published layout stores it: a grey scene and the object's coloured box."""
    image = np.full((HEIGHT, WIDTH, 3), 90, np.uint8)
    (x0, y0), (x1, y1) = bounds
    image[y0:y1, x0:x1] = RGB[color.lower()]
    Image.fromarray(image).save(folder / f"{name}.png")
    record = {
        "scene": scene,
        "lights": light,
        "objects": {
            f"{obj.title()}_0": {
                "object_type": obj,
                "color": color,
                "size": size,
                "rotation": rotation,
                "bounds": bounds,
            }
        },
    }
    (folder / f"{name}.json").write_text(json.dumps(record))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("candle")
    (root / "part").mkdir()
    rng = np.random.default_rng(0)
    grid = itertools.product(OBJECTS, COLORS, (1, 2, 3), (0, 45))
    for k, (obj, color, size, rotation) in enumerate(grid):
        x0, y0 = int(rng.integers(0, 50)), int(rng.integers(0, 30))
        side = 6 * size
        where = root / "part" if k % 2 else root
        light = ("left", "middle", "right")[k % 3]
        write_render(where, f"{k:04d}", obj, color, size, rotation, "indoor", light, [[x0, y0], [x0 + side, y0 + side]])
    return root


def test_read_record_and_its_errors(tmp_path):
    write_render(tmp_path, "a", "cone", "Purple", "large", 15, "Outdoor", "right", [[1, 2], [30, 40]])
    record = read_record(tmp_path / "a.json")
    assert (record["object"], record["color"], record["size"], record["rotation"]) == ("cone", "purple", "large", 15)
    assert (record["scene"], record["light"]) == ("outdoor", "right")
    np.testing.assert_array_equal(record["bounds"], [1, 2, 30, 40])
    good = json.loads((tmp_path / "a.json").read_text())
    cases = {
        "no 'lights' key": {k: v for k, v in good.items() if k != "lights"},
        "exactly one object": {**good, "objects": {}},
        "bounds must be": {**good, "objects": {"C": {**good["objects"]["Cone_0"], "bounds": [[1, 2]]}}},
        "rotation must be whole": {**good, "objects": {"C": {**good["objects"]["Cone_0"], "rotation": 12.5}}},
    }
    for message, record in cases.items():
        (tmp_path / "bad.json").write_text(json.dumps(record))
        with pytest.raises(DataFormatError, match=f"bad.json.*{message}"):
            read_record(tmp_path / "bad.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataFormatError, match="bad.json: not a readable JSON"):
        read_record(tmp_path / "bad.json")


def test_folder_factors_images_and_scaled_boxes(folder):
    data = read_folder(folder, image_size=32)
    n = len(OBJECTS) * len(COLORS) * 3 * 2
    assert data["image"].shape == (n, 3, 32, 32) and data["factors"].shape == (n, 6)
    # sizes 1-3 in the files (no 0) are classes 0-2; rotations 0 and 45 are classes 0 and 3
    assert set(data["factors"][:, 2]) == {0, 1, 2} and set(data["factors"][:, 3]) == {0, 3}
    assert set(data["factors"][:, 5]) == {0, 1, 2} and set(data["factors"][:, 4]) == {0}
    # boxes scale with the image: x by 32 / 80, y by 32 / 60; the object's colour fills the scaled box
    for image, box, factors in zip(data["image"], data["box"], data["factors"]):
        # away from the edges the resampling blends: the colour inside, the grey scene outside
        core = box_masks((box + [1, 1, -1, -1])[None], 32, 32)[0]
        outside = ~box_masks((box + [-1.5, -1.5, 1.5, 1.5])[None], 32, 32)[0]
        colour = np.array(RGB[COLORS[factors[1]]])
        if core.any():
            assert np.abs(image[:, core].T.astype(int) - colour).max() <= 3
        assert np.abs(image[:, outside].astype(int) - 90).max() <= 3
    # the file order is sorted by path: 0000.json first (top folder), then part/0001.json
    first = json.loads((folder / "0000.json").read_text())["objects"]
    x0, y0 = next(iter(first.values()))["bounds"][0]
    np.testing.assert_allclose(data["box"][0][:2], [x0 * 32 / 80, y0 * 32 / 60], rtol=1e-6)


def test_missing_image_and_empty_folder(tmp_path):
    with pytest.raises(InvalidArgumentError, match="holds no CANDLE .json"):
        read_folder(tmp_path)
    write_render(tmp_path, "a", "cube", "red", 0, 0, "indoor", "left", [[0, 0], [5, 5]])
    (tmp_path / "a.png").unlink()
    with pytest.raises(DataFormatError, match=r"a.json: no image beside it"):
        read_folder(tmp_path)


def test_confounded_subset_by_hand():
    # cube (0) is red (0) or blue (1); torus (4) is orange (4) or red (0)
    factors = np.array(
        [[0, 0, 0, 0, 0, 0], [0, 2, 0, 0, 0, 0], [4, 0, 0, 0, 0, 0], [4, 1, 0, 0, 0, 0], [1, 2, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(confounded_mask(factors), [True, False, True, False, True])


def test_pairs_differ_in_exactly_the_chosen_factors(folder):
    factors = read_folder(folder, image_size=8)["factors"]
    for differ in ([1], [0, 1]):
        pairs = paired_rows(factors, differ, n=200, seed=1)
        assert pairs.shape == (200, 2)
        a, b = factors[pairs[:, 0]], factors[pairs[:, 1]]
        others = [k for k in range(6) if k not in differ]
        assert np.all(a[:, differ] != b[:, differ]) and np.all(a[:, others] == b[:, others])
    np.testing.assert_array_equal(paired_rows(factors, [1], 20, seed=3), paired_rows(factors, [1], 20, seed=3))
    # the light changes with the file index, so no two renders differ in the light alone
    with pytest.raises(InvalidArgumentError, match="no two rows differ"):
        paired_rows(factors, [5], 5)


def test_pairs_from_the_cli_name_files_whose_json_differs_as_asked(folder, tmp_path, run_cli):
    out = tmp_path / "pairs.csv"
    code, stdout, stderr = run_cli(
        ["candle", "pairs", str(folder), "--differ", "object", "--differ", "color", "--n", "30", "--out", str(out)]
    )
    assert code == 0, stderr
    assert "30 pairs differing in object, color" in stdout
    table = pd.read_csv(out, dtype=str)
    assert len(table) == 30
    for _, row in table.iterrows():
        first = read_record((folder / row["first"]).with_suffix(".json"))
        second = read_record((folder / row["second"]).with_suffix(".json"))
        assert first["color"] == row["color_first"] and second["color"] == row["color_second"]
        assert first["color"] != second["color"] and first["object"] != second["object"]
        assert all(first[name] == second[name] for name in ("size", "rotation", "scene", "light"))
    # the confounded subset: both images of each pair keep their object's two colours
    confounded = pair_table(folder, ["object"], 40, seed=2, subset="confounded")
    allowed = {(obj, color) for obj, colors in CONFOUNDED_COLORS.items() for color in colors}
    assert set(zip(confounded["object_first"], confounded["color_first"])) <= allowed
    with pytest.raises(InvalidArgumentError, match="--differ"):
        pair_table(folder, ["colour"], 5)
    with pytest.raises(InvalidArgumentError, match="--differ light: no two images"):
        pair_table(folder, ["light"], 5)  # the light changes with the file index


def test_registered_dataset_trains_a_box_weighted_model(folder, tmp_path):
    from repscope.studies.candle.score_arrays import codes_of_run
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    confounded = load_dataset("candle", data_dir=str(folder), subset="confounded")
    counts = {name: len(split) for name, split in confounded.splits.items()}
    assert sum(counts.values()) == len(OBJECTS) * 2 * 3 * 2 and counts["test"] == 12  # 2 colours per object
    assert confounded.image_shape == (3, 64, 64)
    config = TrainConfig(
        model=Named(name="beta-vae-semi", params={"latent_dim": 6, "box_weight": 5.0}),
        data=Named(name="candle", params={"data_dir": str(folder)}),
        trainer=TrainerSection(max_epochs=1),
        batch_size=32,
    )
    outcome = fit(config, out=tmp_path / "run")
    assert np.isfinite(outcome.metrics["final"]["train_loss_epoch"])
    # the factor class counts come from the data (one scene in this folder, so 3 by the canonical names)
    assert list(outcome.task.hparams.factor_sizes) == [5, 5, 3, 6, 3, 3]
    factors, codes, _ = codes_of_run(tmp_path / "run", n=20)
    assert codes.shape == (20, 6) and factors.shape[0] == 20


def test_packed_parts_unpack_to_the_same_images_factors_boxes_and_split(folder, tmp_path):
    """benchmarks/candle_parts.py (how renders travel to a device): packed at 32x32 in three parts and
    unpacked, part by part, into a folder of 32x32 PNGs that the dataset reads back as the original
    resized: the same pixels, factors, boxes (rescaled to the stored size) and train / test split."""
    import importlib.util  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "candle_parts.py"
    spec = importlib.util.spec_from_file_location("candle_parts", script)
    parts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parts)
    written = parts.pack(folder, tmp_path / "parts", 3, 32)
    assert [p.name for p in written] == ["part-1", "part-2", "part-3"]
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == ["part-1", "part-2", "part-3"]  # no leftovers
    with pytest.raises(SystemExit, match=r"part-1: exists; pack into another folder \(nothing was written\)$"):
        parts.pack(folder, tmp_path / "parts", 3, 32)
    unpacked = tmp_path / "unpacked"
    counts = [parts.unpack(part, unpacked) for part in written]
    original, again = read_folder(folder, 32), read_folder(unpacked, 32)
    assert sum(counts) == len(original["image"]) and min(counts) >= len(original["image"]) // 3
    assert Image.open(next(unpacked.rglob("*.png"))).size == (32, 32)
    assert np.array_equal(again["image"], original["image"])
    assert np.array_equal(again["factors"], original["factors"])
    np.testing.assert_allclose(again["box"], original["box"], atol=1e-3)
    assert list(again["scenes"]) == list(original["scenes"])
    split = {
        name: load_dataset("candle", data_dir=str(d), image_size=32) for name, d in (("a", folder), ("b", unpacked))
    }
    for key in ("train", "test"):
        assert np.array_equal(split["a"].arrays(key, ["index"])["index"], split["b"].arrays(key, ["index"])["index"])

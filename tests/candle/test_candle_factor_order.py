"""CANDLE's factor columns read by hand from a folder with several scenes and lights.

Each row's scene class differs from its light class and every factor takes more than one value, so a
swap of two columns (scene and light, object and colour, size and rotation) or a wrong class order
changes the table.
"""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from repscope.data.candle.dataset import FACTOR_NAMES, candle_dataset, folder_records, read_folder

# name, object, colour, size, rotation, scene, light, bounds (x0, y0, x1, y1)
RECORDS = [
    ("a", "sphere", "purple", "large", 45, "outdoor", "left", [[4, 6], [20, 30]]),
    ("b", "torus", "red", "small", 90, "garden", "middle", [[10, 2], [14, 9]]),
    ("c", "cube", "yellow", "medium", 15, "indoor", "right", [[30, 40], [50, 44]]),
    ("d", "cone", "blue", "small", 0, "playground", "left", [[0, 0], [8, 16]]),
    ("e", "cylinder", "orange", "large", 60, "beach", "right", [[40, 12], [60, 50]]),
]
# classes worked out by hand from the module's orders: objects cube, sphere, cylinder, cone, torus;
# colours red, blue, yellow, purple, orange; sizes small, medium, large; rotations 0, 15, 30, 45, 60, 90;
# scenes indoor, playground, outdoor, then the others sorted (beach = 3, garden = 4); lights left,
# middle, right
EXPECTED = np.array(
    [
        [1, 3, 2, 3, 2, 0],  # a: sphere purple large 45 outdoor left
        [4, 0, 0, 5, 4, 1],  # b: torus red small 90 garden middle
        [0, 2, 1, 1, 0, 2],  # c: cube yellow medium 15 indoor right
        [3, 1, 0, 0, 1, 0],  # d: cone blue small 0 playground left
        [2, 4, 2, 4, 3, 2],  # e: cylinder orange large 60 beach right
    ]
)


def write_folder(root):
    for name, obj, color, size, rotation, scene, light, bounds in RECORDS:
        image = np.full((64, 64, 3), 80, np.uint8)
        (x0, y0), (x1, y1) = bounds
        image[y0:y1, x0:x1] = (200, 30, 30)
        Image.fromarray(image).save(root / f"{name}.png")
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
        (root / f"{name}.json").write_text(json.dumps(record))
    return root


def test_factor_names_order():
    assert FACTOR_NAMES == ("object", "color", "size", "rotation", "scene", "light")


def test_folder_records_columns_by_hand(tmp_path):
    records = folder_records(write_folder(tmp_path))
    assert [path.stem for path in records["files"]] == ["a", "b", "c", "d", "e"]
    assert records["scenes"] == ["indoor", "playground", "outdoor", "beach", "garden"]
    np.testing.assert_array_equal(records["factors"], EXPECTED)
    np.testing.assert_array_equal(records["bounds"][0], [4, 6, 20, 30])


def test_read_folder_and_dataset_fields_by_hand(tmp_path):
    root = write_folder(tmp_path)
    data = read_folder(root, image_size=32)
    np.testing.assert_array_equal(data["factors"], EXPECTED)
    dataset = candle_dataset(str(root), image_size=32, test_fraction=0.4, seed=0)
    seen = 0
    for split_name in ("train", "test"):
        split = dataset.splits[split_name]
        batch = split.arrays if hasattr(split, "arrays") else split[np.arange(len(split))]
        for position, row in enumerate(np.asarray(batch["index"]).reshape(-1)):
            expected = EXPECTED[int(row)]
            np.testing.assert_array_equal(np.asarray(batch["factors"])[position], expected)
            # the names written out here, not read from the module: a reordered FACTOR_NAMES must show
            for column, name in enumerate(("object", "color", "size", "rotation", "scene", "light")):
                assert int(np.asarray(batch[name])[position]) == expected[column], (split_name, row, name)
            seen += 1
    assert seen == len(RECORDS)

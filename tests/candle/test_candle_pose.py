"""The CANDLE scene's parameter code against what Blender made of it (runs without the candle extra).

``tests/data/candle-blender-poses.json`` holds, for nine grid points rendered with bpy 5.0.1 (cubes at every
rotation of the grid, tori at three), the object's rotation, scale, location and world matrix as Blender
read them back, the artificial light's location, the camera's projection-view matrix and the record
``CandleStage.render`` wrote (tests/data/README.md). The pose and light functions the stage uses are
checked against them here, and the cube's box is rebuilt by hand from the pose and the recorded camera:
a rotation handed to Blender in the wrong unit turns the cube to another angle and moves its box.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from repscope.data.candle.scene import light_location, object_pose, pixel_coordinates

RECORDED = Path(__file__).parent.parent / "data" / "candle-blender-poses.json"
# the cube's mesh after the stage scales it to 1 m across: the corners of [-0.5, 0.5]^3
CUBE_CORNERS = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
# Blender holds its transforms in float32
FLOAT32 = 1e-6


@pytest.fixture(scope="module")
def recorded():
    data = json.loads(RECORDED.read_text())
    assert data["provenance"]["bpy"].startswith("5.0")
    return data["cases"]


def world_matrix(location, scale, rotation) -> np.ndarray:
    """Blender's object matrix ``T @ R @ S`` for XYZ Euler angles, written out here."""
    (ax, ay, az), (sx, sy, sz) = rotation, scale
    rx = np.array([[1, 0, 0], [0, math.cos(ax), -math.sin(ax)], [0, math.sin(ax), math.cos(ax)]])
    ry = np.array([[math.cos(ay), 0, math.sin(ay)], [0, 1, 0], [-math.sin(ay), 0, math.cos(ay)]])
    rz = np.array([[math.cos(az), -math.sin(az), 0], [math.sin(az), math.cos(az), 0], [0, 0, 1]])
    result = np.eye(4)
    result[:3, :3] = rz @ ry @ rx @ np.diag([sx, sy, sz])
    result[:3, 3] = location
    return result


def test_the_pose_is_blenders_rotation_in_radians_and_size_in_metres(recorded):
    rotations = set()
    for case in recorded:
        point, blender = case["point"], case["blender"]
        scale, rotation = object_pose(point)
        assert rotation == pytest.approx(blender["rotation_euler"], abs=FLOAT32), point
        assert scale == pytest.approx(blender["scale"], abs=FLOAT32), point
        # the grid's degrees, read back from Blender's matrix: the turn about the vertical axis
        turn = math.degrees(math.atan2(blender["matrix_world"][1][0], blender["matrix_world"][0][0]))
        assert turn == pytest.approx(point["rotation"], abs=1e-4), point
        # the whole matrix from the pose and the recorded position
        expected = world_matrix(blender["location"], scale, rotation)
        np.testing.assert_allclose(blender["matrix_world"], expected, atol=1e-6, err_msg=str(point))
        rotations.add(point["rotation"])
    assert rotations == {0, 15, 30, 45, 60, 90}


def test_the_cubes_box_from_the_pose_is_the_one_blender_rendered(recorded):
    """Project the cube's corners, posed by object_pose at the recorded floor position, through the
    recorded camera: the box is the record's to its 0.01-pixel rounding."""
    cubes = [case for case in recorded if case["point"]["object"] == "cube"]
    assert len(cubes) == 6
    width, height = 64, 48
    for case in cubes:
        point, blender, record = case["point"], case["blender"], case["record"]
        assert blender["mesh_extent"] == [[-0.5] * 3, [0.5] * 3]
        scale, rotation = object_pose(point)
        x, y = record["position"]
        # the cube stands on the floor: its centre half its size up
        location = (blender["location"][0], blender["location"][1], 0.5 * scale[2])
        assert (x, y) == pytest.approx(location[:2], abs=1e-4)
        assert blender["location"][2] == pytest.approx(location[2], abs=FLOAT32)
        world = np.c_[CUBE_CORNERS, np.ones(8)] @ world_matrix(location, scale, rotation).T
        clip = world @ np.array(blender["projection_view"]).T
        ndc = clip[:, :2] / clip[:, 3:4]
        pixels = np.c_[(ndc[:, 0] + 1) / 2 * width, (1 - ndc[:, 1]) / 2 * height]
        box = [pixels.min(axis=0).tolist(), pixels.max(axis=0).tolist()]
        bounds = record["objects"]["Cube_0"]["bounds"]
        np.testing.assert_allclose(box, bounds, atol=0.011, err_msg=str(point))


def test_the_stages_projection_gives_the_boxes_blender_rendered(recorded):
    """The stage's own projection (pixel_coordinates) of the cube's corners, placed by Blender's recorded
    world matrix, through the recorded camera: the record's box; the corners by hand match it too."""
    for case in [case for case in recorded if case["point"]["object"] == "cube"]:
        blender, record = case["blender"], case["record"]
        world = (np.c_[CUBE_CORNERS, np.ones(8)] @ np.array(blender["matrix_world"]).T)[:, :3]
        pixels = pixel_coordinates(world, blender["projection_view"], (64, 48))
        box = [pixels.min(axis=0).tolist(), pixels.max(axis=0).tolist()]
        np.testing.assert_allclose(box, record["objects"]["Cube_0"]["bounds"], atol=0.011, err_msg=str(case["point"]))
    # by hand: a camera matrix that is the identity maps (x, y) in [-1, 1] onto the image, y down
    corners = np.array([[-1.0, 1.0, 0.0], [1.0, -1.0, 0.0], [0.0, 0.0, 0.5], [0.5, 0.5, 0.0]])
    np.testing.assert_allclose(pixel_coordinates(corners, np.eye(4), (64, 48)), [[0, 0], [64, 48], [32, 24], [48, 12]])
    # the w row divides: points twice as far (w = 2) land halfway to the centre
    halving = np.eye(4)
    halving[3] = [0, 0, 1, 1]
    np.testing.assert_allclose(pixel_coordinates(np.array([[1.0, 1.0, 1.0]]), halving, (64, 48)), [[48, 12]])


def test_the_light_stands_where_blender_put_it(recorded):
    lights = set()
    for case in recorded:
        point, blender = case["point"], case["blender"]
        placed = light_location(point["light"], tuple(blender["location"][:2]))
        assert placed == pytest.approx(blender["light_location"], abs=FLOAT32), point
        lights.add(point["light"])
    assert lights == {"left", "right"}
    # by hand: left is 2.2 m to the left of the object, 0.8 m nearer the camera, 2.2 m up
    assert light_location("left", (1.0, 0.5)) == pytest.approx((-1.2, -0.3, 2.2))
    assert light_location("middle", (1.0, 0.5)) == pytest.approx((1.0, 0.2, 3.0))
    assert light_location("right", (-1.0, 0.0)) == pytest.approx((1.2, -0.8, 2.2))

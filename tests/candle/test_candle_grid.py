"""The CANDLE render grid: point indices, sub-grids, shards, seeds and what a resumed render still does."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.data.candle.grid import (
    GRID_SIZE,
    grid_points,
    image_seed,
    image_stem,
    parse_grid,
    parse_shard,
    pending_points,
    shard_points,
)
from repscope.errors import InvalidArgumentError


def test_the_full_grid_has_4050_points_in_row_major_order():
    points = grid_points()
    assert GRID_SIZE == 4050 and len(points) == 4050
    assert [p["index"] for p in points] == list(range(4050))
    assert points[0] == {"index": 0, "object": "cube", "color": "red", "size": "small", "rotation": 0,
                         "scene": "indoor", "light": "left"}  # fmt: skip
    # light changes fastest, then scene, rotation, size, color, object
    assert points[1]["light"] == "middle" and points[3]["scene"] == "playground" and points[9]["rotation"] == 15
    assert points[4049]["object"] == "torus" and points[4049]["light"] == "right"
    # 3 x 3 x 6 x 3 x 5 = 810 points per object
    assert points[810]["object"] == "sphere" and points[810]["color"] == "red"


def test_a_sub_grid_keeps_the_full_grid_indices_and_seeds():
    grid = parse_grid(["color=blue,RED", "rotation=90,0", "scene=outdoor"])
    assert grid["color"] == ("red", "blue") and grid["rotation"] == (0, 90) and grid["scene"] == ("outdoor",)
    points = grid_points(grid)
    assert len(points) == 5 * 2 * 3 * 2 * 1 * 3
    full = {p["index"]: p for p in grid_points()}
    assert all(full[p["index"]] == p for p in points)  # same point, same index as in the full grid
    assert [p["index"] for p in points] == sorted(p["index"] for p in points)
    # --limit spreads its points over the sub-grid: 180 points, 4 kept at positions 0, 45, 90, 135 (k * 180 // 4)
    assert [p["index"] for p in grid_points(grid, limit=4)] == [points[i]["index"] for i in (0, 45, 90, 135)]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("color", "expected factor=v1,v2"),
        ("colour=red", "unknown factor 'colour'"),
        ("color=green", "color has no value 'green'"),
        ("rotation=20", "rotation has no value '20'"),
        ("size=", "no values for 'size'"),
    ],
)
def test_grid_errors_name_the_option(option, message):
    with pytest.raises(InvalidArgumentError, match=f"--grid '{option}'.*{message}"):
        parse_grid([option])
    with pytest.raises(InvalidArgumentError, match="given twice"):
        parse_grid(["size=small", "size=large"])


def test_shards_are_disjoint_and_cover_the_grid():
    points = grid_points(parse_grid(["object=cube,torus"]))
    shards = [shard_points(points, i, 4) for i in range(4)]
    indices = [p["index"] for shard in shards for p in shard]
    assert sorted(indices) == [p["index"] for p in points] and len(set(indices)) == len(indices)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(InvalidArgumentError, match="--shard"):
            parse_shard(bad)
    with pytest.raises(InvalidArgumentError, match="--limit"):
        grid_points(limit=0)


def test_image_seeds_depend_on_the_index_alone():
    seeds = [image_seed(i) for i in range(4050)]
    assert len(set(seeds)) == 4050  # every point its own draw
    assert image_seed(17) == image_seed(17) and image_seed(17, seed=1) != image_seed(17)
    assert all(0 <= s < 2**32 for s in seeds[:10])
    assert image_stem(42) == "00042"


def test_pending_points_skip_finished_images(tmp_path):
    points = grid_points()[:5]
    for point in points[:2]:
        (tmp_path / f"{image_stem(point['index'])}.png").write_bytes(b"png")
        (tmp_path / f"{image_stem(point['index'])}.json").write_text("{}")
    (tmp_path / f"{image_stem(points[2]['index'])}.png").write_bytes(b"png")  # interrupted before its JSON
    assert [p["index"] for p in pending_points(points, tmp_path)] == [2, 3, 4]
    assert np.array_equal([p["index"] for p in pending_points(points, tmp_path / "new")], range(5))

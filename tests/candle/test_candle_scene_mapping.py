"""The renderer's scene factor reaches the scene that is drawn: the floor's colour read back by hand.

The procedural floors (``repscope.data.candle.scene``) are a brown wooden floor indoors, green grass in the
playground and grey pavement outdoors; the bottom rows of a render (floor only, the object sits higher)
show that hue. Same object, light, camera seed and colour in every render: only the scene differs.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("bpy", reason="the candle extra (bpy) is not installed: pip install 'repscope[candle]'")

from repscope.data.candle.scene import CandleStage  # noqa: E402


@pytest.mark.slow
def test_each_scene_value_draws_its_own_floor(tmp_path):
    stage = CandleStage(resolution=(64, 48), samples=2, denoise=False, device="cpu")
    floor = {}
    for scene in ("indoor", "playground", "outdoor"):
        point = {"index": 0, "object": "cube", "color": "red", "size": "small", "rotation": 0, "scene": scene}
        record = stage.render({**point, "light": "middle"}, 5, tmp_path / f"{scene}.png")
        assert (record["scene"], record["lights"]) == (scene, "middle")
        box = np.asarray(next(iter(record["objects"].values()))["bounds"], float).reshape(-1)
        assert box[3] < 48 - 6  # the strip read below is floor only
        image = np.asarray(Image.open(tmp_path / f"{scene}.png").convert("RGB"), float)
        floor[scene] = image[-6:].reshape(-1, 3).mean(axis=0)
    red, green, blue = floor["indoor"]
    assert red > green > blue and red - blue > 30, floor  # warm wood
    red, green, blue = floor["playground"]
    assert green > red + 30 and green > blue + 30, floor  # grass
    assert np.ptp(floor["outdoor"]) < 15, floor  # grey pavement

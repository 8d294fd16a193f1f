"""Record ``tests/data/candle-blender-poses.json``: what Blender (``bpy``, the candle extra) makes of a few
CANDLE grid points: the object's rotation, scale, location and world matrix, the artificial light's
location, the camera's projection-view matrix and the record ``CandleStage.render`` writes (the object's
box in pixels among it), so that ``tests/candle/test_candle_pose.py`` checks the scene's parameter code
(rotation unit, sizes, light offsets) against Blender on machines without it.

Run from the repository root in an environment with the candle extra (``pip install -e '.[candle]'``)::

    python tests/data/record_candle_poses.py

Tiny renders (64x48, 1 sample, no denoising, CPU); the numbers recorded do not depend on the samples.
"""

from __future__ import annotations

import datetime
import json
import platform
import tempfile
from pathlib import Path

import numpy as np

from repscope.data.candle.grid import grid_points, image_seed, parse_grid
from repscope.data.candle.scene import CandleStage

OUT = Path(__file__).with_name("candle-blender-poses.json")
RESOLUTION = (64, 48)
GRID = ["object=cube,torus", "color=red", "size=small,large", "scene=indoor", "light=left,right"]
# every rotation of the grid on the cube (its box shows the turn), sizes and lights alternating; the torus
# (on its rim) at three
CHOSEN = [
    ("cube", 0, "small", "left"),
    ("cube", 15, "large", "right"),
    ("cube", 30, "small", "right"),
    ("cube", 45, "large", "left"),
    ("cube", 60, "small", "left"),
    ("cube", 90, "large", "right"),
    ("torus", 15, "small", "right"),
    ("torus", 45, "large", "left"),
    ("torus", 90, "large", "right"),
]


def matrix(value) -> list[list[float]]:
    return np.array(value, dtype=np.float64).round(7).tolist()


def main() -> None:
    import bpy

    points = {(p["object"], p["rotation"], p["size"], p["light"]): p for p in grid_points(parse_grid(GRID))}
    chosen = [points[key] for key in CHOSEN]
    stage = CandleStage(resolution=RESOLUTION, samples=1, denoise=False, device="cpu", scenes=["indoor"])
    cases = []
    with tempfile.TemporaryDirectory() as folder:
        for point in chosen:
            seed = image_seed(point["index"])
            record = stage.render(point, seed, Path(folder) / "image.png")
            shape = stage._objects[point["object"]]
            depsgraph = bpy.context.evaluated_depsgraph_get()
            projection = np.array(stage.camera.calc_matrix_camera(depsgraph, x=RESOLUTION[0], y=RESOLUTION[1]))
            view = np.array(stage.camera.matrix_world.inverted())
            vertices = stage._vertices(shape)
            blender = {
                "rotation_euler": list(shape.rotation_euler),
                "scale": list(shape.scale),
                "location": list(shape.location),
                "matrix_world": matrix(shape.matrix_world),
                "light_location": list(stage.light.location),
                "projection_view": matrix(projection @ view),
                "mesh_extent": matrix([vertices.min(axis=0), vertices.max(axis=0)]),
                "mesh_vertices": len(vertices),
            }
            cases.append({"point": point, "seed": seed, "record": record, "blender": blender})
    provenance = {
        "what": "CandleStage(resolution=(64, 48), samples=1, denoise=False, device='cpu').render of each point",
        "bpy": bpy.app.version_string,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "recorded": datetime.date.today().isoformat(),
        "how": "python tests/data/record_candle_poses.py",
    }
    lines = ",\n".join(f"  {json.dumps(case)}" for case in cases)
    OUT.write_text(f'{{"provenance": {json.dumps(provenance)},\n "cases": [\n{lines}\n]}}\n')
    print(len(cases), [(c["point"]["object"], c["point"]["rotation"], c["point"]["size"]) for c in cases])


if __name__ == "__main__":
    main()

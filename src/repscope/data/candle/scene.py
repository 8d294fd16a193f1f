"""The CANDLE scene in Blender (``bpy``, the ``repscope[candle]`` extra): one stage, many renders.

:class:`CandleStage` builds everything once per process (the three procedural scenes, the five
objects, the artificial light, the camera, the render settings) and then renders grid point after
grid point, changing only what a point changes; Cycles keeps its data between renders
(``use_persistent_data``), so start-up and scene building are paid once.

The causal graph of the paper (section 3, Fig. 2):

* **object** (cube, sphere, cylinder, cone, torus), **color**, **size** (small, medium, large: 0.4,
  0.55 and 0.75 m across) and **rotation** about the vertical axis (degrees in the grid, radians for
  Blender). The torus stands on its rim so that its rotation shows; sphere, cylinder and cone are
  symmetric about the vertical axis, so their rotation does not change the image (as in the published
  dataset). The object stands on the floor, fully inside the frame, at a seeded random position.
* **scene**: ``indoor`` (wooden floor, walls, furniture, a ceiling lamp), ``playground`` (grass, a
  slide and a swing frame, open sky, sun) and ``outdoor`` (pavement, trees, a house, low sun), built
  from Blender primitives; or, with ``hdri_dir``, the user's panoramic HDRI ``<scene>.hdr|.exr``
  lighting the object, whose floor then only catches shadows.
* **light**: an artificial point light that casts the object's shadow from the ``left``, ``middle``
  (overhead) or ``right``, placed relative to the object.
* **U**, the unobserved confounder: the scene's own light (lamp power and ambient level indoors; the
  sun's elevation, direction, colour and strength outside; the HDRI's strength), drawn per image. It
  acts on the scene's look and on the artificial light's effect (its shadow and highlights stand out
  less in a bright scene). Its value is stored in the JSON under ``confounder`` for analysis; the
  factors leave it out.
* The camera looks at the floor from 1.9 m with a seeded jitter of a few centimetres and about a
  degree per image.

Every random draw of an image comes from ``numpy.random.default_rng(seed)`` with the seed of its grid
index (:func:`repscope.data.candle.grid.image_seed`), in a fixed order, so an index renders the same
image on any machine. The bounding box is the projection of the object's evaluated mesh vertices
into the image, in pixels with the origin at the top-left corner, ``[[x0, y0], [x1, y1]]``.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError
from repscope.fileio import atomic_path

# linear RGB of the five colours (saturated, far apart in hue, none of them the scenes' own)
COLOR_RGB: dict[str, tuple[float, float, float]] = {
    "red": (0.80, 0.03, 0.03),
    "blue": (0.03, 0.08, 0.80),
    "yellow": (0.85, 0.72, 0.03),
    "purple": (0.38, 0.05, 0.62),
    "orange": (0.90, 0.30, 0.02),
}
SIZE_METRES: dict[str, float] = {"small": 0.4, "medium": 0.55, "large": 0.75}
# the artificial light relative to the object (metres): beside it at the left or right, or overhead
LIGHT_OFFSETS: dict[str, tuple[float, float, float]] = {
    "left": (-2.2, -0.8, 2.2),
    "middle": (0.0, -0.3, 3.0),
    "right": (2.2, -0.8, 2.2),
}
LIGHT_WATTS = 450.0
SKY_STRENGTH = 0.7
HDRI_SUFFIXES = (".hdr", ".exr")
CAMERA_LOCATION = (0.0, -7.0, 1.9)
CAMERA_TARGET = (0.0, 0.0, 0.25)
# where an object may stand (metres, floor coordinates); the props stand behind y = 4.5
FLOOR_X, FLOOR_Y = (-1.9, 1.9), (-2.2, 1.6)
MARGIN_PIXELS = 3.0


def object_pose(point: dict[str, Any]) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """The scale and rotation Blender gives a grid point's object (its mesh is 1 m across).

    Parameters
    ----------
    point : dict
        A grid point: ``size`` (small, medium, large) and ``rotation`` (degrees about the vertical axis).

    Returns
    -------
    tuple
        ``(scale, rotation_euler)``: the scale in metres on each axis (:data:`SIZE_METRES`) and Blender's
        XYZ Euler angles in radians, ``(0, 0, radians(rotation))``.
    """
    metres = SIZE_METRES[point["size"]]
    # the grid holds degrees; Blender's rotation_euler takes radians
    return (metres, metres, metres), (0.0, 0.0, math.radians(float(point["rotation"])))


def pixel_coordinates(points: np.ndarray, projection_view: Any, resolution: tuple[int, int]) -> np.ndarray:
    """Where world points land in the image, in pixels with the origin at the top-left corner.

    Parameters
    ----------
    points : numpy.ndarray
        ``(n, 3)`` world coordinates (metres).
    projection_view : array-like
        ``(4, 4)`` the camera's projection matrix times the inverse of its world matrix.
    resolution : tuple of int
        The image's width and height in pixels.

    Returns
    -------
    numpy.ndarray
        ``(n, 2)`` ``(x, y)``: normalised device coordinates in [-1, 1] scaled to the image, y pointing
        down (Blender's y points up).
    """
    width, height = resolution
    homogeneous = np.c_[points, np.ones(len(points))] @ np.asarray(projection_view, dtype=np.float64).T
    ndc = homogeneous[:, :2] / homogeneous[:, 3:4]
    return np.c_[(ndc[:, 0] + 1) / 2 * width, (1 - ndc[:, 1]) / 2 * height]


def light_location(light: str, position: tuple[float, float]) -> tuple[float, float, float]:
    """Where the artificial light stands for an object at floor ``position`` (metres).

    Parameters
    ----------
    light : {"left", "middle", "right"}
        The grid's light factor.
    position : tuple of float
        The object's ``(x, y)`` on the floor.

    Returns
    -------
    tuple of float
        ``(x, y, z)``: the position plus :data:`LIGHT_OFFSETS` of ``light``, at the offset's height.
    """
    offset = LIGHT_OFFSETS[light]
    return (position[0] + offset[0], position[1] + offset[1], offset[2])


def import_bpy() -> Any:
    """``bpy``, or an error saying how to install it.

    Blender's user folder (its extensions cache) is ``$REPSCOPE_HOME/blender`` unless
    ``BLENDER_USER_RESOURCES`` is set.

    Returns
    -------
    module
        The ``bpy`` module.

    Raises
    ------
    InvalidArgumentError
        When ``bpy`` is not installed (it is the ``repscope[candle]`` extra; wheels exist for one
        Python version per Blender release: Python 3.11 for Blender 4.1-5.0).
    """
    if "bpy" not in sys.modules:
        # Blender keeps its user files (an extensions cache) in ~/.config/blender unless told otherwise
        from repscope.data.sources import repscope_home  # noqa: PLC0415

        os.environ.setdefault("BLENDER_USER_RESOURCES", str(repscope_home() / "blender"))
        # a process spawned from one that imported bpy inherits Blender's script folders on sys.path;
        # their Python-side bpy package would shadow the compiled module, which adds them back itself
        sys.path[:] = [entry for entry in sys.path if not _blender_script_folder(entry)]
    try:
        import bpy  # noqa: PLC0415 -- optional extra, ~1 GB, loaded only to render
    except ImportError as exc:
        raise InvalidArgumentError(missing_bpy_message(sys.version_info, exc)) from None
    return bpy


# the one Python version the bpy wheels of Blender 4.1-5.0 are built for
BPY_PYTHON = (3, 11)


def missing_bpy_message(version: Sequence[int], error: BaseException | str) -> str:
    """The one line that says bpy is missing: the running Python, and that the ``candle`` extra needs 3.11.

    Parameters
    ----------
    version : sequence of int
        The running Python's version (``sys.version_info``).
    error : BaseException or str
        The ``ImportError`` of ``import bpy``, quoted at the end.

    Returns
    -------
    str
        E.g. ``candle: Blender's bpy module is not installed and cannot be under Python 3.12: the candle
        extra needs Python 3.11 exactly (bpy has wheels for 3.11 only); ...``.
    """
    running = f"{version[0]}.{version[1]}"
    needed = f"{BPY_PYTHON[0]}.{BPY_PYTHON[1]}"
    detail = str(error).splitlines()[0] if str(error) else type(error).__name__
    if tuple(version[:2]) != BPY_PYTHON:
        return (
            f"candle: Blender's bpy module is not installed and cannot be under Python {running}: the candle extra "
            f"needs Python {needed} exactly (bpy wheels exist for {needed} only); create a Python {needed} "
            f"environment and pip install 'repscope[candle]' there ({detail})"
        )
    return (
        f"candle: Blender's bpy module is not installed in this Python {running}: pip install 'repscope[candle]' "
        f"(the candle extra needs Python {needed} exactly) ({detail})"
    )


@contextlib.contextmanager
def blender_stdout_silenced() -> Iterator[None]:
    """Send what Blender's C code prints on stdout (Cycles' notes on GPU libraries it does not find,
    render statistics) to /dev/null inside the block; Python's own output is flushed first."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all
        yield
        return
    with open(os.devnull, "wb") as sink:
        os.dup2(sink.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


@contextlib.contextmanager
def interrupt_deferred() -> Iterator[None]:
    """Hold Ctrl-C until the block ends, then deliver it.

    Blender runs the render inside its own Python callback and swallows a KeyboardInterrupt raised
    there (printing a traceback and rendering on), so SIGINT is recorded during the block and handed
    to the previous handler (or raised as KeyboardInterrupt) once the image is written: an
    interrupted render stops within one image. Outside the main thread the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[tuple[int, Any]] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append((signum, frame)))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        if callable(previous):
            previous(*received[0])
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt


def _blender_script_folder(entry: str) -> bool:
    parts = Path(entry).parts
    return "scripts" in parts and ("bpy" in parts or "blender" in parts)


def hdri_files(hdri_dir: str | Path, scenes: list[str]) -> dict[str, Path]:
    """The HDRI file of each scene in ``hdri_dir``: ``<scene>.hdr`` or ``<scene>.exr``.

    Parameters
    ----------
    hdri_dir : str or Path
        Folder of panoramic (equirectangular) HDRI images named after the scenes.
    scenes : list of str
        The scenes that will be rendered.

    Returns
    -------
    dict of str to Path
        One file per scene.

    Raises
    ------
    InvalidArgumentError
        Naming ``--hdri-dir``: not a folder, or a scene without its file.
    """
    folder = Path(hdri_dir).expanduser()
    if not folder.is_dir():
        raise InvalidArgumentError(f"--hdri-dir {folder}: not a folder")
    found = {}
    for scene in scenes:
        files = [folder / f"{scene}{suffix}" for suffix in HDRI_SUFFIXES if (folder / f"{scene}{suffix}").is_file()]
        if not files:
            raise InvalidArgumentError(
                f"--hdri-dir {folder}: no {scene}.hdr or {scene}.exr (one panoramic HDRI per scene: "
                f"{', '.join(scenes)})"
            )
        found[scene] = files[0]
    return found


class CandleStage:
    """A Blender scene that renders CANDLE grid points one after the other in this process.

    Parameters
    ----------
    resolution : tuple of int, default (320, 240)
        Width and height in pixels (the paper's 320 x 240).
    samples : int, default 8
        Cycles samples per pixel (adaptive sampling may stop earlier).
    denoise : bool, default True
        Denoise with OpenImageDenoise (on the colour, albedo and normal passes).
    device : {"auto", "cpu", "gpu"}
        ``auto`` renders on a GPU when Cycles finds one (OptiX, CUDA, HIP, Metal, oneAPI), else on
        the CPU; ``gpu`` requires one.
    hdri_dir : str or Path, optional
        Folder of ``<scene>.hdr|.exr`` panoramas to light and show instead of the procedural scenes.
    threads : int, default 0
        CPU threads of Cycles (0: every core).
    scenes : list of str, optional
        The scenes this stage will render (default: the grid's three); only their sets are built,
        and only their HDRIs are needed.

    Raises
    ------
    InvalidArgumentError
        Naming the option: a bad resolution, sample count, device or HDRI folder; no GPU for ``gpu``.
    """

    def __init__(
        self,
        resolution: tuple[int, int] = (320, 240),
        samples: int = 8,
        denoise: bool = True,
        device: str = "auto",
        hdri_dir: str | Path | None = None,
        threads: int = 0,
        scenes: list[str] | None = None,
    ) -> None:
        width, height = (int(v) for v in resolution)
        if width < 16 or height < 16:
            raise InvalidArgumentError(f"--resolution: expected at least 16x16 pixels, got {width}x{height}")
        if int(samples) < 1:
            raise InvalidArgumentError(f"--samples: expected a positive integer, got {samples!r}")
        if device not in ("auto", "cpu", "gpu"):
            raise InvalidArgumentError(f"--device: expected auto, cpu or gpu, got {device!r}")
        from repscope.data.candle.grid import GRID_FACTORS  # noqa: PLC0415

        self.scenes = [name for name in GRID_FACTORS["scene"] if scenes is None or name in scenes]
        unknown = sorted(set(scenes or ()) - set(GRID_FACTORS["scene"]))
        if unknown or not self.scenes:
            raise InvalidArgumentError(f"scenes: expected some of {GRID_FACTORS['scene']}, got {scenes!r}")
        self.hdri = hdri_files(hdri_dir, self.scenes) if hdri_dir is not None else None
        self.bpy = import_bpy()
        self.width, self.height = width, height
        with blender_stdout_silenced():
            self._build(int(samples), bool(denoise), int(threads), device)

    def _build(self, samples: int, denoise: bool, threads: int, device: str) -> None:
        bpy = self.bpy
        bpy.ops.wm.read_factory_settings(use_empty=True)
        self.scene = bpy.context.scene
        self._render_settings(samples, denoise, threads)
        self.device = self._choose_device(device)
        self._materials: dict[str, Any] = {}
        self._build_floor()
        self._scene_sets = {name: self._build_scene_set(name) for name in self.scenes}
        self._objects = self._build_objects()
        self._build_light_and_camera()

    # ---------------------------------------------------------------------------------------
    # building, once per process

    def _render_settings(self, samples: int, denoise: bool, threads: int) -> None:
        scene = self.scene
        render = scene.render
        render.engine = "CYCLES"
        render.resolution_x, render.resolution_y, render.resolution_percentage = self.width, self.height, 100
        render.use_persistent_data = True  # keep the scene's render data between images
        render.threads_mode = "FIXED" if threads > 0 else "AUTO"
        if threads > 0:
            render.threads = threads
        render.image_settings.file_format = "PNG"
        render.image_settings.color_mode = "RGB"
        render.image_settings.color_depth = "8"
        render.image_settings.compression = 15
        scene.view_settings.view_transform = "Standard"  # keeps the object colours as named
        cycles = scene.cycles
        cycles.samples = samples
        cycles.use_adaptive_sampling = True
        cycles.adaptive_threshold = 0.05
        cycles.use_denoising = denoise
        if denoise:
            cycles.denoiser = "OPENIMAGEDENOISE"
            cycles.denoising_input_passes = "RGB_ALBEDO_NORMAL"
            cycles.denoising_prefilter = "FAST"
        # few bounces: the scenes are diffuse, and each bounce costs time on the CPU
        cycles.max_bounces, cycles.diffuse_bounces, cycles.glossy_bounces = 4, 2, 2
        cycles.transmission_bounces, cycles.volume_bounces, cycles.transparent_max_bounces = 0, 0, 2
        cycles.caustics_reflective = cycles.caustics_refractive = False
        cycles.seed = 0

    def _choose_device(self, device: str) -> str:
        if device == "cpu":
            self.scene.cycles.device = "CPU"
            return "cpu"
        preferences = self.bpy.context.preferences.addons["cycles"].preferences
        for kind in ("OPTIX", "CUDA", "HIP", "METAL", "ONEAPI"):
            try:
                preferences.compute_device_type = kind
            except TypeError:  # not built into this Cycles
                continue
            preferences.get_devices()
            found = [d for d in preferences.devices if d.type == kind]
            if found:
                for item in preferences.devices:
                    item.use = item.type == kind
                self.scene.cycles.device = "GPU"
                return f"gpu ({kind.lower()}: {', '.join(d.name for d in found)})"
        if device == "gpu":
            raise InvalidArgumentError("--device gpu: Cycles finds no GPU here (OptiX, CUDA, HIP, Metal, oneAPI)")
        self.scene.cycles.device = "CPU"
        return "cpu"

    def _material(self, name: str, rgb: tuple[float, float, float], roughness: float = 0.6, noise: float = 0.0) -> Any:
        """A Principled BSDF of colour ``rgb``; ``noise`` > 0 mottles it (wood, grass, pavement)."""
        material = self.bpy.data.materials.new(name)
        _use_nodes(material)
        nodes, links = material.node_tree.nodes, material.node_tree.links
        shader = nodes.get("Principled BSDF")
        shader.inputs["Roughness"].default_value = roughness
        shader.inputs["Base Color"].default_value = (*rgb, 1.0)
        if noise > 0:
            texture = nodes.new("ShaderNodeTexNoise")
            texture.inputs["Scale"].default_value = 6.0
            ramp = nodes.new("ShaderNodeValToRGB")
            ramp.color_ramp.elements[0].color = (*(c * (1 - noise) for c in rgb), 1.0)
            ramp.color_ramp.elements[1].color = (*(min(1.0, c * (1 + noise)) for c in rgb), 1.0)
            links.new(texture.outputs["Fac"], ramp.inputs["Fac"])
            links.new(ramp.outputs["Color"], shader.inputs["Base Color"])
        self._materials[name] = material
        return material

    def _add(self, kind: str, name: str, material: Any, collection: Any, **transform: Any) -> Any:
        """A primitive (``cube``, ``plane``, ``cylinder``, ``cone``, ``uv_sphere``) in ``collection``."""
        bpy = self.bpy
        getattr(bpy.ops.mesh, f"primitive_{kind}_add")()
        obj = bpy.context.active_object
        obj.name = name
        for key, value in transform.items():
            setattr(obj, key, value)
        obj.data.materials.append(material)
        for owner in list(obj.users_collection):
            owner.objects.unlink(obj)
        collection.objects.link(obj)
        return obj

    def _collection(self, name: str) -> Any:
        collection = self.bpy.data.collections.new(name)
        self.scene.collection.children.link(collection)
        return collection

    def _build_floor(self) -> None:
        self._floor_collection = self._collection("floor")
        self._floor_materials = {
            "indoor": self._material("floor indoor", (0.30, 0.16, 0.07), 0.45, noise=0.35),
            "playground": self._material("floor playground", (0.09, 0.28, 0.05), 0.9, noise=0.4),
            "outdoor": self._material("floor outdoor", (0.22, 0.21, 0.20), 0.85, noise=0.3),
        }
        self.floor = self._add(
            "plane", "floor", self._floor_materials["indoor"], self._floor_collection, scale=(30.0, 30.0, 1.0)
        )
        self.floor.location = (0.0, 10.0, 0.0)

    def _build_scene_set(self, name: str) -> dict[str, Any]:
        """The props, world and own light (the confounder) of one procedural scene."""
        props = self._collection(f"scene {name}")
        if name == "indoor":
            self._build_indoor_props(props)
            world = self._world(f"world {name}", (0.22, 0.20, 0.17), None)
            own = self._new_lamp(name)
        else:
            if name == "playground":
                self._build_playground_props(props)
                world = self._world(f"world {name}", (0.75, 0.84, 0.95), (0.22, 0.42, 0.85))
            else:
                self._build_outdoor_props(props)
                world = self._world(f"world {name}", (0.85, 0.82, 0.78), (0.35, 0.50, 0.80))
            own = self._new_sun(name)
        props.objects.link(own)
        if self.hdri is not None:  # the panorama shows the scene: the props stay hidden
            props.hide_render = True
            world = self._hdri_world(name, self.hdri[name])
            own = None
        props.hide_render = True  # shown by render() for its scene
        return {"collection": props, "world": world, "own_light": own}

    def _build_indoor_props(self, props: Any) -> None:
        """Walls, a cabinet, a table and a picture: the indoor scene's room."""
        box = self._add
        wall = self._material("wall", (0.62, 0.58, 0.50), 0.9)
        box("plane", "back wall", wall, props, location=(0, 6.5, 2.5), rotation_euler=(math.pi / 2, 0, 0))
        props.objects["back wall"].scale = (9.0, 2.5, 1.0)
        for side in (-1, 1):
            wall_obj = box(
                "plane", f"side wall {side}", wall, props, location=(side * 6.5, 1.0, 2.5),
                rotation_euler=(math.pi / 2, 0, math.pi / 2),
            )  # fmt: skip
            wall_obj.scale = (8.0, 2.5, 1.0)
        cabinet = self._material("cabinet", (0.18, 0.24, 0.20), 0.5)
        box("cube", "cabinet", cabinet, props, location=(3.2, 5.6, 0.55), scale=(1.2, 0.45, 0.55))
        box("cube", "table", cabinet, props, location=(-3.0, 5.0, 0.75), scale=(1.0, 0.6, 0.05))
        for dx in (-0.9, 0.9):
            box("cylinder", f"leg {dx}", cabinet, props, location=(-3.0 + dx, 5.0, 0.37), scale=(0.05, 0.05, 0.37))
        frame = self._material("picture", (0.55, 0.55, 0.60), 0.3)
        box("cube", "picture", frame, props, location=(0.0, 6.45, 2.2), scale=(1.0, 0.03, 0.6))

    def _build_playground_props(self, props: Any) -> None:
        """A slide on its platform and a swing frame: the playground scene."""
        box = self._add
        paint = self._material("slide", (0.10, 0.45, 0.40), 0.4)
        metal = self._material("metal", (0.55, 0.56, 0.58), 0.3)
        box("cube", "platform", paint, props, location=(-3.0, 6.0, 1.2), scale=(0.6, 0.6, 0.08))
        box(
            "cube", "slide", paint, props, location=(-1.6, 6.0, 0.65), scale=(1.3, 0.4, 0.04),
            rotation_euler=(0, math.radians(27), 0),
        )  # fmt: skip
        for dx, dy in ((-0.55, -0.55), (-0.55, 0.55), (0.55, -0.55), (0.55, 0.55)):
            box("cylinder", f"post {dx} {dy}", metal, props, location=(-3.0 + dx, 6.0 + dy, 0.6),
                scale=(0.04, 0.04, 0.6))  # fmt: skip
        for dx in (2.0, 4.4):
            for tilt in (-0.25, 0.25):
                box("cylinder", f"swing leg {dx} {tilt}", metal, props, location=(dx, 7.0 + tilt * 2, 1.1),
                    scale=(0.05, 0.05, 1.15), rotation_euler=(tilt, 0, 0))  # fmt: skip
        box("cylinder", "swing bar", metal, props, location=(3.2, 7.0, 2.2), scale=(0.05, 0.05, 1.25),
            rotation_euler=(0, math.pi / 2, 0))  # fmt: skip

    def _build_outdoor_props(self, props: Any) -> None:
        """Five trees and a house: the outdoor scene."""
        box = self._add
        bark = self._material("bark", (0.20, 0.12, 0.06), 0.9)
        leaves = self._material("leaves", (0.05, 0.20, 0.04), 0.8, noise=0.3)
        house = self._material("house", (0.60, 0.55, 0.45), 0.8)
        roof = self._material("roof", (0.15, 0.12, 0.12), 0.7)
        for k, (x, y) in enumerate(((-5.5, 9.0), (-2.5, 12.0), (1.5, 11.0), (5.0, 8.5), (7.5, 12.5))):
            box("cylinder", f"trunk {k}", bark, props, location=(x, y, 0.9), scale=(0.15, 0.15, 0.9))
            box("cone", f"crown {k}", leaves, props, location=(x, y, 2.6), scale=(1.0, 1.0, 1.4))
        box("cube", "house", house, props, location=(-1.0, 16.0, 1.6), scale=(3.0, 2.0, 1.6))
        box("cube", "roof", roof, props, location=(-1.0, 16.0, 3.5), scale=(3.2, 2.2, 0.3))

    def _new_lamp(self, name: str) -> Any:
        """The indoor scene's own light: a warm ceiling lamp (U sets its power, :meth:`_own_light`)."""
        lamp_data = self.bpy.data.lights.new(f"lamp {name}", "AREA")
        lamp_data.size = 3.0
        lamp_data.color = (1.0, 0.88, 0.72)
        own = self.bpy.data.objects.new(f"lamp {name}", lamp_data)
        own.location = (0.0, 1.0, 4.0)
        return own

    def _new_sun(self, name: str) -> Any:
        """An outside scene's own light: the sun (U sets its elevation, direction, colour, strength)."""
        sun_data = self.bpy.data.lights.new(f"sun {name}", "SUN")
        sun_data.angle = math.radians(2.0)
        return self.bpy.data.objects.new(f"sun {name}", sun_data)

    def _world(self, name: str, horizon: tuple[float, ...], zenith: tuple[float, ...] | None) -> Any:
        """A world of one colour, or a sky from ``horizon`` to ``zenith`` by the view's elevation."""
        world = self.bpy.data.worlds.new(name)
        _use_nodes(world)
        nodes, links = world.node_tree.nodes, world.node_tree.links
        background = nodes.get("Background")
        background.inputs["Color"].default_value = (*horizon, 1.0)
        if zenith is not None:
            coordinates = nodes.new("ShaderNodeTexCoord")
            separate = nodes.new("ShaderNodeSeparateXYZ")
            ramp = nodes.new("ShaderNodeValToRGB")
            ramp.color_ramp.elements[0].position, ramp.color_ramp.elements[1].position = 0.0, 0.6
            ramp.color_ramp.elements[0].color = (*horizon, 1.0)
            ramp.color_ramp.elements[1].color = (*zenith, 1.0)
            links.new(coordinates.outputs["Generated"], separate.inputs["Vector"])
            links.new(separate.outputs["Z"], ramp.inputs["Fac"])
            links.new(ramp.outputs["Color"], background.inputs["Color"])
            background.inputs["Strength"].default_value = SKY_STRENGTH
        return world

    def _hdri_world(self, name: str, path: Path) -> Any:
        world = self.bpy.data.worlds.new(f"hdri {name}")
        _use_nodes(world)
        nodes, links = world.node_tree.nodes, world.node_tree.links
        texture = nodes.new("ShaderNodeTexEnvironment")
        try:
            texture.image = self.bpy.data.images.load(str(path), check_existing=True)
        except RuntimeError as exc:
            raise InvalidArgumentError(f"--hdri-dir: {path} is not an image Blender reads ({exc})") from None
        links.new(texture.outputs["Color"], nodes.get("Background").inputs["Color"])
        return world

    def _build_objects(self) -> dict[str, Any]:
        """The five objects, hidden; one is shown per image. Their meshes are scaled to 1 m across."""
        bpy = self.bpy
        collection = self._collection("objects")
        self._object_material = self._material("object", COLOR_RGB["red"], 0.35)
        objects = {}
        for name, kind in (
            ("cube", "cube"),
            ("sphere", "uv_sphere"),
            ("cylinder", "cylinder"),
            ("cone", "cone"),
            ("torus", "torus"),
        ):
            getattr(bpy.ops.mesh, f"primitive_{kind}_add")()
            obj = bpy.context.active_object
            obj.name = name
            mesh = obj.data
            if name != "cube":
                mesh.shade_smooth()
            if name == "torus":  # on its rim, so that a rotation about the vertical axis shows
                obj.rotation_euler = (math.pi / 2, 0.0, 0.0)
                bpy.ops.object.transform_apply(location=False, rotation=True, scale=False)
            vertices = self._vertices(obj)
            across = float((vertices.max(axis=0) - vertices.min(axis=0))[:2].max())
            mesh.transform(_scale_matrix(1.0 / across))
            mesh.materials.append(self._object_material)
            for owner in list(obj.users_collection):
                owner.objects.unlink(obj)
            collection.objects.link(obj)
            obj.hide_render = True
            objects[name] = obj
        return objects

    def _build_light_and_camera(self) -> None:
        bpy = self.bpy
        light_data = bpy.data.lights.new("artificial light", "POINT")
        light_data.energy = LIGHT_WATTS
        light_data.shadow_soft_size = 0.15
        self.light = bpy.data.objects.new("artificial light", light_data)
        self.scene.collection.objects.link(self.light)
        camera_data = bpy.data.cameras.new("camera")
        camera_data.lens = 45.0
        camera_data.sensor_width = 36.0
        self.camera = bpy.data.objects.new("camera", camera_data)
        self.scene.collection.objects.link(self.camera)
        self.scene.camera = self.camera

    @staticmethod
    def _vertices(obj: Any) -> np.ndarray:
        mesh = obj.data
        flat = np.empty(len(mesh.vertices) * 3, np.float64)
        mesh.vertices.foreach_get("co", flat)
        return flat.reshape(-1, 3)

    # ---------------------------------------------------------------------------------------
    # one image

    def _world_vertices(self, obj: Any) -> np.ndarray:
        matrix = np.array(obj.matrix_world)
        local = self._vertices(obj)
        return local @ matrix[:3, :3].T + matrix[:3, 3]

    def _project(self, points: np.ndarray) -> np.ndarray:
        """Pixel coordinates ``(n, 2)`` of world points (origin top-left, y down)."""
        depsgraph = self.bpy.context.evaluated_depsgraph_get()
        projection = np.array(self.camera.calc_matrix_camera(depsgraph, x=self.width, y=self.height))
        view = np.array(self.camera.matrix_world.inverted())
        return pixel_coordinates(points, projection @ view, (self.width, self.height))

    def _place_camera(self, rng: np.random.Generator) -> dict[str, Any]:
        from mathutils import Vector  # noqa: PLC0415 -- ships with bpy

        shift = rng.uniform(-1, 1, 3) * (0.12, 0.10, 0.08)
        aim = rng.uniform(-1, 1, 3) * (0.10, 0.10, 0.05)
        roll = math.radians(float(rng.uniform(-1.0, 1.0)))
        location = Vector(CAMERA_LOCATION) + Vector(shift)
        direction = Vector(CAMERA_TARGET) + Vector(aim) - location
        rotation = direction.to_track_quat("-Z", "Y").to_euler()
        self.camera.location = location
        self.camera.rotation_euler = rotation
        self.camera.rotation_euler.rotate_axis("Z", roll)
        return {"location": [round(v, 4) for v in location], "roll_degrees": round(math.degrees(roll), 3)}

    def _own_light(self, scene: str, u: float) -> None:
        """U, the unobserved confounder, acting through the scene's own light."""
        parts = self._scene_sets[scene]
        world = parts["world"]
        background = world.node_tree.nodes.get("Background")
        own = parts["own_light"]
        if self.hdri is not None:
            background.inputs["Strength"].default_value = 0.5 + 1.0 * u
            return
        if scene == "indoor":
            background.inputs["Strength"].default_value = 0.15 + 0.35 * u
            own.data.energy = 250.0 + 900.0 * u
            return
        low = scene == "outdoor"  # the outdoor sun is lower and warmer than the playground's
        elevation = math.radians((12.0 if low else 35.0) + (35.0 if low else 40.0) * u)
        azimuth = math.radians(120.0 + 120.0 * u)
        own.rotation_euler = (math.pi / 2 - elevation, 0.0, azimuth)
        warm = 1.0 - u
        own.data.color = (1.0, 0.97 - 0.25 * warm * low, 0.92 - 0.45 * warm * low)
        own.data.energy = 1.0 + 3.0 * u
        # the sky is left as built (SKY_STRENGTH): touching a textured world makes Cycles rebuild its
        # lighting data (0.6 s an image); U acts through the sun, whose shading and shadows cover the scene

    def render(self, point: dict[str, Any], seed: int, path: str | Path) -> dict[str, Any]:
        """Render one grid point to ``path`` (a PNG, written atomically) and return its JSON record.

        Parameters
        ----------
        point : dict
            ``object``, ``color``, ``size``, ``rotation`` (degrees), ``scene``, ``light`` (and
            ``index``), as :func:`repscope.data.candle.grid.grid_points` gives.
        seed : int
            The image's seed (:func:`repscope.data.candle.grid.image_seed`).
        path : str or Path
            The PNG to write.

        Returns
        -------
        dict
            The CANDLE layout (``scene``, ``lights``, ``objects``), plus ``index``, ``seed``,
            ``confounder``, ``camera`` and ``position``.

        Raises
        ------
        InvalidArgumentError
            When a factor value is not one of the grid's.
        """
        self._check_point(point)
        rng = np.random.default_rng(int(seed))
        u = float(rng.uniform())  # draw order is fixed: U, camera, then the object's position
        camera = self._place_camera(rng)
        self._show_scene(point["scene"], u)
        shape, metres = self._show_object(point)
        (x, y), box = self._place_object(shape, metres, rng, point.get("index"))
        self.light.location = light_location(point["light"], (x, y))
        self._write_image(path, seed)
        return image_record(point, seed, u, camera, (x, y), box)

    def _check_point(self, point: dict[str, Any]) -> None:
        """Refuse a factor value that is not one of the grid's, or a scene this stage did not build."""
        from repscope.data.candle.grid import GRID_FACTORS  # noqa: PLC0415

        for name, values in GRID_FACTORS.items():
            if point[name] not in values:
                raise InvalidArgumentError(f"point: {name} {point[name]!r} is not one of {values}")
        if point["scene"] not in self._scene_sets:
            raise InvalidArgumentError(f"point: scene {point['scene']!r} is not one of this stage's {self.scenes}")

    def _show_scene(self, scene_name: str, u: float) -> None:
        """Show one scene's props, world, floor and own light (set by the confounder ``u``); hide the others."""
        for name, parts in self._scene_sets.items():
            parts["collection"].hide_render = name != scene_name or self.hdri is not None
            if parts["own_light"] is not None:
                parts["own_light"].hide_render = name != scene_name
        self.scene.world = self._scene_sets[scene_name]["world"]
        self.floor.is_shadow_catcher = self.hdri is not None
        self.floor.data.materials[0] = self._floor_materials[scene_name]
        self._own_light(scene_name, u)

    def _show_object(self, point: dict[str, Any]) -> tuple[Any, float]:
        """Show the point's object (the others hidden) in its colour, size and rotation; returns it and its
        size in metres."""
        shape = self._objects[point["object"]]
        for name, obj in self._objects.items():
            obj.hide_render = name != point["object"]
        self._object_material.node_tree.nodes.get("Principled BSDF").inputs["Base Color"].default_value = (
            *COLOR_RGB[point["color"]],
            1.0,
        )
        scale, rotation = object_pose(point)
        shape.scale = scale
        shape.rotation_euler = rotation
        return shape, scale[0]

    def _place_object(
        self, shape: Any, metres: float, rng: np.random.Generator, index: Any
    ) -> tuple[tuple[float, float], np.ndarray]:
        """Stand ``shape`` (``metres`` across) on the floor at seeded random positions until it lies inside the
        frame (a margin of ``MARGIN_PIXELS``); returns the floor position and the pixel box
        ``[[x0, y0], [x1, y1]]``."""
        bottom = float(self._vertices(shape)[:, 2].min()) * metres
        for _attempt in range(200):
            x, y = rng.uniform(*FLOOR_X), rng.uniform(*FLOOR_Y)
            shape.location = (x, y, -bottom)
            self.bpy.context.view_layer.update()
            pixels = self._project(self._world_vertices(shape))
            low, high = pixels.min(axis=0), pixels.max(axis=0)
            inside = (self.width - MARGIN_PIXELS, self.height - MARGIN_PIXELS)
            if (low >= MARGIN_PIXELS).all() and (high <= inside).all():
                return (x, y), np.stack([low, high])
        # the floor area lies well inside the frame
        raise InvalidArgumentError(f"point {index}: found no position with the object in frame")  # pragma: no cover

    def _write_image(self, path: str | Path, seed: int) -> None:
        """Render with the image's seed and write the PNG atomically (an interrupt waits for the file)."""
        bpy = self.bpy
        self.scene.cycles.seed = int(seed) % (2**31)
        with interrupt_deferred(), blender_stdout_silenced(), atomic_path(path) as partial:
            bpy.ops.render.render(write_still=False)
            bpy.data.images["Render Result"].save_render(filepath=str(partial))


def image_record(
    point: dict[str, Any],
    seed: int,
    u: float,
    camera: dict[str, Any],
    position: tuple[float, float],
    box: np.ndarray,
) -> dict[str, Any]:
    """The JSON record of one rendered image in the CANDLE layout (``scene``, ``lights``, ``objects``).

    Parameters
    ----------
    point : dict
        The grid point rendered.
    seed : int
        The image's seed.
    u : float
        The confounder's value.
    camera : dict
        The camera's location and roll.
    position : (float, float)
        Where the object stands on the floor (metres).
    box : numpy.ndarray
        ``[[x0, y0], [x1, y1]]``, the object's pixel box.

    Returns
    -------
    dict
        The CANDLE layout plus ``index``, ``seed``, ``confounder``, ``camera`` and ``position``.
    """
    (low, high), (x, y) = box, position
    label = f"{point['object'].capitalize()}_0"
    return {
        "scene": point["scene"],
        "lights": point["light"],
        "objects": {
            label: {
                "object_type": point["object"],
                "color": point["color"],
                "size": point["size"],
                "rotation": int(point["rotation"]),
                "bounds": [
                    [round(float(low[0]), 2), round(float(low[1]), 2)],
                    [round(float(high[0]), 2), round(float(high[1]), 2)],
                ],  # fmt: skip
            }
        },
        "index": int(point.get("index", -1)),
        "seed": int(seed),
        "confounder": {"scene_light": round(u, 6)},
        "camera": camera,
        "position": [round(float(x), 4), round(float(y), 4)],
    }


def _use_nodes(owner: Any) -> None:
    # Blender 5 gives every material and world a node tree and deprecates the switch
    if owner.node_tree is None:
        owner.use_nodes = True


def _scale_matrix(factor: float) -> Any:
    from mathutils import Matrix  # noqa: PLC0415

    return Matrix.Scale(factor, 4)


__all__ = [
    "BPY_PYTHON",
    "COLOR_RGB",
    "LIGHT_OFFSETS",
    "SIZE_METRES",
    "CandleStage",
    "hdri_files",
    "import_bpy",
    "light_location",
    "missing_bpy_message",
    "object_pose",
    "pixel_coordinates",
]

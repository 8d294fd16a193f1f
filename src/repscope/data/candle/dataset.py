"""CANDLE (Reddy et al., "On causally disentangled representations"): folders of renders with JSON factors.

A CANDLE folder holds, for each image, ``<name>.png`` and ``<name>.json`` side by side (sub-folders
are searched too). The JSON has the layout of the published dataset and of our renderer::

    {"scene": "indoor", "lights": "left",
     "objects": {"Cube_0": {"object_type": "cube", "color": "red", "size": 2, "rotation": 60,
                            "bounds": [[x0, y0], [x1, y1]]}}}

one object per image. Factors, in this order (:data:`FACTOR_NAMES`):

==============  =======================================================================================
object          cube, sphere, cylinder, cone, torus
color           red, blue, yellow, purple, orange
size            small, medium, large: a name, or an integer class (0-2, or 1-3 when no 0 appears)
rotation        0, 15, 30, 45, 60, 90 degrees about the vertical axis
scene           indoor, playground, outdoor, then any other scene names found, sorted (the published
                set has 16)
light           left, middle, right (the artificial light's position)
==============  =======================================================================================

``bounds`` is the object's bounding box in pixels of the stored image, top-left corner first; it is
scaled with the image to the served size and served as the ``box`` field (:mod:`repscope.data.boxes`).
A box must not be inverted (``x1 >= x0`` and ``y1 >= y0``) and must overlap the image
(``x0 < W``, ``y0 < H``, ``x1 > 0``, ``y1 > 0`` for a ``W x H`` image); a box partly outside the image
is served as stored, not clipped (our renderer keeps every box a margin inside the frame; a published
object cut by the frame's edge may extend past it). Every number of a JSON file must be finite: the
bare ``NaN`` / ``Infinity`` tokens Python's ``json`` accepts are refused, naming the key. An image may
hold at most :data:`MAX_IMAGE_PIXELS` pixels, checked from its header before it is decoded.
The paper's observed-confounding subset keeps each object in two colours only (:data:`CONFOUNDED_COLORS`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from PIL import Image

from repscope.data.boxes import BOX_NAMES
from repscope.data.datasets import ArraySplit, Dataset, FieldSpec
from repscope.data.imagefile import read_image
from repscope.errors import DataFormatError, InvalidArgumentError, shown
from repscope.validation import check_memory

OBJECTS: tuple[str, ...] = ("cube", "sphere", "cylinder", "cone", "torus")
COLORS: tuple[str, ...] = ("red", "blue", "yellow", "purple", "orange")
SIZES: tuple[str, ...] = ("small", "medium", "large")
ROTATIONS: tuple[int, ...] = (0, 15, 30, 45, 60, 90)
SCENES: tuple[str, ...] = ("indoor", "playground", "outdoor")
LIGHTS: tuple[str, ...] = ("left", "middle", "right")
FACTOR_NAMES: tuple[str, ...] = ("object", "color", "size", "rotation", "scene", "light")
# most pixels of one CANDLE image: the published renders and ours are 320x240 by default; a `candle render
# --resolution` of up to 8192x8192 (200 MB decoded) is read, a larger header is refused as a corrupt file or a
# decompression bomb before its pixels are decoded
MAX_IMAGE_PIXELS = 8192 * 8192
# the paper's section 5: "cube in red and blue, sphere in blue and yellow, cylinder in yellow and purple,
# cone in purple and orange and torus in orange and red"
CONFOUNDED_COLORS: dict[str, tuple[str, str]] = {
    "cube": ("red", "blue"),
    "sphere": ("blue", "yellow"),
    "cylinder": ("yellow", "purple"),
    "cone": ("purple", "orange"),
    "torus": ("orange", "red"),
}


def _field(record: dict[str, Any], key: str, path: Path) -> Any:
    if key not in record:
        raise DataFormatError(f"{path}: no {key!r} key (CANDLE layout: scene, lights, objects)")
    return record[key]


def _class(value: Any, choices: tuple[Any, ...], key: str, path: Path) -> int:
    word = value.lower() if isinstance(value, str) else value
    if word not in choices:
        raise DataFormatError(f"{path}: {key} {shown(value)} is not one of {', '.join(map(str, choices))}")
    return choices.index(word)


# the longest name a record may give (a scene is named after its backdrop, a few words): a longer string is
# not a name but a corrupt field
MAX_NAME_LENGTH = 100


def _name(record: dict[str, Any], key: str, path: Path) -> str:
    """The lower-case name under ``key``: a string (a list or a number there would become a class of its own)."""
    value = _field(record, key, path)
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME_LENGTH:
        kind = "a string" if isinstance(value, str) else f"a JSON {type(value).__name__}"
        raise DataFormatError(
            f"{path}: {key} must be a name (a non-empty string of at most {MAX_NAME_LENGTH} characters), got {kind} "
            f"{shown(value)}"
        )
    return value.lower()


def _non_finite_key(value: Any, key: str) -> str | None:
    """The dotted key of the first NaN or infinite number in a parsed JSON value, else None."""
    if isinstance(value, float) and not np.isfinite(value):
        return key
    if isinstance(value, dict):
        children = ((f"{key}.{name}" if key else str(name), child) for name, child in value.items())
    elif isinstance(value, list):
        children = ((f"{key}[{i}]", child) for i, child in enumerate(value))
    else:
        return None
    for child_key, child in children:
        found = _non_finite_key(child, child_key)
        if found is not None:
            return found
    return None


def read_record(path: str | Path) -> dict[str, Any]:
    """The factors and the bounding box of one CANDLE JSON file.

    Parameters
    ----------
    path : str or Path
        A ``.json`` file in the CANDLE layout (module docstring).

    Returns
    -------
    dict
        ``object``, ``color``, ``scene``, ``light`` (lower-case names), ``size`` (a name or an int as
        stored), ``rotation`` (int degrees) and ``bounds`` (float ``(4,)``: x0, y0, x1, y1 in pixels).

    Raises
    ------
    DataFormatError
        When the file is not JSON, a number anywhere in it is NaN or infinite (the key named), a key is
        missing, it holds no object or more than one, a value has the wrong type (``object_type``, ``color``,
        ``scene`` and ``lights`` must be non-empty strings of at most :data:`MAX_NAME_LENGTH` characters), or
        ``bounds`` is inverted (``x1 < x0`` or ``y1 < y0``).
    """
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise DataFormatError(f"{path}: not a readable JSON file ({error})") from None
    bad_key = _non_finite_key(record, "")
    if bad_key is not None:
        raise DataFormatError(f"{path}: {bad_key}: NaN or infinite number; CANDLE annotations hold finite numbers")
    if not isinstance(record, dict):
        raise DataFormatError(f"{path}: expected a JSON object with keys scene, lights, objects")
    objects = _field(record, "objects", path)
    if not isinstance(objects, dict) or len(objects) != 1:
        count = len(objects) if isinstance(objects, dict) else "no"
        raise DataFormatError(f"{path}: objects must hold exactly one object, got {count}")
    item = next(iter(objects.values()))
    if not isinstance(item, dict):
        raise DataFormatError(f"{path}: objects: expected an object with object_type, color, size, rotation, bounds")
    bounds = np.asarray(_field(item, "bounds", path), dtype=object)
    try:
        box = np.asarray(bounds.tolist(), dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        box = np.empty(0)
    if box.shape != (4,) or not np.all(np.isfinite(box)):
        raise DataFormatError(f"{path}: bounds must be [[x0, y0], [x1, y1]] in pixels, got {shown(item['bounds'])}")
    if box[2] < box[0] or box[3] < box[1]:
        raise DataFormatError(
            f"{path}: bounds {shown(item['bounds'])} is inverted; expected [[x0, y0], [x1, y1]] with x0 <= x1, y0 <= y1"
        )
    rotation = _field(item, "rotation", path)
    if isinstance(rotation, bool) or not isinstance(rotation, int | float) or rotation != int(rotation):
        raise DataFormatError(f"{path}: rotation must be whole degrees, got {shown(rotation)}")
    size = _field(item, "size", path)
    if isinstance(size, bool) or not isinstance(size, str | int):
        raise DataFormatError(f"{path}: size must be a name or an integer class, got {shown(size)}")
    return {
        "object": _name(item, "object_type", path),
        "color": _name(item, "color", path),
        "size": size.lower() if isinstance(size, str) else int(size),
        "rotation": int(rotation),
        "scene": _name(record, "scene", path),
        "light": _name(record, "lights", path),
        "bounds": box,
    }


def _size_classes(sizes: list[Any], paths: list[Path]) -> list[int]:
    numbers = {s for s in sizes if isinstance(s, int)}
    offset = 1 if numbers and 0 not in numbers and numbers <= {1, 2, 3} else 0
    out = []
    for size, path in zip(sizes, paths):
        if isinstance(size, str):
            out.append(_class(size, SIZES, "size", path))
        elif 0 <= size - offset < len(SIZES):
            out.append(size - offset)
        else:
            raise DataFormatError(f"{path}: size {size} is not a class of small, medium, large (0-2 or 1-3)")
    return out


def folder_records(data_dir: str | Path) -> dict[str, Any]:
    """The JSON records of a CANDLE folder as factor classes, without reading the images.

    Parameters
    ----------
    data_dir : str or Path
        Folder searched recursively for ``*.json`` files; hidden files and folders and our renders'
        ``render.json`` (at any depth: a folder may hold several renders) are left out.

    Returns
    -------
    dict
        ``files`` (list of Path, sorted), ``factors`` int64 ``(N, 6)`` (:data:`FACTOR_NAMES`),
        ``bounds`` float64 ``(N, 4)`` in pixels of the stored images and ``scenes`` (the scene names,
        class order).

    Raises
    ------
    InvalidArgumentError
        When ``data_dir`` is not a folder or holds no JSON file.
    DataFormatError
        Naming the file: a bad key or value.
    """
    data_dir = Path(data_dir).expanduser()
    if not data_dir.is_dir():
        raise InvalidArgumentError(f"data_dir: {data_dir} is not a folder")
    # our renders keep their manifest (render.json) and bookkeeping (hidden folders) beside the images; a
    # folder of several renders (one sub-folder per seed) has a manifest in each
    files = sorted(
        path
        for path in data_dir.rglob("*.json")
        if not any(part.startswith(".") for part in path.relative_to(data_dir).parts) and path.name != "render.json"
    )
    if not files:
        raise InvalidArgumentError(f"data_dir: {data_dir} holds no CANDLE .json files")
    records = [read_record(path) for path in files]
    scenes = list(SCENES) + sorted({r["scene"] for r in records} - set(SCENES))
    sizes = _size_classes([r["size"] for r in records], files)
    factors = np.array(
        [
            [
                _class(record["object"], OBJECTS, "object_type", path),
                _class(record["color"], COLORS, "color", path),
                size,
                _class(record["rotation"], ROTATIONS, "rotation", path),
                scenes.index(record["scene"]),
                _class(record["light"], LIGHTS, "lights", path),
            ]
            for path, record, size in zip(files, records, sizes)
        ],
        dtype=np.int64,
    ).reshape(-1, len(FACTOR_NAMES))
    bounds = np.array([record["bounds"] for record in records], dtype=np.float64).reshape(-1, 4)
    return {"files": files, "factors": factors, "bounds": bounds, "scenes": scenes}


def image_of(path: Path) -> Path:
    """The image beside a CANDLE JSON file: the same name with ``.png``, ``.jpg`` or ``.jpeg``.

    Parameters
    ----------
    path : pathlib.Path
        The JSON file.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    DataFormatError
        When no image is beside it.
    """
    for suffix in (".png", ".jpg", ".jpeg"):
        if path.with_suffix(suffix).exists():
            return path.with_suffix(suffix)
    raise DataFormatError(f"{path}: no image beside it ({path.with_suffix('.png').name})")


def read_folder(data_dir: str | Path, image_size: int = 64) -> dict[str, np.ndarray]:
    """Every image of a CANDLE folder, resized, with its factors and scaled bounding box.

    Parameters
    ----------
    data_dir : str or Path
        Folder searched recursively for ``*.json`` files, each beside an image of the same name
        (``.png``, ``.jpg`` or ``.jpeg``); hidden files and folders and our renders' ``render.json``
        are left out.
    image_size : int, default 64
        Side of the square images served (bilinear resizing with antialiasing, as PIL does).

    Returns
    -------
    dict of str to numpy.ndarray
        ``image`` uint8 ``(N, 3, S, S)``, ``factors`` int64 ``(N, 6)`` (:data:`FACTOR_NAMES`), ``box``
        float32 ``(N, 4)`` and ``scenes`` (the scene names, class order), rows in sorted file order.

    Raises
    ------
    InvalidArgumentError
        When ``data_dir`` is not a folder or holds no JSON file.
    DataFormatError
        Naming the file: a JSON without its image, an unreadable image or one of more than
        :data:`MAX_IMAGE_PIXELS` pixels, a bad key or value, bounds inverted or entirely outside the
        image (a box partly outside is served as stored).
    """
    records = folder_records(data_dir)
    files = records["files"]
    images = np.empty((len(files), 3, image_size, image_size), np.uint8)
    boxes = np.empty((len(files), 4), np.float32)
    for row, path in enumerate(files):
        image_path = image_of(path)
        pixels = read_image(image_path, "RGB", MAX_IMAGE_PIXELS)
        height, width = pixels.shape[:2]
        x0, y0, x1, y1 = records["bounds"][row]
        if x0 >= width or y0 >= height or x1 <= 0 or y1 <= 0:
            raise DataFormatError(
                f"{path}: bounds [[{x0:g}, {y0:g}], [{x1:g}, {y1:g}]] lie outside its {width}x{height} image "
                f"{image_path.name}"
            )
        resized = Image.fromarray(pixels).resize((image_size, image_size), Image.Resampling.BILINEAR)
        images[row] = np.asarray(resized).transpose(2, 0, 1)
        scale_x, scale_y = image_size / width, image_size / height
        boxes[row] = records["bounds"][row] * np.array([scale_x, scale_y, scale_x, scale_y])
    return {"image": images, "factors": records["factors"], "box": boxes, "scenes": np.array(records["scenes"])}


def pair_table(
    data_dir: str | Path,
    differ: list[str],
    n: int,
    seed: int = 0,
    subset: Literal["all", "confounded"] = "all",
) -> pd.DataFrame:
    """Pairs of a folder's images that differ in exactly the factors ``differ`` (weak supervision).

    Parameters
    ----------
    data_dir : str or Path
        A CANDLE folder (:func:`folder_records`).
    differ : list of str
        Factor names (:data:`FACTOR_NAMES`) that differ within a pair; every other factor is equal.
    n : int
        Number of pairs (drawn with replacement, :func:`paired_rows`).
    seed : int, default 0
        Seed of the draw.
    subset : {"all", "confounded"}
        Draw among every image or the paper's confounded subset only.

    Returns
    -------
    pandas.DataFrame
        One row per pair: ``first``, ``second`` (image files relative to ``data_dir``) and, for each
        factor, ``<factor>_first`` and ``<factor>_second`` (names).

    Raises
    ------
    InvalidArgumentError
        An unknown factor, no factor, or no such pair in the folder.
    """
    unknown = [name for name in differ if name not in FACTOR_NAMES]
    if unknown or not differ:
        raise InvalidArgumentError(f"--differ: expected some of {', '.join(FACTOR_NAMES)}, got {differ!r}")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise InvalidArgumentError(f"--n: expected a positive integer, got {n!r}")
    # before the folder is read: each pair holds at least a reference per column (2 files, 2 per factor)
    check_memory(int(n) * 8 * (2 + 2 * len(FACTOR_NAMES)), f"--n: {int(n):,} pairs")
    records = folder_records(data_dir)
    rows = np.arange(len(records["files"]))
    if subset == "confounded":
        rows = rows[confounded_mask(records["factors"])]
    factors = records["factors"][rows]
    try:
        chosen = paired_rows(factors, [FACTOR_NAMES.index(name) for name in differ], int(n), seed)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"--differ {', '.join(differ)}: no two images of {data_dir} differ in exactly these factors"
        ) from None
    pairs = rows[chosen]
    data_dir = Path(data_dir).expanduser()
    words = (OBJECTS, COLORS, SIZES, tuple(map(str, ROTATIONS)), tuple(records["scenes"]), LIGHTS)
    table: dict[str, Any] = {}
    for side, column in (("first", 0), ("second", 1)):
        table[side] = [str(image_of(records["files"][i]).relative_to(data_dir)) for i in pairs[:, column]]
    for k, name in enumerate(FACTOR_NAMES):
        for side, column in (("first", 0), ("second", 1)):
            table[f"{name}_{side}"] = [words[k][c] for c in records["factors"][pairs[:, column], k]]
    return pd.DataFrame(table)


def confounded_mask(factors: Any) -> np.ndarray:
    """Rows of the paper's observed-confounding subset: each object in its two colours only.

    Parameters
    ----------
    factors : array-like of shape (N, 6)
        Factor classes in :data:`FACTOR_NAMES` order.

    Returns
    -------
    numpy.ndarray
        bool ``(N,)``.
    """
    factors = np.asarray(factors)
    allowed = np.zeros((len(OBJECTS), len(COLORS)), bool)
    for name, colours in CONFOUNDED_COLORS.items():
        allowed[OBJECTS.index(name), [COLORS.index(c) for c in colours]] = True
    return allowed[factors[:, 0], factors[:, 1]]


def paired_rows(factors: Any, differ: list[int], n: int, seed: int = 0) -> np.ndarray:
    """Pairs of rows that differ in exactly the factors ``differ`` (weak supervision by pairs).

    Pair ``(i, j)``: the same class on every factor not in ``differ`` and a different class on each
    factor in ``differ``. Drawn uniformly over the first rows ``i`` that have a partner, then over
    ``i``'s partners.

    Parameters
    ----------
    factors : array-like of shape (N, K)
        Factor classes.
    differ : list of int
        Columns that must differ (at least one).
    n : int
        Number of pairs.
    seed : int, default 0
        Seed of the draw.

    Returns
    -------
    numpy.ndarray
        int64 ``(n, 2)`` row indices.

    Raises
    ------
    InvalidArgumentError
        When ``differ`` is empty or out of range, or no pair exists.
    """
    factors = np.asarray(factors)
    columns = sorted(set(int(k) for k in differ))
    if not columns or not all(0 <= k < factors.shape[1] for k in columns):
        raise InvalidArgumentError(f"differ: expected factor columns in 0..{factors.shape[1] - 1}, got {differ}")
    same = [k for k in range(factors.shape[1]) if k not in columns]
    if same:
        _, group = np.unique(factors[:, same], axis=0, return_inverse=True)
        group = np.asarray(group).reshape(-1)
    else:
        group = np.zeros(len(factors), np.int64)
    # the rows of each group, from one sort (not one scan of every row per group)
    order = np.argsort(group, kind="stable")
    members = np.split(order, np.flatnonzero(np.diff(group[order])) + 1)
    partners: list[np.ndarray] = [np.empty(0, np.int64)] * len(factors)
    for rows in members:
        chosen = factors[rows][:, columns]
        for position, row in enumerate(rows):  # one row against its group: memory stays linear
            partners[row] = rows[np.all(chosen != chosen[position], axis=1)]
    firsts = np.array([i for i, p in enumerate(partners) if p.size])
    if firsts.size == 0:
        raise InvalidArgumentError(f"differ: no two rows differ in exactly factors {columns}")
    rng = np.random.default_rng(seed)
    chosen = rng.choice(firsts, size=int(n))
    return np.array([[i, rng.choice(partners[i])] for i in chosen], dtype=np.int64).reshape(-1, 2)


def candle_dataset(
    data_dir: str,
    subset: Literal["all", "confounded"] = "all",
    image_size: int = 64,
    test_fraction: float = 0.2,
    seed: int = 0,
    target: Literal["object", "color", "size", "rotation", "scene", "light"] | None = None,
) -> Dataset:
    """CANDLE renders (ours or the published folders) as a registered dataset.

    Parameters
    ----------
    data_dir : str
        Folder of ``.png`` + ``.json`` pairs (:func:`read_folder`).
    subset : {"all", "confounded"}
        Every image, or the paper's observed-confounding subset (:func:`confounded_mask`).
    image_size : int
        Side of the served square images (the models' 64 by default).
    test_fraction : float
        Seeded fraction of the images held out as ``test``.
    seed : int
        Seed of the split.
    target : str, optional
        A factor a supervised model learns (its class), e.g. the factor classifiers CG judges with.

    Returns
    -------
    Dataset
        Splits ``train`` and ``test``; fields ``image`` (uint8 ``(3, S, S)``), ``factors`` (int64
        ``(6,)``), one categorical field per factor, ``box`` (float32 ``(4,)``) and ``index`` (row in
        the sorted file list).

    Raises
    ------
    InvalidArgumentError
        On a bad argument or a folder without CANDLE files; DataFormatError on a bad file.
    """
    if target is not None and target not in FACTOR_NAMES:
        raise InvalidArgumentError(f"target: expected one of {', '.join(FACTOR_NAMES)}, got {target!r}")
    if subset not in ("all", "confounded"):
        raise InvalidArgumentError(f"subset: expected 'all' or 'confounded', got {subset!r}")
    if isinstance(image_size, bool) or int(image_size) != image_size or image_size < 8:
        raise InvalidArgumentError(f"image_size: expected an integer of at least 8, got {image_size!r}")
    if not 0.0 < float(test_fraction) < 1.0:
        raise InvalidArgumentError(f"test_fraction: expected a number in (0, 1), got {test_fraction!r}")
    data = read_folder(data_dir, int(image_size))
    index = np.arange(len(data["factors"]))
    if subset == "confounded":
        index = index[confounded_mask(data["factors"])]
        if index.size == 0:
            raise InvalidArgumentError(f"subset: no image of {data_dir} is in the confounded subset")
    if index.size < 2:
        raise InvalidArgumentError(f"data_dir: {data_dir} gives {index.size} image(s); a train / test split needs 2")
    order = np.random.default_rng([seed, 31]).permutation(index)
    n_test = min(max(1, round(test_fraction * index.size)), index.size - 1)
    scenes = tuple(str(s) for s in data["scenes"])
    sizes = (len(OBJECTS), len(COLORS), len(SIZES), len(ROTATIONS), len(scenes), len(LIGHTS))
    words = (OBJECTS, COLORS, SIZES, tuple(map(str, ROTATIONS)), scenes, LIGHTS)

    def split(rows: np.ndarray) -> ArraySplit:
        rows = np.sort(rows)
        arrays = {"image": data["image"][rows], "factors": data["factors"][rows], "box": data["box"][rows]}
        arrays["index"] = rows.astype(np.int64)
        arrays.update({name: data["factors"][rows, k] for k, name in enumerate(FACTOR_NAMES)})
        return ArraySplit(arrays)

    fields = {
        "image": FieldSpec("image", (3, int(image_size), int(image_size)), "uint8", description="CANDLE render"),
        "factors": FieldSpec("categorical", (len(FACTOR_NAMES),), "int64", max(sizes), FACTOR_NAMES, "factor classes"),
        "box": FieldSpec("continuous", (4,), "float32", names=BOX_NAMES, description="object's bounding box, pixels"),
        "index": FieldSpec("index", (), "int64", description="row in the folder's sorted file list"),
    }
    for name, count, names in zip(FACTOR_NAMES, sizes, words):
        fields[name] = FieldSpec("categorical", (), "int64", count, names, f"{name} class")
    return Dataset(
        "candle",
        {"train": split(order[n_test:]), "test": split(order[:n_test])},
        fields,
        target,
        f"CANDLE ({subset}): {index.size - n_test} training and {n_test} test images from {data_dir}",
    )


__all__ = [
    "CONFOUNDED_COLORS",
    "FACTOR_NAMES",
    "MAX_IMAGE_PIXELS",
    "candle_dataset",
    "image_of",
    "confounded_mask",
    "folder_records",
    "pair_table",
    "paired_rows",
    "read_folder",
    "read_record",
]

"""dSprites, drawn procedurally: the full factor grid, any index on demand, the original ``.npz`` layout.

The grid (as the original dataset): colour (1 value, white) x shape (square, ellipse, heart) x
scale (6 values, 0.5 to 1) x orientation (40 values, ``linspace(0, 2 pi, 40)``, so the first and the
last coincide as in the original) x posX (32 values in [0, 1]) x posY (32) = 737,280 binary 64x64
images. Index ``i`` maps to factor classes in row-major order (posY fastest), the original order.

Drawing: a pixel is on when its centre lies inside the shape (no anti-aliasing). Shapes are given in
a unit frame (square of half-side 1, ellipse of semi-axes 1 and 0.5, heart the implicit curve
``(x^2 + y^2 - 1)^3 - x^2 y^3 <= 0`` scaled into the unit disc), rotated by the orientation,
scaled by ``scale * SPRITE_RADIUS_PX`` and centred at ``MARGIN_PX + pos * (64 - 2 MARGIN_PX)``;
the margin keeps every rotated shape at every scale whole inside the image.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from repscope.data.boxes import foreground_boxes
from repscope.data.npzfile import check_array_file
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import atomic_write, check_writable_dir

IMAGE_SIZE = 64
FACTOR_NAMES: tuple[str, ...] = ("color", "shape", "scale", "orientation", "posX", "posY")
FACTOR_SIZES: tuple[int, ...] = (1, 3, 6, 40, 32, 32)
SHAPES: tuple[str, ...] = ("square", "ellipse", "heart")
SPRITE_RADIUS_PX = 9.0  # half-side of the square at scale 1
# the farthest a shape reaches from its centre: the square's corner at scale 1
MARGIN_PX = SPRITE_RADIUS_PX * np.sqrt(2.0) + 0.5

FACTOR_VALUES: dict[str, np.ndarray] = {
    "color": np.array([1.0]),
    "shape": np.array([1.0, 2.0, 3.0]),  # the original's values: 1 square, 2 ellipse, 3 heart
    "scale": np.linspace(0.5, 1.0, 6),
    "orientation": np.linspace(0.0, 2.0 * np.pi, 40),
    "posX": np.linspace(0.0, 1.0, 32),
    "posY": np.linspace(0.0, 1.0, 32),
}
TOTAL = int(np.prod(FACTOR_SIZES))


def index_to_classes(index: Any) -> np.ndarray:
    """Factor classes ``(..., 6)`` of image indices (row-major over ``FACTOR_SIZES``).

    Parameters
    ----------
    index : int or array-like of int
        Grid indices in ``[0, 737280)``, any shape ``S``.

    Returns
    -------
    numpy.ndarray
        int64 ``S + (6,)`` class of each factor, in :data:`FACTOR_NAMES` order.

    Raises
    ------
    InvalidArgumentError
        When an index is out of range.
    """
    index = np.asarray(index, dtype=np.int64)
    if np.any((index < 0) | (index >= TOTAL)):
        raise InvalidArgumentError(f"index: must lie in [0, {TOTAL}), got {index.min()}..{index.max()}")
    return np.stack(np.unravel_index(index, FACTOR_SIZES), axis=-1).astype(np.int64)


def classes_to_index(classes: Any) -> np.ndarray:
    """Grid indices of factor classes (the inverse of :func:`index_to_classes`).

    Parameters
    ----------
    classes : array-like of int, shape (..., 6)
        Class of each factor in :data:`FACTOR_NAMES` order.

    Returns
    -------
    numpy.ndarray
        int64 indices, shape ``classes.shape[:-1]``.

    Raises
    ------
    InvalidArgumentError
        When the last axis does not hold 6 factors or a class is out of its factor's range.
    """
    classes = np.asarray(classes, dtype=np.int64)
    if classes.shape[-1:] != (len(FACTOR_SIZES),):
        raise InvalidArgumentError(
            f"classes: last axis must hold {len(FACTOR_SIZES)} factors, got shape {classes.shape}"
        )
    for k, (name, size) in enumerate(zip(FACTOR_NAMES, FACTOR_SIZES)):
        if np.any((classes[..., k] < 0) | (classes[..., k] >= size)):
            raise InvalidArgumentError(f"classes: factor {name} must lie in [0, {size})")
    return np.ravel_multi_index(tuple(np.moveaxis(classes, -1, 0)), FACTOR_SIZES).astype(np.int64)


def classes_to_values(classes: Any) -> np.ndarray:
    """Factor values of factor classes, as the original's ``latents_values``.

    Parameters
    ----------
    classes : array-like of int, shape (..., 6)
        Class of each factor in :data:`FACTOR_NAMES` order, each in range (not checked here).

    Returns
    -------
    numpy.ndarray
        float64 ``(..., 6)``: colour 1, shape 1-3, scale 0.5-1 (relative to ``SPRITE_RADIUS_PX``),
        orientation in radians (0 to 2 pi), posX and posY in [0, 1] (fractions of the span between the
        margins; posY grows downwards) (:data:`FACTOR_VALUES`).
    """
    classes = np.asarray(classes, dtype=np.int64)
    return np.stack([FACTOR_VALUES[name][classes[..., k]] for k, name in enumerate(FACTOR_NAMES)], axis=-1)


def values_to_classes(values: Any) -> np.ndarray:
    """Nearest factor classes of factor values (exact for values of the grid).

    Parameters
    ----------
    values : array-like of float, shape (..., 6)
        Factor values in :data:`FACTOR_NAMES` order and the units of :func:`classes_to_values`.

    Returns
    -------
    numpy.ndarray
        int64 ``(..., 6)`` classes (the first of two equally near grid values).
    """
    values = np.asarray(values, dtype=np.float64)
    out = [np.abs(values[..., k, None] - FACTOR_VALUES[name]).argmin(-1) for k, name in enumerate(FACTOR_NAMES)]
    return np.stack(out, axis=-1).astype(np.int64)


def inside_shape(shape: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Whether points (u, v) of the unit frame (v up) lie inside shape class ``shape``.

    Parameters
    ----------
    shape : int
        0 square (half-side 1), 1 ellipse (semi-axes 1 along u and 0.5 along v), anything else heart
        (scaled into the unit disc).
    u, v : numpy.ndarray
        Coordinates in the unit frame (broadcast together), in units of the shape's half-size.

    Returns
    -------
    numpy.ndarray
        bool of the broadcast shape; points on the boundary are inside.
    """
    if shape == 0:
        return (np.abs(u) <= 1.0) & (np.abs(v) <= 1.0)
    if shape == 1:
        return u * u + 4.0 * v * v <= 1.0
    # the heart curve spans x in [-1.14, 1.14], y in [-1, 1.25]: centre it and fit the unit disc
    x, y = u * 1.2, v * 1.2 + 0.12
    return (x * x + y * y - 1.0) ** 3 - x * x * y**3 <= 0.0


def extent_px(radius_px: Any) -> np.ndarray:
    """How far any shape of half-size ``radius_px`` reaches from its centre, pixels included.

    The square's corner ``sqrt(2) r`` plus half a pixel, whatever the orientation.

    Parameters
    ----------
    radius_px : float or array-like of float
        Half-size of the shape, in pixels of the 64x64 image.

    Returns
    -------
    numpy.ndarray
        float64 reach in pixels, the shape of ``radius_px``.
    """
    return np.asarray(radius_px, dtype=np.float64) * np.sqrt(2.0) + 0.5


def shape_masks(
    shapes: Any, radius_px: Any, angles: Any, centre_x: Any, centre_y: Any, patch: int, image_size: int = IMAGE_SIZE
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary masks of N shapes, each drawn in a ``patch`` x ``patch`` window of the image.

    A pixel is on when its centre lies inside the shape rotated by ``angle`` (counter-clockwise on
    screen), scaled to half-size ``radius_px`` and centred at (``centre_x``, ``centre_y``) pixels
    from the top-left corner. The window of sample k starts at row ``top[k]``, column ``left[k]``.
    Only the pixels near each shape are tested, one shape kind at a time, which is what makes drawing
    fast.

    Parameters
    ----------
    shapes : array-like of int, shape (N,)
        Shape classes (0 square, 1 ellipse, 2 heart).
    radius_px : array-like of float, shape (N,)
        Half-size of each shape, in pixels.
    angles : array-like of float, shape (N,)
        Orientation, in radians.
    centre_x, centre_y : array-like of float, shape (N,)
        Centre, in pixels from the image's top-left corner (x to the right, y down; pixel ``(r, c)``
        covers ``[c, c + 1) x [r, r + 1)``, so its centre is at ``(c + 0.5, r + 0.5)``).
    patch : int
        Side of the window, in pixels; it should hold ``2 * extent_px(radius_px)`` (a shape reaching
        past its window or the image edge is cut off).
    image_size : int, default=64
        Side of the image, in pixels; windows are clipped to lie inside it.

    Returns
    -------
    masks : numpy.ndarray
        bool ``(N, patch, patch)``.
    top, left : numpy.ndarray
        int64 ``(N,)`` row and column of each window's top-left pixel in the image.
    """
    shapes = np.asarray(shapes, dtype=np.int64)
    radius, angle = np.asarray(radius_px, dtype=np.float64), np.asarray(angles, dtype=np.float64)
    cx, cy = np.asarray(centre_x, dtype=np.float64), np.asarray(centre_y, dtype=np.float64)
    reach = extent_px(radius)
    top = np.clip(np.floor(cy - reach), 0, image_size - patch).astype(np.int64)
    left = np.clip(np.floor(cx - reach), 0, image_size - patch).astype(np.int64)
    offsets = np.arange(patch, dtype=np.float64) + 0.5
    dx = (left[:, None] + offsets[None, :] - cx[:, None])[:, None, :]  # (N, 1, P) columns
    dy = (cy[:, None] - top[:, None] - offsets[None, :])[:, :, None]  # (N, P, 1) rows, y up
    cos, sin = (np.cos(angle) / radius)[:, None, None], (np.sin(angle) / radius)[:, None, None]
    masks = np.zeros((len(shapes), patch, patch), dtype=bool)
    for shape in np.unique(shapes):
        rows = np.flatnonzero(shapes == shape)
        u = cos[rows] * dx[rows] + sin[rows] * dy[rows]
        v = cos[rows] * dy[rows] - sin[rows] * dx[rows]
        masks[rows] = inside_shape(int(shape), u, v)
    return masks, top, left


PATCH_PX = int(np.ceil(2 * extent_px(SPRITE_RADIUS_PX))) + 2  # window that holds any shape at scale 1


def render(classes: Any) -> np.ndarray:
    """Binary uint8 images ``(N, 64, 64)`` (values 0 and 1) of factor classes ``(N, 6)``.

    Parameters
    ----------
    classes : array-like of int, shape (N, 6) or (6,)
        Factor classes in :data:`FACTOR_NAMES` order (one row is treated as ``N = 1``).

    Returns
    -------
    numpy.ndarray
        uint8 ``(N, 64, 64)``, 1 on the shape and 0 elsewhere.
    """
    classes = np.atleast_2d(np.asarray(classes, dtype=np.int64))
    values = classes_to_values(classes)
    span = IMAGE_SIZE - 2.0 * MARGIN_PX
    masks, top, left = shape_masks(
        classes[:, 1],
        values[:, 2] * SPRITE_RADIUS_PX,
        values[:, 3],
        MARGIN_PX + values[:, 4] * span,
        MARGIN_PX + values[:, 5] * span,
        PATCH_PX,
    )
    out = np.zeros((len(classes), IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8)
    for k in range(len(classes)):
        out[k, top[k] : top[k] + PATCH_PX, left[k] : left[k] + PATCH_PX] = masks[k]
    return out


class DSprites:
    """The dSprites grid, generated on demand: ``ds[i] -> (image uint8 (64, 64), classes (6,))``.

    Also a generator of the framework (:class:`repscope.data.datasets.SampleGenerator`):
    ``sample(indices)`` gives the fields ``image`` (uint8 ``(N, 1, 64, 64)``, 0 or 255), ``factors``
    (int64 ``(N, 6)`` classes in :data:`FACTOR_NAMES` order), one int64 column per factor, ``index``, and
    ``box`` (float32 ``(N, 4)``, the sprite's bounding box, :mod:`repscope.data.boxes`).

    The class takes no parameters: the grid is fixed.

    Attributes
    ----------
    name : str
        ``"dsprites"``, the generator's registry name.
    size : int
        737,280 images.
    factor_names : tuple of str
        :data:`FACTOR_NAMES`.
    factor_sizes : tuple of int
        :data:`FACTOR_SIZES`.
    """

    name = "dsprites"
    size = TOTAL
    factor_names = FACTOR_NAMES
    factor_sizes = FACTOR_SIZES

    def __len__(self) -> int:
        return TOTAL

    def sample(self, indices: Any, fields: Any = None) -> dict[str, np.ndarray]:
        """The fields of grid images ``indices`` (see the class docstring); ``fields`` picks some.

        Parameters
        ----------
        indices : int or array-like of int, shape (N,)
            Grid indices in ``[0, 737280)``.
        fields : sequence of str, optional
            Names among ``image``, ``box``, ``factors``, ``index`` and :data:`FACTOR_NAMES`; default all
            (the images are only drawn when ``image`` or ``box`` is asked).

        Returns
        -------
        dict of str to numpy.ndarray
            ``image`` uint8 ``(N, 1, 64, 64)`` (0 or 255), ``factors`` int64 ``(N, 6)`` classes,
            ``index`` int64 ``(N,)``, ``box`` float32 ``(N, 4)`` (``x0, y0, x1, y1`` of the sprite's pixels,
            ends exclusive) and one int64 ``(N,)`` class column per factor; in the order of ``fields``
            when given.

        Raises
        ------
        InvalidArgumentError
            When an index is out of range.
        """
        indices = np.atleast_1d(np.asarray(indices, dtype=np.int64))
        classes = index_to_classes(indices)
        wanted = set(fields) if fields is not None else None
        out: dict[str, np.ndarray] = {"factors": classes, "index": indices}
        out.update({name: classes[:, k] for k, name in enumerate(FACTOR_NAMES)})
        if wanted is None or "image" in wanted or "box" in wanted:
            # 0/1 drawings as the 0-255 pixels every image field holds
            out["image"] = (render(classes) * np.uint8(255))[:, None]
            out["box"] = foreground_boxes(out["image"])  # black background: the lit pixels are the sprite
        return out if wanted is None else {name: out[name] for name in fields}

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        classes = index_to_classes(int(index))
        return render(classes[None])[0], classes

    def images(self, indices: Any) -> np.ndarray:
        """Binary images of grid indices.

        Parameters
        ----------
        indices : array-like of int, shape (N,)
            Grid indices in ``[0, 737280)``.

        Returns
        -------
        numpy.ndarray
            uint8 ``(N, 64, 64)``, values 0 and 1.

        Raises
        ------
        InvalidArgumentError
            When an index is out of range.
        """
        return render(index_to_classes(indices))

    def batches(self, indices: Any = None, batch_size: int = 4096) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(images, classes)`` in order, ``batch_size`` at a time (all 737,280 when ``indices`` is None).

        Parameters
        ----------
        indices : array-like of int, shape (N,), optional
            Grid indices to draw, in the order given; default the whole grid.
        batch_size : int, default=4096
            Images per batch.

        Yields
        ------
        images : numpy.ndarray
            uint8 ``(B, 64, 64)``, values 0 and 1 (``B <= batch_size``).
        classes : numpy.ndarray
            int64 ``(B, 6)`` factor classes.

        Raises
        ------
        InvalidArgumentError
            When an index is out of range (raised at the batch holding it).
        """
        indices = np.arange(TOTAL) if indices is None else np.asarray(indices, dtype=np.int64)
        for start in range(0, len(indices), batch_size):
            classes = index_to_classes(indices[start : start + batch_size])
            yield render(classes), classes

    def sample_indices(self, n: int, rng: np.random.Generator | int) -> np.ndarray:
        """``n`` random grid indices, without replacement unless ``n`` exceeds the grid.

        Parameters
        ----------
        n : int
            Number of indices.
        rng : numpy.random.Generator or int
            Generator or seed.

        Returns
        -------
        numpy.ndarray
            int64 ``(n,)`` indices in ``[0, 737280)``.
        """
        return np.random.default_rng(rng).choice(TOTAL, size=n, replace=n > TOTAL)


def metadata() -> dict[str, Any]:
    """The ``metadata`` dict of the original dSprites ``.npz``, describing this procedural grid.

    Returns
    -------
    dict
        ``description``, ``latents_names`` (:data:`FACTOR_NAMES`), ``latents_sizes`` (int array (6,)),
        ``latents_possible_values`` (``{name: float array}``), ``author`` and ``title``.
    """
    return {
        "description": "dSprites drawn procedurally by repscope: binary 64x64 images of a square, an ellipse or "
        "a heart over the full grid of scale, orientation and position.",
        "latents_names": FACTOR_NAMES,
        "latents_sizes": np.array(FACTOR_SIZES),
        "latents_possible_values": {name: FACTOR_VALUES[name] for name in FACTOR_NAMES},
        "author": "repscope",
        "title": "dSprites (procedural)",
    }


def write_npz(path: str | Path, indices: Any = None, batch_size: int = 8192, progress: bool | None = False) -> Path:
    """Write the original dSprites layout (compressed ``.npz``), atomically.

    Keys: ``imgs`` uint8 (N, 64, 64) (values 0 and 1), ``latents_values`` float64 (N, 6),
    ``latents_classes`` int64 (N, 6), ``metadata`` (a dict, stored as a pickled object array as the
    original stores it).

    Parameters
    ----------
    path : str or pathlib.Path
        Destination file; an existing file is replaced.
    indices : array-like of int, shape (N,), optional
        Grid indices to write, in that order; default the whole grid (737,280 images).
    batch_size : int, default=8192
        Images drawn at a time.
    progress : bool or None, default=False
        Show the two long steps (drawing the images, then compressing them into the file) as two bars
        of :func:`repscope.progress.progress_bar`, each counting images (None or True: as the progress
        mode says; False: silent).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    OutputWriteError
        When the folder of ``path`` cannot be created or written to (checked before drawing).
    InvalidArgumentError
        When an index is out of range.
    """
    path = Path(path)
    check_writable_dir(path.parent)  # before a minute of drawing, not after
    indices = np.arange(TOTAL) if indices is None else np.asarray(indices, dtype=np.int64)
    from repscope.progress import progress_bar  # noqa: PLC0415

    count = len(indices)
    enabled = None if progress is True else progress
    images = np.empty((count, IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8)
    classes = np.empty((count, len(FACTOR_SIZES)), dtype=np.int64)
    with progress_bar(f"drawing {count} dSprites images", total=count, enabled=enabled) as update:
        done = 0
        for batch_images, batch_classes in DSprites().batches(indices, batch_size):
            images[done : done + len(batch_images)] = batch_images
            classes[done : done + len(batch_classes)] = batch_classes
            done += len(batch_images)
            update(done)
    # what np.savez_compressed writes (the same members, zip64, deflated), with the images written a
    # chunk at a time so that the minute of compression can show its count
    members = {
        "latents_values": classes_to_values(classes),
        "latents_classes": classes,
        "metadata": np.array(metadata(), dtype=object),
    }
    chunk = max(1, (16 << 20) // (IMAGE_SIZE * IMAGE_SIZE))
    with atomic_write(path, "wb") as handle:
        with zipfile.ZipFile(handle, mode="w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
            with progress_bar(
                f"compressing {count} dSprites images into {path.name}", total=count, enabled=enabled
            ) as update:
                with archive.open("imgs.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array_header_1_0(member, np.lib.format.header_data_from_array_1_0(images))
                    for start in range(0, count, chunk):
                        member.write(images[start : start + chunk].tobytes())
                        update(min(start + chunk, count))
            for name, array in members.items():
                with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=array.dtype == object)
    return path


def read_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Read ``imgs``, ``latents_values`` and ``latents_classes`` of a dSprites-layout ``.npz``.

    Works for ours and the original. ``metadata`` is not unpickled: a data file is untrusted input.

    Parameters
    ----------
    path : str or pathlib.Path
        The ``.npz`` file.

    Returns
    -------
    dict of str to numpy.ndarray
        ``imgs`` ``(N, 64, 64)`` (uint8 0/1 in both), ``latents_values`` ``(N, 6)`` and
        ``latents_classes`` ``(N, 6)``, dtypes as stored.

    Raises
    ------
    DataFormatError
        When the file cannot be read as ``.npz``, lacks a key, or the shapes do not form a dSprites set.
    """
    path = Path(path)
    check_array_file(path)  # a member declaring more than the archive or the memory holds: refused unread
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [key for key in ("imgs", "latents_values", "latents_classes") if key not in archive.files]
            if missing:
                raise DataFormatError(f"{path}: not a dSprites .npz, missing {', '.join(missing)}")
            out = {key: archive[key] for key in ("imgs", "latents_values", "latents_classes")}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        # a truncated file, a bad member CRC, a pickled object (never unpickled)
        raise DataFormatError(f"{path}: not a readable .npz ({exc})") from None
    n = len(out["imgs"])
    if (
        out["imgs"].shape[1:] != (IMAGE_SIZE, IMAGE_SIZE)
        or out["latents_classes"].shape != (n, 6)
        or out["latents_values"].shape != (n, 6)
    ):
        raise DataFormatError(
            f"{path}: shapes imgs {out['imgs'].shape}, latents_classes {out['latents_classes'].shape}, "
            f"latents_values {out['latents_values'].shape} do not form a dSprites set"
        )
    return out

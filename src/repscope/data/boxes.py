"""Bounding boxes of the object in an image, the layout a ``box`` field holds.

A box is four float32 numbers ``(x0, y0, x1, y1)`` in pixels of the image as served (after any
resizing), the corners of the rectangle ``x0 <= x < x1``, ``y0 <= y < y1`` with ``x`` the column and
``y`` the row, origin at the top-left corner of the top-left pixel. A pixel belongs to the box when its
centre ``(column + 0.5, row + 0.5)`` lies inside; a box from whole pixel extents (as
:func:`foreground_boxes` gives) holds exactly those pixels. Models read boxes to weight a
reconstruction loss inside them (CANDLE, Reddy et al., section 3: "we can give more importance to the
area given by bounding boxes in reconstruction loss").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError

BOX_NAMES: tuple[str, ...] = ("x0", "y0", "x1", "y1")


def foreground_boxes(images: Any, threshold: float = 0) -> np.ndarray:
    """The smallest box around the pixels brighter than ``threshold`` of each image.

    For images of one object on a black background (dSprites) this is the object's bounding box.

    Parameters
    ----------
    images : array-like of shape (N, C, H, W)
        Images, channels first; a pixel is foreground when any channel exceeds ``threshold``.
    threshold : float, default 0
        Pixel values above it are foreground.

    Returns
    -------
    numpy.ndarray
        float32 ``(N, 4)`` boxes ``(x0, y0, x1, y1)``, ends exclusive; ``(0, 0, 0, 0)`` (an empty box) for
        an image without foreground.

    Raises
    ------
    InvalidArgumentError
        When ``images`` is not 4-D.
    """
    images = np.asarray(images)
    if images.ndim != 4:
        raise InvalidArgumentError(f"images: expected shape (N, C, H, W), got {images.shape}")
    foreground = (images > threshold).any(axis=1)  # (N, H, W)
    rows, columns = foreground.any(axis=2), foreground.any(axis=1)  # (N, H), (N, W)
    boxes = np.zeros((len(images), 4), dtype=np.float32)
    found = rows.any(axis=1)
    height, width = images.shape[2], images.shape[3]
    # first and last True along each axis: argmax of the row / column flags, read from both ends
    boxes[:, 0] = np.argmax(columns, axis=1)
    boxes[:, 1] = np.argmax(rows, axis=1)
    boxes[:, 2] = width - np.argmax(columns[:, ::-1], axis=1)
    boxes[:, 3] = height - np.argmax(rows[:, ::-1], axis=1)
    boxes[~found] = 0.0
    return boxes


def box_masks(boxes: Any, height: int, width: int) -> np.ndarray:
    """Which pixels of an ``height`` x ``width`` image lie in each box (their centres inside).

    Parameters
    ----------
    boxes : array-like of shape (N, 4)
        ``(x0, y0, x1, y1)`` in pixels.
    height, width : int
        Image size.

    Returns
    -------
    numpy.ndarray
        bool ``(N, height, width)``.

    Raises
    ------
    InvalidArgumentError
        When ``boxes`` is not ``(N, 4)`` finite numbers.
    """
    boxes = np.asarray(boxes, dtype=np.float64)
    if boxes.ndim != 2 or boxes.shape[1] != 4 or not np.all(np.isfinite(boxes)):
        raise InvalidArgumentError(f"boxes: expected finite (N, 4) values (x0, y0, x1, y1), got shape {boxes.shape}")
    x = np.arange(width) + 0.5
    y = np.arange(height) + 0.5
    inside_x = (x >= boxes[:, 0, None]) & (x < boxes[:, 2, None])  # (N, W)
    inside_y = (y >= boxes[:, 1, None]) & (y < boxes[:, 3, None])  # (N, H)
    return inside_y[:, :, None] & inside_x[:, None, :]

"""CdSprites+ attributes, levels and captions: the vocabulary every part of the benchmark shares.

Level ``L`` uses the first ``L`` attributes of :data:`ATTRIBUTES` (shape; + size; + colour;
+ position; + background). An *attribute table* is an int array ``(N, L)`` of class indices in that
column order (``ATTRIBUTE_VALUES[name][class]`` is the word).

Captions keep the word order size, colour, shape, position, background, e.g.
``small pink heart at bottom left on dark``: position is the three words ``at <top|bottom>
<left|right>``, background the two words ``on <dark|light>``. The longest caption (level 5) has 45
characters. A caption's *template* lists, word slot by word slot, which attribute the word belongs
to; the connectives ``at`` and ``on`` are fixed words of the template, not attribute values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError

LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)
ATTRIBUTES: tuple[str, ...] = ("shape", "size", "colour", "position", "background")
ATTRIBUTE_VALUES: dict[str, tuple[str, ...]] = {
    "shape": ("square", "ellipse", "heart"),
    "size": ("big", "small"),
    "colour": ("red", "green", "blue", "yellow", "pink"),
    "position": ("top left", "top right", "bottom left", "bottom right"),
    "background": ("dark", "light"),
}
CAPTION_ORDER: tuple[str, ...] = ("size", "colour", "shape", "position", "background")
CONNECTIVES: dict[str, str] = {"position": "at", "background": "on"}
COLOUR_RGB: dict[str, tuple[int, int, int]] = {
    "red": (192, 64, 0),
    "green": (10, 107, 60),
    "blue": (0, 127, 200),
    "yellow": (228, 217, 111),
    "pink": (255, 0, 255),
}
DEFAULT_SIZES: dict[int, int] = {1: 75_000, 2: 120_000, 3: 300_000, 4: 600_000, 5: 960_000}
VALIDATION_FRACTION = 0.1


def check_level(level: Any, name: str = "level") -> int:
    """``level`` as an int of :data:`LEVELS`, or a clear error naming ``name``.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5 (an integral float such as ``3.0`` is accepted).
    name : str, default="level"
        What to call the argument in the error message.

    Returns
    -------
    int
        The level, 1-5.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not an integer 1-5.
    """
    try:
        value = int(level)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name}: must be an integer 1-5, got {level!r}") from None
    if value not in LEVELS or value != level:
        raise InvalidArgumentError(f"{name}: must be one of 1-5, got {level!r}")
    return value


def level_attributes(level: int) -> tuple[str, ...]:
    """The attributes of ``level`` in attribute-table column order.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.

    Returns
    -------
    tuple of str
        The first ``level`` names of :data:`ATTRIBUTES`, e.g. ``("shape", "size")`` at level 2.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5.
    """
    return ATTRIBUTES[: check_level(level)]


def combination_count(level: int) -> int:
    """Distinct attribute combinations of a level: 3, 6, 30, 120, 240.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.

    Returns
    -------
    int
        The product of the class counts of the level's attributes.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5.
    """
    return int(np.prod([len(ATTRIBUTE_VALUES[name]) for name in level_attributes(level)]))


def combinations_to_table(level: int, combinations: Any) -> np.ndarray:
    """Attribute table ``(N, L)`` of combination indices (mixed radix, first attribute slowest).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    combinations : array-like of int, shape (N,)
        Combination indices in ``[0, combination_count(level))``.

    Returns
    -------
    numpy.ndarray
        int64 ``(N, L)`` attribute table (``combinations`` of another shape ``S`` gives ``S + (L,)``).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or an index is out of range.
    """
    sizes = [len(ATTRIBUTE_VALUES[name]) for name in level_attributes(level)]
    combinations = np.asarray(combinations, dtype=np.int64)
    if np.any((combinations < 0) | (combinations >= int(np.prod(sizes)))):
        raise InvalidArgumentError(f"combinations: must lie in [0, {int(np.prod(sizes))}) at level {level}")
    return np.stack(np.unravel_index(combinations, sizes), axis=-1).astype(np.int64)


def check_table(level: int, table: Any, name: str = "attributes") -> np.ndarray:
    """``table`` as an int64 ``(N, L)`` array of valid class indices, or a clear error naming ``name``.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5; ``L = level``.
    table : array-like of int, shape (N, L)
        Class indices in the column order of :func:`level_attributes`; at level 1 a ``(N,)`` array is
        accepted as one column.
    name : str, default="attributes"
        What to call the argument in error messages.

    Returns
    -------
    numpy.ndarray
        int64 ``(N, L)`` copy of ``table``.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5, the shape is wrong, the dtype is not integer, or a class is outside
        its attribute's range.
    """
    attributes = level_attributes(level)
    array = np.asarray(table)
    if array.ndim == 1 and len(attributes) == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[1] != len(attributes):
        raise InvalidArgumentError(
            f"{name}: expected shape (N, {len(attributes)}) with columns {', '.join(attributes)} for level {level}, "
            f"got {array.shape}"
        )
    if array.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{name}: expected integer class indices, got dtype {array.dtype}")
    for k, attribute in enumerate(attributes):
        size = len(ATTRIBUTE_VALUES[attribute])
        if np.any((array[:, k] < 0) | (array[:, k] >= size)):
            raise InvalidArgumentError(f"{name}: column {attribute} must hold classes 0-{size - 1}")
    return array.astype(np.int64)


def _attribute_words(attribute: str, value: str) -> list[str]:
    connective = CONNECTIVES.get(attribute)
    return ([connective] if connective else []) + value.split(" ")


def caption_template(level: int) -> list[tuple[str, str | None]]:
    """Word slots of the level's captions: ``(attribute, fixed word or None)``.

    Connectives are fixed words; slots holding an attribute value carry ``None``.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.

    Returns
    -------
    list of (str, str or None)
        One entry per word of the level's captions, in caption order, e.g. at level 5
        ``[("size", None), ("colour", None), ("shape", None), ("position", "at"), ("position", None),
        ("position", None), ("background", "on"), ("background", None)]``.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5.
    """
    attributes = set(level_attributes(level))
    template: list[tuple[str, str | None]] = []
    for attribute in CAPTION_ORDER:
        if attribute not in attributes:
            continue
        if attribute in CONNECTIVES:
            template.append((attribute, CONNECTIVES[attribute]))
        width = len(ATTRIBUTE_VALUES[attribute][0].split(" "))
        template.extend([(attribute, None)] * width)
    return template


def compose_caption(level: int, classes: Sequence[int]) -> str:
    """Caption of one row of an attribute table, e.g. ``small pink heart at bottom left on dark``.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    classes : sequence of int
        ``L = level`` class indices in attribute-table column order.

    Returns
    -------
    str
        Lower-case words in the order size, colour, shape, position, background, one space apart.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or ``classes`` does not hold ``L`` values.
    """
    attributes = level_attributes(level)
    if len(classes) != len(attributes):
        raise InvalidArgumentError(f"classes: level {level} needs {len(attributes)} classes, got {len(classes)}")
    by_name = dict(zip(attributes, (int(c) for c in classes)))
    words: list[str] = []
    for attribute in CAPTION_ORDER:
        if attribute in by_name:
            words += _attribute_words(attribute, ATTRIBUTE_VALUES[attribute][by_name[attribute]])
    return " ".join(words)


def compose_captions(level: int, table: Any) -> list[str]:
    """Captions of every row of an attribute table (:func:`compose_caption` row by row).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    table : array-like of int, shape (N, L)
        Attribute table (see :func:`check_table`).

    Returns
    -------
    list of str
        ``N`` captions.

    Raises
    ------
    InvalidArgumentError
        When ``level`` or ``table`` is invalid.
    """
    table = check_table(level, table)
    return [compose_caption(level, row) for row in table.tolist()]


def attribute_words(level: int, caption: str) -> dict[str, list[str]]:
    """Words of ``caption`` grouped by the template's attribute slots (value words only).

    Word ``k`` of the caption (split on whitespace) fills slot ``k`` of :func:`caption_template`;
    missing words are empty strings, extra words are ignored (so a caption of the wrong length is
    still read slot by slot).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    caption : str
        Any text (other objects are read as ``str(caption)``).

    Returns
    -------
    dict of str to list of str
        For each attribute of the level, the words in its value slots (two for position, one else).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5.
    """
    words = str(caption).split()
    grouped: dict[str, list[str]] = {attribute: [] for attribute in level_attributes(level)}
    for k, (attribute, fixed) in enumerate(caption_template(level)):
        if fixed is None:
            grouped[attribute].append(words[k] if k < len(words) else "")
    return grouped


def read_caption_slots(level: int, caption: str) -> np.ndarray:
    """Class per attribute read slot by slot from ``caption`` (-1 where the words there name no class).

    Tolerant: a misspelt word spoils only its own attribute, and so do extra words at the end; a missing
    or inserted word shifts every later word into the wrong slot (see :func:`attribute_words`).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    caption : str
        Any text.

    Returns
    -------
    numpy.ndarray
        int64 ``(L,)`` class indices in attribute-table column order, -1 where unreadable.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5.
    """
    grouped = attribute_words(level, caption)
    out = np.full(len(level_attributes(level)), -1, dtype=np.int64)
    for k, attribute in enumerate(level_attributes(level)):
        text = " ".join(grouped[attribute])
        if text in ATTRIBUTE_VALUES[attribute]:
            out[k] = ATTRIBUTE_VALUES[attribute].index(text)
    return out


def parse_caption(level: int, caption: str) -> np.ndarray | None:
    """Classes of a well-formed caption of ``level``, or None when it is not exactly a caption the level
    can produce (wrong word count, misspelt word, wrong connective, extra whitespace).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    caption : str
        Any text.

    Returns
    -------
    numpy.ndarray or None
        int64 ``(L,)`` class indices, or None.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5.
    """
    classes = read_caption_slots(level, caption)
    if np.any(classes < 0):
        return None
    return classes if compose_caption(level, classes.tolist()) == str(caption) else None

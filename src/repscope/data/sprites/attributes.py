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
    try:
        value = int(level)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name}: must be an integer 1-5, got {level!r}") from None
    if value not in LEVELS or value != level:
        raise InvalidArgumentError(f"{name}: must be one of 1-5, got {level!r}")
    return value


def level_attributes(level: int) -> tuple[str, ...]:
    """The attributes of ``level`` in attribute-table column order."""
    return ATTRIBUTES[: check_level(level)]


def combination_count(level: int) -> int:
    """Distinct attribute combinations of a level: 3, 6, 30, 120, 240."""
    return int(np.prod([len(ATTRIBUTE_VALUES[name]) for name in level_attributes(level)]))


def combinations_to_table(level: int, combinations: Any) -> np.ndarray:
    """Attribute table ``(N, L)`` of combination indices (mixed radix, first attribute slowest)."""
    sizes = [len(ATTRIBUTE_VALUES[name]) for name in level_attributes(level)]
    combinations = np.asarray(combinations, dtype=np.int64)
    if np.any((combinations < 0) | (combinations >= int(np.prod(sizes)))):
        raise InvalidArgumentError(f"combinations: must lie in [0, {int(np.prod(sizes))}) at level {level}")
    return np.stack(np.unravel_index(combinations, sizes), axis=-1).astype(np.int64)


def check_table(level: int, table: Any, name: str = "attributes") -> np.ndarray:
    """``table`` as an int64 ``(N, L)`` array of valid class indices, or a clear error naming ``name``."""
    attributes = level_attributes(level)
    array = np.asarray(table)
    if array.ndim == 1 and len(attributes) == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[1] != len(attributes):
        raise InvalidArgumentError(
            f"{name}: expected shape (N, {len(attributes)}) with columns {', '.join(attributes)} for level {level}, "
            f"got {array.shape}")
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
    """Word slots of the level's captions: ``(attribute, fixed word or None)``. Connectives are fixed
    words; slots holding an attribute value carry ``None``."""
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
    """Caption of one row of an attribute table, e.g. ``small pink heart at bottom left on dark``."""
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
    table = check_table(level, table)
    return [compose_caption(level, row) for row in table.tolist()]


def attribute_words(level: int, caption: str) -> dict[str, list[str]]:
    """Words of ``caption`` grouped by the template's attribute slots (value words only). Word ``k``
    of the caption fills slot ``k`` of the template; missing words are empty strings, extra words are
    ignored (so a caption of the wrong length is still read slot by slot)."""
    words = str(caption).split()
    grouped: dict[str, list[str]] = {attribute: [] for attribute in level_attributes(level)}
    for k, (attribute, fixed) in enumerate(caption_template(level)):
        if fixed is None:
            grouped[attribute].append(words[k] if k < len(words) else "")
    return grouped


def read_caption_slots(level: int, caption: str) -> np.ndarray:
    """Class per attribute read slot by slot from ``caption`` (-1 where the words there name no class).
    Tolerant: a misspelt, missing or extra word spoils only its own attribute."""
    grouped = attribute_words(level, caption)
    out = np.full(len(level_attributes(level)), -1, dtype=np.int64)
    for k, attribute in enumerate(level_attributes(level)):
        text = " ".join(grouped[attribute])
        if text in ATTRIBUTE_VALUES[attribute]:
            out[k] = ATTRIBUTE_VALUES[attribute].index(text)
    return out


def parse_caption(level: int, caption: str) -> np.ndarray | None:
    """Classes of a well-formed caption of ``level``, or None when it is not exactly a caption the
    level can produce (wrong word count, misspelt word, wrong connective)."""
    classes = read_caption_slots(level, caption)
    if np.any(classes < 0):
        return None
    return classes if compose_caption(level, classes.tolist()) == str(caption) else None

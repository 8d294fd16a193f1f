"""CdSprites+ coherency by the rules of the authors' toolkit (Sejnova et al.; gabinsane/multimodal-vae-comparison,
``multimodal_compare/eval/eval_cdsprites.py``), exactly, beside the strict rules of
:mod:`repscope.metrics.multimodal.coherency`: pure functions on captions and the classifiers' classes.

The toolkit's rules read captions more leniently than ours: a generated caption that starts with the true one
is Strict-right whatever follows it; an attribute is read as a substring of fixed space-separated tokens; a
joint pair needs no well-formed caption. :func:`toolkit_coherency` scores one direction;
:mod:`repscope.studies.multimodal.coherency` (``compat: toolkit`` or ``both``) runs it on a model's outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from repscope.data.multimodal.attributes import (
    ATTRIBUTE_VALUES,
    CONNECTIVES,
    check_level,
    check_table,
    level_attributes,
)
from repscope.errors import InvalidArgumentError

TOOLKIT_SOURCE = (
    "gabinsane/multimodal-vae-comparison, multimodal_compare/eval/eval_cdsprites.py (commit 2ade08e, 2023-06-15)"
)
# the toolkit's word lists in its search order (eval_cdsprites.py, module constant ``sources``): a caption
# is searched for these words first to last, and the first one found wins; its colours include "white"
_TOOLKIT_SEARCH: dict[str, tuple[str, ...]] = {
    "shape": ("heart", "ellipse", "square"),
    "size": ("small", "big"),
    "colour": ("white", "red", "yellow", "green", "blue", "pink"),
    "position": ("at top left", "at top right", "at bottom right", "at bottom left"),
    "background": ("on light", "on dark"),
}


def _toolkit_tokens(attribute: str, level: int) -> int | tuple[int, ...]:
    """Which space-separated tokens of a generated caption an attribute is read from
    (eval_cdsprites.py, get_attribute_from_recon): one token, or tokens joined by one space."""
    if attribute == "shape":
        return {1: 0, 2: 1}.get(level, 2)
    return {"size": 0, "colour": 1, "position": (3, 4, 5, 6), "background": (-2, -1)}[attribute]


def _toolkit_word(attribute: str, value: int) -> str:
    """The toolkit's name of class ``value`` (eval_cdsprites.py ``class_mappings``: position and background
    carry their connective)."""
    word = ATTRIBUTE_VALUES[attribute][int(value)]
    connective = CONNECTIVES.get(attribute)
    return f"{connective} {word}" if connective else word


def _first_contained(words: tuple[str, ...], text: str) -> str | None:
    # eval_cdsprites.py, find_in_list: the first word that occurs anywhere in the text (a substring, any case)
    for word in words:
        if word.lower() in text.lower():
            return word.lower()
    return None


def toolkit_read_caption(level: int, caption: Any) -> dict[str, str | None]:
    """Each attribute's word as the authors' toolkit reads it from a generated caption.

    The rules of ``get_attribute_from_recon`` and ``search_att`` in
    ``multimodal_compare/eval/eval_cdsprites.py`` (gabinsane/multimodal-vae-comparison): the caption is split
    on single spaces (``caption.split(" ")``: two spaces make an empty token, every token keeps its place)
    and each attribute is looked for in fixed tokens, ``size`` in token 0, ``colour`` in token 1, ``shape``
    in token 0 (level 1), 1 (level 2) or 2 (levels 3-5), ``position`` in tokens 3-6 joined by single spaces,
    ``background`` in the last two tokens joined. The attribute's word is the first of the toolkit's list
    (:data:`_TOOLKIT_SEARCH`, e.g. heart, ellipse, square; the colours include ``white``) that occurs in that
    text as a substring, case ignored (``smallx`` reads as ``small``). A token that does not exist (a caption
    with fewer tokens; at level 4 a caption of exactly six words has no token 6, so its position is never
    read) gives ``None``, as does a word found nowhere.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    caption : str
        A generated caption, exactly as generated (a non-``str`` reads as nothing).

    Returns
    -------
    dict of str to str or None
        ``{attribute: word}`` for the level's attributes (position ``at top left``, background ``on dark``, as
        the toolkit names them), ``None`` where nothing is read.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5.
    """
    level = check_level(level)
    tokens = caption.split(" ") if isinstance(caption, str) else None
    read: dict[str, str | None] = {}
    for attribute in level_attributes(level):
        where = _toolkit_tokens(attribute, level)
        text = None
        if tokens is not None:
            try:
                text = tokens[where] if isinstance(where, int) else " ".join(tokens[k] for k in where)
            except IndexError:  # the toolkit catches it and reads nothing
                text = None
        read[attribute] = None if text is None else _first_contained(_TOOLKIT_SEARCH[attribute], text)
    return read


def toolkit_caption_scores(level: int, true_caption: str, caption: Any) -> dict[str, Any]:
    """One generated caption scored against the true one by the authors' toolkit's rules.

    ``check_cross_sample_correct(..., recontext=caption)`` of ``multimodal_compare/eval/eval_cdsprites.py``:
    attribute ``a`` is right when the word :func:`toolkit_read_caption` reads for it occurs in the true
    caption (a substring test); ``letters`` is ``count_same_letters``: both strings cut to the shorter
    one's length, equal characters counted position by position, divided by the true caption's length;
    the caption is Strict-right when ``letters == 1``, i.e. it *starts with* the true caption (trailing
    text of any kind passes; the features play no part in Strict).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    true_caption : str
        The true caption of the image given to the model.
    caption : str
        The generated caption, exactly as generated (non-``str``: wrong in every score).

    Returns
    -------
    dict
        ``strict`` (bool), ``features`` (int, right attributes, 0 to ``level``), ``letters`` (float in [0, 1]),
        ``per_attribute`` (``{attribute: bool}``).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or ``true_caption`` is not a non-empty string.
    """
    if not isinstance(true_caption, str) or not true_caption:
        raise InvalidArgumentError(f"true_caption: expected a non-empty caption, got {true_caption!r}")
    read = toolkit_read_caption(level, caption)
    right = {name: word is not None and word in true_caption for name, word in read.items()}
    if isinstance(caption, str):
        letters = sum(a == b for a, b in zip(caption, true_caption)) / len(true_caption)
    else:
        letters = 0.0
    return {"strict": letters == 1, "features": sum(right.values()), "letters": letters, "per_attribute": right}


def toolkit_image_scores(level: int, caption: str, predicted: Any) -> dict[str, Any]:
    """One image's classifier verdicts scored against a caption by the authors' toolkit's rules.

    ``check_cross_sample_correct(..., reconimage=image)`` of ``multimodal_compare/eval/eval_cdsprites.py``:
    the caption's word for attribute ``a`` is ``get_attribute``, the first word of the toolkit's list for ``a``
    (:data:`_TOOLKIT_SEARCH`) found anywhere in the caption (a substring, case ignored); ``a`` is right when
    that word is the classifier's class for ``a`` (a word found nowhere is wrong). Strict: every attribute
    right.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    caption : str
        The caption the image should show (text -> image: the true caption; joint: the caption the toolkit
        rebuilds from the generated one, :func:`toolkit_joint_scores`).
    predicted : array-like of int, shape (L,)
        The classifiers' classes of the image, in :func:`~repscope.data.multimodal.attributes.level_attributes` order.

    Returns
    -------
    dict
        ``strict`` (bool), ``features`` (int, 0 to ``level``), ``per_attribute`` (``{attribute: bool}``).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or ``predicted`` is not one valid row of classes.
    """
    level = check_level(level)
    row = check_table(level, np.asarray(predicted).reshape(1, -1), name="predicted")[0]
    text = caption if isinstance(caption, str) else ""
    right = {}
    for column, name in enumerate(level_attributes(level)):
        word = _first_contained(_TOOLKIT_SEARCH[name], text)
        right[name] = word is not None and word == _toolkit_word(name, row[column])
    return {"strict": all(right.values()), "features": sum(right.values()), "per_attribute": right}


def toolkit_joint_scores(level: int, caption: Any, predicted: Any) -> dict[str, Any]:
    """One jointly generated caption/image pair scored by the authors' toolkit's rules.

    ``calculate_joint_coherency`` of ``multimodal_compare/eval/eval_cdsprites.py``: ``try_retrieve_atts`` reads
    every attribute from the caption (:func:`toolkit_read_caption`) and joins the words, ``Unknown`` for one
    not read, in the toolkit's order (size, colour, shape, position, background); that text is scored against
    the image as in text -> image (:func:`toolkit_image_scores`). A caption need not be well formed: extra
    words, extra text inside a token and missing trailing tokens only matter where they change what is read.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    caption : str
        The generated caption, exactly as generated.
    predicted : array-like of int, shape (L,)
        The classifiers' classes of the generated image.

    Returns
    -------
    dict
        ``strict`` (bool), ``features`` (int, 0 to ``level``), ``per_attribute`` (``{attribute: bool}``).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or ``predicted`` is not one valid row of classes.
    """
    read = toolkit_read_caption(level, caption)
    order = [name for name in ("size", "colour", "shape", "position", "background") if name in read]
    return toolkit_image_scores(level, " ".join(read[name] or "Unknown" for name in order), predicted)


def toolkit_coherency(
    level: int, direction: str, *, truth: Any = None, captions: Any = None, predicted: Any = None
) -> dict[str, Any]:
    """Coherency of one direction scored by the authors' toolkit's rules, averaged as the toolkit averages.

    ``calculate_cross_coherency`` / ``calculate_joint_coherency`` of ``multimodal_compare/eval/eval_cdsprites.py``
    per sample (:func:`toolkit_image_scores`, :func:`toolkit_caption_scores`, :func:`toolkit_joint_scores`),
    then ``get_mean_stats``: ``strict = 100 / N * #right``, ``letters = 100 / N * sum letters_n``. The
    toolkit prints Features as the mean share of right attributes in %; here it is the mean number of
    right attributes (0 to ``L``), the unit of our Features (toolkit % = 100 * features / L).

    What is reproduced is the scoring of given outputs. Not reproduced, since they are how outputs are
    made, not scored: the toolkit's own classifier weights (images are judged by ours), its sample counts
    (250 test samples for the cross directions, 64 joint samples) and its joint sampler, which draws the
    image's and the caption's latents from the prior separately (``models/trainer.py``,
    ``save_joint_samples``: each modality's ``generate_samples``); our joint pairs share one latent.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    direction : {"text_to_image", "image_to_text", "joint"}
        What is scored: images against the true captions, captions against the true captions, or
        generated captions against the images generated with them.
    truth : sequence of str, optional
        The true captions (the cross directions).
    captions : sequence of str, optional
        The generated captions, exactly as generated (``image_to_text``, ``joint``).
    predicted : array-like of int, shape (N, L), optional
        The classifiers' classes of the generated images (``text_to_image``, ``joint``).

    Returns
    -------
    dict
        ``strict`` (%), ``features`` (0 to ``L``), ``letters`` (%, ``image_to_text`` only),
        ``per_attribute`` (``{attribute: %}``), ``level``, ``samples``, ``rules`` (``"toolkit"``).

    Raises
    ------
    InvalidArgumentError
        When the direction is unknown, an input it needs is missing or empty, or the inputs differ in length.
    """
    level = check_level(level)
    needs = {"text_to_image": ("truth", "predicted"), "image_to_text": ("truth", "captions"), "joint": ("captions",)}
    if direction not in needs:
        raise InvalidArgumentError(f"direction: must be one of {', '.join(needs)}, got {direction!r}")
    given = {"truth": truth, "captions": captions, "predicted": predicted}
    for name in needs[direction] + (("predicted",) if direction == "joint" else ()):
        value = given[name]
        if value is None or isinstance(value, (str, bytes)) or len(value) == 0:
            raise InvalidArgumentError(f"{name}: {direction} needs a non-empty sequence, got {value!r:.60}")
    lengths = {name: len(given[name]) for name in given if given[name] is not None}
    if len(set(lengths.values())) > 1:
        raise InvalidArgumentError(f"{' and '.join(lengths)}: need one row per sample, got {lengths}")
    if direction == "text_to_image":
        rows = [toolkit_image_scores(level, t, p) for t, p in zip(truth, np.asarray(predicted))]
    elif direction == "image_to_text":
        rows = [toolkit_caption_scores(level, t, c) for t, c in zip(truth, captions)]
    else:
        rows = [toolkit_joint_scores(level, c, p) for c, p in zip(captions, np.asarray(predicted))]
    result: dict[str, Any] = {
        "strict": 100.0 * float(np.mean([row["strict"] for row in rows])),
        "features": float(np.mean([row["features"] for row in rows])),
        "per_attribute": {
            name: 100.0 * float(np.mean([row["per_attribute"][name] for row in rows]))
            for name in level_attributes(level)
        },
        "level": level,
        "samples": len(rows),
        "rules": "toolkit",
    }
    if direction == "image_to_text":
        result["letters"] = 100.0 * float(np.mean([row["letters"] for row in rows]))
    return result


__all__ = [
    "TOOLKIT_SOURCE",
    "toolkit_caption_scores",
    "toolkit_coherency",
    "toolkit_image_scores",
    "toolkit_joint_scores",
    "toolkit_read_caption",
]

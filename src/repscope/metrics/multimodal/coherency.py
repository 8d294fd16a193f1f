"""Cross- and joint-coherency of image/caption pairs of CdSprites+: Strict, Features and Letters.

Sejnova et al., CdSprites+ benchmark, Sec. A.2.3 ("Evaluation metrics"), score multimodal VAEs on
CdSprites+ by whether what one modality generates agrees with the other. Images are judged by
pre-trained attribute classifiers (their outputs are the *predicted* attribute tables taken here);
captions are judged word by word and letter by letter against the caption vocabulary of
:mod:`repscope.data.multimodal.attributes`. Three scores, each as the paper reports them:

- **Strict** (%): the share of samples with zero error. An image is right when the classifiers find
  every attribute of the level; a caption is right when it equals the true caption character for
  character; a joint pair is right when the caption is a well-formed caption of the level and the
  image shows exactly the attributes it names.
- **Features** (count out of ``L``): the mean number of correct attributes per sample, reported as
  e.g. ``2.4/5`` (:func:`format_features`). For captions each attribute is read from its own word
  slots (:func:`~repscope.data.multimodal.attributes.read_caption_slots`), so a misspelt word spoils only
  its attribute, while a missing word shifts every later word into the wrong slot; the connectives
  ``at`` and ``on`` are template words, never scored.
- **Letters** (%, captions only): the mean share of the true caption's characters reproduced at the
  same position.

Three settings:

- :func:`text_to_image`: captions of the test set in, images out, judged against the test set's
  attribute table.
- :func:`image_to_text`: images in, captions out, judged against the captions composed from the
  attribute table.
- :func:`joint`: caption and image decoded from the same latent sample, judged against each other
  (there is no ground truth).

Every function returns a dict with ``strict``, ``features``, ``per_attribute`` (``{attribute: % of
samples with that attribute right}``), ``level`` and ``samples``; :func:`image_to_text` adds
``letters``.

Captions that are not ``str`` (``None``, ``bytes``, numbers, ...) are not decoded or converted: they
count as unreadable captions, wrong in every score (Strict 0, no feature, Letters 0). Captions are
compared as given, with no normalisation: a leading or trailing space makes a caption Strict-wrong
(word slots are read after splitting on whitespace, so Features are not affected).

References
----------
G. Sejnova, M. Vavrecka, K. Stepanova. Benchmarking multimodal variational autoencoders: CdSprites+
dataset and toolkit (Sejnova et al., CdSprites+ benchmark), Sec. 3.3 and Appendix A.2.3.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from repscope.data.multimodal.attributes import (
    check_level,
    check_table,
    compose_captions,
    level_attributes,
    parse_caption,
    read_caption_slots,
)
from repscope.errors import InvalidArgumentError

__all__ = ["coherency_report", "format_features", "image_to_text", "joint", "text_to_image"]


def text_to_image(level: int, truth: Any, predicted: Any, recognised: Any = None) -> dict[str, Any]:
    """Coherency of images generated from captions, judged by attribute classifiers.

    With ``N`` samples, ``L`` attributes, true classes ``t[n, a]`` and classifier outputs ``p[n, a]``
    on the generated images (Sejnova et al., CdSprites+ benchmark, Sec. A.2.3)::

        strict           = 100 / N * #{n : p[n, a] == t[n, a] for every a}
        features         = 1 / N * sum_n #{a : p[n, a] == t[n, a]}          (in [0, L])
        per_attribute[a] = 100 / N * #{n : p[n, a] == t[n, a]}

    With ``recognised`` (the judge's reject option), an image the judge does not recognise as a shape
    counts wrong on every attribute: ``p[n, a] == t[n, a]`` reads ``r[n] and p[n, a] == t[n, a]`` (the
    classifiers' arg-max on a faint blob is no attribute a person would read off it).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5; ``L = level`` attributes (shape, size, colour, position, background).
    truth : array-like of int, shape (N, L)
        Attribute table of the captions given to the model (see
        :func:`~repscope.data.multimodal.attributes.check_table`).
    predicted : array-like of int, shape (N, L)
        Attribute table the classifiers read from the generated images, row by row.
    recognised : array-like of bool, shape (N,), optional
        Whether the judge recognised each image as a shape at all; None counts every image recognised.

    Returns
    -------
    dict
        ``strict`` (%, 0-100), ``features`` (mean correct attributes per image, 0 to ``L``),
        ``per_attribute`` (``{name: %}``), ``level`` (``L``, the denominator of ``features``),
        ``samples`` (``N``); with ``recognised``, ``rejected`` (% of images not recognised).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5, a table is empty, not an integer ``(N, L)`` array of valid classes, or
        the two tables differ in length.

    References
    ----------
    Sejnova et al., Benchmarking multimodal variational autoencoders: CdSprites+ dataset and toolkit,
    Appendix A.2.3.
    """
    level = check_level(level)
    truth = _table(level, truth, "truth")
    predicted = _table(level, predicted, "predicted")
    _same_length(truth, "truth", predicted, "predicted")
    mask = _recognised(recognised, len(predicted))
    result = _scores(level, (predicted == truth) & mask[:, None])
    return _with_rejected(result, recognised, mask)


def image_to_text(level: int, truth: Any, captions: Any) -> dict[str, Any]:
    """Coherency of captions generated from images, judged against the true captions.

    With ``N`` samples, the true caption ``c_n`` composed from row ``n`` of ``truth`` and the generated
    caption ``g_n`` (Sejnova et al., CdSprites+ benchmark, Sec. A.2.3)::

        strict   = 100 / N * #{n : g_n == c_n}                     (exact string equality)
        features = 1 / N * sum_n #{a : slot_a(g_n) == t[n, a]}      (in [0, L])
        letters  = 100 / N * sum_n #{i < min(|g_n|, |c_n|) : g_n[i] == c_n[i]} / |c_n|

    ``slot_a(g)`` is the class named by the words of ``g`` at attribute ``a``'s word slots of the
    level's template (word ``k`` fills slot ``k``; a missing word leaves its slot empty, extra words
    are ignored; see :func:`~repscope.data.multimodal.attributes.read_caption_slots`); words that name
    no class make that attribute wrong. The connectives ``at``/``on`` are not scored. Letters compares
    characters position by position over the true caption's length: a caption shorter than the truth
    loses the missing positions, characters beyond the truth's length are ignored, and a missing or
    extra character shifts every later one. ``per_attribute[a]`` is the % of captions with
    ``slot_a(g_n) == t[n, a]``.

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    truth : array-like of int, shape (N, L)
        Attribute table of the images given to the model.
    captions : sequence of str, length N
        Generated captions (any non-``str`` element counts as an unreadable caption, wrong in every
        score).

    Returns
    -------
    dict
        ``strict`` (%, 0-100), ``features`` (mean correct attributes per caption, 0 to ``L``),
        ``letters`` (%, 0-100), ``per_attribute`` (``{name: %}``), ``level``, ``samples``.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5, ``truth`` is empty or not a valid attribute table, ``captions`` is a
        single string, not a 1-D sequence or empty, or the two differ in length.

    References
    ----------
    Sejnova et al., Benchmarking multimodal variational autoencoders: CdSprites+ dataset and toolkit,
    Appendix A.2.3.
    """
    level = check_level(level)
    truth = _table(level, truth, "truth")
    captions = _captions(captions, "captions")
    _same_length(truth, "truth", captions, "captions")
    true_captions = compose_captions(level, truth)

    read = np.stack([_read_slots(level, caption) for caption in captions])
    result = _scores(level, read == truth)
    result["strict"] = 100.0 * float(
        np.mean([isinstance(caption, str) and caption == true for caption, true in zip(captions, true_captions)])
    )
    result["letters"] = 100.0 * float(
        np.mean([_letter_share(caption, true) for caption, true in zip(captions, true_captions)])
    )
    return result


def joint(level: int, captions: Any, predicted: Any, recognised: Any = None) -> dict[str, Any]:
    """Joint coherency of caption/image pairs decoded from the same latent samples.

    With ``N`` pairs, generated captions ``g_n`` and classifier outputs ``p[n, a]`` on the generated
    images (Sejnova et al., CdSprites+ benchmark, Sec. A.2.3)::

        strict           = 100 / N * #{n : parse(g_n) is not None and parse(g_n)[a] == p[n, a] for every a}
        features         = 1 / N * sum_n #{a : slot_a(g_n) == p[n, a]}          (in [0, L])
        per_attribute[a] = 100 / N * #{n : slot_a(g_n) == p[n, a]}

    ``parse`` is :func:`~repscope.data.multimodal.attributes.parse_caption` (None unless ``g_n`` is
    exactly a caption the level can produce), ``slot_a`` reads attribute ``a`` from its word slots as
    in :func:`image_to_text` (a class that cannot be read never matches). A pair needs no ground
    truth: it is right whenever caption and image agree on a well-formed description. With
    ``recognised``, a pair whose image the judge does not recognise as a shape agrees on nothing (as
    in :func:`text_to_image`).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5.
    captions : sequence of str, length N
        Generated captions (non-``str`` elements count as unreadable).
    predicted : array-like of int, shape (N, L)
        Attribute table the classifiers read from the generated images.
    recognised : array-like of bool, shape (N,), optional
        Whether the judge recognised each image as a shape at all; None counts every image recognised.

    Returns
    -------
    dict
        ``strict`` (%, 0-100), ``features`` (mean agreeing attributes per pair, 0 to ``L``),
        ``per_attribute`` (``{name: %}``), ``level``, ``samples``; with ``recognised``, ``rejected``
        (% of images not recognised).

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5, ``captions`` is a single string, not a 1-D sequence or empty,
        ``predicted`` is empty or not a valid attribute table, or the two differ in length.

    References
    ----------
    Sejnova et al., Benchmarking multimodal variational autoencoders: CdSprites+ dataset and toolkit,
    Appendix A.2.3.
    """
    level = check_level(level)
    captions = _captions(captions, "captions")
    predicted = _table(level, predicted, "predicted")
    _same_length(captions, "captions", predicted, "predicted")

    mask = _recognised(recognised, len(predicted))
    read = np.stack([_read_slots(level, caption) for caption in captions])
    result = _scores(level, (read == predicted) & mask[:, None])
    parsed_match = [
        bool(seen)
        and isinstance(caption, str)
        and (classes := parse_caption(level, caption)) is not None
        and bool(np.array_equal(classes, row))
        for caption, row, seen in zip(captions, predicted, mask)
    ]
    result["strict"] = 100.0 * float(np.mean(parsed_match))
    return _with_rejected(result, recognised, mask)


def coherency_report(
    level: int,
    *,
    truth: Any = None,
    image_predictions_from_text: Any = None,
    captions_from_images: Any = None,
    joint_captions: Any = None,
    joint_image_predictions: Any = None,
) -> dict[str, dict[str, Any]]:
    """Every coherency score the given outputs allow (Sejnova et al., CdSprites+ benchmark, Sec. A.2.3).

    - ``text_to_image``: :func:`text_to_image` of ``truth`` and ``image_predictions_from_text``
      (classifier outputs on images generated from the captions of ``truth``).
    - ``image_to_text``: :func:`image_to_text` of ``truth`` and ``captions_from_images`` (captions
      generated from the images of ``truth``).
    - ``joint``: :func:`joint` of ``joint_captions`` and ``joint_image_predictions`` (both decoded
      from the same latent samples; needs no ``truth``).

    Parameters
    ----------
    level : int
        CdSprites+ level 1-5; ``L = level``.
    truth : array-like of int, shape (N, L), optional
        Attribute table of the test samples the cross-coherencies start from.
    image_predictions_from_text : array-like of int, shape (N, L), optional
        Classifier outputs on the images generated from the captions of ``truth``.
    captions_from_images : sequence of str, length N, optional
        Captions generated from the images of ``truth``.
    joint_captions : sequence of str, length M, optional
        Captions decoded from ``M`` latent samples.
    joint_image_predictions : array-like of int, shape (M, L), optional
        Classifier outputs on the images decoded from the same latent samples.

    Returns
    -------
    dict
        ``{"text_to_image": ..., "image_to_text": ..., "joint": ...}`` holding only the settings
        whose inputs were given, each the dict of its function.

    Raises
    ------
    InvalidArgumentError
        When nothing can be computed, when ``truth`` is missing for a cross-coherency, when only
        one half of the joint pair is given, or when an input is invalid (see the three functions).

    References
    ----------
    Sejnova et al., Benchmarking multimodal variational autoencoders: CdSprites+ dataset and toolkit,
    Appendix A.2.3.
    """
    level = check_level(level)
    cross_given = image_predictions_from_text is not None or captions_from_images is not None
    if truth is None and cross_given:
        needing = [
            name
            for name, value in (
                ("image_predictions_from_text", image_predictions_from_text),
                ("captions_from_images", captions_from_images),
            )
            if value is not None
        ]
        raise InvalidArgumentError(f"truth: needed to score {' and '.join(needing)}")
    if (joint_captions is None) != (joint_image_predictions is None):
        missing = "joint_captions" if joint_captions is None else "joint_image_predictions"
        present = "joint_image_predictions" if joint_captions is None else "joint_captions"
        raise InvalidArgumentError(f"{missing}: needed together with {present} to score joint coherency")
    if not cross_given and joint_captions is None:
        raise InvalidArgumentError(
            "nothing to compute: give truth with image_predictions_from_text and/or captions_from_images, "
            "or joint_captions with joint_image_predictions"
        )

    report: dict[str, dict[str, Any]] = {}
    if image_predictions_from_text is not None:
        report["text_to_image"] = text_to_image(level, truth, image_predictions_from_text)
    if captions_from_images is not None:
        report["image_to_text"] = image_to_text(level, truth, captions_from_images)
    if joint_captions is not None:
        report["joint"] = joint(level, joint_captions, joint_image_predictions)
    return report


def format_features(value: float, level: int, digits: int = 1) -> str:
    """A Features score as the paper prints it, ``value/level`` with ``digits`` decimals, e.g. ``2.4/5``.

    Parameters
    ----------
    value : float
        A Features score, the mean number of correct attributes in ``[0, level]``.
    level : int
        CdSprites+ level 1-5, the number of attributes.
    digits : int, default=1
        Decimals printed.

    Returns
    -------
    str
        E.g. ``format_features(2.43, 5) == "2.4/5"``.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or ``value`` is not a finite number in ``[0, level]``.
    """
    level = check_level(level)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"value: expected a number, got {value!r}")
    if not math.isfinite(float(value)) or not 0 <= float(value) <= level:
        raise InvalidArgumentError(f"value: must be a finite number in [0, {level}], got {value!r}")
    return f"{float(value):.{int(digits)}f}/{level}"


def _table(level: int, table: Any, name: str) -> np.ndarray:
    if table is None:
        raise InvalidArgumentError(f"{name}: expected an (N, {level}) attribute table, got None")
    array = check_table(level, table, name=name)
    if len(array) == 0:
        raise InvalidArgumentError(f"{name}: is empty; need at least one sample")
    return array


def _recognised(recognised: Any, n: int) -> np.ndarray:
    """``recognised`` as a bool ``(n,)`` mask (all True for None)."""
    if recognised is None:
        return np.ones(n, dtype=bool)
    mask = np.asarray(recognised)
    if mask.shape != (n,) or mask.dtype != np.bool_:
        raise InvalidArgumentError(
            f"recognised: expected a boolean array of one value per sample ({n},), got {mask.dtype} {mask.shape}"
        )
    return mask


def _with_rejected(result: dict[str, Any], recognised: Any, mask: np.ndarray) -> dict[str, Any]:
    if recognised is not None:
        result["rejected"] = 100.0 * float(np.mean(~mask))
    return result


def _captions(captions: Any, name: str) -> list[Any]:
    # A single string would otherwise be scored character by character as N one-letter captions.
    if isinstance(captions, (str, bytes)) or not isinstance(captions, Iterable):
        raise InvalidArgumentError(f"{name}: expected a sequence of caption strings, got {type(captions).__name__}")
    if isinstance(captions, np.ndarray) and captions.ndim != 1:
        raise InvalidArgumentError(f"{name}: expected a 1-D sequence of captions, got shape {captions.shape}")
    captions = list(captions)
    if not captions:
        raise InvalidArgumentError(f"{name}: is empty; need at least one caption")
    return captions


def _same_length(first: Any, first_name: str, second: Any, second_name: str) -> None:
    if len(first) != len(second):
        raise InvalidArgumentError(
            f"{first_name} and {second_name}: need one row per sample, got {len(first)} and {len(second)}"
        )


def _read_slots(level: int, caption: Any) -> np.ndarray:
    return read_caption_slots(level, caption if isinstance(caption, str) else "")


def _letter_share(caption: Any, true: str) -> float:
    if not isinstance(caption, str):
        return 0.0
    return sum(a == b for a, b in zip(caption, true)) / len(true)


def _scores(level: int, correct: np.ndarray) -> dict[str, Any]:
    """Strict, Features and per-attribute scores of a boolean ``(N, L)`` table of correct attributes."""
    return {
        "strict": 100.0 * float(np.mean(np.all(correct, axis=1))),
        "features": float(np.mean(np.sum(correct, axis=1))),
        "per_attribute": {
            name: 100.0 * float(np.mean(correct[:, k])) for k, name in enumerate(level_attributes(level))
        },
        "level": level,
        "samples": int(correct.shape[0]),
    }

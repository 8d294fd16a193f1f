"""Caption codec of CdSprites+: characters one-hot over ``' abcdefghijklmnopqrstuvwxyz'``.

A caption of length ``L <= max_length`` (45, the longest level-5 caption) becomes ``(max_length, 27)``
one-hot rows (space is character 0) followed by all-zero padding rows, with a boolean mask marking
the real characters. Decoding takes the arg-max of each row inside the mask (or, without a mask,
of every non-zero row). Caption noise (misspellings, swapped or dropped letters) is seeded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from repscope.errors import InvalidArgumentError

ALPHABET = " abcdefghijklmnopqrstuvwxyz"
VOCABULARY_SIZE = len(ALPHABET)  # 27
MAX_CAPTION_LENGTH = 45
_CODE = {character: k for k, character in enumerate(ALPHABET)}


def encode_captions(captions: Sequence[str], max_length: int = MAX_CAPTION_LENGTH) -> tuple[np.ndarray, np.ndarray]:
    """One-hot ``(N, max_length, 27)`` float32 and mask ``(N, max_length)`` bool of ``captions``.

    Parameters
    ----------
    captions : sequence of str
        ``N`` captions of lower-case letters and spaces.
    max_length : int, default=45
        Characters per encoded caption (:data:`MAX_CAPTION_LENGTH`); shorter captions are padded with
        all-zero rows.

    Returns
    -------
    onehot : numpy.ndarray
        float32 ``(N, max_length, 27)``; row ``i`` of caption ``n`` is one-hot on
        ``ALPHABET.index(caption[i])`` (space is 0), all zero past the caption's end.
    mask : numpy.ndarray
        bool ``(N, max_length)``, true on the caption's characters.

    Raises
    ------
    InvalidArgumentError
        When ``captions`` is a single string, a caption is longer than ``max_length`` or holds a
        character outside the alphabet.
    """
    if isinstance(captions, str):
        raise InvalidArgumentError("captions: expected a sequence of strings, got one string")
    onehot = np.zeros((len(captions), max_length, VOCABULARY_SIZE), dtype=np.float32)
    mask = np.zeros((len(captions), max_length), dtype=bool)
    for row, caption in enumerate(captions):
        if len(caption) > max_length:
            raise InvalidArgumentError(f"captions[{row}]: {len(caption)} characters, more than max_length {max_length}")
        try:
            codes = [_CODE[character] for character in caption]
        except KeyError as exc:
            raise InvalidArgumentError(
                f"captions[{row}] {caption!r}: character {exc.args[0]!r} is not in the alphabet "
                "(lower-case a-z and space)"
            ) from None
        onehot[row, np.arange(len(codes)), codes] = 1.0
        mask[row, : len(codes)] = True
    return onehot, mask


def decode_captions(onehot: np.ndarray, mask: np.ndarray | None = None) -> list[str]:
    """Strings of one-hot (or logits / probabilities) ``(N, L, 27)``.

    Each character is the arg-max of its row; rows outside ``mask`` are dropped; without a mask,
    all-zero rows (padding) are.

    Parameters
    ----------
    onehot : array-like of shape (N, L, 27)
        One-hot codes, logits or probabilities over :data:`ALPHABET`, any real dtype.
    mask : array-like of bool, shape (N, L), optional
        True on the rows to decode.

    Returns
    -------
    list of str
        ``N`` captions.

    Raises
    ------
    InvalidArgumentError
        When ``onehot`` or ``mask`` has the wrong shape.
    """
    onehot = np.asarray(onehot)
    if onehot.ndim != 3 or onehot.shape[-1] != VOCABULARY_SIZE:
        raise InvalidArgumentError(f"onehot: expected shape (N, L, {VOCABULARY_SIZE}), got {onehot.shape}")
    keep = np.any(onehot != 0, axis=-1) if mask is None else np.asarray(mask, dtype=bool)
    if keep.shape != onehot.shape[:2]:
        raise InvalidArgumentError(f"mask: expected shape {onehot.shape[:2]}, got {keep.shape}")
    indices = onehot.argmax(-1)
    return ["".join(ALPHABET[k] for k in row[used]) for row, used in zip(indices, keep)]


NOISE_KINDS = ("swap", "drop", "substitute", "repeat")


def corrupt_caption(
    caption: str, rng: np.random.Generator | int, edits: int = 1, kinds: Sequence[str] = NOISE_KINDS
) -> str:
    """``caption`` with ``edits`` random letter edits, each one of ``kinds``.

    An edit swaps two different neighbouring letters (``sqaure``), drops a letter (``sqare``),
    substitutes a letter (``sqiare``) or repeats one (``sqquare``). Spaces are never edited, so the
    words stay in place. A swap with no pair of different neighbouring letters is skipped.

    Parameters
    ----------
    caption : str
        The caption to corrupt.
    rng : numpy.random.Generator or int
        Generator or seed; the same seed gives the same edits.
    edits : int, default=1
        Number of edits (>= 0).
    kinds : sequence of str, default=NOISE_KINDS
        Edit kinds drawn from, uniformly: ``"swap"``, ``"drop"``, ``"substitute"``, ``"repeat"``.

    Returns
    -------
    str
        The corrupted caption.

    Raises
    ------
    InvalidArgumentError
        When ``kinds`` is empty or holds an unknown kind, or ``edits`` is negative.
    """
    unknown = [kind for kind in kinds if kind not in NOISE_KINDS]
    if unknown or not kinds:
        raise InvalidArgumentError(f"kinds: choose from {', '.join(NOISE_KINDS)}; got {list(kinds)}")
    if edits < 0:
        raise InvalidArgumentError(f"edits: must be >= 0, got {edits}")
    rng = np.random.default_rng(rng)
    text = list(caption)
    for _ in range(edits):
        letters = [k for k, character in enumerate(text) if character != " "]
        if not letters:
            break
        kind = kinds[int(rng.integers(len(kinds)))]
        position = letters[int(rng.integers(len(letters)))]
        if kind == "swap":
            pairs = [k for k in letters if k + 1 < len(text) and text[k + 1] != " " and text[k] != text[k + 1]]
            if not pairs:
                continue
            position = pairs[int(rng.integers(len(pairs)))]
            text[position], text[position + 1] = text[position + 1], text[position]
        elif kind == "drop":
            del text[position]
        elif kind == "substitute":
            choices = [c for c in ALPHABET[1:] if c != text[position]]
            text[position] = choices[int(rng.integers(len(choices)))]
        else:
            text.insert(position, text[position])
    return "".join(text)

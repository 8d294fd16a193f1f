"""Build the Morpho-MNIST datasets from any MNIST-format source.

The paper's sets (Castro et al., "Morpho-MNIST", sections 3 and 4.2, Table 2):

=======  ==========================================================================
plain    the source digits, rendered as every digit of every set is (below)
thin     every digit thinned                    thic  every digit thickened
swel     every digit swollen                    frac  every digit fractured
global   plain, thinned and thickened digits, randomly interleaved in equal shares
local    plain, swollen and fractured digits, randomly interleaved in equal shares
=======  ==========================================================================

**Render rule** (``plain_render="rendered"``, the published recipe): every digit written, plain or
perturbed, is ``to_uint8(downscale(hires))`` of a hi-res image (:func:`render_hires`); for a plain
digit the hi-res image is its binarised upscale, ``downscale(binarise(upscale(digit)))``, exactly the
path a perturbed digit takes after its perturbation. So no model can tell plain from perturbed
digits by rendering artefacts. ``plain_render="source-bytes"`` keeps the source's bytes for plain
digits instead (the choice is recorded in ``dataset.json``). A digit without foreground keeps its
bytes either way.

**Copies** (``copies`` for train, ``test_copies`` for t10k, default 1): each digit of the split is
drawn K times, copy-major (all digits' copy 0, then all copies 1, ...); every copy gets its own
perturbation (see :func:`digit_rng`) and its own place in the mixed sets' assignment. Plain copies
are identical.

Each set is a folder in MNIST format: ``[train|t10k]-images-idx3-ubyte.gz``, ``-labels-idx1-``,
``[train|t10k]-morpho.csv`` (morphometrics measured on the images written, after perturbation),
``[train|t10k]-ids.csv`` (``index, source_index, copy``: the digit's index in the split before
copies, and which copy it is), for the mixed sets ``[train|t10k]-pert-idx1-ubyte.gz`` (0 plain,
1 thin, 2 thick, 3 swollen, 4 fractured), and for every perturbed set
``[train|t10k]-pert-params.csv`` (each digit's perturbation parameters as JSON: swelling centre and
radius, fracture end points, structuring-element radius). The morphometrics use the measurement
mode ``compat`` (``"none"`` or ``"published"``: :func:`repscope.data.morpho.measure`).
``dataset.json`` at the top records source, seed, parameters, render rule, copies, counts and the
sha256 of every file; it is written last, so its presence means the build is complete.

Determinism: copy ``c`` of digit ``i`` of split ``s`` gets perturbation ``p`` with the generator
``default_rng([seed, p, s, i])`` (c = 0) or ``default_rng([seed, p, s, i, c])`` (c >= 1) whatever
the chunking, number of workers or interruptions, so a resumed build gives the same bytes as an
uninterrupted one. Work is done in fixed chunks whose
results are cached under ``.build/`` until the build completes.

A source with a single split is split by this rule: within each class (all digits if unlabelled),
the digits are ordered by ``default_rng(seed).permutation``, the first ``round(n_class *
test_fraction)`` go to ``t10k`` and the rest to ``train``; each split keeps the source order.

``train_size`` / ``test_size`` keep a seeded sample of that many digits of the split, spread over
its classes in proportion (sources such as ``mnist-sample`` are sorted by class, so the first N
digits would be all zeros), in source order: see ``limit_indices``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from repscope import __version__
from repscope.config import Section
from repscope.data import idx
from repscope.data.morpho import resample
from repscope.data.morpho.morphometrics import COLUMNS, measure_batch
from repscope.data.morpho.perturb import (
    PERTURBATION_ALIASES,
    Perturbation,
    canonical_perturbation,
    perturbation_from_name,
    perturbation_set_name,
)
from repscope.data.morpho.pipeline import PipelineConfig, analyse_batch
from repscope.data.morpho.published import COMPAT_MODES, check_published_config, measure_published_batch
from repscope.data.sources import load_splits
from repscope.errors import InvalidArgumentError, OutputExistsError, RepscopeError
from repscope.fileio import check_free_space, make_output_dir, sha256_file, write_bytes_atomic, write_json_atomic
from repscope.pools import ordered_map, pool_context
from repscope.resume_check import Difference, describe, differences, refuse_changes
from repscope.validation import Seed, check_memory, check_positive_int

FORMAT_VERSION = (
    3  # 2: plain digits rendered, ids.csv, copies, compat; 3: train_size/test_size (were max_train/max_test)
)
PLAIN_RENDERS: tuple[str, ...] = ("rendered", "source-bytes")
RENDER_RULES = {
    "rendered": "every digit, plain or perturbed, written as to_uint8(downscale(hires)); plain: "
    "downscale(binarise(upscale(digit))) (the published recipe)",
    "source-bytes": "plain digits keep the source's bytes; perturbed digits to_uint8(downscale(hires))",
}
SPLITS: tuple[str, ...] = ("train", "t10k")
SPLIT_CODES = {"train": 0, "t10k": 1}
PERTURBATION_CODES = {"plain": 0, "thin": 1, "thick": 2, "swel": 3, "frac": 4}
KINDS: tuple[str, ...] = ("thin", "thick", "swel", "frac")
SETS: dict[str, tuple[str, ...]] = {
    "plain": ("plain",),
    "thin": ("thin",),
    "thic": ("thick",),
    "swel": ("swel",),
    "frac": ("frac",),
    "global": ("plain", "thin", "thick"),
    "local": ("plain", "swel", "frac"),
}
STATE_DIR = ".build"


def canonical_set(name: Any) -> Any:
    """The published name of a set: a set name as it is, a perturbation name as its set's
    ("thick" -> "thic", "thinning" -> "thin"); anything else unchanged, for validate to refuse.

    Parameters
    ----------
    name : str or any
        A set or perturbation name, in any case, surrounding whitespace ignored.

    Returns
    -------
    str or any
        A key of :data:`SETS` (lower case), or ``name`` itself when it is not a known name or not a
        string.
    """
    if not isinstance(name, str):
        return name
    key = name.strip().lower()
    if key in SETS:
        return key
    if key in PERTURBATION_ALIASES:
        return perturbation_set_name(key)
    return name


CSV_FLOAT_FORMAT = "%.8g"


class BuildConfig(Section):
    """What to build. Perturbation parameters default to the paper's (see ``perturb``)."""

    source: str = "mnist-sample"
    data_dir: str | None = None
    seed: Seed = 0
    sets: tuple[str, ...] = tuple(SETS)
    test_fraction: float = 0.2
    train_size: int | None = None
    test_size: int | None = None
    chunk_size: int = 500
    copies: int = 1
    test_copies: int = 1
    plain_render: Literal["rendered", "source-bytes"] = "rendered"
    compat: Literal["none", "published"] = "none"
    perturbations: dict[str, dict[str, Any]] = Field(default_factory=dict)
    pipeline: dict[str, Any] = Field(default_factory=dict)

    @field_validator("sets", mode="before")
    @classmethod
    def _canonical_sets(cls, sets: Any) -> Any:
        # one vocabulary: sets may be named by their perturbation ("thick" is the set "thic");
        # what is recorded is the canonical form
        sets = (sets,) if isinstance(sets, str) else sets
        return tuple(dict.fromkeys(canonical_set(name) for name in sets)) if isinstance(sets, (list, tuple)) else sets

    @field_validator("perturbations", mode="after")
    @classmethod
    def _canonical_perturbations(cls, perturbations: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        # perturbations may be named by their set ("thic" is "thick")
        renamed: dict[str, dict[str, Any]] = {}
        for key, params in perturbations.items():
            name = key
            with contextlib.suppress(InvalidArgumentError):
                name = canonical_perturbation(key)
            if name in renamed:
                raise ValueError(f"{key!r} names the perturbation {name!r} given already")
            renamed[name] = params
        return renamed

    def check(self) -> None:
        """The checks that need more than types (known sets and perturbations, ranges)."""
        unknown = [str(name) for name in self.sets if name not in SETS]
        if unknown or not self.sets:
            raise InvalidArgumentError(
                f"sets: unknown set(s) {', '.join(unknown) or '(none given)'}; "
                f"choose from {', '.join(SETS)} (or a perturbation name: thick for thic)"
            )
        if not 0.0 < self.test_fraction < 1.0:
            raise InvalidArgumentError(f"test_fraction: must lie in (0, 1), got {self.test_fraction}")
        check_positive_int(self.train_size, "train_size", allow_none=True)
        check_positive_int(self.test_size, "test_size", allow_none=True)
        check_positive_int(self.chunk_size, "chunk_size")
        check_positive_int(self.copies, "copies")
        check_positive_int(self.test_copies, "test_copies")
        unknown_kinds = [str(k) for k in self.perturbations if k not in KINDS]
        if unknown_kinds:
            raise InvalidArgumentError(
                f"perturbations: unknown perturbation(s) {', '.join(unknown_kinds)}; "
                f"choose from {', '.join(KINDS)} (or a set name: thic for thick)"
            )
        if self.compat == "published":
            check_published_config(self.pipeline_config())
        self.make_perturbations()

    def pipeline_config(self) -> PipelineConfig:
        """The processing pipeline's parameters, from the ``pipeline`` mapping (paper defaults for the rest).

        Returns
        -------
        PipelineConfig
            ``PipelineConfig(**pipeline)``.

        Raises
        ------
        InvalidArgumentError
            When ``pipeline`` names an unknown parameter or holds a value out of range.
        """
        try:
            return PipelineConfig(**self.pipeline)
        except TypeError as exc:
            raise InvalidArgumentError(f"pipeline: {exc}") from None

    def make_perturbations(self) -> dict[str, Perturbation]:
        """One perturbation of every kind, with the parameters of ``perturbations`` (paper defaults otherwise).

        Returns
        -------
        dict of str to Perturbation
            Keys ``"thin"``, ``"thick"``, ``"swel"`` and ``"frac"`` (:data:`KINDS`), whether or not the
            chosen sets need them.

        Raises
        ------
        InvalidArgumentError
            When a perturbation is given an unknown parameter or a value out of range.
        """
        return {kind: perturbation_from_name(kind, **self.perturbations.get(kind, {})) for kind in KINDS}

    def kinds_needed(self) -> tuple[str, ...]:
        """The perturbations the chosen ``sets`` use (``sets`` must be known names: see :meth:`check`).

        Returns
        -------
        tuple of str
            A subset of :data:`KINDS` (``"thin"``, ``"thick"``, ``"swel"``, ``"frac"``), in that order; empty
            when only ``plain`` is built.
        """
        needed = {kind for name in self.sets for kind in SETS[name]}
        return tuple(kind for kind in KINDS if kind in needed)

    def copies_of(self, split: str) -> int:
        """How many copies of each digit the split holds: ``copies`` (train) or ``test_copies`` (t10k).

        Parameters
        ----------
        split : {"train", "t10k"}
            The split.

        Returns
        -------
        int
            Copies of each of the split's digits (>= 1 once :meth:`check` passed).
        """
        return self.copies if split == "train" else self.test_copies

    def to_dict(self) -> dict[str, Any]:
        """The configuration as a JSON-ready dict (as recorded in ``dataset.json``).

        Returns
        -------
        dict of str to object
            One key per field: ``source``, ``data_dir``, ``seed``, ``sets`` (list of canonical set names),
            ``test_fraction``, ``train_size``, ``test_size``, ``chunk_size``, ``copies``, ``test_copies``,
            ``plain_render``, ``compat``, ``perturbations`` and ``pipeline``.
        """
        return self.model_dump(mode="json")


# --------------------------------------------------------------------------------------------
# splitting a single-split source


def split_single(labels: np.ndarray | None, n: int, test_fraction: float, seed: int) -> dict[str, np.ndarray]:
    """Indices of the train and t10k splits of a one-split source (rule in the module docstring).

    Parameters
    ----------
    labels : numpy.ndarray or None
        ``(n,)`` class labels, or None to treat all digits as one class.
    n : int
        Number of digits.
    test_fraction : float
        Share of each class that goes to t10k, in (0, 1).
    seed : int
        Seed of the order.

    Returns
    -------
    dict of str to numpy.ndarray
        ``{"train": indices, "t10k": indices}``, int64, each sorted (source order).
    """
    groups = [np.arange(n)] if labels is None else [np.flatnonzero(labels == c) for c in np.unique(labels)]
    rng = np.random.default_rng(seed)
    test: list[np.ndarray] = []
    for members in groups:
        order = members[rng.permutation(members.size)]
        test.append(order[: int(round(members.size * test_fraction))])
    is_test = np.zeros(n, dtype=bool)
    is_test[np.concatenate(test)] = True
    return {"train": np.flatnonzero(~is_test), "t10k": np.flatnonzero(is_test)}


def limit_indices(labels: np.ndarray, limit: int, seed: int, split: str) -> np.ndarray:
    """Indices of ``limit`` digits of a split, stratified by class, sorted (source order kept).

    Every digit gets a random key from ``default_rng([seed, 99, split_code])``; within each class
    the digits are ranked by key, and digits are taken in order of (rank / class size, key), so
    every class contributes in proportion to its size whatever the limit.

    Parameters
    ----------
    labels : numpy.ndarray
        ``(n,)`` class labels of the split's digits.
    limit : int
        Number of digits to keep; ``>= n`` keeps all.
    seed : int
        Build seed.
    split : {"train", "t10k"}
        The split (it selects the random stream).

    Returns
    -------
    numpy.ndarray
        int64 ``(min(limit, n),)`` sorted indices into the split.
    """
    n = len(labels)
    if limit >= n:
        return np.arange(n)
    rng = np.random.default_rng([seed, 99, SPLIT_CODES[split]])
    keys = rng.random(n)
    fraction = np.empty(n)
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        ranks = np.empty(members.size)
        ranks[np.argsort(keys[members], kind="stable")] = np.arange(members.size)
        fraction[members] = (ranks + 0.5) / members.size
    chosen = np.lexsort((keys, fraction))[:limit]
    return np.sort(chosen)


def load_build_source(config: BuildConfig) -> tuple[dict[str, tuple[np.ndarray, np.ndarray, str]], str]:
    """The digits of each split, ``{split: (images, labels, origin)}`` with limits applied, and
    how the splits were made.

    Parameters
    ----------
    config : BuildConfig
        Uses ``source``, ``data_dir``, ``seed``, ``test_fraction``, ``train_size`` and ``test_size``.

    Returns
    -------
    splits : dict of str to (numpy.ndarray, numpy.ndarray, str)
        For ``"train"`` and ``"t10k"``: images uint8 ``(N, 28, 28)`` (0-255), labels uint8 ``(N,)``
        (all 0 for an unlabelled source) and the file(s) read.
    rule : str
        How the splits were made, for ``dataset.json``.

    Raises
    ------
    InvalidArgumentError
        When a split is empty or its images are not 28x28 uint8 digits (and the errors of
        :func:`repscope.data.sources.load_splits`).
    SourceNotFoundError, DataFormatError
        When the source cannot be found or read.
    """
    splits = load_splits(config.source, data_dir=config.data_dir)
    out: dict[str, tuple[np.ndarray, np.ndarray, str]] = {}
    if set(splits) >= set(SPLITS):
        rule = "the source's own train and t10k splits"
        for name in SPLITS:
            part = splits[name]
            labels = part.labels if part.labels is not None else np.zeros(len(part.images), np.uint8)
            out[name] = (part.images, labels, part.origin)
    else:
        (part,) = splits.values()
        rule = (
            f"one-split source divided with seed {config.seed}: within each class, "
            f"round(n_class * {config.test_fraction}) digits in seeded random order to t10k, "
            "the rest to train, source order kept"
        )
        indices = split_single(part.labels, len(part.images), config.test_fraction, config.seed)
        labels = part.labels if part.labels is not None else np.zeros(len(part.images), np.uint8)
        for name in SPLITS:
            out[name] = (part.images[indices[name]], labels[indices[name]], part.origin)
    for name, limit in (("train", config.train_size), ("t10k", config.test_size)):
        if limit is not None:
            images, labels, origin = out[name]
            keep = limit_indices(labels, limit, config.seed, name)
            out[name] = (images[keep], labels[keep], origin)
    for name, (images, _, origin) in out.items():
        if images.ndim != 3 or images.shape[1:] != (28, 28) or images.dtype != np.uint8:
            raise InvalidArgumentError(
                f"source {config.source!r} ({origin}): split {name} holds {images.dtype} images of "
                f"shape {images.shape[1:]}; Morpho-MNIST needs 28x28 uint8 digits"
            )
        if len(images) == 0:
            raise InvalidArgumentError(f"source {config.source!r}: split {name} is empty")
    return out, rule


# --------------------------------------------------------------------------------------------
# one chunk of work: every perturbation of every digit in it, measured


def digit_rng(seed: int, kind: str, split: str, index: int, copy: int = 0) -> np.random.Generator:
    """The generator of one digit's perturbation: ``default_rng([seed, kind code, split code, index])``
    for copy 0, ``default_rng([seed, kind code, split code, index, copy])`` for the other copies.

    Parameters
    ----------
    seed : int
        Build seed.
    kind : {"thin", "thick", "swel", "frac"}
        Perturbation (its code in :data:`PERTURBATION_CODES`).
    split : {"train", "t10k"}
        Split (its code in :data:`SPLIT_CODES`).
    index : int
        The digit's index in the split (after limits, before copies).
    copy : int, default=0
        Which copy of the digit (0 .. copies - 1).

    Returns
    -------
    numpy.random.Generator
        The same stream whatever the chunking or number of workers; copy 0 keeps the stream of a build
        without copies.
    """
    key = [seed, PERTURBATION_CODES[kind], SPLIT_CODES[split], index] + ([copy] if copy else [])
    return np.random.default_rng(key)


def render_hires(hires: np.ndarray, scale: int) -> np.ndarray:
    """The render path of every digit written: ``to_uint8(downscale(hires))``.

    Parameters
    ----------
    hires : numpy.ndarray
        float ``(N, f H, f W)`` hi-res images in [0, 1] (a binarised upscale, or a perturbation's result).
    scale : int
        Downscaling factor f.

    Returns
    -------
    numpy.ndarray
        uint8 ``(N, H, W)``.
    """
    return resample.to_uint8(resample.downscale(hires, scale))


def measure_images(images: np.ndarray, pipeline: PipelineConfig, compat: str = "none") -> pd.DataFrame:
    """Morphometrics of a chunk of written digits in the build's measurement mode.

    Parameters
    ----------
    images : numpy.ndarray
        uint8 ``(B, 28, 28)``.
    pipeline : PipelineConfig
        Pipeline parameters.
    compat : {"none", "published"}, default="none"
        Measurement mode (:func:`repscope.data.morpho.measure`).

    Returns
    -------
    pandas.DataFrame
        Columns ``area, length, thickness, slant, width, height, valid``.
    """
    if compat not in COMPAT_MODES:
        raise InvalidArgumentError(f"compat: must be one of {', '.join(COMPAT_MODES)}, got {compat!r}")
    if compat == "published":
        return measure_published_batch(images, pipeline)[list(COLUMNS[1:])]
    return measure_batch(analyse_batch(images, pipeline))[list(COLUMNS[1:])]


def process_chunk(
    images: np.ndarray,
    split: str,
    start: int,
    kinds: Sequence[str],
    perturbations: dict[str, Perturbation],
    pipeline: PipelineConfig,
    seed: int,
    *,
    n_source: int | None = None,
    plain_render: str = "rendered",
    compat: str = "none",
) -> dict[str, Any]:
    """Render, perturb and measure digits ``start .. start + len(images)`` of a split.

    Parameters
    ----------
    images : numpy.ndarray
        uint8 ``(B, 28, 28)`` digits of the chunk.
    split : {"train", "t10k"}
        Their split.
    start : int
        Position of the first digit in the split with its copies (with ``n_source`` digits per copy,
        position p is copy ``p // n_source`` of digit ``p % n_source``; that seeds its generators).
    kinds : sequence of str
        Perturbations to apply (each to every digit).
    perturbations : dict of str to Perturbation
        The perturbation of each kind.
    pipeline : PipelineConfig
        Pipeline parameters.
    seed : int
        Build seed.
    n_source : int, optional
        Digits of the split before copies; default: no copies (position = index).
    plain_render : {"rendered", "source-bytes"}, default="rendered"
        How plain digits are written (module docstring).
    compat : {"none", "published"}, default="none"
        Measurement mode of the morphometrics.

    Returns
    -------
    dict
        ``images_plain`` (uint8 ``(B, 28, 28)`` plain digits as written), ``morpho_plain`` (DataFrame of
        their morphometrics, columns ``area, length, thickness, slant, width, height, valid``; pixels
        of the 28x28 image, slant in radians), and for each kind ``images_<kind>`` (uint8
        ``(B, 28, 28)``), ``params_<kind>`` (list of JSON strings) and ``morpho_<kind>`` (morphometrics
        measured after the perturbation).
    """
    if plain_render not in PLAIN_RENDERS:
        raise InvalidArgumentError(f"plain_render: must be one of {', '.join(PLAIN_RENDERS)}, got {plain_render!r}")
    positions = start + np.arange(len(images))
    n = n_source or (int(positions[-1]) + 1 if len(images) else 1)
    source_index, copy_index = positions % n, positions // n
    batch = analyse_batch(images, pipeline)
    digits = batch.digits()
    blank = ~batch.valid  # no foreground: written with the exact source bytes, whatever the render

    def written(hires: np.ndarray) -> np.ndarray:
        out = render_hires(hires, pipeline.scale)
        out[blank] = images[blank]
        return out

    plain = images.copy()
    if plain_render == "rendered":
        plain = written(np.stack([digit.binary_image for digit in digits]).astype(np.float64))
    result: dict[str, Any] = {"images_plain": plain, "morpho_plain": measure_images(plain, pipeline, compat)}
    for kind in kinds:
        perturbation = perturbations[kind]
        hires = np.empty_like(batch.hires)
        params: list[str] = []
        for k, digit in enumerate(digits):
            outcome = perturbation(digit, digit_rng(seed, kind, split, int(source_index[k]), int(copy_index[k])))
            hires[k] = outcome.hires
            params.append(json.dumps({"perturbation": kind, **outcome.params}, sort_keys=True))
        perturbed = written(hires)
        result[f"images_{kind}"] = perturbed
        result[f"params_{kind}"] = params
        result[f"morpho_{kind}"] = measure_images(perturbed, pipeline, compat)
    return result


def _save_chunk(path: Path, result: dict[str, Any]) -> None:
    arrays: dict[str, np.ndarray] = {}
    for key, value in result.items():
        if isinstance(value, pd.DataFrame):
            arrays[key] = value.to_numpy(dtype=np.float64)
        elif key.startswith("params_"):
            arrays[key] = np.array(value, dtype=object).astype(str)
        else:
            arrays[key] = value
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_bytes_atomic(path, buffer.getvalue())


def _load_chunk(path: Path) -> dict[str, Any]:
    try:
        with np.load(path, allow_pickle=False) as data:
            out: dict[str, Any] = {}
            for key in data.files:
                value = data[key]
                if key.startswith("morpho_"):
                    frame = pd.DataFrame(value, columns=list(COLUMNS[1:]))
                    frame["valid"] = frame["valid"].astype(bool)
                    out[key] = frame
                elif key.startswith("params_"):
                    out[key] = [str(v) for v in value]
                else:
                    out[key] = value
            return out
    except (OSError, ValueError, KeyError) as exc:
        raise RepscopeError(f"{path}: unreadable partial build result ({exc}); delete it and resume") from None


def _chunk_task(args: tuple) -> str:
    path, images, split, start, kinds, perturbations, pipeline, seed, options = args
    _save_chunk(Path(path), process_chunk(images, split, start, kinds, perturbations, pipeline, seed, **options))
    return path


# --------------------------------------------------------------------------------------------
# assembling the sets


def mixed_assignment(n: int, members: Sequence[str], seed: int, set_name: str, split: str) -> np.ndarray:
    """Perturbation code of each digit of a mixed set: equal shares, in seeded random order.

    Parameters
    ----------
    n : int
        Number of digits.
    members : sequence of str
        The set's members, e.g. ``("plain", "thin", "thick")``.
    seed : int
        Build seed.
    set_name : str
        A key of :data:`SETS` (it selects the random stream).
    split : {"train", "t10k"}
        The split (it selects the random stream).

    Returns
    -------
    numpy.ndarray
        uint8 ``(n,)`` codes of :data:`PERTURBATION_CODES`; the members' counts differ by at most one.
    """
    set_code = list(SETS).index(set_name)
    codes = np.array([PERTURBATION_CODES[m] for m in members], dtype=np.uint8)
    shares = np.resize(codes, n)  # m0 m1 m2 m0 m1 m2 ...: shares differ by at most one
    return shares[np.random.default_rng([seed, 100 + set_code, SPLIT_CODES[split]]).permutation(n)]


def _morpho_csv(frame: pd.DataFrame) -> bytes:
    frame = frame.copy()
    frame.insert(0, "index", np.arange(len(frame)))
    return frame.to_csv(index=False, float_format=CSV_FLOAT_FORMAT, lineterminator="\n").encode()


def _ids_csv(n_source: int, copies: int) -> bytes:
    positions = np.arange(n_source * copies)
    frame = pd.DataFrame({"index": positions, "source_index": positions % n_source, "copy": positions // n_source})
    return frame.to_csv(index=False, lineterminator="\n").encode()


def _params_csv(codes: np.ndarray, params: list[str]) -> bytes:
    names = {code: name for name, code in PERTURBATION_CODES.items()}
    frame = pd.DataFrame(
        {
            "index": np.arange(len(codes)),
            "perturbation": [names[int(c)] for c in codes],
            "code": codes.astype(int),
            "params": params,
        }
    )
    return frame.to_csv(index=False, lineterminator="\n").encode()


def assemble_split(
    set_name: str,
    split: str,
    images: np.ndarray,
    labels: np.ndarray,
    results: dict[str, Any],
    seed: int,
    copies: int = 1,
) -> dict[str, bytes]:
    """The files of one set and split, as bytes keyed by file name.

    Parameters
    ----------
    set_name : str
        A key of :data:`SETS`.
    split : {"train", "t10k"}
        The split.
    images : numpy.ndarray
        uint8 ``(n, 28, 28)`` source digits of the split (before copies).
    labels : numpy.ndarray
        ``(n,)`` class labels (written as uint8, repeated for each copy).
    results : dict
        The chunk results of the whole split with its copies concatenated (keys of
        :func:`process_chunk`; ``images_plain`` holds the plain digits as written).
    seed : int
        Build seed (for the mixed sets' assignment).
    copies : int, default=1
        Copies of each digit, copy-major (``N = copies x n`` digits written).

    Returns
    -------
    dict of str to bytes
        ``<split>-images-idx3-ubyte.gz``, ``<split>-labels-idx1-ubyte.gz``, ``<split>-morpho.csv`` and
        ``<split>-ids.csv`` (``index, source_index, copy``);
        ``<split>-pert-idx1-ubyte.gz`` for mixed sets and ``<split>-pert-params.csv`` for every set but
        ``plain``.
    """
    members = SETS[set_name]
    n_source = len(images)
    n = n_source * copies
    labels = np.tile(np.asarray(labels), copies)
    if len(members) == 1:
        codes = np.full(n, PERTURBATION_CODES[members[0]], dtype=np.uint8)
    else:
        codes = mixed_assignment(n, members, seed, set_name, split)
    out_images = np.array(results["images_plain"], copy=True)
    morpho = results["morpho_plain"].copy()
    params = [json.dumps({"perturbation": "plain"})] * n
    for kind in members:
        if kind == "plain":
            continue
        chosen = np.flatnonzero(codes == PERTURBATION_CODES[kind])
        out_images[chosen] = results[f"images_{kind}"][chosen]
        morpho.iloc[chosen] = results[f"morpho_{kind}"].iloc[chosen].to_numpy()
        kind_params = results[f"params_{kind}"]
        for k in chosen:
            params[k] = kind_params[k]
    files = {
        f"{split}-images-idx3-ubyte.gz": idx.encode_idx(out_images, gzip=True),
        f"{split}-labels-idx1-ubyte.gz": idx.encode_idx(labels.astype(np.uint8), gzip=True),
        f"{split}-morpho.csv": _morpho_csv(morpho),
        f"{split}-ids.csv": _ids_csv(n_source, copies),
    }
    if len(members) > 1:
        files[f"{split}-pert-idx1-ubyte.gz"] = idx.encode_idx(codes, gzip=True)
    if members != ("plain",):
        files[f"{split}-pert-params.csv"] = _params_csv(codes, params)
    return files


# --------------------------------------------------------------------------------------------
# the build


_pool_context = pool_context  # the name other modules imported


def build_dataset(
    out: str | Path,
    config: BuildConfig,
    *,
    resume: bool = False,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    stop_after_chunks: int | None = None,
) -> dict[str, Any]:
    """Build the sets of ``config`` into ``out`` and return the manifest (``dataset.json``).

    ``out`` must be empty or absent, unless ``resume`` is set: then the chunks already computed
    are kept and the rest computed. ``progress(done, total)`` is called with digit counts.
    ``stop_after_chunks`` interrupts the build after that many new chunks (for tests of resume).

    Failures leave nothing in the way of the corrected command: the configuration and the
    source are checked before anything is created, and a build that fails before its first
    chunk is saved removes what it created (``out`` itself when it made it). An interrupted
    build (Ctrl-C, or a failure after some chunks) keeps ``out/.build/`` so that ``resume``
    continues it; the worker processes ignore Ctrl-C and the running chunks are finished and
    kept (see :mod:`repscope.pools`).

    Parameters
    ----------
    out : str or pathlib.Path
        Output folder: one subfolder per set, plus ``dataset.json``.
    config : BuildConfig
        What to build.
    resume : bool, default=False
        Continue an interrupted build in ``out`` (a complete build with the same configuration is
        returned as it is).
    jobs : int, default=1
        Worker processes (>= 1); the bytes written do not depend on it.
    progress : callable, optional
        ``progress(done, total)`` with digit counts.
    stop_after_chunks : int, optional
        Stop after that many new chunks (for tests of resume).

    Returns
    -------
    dict
        The manifest written as ``dataset.json`` (format version, source, seed, configuration,
        perturbation and pipeline parameters, split rule, counts and sha256 of every file), or
        ``{"complete": False}`` when stopped by ``stop_after_chunks``.

    Raises
    ------
    InvalidArgumentError
        When the configuration is invalid, ``jobs < 1``, the source's digits are unusable, or
        ``resume`` meets a build started with another configuration.
    OutputExistsError
        When ``out`` is a file, a non-empty folder without ``resume``, not an interrupted build, or a
        complete build of another configuration.
    RepscopeError
        When the saved build state or a saved chunk cannot be read (and the errors of the source:
        SourceNotFoundError, DataFormatError).
    """
    config.check()
    jobs = check_positive_int(jobs, "jobs")
    out = Path(out)
    state_dir = out / STATE_DIR
    state_file = state_dir / "config.json"
    manifest_path = out / "dataset.json"
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"--out {out}: exists and is not a directory")
    existing = [p for p in out.iterdir()] if out.is_dir() else []
    if existing and not resume:
        raise OutputExistsError(
            f"--out {out}: directory is not empty; choose a new one or pass --resume to finish "
            "an interrupted build there"
        )
    if resume and manifest_path.exists() and not state_dir.exists():
        manifest = json.loads(manifest_path.read_text())
        found = differences(manifest.get("config"), json.loads(json.dumps(config.to_dict())))
        if found:
            raise OutputExistsError(
                f"--out {out}: holds a complete build with another configuration ({describe(found)})"
            )
        return manifest
    if resume and existing and not state_file.exists():
        raise OutputExistsError(f"--out {out}: not an interrupted build (no {STATE_DIR}/config.json)")
    config_record = json.loads(json.dumps(config.to_dict()))
    if state_file.exists():
        try:
            recorded = json.loads(state_file.read_text())
        except (OSError, ValueError) as exc:
            raise RepscopeError(f"{state_file}: unreadable build state ({exc}); delete {out} and build again") from None
        if recorded != config_record:
            found = differences(recorded, config_record) if isinstance(recorded, dict) else []
            refuse_changes(found or [Difference("configuration", recorded, config_record)], str(out), "--workers")

    # the source is read before anything is created: a bad --source leaves nothing behind
    splits, split_rule = load_build_source(config)
    _check_build_size(out, config, splits)
    out_existed, state_existed = out.exists(), state_dir.exists()
    try:
        if not state_file.exists():
            make_output_dir(out)
            write_json_atomic(state_file, config_record)
        manifest = _build(out, config, splits, split_rule, config_record, jobs, progress, stop_after_chunks)
    except KeyboardInterrupt:
        raise  # the state stays: --resume continues it
    except BaseException:
        _remove_failed_start(out, state_dir, out_existed, state_existed)
        raise
    return manifest


def _check_build_size(out: Path, config: BuildConfig, splits: dict[str, tuple[np.ndarray, np.ndarray, str]]) -> None:
    """Refuse, before any work, a build the memory or the disk cannot hold (``--copies`` of a billion).

    Lower bounds: the chunks' digits are all queued at once and each split is assembled whole, one
    image per kind of perturbation and digit, in memory; the chunks kept for ``--resume`` hold the same
    images on disk.
    """
    digits = sum(len(images) * config.copies_of(split) for split, (images, _, _) in splits.items())
    pixels = max((math.prod(images.shape[1:]) for images, _, _ in splits.values()), default=0)
    images_bytes = digits * pixels * len(config.kinds_needed())
    what = f"--copies {config.copies} --test-copies {config.test_copies}: a build of {digits:,} digits"
    check_memory(images_bytes + digits * pixels, what)
    check_free_space(out, images_bytes, what)


def _remove_failed_start(out: Path, state_dir: Path, out_existed: bool, state_existed: bool) -> None:
    """Undo what a build that failed before saving its first chunk created."""
    if state_existed or any(state_dir.glob("*.npz")):
        return  # work worth resuming
    shutil.rmtree(state_dir, ignore_errors=True)
    if not out_existed:
        with contextlib.suppress(OSError):
            out.rmdir()  # only when empty


def _build(
    out: Path,
    config: BuildConfig,
    splits: dict[str, tuple[np.ndarray, np.ndarray, str]],
    split_rule: str,
    config_record: dict[str, Any],
    jobs: int,
    progress: Callable[[int, int], None] | None,
    stop_after_chunks: int | None,
) -> dict[str, Any]:
    state_dir = out / STATE_DIR
    perturbations = config.make_perturbations()
    pipeline = config.pipeline_config()
    kinds = config.kinds_needed()
    tasks, chunk_paths = _chunk_tasks(config, splits, state_dir, (kinds, perturbations, pipeline))
    total = sum(len(images) * config.copies_of(split) for split, (images, _, _) in splits.items())
    done = total - sum(len(task[1]) for task in tasks)
    # stop_after_chunks: a test's interrupted build (the chunks done so far stay for --resume)
    _process_chunks(tasks if stop_after_chunks is None else tasks[:stop_after_chunks], done, total, jobs, progress)
    if stop_after_chunks is not None and any(not p.exists() for ps in chunk_paths.values() for p in ps):
        return {"complete": False}
    counts = _write_sets(out, config, splits, chunk_paths)
    files = {
        f"{set_name}/{path.name}": sha256_file(path)
        for set_name in config.sets
        for path in sorted((out / set_name).iterdir())
    }
    manifest = {
        "format_version": FORMAT_VERSION,
        "generator": "repscope.data.morpho.build",
        "repscope_version": __version__,
        "source": config.source,
        "origin": {split: origin for split, (_, _, origin) in splits.items()},
        "seed": config.seed,
        "config": config_record,
        "perturbations": {kind: perturbations[kind].describe() for kind in kinds},
        "pipeline": pipeline.to_dict(),
        "plain_render": {"choice": config.plain_render, "rule": RENDER_RULES[config.plain_render]},
        "copies": {"train": config.copies, "t10k": config.test_copies, "layout": "copy-major; see <split>-ids.csv"},
        "measurement": {"compat": config.compat},
        "split_rule": split_rule,
        "counts": counts,
        "files": files,
    }
    write_json_atomic(out / "dataset.json", manifest)
    shutil.rmtree(state_dir, ignore_errors=True)
    return manifest


def _chunk_tasks(
    config: BuildConfig,
    splits: dict[str, tuple[np.ndarray, np.ndarray, str]],
    state_dir: Path,
    recipe: tuple[Any, Any, Any],
) -> tuple[list[tuple[Any, ...]], dict[str, list[Path]]]:
    """The chunks of every split still to perturb and measure (a resumed build skips those whose
    ``.npz`` exists), and every chunk's path by split.

    ``recipe`` is ``(kinds, perturbations, pipeline)``; each task is the arguments of :func:`_chunk_task`.
    """
    kinds, perturbations, pipeline = recipe
    tasks = []
    chunk_paths: dict[str, list[Path]] = {}
    for split, (images, _, _) in splits.items():
        chunk_paths[split] = []
        n_source = len(images)
        options = {"n_source": n_source, "plain_render": config.plain_render, "compat": config.compat}
        for start in range(0, n_source * config.copies_of(split), config.chunk_size):
            path = state_dir / f"{split}-{start:07d}.npz"
            chunk_paths[split].append(path)
            if not path.exists():
                # copy-major: position p is digit p % n_source (a chunk may span two copies)
                positions = np.arange(start, min(start + config.chunk_size, n_source * config.copies_of(split)))
                tasks.append(
                    (
                        str(path),
                        images[positions % n_source],
                        split,
                        start,
                        kinds,
                        perturbations,
                        pipeline,
                        config.seed,
                        options,
                    )
                )
    return tasks, chunk_paths


def _process_chunks(
    tasks: list[tuple[Any, ...]], done: int, total: int, jobs: int, progress: Callable[[int, int], None] | None
) -> None:
    """Perturb and measure the chunks of ``tasks`` on ``jobs`` workers, each written to its ``.npz``,
    reporting the digits done of ``total`` (``done`` before the first)."""
    if progress:
        progress(done, total)
    with ordered_map(_chunk_task, tasks, jobs) as finished:
        for task, _ in zip(tasks, finished):
            done += len(task[1])
            if progress:
                progress(done, total)


def _write_sets(
    out: Path,
    config: BuildConfig,
    splits: dict[str, tuple[np.ndarray, np.ndarray, str]],
    chunk_paths: dict[str, list[Path]],
) -> dict[str, dict[str, int]]:
    """Join each split's chunks and write every set's files of it; the digits per set and split."""
    counts: dict[str, dict[str, int]] = {}
    for split, (images, labels, _) in splits.items():
        parts = [_load_chunk(p) for p in chunk_paths[split]]
        results: dict[str, Any] = {}
        for key in parts[0]:
            values = [part[key] for part in parts]
            if isinstance(values[0], pd.DataFrame):
                results[key] = pd.concat(values, ignore_index=True)
            elif isinstance(values[0], list):
                results[key] = [v for part in values for v in part]
            else:
                results[key] = np.concatenate(values)
        copies = config.copies_of(split)
        for set_name in config.sets:
            for name, data in assemble_split(set_name, split, images, labels, results, config.seed, copies).items():
                path = out / set_name / name
                write_bytes_atomic(path, data)
            counts.setdefault(set_name, {})[split] = len(images) * copies
    return counts


def verify_dataset(out: str | Path) -> list[str]:
    """Files whose sha256 differs from ``dataset.json`` (empty when all match).

    Parameters
    ----------
    out : str or pathlib.Path
        A folder written by :func:`build_dataset`.

    Returns
    -------
    list of str
        Paths relative to ``out`` (e.g. ``"thin/train-images-idx3-ubyte.gz"``) that are missing or
        differ, in manifest order.

    Raises
    ------
    RepscopeError
        When ``out`` holds no ``dataset.json``.
    """
    out = Path(out)
    manifest_path = out / "dataset.json"
    if not manifest_path.exists():
        raise RepscopeError(f"{out}: no dataset.json; not a complete Morpho-MNIST build")
    manifest = json.loads(manifest_path.read_text())
    return [
        name
        for name, digest in manifest["files"].items()
        if not (out / name).exists() or sha256_file(out / name) != digest
    ]

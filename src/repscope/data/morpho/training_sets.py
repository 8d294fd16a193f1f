"""Digit datasets for training and evaluation: images with the target a task learns.

:func:`load_digits` and :func:`load_morpho_mnist` return a :class:`TrainingSet` (uint8 ``(N, 28, 28)``
train and test images with their targets, plus the Morpho-MNIST fields the studies read: labels,
measured morphometrics, perturbation codes). :func:`digits_dataset` and :func:`morpho_mnist_dataset`
take the same parameters and return the framework's :class:`~repscope.data.datasets.Dataset`; they
are registered in :mod:`repscope.data.registry`, so configs say
``data: {name: morpho-mnist, params: {set: local, target: abnormal}}``.

Targets:

=============  ==================================================================  ==============
``label``      the digit class                                                     classification
``abnormal``   1 when the digit was swollen or fractured, else 0 (a ``local``/     classification
               ``swel``/``frac`` set)
``perturbation`` the perturbation code 0 plain, 1 thin, 2 thick, 3 swollen,        classification
               4 fractured
``thickness``  the stroke thickness measured after perturbation (pixels)           regression
``none``       no target (generative models)                                       none
=============  ==================================================================  ==============
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from repscope.cache import exclusive_lock
from repscope.data import idx
from repscope.data.datasets import ArraySplit, Dataset, FieldSpec
from repscope.data.morpho.build import FORMAT_VERSION as BUILD_FORMAT_VERSION
from repscope.data.morpho.build import PLAIN_RENDERS, BuildConfig, build_dataset, load_build_source
from repscope.data.morpho.morphometrics import default_jobs
from repscope.data.sources import FASHION_CLASSES, repscope_home
from repscope.errors import InvalidArgumentError, RepscopeError
from repscope.progress import progress_bar

Target = Literal["label", "abnormal", "perturbation", "thickness", "none"]
TARGET_KINDS = {
    "label": "classification",
    "abnormal": "classification",
    "perturbation": "classification",
    "thickness": "regression",
    "none": "none",
}


@dataclass
class TrainingSet:
    """Train and test images (uint8 ``(N, 28, 28)``) and targets, plus what they are."""

    train_images: np.ndarray
    train_targets: np.ndarray
    test_images: np.ndarray
    test_targets: np.ndarray
    target: str
    num_classes: int | None
    description: str
    train_labels: np.ndarray | None = None
    test_labels: np.ndarray | None = None
    test_morphometrics: pd.DataFrame | None = None
    test_perturbations: np.ndarray | None = None
    class_names: tuple[str, ...] = ()  # of the labels, where the source names them (Fashion-MNIST)

    @property
    def target_kind(self) -> str:
        return TARGET_KINDS[self.target]


def _targets(
    target: str, labels: np.ndarray, pert: np.ndarray | None, morpho: pd.DataFrame | None, where: str
) -> np.ndarray:
    if target == "label":
        return labels.astype(np.int64)
    if target in ("abnormal", "perturbation"):
        if pert is None:
            raise InvalidArgumentError(
                f"{where}: target {target!r} needs a set with perturbation codes (global, local, or a "
                "perturbed set); this one has none"
            )
        return (pert >= 3).astype(np.int64) if target == "abnormal" else pert.astype(np.int64)
    if target == "thickness":
        if morpho is None:
            raise InvalidArgumentError(f"{where}: target 'thickness' needs measured morphometrics")
        values = morpho["thickness"].to_numpy(np.float32)
        return values
    return np.zeros(len(labels), dtype=np.int64)


def _num_classes(target: str, train_targets: np.ndarray, test_targets: np.ndarray) -> int | None:
    if target == "label":
        return int(max(train_targets.max(initial=0), test_targets.max(initial=0))) + 1
    if target == "abnormal":
        return 2
    if target == "perturbation":
        return 5
    return None


def load_digits(
    source: str = "mnist-sample",
    data_dir: str | None = None,
    seed: int = 0,
    test_fraction: float = 0.2,
    train_size: int | None = None,
    test_size: int | None = None,
    target: Literal["label", "none"] = "label",
) -> TrainingSet:
    """Plain digits of a source (``repscope.data.sources``), split as the Morpho-MNIST builder
    splits them (the source's own splits, or a seeded stratified split; limits stratified).

    :func:`digits_dataset` shares this docstring and these parameters.

    Parameters
    ----------
    source : str, default="mnist-sample"
        A source name or path (see :func:`repscope.data.sources.load_splits`).
    data_dir : str, optional
        Folder to look for a named source in.
    seed : int, default=0
        Seed of the split of a one-split source and of the ``train_size`` / ``test_size`` samples.
    test_fraction : float, default=0.2
        Share of each class that goes to the test split of a one-split source, in (0, 1).
    train_size : int, optional
        Keep a seeded class-stratified sample of this many train digits (>= 1); default all.
    test_size : int, optional
        The same for the test digits.
    target : {"label", "none"}, default="label"
        ``label``: the digit class; ``none``: no target (all-zero targets, for generative models).

    Returns
    -------
    TrainingSet
        uint8 ``(N, 28, 28)`` train and test images (0-255), int64 ``(N,)`` targets and labels (0 for an
        unlabelled source), ``num_classes`` (largest label + 1 for ``label``, None for ``none``) and a
        description of the source and split rule; no morphometrics or perturbations.
        :func:`digits_dataset` returns it as a :class:`~repscope.data.datasets.Dataset` named ``digits``
        (see :func:`as_dataset`).

    Raises
    ------
    InvalidArgumentError
        When a parameter is out of range, ``target`` needs perturbations or morphometrics, or a split is
        empty or not 28x28 uint8 digits.
    SourceNotFoundError, DataFormatError
        When the source cannot be found or read.
    """
    config = BuildConfig(
        source=source,
        data_dir=data_dir,
        seed=seed,
        test_fraction=test_fraction,
        train_size=train_size,
        test_size=test_size,
        sets=("plain",),
    )
    config.check()
    splits, rule = load_build_source(config)
    (train_images, train_labels, origin), (test_images, test_labels, _) = splits["train"], splits["t10k"]
    where = f"data {source!r}"
    train_targets = _targets(target, train_labels, None, None, where)
    test_targets = _targets(target, test_labels, None, None, where)
    return TrainingSet(
        train_images,
        train_targets,
        test_images,
        test_targets,
        target,
        _num_classes(target, train_targets, test_targets),
        f"{source} ({origin}); {rule}",
        train_labels.astype(np.int64),
        test_labels.astype(np.int64),
        class_names=FASHION_CLASSES if source == "fashion-mnist" else (),
    )


def morpho_cache_dir(
    source: str,
    data_dir: str | None,
    seed: int,
    test_fraction: float,
    train_size: int | None,
    test_size: int | None,
    copies: int = 1,
    test_copies: int = 1,
    plain_render: str = "rendered",
) -> Path:
    """Where the Morpho-MNIST build of these parameters is cached (under ``$REPSCOPE_HOME``).

    Parameters
    ----------
    source : str
        Source name or path (its last path component names the folder).
    data_dir : str or None
        Folder of a named source (resolved to an absolute path for the key).
    seed : int
        Build seed.
    test_fraction : float
        Test share of a one-split source.
    train_size, test_size : int or None
        Limits on the train and test digits.
    copies, test_copies : int, default=1
        Copies of each train / test digit.
    plain_render : {"rendered", "source-bytes"}, default="rendered"
        How the plain digits are written (:mod:`repscope.data.morpho.build`).

    Returns
    -------
    pathlib.Path
        ``$REPSCOPE_HOME/morpho-mnist/<source>-seed<seed>-<digest>``: ``<source>`` is the source's name with
        characters other than letters, digits, ``-`` and ``_`` replaced by ``_`` (at most 40), ``<digest>``
        the first 12 hex digits of the sha256 of all the parameters and the build format version (a build
        of an earlier format is never reused). Not created.
    """
    data_dir = data_dir and str(Path(data_dir).resolve())
    # every parameter that changes the bytes is in the key, so a build of other settings (or of an
    # earlier format) is never found under this name
    key = json.dumps(
        [source, data_dir, seed, test_fraction, train_size, test_size, copies, test_copies, plain_render]
        + [BUILD_FORMAT_VERSION]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    safe_source = "".join(c if c.isalnum() or c in "-_" else "_" for c in Path(source).name)[:40]
    return repscope_home() / "morpho-mnist" / f"{safe_source}-seed{seed}-{digest}"


def _check_cached_build(out: Path, config: BuildConfig) -> None:
    """Refuse a cached build whose ``dataset.json`` records another format or configuration.

    The folder name already holds a digest of the settings; this guards against a folder copied or
    edited by hand, so that a build of other settings is never used silently.
    """
    try:
        manifest = json.loads((out / "dataset.json").read_text())
    except (OSError, ValueError) as exc:
        raise RepscopeError(f"{out}/dataset.json: unreadable ({exc}); delete {out} to rebuild it") from None
    expected = json.loads(json.dumps(config.to_dict()))
    recorded = manifest.get("config") or {}
    differ = sorted(key for key in expected if recorded.get(key) != expected[key])
    if manifest.get("format_version") != BUILD_FORMAT_VERSION:
        differ.insert(0, f"format_version {manifest.get('format_version')} (expected {BUILD_FORMAT_VERSION})")
    if differ:
        raise RepscopeError(
            f"{out}: the cached Morpho-MNIST build differs from the one asked for in {', '.join(differ)}; "
            f"delete {out} to rebuild it"
        )


def ensure_morpho_dataset(
    source: str = "mnist-sample",
    data_dir: str | None = None,
    seed: int = 0,
    test_fraction: float = 0.2,
    train_size: int | None = None,
    test_size: int | None = None,
    jobs: int = 1,
    copies: int = 1,
    test_copies: int = 1,
    plain_render: Literal["rendered", "source-bytes"] = "rendered",
) -> Path:
    """A complete Morpho-MNIST build of these parameters: cached, built once (under a file lock,
    so parallel runs wait for one build), resumed if an earlier build was interrupted.

    Every set (``plain``, ``thin``, ``thic``, ``swel``, ``frac``, ``global``, ``local``) is built with the
    paper's perturbation and pipeline parameters.

    Parameters
    ----------
    source : str, default="mnist-sample"
        A source name or path (see :func:`repscope.data.sources.load_splits`).
    data_dir : str, optional
        Folder to look for a named source in.
    seed : int, default=0
        Seed of the split of a one-split source and of the ``train_size`` / ``test_size`` samples.
    test_fraction : float, default=0.2
        Share of each class that goes to the test split of a one-split source, in (0, 1).
    train_size : int, optional
        Keep a seeded class-stratified sample of this many train digits (>= 1); default all.
    test_size : int, optional
        The same for the test digits.
    jobs : int, default=1
        Worker processes for the build (>= 1); the bytes written do not depend on it.
    copies : int, default=1
        Draw each training digit this many times, each copy perturbed anew (>= 1).
    test_copies : int, default=1
        The same for the test digits.
    plain_render : {"rendered", "source-bytes"}, default="rendered"
        How the plain digits are written: ``rendered`` (the published recipe, the path perturbed digits
        take) or ``source-bytes`` (the source's bytes); see :mod:`repscope.data.morpho.build`.

    Returns
    -------
    pathlib.Path
        The build folder (:func:`morpho_cache_dir`), holding ``dataset.json`` and one subfolder per set.

    Raises
    ------
    InvalidArgumentError
        When a parameter is out of range or the source's digits are unusable.
    SourceNotFoundError, DataFormatError
        When the source cannot be found or read.
    RepscopeError
        When the cached folder records another format version or configuration than asked for, and the
        other errors of :func:`repscope.data.morpho.build.build_dataset`.
    """
    if plain_render not in PLAIN_RENDERS:
        raise InvalidArgumentError(f"plain_render: must be one of {', '.join(PLAIN_RENDERS)}, got {plain_render!r}")
    config = BuildConfig(
        source=source,
        data_dir=data_dir,
        seed=seed,
        test_fraction=test_fraction,
        train_size=train_size,
        test_size=test_size,
        copies=copies,
        test_copies=test_copies,
        plain_render=plain_render,
    )
    out = morpho_cache_dir(
        source, data_dir, seed, test_fraction, train_size, test_size, copies, test_copies, plain_render
    )
    if (out / "dataset.json").exists():
        _check_cached_build(out, config)
        return out
    with exclusive_lock(out):
        if not (out / "dataset.json").exists():
            # a first use builds the sets (minutes with copies): say so rather than sit silent
            n_copies = "" if copies == test_copies == 1 else f", {copies} copies of each training digit"
            description = f"building the Morpho-MNIST sets from {source} once, into the cache{n_copies}"
            with progress_bar(description) as update:
                build_dataset(out, config, resume=out.exists(), jobs=jobs, progress=update)
    return out


def load_morpho_mnist(
    set: Literal["plain", "thin", "thic", "swel", "frac", "global", "local"] = "plain",
    target: Target = "label",
    source: str = "mnist-sample",
    data_dir: str | None = None,
    seed: int = 0,
    test_fraction: float = 0.2,
    train_size: int | None = None,
    test_size: int | None = None,
    copies: int = 1,
    test_copies: int = 1,
    plain_render: Literal["rendered", "source-bytes"] = "rendered",
    dataset_dir: str | None = None,
) -> TrainingSet:
    """A Morpho-MNIST set (built from ``source`` and cached, or read from ``dataset_dir``).

    :func:`morpho_mnist_dataset` shares this docstring and these parameters.

    Parameters
    ----------
    set : {"plain", "thin", "thic", "swel", "frac", "global", "local"}, default="plain"
        The set to read (see :mod:`repscope.data.morpho.build`).
    target : {"label", "abnormal", "perturbation", "thickness", "none"}, default="label"
        What the targets hold (module docstring): digit class, 1 for swollen or fractured, perturbation
        code 0-4, stroke thickness in pixels, or nothing (all zeros).
    source : str, default="mnist-sample"
        A source name or path (see :func:`repscope.data.sources.load_splits`).
    data_dir : str, optional
        Folder to look for a named source in.
    seed : int, default=0
        Seed of the split of a one-split source and of the ``train_size`` / ``test_size`` samples.
    test_fraction : float, default=0.2
        Share of each class that goes to the test split of a one-split source, in (0, 1).
    train_size : int, optional
        Keep a seeded class-stratified sample of this many train digits (>= 1); default all.
    test_size : int, optional
        The same for the test digits.
    copies : int, default=1
        Draw each training digit this many times, each copy perturbed anew (``repscope morpho build
        --copies``; for a small source such as ``mnist-sample``).
    test_copies : int, default=1
        The same for the test digits.
    plain_render : {"rendered", "source-bytes"}, default="rendered"
        How the plain digits are written (``repscope morpho build --plain-render``): ``rendered``, the
        published recipe, or ``source-bytes``.
    dataset_dir : str, optional
        A complete build folder (``repscope morpho build --out DIR``) to read instead; the source
        parameters are then only used in the description.

    Returns
    -------
    TrainingSet
        uint8 ``(N, 28, 28)`` train and test images (0-255); targets int64 ``(N,)`` (float32 for
        ``thickness``); int64 labels; ``num_classes`` (largest label + 1 for ``label``, 2 for
        ``abnormal``, 5 for ``perturbation``, None otherwise); ``test_morphometrics`` (DataFrame of the
        test ``morpho.csv``: ``index, area, length, thickness, slant, width, height, valid``; pixels of
        the 28x28 image, slant in radians) and ``test_perturbations`` (uint8 ``(N,)`` codes 0 plain,
        1 thin, 2 thick, 3 swollen, 4 fractured).
        :func:`morpho_mnist_dataset` returns it as a :class:`~repscope.data.datasets.Dataset` named
        ``morpho-mnist`` (see :func:`as_dataset`).

    Raises
    ------
    InvalidArgumentError
        When ``dataset_dir`` (or the cache) is not a complete build with ``set``, or a build parameter is
        out of range.
    DataFormatError
        When an IDX file of the set is missing or corrupt (and the source's errors when building).
    """
    root = (
        Path(dataset_dir)
        if dataset_dir
        else ensure_morpho_dataset(
            source,
            data_dir,
            seed,
            test_fraction,
            train_size,
            test_size,
            copies=copies,
            test_copies=test_copies,
            plain_render=plain_render,
            # a one-time build whose bytes do not depend on the workers: use the cores there are
            jobs=default_jobs(),
        )
    )
    folder = root / set
    if not (root / "dataset.json").exists() or not folder.is_dir():
        raise InvalidArgumentError(
            f"dataset_dir {root}: not a complete Morpho-MNIST build with set {set!r} "
            "(build one with: repscope morpho build --out DIR)"
        )
    parts = {}
    for split in ("train", "t10k"):
        pert_path = folder / f"{split}-pert-idx1-ubyte.gz"
        images = idx.read_idx(folder / f"{split}-images-idx3-ubyte.gz")
        labels = idx.read_idx(folder / f"{split}-labels-idx1-ubyte.gz")
        morpho = pd.read_csv(folder / f"{split}-morpho.csv")
        if pert_path.exists():
            pert = idx.read_idx(pert_path)
        elif set in ("thin", "thic", "swel", "frac"):
            code = {"thin": 1, "thic": 2, "swel": 3, "frac": 4}[set]
            pert = np.full(len(images), code, dtype=np.uint8)
        elif set == "plain":
            pert = np.zeros(len(images), dtype=np.uint8)
        else:
            pert = None
        targets = _targets(target, labels, pert, morpho, f"data morpho-mnist set {set!r}")
        parts[split] = (images, targets, labels, morpho, pert)
    train, test = parts["train"], parts["t10k"]
    return TrainingSet(
        train[0],
        train[1],
        test[0],
        test[1],
        target,
        _num_classes(target, train[1], test[1]),
        f"Morpho-MNIST {set} built from {source} (seed {seed}) in {root}",
        train[2].astype(np.int64),
        test[2].astype(np.int64),
        test[3],
        test[4],
    )


# --------------------------------------------------------------------------------------------
# the framework's Dataset

DIGIT_SHAPE = (1, 28, 28)
TARGET_FIELDS = {
    "abnormal": FieldSpec(
        "categorical", (), "int64", 2, ("normal", "abnormal"), "1 when the digit was swollen or fractured"
    ),
    "perturbation": FieldSpec(
        "categorical", (), "int64", 5, ("plain", "thin", "thick", "swollen", "fractured"), "perturbation code"
    ),
    "thickness": FieldSpec("continuous", (), "float32", description="stroke thickness after perturbation, pixels"),
}


def as_dataset(data: TrainingSet, name: str) -> Dataset:
    """A :class:`TrainingSet` as the framework's :class:`Dataset`: fields ``image`` (uint8
    ``(1, 28, 28)``), ``label`` (the class, named for Fashion-MNIST) and the target when it is not the label; splits
    ``train`` and ``test`` (training holds out its validation digits from ``train``). The
    TrainingSet itself is kept in ``extras["training_set"]`` for the studies.

    ``label`` is present when the target is the label or both splits have labels (10 classes, or the
    label target's ``num_classes``); the target field is ``abnormal`` (2 classes), ``perturbation``
    (5 classes) or ``thickness`` (float32, pixels); a ``none`` target gives a dataset without target.

    Parameters
    ----------
    data : TrainingSet
        As :func:`load_digits` or :func:`load_morpho_mnist` return it.
    name : str
        Registry name of the dataset (``"digits"``, ``"morpho-mnist"``).

    Returns
    -------
    Dataset
        Splits ``train`` and ``test`` (:class:`~repscope.data.datasets.ArraySplit`, images served as
        ``(N, 1, 28, 28)`` without copying), the fields above and ``data.description``.
    """
    labels = {"train": data.train_labels, "test": data.test_labels}
    target = None if data.target == "none" else data.target
    fields = {"image": FieldSpec("image", DIGIT_SHAPE, "uint8", description="digit, 0-255")}
    has_labels = target == "label" or all(v is not None for v in labels.values())
    if has_labels:
        # MNIST-format sources hold ten classes; a label target counts the classes it saw
        classes = data.num_classes if target == "label" else 10
        names = data.class_names if len(data.class_names) == classes else ()
        fields["label"] = FieldSpec("categorical", (), "int64", classes, names, description="class")
    if target not in (None, "label"):
        fields[target] = TARGET_FIELDS[target]
    splits = {}
    for split, images, targets in (
        ("train", data.train_images, data.train_targets),
        ("test", data.test_images, data.test_targets),
    ):
        arrays = {"image": images}
        if has_labels:
            arrays["label"] = (targets if target == "label" else labels[split]).astype(np.int64)
        if target not in (None, "label"):
            arrays[target] = targets
        splits[split] = ArraySplit(arrays, image_shapes={"image": DIGIT_SHAPE})
    return Dataset(name, splits, fields, target, data.description, {"training_set": data})


@functools.wraps(load_digits)
def digits_dataset(*args, **kwargs) -> Dataset:  # noqa: D103 -- the docstring is load_digits'
    return as_dataset(load_digits(*args, **kwargs), "digits")


@functools.wraps(load_morpho_mnist)
def morpho_mnist_dataset(*args, **kwargs) -> Dataset:  # noqa: D103 -- the docstring is load_morpho_mnist's
    return as_dataset(load_morpho_mnist(*args, **kwargs), "morpho-mnist")

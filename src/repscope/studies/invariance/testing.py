"""Invariance testing of one classifier (ML4ML deployment workflow): signals, variance matrices, features.

For a transformation family ``t_0 .. t_n`` (:mod:`repscope.data.invariance.transforms`) and the test
images, every image is transformed ``n + 1`` times and passed through the model once per transformation
(batched); probes (:mod:`repscope.models.probes`) read the signal sets at each position, and a modality
``f@position`` keeps one number per example and transformation, ``f(S)`` with ``f`` max or mean. The
paper's five modalities give five variance matrices (:func:`repscope.metrics.invariance.variance_matrix.
variance_matrix`), each with its 16 features (:mod:`repscope.metrics.invariance.features`, sensitivity
against a seeded 90% subsample of the examples), and the robust accuracy of Eq. 1 (the fraction of
examples classified correctly under every transformation).

**Reference compat** (``compat="reference"``, the authors' released code, Zukang-Liao/ML4ML-invariance-testing):
``save_invariance_results.py``, ``robostacc`` (its ``act_overll_metrics``) keeps, at the two convolution
layers it measures, the overall ``max`` and ``max_mean`` (each channel's maximum over its positions, then
the mean over the channels) where the paper prints ``max`` and ``mean``; ``datamat.py``,
``load_actoverall`` / ``get_corr_incorr_split`` split the examples by whether they are classified
correctly at the identity, and ``ML4MLassessor.py``, ``prepare_dataset`` (``corrs = ["corr"]``) reads
only the features of the correctly classified ones. :data:`REFERENCE_MODALITIES` and ``correct_only``
reproduce both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from repscope.data.invariance.transforms import TransformFamily
from repscope.errors import InvalidArgumentError
from repscope.fileio import save_npy_atomic
from repscope.metrics.invariance.features import matrix_features
from repscope.metrics.invariance.variance_matrix import subsample_rows, variance_matrix
from repscope.models.probes import convolution_names, recording, resolve_positions
from repscope.progress import progress_bar
from repscope.studies.invariance.assessor_files import assessor_verdict, check_assessors, load_assessors
from repscope.studies.invariance.classifiers import (
    draw_test_examples,
    is_outside_source,
    load_classifier,
    load_outside_classifier,
)

# the paper's five matrices (Sec. V): max@CONF, max@CONV-1, mean@CONV-1, max@CONV-2, mean@CONV-2
PAPER_MODALITIES: tuple[tuple[str, str], ...] = (
    ("max", "CONF"),
    ("max", "CONV-1"),
    ("mean", "CONV-1"),
    ("max", "CONV-2"),
    ("mean", "CONV-2"),
)
# the released code's five matrices: max_mean where the paper has mean at the convolutions
REFERENCE_MODALITIES: tuple[tuple[str, str], ...] = (
    ("max", "CONF"),
    ("max", "CONV-1"),
    ("max_mean", "CONV-1"),
    ("max", "CONV-2"),
    ("max_mean", "CONV-2"),
)
COMPAT_MODES = ("paper", "reference")
# what a network whose convolutions forward hooks cannot reach (TorchScript, torch.export, ONNX) gives
OUTPUT_ONLY_MODALITIES: tuple[tuple[str, str], ...] = (("max", "CONF"),)
# statistics of a flattened signal set (B, n_signals)
STATISTICS = {"max": lambda s: s.amax(dim=1), "mean": lambda s: s.mean(dim=1)}
# statistics of a position's output as the layer gives it, (B, C, ...): channels on dim 1
CHANNEL_STATISTICS = {"max_mean": lambda s: channel_max_mean(s)}


def channel_max_mean(output: torch.Tensor) -> torch.Tensor:
    """``max_mean`` of the released code: each channel's maximum over its positions, then their mean.

    For a convolution's ``(B, C, H, W)`` output, ``mean_c max_{h,w} output[b, c, h, w]`` (the reference's
    ``np.mean(np.max(mat.reshape(B, C, -1), axis=2), axis=1)``); a ``(B, C)`` output has one position per
    channel, so its ``max_mean`` is the mean.

    Parameters
    ----------
    output : torch.Tensor
        ``(B, C, ...)``, at least 2-d.

    Returns
    -------
    torch.Tensor
        ``(B,)``.
    """
    if output.ndim < 2:
        raise InvalidArgumentError(f"output: max_mean needs (batch, channels, ...), got shape {tuple(output.shape)}")
    return output.reshape(output.shape[0], output.shape[1], -1).amax(dim=2).mean(dim=1)


def compat_modalities(compat: str) -> tuple[tuple[str, str], ...]:
    """The five modalities of a compat mode: the paper's, or the released code's.

    Parameters
    ----------
    compat : {"paper", "reference"}
        ``paper``: :data:`PAPER_MODALITIES`; ``reference``: :data:`REFERENCE_MODALITIES`.

    Returns
    -------
    tuple of (statistic, position)
    """
    if compat not in COMPAT_MODES:
        raise InvalidArgumentError(f"compat: expected one of {', '.join(COMPAT_MODES)}, got {compat!r}")
    return PAPER_MODALITIES if compat == "paper" else REFERENCE_MODALITIES


def _position_outputs(
    model: nn.Module, images: torch.Tensor, positions: dict[str, str | None]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One forward pass: logits and each position's output in the layer's own shape (CONF: the softmax)."""
    names = [name for name in positions.values() if name is not None]
    with torch.no_grad(), recording(model, names) as outputs:
        logits = model(images)
    return logits, {p: torch.softmax(logits, dim=1) if n is None else outputs[n] for p, n in positions.items()}


def modality_name(statistic: str, position: str) -> str:
    """``"max@CONF"``: how files, tables and features name a modality."""
    return f"{statistic}@{position}"


@dataclass
class InvarianceSignals:
    """Per-example statistics of a model under a family of transformations.

    Attributes
    ----------
    values : dict of str to numpy.ndarray
        Modality -> ``(N, T)`` float64 ``f(S_t(x))``, for the kept examples.
    correct : numpy.ndarray
        ``(N_all, T)`` bool: example classified correctly under each transformation.
    kept : numpy.ndarray
        ``(N_all,)`` bool: the examples the values hold (all, or those correct at the identity).
    family : TransformFamily
        The transformations.
    """

    values: dict[str, np.ndarray]
    correct: np.ndarray
    kept: np.ndarray
    family: TransformFamily
    positions: dict[str, str | None] = field(default_factory=dict)


def model_signals(
    model: nn.Module,
    images: Any,
    labels: Any,
    family: TransformFamily,
    modalities: tuple[tuple[str, str], ...] = PAPER_MODALITIES,
    batch_size: int = 500,
    correct_only: bool = False,
    progress: bool | None = None,
) -> InvarianceSignals:
    """Transform every image ``len(family)`` times, run the model, keep each modality's statistic.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier mapping float images ``(B, C, H, W)`` in [0, 1] to logits.
    images : array-like
        ``(N, C, H, W)`` uint8 or floats in [0, 1].
    labels : array-like
        ``(N,)`` classes.
    family : TransformFamily
        The transformations.
    modalities : tuple of (statistic, position)
        Statistics ``max`` / ``mean`` (of the flattened signal set) or ``max_mean`` (:func:`channel_max_mean`)
        at positions ``CONF``, ``CONV-1``, ``CONV-2`` or module names.
    batch_size : int
        Images per forward pass.
    correct_only : bool
        Keep only the examples classified correctly at the identity transformation.
    progress : bool, optional
        False shows no bar.

    Returns
    -------
    InvarianceSignals

    Raises
    ------
    InvalidArgumentError
        A bad statistic or position, images and labels of different lengths, or no example left.
    """
    for statistic, _ in modalities:
        if statistic not in STATISTICS and statistic not in CHANNEL_STATISTICS:
            known = ", ".join([*STATISTICS, *CHANNEL_STATISTICS])
            raise InvalidArgumentError(f"modality: statistic {statistic!r} is not one of {known}")
    positions = resolve_positions(model, list(dict.fromkeys(position for _, position in modalities)))
    pixels = torch.as_tensor(np.asarray(images))
    pixels = pixels.float() / 255.0 if pixels.dtype == torch.uint8 else pixels.float()
    targets = torch.as_tensor(np.asarray(labels)).long()
    if pixels.ndim != 4 or len(pixels) != len(targets) or len(pixels) == 0:
        raise InvalidArgumentError(
            f"images, labels: expected (N, C, H, W) images and N labels, got {tuple(pixels.shape)} and {len(targets)}"
        )
    device = next(model.parameters(), torch.zeros(())).device
    count, steps = len(pixels), len(family)
    values = {modality_name(*m): np.empty((count, steps)) for m in modalities}
    correct = np.empty((count, steps), bool)
    model.eval()
    with progress_bar(f"{family.name}: {steps} transformations of {count} images", count, progress) as update:
        for start in range(0, count, batch_size):
            batch = pixels[start : start + batch_size].to(device)
            rows = slice(start, start + len(batch))
            for step in range(steps):
                logits, outputs = _position_outputs(model, family.transform(batch, step), positions)
                correct[rows, step] = (logits.argmax(dim=1).cpu() == targets[rows]).numpy()
                for statistic, position in modalities:
                    output = outputs[position].double()
                    if statistic in CHANNEL_STATISTICS:
                        summary = CHANNEL_STATISTICS[statistic](output)
                    else:
                        summary = STATISTICS[statistic](output.reshape(output.shape[0], -1))
                    values[modality_name(statistic, position)][rows, step] = summary.cpu().numpy()
            update(rows.stop)
    identity = steps // 2
    kept = correct[:, identity] if correct_only else np.ones(count, bool)
    if not kept.any():
        raise InvalidArgumentError("correct_only: no test example is classified correctly at the identity")
    return InvarianceSignals({k: v[kept] for k, v in values.items()}, correct, kept, family, positions)


def robust_accuracy(correct: Any) -> float:
    """Eq. 1 with correctness: the fraction of examples classified correctly under every transformation.

    Parameters
    ----------
    correct : array-like of shape (N, T)
        Whether each example is classified correctly under each transformation.

    Returns
    -------
    float
    """
    return float(np.mean(np.all(np.asarray(correct, bool), axis=1)))


def matrices_and_features(
    signals: InvarianceSignals, subsample_fraction: float = 0.9, seed: int = 0, tau: float = 0.15
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, float]]]:
    """Each modality's variance matrix and its 16 features (sensitivity against a seeded subsample).

    Parameters
    ----------
    signals : InvarianceSignals
        :func:`model_signals`.
    subsample_fraction : float, default 0.9
        The sensitivity feature's r.
    seed : int, default 0
        Seed of the subsample.
    tau : float, default 0.15
        The significant-variance threshold.

    Returns
    -------
    tuple of dict
        Modality -> ``(T, T)`` matrix, and modality -> features.
    """
    matrices, features = {}, {}
    for name, values in signals.values.items():
        matrices[name] = variance_matrix(values)
        rows = subsample_rows(len(values), subsample_fraction, seed)
        subsample = variance_matrix(values[rows])
        features[name] = matrix_features(matrices[name], subsample, tau=tau)
    return matrices, features


def released_subsample_rows(count: int, fraction: float = 0.9, seed: int = 0) -> np.ndarray:
    """The sensitivity subsample as the authors' released code draws it: row indices, sorted.

    Zukang-Liao/ML4ML-invariance-testing, ``datamat.py``, ``get_corr_incorr_split`` and ``load_actoverall``
    (``r = 0.9`` set by ``measurement.py``): ``numpy.random.seed(seed)``, then ``numpy.random.choice(
    range(count), int(count * r), replace=False)``. The size is truncated (15 rows at 0.9 give 13, where
    the paper's :func:`~repscope.metrics.invariance.variance_matrix.subsample_rows` rounds to 14) and the
    rows come from numpy's legacy Mersenne-Twister stream (``numpy.random.RandomState``, which numpy keeps
    unchanged across versions), so the same seed picks the released code's rows of the same examples.

    Parameters
    ----------
    count : int
        Rows (test examples).
    fraction : float, default 0.9
        The released code's ``r``, in (0, 1].
    seed : int, default 0
        The released code's ``--seed`` (its default is 2).

    Returns
    -------
    numpy.ndarray
        int64 indices.

    Raises
    ------
    InvalidArgumentError
        When ``fraction`` is not in (0, 1] or the subsample would be empty.
    """
    if not 0 < fraction <= 1:
        raise InvalidArgumentError(f"subsample_fraction: expected a number in (0, 1], got {fraction!r}")
    size = int(count * fraction)
    if size < 1:
        raise InvalidArgumentError(f"subsample_fraction: {fraction} of {count} examples is empty")
    return np.sort(np.random.RandomState(seed).choice(count, size, replace=False)).astype(np.int64)


def reference_features(
    signals: InvarianceSignals, subsample_fraction: float = 0.9, seed: int = 0, tau: float = 0.15
) -> dict[str, dict[str, float]]:
    """Each modality's features as the authors' released code computes them (keys ``<feature>_reference``).

    The features are :func:`repscope.metrics.invariance.features.reference_matrix_features`. Their
    sensitivity follows ``datamat.py``, ``get_corr_incorr_split`` / ``load_actoverall``: the subsample
    of ``r = 0.9`` is drawn from *all* the test examples as that code draws it
    (:func:`released_subsample_rows`), and the examples kept (correct at the identity, with
    ``correct_only``) are then taken from it; the paper's subsample (:func:`matrices_and_features`) is
    drawn from the kept examples.

    Parameters
    ----------
    signals : InvarianceSignals
        :func:`model_signals`.
    subsample_fraction : float, default 0.9
        The released code's ``r``.
    seed : int, default 0
        Seed of the subsample (over all examples; the released ``measurement.py`` defaults to 2).
    tau : float, default 0.15
        The significant-variance threshold.

    Returns
    -------
    dict
        Modality -> features.
    """
    from repscope.metrics.invariance.features import matrix_features as features_of  # noqa: PLC0415

    drawn = released_subsample_rows(len(signals.kept), subsample_fraction, seed)
    rows = np.flatnonzero(np.isin(np.flatnonzero(signals.kept), drawn))
    if len(rows) < 2:
        raise InvalidArgumentError(
            f"subsample_fraction: {len(rows)} kept example(s) in the subsample; the sensitivity needs 2 or more"
        )
    return {
        name: features_of(variance_matrix(values), variance_matrix(values[rows]), tau=tau, compat="reference")
        for name, values in signals.values.items()
    }


def network_modalities(network: nn.Module, compat: str) -> tuple[tuple[str, str], ...]:
    """The modalities a test of ``network`` can measure: the compat's five (:func:`compat_modalities`) when
    forward hooks reach two convolution modules of it, else :data:`OUTPUT_ONLY_MODALITIES` (a TorchScript,
    ``torch.export`` or ONNX model shows no layers to hook; a network without two convolutions has no
    ``CONV-1`` / ``CONV-2``).

    Parameters
    ----------
    network : torch.nn.Module
        The classifier to test.
    compat : {"paper", "reference"}
        The test's compat.

    Returns
    -------
    tuple of (statistic, position)
    """
    modalities = compat_modalities(compat)
    return modalities if len(convolution_names(network)) >= 2 else OUTPUT_ONLY_MODALITIES


@dataclass(frozen=True)
class InvarianceTestResult:
    """One classifier tested under a family of transformations: matrices, features, accuracies, verdict.

    Attributes
    ----------
    transform : str
        The family's name.
    values : tuple of float
        ``V`` of each transformation (the identity in the middle).
    unit : str
        How ``values`` read (``"degrees"``, ``"fraction"``, ``"factor"``).
    compat : {"paper", "reference"}
        Which modalities (:func:`compat_modalities`).
    correct_only : bool
        Whether the matrices hold only the examples classified correctly at the identity.
    matrices : dict of str to numpy.ndarray
        Modality -> ``(T, T)`` variance matrix.
    features : dict
        Modality -> the paper's 16 features (:func:`matrices_and_features`).
    features_reference : dict, optional
        ``compat="reference"``: modality -> the released code's features (:func:`reference_features`).
    correct : numpy.ndarray
        ``(N, T)`` bool: each test example classified correctly under each transformation.
    kept : numpy.ndarray
        ``(N,)`` bool: the examples the matrices hold.
    robust_accuracy : float
        Eq. 1 (:func:`robust_accuracy`).
    accuracy : float
        Accuracy at the identity.
    verdict : dict of str to int, optional
        Each assessor's verdict (1 invariant, 0 variant), when assessors were given.
    """

    transform: str
    values: tuple[float, ...]
    unit: str
    compat: str
    correct_only: bool
    matrices: dict[str, np.ndarray]
    features: dict[str, dict[str, float]]
    features_reference: dict[str, dict[str, float]] | None
    correct: np.ndarray
    kept: np.ndarray
    robust_accuracy: float
    accuracy: float
    verdict: dict[str, int] | None = None

    @property
    def test_examples(self) -> int:
        """Test examples the model saw."""
        return len(self.kept)

    @property
    def examples(self) -> int:
        """Test examples the matrices hold."""
        return int(self.kept.sum())

    @property
    def features_table(self) -> pd.DataFrame:
        """The paper's features, one row per modality (column ``modality`` first)."""
        return pd.DataFrame(self.features).T.rename_axis("modality").reset_index()


def compute_invariance_test(
    network: nn.Module,
    images: Any,
    labels: Any,
    family: TransformFamily,
    compat: str = "paper",
    correct_only: bool = False,
    batch_size: int = 500,
    seed: int = 0,
    assessors: dict[str, Any] | None = None,
    assessor_source: str | Path = "assessors",
    progress: bool | None = None,
    modalities: tuple[tuple[str, str], ...] | None = None,
) -> InvarianceTestResult:
    """Test a classifier on test examples: signals, variance matrices, features, accuracies; writes nothing.

    Parameters
    ----------
    network : torch.nn.Module
        A classifier of float images in [0, 1] (:func:`model_signals`), in eval mode.
    images, labels : array-like
        ``(N, C, H, W)`` test images and their ``(N,)`` classes.
    family : TransformFamily
        The transformations.
    compat : {"paper", "reference"}
        ``paper``: the paper's five modalities; ``reference``: the released code's
        (:data:`REFERENCE_MODALITIES`, correctly classified examples only, and its features beside the paper's).
    correct_only : bool
        Keep only the examples classified correctly at the identity (always so with ``compat="reference"``).
    batch_size : int
        Images per forward pass.
    seed : int
        Seed of the sensitivity subsamples.
    assessors : dict, optional
        Assessors as :func:`repscope.studies.invariance.assessor_files.load_assessors` returns them: adds their verdict.
    assessor_source : str or Path
        How messages name the assessors (their file).
    progress : bool, optional
        False shows no bar.
    modalities : tuple of (statistic, position), optional
        Other modalities than the compat's five (:func:`network_modalities`: ``max@CONF`` alone for a
        network whose convolutions hooks cannot reach).

    Returns
    -------
    InvarianceTestResult
    """
    modalities = modalities or compat_modalities(compat)
    compat_modalities(compat)  # an unknown compat is refused whatever the modalities
    correct_only = correct_only or compat == "reference"
    signals = model_signals(
        network, images, labels, family, modalities, batch_size=batch_size, correct_only=correct_only, progress=progress
    )
    matrices, features = matrices_and_features(signals, seed=seed)
    features_reference = reference_features(signals, seed=seed) if compat == "reference" else None
    verdict = None
    if assessors is not None:
        both = {m: {**v, **(features_reference or {}).get(m, {})} for m, v in features.items()}
        verdict = assessor_verdict(assessors, both, family.name, assessor_source)
    identity = len(family) // 2
    return InvarianceTestResult(
        transform=family.name,
        values=tuple(family.values),
        unit=family.unit,
        compat=compat,
        correct_only=correct_only,
        matrices=matrices,
        features=features,
        features_reference=features_reference,
        correct=signals.correct,
        kept=signals.kept,
        robust_accuracy=robust_accuracy(signals.correct),
        accuracy=float(signals.correct[:, identity].mean()),
        verdict=verdict,
    )


def matrix_file_stem(modality: str) -> str:
    """``"max_at_CONF"``: how a modality names its matrix file (no ``@`` in file names)."""
    return modality.replace("@", "_at_")


def invariance_test_metrics(result: InvarianceTestResult) -> dict[str, Any]:
    """The headline numbers of ``metrics.json``: accuracies, example count, family, compat, features, verdict."""
    metrics: dict[str, Any] = {
        "robust_accuracy": result.robust_accuracy,
        "accuracy": result.accuracy,
        "examples": result.examples,
        "transform": result.transform,
        "compat": result.compat,
        "features": result.features,
    }
    if result.features_reference is not None:
        metrics["features_reference"] = result.features_reference
    if result.verdict is not None:
        metrics["verdict"] = result.verdict
    return metrics


def write_invariance_test(result: InvarianceTestResult, run: Any) -> dict[str, Any]:
    """Write ``matrices/*.npy``, ``metrics.json`` and ``tables/features.csv`` into a run directory.

    Parameters
    ----------
    result : InvarianceTestResult
        :func:`compute_invariance_test`.
    run : repscope.run_directory.RunDirectory
        The run to write into.

    Returns
    -------
    dict
        The metrics written (:func:`invariance_test_metrics`).
    """
    for name, matrix in result.matrices.items():
        save_npy_atomic(run.path("matrices", f"{matrix_file_stem(name)}.npy"), matrix)
    metrics = invariance_test_metrics(result)
    run.write_metrics(metrics)
    run.write_table("features", result.features_table)
    return metrics


def invariance_test_report(
    result: InvarianceTestResult, run: Any, model: str | Path, data_name: str, assessor: str | Path | None = None
) -> Any:
    """The report of a test: accuracies, the assessors' verdict, a heat map per matrix (saved in the run), features.

    Parameters
    ----------
    result : InvarianceTestResult
        :func:`compute_invariance_test`.
    run : repscope.run_directory.RunDirectory
        Where the heat maps are saved (``figures/matrix_*.png``).
    model : str or Path
        The model tested (named in the subtitle).
    data_name : str
        Its dataset (named in the subtitle).
    assessor : str or Path, optional
        The assessors' file (named above their verdict).

    Returns
    -------
    repscope.report.Report
    """
    from repscope.report import Report  # noqa: PLC0415
    from repscope.report.figures import variance_heatmap  # noqa: PLC0415

    subtitle = f"{model} on {data_name}, {result.test_examples} test images"
    report = Report(f"Invariance test: {result.transform}", subtitle=subtitle)
    report.add_metrics(
        {"robust accuracy (Eq. 1)": result.robust_accuracy, "accuracy at the identity": result.accuracy},
        title="Accuracy",
    )
    if result.verdict is not None:
        report.add_metrics(
            {name: "invariant" if value else "variant" for name, value in result.verdict.items()},
            title=f"Assessors' verdict ({assessor})",
        )
    for name, matrix in result.matrices.items():
        figure = variance_heatmap(matrix, result.values, title=name, unit=result.unit)
        report.add_figure(run.save_figure(f"matrix_{matrix_file_stem(name)}", figure), caption=name)
    report.add_table(result.features_table, title="The 16 features of each variance matrix")
    return report


def read_test_assessors(assessor: str | Path, transform: str, compat: str) -> dict[str, Any]:
    """Assessors for a test, refused when broken or trained for another family or other modalities.

    Parameters
    ----------
    assessor : str or Path
        ``assessors.skops`` of ``repscope invariance assess train``.
    transform : str
        The family of the test.
    compat : {"paper", "reference"}
        The test's modalities (:func:`compat_modalities`).

    Returns
    -------
    dict
        As :func:`repscope.studies.invariance.assessor_files.load_assessors` returns.
    """
    saved = load_assessors(assessor)
    check_assessors(assessor, saved, transform, [modality_name(*modality) for modality in compat_modalities(compat)])
    return saved


def run_invariance_test(
    model: str | Path,
    out: Path,
    transform: str = "rotation",
    arch: str | None = None,
    data: str | None = None,
    data_params: dict[str, Any] | None = None,
    n: int = 1000,
    half_range: float | None = None,
    steps: int = 31,
    correct_only: bool = False,
    batch_size: int = 500,
    seed: int = 0,
    assessor: str | Path | None = None,
    compat: str = "paper",
    model_args: dict[str, Any] | None = None,
    weights: str | Path | None = None,
) -> dict[str, Any]:
    """Test one classifier: matrices (``matrices/*.npy``), features, robust accuracy, heat maps, report.

    Loads the model and a seeded draw of its test split, computes (:func:`compute_invariance_test`), writes
    (:func:`write_invariance_test`) and writes the report (:func:`invariance_test_report`).

    Parameters
    ----------
    model, arch, data, data_params
        As :func:`load_classifier`.
    out : Path
        The run directory to write (the caller applies the output rule).
    transform : {"rotation", "brightness", "scale"}
        The family (the paper's range and 31 steps unless ``half_range`` / ``steps`` say otherwise).
    n : int
        Test images (a seeded draw of the test split; all when fewer).
    half_range, steps
        The family's range and count.
    correct_only : bool
        Keep the examples classified correctly at the identity.
    batch_size : int
        Images per forward pass.
    seed : int
        Seed of the draw and of the sensitivity subsample.
    assessor : str or Path, optional
        ``assessors.skops`` of ``repscope invariance assess train``: adds each assessor's verdict. Read,
        and checked against ``transform`` and the modalities, before the test runs.
    compat : {"paper", "reference"}
        ``paper``: the paper's five modalities; ``reference``: the released code's
        (:data:`REFERENCE_MODALITIES`, correctly classified examples only), as a repository built with
        ``compat: reference`` has them. A network whose convolutions hooks cannot reach (TorchScript,
        ``torch.export``, ONNX) is tested on ``max@CONF`` alone (:func:`network_modalities`).
    model_args, weights : optional
        A factory's keyword arguments and state_dict file (:func:`load_classifier`).

    Returns
    -------
    dict
        The metrics written to ``metrics.json``: ``robust_accuracy``, ``accuracy`` (at the identity),
        ``examples``, ``compat`` and ``features`` per modality; with ``compat="reference"`` also
        ``features_reference`` (:func:`reference_features`); and ``report`` (the report's path).
    """
    from repscope.data.invariance.transforms import transform_family  # noqa: PLC0415
    from repscope.run_directory import RunDirectory  # noqa: PLC0415

    compat_modalities(compat)  # an unknown compat is refused before anything loads
    family = transform_family(transform, half_range, steps)
    saved = None
    if assessor is not None:  # a broken or mismatched file is refused before the test runs
        saved = read_test_assessors(assessor, transform, compat)
    network, dataset, data_name, params = load_classifier(
        model, arch, data, data_params, model_args=model_args, weights=weights
    )
    if dataset.target_kind != "classification":
        raise InvalidArgumentError(f"--data {data_name}: needs a class target to test a classifier")
    modalities = network_modalities(network, compat)
    if saved is not None and modalities == OUTPUT_ONLY_MODALITIES:
        raise InvalidArgumentError(
            f"--assessor {assessor}: the model {model} has no two convolution layers forward hooks can reach "
            "(TorchScript, torch.export or ONNX), so only max@CONF is measured; the assessors read five modalities"
        )
    batch = draw_test_examples(dataset, n, seed)
    result = compute_invariance_test(
        network,
        batch["image"],
        batch["target"],
        family,
        compat=compat,
        correct_only=correct_only,
        batch_size=batch_size,
        seed=seed,
        assessors=saved,
        assessor_source=assessor or "assessors",
        modalities=modalities,
    )
    run = RunDirectory.create("invariance-test", out=out)
    run.write_config(
        {"model": str(model), "arch": arch, "data": {"name": data_name, "params": params}, "transform": transform,
         "values": list(family.values), "n": result.test_examples, "correct_only": result.correct_only,
         "seed": seed, "compat": compat, "modalities": [modality_name(*m) for m in modalities],
         **({"model_args": dict(model_args)} if model_args else {}),
         **({"weights": str(weights)} if weights is not None else {})}
    )  # fmt: skip
    metrics = write_invariance_test(result, run)
    metrics["report"] = str(run.write_report(invariance_test_report(result, run, model, data_name, assessor)))
    return metrics


__all__ = [
    "CHANNEL_STATISTICS",
    "InvarianceTestResult",
    "compute_invariance_test",
    "invariance_test_metrics",
    "invariance_test_report",
    "matrix_file_stem",
    "read_test_assessors",
    "write_invariance_test",
    "COMPAT_MODES",
    "PAPER_MODALITIES",
    "REFERENCE_MODALITIES",
    "STATISTICS",
    "channel_max_mean",
    "compat_modalities",
    "load_classifier",
    "load_outside_classifier",
    "is_outside_source",
    "network_modalities",
    "OUTPUT_ONLY_MODALITIES",
    "run_invariance_test",
    "draw_test_examples",
    "InvarianceSignals",
    "matrices_and_features",
    "model_signals",
    "reference_features",
    "released_subsample_rows",
    "modality_name",
    "robust_accuracy",
]

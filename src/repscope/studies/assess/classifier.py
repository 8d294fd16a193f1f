"""The classifier role of ``repscope assess``: the ML4ML invariance test, black-box attacks, Raw Zero-Shot.

:func:`assess_classifier` takes any object with ``soft_labels(images)`` and ``predict(images)`` (a
:class:`repscope.models.external.ImageClassifier`, a repscope run's ``SupervisedTask``) and labelled images
(:class:`~repscope.studies.assess.label_data.LabelData`), and reuses the studies' compute steps:

- **invariance** (ML4ML, Sec. III-V), per transformation family (the paper's rotation -15..15 degrees,
  brightness -30%..+30%, scale x0.7..x1.3, 31 steps each: ranges in degrees and fractions, so they fit any
  image size): :func:`repscope.studies.invariance.testing.compute_invariance_test` on the classifier's
  ``network`` (an ``nn.Module`` of float [0, 1] ``(B, C, H, W)`` images to logits), giving the variance
  matrices of the five modalities, their 16 features, the accuracy and the robust accuracy of Eq. 1 (the
  fraction of images classified correctly under every transformation), and with trained assessors their
  verdict. Forward hooks cannot reach inside an ONNX or TorchScript model (no convolution module to hook),
  so such a network is tested on the output-only modality ``max@CONF``; a classifier without ``network`` is
  wrapped as one whose logits are the log of its soft-labels (same softmax, same argmax).
- **attacks** (Raw Zero-Shot, Sec. 4, Table 1): :func:`repscope.studies.zeroshot.attack_study.
  compute_classifier_attacks`, the L0 pixel and L-infinity threshold attacks with CMA-ES, searched as the
  adversarial-robustness-toolbox does (``art``) and/or as the authors' DQA code does (``dqa``), on images the
  classifier gets right; the success rate per norm and threshold.
- **zeroshot**: the Raw Zero-Shot soft-label metrics of :mod:`repscope.studies.assess.zeroshot`, merged in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.studies.assess.assessment import Assessment, HeadlineRow
from repscope.studies.assess.label_data import LabelData
from repscope.validation import check_positive_int, check_seed

__all__ = [
    "PAPER_FAMILIES",
    "SEARCH_CHOICES",
    "SoftLabelNetwork",
    "assess_classifier",
    "attack_assessment",
    "classifier_network",
    "invariance_assessment",
]

PAPER_FAMILIES = ("rotation", "brightness", "scale")  # ML4ML's three workflows (Sec. V)
SEARCH_CHOICES = ("art", "dqa", "both")
BOOTSTRAP_RESAMPLES = 200
ATTACK_N = 100  # images attacked: the paper's 100 (Table 1)
# repscope's own measurement (README, invariance section): a CNN5 trained 3 epochs on the MNIST sample
# (test accuracy 0.947), rotation robust accuracy on 1,000 test digits, paper modalities and range
REPSCOPE_ROTATION = (0.787, "README: CNN5, 3 epochs on the MNIST sample, 1,000 test digits")
# repscope's own attacks (README, Raw Zero-Shot section): LeNet-5 on Fashion-MNIST, 20 images, thresholds
# 1/3/5/10, both norms: successes of 160 attacks per search
REPSCOPE_ATTACK_TOTALS = {"dqa": 4 / 160, "art": 19 / 160}
REPSCOPE_ATTACK_SOURCE = "README: LeNet-5 on Fashion-MNIST, 20 images x 2 norms x thresholds 1/3/5/10"
NORM_TITLES = {"l0": "L0", "linf": "L-infinity"}
OUTPUT_ONLY = (
    "invariance: the network has no two convolution modules forward hooks can reach (ONNX, TorchScript or a "
    "soft-labels-only classifier), so only the output modality max@CONF was measured"
)
# the architecture whose Table 1 row the headline sets beside a model (its source names the others' counts)
PAPER_ARCHITECTURE = "LeNet"


class SoftLabelNetwork(nn.Module):
    """A classifier known only by ``soft_labels`` as a torch module: logits ``log p`` (softmax gives ``p``).

    Parameters
    ----------
    classifier : object
        Has ``soft_labels(images)`` on float [0, 1] ``(N, C, H, W)`` images, rows summing to 1.
    """

    def __init__(self, classifier: Any) -> None:
        super().__init__()
        self.classifier = classifier

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Log soft-labels of a float [0, 1] batch ``(B, C, H, W)`` (floored at 1e-30 so no -inf)."""
        probabilities = np.asarray(self.classifier.soft_labels(images.detach().cpu().numpy()), dtype=np.float64)
        return torch.log(torch.as_tensor(probabilities).clamp_min(1e-30)).to(images.device)


def classifier_network(classifier: Any) -> tuple[nn.Module, bool]:
    """The torch module the invariance test probes, and whether its convolutions can be hooked.

    Parameters
    ----------
    classifier : object
        ``network`` (an adapter's, or a ``SupervisedTask``'s trained network, as
        :func:`repscope.studies.invariance.testing.load_classifier` takes it), else only ``soft_labels``.

    Returns
    -------
    (torch.nn.Module, bool)
        The network (:class:`SoftLabelNetwork` when there is none), and True when it has the two
        convolution modules the paper's ``CONV-1`` / ``CONV-2`` positions need.
    """
    from repscope.models.probes import convolution_names  # noqa: PLC0415

    network = getattr(classifier, "network", None)
    if not isinstance(network, nn.Module):
        network = SoftLabelNetwork(classifier)
    return network, len(convolution_names(network)) >= 2


def _accuracy_scores(factors: np.ndarray, codes: np.ndarray, identity: int = 0) -> dict[str, float]:
    """Accuracy at the identity and robust accuracy (Eq. 1) of ``(N, T)`` 0/1 correctness rows (``codes``)."""
    del factors  # the bootstrap hands both arrays; the correctness rows are all this needs
    return {"accuracy": float(codes[:, identity].mean()), "robust_accuracy": float(codes.all(axis=1).mean())}


def _bootstrap(scores: Callable[..., dict[str, float]], rows: np.ndarray, resamples: int, seed: int, **params: Any):
    """Percentile intervals (:func:`repscope.metrics.disentanglement.bootstrap.bootstrap_interval`) over rows;
    none below 2 resamples."""
    if resamples < 2:
        return {}
    from repscope.metrics.disentanglement.bootstrap import bootstrap_interval  # noqa: PLC0415

    return bootstrap_interval(scores, rows, rows, resamples, seed=seed, **params)


def _row(assessment: str, metric: str, value: float, interval: dict, **fields: Any) -> HeadlineRow:
    """A headline row with the bootstrap ``interval``'s ends (none when empty)."""
    return HeadlineRow(assessment, metric, value, ci_low=interval.get("low"), ci_high=interval.get("high"), **fields)


def _read_assessors(assessor: str | Path | None, compat: str) -> dict[str, Any]:
    """Trained assessors by family, ``(file, assessors)``: one ``assessors.skops``, or every one under a folder."""
    if assessor is None:
        return {}
    from repscope.studies.invariance.assessor_files import ASSESSOR_FILE, load_assessors  # noqa: PLC0415
    from repscope.studies.invariance.testing import read_test_assessors  # noqa: PLC0415

    path = Path(assessor)
    files = sorted(path.rglob(f"*{Path(ASSESSOR_FILE).suffix}")) if path.is_dir() else [path]
    if not files:
        raise InvalidArgumentError(f"--assessor {path}: holds no {ASSESSOR_FILE}")
    found: dict[str, Any] = {}
    for file in files:
        transform = load_assessors(file)["transform"]
        if transform in found:
            raise InvalidArgumentError(f"--assessor {path}: two files hold assessors for {transform}")
        found[transform] = (file, read_test_assessors(file, transform, compat))  # checked against the compat
    return found


def _robust_accuracy_row(result: Any, data: LabelData, family: Any, resamples: int, seed: int) -> HeadlineRow:
    """Eq. 1's robust accuracy beside chance (1 / classes: a constant guess, which no transformation changes),
    its bootstrap interval over the images and repscope's own value for the same setting."""
    identity = len(family) // 2
    correct = result.correct.astype(np.int64)
    interval = _bootstrap(_accuracy_scores, correct, resamples, seed, identity=identity).get("robust_accuracy", {})
    paper_range = tuple(family.values) == tuple(float(v) for v in range(-15, 16))
    digits = data.source.startswith("digits (source=mnist-sample")
    ours = REPSCOPE_ROTATION if family.name == "rotation" and paper_range and digits else (None, None)
    description = (
        f"Eq. 1: share of images classified correctly under all {len(family)} {family.name} transformations "
        f"(accuracy at the identity {result.accuracy:.3f}; equal to it for an invariant classifier; higher is better)"
    )
    return _row(
        f"invariance/{family.name}", "robust_accuracy", result.robust_accuracy, interval,
        chance=1.0 / data.num_classes, repscope=ours[0], repscope_source=ours[1], description=description,
    )  # fmt: skip


def invariance_assessment(
    classifier: Any,
    data: LabelData,
    families: Sequence[str] = PAPER_FAMILIES,
    *,
    compat: str = "paper",
    assessor: str | Path | None = None,
    steps: int = 31,
    bootstrap: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    batch_size: int = 500,
    progress: bool | None = None,
) -> Assessment:
    """The ML4ML invariance test of a classifier under each family (module docstring); writes nothing.

    Parameters
    ----------
    classifier : object
        ``network`` and/or ``soft_labels`` (:func:`classifier_network`).
    data : LabelData
        The test images and classes.
    families : sequence of str
        Families of :data:`repscope.data.invariance.transforms.FAMILIES`, each at the paper's range.
    compat : {"paper", "reference"}
        The paper's modalities or the released code's (:func:`~repscope.studies.invariance.testing.compat_modalities`).
    assessor : str or pathlib.Path, optional
        An ``assessors.skops`` of ``repscope invariance assess train``, or a folder of them (one per family):
        adds each assessor's verdict (1 invariant, 0 variant) for the families they were trained on.
    steps : int, default=31
        Transformations per family (odd; the paper's 31).
    bootstrap : int, default=200
        Resamples of the images for the 95% intervals (below 2: none).
    seed, batch_size, progress
        Seed of the sensitivity subsamples and the bootstrap; images per forward pass; False shows no bar.

    Returns
    -------
    Assessment
        ``metrics["invariance/<family>"]`` (accuracies, features, modalities, verdict), tables
        ``invariance_<family>`` (16 features per modality) and ``invariance_verdicts``, arrays
        ``variance_<family>_<modality>`` (``(T, T)``) and ``correct_<family>`` (``(N, T)`` bool).
    """
    from repscope.data.invariance.transforms import transform_family  # noqa: PLC0415
    from repscope.studies.invariance import testing  # noqa: PLC0415

    testing.compat_modalities(compat)
    built = [transform_family(name, steps=steps) for name in families]  # unknown names refused before any work
    saved = _read_assessors(assessor, compat)
    network, hookable = classifier_network(classifier)
    options = {"batch_size": batch_size, "seed": seed, "progress": progress}
    found = Assessment("classifier", _model_name(classifier), data.source, {}, notes=() if hookable else (OUTPUT_ONLY,))
    for family in built:
        test = {"compat": compat, **options}
        if hookable:
            source, assessors = saved.get(family.name, ("assessors", None))
            test.update(assessors=assessors, assessor_source=source)
        else:  # the test's steps on max@CONF alone, with no assessors (they were trained on five modalities)
            test.update(modalities=testing.OUTPUT_ONLY_MODALITIES)
        result = testing.compute_invariance_test(network, data.images, data.labels, family, **test)
        found = found.merged(_family_assessment(found, result, data, family, bootstrap, seed))
    lost = sorted(set(saved) - {family.name for family in built} if hookable else set(saved))
    notes = [f"invariance: assessors for {name} were given but not applied" for name in lost]
    verdicts = [
        (key.split("/", 1)[1], name, value)
        for key, values in found.metrics.items()
        for name, value in values.get("verdict", {}).items()
    ]
    tables = {"invariance_verdicts": pd.DataFrame(verdicts, columns=["family", "assessor", "invariant"])}
    settings = {"families": list(families), "compat": compat, "steps": steps, "bootstrap": bootstrap}
    settings.update(assessor=None if assessor is None else str(assessor), output_only=not hookable)
    tail = Assessment(found.role, found.model, found.data, {}, tables=tables if verdicts else {}, notes=tuple(notes))
    return found.merged(replace(tail, settings={"invariance": settings}))


def _family_assessment(
    found: Assessment, result: Any, data: LabelData, family: Any, resamples: int, seed: int
) -> Assessment:
    """One family's test as an assessment: metrics, headline row, features table, matrices, correctness."""
    from repscope.studies.invariance.testing import invariance_test_metrics, matrix_file_stem  # noqa: PLC0415

    metrics = {f"invariance/{family.name}": {**invariance_test_metrics(result), "modalities": list(result.matrices)}}
    arrays = {f"variance_{family.name}_{matrix_file_stem(m)}": v for m, v in result.matrices.items()}
    arrays[f"correct_{family.name}"] = result.correct
    row = _robust_accuracy_row(result, data, family, resamples, seed)
    tables = {f"invariance_{family.name}": result.features_table}
    return Assessment(found.role, found.model, found.data, metrics, (row,), tables, arrays)


def _model_name(classifier: Any) -> str:
    """What the classifier is, for the record: its loader's source, else its type."""
    for holder in (classifier, getattr(classifier, "loaded", None)):
        source = getattr(holder, "source", None)
        if isinstance(source, str | Path):
            return str(source)
    return type(classifier).__name__


# ---------------------------------------------------------------------------------------------------
# attacks


def _norm_names(norms: Sequence[str]) -> list[str]:
    """``L0`` / ``Linf`` (the attacks' names) or ``l0`` / ``linf`` (the study's) as the study's names."""
    from repscope.studies.zeroshot.attack_study import ATTACK_NORMS  # noqa: PLC0415

    names = [str(norm).lower() for norm in norms]
    unknown = [norm for norm, name in zip(norms, names, strict=True) if name not in ATTACK_NORMS]
    if unknown or not names or len(set(names)) != len(names):
        raise InvalidArgumentError(f"--norm: expected distinct values among L0, Linf, got {list(norms)}")
    return names


def _attack_draw(classifier: Any, data: LabelData, count: int, seed: int) -> np.ndarray | None:
    """A seeded draw of ``count`` images the classifier gets right (an attack on a wrong one is a free
    success), sorted; None when it gets none right. The draw is the one ``repscope zeroshot attack`` makes."""
    correct = np.flatnonzero(np.asarray(classifier.predict(data.images)) == data.labels)
    if not len(correct):
        return None
    return np.sort(np.random.default_rng([seed, 61]).choice(correct, size=min(count, len(correct)), replace=False))


def _success_rate(factors: np.ndarray, codes: np.ndarray) -> dict[str, float]:
    """Share of successful attacks (``codes``: one 0/1 row per image)."""
    del factors
    return {"success_rate": float(codes[:, 0].mean())}


def _paper_value(search: str, data: LabelData, norm: str) -> tuple[float | None, str | None]:
    """Table 1's rate (successes / attacks) of :data:`PAPER_ARCHITECTURE` for ``norm`` (``l0``, ``linf`` or
    ``total``), comparable only for the DQA search on CIFAR-10 (the paper's setting: 100 images, thresholds
    1, 3, 5 and 10, so 400 attacks per norm)."""
    from repscope.studies.zeroshot.report import PAPER_TABLES  # noqa: PLC0415

    if search != "dqa" or not data.source.startswith("cifar10"):
        return None, None
    successes, attacks = PAPER_TABLES[PAPER_ARCHITECTURE][norm], 800 if norm == "total" else 400
    others = ", ".join(f"{name} {row[norm]}" for name, row in PAPER_TABLES.items() if name != PAPER_ARCHITECTURE)
    return successes / attacks, (
        f"Raw Zero-Shot Table 1, {PAPER_ARCHITECTURE} on CIFAR-10: {successes} of {attacks} (other models: {others})"
    )


def _attack_rows(result: Any, data: LabelData, resamples: int, seed: int) -> list[HeadlineRow]:
    """Success rate per norm and threshold with its bootstrap interval; with the paper's thresholds 1, 3, 5 and
    10 also Table 1's rates (per norm and in total) beside the paper's and repscope's own."""
    from repscope.studies.zeroshot.attacks import PAPER_THRESHOLDS  # noqa: PLC0415

    table, where, rows = result.per_image, f"attacks/{result.search}", []
    for (norm, threshold), group in table.groupby(["norm", "threshold"], sort=False):
        success = group["success"].to_numpy(np.int64)[:, None]
        interval = _bootstrap(_success_rate, success, resamples, seed).get("success_rate", {})
        description = (
            f"share of {len(group)} correctly classified images a {NORM_TITLES[norm]} attack with threshold "
            f"{threshold} fooled ({result.search} search; lower is more robust)"
        )
        rows.append(_row(where, f"{norm}_th{threshold}_success_rate", float(success.mean()), interval,
                         description=description))  # fmt: skip
    if not set(PAPER_THRESHOLDS) <= set(table["threshold"]):
        return rows
    table = table[table["threshold"].isin(PAPER_THRESHOLDS)]
    groups = [(norm, table[table["norm"] == norm]) for norm in result.norms]
    for norm, group in groups + ([("total", table)] if len(result.norms) == 2 else []):
        paper, source = _paper_value(result.search, data, norm)
        fashion = data.source.startswith("digits (source=fashion-mnist")
        ours = REPSCOPE_ATTACK_TOTALS[result.search] if norm == "total" and fashion else None
        description = (
            f"Table 1 as a share: successful {NORM_TITLES.get(norm, 'L0 and L-infinity')} attacks over thresholds "
            "1, 3, 5 and 10 (lower is more robust)"
        )
        rows.append(HeadlineRow(
            where, f"{norm}_table1_success_rate", float(group["success"].mean()), paper=paper, paper_source=source,
            repscope=ours, repscope_source=None if ours is None else REPSCOPE_ATTACK_SOURCE, description=description,
        ))  # fmt: skip
    return rows


def _attack_options(
    norms: Sequence[str], thresholds: Sequence[int], search: str, n: int, budget: int
) -> tuple[list[str], list[int], int, int]:
    """The attacks' options, checked before any long step runs: norms (the study's names), thresholds, n, budget."""
    from repscope.studies.zeroshot.attack_study import check_norms  # noqa: PLC0415

    names = _norm_names(norms)
    check_norms(names, list(thresholds))
    if search not in SEARCH_CHOICES:
        raise InvalidArgumentError(f"--search: expected one of {', '.join(SEARCH_CHOICES)}, got {search!r}")
    levels = [int(threshold) for threshold in thresholds]
    return names, levels, check_positive_int(n, "--attack-n"), check_positive_int(budget, "--budget")


def _attack_metrics(result: Any) -> dict[str, Any]:
    """One search's successes and success rates by ``<norm>_th<threshold>``, and its totals."""
    counts = list(result.counts.itertuples())
    return {
        "successes": {f"{r.norm}_th{r.threshold}": int(r.successes) for r in counts},
        "success_rate": {f"{r.norm}_th{r.threshold}": float(r.successes / r.images) for r in counts},
        "totals": result.totals,
    }


def attack_assessment(
    classifier: Any,
    data: LabelData,
    *,
    n: int = ATTACK_N,
    thresholds: Sequence[int] = (1, 10),
    norms: Sequence[str] = ("L0", "Linf"),
    search: str = "art",
    budget: int = 100,
    bootstrap: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    progress: bool | None = None,
) -> Assessment:
    """The black-box L0 and L-infinity attacks on images the classifier gets right; writes nothing.

    Each attack minimises the soft-label of the true class with CMA-ES (Raw Zero-Shot, Sec. 4; Vargas &
    Kotyan 2019); its model is ``classifier.soft_labels`` on the attack's 0-255 float images divided by 255
    (:func:`repscope.studies.zeroshot.attack_study.predictor`).

    Parameters
    ----------
    classifier : object
        ``predict(images)`` and ``soft_labels(images)`` on uint8 / float [0, 1] ``(N, C, H, W)`` images.
    data : LabelData
        The images to draw from.
    n : int, default=100
        Images attacked (a seeded draw of those classified correctly; the paper's 100).
    thresholds : sequence of int, default=(1, 10)
        Pixels changed (L0) and largest change of a 0-255 value (L-infinity); the paper's 1, 3, 5, 10.
    norms : sequence of {"L0", "Linf"}
        The attacks.
    search : {"art", "dqa", "both"}
        The toolkit's search (up to ``budget`` CMA-ES generations), the authors' (one generation of 400,
        whose counts Table 1 prints), or both (two sets of rows: their rates are not comparable).
    budget : int, default=100
        CMA-ES generations of the ``art`` search.
    bootstrap, seed, progress
        Resamples for the 95% intervals of the rates; seed of the draw, the attacks and the bootstrap;
        False shows no bar.

    Returns
    -------
    Assessment
        ``metrics["attacks"]`` (images, settings, successes and rates per search, norm and threshold), tables
        ``attack_counts`` and ``attacks`` (per image), arrays ``attacked_rows``; a note and no rows when
        the classifier gets no image right.
    """
    from repscope.progress import quiet_progress  # noqa: PLC0415
    from repscope.studies.zeroshot.attack_study import compute_classifier_attacks  # noqa: PLC0415

    names, levels, count, budget = _attack_options(norms, thresholds, search, n, budget)
    rows = _attack_draw(classifier, data, count, seed)
    settings = {"n": count, "thresholds": levels, "norms": names, "search": search, "budget": budget}
    found = Assessment("classifier", _model_name(classifier), data.source, {}, settings={"attacks": settings})
    if rows is None:
        return replace(found, notes=("attacks: skipped, the classifier classifies none of the images correctly",))
    images, labels, origin = data.images[rows], data.labels[rows], rows if data.rows is None else data.rows[rows]
    with quiet_progress(progress is False):  # the study's bar follows the process's mode otherwise
        results = [
            compute_classifier_attacks(
                classifier, images, labels, names, levels, budget, seed, rows=origin, search=each
            )
            for each in (("art", "dqa") if search == "both" else (search,))
        ]
    metrics = {"images": len(rows), "budget": budget, "seed": seed}
    metrics.update({result.search: _attack_metrics(result) for result in results})
    tables = {
        "attack_counts": pd.concat([result.counts for result in results], ignore_index=True),
        "attacks": pd.concat([result.per_image for result in results], ignore_index=True),
    }
    headline = tuple(row for result in results for row in _attack_rows(result, data, bootstrap, seed))
    notes = ("attacks: the art and dqa searches differ in budget; their rates are not comparable",) * (search == "both")
    arrays = {"attacked_rows": origin}
    return replace(found, metrics={"attacks": metrics}, headline=headline, tables=tables, arrays=arrays, notes=notes)


# ---------------------------------------------------------------------------------------------------
# the role


def _base_assessment(classifier: Any, data: LabelData, batch_size: int, seed: int, resamples: int) -> Assessment:
    """The soft-labels on every image and the accuracy beside chance (1 / classes) with its bootstrap interval."""
    soft = np.asarray(classifier.soft_labels(data.images), dtype=np.float64)
    if soft.shape != (len(data), data.num_classes):
        raise InvalidArgumentError(
            f"--model: soft_labels gave shape {soft.shape} for {len(data)} images of {data.num_classes} classes"
        )
    predicted = soft.argmax(axis=1).astype(np.int64)
    correct = (predicted == data.labels).astype(np.int64)[:, None]
    interval = _bootstrap(_accuracy_scores, correct, resamples, seed).get("accuracy", {})
    accuracy, chance = float(correct.mean()), 1.0 / data.num_classes
    described = f"accuracy on the {len(data)} images (higher is better)"
    row = _row("classifier", "accuracy", accuracy, interval, chance=chance, description=described)
    settings = {"n": len(data), "image_shape": list(data.image_shape), "num_classes": data.num_classes}
    settings.update(batch_size=batch_size, seed=seed, bootstrap=resamples)
    arrays = {"soft_labels": soft, "labels": data.labels, "predicted": predicted}
    metrics = {"classifier": {"accuracy": accuracy}}
    return Assessment("classifier", _model_name(classifier), data.source, metrics, (row,), {}, arrays, {}, settings)


def assess_classifier(
    classifier: Any,
    data: LabelData,
    *,
    families: Sequence[str] | None = PAPER_FAMILIES,
    compat: str = "paper",
    assessor: str | Path | None = None,
    attacks: bool = True,
    attack_n: int | None = ATTACK_N,
    thresholds: Sequence[int] = (1, 10),
    norms: Sequence[str] = ("L0", "Linf"),
    search: str = "art",
    budget: int = 100,
    zeroshot: Any = None,
    steps: int = 31,
    bootstrap: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    batch_size: int = 500,
    progress: bool | None = None,
) -> Assessment:
    """Everything repscope measures of a classifier: accuracy, invariance, attacks, Raw Zero-Shot; writes nothing.

    Parameters
    ----------
    classifier : object
        ``soft_labels(images)`` and ``predict(images)`` on uint8 or float [0, 1] ``(N, C, H, W)`` images,
        and ``network`` (float [0, 1] images -> logits) for the invariance test's probes
        (:func:`classifier_network`).
    data : LabelData
        Labelled images (:func:`repscope.studies.assess.label_data.load_label_data`).
    families : sequence of str, default=("rotation", "brightness", "scale")
        The invariance test's families (None: these; empty: no test); see :func:`invariance_assessment` for
        ``compat``, ``assessor`` and ``steps``.
    attacks : bool, default=True
        Run the black-box attacks (:func:`attack_assessment`: ``attack_n`` images, None for 100, and
        ``thresholds``, ``norms``, ``search``, ``budget``).
    zeroshot : object, optional
        What :func:`repscope.studies.assess.zeroshot.zeroshot_assessment` takes (a factory to train the
        leave-one-class-out classifiers, or their folder; it names its own data): its Raw Zero-Shot
        assessment is merged in.
    bootstrap : int, default=200
        Resamples of the 95% intervals (below 2: none).
    seed : int, default=0
        Seed of every random step.
    batch_size : int, default=500
        Images per forward pass of the invariance test.
    progress : bool, optional
        False shows no bar.

    Returns
    -------
    Assessment
        Role ``classifier``: metrics ``classifier``, ``invariance/<family>``, ``attacks`` (and the Raw
        Zero-Shot ones), their headline rows, tables, arrays (soft-labels, variance matrices), notes.

    Raises
    ------
    InvalidArgumentError
        A bad option (naming it), or soft-labels that do not fit the data's classes.
    """
    seed = check_seed(seed)
    batch_size = check_positive_int(batch_size, "--batch-size")
    families = PAPER_FAMILIES if families is None else tuple(families)
    attack_n = ATTACK_N if attack_n is None else attack_n
    if not isinstance(data, LabelData):
        raise InvalidArgumentError(f"--data: expected LabelData (load_label_data), got {type(data).__name__}")
    if attacks:  # a bad attack option is refused before the invariance test's minutes
        _attack_options(norms, thresholds, search, attack_n, budget)
    assessment = _base_assessment(classifier, data, batch_size, seed, bootstrap)
    common = {"bootstrap": bootstrap, "seed": seed, "progress": progress}
    if families:
        options = {"compat": compat, "assessor": assessor, "steps": steps, "batch_size": batch_size}
        assessment = assessment.merged(invariance_assessment(classifier, data, families, **options, **common))
    if attacks:
        options = {"n": attack_n, "thresholds": thresholds, "norms": norms, "search": search, "budget": budget}
        assessment = assessment.merged(attack_assessment(classifier, data, **options, **common))
    if zeroshot is not None:
        from repscope.studies.assess.zeroshot import zeroshot_assessment  # noqa: PLC0415

        # the zero-shot source names its own data (its models train on a registered dataset's classes)
        assessment = assessment.merged(zeroshot_assessment(zeroshot, seed=seed, progress=progress))
    return assessment

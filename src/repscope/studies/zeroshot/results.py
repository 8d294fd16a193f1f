"""The Raw Zero-Shot study's result: :func:`compute_zeroshot` scores the soft-labels of trained classifiers
and tabulates their attacks' successes, :func:`write_zeroshot` writes the result into a run directory.

``compute_zeroshot`` takes arrays and numbers, not files: soft-labels from any framework (a
:class:`~repscope.data.zeroshot.softlabels.SoftLabels` per architecture), the models' test accuracies and
the attacks' success counts. :mod:`repscope.studies.zeroshot.study` gathers them from its trainings and
attacks; :mod:`repscope.studies.zeroshot.report` builds the report from the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from repscope.data.zeroshot.softlabels import SoftLabels, write_soft_labels
from repscope.errors import InvalidArgumentError
from repscope.fileio import write_json_atomic
from repscope.metrics.zeroshot import rank_correlation, zero_shot_scores
from repscope.run_directory import RunDirectory, to_plain
from repscope.studies.common import slug

# the representation metrics (and the accuracy) whose rank correlation with the attacks' successes is tested
CORRELATED_METRICS = ("dbi", "davies_bouldin", "am", "am_per_image", "accuracy")


@dataclass(frozen=True)
class ZeroShotResult:
    """What the Raw Zero-Shot study finds: the paper's Tables 1-3 for these architectures and their link.

    Attributes
    ----------
    representation : pandas.DataFrame
        One row per architecture (the paper's Tables 2 and 3): ``architecture``, ``soft_label_kind``,
        ``accuracy`` (the full model's test accuracy), ``loo_accuracy`` (the mean test accuracy of the
        models without a class) and the scores of :func:`~repscope.metrics.zeroshot.zero_shot_scores` that
        are numbers (``dbi``, ``dbi_std``, ``davies_bouldin``, ``am``, ``am_std``, ``am_per_image``,
        ``am_per_image_std``).
    attacks : pandas.DataFrame
        One row per architecture (the paper's Table 1): ``architecture``, the successful attacks
        ``<norm>_th<threshold>`` per norm and threshold, ``<norm>_total`` per norm and ``total``.
    correlations : pandas.DataFrame
        Spearman's rho of each of :data:`CORRELATED_METRICS` against each attack total across the
        architectures (:func:`correlation_table`); empty with fewer than 3 architectures.
    soft_labels : dict of str to SoftLabels
        Each architecture's soft-labels, by label, in the order of the tables.
    scores : dict of str to dict
        Each architecture's :func:`~repscope.metrics.zeroshot.zero_shot_scores`, per-class terms and
        ``params`` included.
    classes : int
        Classes of the dataset.
    attack_images : int
        Test images attacked per norm and threshold.
    attack_candidates : int
        Test images that every full classifier classifies correctly, of which ``attack_images`` were drawn.
    attack_search : str
        The attacks' search: ``art`` or ``dqa`` (:mod:`repscope.studies.zeroshot.attack_study`).
    soft_label_setting : str
        The study's ``soft_labels`` setting: ``normalised`` or ``reference`` (what a CapsNet's soft-labels are).
    """

    representation: pd.DataFrame
    attacks: pd.DataFrame
    correlations: pd.DataFrame
    soft_labels: dict[str, SoftLabels]
    scores: dict[str, dict[str, Any]]
    classes: int
    attack_images: int
    attack_candidates: int
    attack_search: str
    soft_label_setting: str


def compute_zeroshot(
    soft_labels: Mapping[str, SoftLabels],
    accuracy: Mapping[str, float],
    loo_accuracy: Mapping[str, float],
    attack_successes: Mapping[tuple[str, str, int], int],
    *,
    norms: Sequence[str],
    thresholds: Sequence[int],
    attack_images: int,
    attack_candidates: int,
    attack_search: str = "art",
    soft_label_setting: str = "normalised",
) -> ZeroShotResult:
    """Score every architecture's soft-labels, tabulate its attacks and rank-correlate the two; writes nothing.

    Parameters
    ----------
    soft_labels : mapping of str to SoftLabels
        Each architecture's soft-labels by label (the order of the tables), all over the same classes.
    accuracy, loo_accuracy : mapping of str to float
        By label: the full model's test accuracy; the mean test accuracy of the models without a class.
    attack_successes : mapping of (str, str, int) to int
        ``(label, norm, threshold) -> successful attacks`` for every label, norm and threshold.
    norms, thresholds : sequence
        The attacks' norms (``l0``, ``linf``) and thresholds, in the order of the attack table's columns.
    attack_images, attack_candidates : int
        Images attacked per norm and threshold; correctly classified images they were drawn from.
    attack_search : {"art", "dqa"}, default="art"
        The attacks' search, recorded in the result.
    soft_label_setting : {"normalised", "reference"}, default="normalised"
        The study's ``soft_labels`` setting, recorded in the result.

    Returns
    -------
    ZeroShotResult

    Raises
    ------
    InvalidArgumentError
        No soft-labels, or an architecture without its accuracies.
    """
    from repscope.progress import track  # noqa: PLC0415

    labels = list(soft_labels)
    if not labels:
        raise InvalidArgumentError("soft_labels: expected the soft-labels of at least one architecture")
    missing = [label for label in labels if label not in accuracy or label not in loo_accuracy]
    if missing:
        raise InvalidArgumentError(f"accuracy, loo_accuracy: no value for the architecture {missing[0]!r}")
    scores = {
        label: zero_shot_scores(soft_labels[label].loo, soft_labels[label].full, soft_labels[label].kind)
        for label in track(labels, f"scoring the soft-labels of {len(labels)} architecture(s) (DBI, AM)")
    }
    representation = representation_table(soft_labels, scores, accuracy, loo_accuracy)
    attacks = attack_successes_table(labels, norms, thresholds, attack_successes)
    return ZeroShotResult(
        representation=representation,
        attacks=attacks,
        correlations=correlation_table(representation, attacks, list(norms)),
        soft_labels=dict(soft_labels),
        scores=scores,
        classes=next(iter(soft_labels.values())).num_classes,
        attack_images=int(attack_images),
        attack_candidates=int(attack_candidates),
        attack_search=attack_search,
        soft_label_setting=soft_label_setting,
    )


def representation_table(
    soft_labels: Mapping[str, SoftLabels],
    scores: Mapping[str, Mapping[str, Any]],
    accuracy: Mapping[str, float],
    loo_accuracy: Mapping[str, float],
) -> pd.DataFrame:
    """The paper's Tables 2 and 3: one row per architecture of its accuracies and the scores that are
    numbers (the per-class terms stay in :attr:`ZeroShotResult.scores`)."""
    rows = [
        {
            "architecture": label,
            "soft_label_kind": soft_labels[label].kind,
            "accuracy": float(accuracy[label]),
            "loo_accuracy": float(loo_accuracy[label]),
            **{key: value for key, value in scores[label].items() if not isinstance(value, list | dict)},
        }
        for label in scores
    ]
    return pd.DataFrame(rows)


def attack_successes_table(
    labels: Sequence[str],
    norms: Sequence[str],
    thresholds: Sequence[int],
    successes: Mapping[tuple[str, str, int], int],
) -> pd.DataFrame:
    """The paper's Table 1: per architecture, the successful attacks at each norm and threshold
    (``l0_th1`` ...), their sum per norm (``l0_total``) and over both norms (``total``)."""
    rows = []
    for label in labels:
        row: dict[str, Any] = {"architecture": label}
        for norm in norms:
            for threshold in thresholds:
                row[f"{norm}_th{threshold}"] = int(successes[(label, norm, threshold)])
            row[f"{norm}_total"] = sum(row[f"{norm}_th{threshold}"] for threshold in thresholds)
        row["total"] = sum(row[f"{norm}_total"] for norm in norms)
        rows.append(row)
    return pd.DataFrame(rows)


def correlation_table(representation: pd.DataFrame, attacks: pd.DataFrame, norms: list[str]) -> pd.DataFrame:
    """Spearman's rho of each metric against each attack count across architectures (empty below 3)."""
    if len(representation) < 3:
        return pd.DataFrame()
    records = []
    for metric in CORRELATED_METRICS:
        for success in [*(f"{norm}_total" for norm in norms), "total"]:
            result = rank_correlation(representation[metric], attacks[success])
            records.append(
                {
                    "metric": metric,
                    "attack_successes": success,
                    "rho": result["rho"],
                    "p_value": result["p_value"],
                    "p_method": result["p_method"],
                }
            )
    return pd.DataFrame(records)


def zeroshot_metrics(result: ZeroShotResult) -> dict[str, Any]:
    """The headline numbers of ``metrics.json``: the run's settings, each architecture's representation
    metrics with its attack counts, and the rank correlations."""
    attack_rows = result.attacks.to_dict(orient="records")
    return {
        "classes": result.classes,
        "attack_images": result.attack_images,
        "attack_candidates": result.attack_candidates,
        "attack_search": result.attack_search,
        "soft_labels": result.soft_label_setting,
        "architectures": {
            row["architecture"]: {
                **{key: value for key, value in row.items() if key != "architecture"},
                **{key: value for key, value in attack_row.items() if key != "architecture"},
            }
            for row, attack_row in zip(result.representation.to_dict(orient="records"), attack_rows)
        },
        "correlations": result.correlations.to_dict(orient="records") if len(result.correlations) else [],
    }


def write_zeroshot(result: ZeroShotResult, run: RunDirectory) -> None:
    """Write the result into ``run``: ``softlabels/<architecture>.npz`` (what ``repscope zeroshot metrics``
    reads), ``metrics.json``, ``per_class.json`` (every score of each architecture) and
    ``tables/representation.csv``, ``attacks.csv`` and ``correlations.csv`` (when there are any)."""
    for label, soft in result.soft_labels.items():
        write_soft_labels(
            run.path("softlabels", f"{slug(label)}.npz"), soft.loo, soft.full, soft.class_names, soft.kind
        )
    run.write_metrics(to_plain(zeroshot_metrics(result)))
    write_json_atomic(run.path("per_class.json"), to_plain(result.scores))
    run.write_table("representation", result.representation)
    run.write_table("attacks", result.attacks)
    if len(result.correlations):
        run.write_table("correlations", result.correlations)


__all__ = [
    "CORRELATED_METRICS",
    "ZeroShotResult",
    "attack_successes_table",
    "compute_zeroshot",
    "correlation_table",
    "representation_table",
    "write_zeroshot",
]

"""The Raw Zero-Shot study's report: the paper's findings checked, figures and ``report.html``, built from a
:class:`~repscope.studies.zeroshot.results.ZeroShotResult` (:func:`~repscope.studies.zeroshot.results.compute_zeroshot`
computes it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from repscope.metrics.zeroshot import rank_correlation
from repscope.report import Report
from repscope.report.zeroshot_figures import amalgam_by_class, amalgam_histogram_grid, projection_grid
from repscope.run_directory import RunDirectory
from repscope.studies.zeroshot.results import ZeroShotResult

SIGNIFICANCE = 0.05
NORM_TITLES = {"l0": "L0 (pixels)", "linf": "L-infinity"}
# the paper's Tables 1-3 (CIFAR-10, 800 attacks per architecture), for the report
PAPER_TABLES = {
    "CapsNet": {"l0": 164, "linf": 219, "total": 383, "dbi": 0.2301, "dbi_std": 0.0163, "am": 124.4882},
    "AllConv": {"l0": 176, "linf": 227, "total": 403, "dbi": 0.6432, "dbi_std": 0.1058, "am": 101.1299},
    "ResNet": {"l0": 222, "linf": 263, "total": 485, "dbi": 0.6307, "dbi_std": 0.1337, "am": 281.2960},
    "NIN": {"l0": 251, "linf": 277, "total": 528, "dbi": 0.6258, "dbi_std": 0.0952, "am": 203.1542},
    "LeNet": {"l0": 337, "linf": 340, "total": 677, "dbi": 0.5161, "dbi_std": 0.0284, "am": 144.1068},
}

# the report's opening: the module docstring of repscope.studies.zeroshot.study in plain words (no markup)
INTRO = (
    "For every architecture, n + 1 classifiers train on the dataset: one without each class (its n - 1 outputs "
    "never name it) and one on all n classes. Each model without class i is shown class i's test images, and "
    "its soft-labels are kept with the full model's on the same images (softlabels/<architecture>.npz). They "
    "are scored by the paper's DBI (Eq. 3, a within-cluster scatter), scikit-learn's Davies-Bouldin index and "
    "the Amalgam Metric (Eq. 4, and its per-image mean). CapsNet's soft-labels are its capsule lengths "
    "normalised to sum to one (the paper's text) or, with the setting soft_labels: reference, the raw lengths "
    "the authors' code scored; every other architecture gives its softmax either way.\n\n"
    "The full classifier is then attacked by the L0 (pixel) and L-infinity (threshold) black-box attacks with "
    "CMA-ES on test images that every architecture classifies correctly (attack.search: art, the "
    "adversarial-robustness-toolbox's search, or dqa, the authors' one generation of 400 candidates), and "
    "Spearman's rank correlation across architectures (exact p-values up to 10 architectures) says whether "
    "the metrics track the attacks' success (Table 1 against Tables 2 and 3). The trainings and the attacks "
    "run on the sweep runner, so --resume continues an interrupted study where it stopped."
)


def paper_rank_correlations() -> dict[str, dict[str, float]]:
    """Spearman's rho of the paper's own DBI (Table 2) and AM (Table 3) against its total attack
    successes (Table 1) across its five architectures, with all five and without LeNet.

    Returns
    -------
    dict
        ``{"dbi": {...}, "am": {...}}``, each with ``rho``, ``p_value`` (exact, two-sided: see
        :func:`repscope.metrics.zeroshot.rank_correlation`) and ``rho_without_lenet``. On the printed
        tables: DBI rho 0.0 (p = 1.0), 0.2 without LeNet; AM rho 0.5 (p = 0.45), 0.6 without LeNet.
    """
    labels = list(PAPER_TABLES)
    others = [label for label in labels if label != "LeNet"]
    result = {}
    for metric in ("dbi", "am"):
        every = rank_correlation([PAPER_TABLES[k][metric] for k in labels], [PAPER_TABLES[k]["total"] for k in labels])
        without = rank_correlation(
            [PAPER_TABLES[k][metric] for k in others], [PAPER_TABLES[k]["total"] for k in others]
        )
        result[metric] = {"rho": every["rho"], "p_value": every["p_value"], "rho_without_lenet": without["rho"]}
    return result


def paper_findings(representation: pd.DataFrame, attacks: pd.DataFrame, correlations: pd.DataFrame) -> pd.DataFrame:
    """The paper's three findings checked on this run: CapsNet has the best (lowest) DBI; the metrics
    track robustness (a positive rank correlation of DBI and AM with attack successes); LeNet is the
    exception (the most attacked, yet not the worst on the metrics). A correlation holds when rho > 0
    at p < ``SIGNIFICANCE`` (exact p-values up to 10 architectures), and "in sign only" when rho > 0
    without it. The ``paper`` column of the correlation rows gives the rho of the paper's own Tables 1-3
    (:func:`paper_rank_correlations`): the paper claims the link, but its printed numbers give DBI 0.0
    and AM 0.5. Rows whose architectures are missing say so."""
    paper = paper_rank_correlations()
    rows = []
    labels = list(representation["architecture"])
    best = representation.loc[representation["dbi"].idxmin(), "architecture"]
    rows.append(
        {
            "finding": "CapsNet has the lowest DBI",
            "paper": "yes (0.23 against 0.52-0.64)",
            "here": f"lowest: {best}" if "CapsNet" in labels else f"no CapsNet in this run (lowest: {best})",
            "held": ("yes" if best == "CapsNet" else "no") if "CapsNet" in labels else "n/a",
        }
    )
    for metric, title in (("dbi", "DBI"), ("am", "AM")):
        if len(correlations):
            chosen = (correlations["metric"] == metric) & (correlations["attack_successes"] == "total")
            rho = float(correlations.loc[chosen, "rho"].iloc[0])
            p_value = float(correlations.loc[chosen, "p_value"].iloc[0])
            here = f"Spearman rho {rho:+.2f} (p = {p_value:.2f}, {len(labels)} architectures)"
            if "LeNet" in labels and len(labels) >= 4:
                # the paper's claim leaves LeNet out, so its rho is shown as well
                others = representation["architecture"] != "LeNet"
                without = rank_correlation(representation.loc[others, metric], attacks.loc[others, "total"])
                here += f"; without LeNet {without['rho']:+.2f}"
            # a positive rho alone is half the finding: with 5 architectures only rho = 1 is significant
            # at 5% (exact p = 2 / 120; rho = 0.9 gives 10 / 120), so a weaker one is the sign alone
            held = "no" if not rho > 0 else ("yes" if p_value < SIGNIFICANCE else "in sign only (not significant)")
        else:
            here, held = "fewer than 3 architectures", "n/a"
        printed = paper[metric]
        rows.append(
            {
                "finding": f"{title} tracks attack success (higher {title}, more successes)",
                "paper": (
                    f"claimed; its own Tables 1-3 give Spearman rho {printed['rho']:+.2f} "
                    f"(p = {printed['p_value']:.2f}, 5 architectures), {printed['rho_without_lenet']:+.2f} "
                    "without LeNet"
                ),
                "here": here,
                "held": held,
            }
        )
    if "LeNet" in labels and len(labels) >= 3:
        most = attacks.loc[attacks["total"].idxmax(), "architecture"]
        lenet = representation.set_index("architecture").loc["LeNet"]
        worse_dbi = int((representation["dbi"] > lenet["dbi"]).sum())
        worse_am = int((representation["am"] > lenet["am"]).sum())
        here = (
            f"most attacked: {most}; {worse_dbi} architecture(s) with a higher DBI and {worse_am} with a higher AM "
            "than LeNet"
        )
        held = "yes" if most == "LeNet" and (worse_dbi > 0 or worse_am > 0) else "no"
    else:
        here, held = "no LeNet, or fewer than 3 architectures", "n/a"
    rows.append(
        {
            "finding": "LeNet is the exception: most attacked, yet not worst on the metrics",
            "paper": "yes (most attacked; DBI and AM mid-table)",
            "here": here,
            "held": held,
        }
    )
    return pd.DataFrame(rows)


# the representation table's columns as the report shows them: mean and std in one cell
DISPLAY_COLUMNS = (
    ("accuracy", None, "Accuracy"),
    ("loo_accuracy", None, "Accuracy without a class"),
    ("dbi", "dbi_std", "DBI (Eq. 3)"),
    ("davies_bouldin", None, "Davies-Bouldin"),
    ("am", "am_std", "AM (Eq. 4)"),
    ("am_per_image", "am_per_image_std", "AM per image"),
)


def _significant(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}g}" if value == value else "n/a"


def representation_display(representation: pd.DataFrame) -> pd.DataFrame:
    """The representation metrics as the report shows them: readable headers, ``mean ± std`` in one
    cell (3 significant digits), the soft-label kind folded into the architecture's name; 7 columns
    instead of 11, so that the table fits the page.

    Parameters
    ----------
    representation : pandas.DataFrame
        The study's ``representation`` table (``architecture``, ``soft_label_kind``, ``accuracy``, ``dbi``,
        ``dbi_std`` ...).

    Returns
    -------
    pandas.DataFrame
        Text cells: ``Architecture`` then the columns of :data:`DISPLAY_COLUMNS` present in the table.
    """
    out = pd.DataFrame()
    names = representation["architecture"].astype(str)
    if "soft_label_kind" in representation:
        raw = representation["soft_label_kind"] == "capsule_lengths"
        names = names.where(~raw, names + " (raw lengths)")
    out["Architecture"] = names
    for column, spread, title in DISPLAY_COLUMNS:
        if column not in representation:
            continue
        means = representation[column].astype(float)
        if spread is not None and spread in representation:
            stds = representation[spread].astype(float)
            out[title] = [f"{_significant(m)} ± {_significant(d, 2)}" for m, d in zip(means, stds)]
        else:
            out[title] = [_significant(m) for m in means]
    return out.reset_index(drop=True)


NORM_LABELS = {"l0": "L0", "linf": "L∞"}


def attack_display(attacks: pd.DataFrame) -> pd.DataFrame:
    """The attack table with readable headers: ``l0_th3`` -> ``L0 th. 3``, ``linf_total`` -> ``L∞ total``,
    ``total`` -> ``Total``, ``architecture`` -> ``Architecture``; the values unchanged.

    Parameters
    ----------
    attacks : pandas.DataFrame
        The study's ``attacks`` table.

    Returns
    -------
    pandas.DataFrame
        The same table, columns renamed.
    """
    names = {"architecture": "Architecture", "total": "Total"}
    for column in attacks.columns:
        norm, _, rest = str(column).partition("_")
        if norm in NORM_LABELS and rest == "total":
            names[column] = f"{NORM_LABELS[norm]} total"
        elif norm in NORM_LABELS and rest.startswith("th"):
            names[column] = f"{NORM_LABELS[norm]} th. {rest[2:]}"
    return attacks.rename(columns=names)


def accuracy_warnings(representation: pd.DataFrame, num_classes: int) -> list[str]:
    """Warnings for architectures whose full model is too inaccurate for its soft-labels to mean much:
    test accuracy under twice chance (``2 / num_classes``).

    Parameters
    ----------
    representation : pandas.DataFrame
        The ``representation`` table (``architecture``, ``accuracy``).
    num_classes : int
        Classes of the dataset (0: unknown, no warning).

    Returns
    -------
    list of str
        One line per such architecture, for :meth:`repscope.report.Report.add_warning`.
    """
    if num_classes < 2:
        return []
    floor = 2.0 / num_classes
    return [
        f"{row['architecture']}: the full model's test accuracy {row['accuracy']:.3g} is under twice chance "
        f"({floor:.3g} for {num_classes} classes): its DBI and AM describe a model that barely learned the task"
        for _, row in representation.iterrows()
        if float(row["accuracy"]) < floor
    ]


def write_zeroshot_report(result: ZeroShotResult, run: RunDirectory, config: Any, quick: bool) -> Path:
    """Write the report of a Raw Zero-Shot run from its result: ``tables/paper_findings.csv`` (the paper's
    findings checked, :func:`paper_findings`), the figures and ``report.html``; return the report's path.

    Parameters
    ----------
    result : ZeroShotResult
        What :func:`~repscope.studies.zeroshot.results.compute_zeroshot` found.
    run : RunDirectory
        The run directory written to.
    config : ZeroShotConfig
        The study's config (the data, the attacks' settings, the projections' size and the seed).
    quick : bool
        Whether the run is the ``--quick`` variant (the report says so).

    Returns
    -------
    pathlib.Path
        ``report.html``.
    """
    findings = paper_findings(result.representation, result.attacks, result.correlations)
    run.write_table("paper_findings", findings)
    data = f"{config.data.name} ({', '.join(f'{k}={v}' for k, v in config.data.params.items())})"
    report = Report(
        "Raw Zero-Shot: representation metrics and black-box attacks",
        subtitle=f"{len(result.representation)} architecture(s) on {data}, seed {config.seed}",
        quick=quick,
    )
    report.add_paragraph(INTRO)
    for warning in _warnings(result, config.attack.n):
        report.add_warning(warning)
    _add_representation(report, result)
    _add_attacks(report, result, config)
    if len(result.correlations):
        report.add_table(
            result.correlations,
            title="Spearman rank correlation across architectures: metric against attack successes",
            caption="Positive: the worse (higher) the metric, the more attacks succeed. p_value: two-sided, exact "
            "(all orderings) up to 10 architectures, scipy's t approximation beyond. With 5 architectures only "
            "rho = +-1 reaches p < 0.05.",
        )
    report.add_table(findings, title="The paper's findings on this run")
    paper = pd.DataFrame([{"architecture": label, **values} for label, values in PAPER_TABLES.items()])
    report.add_table(paper, title="The paper's Tables 1-3 (CIFAR-10; 100 images x 4 thresholds per norm)")
    for name, figure, caption in _figures(result, config.projection_n, config.seed):
        report.add_figure(run.save_figure(name, figure), caption=caption)
    report.add_paragraph(
        "Files: softlabels/<architecture>.npz (repscope zeroshot metrics reads it), models/ (one training run per "
        "model), attacks/ (per-image results), tables/, figures/."
    )
    return run.write_report(report)


def _warnings(result: ZeroShotResult, asked: int) -> list[str]:
    """The report's warnings: models too inaccurate for their soft-labels to mean much, and fewer images
    attacked than ``asked`` for (``attack.n``)."""
    params = next(iter(result.scores.values()))["params"]
    warnings = accuracy_warnings(result.representation, num_classes=int(params.get("classes", 0)))
    if result.attack_images < asked:
        warnings.append(
            f"Attacks: only {result.attack_images} of the {asked} test images asked for are classified correctly "
            "by every full classifier; Table 1's counts here are out of that many."
        )
    return warnings


def _add_representation(report: Report, result: ZeroShotResult) -> None:
    """The representation metrics (the paper's Tables 2 and 3) and what each column means."""
    report.add_table(
        representation_display(result.representation),
        title="Representation metrics (the paper's Tables 2 and 3)",
        caption="Mean ± standard deviation over the classes left out; lower is better for DBI, Davies-Bouldin "
        "and AM. tables/representation.csv holds every column at full precision.",
    )
    images = next(iter(result.scores.values()))["params"]["images"]
    per_class = f"{min(images)}-{max(images)}" if min(images) != max(images) else f"{min(images)}"
    report.add_paragraph(
        "Accuracy: the full model's test accuracy; without a class: the mean test accuracy of the n models "
        "trained without one class, on the other classes. DBI: the paper's Eq. 3 (within-cluster scatter, "
        "lower = tighter); Davies-Bouldin: scikit-learn's standard index of the same clusters. AM: Eq. 4 with "
        f"summed soft-labels, which grows with the images per class ({per_class} here); AM per image: the same "
        "divided by the image count. The paper's Table 3 values (101-281) exceed Eq. 4's bound for its 1,000 "
        "test images a class (2 x 1000 / 9 = 222) and the script that computed them is not released: compare "
        "the order of the architectures, not the values. An architecture marked (raw lengths) is a CapsNet "
        "scored on its raw capsule lengths (soft_labels: reference, the outputs the authors' code stores); the "
        "others on probabilities."
    )


def _add_attacks(report: Report, result: ZeroShotResult, config: Any) -> None:
    """The successful attacks (the paper's Table 1), with the images, norms, thresholds and search behind them."""
    attack = config.attack
    search = (
        f"CMA-ES with at most {attack.budget} generations (the adversarial-robustness-toolbox's search)."
        if attack.search == "art"
        else "the authors' DQA search: one CMA-ES generation of 400 candidates."
    )
    report.add_table(
        attack_display(result.attacks),
        title="Successful attacks (the paper's Table 1)",
        caption=(
            f"Out of {result.attack_images} test images per column, every one classified correctly by every full "
            f"classifier here; {', '.join(NORM_TITLES[n] for n in attack.norms)} at thresholds "
            f"{', '.join(map(str, attack.thresholds))} (pixels / 0-255 levels), " + search
        ),
    )


def _figures(result: ZeroShotResult, projection_n: int, seed: int) -> list[tuple[str, Any, str]]:
    """The paper's Figs. 2-6 of this run: ``(name, figure, caption)`` each."""
    soft_labels = result.soft_labels
    am_per_class = {label: scores["am_per_image_per_class"] for label, scores in result.scores.items()}
    class_names = next(iter(soft_labels.values())).class_names
    return [
        ("isomap", projection_grid(soft_labels, "isomap", projection_n, seed), "Isomap (Fig. 2)"),
        ("tsne", projection_grid(soft_labels, "tsne", projection_n, seed), "t-SNE (Fig. 5)"),
        ("amalgam_histograms", amalgam_histogram_grid(soft_labels), "h' and h (Fig. 4)"),
        ("amalgam_differences", amalgam_histogram_grid(soft_labels, difference=True), "D = |h' - h| (Fig. 6)"),
        ("amalgam_by_class", amalgam_by_class(am_per_class, class_names), "AM per excluded class (Fig. 3)"),
    ]


__all__ = [
    "NORM_TITLES",
    "PAPER_TABLES",
    "accuracy_warnings",
    "attack_display",
    "paper_findings",
    "paper_rank_correlations",
    "representation_display",
    "write_zeroshot_report",
]

"""The Raw Zero-Shot study's tables, figures and report (:mod:`repscope.studies.zeroshot.study` computes them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from repscope.metrics.zeroshot import rank_correlation
from repscope.report import Report
from repscope.report.zeroshot_figures import amalgam_by_class, amalgam_histogram_grid, projection_grid
from repscope.runs import RunDirectory

SIGNIFICANCE = 0.05


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
    from repscope.studies.zeroshot.study import PAPER_TABLES  # noqa: PLC0415

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


def write_zeroshot_report(
    run: RunDirectory,
    config: Any,
    representation: pd.DataFrame,
    attacks: pd.DataFrame,
    correlations: pd.DataFrame,
    soft_labels: dict[str, Any],
    rows: list[dict[str, Any]],
    attack_images: int,
    quick: bool,
) -> Path:
    """Write the tables, figures and ``report.html`` of a Raw Zero-Shot run; return the report's path."""
    from repscope.studies.zeroshot.study import NORM_TITLES, PAPER_TABLES  # noqa: PLC0415

    run.write_table("representation", representation)
    run.write_table("attacks", attacks)
    if len(correlations):
        run.write_table("correlations", correlations)
    findings = paper_findings(representation, attacks, correlations)
    run.write_table("paper_findings", findings)
    data = f"{config.data.name} ({', '.join(f'{k}={v}' for k, v in config.data.params.items())})"
    report = Report(
        "Raw Zero-Shot: representation metrics and black-box attacks",
        subtitle=f"{len(representation)} architecture(s) on {data}, seed {config.seed}",
        quick=quick,
    )
    from repscope.studies.zeroshot import study as zeroshot  # noqa: PLC0415

    report.add_paragraph(zeroshot.__doc__.split("\n\n", 1)[1].replace("\n", " "))
    images = rows[0]["_scores"]["params"]["images"]
    report.add_table(
        representation.round(4),
        title="Representation metrics (the paper's Tables 2 and 3)",
        caption=(
            "accuracy: the full model's test accuracy; loo_accuracy: mean test accuracy of the n models without "
            "one class, on the other classes. dbi: the paper's Eq. 3 (within-cluster scatter, lower = tighter), "
            "mean and std over classes; davies_bouldin: scikit-learn's standard index of the same clusters. "
            f"am: Eq. 4 with summed soft-labels, which grows with the images per class ({min(images)}-{max(images)} "
            "here); am_per_image: the same divided by the image count. The paper's Table 3 values (101-281) "
            "exceed Eq. 4's bound for its 1,000 test images a class (2 x 1000 / 9 = 222) and the script that "
            "computed them is not released: compare the order of the architectures, not the values. "
            "Lower is better for all four. soft_label_kind: what the metrics read (probabilities, or CapsNet's "
            "raw capsule lengths with soft_labels: reference, the authors' code's outputs)."
        ),
    )
    report.add_table(
        attacks,
        title="Successful attacks (the paper's Table 1)",
        caption=(
            f"Out of {attack_images} test images per column, every one classified correctly by every full "
            f"classifier here; {', '.join(NORM_TITLES[n] for n in config.attack.norms)} at thresholds "
            f"{', '.join(map(str, config.attack.thresholds))} (pixels / 0-255 levels), "
            + (
                f"CMA-ES with at most {config.attack.budget} generations (the adversarial-robustness-toolbox's search)."
                if config.attack.search == "art"
                else "the authors' DQA search: one CMA-ES generation of 400 candidates."
            )
        ),
    )
    if len(correlations):
        report.add_table(
            correlations.round(3),
            title="Spearman rank correlation across architectures: metric against attack successes",
            caption="Positive: the worse (higher) the metric, the more attacks succeed. p_value: two-sided, exact "
            "(all orderings) up to 10 architectures, scipy's t approximation beyond. With 5 architectures only "
            "rho = +-1 reaches p < 0.05.",
        )
    report.add_table(findings, title="The paper's findings on this run")
    paper = pd.DataFrame([{"architecture": label, **values} for label, values in PAPER_TABLES.items()])
    report.add_table(paper, title="The paper's Tables 1-3 (CIFAR-10; 100 images x 4 thresholds per norm)")
    figures = [
        ("isomap", projection_grid(soft_labels, "isomap", config.projection_n, config.seed), "Isomap (Fig. 2)"),
        ("tsne", projection_grid(soft_labels, "tsne", config.projection_n, config.seed), "t-SNE (Fig. 5)"),
        ("amalgam_histograms", amalgam_histogram_grid(soft_labels), "h' and h (Fig. 4)"),
        ("amalgam_differences", amalgam_histogram_grid(soft_labels, difference=True), "D = |h' - h| (Fig. 6)"),
        (
            "amalgam_by_class",
            amalgam_by_class(
                {row["architecture"]: row["_scores"]["am_per_image_per_class"] for row in rows},
                next(iter(soft_labels.values())).class_names,
            ),
            "AM per excluded class (Fig. 3)",
        ),
    ]
    for name, figure, caption in figures:
        report.add_figure(run.save_figure(name, figure), caption=caption)
    report.add_paragraph(
        "Files: softlabels/<architecture>.npz (repscope zeroshot metrics reads it), models/ (one training run per "
        "model), attacks/ (per-image results), tables/, figures/."
    )
    return run.write_report(report)


__all__ = ["paper_findings", "paper_rank_correlations", "write_zeroshot_report"]

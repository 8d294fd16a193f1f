"""Figures and the HTML report of ``repscope mmvae evaluate`` (one page per evaluated run).

The page holds, in order: the headline numbers; cross- and joint-coherency with examples of each
direction; the test log-likelihoods; the per-modality KL and reconstruction terms over training; the
linear factorisation of the latents beside its chance level; a t-SNE of the latents coloured by each
attribute; latent traversals as an image grid and a table of captions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from repscope.errors import InvalidArgumentError
from repscope.report.figures import new_figure, traversal_grid
from repscope.report.html import Report

RECON_PREFIX = "val_recon_"
KL_PREFIX = "val_kl_"

# the evaluation's settings among the numbers of its metrics.json: shown apart from the results
SETTING_KEYS = (
    "level",
    "n",
    "seed",
    "training_seed",
    "k",
    "n_analysis",
    "batch_size",
    "batch_size_log_likelihood",
    "joint_traversal_steps",
    "seconds",
)
DIRECTION_LABELS = {
    "text_to_image": "Text \u2192 image",
    "image_to_text": "Image \u2192 text",
    "joint": "Joint",
    "joint_traversal": "Joint (traversals)",
}
SCORE_LABELS = {"strict": "Strict (%)", "features": "Features (right attributes)", "letters": "Letters (%)"}
SETTING_LABELS = {
    "level": "CdSprites+ level",
    "n": "test samples per direction",
    "seed": "seed",
    "training_seed": "training seed",
    "k": "importance samples K",
    "n_analysis": "samples analysed (log-likelihood, probes, t-SNE)",
    "batch_size": "batch size",
    "batch_size_log_likelihood": "batch size (log-likelihood)",
    "joint_traversal_steps": "traversal steps",
    "seconds": "seconds",
}


TABLE_COLUMN_LABELS = {
    "strict_percent": "Strict (%)",
    "features": "Features",
    "letters_percent": "Letters (%)",
    "mean_nats": "mean (nats)",
    "std_nats": "std (nats)",
    "sem_nats": "standard error (nats)",
    "n_train": "fitted on",
    "n_test": "tested on",
}


def readable_columns(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with readable column names for the page (the CSV files keep theirs):
    :data:`TABLE_COLUMN_LABELS`, and ``<attribute>_percent`` -> ``<attribute> (%)``.

    Parameters
    ----------
    table : pandas.DataFrame
        A table of the evaluation (coherency, log-likelihood, linear probes).

    Returns
    -------
    pandas.DataFrame
        A renamed copy.
    """

    def label(column: Any) -> Any:
        name = str(column)
        if name in TABLE_COLUMN_LABELS:
            return TABLE_COLUMN_LABELS[name]
        if name.endswith("_percent"):
            return f"{name[: -len('_percent')].replace('_', ' ')} (%)"
        return column

    return table.rename(columns=label)


def headline_label(key: str) -> str:
    """A readable label of one of the evaluation's metric names (``metrics.json`` keys).

    ``<direction>_<score>[_toolkit]`` -> ``Text \u2192 image coherency, Strict (%)`` (``, toolkit's rules``);
    ``log_likelihood_<estimate>`` -> ``Log-likelihood, <estimate> (nats per example)``;
    ``linear_<attribute>[_<modality>|_chance]`` -> ``Linear probe accuracy, <attribute> (joint posterior)``
    (``(posterior of <modality>)``, ``(chance)``); a setting's own label (:data:`SETTING_LABELS`); any
    other key with its underscores as spaces.

    Parameters
    ----------
    key : str
        The metric's name.

    Returns
    -------
    str
        The label.
    """
    toolkit = key.endswith("_toolkit")
    core = key[: -len("_toolkit")] if toolkit else key
    for direction, label in sorted(DIRECTION_LABELS.items(), key=lambda item: -len(item[0])):
        for score, score_label in SCORE_LABELS.items():
            if core == f"{direction}_{score}":
                return f"{label} coherency, {score_label}" + (", toolkit's rules" if toolkit else "")
    if key.startswith("log_likelihood_"):
        return f"Log-likelihood, {key[len('log_likelihood_') :].replace('_', ' ')} (nats per example)"
    if key.startswith("linear_"):
        parts = key[len("linear_") :].split("_", 1)
        attribute, rest = parts[0], (parts[1] if len(parts) > 1 else "")
        if rest == "chance":
            return f"Linear probe chance, {attribute}"
        where = f"posterior of {rest.replace('_', ' ')}" if rest else "joint posterior"
        return f"Linear probe accuracy, {attribute} ({where})"
    if key in SETTING_LABELS:
        return SETTING_LABELS[key]
    return key.replace("_", " ")


def loss_term_columns(curves: pd.DataFrame) -> dict[str, dict[str, str]]:
    """The per-modality columns of a run's ``training_curves.csv``: ``{"reconstruction": {modality:
    column}, "kl": {modality: column}}`` (columns ``val_recon_<m>`` and ``val_kl_<m>``; empty when absent)."""
    found: dict[str, dict[str, str]] = {"reconstruction": {}, "kl": {}}
    for column in curves.columns:
        if column.startswith(RECON_PREFIX) and len(column) > len(RECON_PREFIX):
            found["reconstruction"][column[len(RECON_PREFIX) :]] = column
        elif column.startswith(KL_PREFIX) and len(column) > len(KL_PREFIX):
            found["kl"][column[len(KL_PREFIX) :]] = column
    return found


def loss_terms_figure(curves: pd.DataFrame) -> Figure | None:
    """Reconstruction ``-log p(x_m | z)`` and ``KL(q(z | x_m) || p(z))`` per modality over the epochs.

    Parameters
    ----------
    curves : pandas.DataFrame
        A run's ``tables/training_curves.csv``: ``epoch`` and ``val_recon_<m>`` / ``val_kl_<m>`` columns.

    Returns
    -------
    matplotlib.figure.Figure or None
        Two panels (reconstruction, KL), one line per modality; None when the table has no such column.
    """
    columns = loss_term_columns(curves)
    if not (columns["reconstruction"] or columns["kl"]) or "epoch" not in curves:
        return None
    fig = new_figure(8.0, 3.0)
    axes = fig.subplots(1, 2)
    epochs = curves["epoch"].to_numpy(dtype=float) + 1
    for ax, (term, label) in zip(
        axes, (("reconstruction", "reconstruction  -log p(x_m | z)  [nats]"), ("kl", "KL(q(z | x_m) || p(z))  [nats]"))
    ):
        for modality, column in columns[term].items():
            values = curves[column].to_numpy(dtype=float)
            if np.isfinite(values).any():
                ax.plot(epochs, values, marker="o", markersize=3, label=modality)
        ax.set_xlabel("epoch")
        ax.set_ylabel(label, fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        finite = curves[list(columns[term].values())].to_numpy(dtype=float) if columns[term] else np.zeros(0)
        finite = finite[np.isfinite(finite)]
        if finite.size and finite.min() > 0 and finite.max() > 20 * finite.min():
            ax.set_yscale("log")  # an image's terms are thousands of nats, a caption's tens
        if columns[term]:
            ax.legend(fontsize=7)
    return fig


def tsne_figure(
    embedding: Any,
    attributes: Any,
    names: Sequence[str],
    class_words: Mapping[str, Sequence[str]] | None = None,
    max_columns: int = 3,
) -> Figure:
    """A t-SNE embedding drawn once per attribute, points coloured by the attribute's class.

    Parameters
    ----------
    embedding : array-like, shape (N, 2)
        The embedded points.
    attributes : array-like of int, shape (N, A)
        Class of each attribute per point.
    names : sequence of str
        The A attribute names (panel titles).
    class_words : mapping, optional
        Attribute -> the word of each class (legend); default the class indices.
    max_columns : int, default=3
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
    """
    embedding = np.asarray(embedding, dtype=float)
    table = np.asarray(attributes)
    table = table[:, None] if table.ndim == 1 else table
    if embedding.ndim != 2 or embedding.shape[1] != 2:
        raise InvalidArgumentError(f"embedding: expected shape (N, 2), got {embedding.shape}")
    if table.shape != (embedding.shape[0], len(names)):
        raise InvalidArgumentError(
            f"attributes: expected shape ({embedding.shape[0]}, {len(names)}), got {table.shape}"
        )
    count = len(names)
    columns = max(1, min(max_columns, count))
    rows = -(-count // columns)
    fig = new_figure(3.2 * columns, 3.0 * rows)
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False)).ravel()
    colours = [f"C{i}" for i in range(10)]
    for index, ax in enumerate(axes):
        if index >= count:
            ax.set_axis_off()
            continue
        name = names[index]
        words = (class_words or {}).get(name)
        for value in np.unique(table[:, index]):
            chosen = table[:, index] == value
            label = words[int(value)] if words is not None and 0 <= int(value) < len(words) else str(value)
            ax.scatter(*embedding[chosen].T, s=5, alpha=0.7, color=colours[int(value) % 10], label=label)
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(fontsize=6, markerscale=2, loc="best")
    return fig


def traversal_figure(
    images: Any, values: Sequence[float], dims: Sequence[int] | None = None, model: str | None = None
) -> Figure:
    """Latent traversals as an image grid: one row per latent dimension, one column per value.

    Parameters
    ----------
    images : array-like, shape (R, S, H, W, 3)
        Decoded images (uint8 or float in [0, 1]).
    values : sequence of float
        The S values of the traversed dimension (column labels).
    dims : sequence of int, optional
        The R traversed dimensions (row labels ``z<d>``); default 0..R-1.
    model : str, optional
        The model's name (and level), named in the title above the grid.

    Returns
    -------
    matplotlib.figure.Figure
    """
    images = np.asarray(images)
    if images.ndim != 5:
        raise InvalidArgumentError(f"images: expected shape (rows, values, H, W, C), got {images.shape}")
    dims = list(range(images.shape[0])) if dims is None else list(dims)
    # two short lines: a title wider than a small grid would be cut at the figure's edge
    title = f"{model}: latent traversals" if model else "Latent traversals"
    return traversal_grid(
        images,
        row_labels=[f"z{d}" for d in dims],
        col_labels=[f"{v:g}" for v in values],
        title=f"{title}\nrow z<d> varies latent d over the columns' values, the others fixed",
    )


def traversal_caption_table(
    captions: Sequence[Sequence[str]], values: Sequence[float], dims: Sequence[int]
) -> pd.DataFrame:
    """Traversal captions as a table: one row per dimension, one column per value."""
    return pd.DataFrame(
        [[str(caption) for caption in row] for row in captions],
        index=pd.Index([f"z{d}" for d in dims], name="dimension"),
        columns=[f"{v:g}" for v in values],
    )


def _add_figure(report: Report, figures: Mapping[str, Path], name: str, caption: str) -> None:
    if name in figures:
        report.add_figure(figures[name], caption=caption)


def evaluation_report(
    summary: Mapping[str, Any],
    tables: Mapping[str, pd.DataFrame],
    figures: Mapping[str, Path],
    notes: Mapping[str, str] | None = None,
    warnings: Sequence[str] = (),
    files: Sequence[Path] = (),
    base: Path | None = None,
) -> Report:
    """The evaluation page (module docstring) of one run.

    Parameters
    ----------
    summary : mapping
        The evaluation's ``metrics.json`` (``model``, ``level``, ``run``, ``n``, ``seed``, ``k``, ... and
        the headline numbers).
    tables : mapping of str to pandas.DataFrame
        Any of ``coherency``, ``log_likelihood``, ``linear_factorisation``, ``traversal_captions``.
    figures : mapping of str to pathlib.Path
        Any of ``text_to_image``, ``image_to_text``, ``joint_samples``, ``loss_terms``, ``tsne``, ``traversals``.
    notes : mapping of str to str, optional
        A note for a section whose figure or table is missing (e.g. ``loss_terms``), by the same names.
    warnings : sequence of str
        Shown at the top.
    files : sequence of pathlib.Path
        Listed at the end, linked relative to ``base``.
    base : pathlib.Path, optional
        The folder of the page.

    Returns
    -------
    repscope.report.Report
    """
    notes = dict(notes or {})
    report = Report(
        f"Evaluation of {summary.get('model')} on CdSprites+ level {summary.get('level')}",
        subtitle=f"run {summary.get('run')}; {summary.get('n')} test samples per direction, seed {summary.get('seed')}",
    )
    for warning in warnings:
        report.add_warning(warning)
    _add_numbers(report, summary)
    _add_coherency(report, summary.get("level"), tables, figures)
    _add_log_likelihood(report, tables, notes)
    _add_loss_terms(report, figures, notes)
    _add_latent_analysis(report, tables, figures, notes)
    if files:
        report.add_files(list(files), base=base, title="Files")
    return report


def _add_numbers(report: Report, summary: Mapping[str, Any]) -> None:
    """The headline numbers, then the settings (:data:`SETTING_KEYS`) apart."""
    numbers = {
        key: value for key, value in summary.items() if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    headline = {headline_label(key): value for key, value in numbers.items() if key not in SETTING_KEYS}
    report.add_metrics(headline, title="Headline numbers")
    settings = {headline_label(key): numbers[key] for key in SETTING_KEYS if key in numbers and key != "seconds"}
    if settings:
        report.add_metrics(settings, title="Settings")


def _add_coherency(report: Report, level: Any, tables: Mapping[str, pd.DataFrame], figures: Mapping[str, Path]) -> None:
    report.add_heading("Cross- and joint-coherency")
    report.add_paragraph(
        "Strict: % of samples with every attribute right (a caption must be exactly right). Features: mean "
        f"number of right attributes per sample, of the level's {level}. Letters: % of caption characters "
        "right, position by position. Generated images are judged by the level's judges (attribute "
        "classifiers); joint pairs are decoded from the same prior sample and judged against each other "
        "(Sejnova et al., Sec. 3.3)."
    )
    if "coherency" in tables:
        report.add_table(readable_columns(tables["coherency"]), title="Coherency")
    _add_figure(report, figures, "text_to_image", "Text -> image: images generated from the test captions (titles)")
    _add_figure(report, figures, "image_to_text", "Image -> text: test images titled with the generated captions")
    _add_figure(report, figures, "joint_samples", "Joint: image and caption decoded from the same prior sample")


def _add_log_likelihood(report: Report, tables: Mapping[str, pd.DataFrame], notes: Mapping[str, str]) -> None:
    if "log_likelihood" in tables:
        report.add_heading("Test log-likelihood")
        report.add_paragraph(
            "Importance-sampled estimates of log p(x) per test example, in nats (higher is better): "
            "log p(x_S) ~ logsumexp_k log w_k - log K with w_k = p(x_S | z_k) p(z_k) / q(z_k | x_G), K samples "
            "from the posterior (Burda et al., 2016; a lower bound in expectation that tightens as K grows). "
            "Joint: every modality given and scored; a modality: given and scored alone. Captions are scored on "
            "their characters and the two spaces that end them."
        )
        report.add_table(readable_columns(tables["log_likelihood"]), title="Log-likelihood (nats per example)")
    elif "log_likelihood" in notes:
        report.add_heading("Test log-likelihood")
        report.add_paragraph(notes["log_likelihood"])


def _add_loss_terms(report: Report, figures: Mapping[str, Path], notes: Mapping[str, str]) -> None:
    report.add_heading("KL divergence and reconstruction per modality (training)")
    if "loss_terms" in figures:
        report.add_figure(
            figures["loss_terms"],
            caption="Validation reconstruction -log p(x_m | z) (z from the joint posterior) and "
            "KL(q(z | x_m) || p(z)) per modality, per epoch",
        )
    else:
        report.add_paragraph(notes.get("loss_terms", "No per-modality loss terms were logged in training."))


def _add_latent_analysis(
    report: Report, tables: Mapping[str, pd.DataFrame], figures: Mapping[str, Path], notes: Mapping[str, str]
) -> None:
    """The linear probes, the t-SNE and the traversals of the latents."""
    if "linear_factorisation" in tables:
        report.add_heading("Latent factorisation")
        report.add_paragraph(
            "Accuracy of a linear classifier (logistic regression on standardised posterior means) predicting "
            "each attribute, on a held-out quarter of the test samples; chance is the accuracy of always "
            "answering the commonest class of the fitted part. Posterior: the latents from every modality "
            "(joint) or from one alone."
        )
        report.add_table(readable_columns(tables["linear_factorisation"]), title="Linear probe accuracy", max_rows=None)
    if "tsne" in figures:
        report.add_heading("t-SNE of the latents")
        report.add_figure(figures["tsne"], caption="t-SNE of the joint posterior means, coloured by each attribute")
    elif "tsne" in notes:
        report.add_heading("t-SNE of the latents")
        report.add_paragraph(notes["tsne"])
    if "traversals" in figures or "traversal_captions" in tables:
        report.add_heading("Latent traversals")
        report.add_paragraph(
            notes.get(
                "traversals",
                "Each row sets one latent dimension to the column's value, the others held at the base latent; "
                "every latent is decoded into an image and a caption.",
            )
        )
        _add_figure(report, figures, "traversals", "Images decoded along each latent dimension (rows)")
        if "traversal_captions" in tables:
            report.add_table(tables["traversal_captions"], title="Captions decoded along each dimension", max_rows=None)


__all__ = [
    "SETTING_KEYS",
    "evaluation_report",
    "headline_label",
    "readable_columns",
    "loss_term_columns",
    "loss_terms_figure",
    "traversal_caption_table",
    "traversal_figure",
    "tsne_figure",
]

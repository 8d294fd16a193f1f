"""Figures of the Raw Zero-Shot study (Vargas et al., Figs. 2-6): projections of the unknown classes'
soft-labels and the Amalgam Metric's histograms, one row per architecture and one column per class."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from scipy.sparse import SparseEfficiencyWarning
from sklearn.manifold import TSNE, Isomap

from repscope.data.zeroshot.softlabels import SoftLabels
from repscope.metrics.zeroshot import amalgam_histograms
from repscope.progress import progress_bar
from repscope.report.figures import new_figure

PANEL = 1.25  # inches per panel


def _draw(points: np.ndarray, limit: int, seed: int) -> np.ndarray:
    if len(points) <= limit:
        return points
    return points[np.sort(np.random.default_rng(seed).choice(len(points), size=limit, replace=False))]


def projection_grid(
    soft_labels: Mapping[str, SoftLabels], method: str = "isomap", limit: int = 200, seed: int = 0
) -> Figure:
    """Two-dimensional projections of each unknown class's soft-labels (the paper's Fig. 2, Isomap, and
    Fig. 5, t-SNE): row = architecture, column = excluded class, points = that class's test images as the
    model without it saw them. Isomap panels share one scale (its coordinates are soft-label distances);
    t-SNE panels are scaled each on its own.

    Parameters
    ----------
    soft_labels : mapping of str to SoftLabels
        Architecture label -> its soft-labels (the ``loo`` arrays are projected).
    method : {"isomap", "tsne"}
        Isomap (5 neighbours; a topology-preserving embedding) or t-SNE (perplexity up to 30, PCA start).
    limit : int
        At most this many points per panel (a seeded draw; t-SNE is quadratic in them).
    seed : int
        Seed of the draw and of t-SNE.

    Returns
    -------
    matplotlib.figure.Figure
    """
    labels = list(soft_labels)
    classes = max(s.num_classes for s in soft_labels.values())
    fig = new_figure(PANEL * classes + 0.8, PANEL * len(labels) + 0.6)
    # Isomap keeps the soft-label distances, so one scale for every panel shows which architecture's
    # clusters are tighter (the paper's reading of Fig. 2); t-SNE's distances are not comparable
    shared = method == "isomap"
    axes = fig.subplots(len(labels), classes, squeeze=False, sharex=shared, sharey=shared)
    panels = sum(len(soft_labels[label].loo) for label in labels)
    name = "Isomap" if method == "isomap" else "t-SNE"
    with progress_bar(f"{name} projections of the unknown classes' soft-labels (panels)", total=panels) as update:
        done = 0
        for row, label in enumerate(labels):
            for i, points in enumerate(soft_labels[label].loo):
                ax = axes[row, i]
                ax.set_xticks([])
                ax.set_yticks([])
                sample = _draw(points, limit, seed + i)
                if len(sample) >= 4:
                    ax.scatter(*_project(sample, method, seed).T, s=2, alpha=0.6, color=f"C{row}")
                if row == 0:
                    ax.set_title(soft_labels[label].class_names[i], fontsize=7)
                if i == 0:
                    ax.set_ylabel(label, fontsize=8)
                done += 1
                update(done)
    fig.suptitle(f"{'Isomap' if method == 'isomap' else 't-SNE'} of the unknown classes' soft-labels", fontsize=9)
    return fig


def _project(points: np.ndarray, method: str, seed: int) -> np.ndarray:
    if np.ptp(points, axis=0).max() == 0:  # one point repeated: nothing to spread
        return np.zeros((len(points), 2))
    if method == "isomap":
        with warnings.catch_warnings():
            # tight clusters of soft-labels often split the neighbour graph; Isomap then joins its parts,
            # which is what the figure needs, and says so at length
            warnings.filterwarnings("ignore", message=".*connected components.*")
            warnings.filterwarnings("ignore", category=SparseEfficiencyWarning)
            return Isomap(n_neighbors=min(5, len(points) - 1), n_components=2).fit_transform(points)
    perplexity = float(min(30, max(2, (len(points) - 1) // 3)))
    return TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(points)


def amalgam_histogram_grid(soft_labels: Mapping[str, SoftLabels], difference: bool = False) -> Figure:
    """The Amalgam Metric's histograms (the paper's Fig. 4: ``h'_i`` and ``h_i`` side by side per known
    class; with ``difference``, Fig. 6: ``D = |h'_i - h_i|``), per image (divided by ``m_i``) so that
    classes of different sizes share a scale.

    Parameters
    ----------
    soft_labels : mapping of str to SoftLabels
        Architecture label -> its soft-labels.
    difference : bool
        Plot ``|h' - h|`` instead of the two histograms.

    Returns
    -------
    matplotlib.figure.Figure
    """
    labels = list(soft_labels)
    classes = max(s.num_classes for s in soft_labels.values())
    # room under the bottom row for the known classes' names, written upright
    longest = max(len(name) for s in soft_labels.values() for name in s.class_names)
    fig = new_figure(PANEL * classes + 0.8, PANEL * len(labels) + 1.0 + 0.055 * longest)
    axes = fig.subplots(len(labels), classes, squeeze=False, sharey="row")
    for row, label in enumerate(labels):
        data = soft_labels[label]
        h_prime, h = amalgam_histograms(data.loo, data.full, data.kind)
        counts = np.array([len(e) for e in data.loo], dtype=np.float64)[:, None]
        h_prime, h = h_prime / counts, h / counts
        for i in range(data.num_classes):
            ax = axes[row, i]
            known = np.arange(data.num_classes - 1)
            if difference:
                ax.bar(known, np.abs(h_prime[i] - h[i]), color=f"C{row}")
            else:
                ax.bar(known - 0.2, h_prime[i], width=0.4, color="0.6", label="h' (full model)")
                ax.bar(known + 0.2, h[i], width=0.4, color=f"C{row}", label="h (without the class)")
            # the bars are the known classes of the model without class i, in base order (i left out)
            if row == len(labels) - 1:
                ax.set_xticks(known)
                ax.set_xticklabels([n for k, n in enumerate(data.class_names) if k != i], rotation=90, fontsize=5)
            else:
                ax.set_xticks([])
            ax.tick_params(axis="y", labelsize=6)
            if row == 0:
                ax.set_title(f"without {data.class_names[i]}", fontsize=7)
            if i == 0:
                ax.set_ylabel(label, fontsize=8)
    fig.supxlabel("known classes (each column: the model trained without the class above it)", fontsize=7)
    if not difference:
        handles, names = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, names, fontsize=7, loc="outside upper right", ncols=2)
    what = "|h' - h| per known class (Fig. 6)" if difference else "h' (grey, full model) and h (without the class)"
    fig.suptitle(f"Amalgam histograms per image: {what}", fontsize=9)
    return fig


def amalgam_by_class(per_class: Mapping[str, Sequence[float]], class_names: Sequence[str]) -> Figure:
    """``||h'_i - h_i||_1 / (n - 1)`` per class and architecture (the paper's Fig. 3), per image.

    Parameters
    ----------
    per_class : mapping of str to sequence of float
        Architecture label -> its per-class terms (``am_per_image_per_class``).
    class_names : sequence of str
        The class names, in order.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = new_figure(6.5, 3.2)
    ax = fig.subplots()
    positions = np.arange(len(class_names))
    for k, (label, values) in enumerate(per_class.items()):
        ax.plot(positions, values, marker="o", color=f"C{k}", label=label)
    ax.set_xticks(positions)
    ax.set_xticklabels(class_names, rotation=30, fontsize=7, ha="right")
    ax.set_ylabel("||h' - h||_1 / (n - 1), per image")
    ax.set_title("Amalgam Metric per excluded class", fontsize=9)
    ax.legend(fontsize=7)
    return fig


__all__ = ["amalgam_by_class", "amalgam_histogram_grid", "projection_grid"]

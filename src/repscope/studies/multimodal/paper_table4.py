"""Sejnova et al.'s Table 4 (CdSprites+, the four models on levels 1-5, mean (standard deviation) over five
seeds) as printed, and the comparison of a leaderboard with it.

The paper's numbers were scored by the authors' toolkit's rules; a leaderboard whose runs have those
(``<metric>_toolkit``, :mod:`repscope.studies.multimodal.coherency` with ``compat: toolkit``) is compared by
them, otherwise by ours (the ``rules`` column says which).

A cell of ours lies *within the paper's spread* when ``|ours - paper| <= paper_std + rounding / 2``: the
paper's mean plus or minus its standard deviation, widened by half the unit the paper rounds to (1 point for
percentages, 0.1 for Features), so that a printed ``0 (0)`` accepts anything that rounds to 0. The check
compares means only; a leaderboard row of one seed has no spread of its own.

Table 4 reports one latent size per (level, model), the best of the paper's grid (Dims: MVAE, MMVAE and
MoPoE 16 / 24 / 32, DMVAE 10 shared + 10 private per modality = 30). A row of ours of another size is
compared all the same and its Dims are shown beside the paper's. Level 2's MVAE row prints 12 dims, a size
outside the grid; it is kept as printed.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

# the metrics of Table 4, in its column order (metrics.json keys); Features are ratios "mean (std)/L"
PAPER_METRICS = (
    "text_to_image_strict",
    "text_to_image_features",
    "image_to_text_strict",
    "image_to_text_features",
    "image_to_text_letters",
    "joint_strict",
    "joint_features",
)
# half the unit the paper rounds each kind of number to
ROUNDING = {"percent": 0.5, "features": 0.05}

# (level, model) -> (dims, ((mean, std) per PAPER_METRICS)); percentages in %, Features in attributes per sample
PAPER_TABLE4: dict[tuple[int, str], tuple[int, tuple[tuple[float, float], ...]]] = {
    (1, "mmvae"): (16, ((47, 14), (0.5, 0.1), (64, 3), (0.6, 0.0), (88, 2), (17, 10), (0.2, 0.1))),
    (1, "mvae"): (16, ((52, 3), (0.5, 0.0), (63, 8), (0.6, 0.1), (86, 2), (5, 9), (0.1, 0.1))),
    (1, "mopoe"): (16, ((33, 3), (0.3, 0.0), (10, 17), (0.1, 0.2), (26, 7), (16, 27), (0.2, 0.3))),
    (1, "dmvae"): (30, ((33, 4), (0.3, 0.0), (4, 5), (0.0, 0.0), (25, 2), (4, 6), (0.0, 0.1))),
    (2, "mmvae"): (16, ((18, 4), (0.8, 0.1), (41, 20), (1.4, 0.2), (85, 4), (3, 3), (0.6, 0.1))),
    (2, "mvae"): (12, ((16, 1), (0.8, 0.0), (55, 27), (1.5, 0.3), (91, 6), (1, 1), (0.3, 0.3))),
    (2, "mopoe"): (16, ((10, 3), (0.8, 0.0), (8, 7), (0.7, 0.1), (40, 4), (1, 1), (0.2, 0.1))),
    (2, "dmvae"): (30, ((15, 2), (0.8, 0.0), (4, 1), (0.4, 0.0), (30, 2), (0, 0), (0.2, 0.1))),
    (3, "mmvae"): (16, ((6, 2), (1.2, 0.2), (2, 3), (0.6, 0.2), (31, 5), (0, 0), (0.4, 0.1))),
    (3, "mvae"): (32, ((8, 2), (1.3, 0.0), (59, 4), (2.5, 0.1), (93, 1), (0, 0), (0.5, 0.1))),
    (3, "mopoe"): (24, ((7, 4), (1.3, 0.1), (0, 0), (0.7, 0.1), (32, 0), (0, 0), (1.1, 0.1))),
    (3, "dmvae"): (30, ((4, 0), (1.2, 0.0), (0, 0), (0.4, 0.1), (22, 2), (1, 1), (0.5, 0.1))),
    (4, "mmvae"): (24, ((3, 3), (1.7, 0.4), (1, 2), (0.7, 0.4), (27, 9), (0, 0), (0.5, 0.2))),
    (4, "mvae"): (16, ((0, 0), (1.3, 0.0), (0, 0), (0.2, 0.3), (16, 5), (0, 0), (0.3, 0.6))),
    (4, "mopoe"): (24, ((2, 1), (1.4, 0.0), (0, 0), (0.7, 0.1), (21, 3), (0, 0), (0.1, 0.2))),
    (4, "dmvae"): (30, ((1, 1), (1.4, 0.0), (0, 0), (0.5, 0.1), (18, 1), (0, 0), (0.5, 0.1))),
    (5, "mmvae"): (24, ((0, 0), (1.8, 0.0), (0, 0), (0.1, 0.1), (13, 2), (0, 0), (0.4, 0.1))),
    (5, "mvae"): (16, ((0, 0), (1.8, 0.0), (0, 0), (0.6, 0.0), (27, 1), (0, 0), (0.2, 0.2))),
    (5, "mopoe"): (24, ((0, 0), (1.8, 0.0), (0, 0), (0.7, 0.0), (17, 1), (0, 0), (1.0, 0.0))),
    (5, "dmvae"): (30, ((0, 0), (1.8, 0.0), (0, 0), (0.6, 0.1), (18, 2), (0, 0), (0.7, 0.1))),
}


def metric_kind(metric: str) -> str:
    """``features`` for a Features metric, ``percent`` otherwise.

    Parameters
    ----------
    metric : str
        A key of :data:`PAPER_METRICS`.

    Returns
    -------
    str
        ``features`` or ``percent``.
    """
    return "features" if metric.endswith("_features") else "percent"


def within_spread(ours: float, paper_mean: float, paper_std: float, kind: str) -> bool:
    """Whether ``ours`` lies within the paper's mean +- std, widened by half its rounding unit (module docstring).

    Parameters
    ----------
    ours : float
        Our mean.
    paper_mean, paper_std : float
        The paper's cell.
    kind : {"percent", "features"}
        What the cell holds (its rounding unit).

    Returns
    -------
    bool
        ``|ours - paper_mean| <= paper_std + ROUNDING[kind]``.
    """
    return abs(ours - paper_mean) <= paper_std + ROUNDING[kind] + 1e-9


def _finite(value: Any) -> bool:
    return value is not None and isinstance(value, int | float) and math.isfinite(value)


def paper_comparison(table: pd.DataFrame) -> pd.DataFrame:
    """Each Table 4 cell of a leaderboard beside the paper's, with whether ours lies within its spread.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`repscope.studies.multimodal.leaderboard.leaderboard_table`'s table (``level``, ``model``, ``dims``,
        ``n_seeds``, ``<metric>_mean``, ``<metric>_std``).

    Returns
    -------
    pandas.DataFrame
        One row per (our row, metric) where the paper has the (level, model): ``level``, ``model``,
        ``dims``, ``paper_dims``, ``n_seeds``, ``metric``, ``rules`` (``toolkit`` where the runs were scored
        by the toolkit's rules too, else ``ours``), ``ours_mean``, ``ours_std``, ``paper_mean``, ``paper_std``
        and ``within`` (bool; a metric we lack is left out).
    """
    rows: list[dict[str, Any]] = []
    for record in table.to_dict("records"):
        paper = PAPER_TABLE4.get((int(record["level"]), str(record["model"])))
        if paper is None:
            continue
        paper_dims, cells = paper
        for metric, (paper_mean, paper_std) in zip(PAPER_METRICS, cells, strict=True):
            rules, key = "toolkit", f"{metric}_toolkit"
            if not _finite(record.get(f"{key}_mean")):
                rules, key = "ours", metric
            mean = record.get(f"{key}_mean")
            if not _finite(mean):
                continue
            rows.append(
                {
                    "level": int(record["level"]),
                    "model": record["model"],
                    "dims": int(record["dims"]),
                    "paper_dims": paper_dims,
                    "n_seeds": int(record["n_seeds"]),
                    "metric": metric,
                    "rules": rules,
                    "ours_mean": float(mean),
                    "ours_std": float(record.get(f"{key}_std", math.nan)),
                    "paper_mean": float(paper_mean),
                    "paper_std": float(paper_std),
                    "within": within_spread(float(mean), paper_mean, paper_std, metric_kind(metric)),
                }
            )
    return pd.DataFrame(rows)


__all__ = ["PAPER_METRICS", "PAPER_TABLE4", "metric_kind", "paper_comparison", "within_spread"]

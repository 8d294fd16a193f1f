"""What ``repscope assess`` computes for one model: the :class:`Assessment` every role returns.

An assessment is a study's result (compute -> result -> write -> report): numbers, tables and arrays,
with no file I/O until :meth:`Assessment.write`. Its headline rows place each number beside its
reference points: the chance level on the same data, a bootstrap confidence interval where the metric
has one, the paper's printed value for a comparable setting, and repscope's own trained model on the same
data where one was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["HEADLINE_COLUMNS", "Assessment", "HeadlineRow", "chance_notes"]

# the columns of Assessment.to_frame(), in order
HEADLINE_COLUMNS = (
    "assessment",
    "metric",
    "value",
    "chance",
    "ci_low",
    "ci_high",
    "paper",
    "paper_source",
    "repscope",
    "repscope_source",
    "description",
)


@dataclass(frozen=True)
class HeadlineRow:
    """One headline number and its reference points.

    Attributes
    ----------
    assessment : str
        The assessment it belongs to (``disentanglement``, ``cg``, ``invariance/rotation``, ``attacks``,
        ``zeroshot``, ``diversity``, ``morphometrics``, ``coherency``, ...).
    metric : str
        The metric's key, as in ``metrics.json`` (``mig``, ``irs``, ``robust_accuracy``, ...).
    value : float
        The model's value.
    chance : float, optional
        The value a model without the property gets on the same data (the metric of codes shuffled across
        rows, ``1 / classes``, ...); ``None`` where the metric has no meaningful chance level.
    ci_low, ci_high : float, optional
        A bootstrap confidence interval (95% unless ``description`` says otherwise).
    paper : float, optional
        The paper's printed value for the most comparable setting; ``paper_source`` names it
        (``"CANDLE Table 2, beta-VAE on dSprites"``).
    repscope : float, optional
        repscope's own trained model on the same data; ``repscope_source`` names the run or measurement.
    description : str
        One line: what the number measures and which way is better.
    """

    assessment: str
    metric: str
    value: float
    chance: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    paper: float | None = None
    paper_source: str | None = None
    repscope: float | None = None
    repscope_source: str | None = None
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The row as a plain dict (JSON-ready; missing values are ``None``)."""
        return {name: _plain(getattr(self, name)) for name in HEADLINE_COLUMNS}


@dataclass(frozen=True)
class Assessment:
    """Everything ``repscope assess`` found about one model in one role.

    Attributes
    ----------
    role : str
        ``encoder``, ``classifier``, ``generator`` or ``multimodal``.
    model : str
        What was assessed (its source: a run directory, ``pkg.module:factory``, a file), for the record.
    data : str
        The data it was assessed on.
    metrics : dict
        The numbers by name, nested by assessment (``metrics["disentanglement"]["mig"]``); JSON-ready.
    headline : tuple of HeadlineRow
        The headline table.
    tables : dict of str to pandas.DataFrame
        Per-factor, per-class or per-transformation tables (written as ``tables/NAME.csv``).
    arrays : dict of str to numpy.ndarray
        The arrays behind the numbers (codes, soft-labels, variance matrices), written to ``arrays.npz``.
    figures : dict of str to numpy.ndarray
        Image grids for the report (traversals, samples): uint8 ``(H, W)`` or ``(H, W, 3)``.
    settings : dict
        The settings that change the values (n, seed, compat, input contract), written to ``config.yaml``.
    notes : tuple of str
        Caveats a reader must see (a small sample, a contract read from the file, an assessment skipped).
    """

    role: str
    model: str
    data: str
    metrics: dict[str, Any]
    headline: tuple[HeadlineRow, ...] = ()
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    figures: dict[str, np.ndarray] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """The headline table: one row per headline number, columns :data:`HEADLINE_COLUMNS`."""
        return pd.DataFrame([row.to_dict() for row in self.headline], columns=list(HEADLINE_COLUMNS))

    def write(self, directory: str | Path, *, overwrite: bool = False, report: bool = True) -> Path:
        """Write the assessment as a run directory: ``config.yaml``, ``metrics.json``, ``tables/*.csv``,
        ``arrays.npz``, ``figures/*.png`` and ``report.html``.

        Parameters
        ----------
        directory : str or pathlib.Path
            The run directory; an existing non-empty one is refused unless ``overwrite``.
        overwrite : bool, default=False
            Replace an existing run directory.
        report : bool, default=True
            Also write ``report.html``.

        Returns
        -------
        pathlib.Path
            The report's path (or the directory's, without a report).
        """
        from repscope.studies.assess.writing import write_assessment  # noqa: PLC0415

        return write_assessment(self, Path(directory), overwrite=overwrite, report=report)

    def merged(self, other: Assessment) -> Assessment:
        """This assessment with ``other``'s metrics, headline, tables, arrays, figures and notes added
        (two assessments of the same model and role, e.g. the invariance test and the attacks)."""
        return Assessment(
            role=self.role,
            model=self.model,
            data=self.data,
            metrics={**self.metrics, **other.metrics},
            headline=(*self.headline, *other.headline),
            tables={**self.tables, **other.tables},
            arrays={**self.arrays, **other.arrays},
            figures={**self.figures, **other.figures},
            settings={**self.settings, **other.settings},
            notes=(*self.notes, *other.notes),
        )


def chance_notes(headline: tuple[HeadlineRow, ...]) -> tuple[str, ...]:
    """One note per headline number whose confidence interval holds its chance level: the data cannot tell
    the model from one that carries no information (an untrained network, a code of noise).

    Parameters
    ----------
    headline : tuple of HeadlineRow
        The rows; those without an interval or a chance level are not judged.

    Returns
    -------
    tuple of str
    """
    notes = []
    for row in headline:
        known = [row.chance, row.ci_low, row.ci_high]
        if any(value is None or math.isnan(float(value)) for value in known):
            continue
        if float(row.ci_low) <= float(row.chance) <= float(row.ci_high):
            notes.append(
                f"{row.assessment} {row.metric}: {row.value:.3g} is within chance ({row.chance:.3g} lies in its 95% "
                f"interval {row.ci_low:.3g} to {row.ci_high:.3g}); more examples (--n) or a trained model may tell"
            )
    return tuple(notes)


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: numpy numbers as Python ones, NaN as None."""
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(float(value)) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value

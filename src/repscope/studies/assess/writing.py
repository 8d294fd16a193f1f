"""Writing an :class:`~repscope.studies.assess.assessment.Assessment`: its run directory, its report and
the headline table the terminal prints.

The run directory follows the package's conventions: ``config.yaml`` (what was assessed, on which data,
with which settings), ``metrics.json`` (the numbers by name), ``tables/*.csv`` (the headline table first),
``arrays.npz`` (codes, soft-labels, matrices), ``figures/*.png`` and ``report.html``.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.fileio import atomic_write
from repscope.outputs import output_target

# Assessment (repscope.studies.assess.assessment) is named in annotations only as a string: its write()
# imports this module, and a second import the other way would be a cycle
Assessment = Any

__all__ = ["assessment_report", "headline_text", "write_assessment"]

ROLE_TITLES = {
    "encoder": "Encoder: disentanglement of its codes",
    "classifier": "Classifier: invariance, black-box attacks and zero-shot soft-labels",
    "generator": "Generator: morphometry, diversity and code correlations of its digits",
    "multimodal": "Multimodal model: cross- and joint-coherency on CdSprites+",
}


def write_assessment(
    assessment: Assessment,
    directory: Path,
    *,
    overwrite: bool = False,
    report: bool = True,
    inputs: Any = (),
    checked: bool = False,
) -> Path:
    """Write ``assessment`` as a run directory (the one output rule: an existing non-empty ``directory`` is
    refused unless ``overwrite``, which replaces it only once the new one is whole).

    Parameters
    ----------
    assessment : Assessment
        What to write.
    directory : pathlib.Path
        The run directory.
    overwrite : bool, default=False
        Replace an existing run directory.
    report : bool, default=True
        Also write ``report.html``.
    inputs : iterable of repscope.outputs.CommandInput
        What the assessment read (the model's file, the data): a directory onto one of them is refused.
    checked : bool, default=False
        The caller already applied the output rule to ``directory`` (the command, which trains the
        zero-shot models inside it): write into it as it is.

    Returns
    -------
    pathlib.Path
        ``report.html`` (or the directory, without a report).
    """
    if checked:
        _write_into(assessment, Path(directory), report)
    else:
        with output_target(directory, overwrite=overwrite, kind="directory", inputs=inputs) as target:
            _write_into(assessment, target, report)
    final = Path(directory)
    return final / "report.html" if report else final


def _write_into(assessment: Assessment, target: Path, report: bool) -> None:
    from repscope.run_directory import RunDirectory  # noqa: PLC0415

    run = RunDirectory.create("assess", out=target, resume=True)
    run.write_config(
        {"role": assessment.role, "model": assessment.model, "data": assessment.data, **assessment.settings}
    )
    run.write_metrics({**assessment.metrics, "headline": [row.to_dict() for row in assessment.headline]})
    run.write_table("headline", assessment.to_frame())
    for name, table in assessment.tables.items():
        run.write_table(name, table, index=_shows_index(table))
    if assessment.arrays:
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **{name: np.asarray(array) for name, array in assessment.arrays.items()})
        with atomic_write(run.path("arrays.npz")) as handle:
            handle.write(buffer.getvalue())
    figures = {name: run.save_figure(name, _image_figure(image)) for name, image in assessment.figures.items()}
    if report:
        run.write_report(assessment_report(assessment, figures))


def _shows_index(table: pd.DataFrame) -> bool:
    return not isinstance(table.index, pd.RangeIndex)


def _image_figure(image: np.ndarray) -> Any:
    """A matplotlib figure showing a uint8 image grid at its own pixel size (at least 3 inches wide)."""
    from matplotlib.figure import Figure  # noqa: PLC0415

    height, width = image.shape[:2]
    scale = max(1.0, 300.0 / width)
    figure = Figure(figsize=(width * scale / 100, height * scale / 100), dpi=100)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.imshow(image, cmap="gray" if image.ndim == 2 else None, vmin=0, vmax=255, interpolation="nearest")
    axes.set_axis_off()
    return figure


def _headline_table(assessment: Assessment) -> tuple[pd.DataFrame, list[str]]:
    """The headline table as the report and the terminal show it: reference points beside each value,
    their sources as numbered notes ``[1]`` (listed in the second item), so that no cell runs wide."""
    frame = assessment.to_frame()
    sources: list[str] = []

    def cited(value: Any, source: Any) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "-"
        if not source:
            return _number(value)
        if source not in sources:
            sources.append(str(source))
        return f"{_number(value)} [{sources.index(str(source)) + 1}]"

    shown = pd.DataFrame(
        {
            "assessment": frame["assessment"],
            "metric": frame["metric"],
            "value": [_number(value) for value in frame["value"]],
            "95% CI": [_interval(low, high) for low, high in zip(frame["ci_low"], frame["ci_high"])],
            "chance": [_number(value) for value in frame["chance"]],
            "paper": [cited(v, s) for v, s in zip(frame["paper"], frame["paper_source"])],
            "repscope model": [cited(v, s) for v, s in zip(frame["repscope"], frame["repscope_source"])],
        }
    )
    return shown, [f"[{number}] {source}" for number, source in enumerate(sources, start=1)]


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{float(value):.3f}"


def _interval(low: Any, high: Any) -> str:
    if low is None or high is None or any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        return "-"
    return f"{_number(low)} to {_number(high)}"


def assessment_report(assessment: Assessment, figures: dict[str, Path] | None = None) -> Any:
    """The report of an assessment: the headline table with its reference points, the notes, then each
    table and figure.

    Parameters
    ----------
    assessment : Assessment
        What to report.
    figures : dict of str to pathlib.Path, optional
        The figures' PNG files (as written in the run directory); without them the figures are drawn now.

    Returns
    -------
    repscope.report.Report
    """
    from repscope.report import Report  # noqa: PLC0415

    report = Report(
        ROLE_TITLES.get(assessment.role, assessment.role), subtitle=f"{assessment.model} on {assessment.data}"
    )
    for note in assessment.notes:
        report.add_warning(note)
    report.add_paragraph(
        "Each value stands beside its reference points: the chance level (the same metric where the model "
        "carries no information: codes shuffled across images, 1 / classes), a bootstrap 95% confidence "
        "interval where the metric has one, the paper's printed value for the most comparable setting, and "
        "repscope's own trained model on the same data where one was measured. A dash: no such reference."
    )
    table, sources = _headline_table(assessment)
    report.add_table(table, title="Headline", max_rows=None)
    for source in sources:
        report.add_paragraph(source)
    for name, table in assessment.tables.items():
        report.add_table(table, title=name.replace("_", " "), max_rows=60)
    for name, image in assessment.figures.items():
        source = (figures or {}).get(name)
        report.add_figure(source if source is not None else _image_figure(image), caption=name.replace("_", " "))
    report.add_code("\n".join(f"{key}: {value}" for key, value in assessment.settings.items()))
    return report


def headline_text(assessment: Assessment) -> str:
    """The headline table as the terminal prints it: one line per number, its chance level, CI and the
    paper's value beside it."""
    frame, sources = _headline_table(assessment)
    if frame.empty:
        return "no headline numbers"
    rows = [[str(cell) for cell in row] for row in frame.to_numpy()]
    header = list(frame.columns)
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(header, widths)).rstrip()]
    lines += ["  ".join(text.ljust(width) for text, width in zip(row, widths)).rstrip() for row in rows]
    return "\n".join([*lines, *sources])

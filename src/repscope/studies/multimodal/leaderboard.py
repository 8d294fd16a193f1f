"""The CdSprites+ leaderboard (Sejnova et al., Table 4): evaluated runs grouped by level and model, each
cell the mean (standard deviation) over seeds; the study behind ``repscope mmvae leaderboard``.

Each run directory (of ``repscope train``, evaluated by ``repscope mmvae evaluate``) gives its level,
model and latent size from ``config.yaml`` and its numbers from ``evaluation/metrics.json`` (or, for runs
evaluated before it existed, ``evaluation/coherency.json``). A given directory without ``config.yaml`` is
taken as a sweep folder: the run directories directly inside it are used.

Rows are grouped by (level, model, dims) and ordered by level, then the paper's model order (MMVAE,
MVAE, MoPoE, DMVAE: each task class's ``paper_table_rank``; then any other model by name), then dims,
so a grid over latent sizes gives one row per size as the paper's appendix tables do. Columns follow
Table 4: Text -> Image Strict [%] and Features [ratio], Image -> Text Strict [%], Features [ratio] and
Letters [%], Joint Strict [%] and Features [ratio]. Features are the mean number of right attributes
per sample, written ``mean (std)/L`` for level ``L``. The standard deviation is the sample standard
deviation over seeds (ddof 1), given from two seeds on; a group of one run shows ``(n=1)`` in its place.
Replicates are runs of a group that differ in the training seed or the data seed; two runs of one group
with the same seeds are refused as a mixed-up input.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.data.multimodal.attributes import ATTRIBUTES, check_level
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError
from repscope.fileio import write_text_atomic
from repscope.outputs import CommandInput, output_target, refuse_output_onto_inputs
from repscope.report.html import Report
from repscope.run_directory import read_metrics
from repscope.studies.multimodal.paper_table4 import metric_kind, paper_comparison
from repscope.train.reader import TrainedRun, open_run
from repscope.train.tasks.multimodal import CDSPRITES_MODALITIES, MultimodalVAETask, multimodal_models

DIRECTIONS = ("text_to_image", "image_to_text", "joint")

# (metrics.json key, Table 4 header, kind): kind "percent" or "features"
TABLE4_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("text_to_image_strict", "TxtImg Strict [%]", "percent"),
    ("text_to_image_features", "TxtImg Features [ratio]", "features"),
    ("image_to_text_strict", "ImgTxt Strict [%]", "percent"),
    ("image_to_text_features", "ImgTxt Features [ratio]", "features"),
    ("image_to_text_letters", "ImgTxt Letters [%]", "percent"),
    ("joint_strict", "Joint Strict [%]", "percent"),
    ("joint_features", "Joint Features [ratio]", "features"),
)
# the same by the authors' toolkit's scoring rules (repscope.studies.multimodal.coherency, compat "toolkit"),
# and joint coherency by traversals (A.2.3) by both rules, when the runs have them
TOOLKIT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    *((f"{key}_toolkit", header, kind) for key, header, kind in TABLE4_COLUMNS),
    ("joint_traversal_strict", "Joint by traversals Strict [%]", "percent"),
    ("joint_traversal_features", "Joint by traversals Features [ratio]", "features"),
    ("joint_traversal_strict_toolkit", "Joint by traversals Strict, toolkit [%]", "percent"),
    ("joint_traversal_features_toolkit", "Joint by traversals Features, toolkit [ratio]", "features"),
    # generated images in which the judge recognises no shape (wrong on every attribute by our rules)
    ("text_to_image_rejected", "TxtImg rejected [%]", "percent"),
    ("joint_rejected", "Joint rejected [%]", "percent"),
    ("joint_traversal_rejected", "Joint by traversals rejected [%]", "percent"),
)
# dataset-independent numbers, in the CSV and the HTML page when the runs have them: (key, header, kind)
EXTRA_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("log_likelihood_joint", "log p(image, text) [nats]", "nats"),
    ("log_likelihood_image", "log p(image) [nats]", "nats"),
    ("log_likelihood_text", "log p(text) [nats]", "nats"),
    *((f"linear_{name}", f"Linear probe: {name} [accuracy]", "fraction") for name in ATTRIBUTES),
)
DIGITS = {"percent": 1, "features": 2, "nats": 1, "fraction": 2}
EVALUATE_HINT = "run `repscope mmvae evaluate {run}` first"


# --------------------------------------------------------------------------------------------
# reading runs (shared with repscope.studies.multimodal.evaluate)


def open_cdsprites_run(run_dir: str | Path) -> TrainedRun:
    """The training run in ``run_dir`` (:func:`repscope.train.open_run`), refused unless it trained on
    CdSprites+.

    Raises
    ------
    InvalidArgumentError
        When ``run_dir`` holds no ``config.yaml`` or the run trained on another dataset.
    DataFormatError
        When its ``config.yaml`` or ``metrics.json`` is unreadable or invalid.
    """
    run = open_run(run_dir)
    if run.data_name != "cdsprites":
        raise InvalidArgumentError(f"{run_dir}: trained on {run.data_name!r}, not cdsprites")
    return run


def cdsprites_level(run: TrainedRun) -> int:
    """The CdSprites+ level ``run`` trained on: its ``data.params.level``, else the loader's default (read
    from the loader by :attr:`~repscope.train.reader.TrainedRun.data_arguments`). The one place a run's
    level is read."""
    return check_level(run.data_arguments["level"], f"{run.config_path} data.params.level")


def latent_sizes(model: str, params: dict[str, Any]) -> tuple[int, int]:
    """``(latent_dim, dims)`` of a model's params: the shared latent's size, and every latent dimension
    (shared + one private latent per modality for the models with private latents, DMVAE and MMVAE+), as
    the paper's "Dims" counts them. A setting the params leave out takes the model's default.

    Parameters
    ----------
    model : str
        The model's registry name (a model the registry does not name counts no private latents).
    params : dict
        Its ``model.params`` as trained.

    Returns
    -------
    (int, int)
        ``latent_dim`` and ``dims``.
    """
    task = multimodal_models().get(model, MultimodalVAETask)
    defaults = task.Config()
    latent_dim = int(params.get("latent_dim", defaults.latent_dim))
    if task.private_latents:
        modalities = params.get("modalities") or CDSPRITES_MODALITIES
        return latent_dim, latent_dim + len(modalities) * int(params.get("private_dim", defaults.private_dim))
    return latent_dim, latent_dim


def display_name(model: str) -> str:
    """The name a table shows for a registered model (``MMVAE+`` for ``mmvae-plus``); another as it is."""
    task = multimodal_models().get(model)
    return task.display_name if task is not None else model


def coherency_metrics(coherency: dict[str, Any]) -> dict[str, float]:
    """The headline coherency numbers by name: ``<direction>_strict`` (%), ``<direction>_features``
    (mean right attributes, 0 to the level) and ``image_to_text_letters`` (%)."""
    out = {}
    for direction in DIRECTIONS:
        scores = coherency.get(direction)
        if isinstance(scores, dict):
            for key in ("strict", "features", "letters"):
                if key in scores:
                    out[f"{direction}_{key}"] = float(scores[key])
    return out


def find_run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories among ``paths``: a path with ``config.yaml`` is a run; a folder without one is
    searched one level down (a sweep folder). Each run once, in the order found.

    Raises
    ------
    SourceNotFoundError
        When a path does not exist.
    InvalidArgumentError
        When no path is given, or a folder neither is a run nor holds one.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise InvalidArgumentError("RUN_DIRS: name at least one run directory or sweep folder")
    found: dict[Path, Path] = {}
    for path in paths:
        if not path.exists():
            raise SourceNotFoundError(f"{path}: no such run directory or sweep folder")
        if (path / "config.yaml").is_file():
            found.setdefault(path.resolve(), path)
            continue
        if not path.is_dir():
            raise InvalidArgumentError(f"{path}: not a run directory (no config.yaml) nor a folder of runs")
        # a sweep sets an interrupted start aside as <name>.interrupted-<n>: not a run of the sweep
        runs = sorted(
            child
            for child in path.iterdir()
            if child.is_dir() and (child / "config.yaml").is_file() and ".interrupted-" not in child.name
        )
        if not runs:
            raise InvalidArgumentError(
                f"{path}: holds no config.yaml and no run directory one level down; name run directories of "
                "repscope train or the sweep folder that holds them"
            )
        for run in runs:
            found.setdefault(run.resolve(), run)
    return list(found.values())


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataFormatError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(value, dict):
        raise DataFormatError(f"{path}: not a JSON object")
    return value


def read_evaluated_run(run_dir: str | Path) -> dict[str, Any]:
    """One run's identity and numbers: ``run``, ``model``, ``level``, ``dims``, ``seed``, ``data_seed``,
    ``setting`` (its training settings other than the seeds) and ``metrics``.

    Raises
    ------
    SourceNotFoundError
        When the run has no ``evaluation/metrics.json`` nor ``evaluation/coherency.json``.
    InvalidArgumentError, DataFormatError
        When the run is not a CdSprites+ run or its evaluation is of another level or model.
    """
    run_dir = Path(run_dir)
    run = open_cdsprites_run(run_dir)
    level = cdsprites_level(run)
    model = run.model_name
    _, dims = latent_sizes(model, run.model_params)
    evaluation = run_dir / "evaluation"
    if (evaluation / "metrics.json").is_file():
        metrics = read_metrics(evaluation)
        source = evaluation / "metrics.json"
    elif (evaluation / "coherency.json").is_file():
        coherency = _read_json(evaluation / "coherency.json")
        metrics = {"level": coherency.get("level"), "model": coherency.get("model"), **coherency_metrics(coherency)}
        source = evaluation / "coherency.json"
    else:
        raise SourceNotFoundError(
            f"{run_dir}: not evaluated (no evaluation/metrics.json); " + EVALUATE_HINT.format(run=run_dir)
        )
    for key, expected in (("level", level), ("model", model)):
        if metrics.get(key) is not None and metrics[key] != expected:
            raise InvalidArgumentError(
                f"{source}: is an evaluation of {key} {metrics[key]!r} but {run_dir}/config.yaml trained {key} "
                f"{expected!r}; re-run `repscope mmvae evaluate {run_dir} --overwrite`"
            )
    config = run.config
    setting = {
        "model": config.model.model_dump(mode="json"),
        "data": {k: v for k, v in run.data_params.items() if k != "seed"},
        "trainer": config.trainer.model_dump(mode="json"),
        "batch_size": config.batch_size,
    }
    return {
        "run": run_dir,
        "model": model,
        "level": level,
        "dims": int(metrics.get("dims", dims)),
        "seed": config.seed,
        "data_seed": run.data_arguments["seed"],
        "setting": setting,
        "metrics": {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
    }


def _shown(runs: list[Path]) -> str:
    return ", ".join(str(run) for run in runs[:5]) + (" ..." if len(runs) > 5 else "")


def read_evaluated_runs(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """:func:`read_evaluated_run` of every run of :func:`find_run_dirs`; one error names every run whose
    training did not finish (no ``metrics.json``: an interrupted training or sweep), or else every run that
    is not evaluated yet."""
    records, unevaluated = [], []
    for run in find_run_dirs(paths):
        try:
            records.append(read_evaluated_run(run))
        except SourceNotFoundError:
            unevaluated.append(run)
    # evaluating a training that stopped half-way cannot help: say what to finish first
    unfinished = [run for run in unevaluated if not (Path(run) / "metrics.json").is_file()]
    if unfinished:
        raise SourceNotFoundError(
            f"{len(unfinished)} run(s) whose training did not finish (no metrics.json: an interrupted training "
            f"or sweep): {_shown(unfinished)}; finish them (`repscope mmvae sweep ... --resume` with the same "
            "--out, or `repscope mmvae train ... --resume`), or give the leaderboard the finished runs' folders only"
        )
    if unevaluated:
        shown = _shown(unevaluated)
        raise SourceNotFoundError(
            f"{len(unevaluated)} run(s) not evaluated (no evaluation/metrics.json): {shown}; "
            + EVALUATE_HINT.format(run="RUN_DIR")
            + " for each"
        )
    return records


# --------------------------------------------------------------------------------------------
# the table


def _model_rank(model: str) -> tuple[int, int, str]:
    # the paper's models in its Table 4 order, then any other by name
    task = multimodal_models().get(model)
    rank = task.paper_table_rank if task is not None else None
    return (0, rank, "") if rank is not None else (1, 0, model)


def _differing_keys(first: Any, second: Any, prefix: str = "") -> list[str]:
    if isinstance(first, dict) and isinstance(second, dict):
        keys = sorted(set(first) | set(second), key=str)
        return [d for key in keys for d in _differing_keys(first.get(key), second.get(key), f"{prefix}{key}.")]
    return [] if first == second else [prefix.rstrip(".")]


def leaderboard_table(records: Sequence[dict[str, Any]]) -> tuple[pd.DataFrame, list[str]]:
    """The machine-readable leaderboard and the warnings about its groups.

    Parameters
    ----------
    records : sequence of dict
        :func:`read_evaluated_run` results.

    Returns
    -------
    (pandas.DataFrame, list of str)
        One row per (level, model, dims), ordered as the module docstring says: ``level``, ``model``,
        ``dims``, ``n_seeds``, ``seeds``, then ``<metric>_mean`` and ``<metric>_std`` (NaN below two seeds)
        for the Table 4 metrics and any of the dataset-independent ones a run has; the warnings name groups
        whose runs differ in settings other than the seeds.

    Raises
    ------
    InvalidArgumentError
        When no record is given, or two runs of a group have the same training and data seeds.
    """
    if not records:
        raise InvalidArgumentError("RUN_DIRS: no evaluated run to tabulate")
    groups: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["level"], record["model"], record["dims"]), []).append(record)
    metrics = [key for key, _, _ in TABLE4_COLUMNS]
    metrics += [key for key, _, _ in (*TOOLKIT_COLUMNS, *EXTRA_COLUMNS) if any(key in r["metrics"] for r in records)]
    rows, warnings = [], []
    for key in sorted(groups, key=lambda g: (g[0], _model_rank(g[1]), g[2])):
        members = groups[key]
        level, model, dims = key
        seen: dict[tuple[Any, Any], Path] = {}
        for member in members:
            replicate = (member["seed"], member["data_seed"])
            if replicate in seen:
                raise InvalidArgumentError(
                    f"{seen[replicate]} and {member['run']}: two runs of {model} level {level} ({dims} dims) with "
                    f"seed {member['seed']} and data seed {member['data_seed']}; a leaderboard averages over "
                    "seeds: give each run once, or keep the different settings apart"
                )
            seen[replicate] = member["run"]
            differing = _differing_keys(members[0]["setting"], member["setting"])
            if differing:
                warnings.append(
                    f"{model} level {level} ({dims} dims): {members[0]['run']} and {member['run']} differ in "
                    f"{', '.join(differing[:4])}, not only in the seed; their mean mixes settings"
                )
        row: dict[str, Any] = {
            "level": level,
            "model": model,
            "dims": dims,
            "n_seeds": len(members),
            "seeds": " ".join(str(m["seed"]) for m in members),
        }
        for metric in metrics:
            values = np.array([m["metrics"][metric] for m in members if metric in m["metrics"]], dtype=float)
            row[f"{metric}_mean"] = float(values.mean()) if values.size else math.nan
            row[f"{metric}_std"] = float(values.std(ddof=1)) if values.size >= 2 else math.nan
            if 0 < values.size < len(members):
                warnings.append(f"{model} level {level}: {metric} from {values.size} of {len(members)} runs")
        rows.append(row)
    return pd.DataFrame(rows), warnings


def format_cell(mean: float, std: float, kind: str, level: int, n_seeds: int) -> str:
    """A table cell ``mean (std)``: ``47.0 (14.2)`` for % and nats, ``0.50 (0.10)/1`` for features (of level 1),
    ``0.97 (0.01)`` for fractions; ``(n=1)`` in place of a missing std, ``-`` without a value."""
    if mean is None or not math.isfinite(mean):
        return "-"
    digits = DIGITS.get(kind, 2)
    spread = f"({std:.{digits}f})" if std is not None and math.isfinite(std) else f"(n={n_seeds})"
    text = f"{mean:.{digits}f} {spread}"
    return f"{text}/{level}" if kind == "features" else text


def display_table(table: pd.DataFrame, extra: bool = False, toolkit: bool = False) -> pd.DataFrame:
    """The paper's layout of :func:`leaderboard_table`: Level (on its first row only), Model, Dims, Seeds and
    one ``mean (std)`` column per Table 4 metric (``extra``: the dataset-independent metrics the table has;
    ``toolkit``: the Table 4 metrics by the authors' toolkit's rules and joint coherency by traversals)."""
    columns = EXTRA_COLUMNS if extra else TOOLKIT_COLUMNS if toolkit else TABLE4_COLUMNS
    rows, previous = [], None
    for record in table.to_dict("records"):
        shown = {
            "Level": "" if record["level"] == previous else str(record["level"]),
            "Model": display_name(record["model"]),
            "Dims": str(record["dims"]),
            "Seeds": str(record["n_seeds"]),
        }
        previous = record["level"]
        for key, header, kind in columns:
            if f"{key}_mean" in record:
                mean, std = record[f"{key}_mean"], record[f"{key}_std"]
                shown[header] = format_cell(mean, std, kind, record["level"], record["n_seeds"])
        rows.append(shown)
    return pd.DataFrame(rows)


def markdown_table(shown: pd.DataFrame) -> str:
    """A pipe table of ``shown`` (every cell as text; ``|`` escaped)."""
    headers = [str(c) for c in shown.columns]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in shown.itertuples(index=False):
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"


EXPLANATION = (
    "Cells: mean (standard deviation over seeds, ddof 1; '(n=1)' for a single run). Strict: % of samples with "
    "every attribute right; Features: mean right attributes per sample, of the level's L (written /L); Letters: "
    "% of caption characters right. Rows: level, then model in the paper's order, then latent size (Dims, "
    "private latents included)."
)


def display_comparison(comparison: pd.DataFrame) -> pd.DataFrame:
    """:func:`~repscope.studies.multimodal.paper_table4.paper_comparison` as shown: Level, Model, Dims (ours and
    the paper's), the Table 4 column, the scoring rules of ours, our ``mean (std)``, the paper's, and whether
    ours lies within its spread.

    Parameters
    ----------
    comparison : pandas.DataFrame
        The comparison's rows.

    Returns
    -------
    pandas.DataFrame
        One row per compared cell, every cell as text.
    """
    headers = {key: header for key, header, _ in TABLE4_COLUMNS}
    rows = []
    for record in comparison.to_dict("records"):
        kind, level = metric_kind(record["metric"]), record["level"]
        paper_digits = 1 if kind == "features" else 0
        paper = f"{record['paper_mean']:.{paper_digits}f} ({record['paper_std']:.{paper_digits}f})"
        rows.append(
            {
                "Level": str(level),
                "Model": display_name(record["model"]),
                "Dims (ours / paper)": f"{record['dims']} / {record['paper_dims']}",
                "Column": headers[record["metric"]],
                "Rules": record["rules"],
                "Ours": format_cell(record["ours_mean"], record["ours_std"], kind, level, record["n_seeds"]),
                "Paper": f"{paper}/{level}" if kind == "features" else paper,
                "Within the paper's spread": "yes" if record["within"] else "no",
            }
        )
    return pd.DataFrame(rows)


COMPARISON_EXPLANATION = (
    "Beside Sejnova et al.'s Table 4 (as printed; mean (std) over 5 seeds, the best latent size of their grid). "
    "'Within the paper's spread': |ours - paper| <= the paper's std plus half its rounding unit (0.5 points, "
    "0.05 features), on the means. Rules: the paper scored by its toolkit's rules; ours are compared by those "
    "where the runs have them ('toolkit'), else by our stricter ones ('ours')."
)


@dataclass(frozen=True)
class LeaderboardResult:
    """The leaderboard of a set of evaluated runs (:func:`compute_leaderboard`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (level, model, dims): :func:`leaderboard_table` (``leaderboard.csv``).
    warnings : list of str
        What the page and the command warn of (groups with a single seed, ...).
    comparison : pandas.DataFrame
        :func:`~repscope.studies.multimodal.paper_table4.paper_comparison`: our cells beside the paper's Table 4
        where the paper has a row for a level and model of ours (``paper_table4.csv``; empty otherwise).
    runs : pandas.DataFrame
        One row per run read: ``level``, ``model``, ``dims``, ``seed``, ``run``.
    """

    table: pd.DataFrame
    warnings: list[str]
    comparison: pd.DataFrame
    runs: pd.DataFrame


def compute_leaderboard(records: Sequence[dict[str, Any]]) -> LeaderboardResult:
    """Group evaluated runs into the leaderboard and set it beside the paper's Table 4; nothing is written.

    Parameters
    ----------
    records : sequence of dict
        Evaluated runs as :func:`read_evaluated_runs` reads them.

    Returns
    -------
    LeaderboardResult
    """
    table, warnings = leaderboard_table(records)
    runs = pd.DataFrame(
        [
            {"level": r["level"], "model": r["model"], "dims": r["dims"], "seed": r["seed"], "run": str(r["run"])}
            for r in records
        ]
    )
    return LeaderboardResult(table, warnings, paper_comparison(table), runs)


def _comparison_summary(comparison: pd.DataFrame) -> str:
    return f"{int(comparison['within'].sum())} of {len(comparison)} cells within the paper's spread."


def leaderboard_markdown(result: LeaderboardResult) -> str:
    """``leaderboard.md``: the Table 4 layout, what it means and, where the paper has rows of ours, the
    comparison with its Table 4."""
    text = "# CdSprites+ leaderboard\n\n" + markdown_table(display_table(result.table)) + "\n" + EXPLANATION + "\n"
    if len(result.comparison):
        text += (
            "\n## Beside the paper's Table 4\n\n"
            + markdown_table(display_comparison(result.comparison))
            + "\n"
            + COMPARISON_EXPLANATION
            + " "
            + _comparison_summary(result.comparison)
            + "\n"
        )
    return text


def leaderboard_report(result: LeaderboardResult) -> Report:
    """``leaderboard.html``: the warnings, the Table 4 layout, the toolkit's rules and the dataset-independent
    numbers where the runs have them, the comparison with the paper and the runs read.

    Parameters
    ----------
    result : LeaderboardResult
        The leaderboard.

    Returns
    -------
    repscope.report.html.Report
    """
    table, comparison = result.table, result.comparison
    report = Report("CdSprites+ leaderboard", subtitle=f"{len(result.runs)} evaluated runs, {len(table)} rows")
    for warning in result.warnings:
        report.add_warning(warning)
    report.add_paragraph(EXPLANATION)
    report.add_table(
        display_table(table), title="Cross- and joint-coherency (Sejnova et al., Table 4 layout)", max_rows=None
    )
    if any(f"{key}_mean" in table for key, _, _ in TOOLKIT_COLUMNS):
        report.add_table(
            display_table(table, toolkit=True),
            title="The same outputs scored by the authors' toolkit's rules; joint coherency by traversals; "
            "images the judge rejects",
            caption="Toolkit's rules (multimodal-vae-comparison, eval/eval_cdsprites.py): a caption counts as right "
            "when it starts with the true one (trailing text passes), words are searched within fixed word "
            "positions. Joint by traversals: each latent dimension traversed in turn (A.2.3), the others at 0. "
            "Rejected: % of generated images in which the judge recognises no shape (a blob, noise, an empty "
            "frame); by our rules they are wrong on every attribute, the toolkit's rules read them as they are.",
            max_rows=None,
        )
    if any(f"{key}_mean" in table for key, _, _ in EXTRA_COLUMNS):
        report.add_table(
            display_table(table, extra=True),
            title="Dataset-independent: test log-likelihood and linear probes of the joint latents",
            caption="log p: importance-sampled, nats per example (higher is better). Linear probe: held-out "
            "accuracy of a logistic regression reading the attribute from the posterior means.",
            max_rows=None,
        )
    if len(comparison):
        report.add_table(
            display_comparison(comparison),
            title=f"Beside the paper's Table 4: {_comparison_summary(comparison)}",
            caption=COMPARISON_EXPLANATION,
            max_rows=None,
        )
    report.add_table(result.runs, title="Runs", max_rows=None)
    return report


def write_leaderboard(result: LeaderboardResult, target: Path) -> list[Path]:
    """Write ``leaderboard.md``, ``leaderboard.csv``, ``paper_table4.csv`` (where there is a comparison) and
    ``leaderboard.html`` into the folder ``target``.

    Parameters
    ----------
    result : LeaderboardResult
        The leaderboard.
    target : pathlib.Path
        The folder (created if missing).

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    target.mkdir(parents=True, exist_ok=True)
    files = [target / "leaderboard.md", target / "leaderboard.csv", target / "leaderboard.html"]
    write_text_atomic(target / "leaderboard.md", leaderboard_markdown(result))
    write_text_atomic(target / "leaderboard.csv", result.table.to_csv(index=False, lineterminator="\n"))
    if len(result.comparison):
        write_text_atomic(target / "paper_table4.csv", result.comparison.to_csv(index=False, lineterminator="\n"))
        files.append(target / "paper_table4.csv")
    leaderboard_report(result).write(target / "leaderboard.html")
    return files


def build_leaderboard(paths: Iterable[str | Path], out: str | Path, overwrite: bool = False) -> dict[str, Any]:
    """Read evaluated runs and write ``leaderboard.md``, ``leaderboard.csv`` and ``leaderboard.html`` into ``out``:
    :func:`read_evaluated_runs`, :func:`compute_leaderboard`, :func:`write_leaderboard`.

    Parameters
    ----------
    paths : iterable of str or pathlib.Path
        Run directories, or sweep folders holding them.
    out : str or pathlib.Path
        The folder to write (refused when it holds files, unless ``overwrite``).
    overwrite : bool, default=False
        Replace an existing ``out`` once the new leaderboard is written.

    Returns
    -------
    dict
        ``table`` (the CSV's DataFrame), ``markdown``, ``warnings``, ``runs`` (count), ``comparison``
        (:func:`~repscope.studies.multimodal.paper_table4.paper_comparison`, also written as ``paper_table4.csv``
        where the paper has a row for a level and model of ours) and ``files``.
    """
    paths = list(paths)
    # the runs are read, never replaced: refused before they are (with or without overwrite)
    inputs = [CommandInput(path, "RUN_DIRS", "the runs") for path in paths]
    refuse_output_onto_inputs(out, inputs)
    result = compute_leaderboard(read_evaluated_runs(paths))
    with output_target(out, overwrite=overwrite, kind="directory", inputs=inputs) as target:
        written = write_leaderboard(result, target)
    out = Path(out)
    return {
        "table": result.table,
        "markdown": markdown_table(display_table(result.table)),
        "warnings": result.warnings,
        "runs": len(result.runs),
        "comparison": result.comparison,
        "files": [out / path.name for path in written],
    }


__all__ = [
    "TABLE4_COLUMNS",
    "LeaderboardResult",
    "build_leaderboard",
    "compute_leaderboard",
    "leaderboard_markdown",
    "leaderboard_report",
    "write_leaderboard",
    "display_comparison",
    "coherency_metrics",
    "display_name",
    "display_table",
    "find_run_dirs",
    "format_cell",
    "latent_sizes",
    "leaderboard_table",
    "markdown_table",
    "read_evaluated_run",
    "read_evaluated_runs",
    "open_cdsprites_run",
    "cdsprites_level",
]

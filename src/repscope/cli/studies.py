"""Study commands made from the study registry: ``repscope <area> <study> [CONFIG] [--quick] [--out DIR]
[--set key=value ...] [--print-config]`` plus the Lightning flags where the study trains models.

The commands only parse arguments and print; the study module does the work
(:mod:`repscope.studies.registry`).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, List, Literal, Optional

import typer

from repscope.studies.registry import StudyEntry, studies

LOGGER_CHOICES = Literal["csv", "tensorboard", "none"]


def trainer_overrides(
    prefix: str,
    accelerator: str | None,
    devices: str | None,
    num_nodes: int | None,
    precision: str | None,
    deterministic: bool | None,
    logger: str | None,
    max_epochs: int | None = None,
) -> list[str]:
    """The Lightning flags as ``--set <prefix>.<key>=value`` overrides (flags win over the file)."""
    flags = {
        "accelerator": accelerator,
        "devices": devices,
        "num_nodes": num_nodes,
        "precision": precision,
        "deterministic": deterministic,
        "logger": logger,
        "max_epochs": max_epochs,
    }
    out = []
    for key, value in flags.items():
        if value is None:
            continue
        if key == "devices" and isinstance(value, str) and "," in value:
            value = "[" + value + "]"
        if isinstance(value, bool):
            value = "true" if value else "false"
        out.append(f"{prefix}.{key}={value}")
    return out


def trainer_parameters(with_max_epochs: bool = False) -> list[inspect.Parameter]:
    """The Lightning flags every command that trains takes."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter(
            "accelerator",
            keyword,
            annotation=Optional[str],
            default=typer.Option(
                None, "--accelerator", help="cpu, gpu, mps, auto (Lightning)", rich_help_panel="Trainer"
            ),
        ),
        inspect.Parameter(
            "devices",
            keyword,
            annotation=Optional[str],
            default=typer.Option(
                None, "--devices", help="number of devices, or a list such as 0,1", rich_help_panel="Trainer"
            ),
        ),
        inspect.Parameter(
            "num_nodes",
            keyword,
            annotation=Optional[int],
            default=typer.Option(None, "--num-nodes", help="machines (Lightning)", rich_help_panel="Trainer"),
        ),
        inspect.Parameter(
            "precision",
            keyword,
            annotation=Optional[str],
            default=typer.Option(
                None, "--precision", help="32-true, 16-mixed, bf16-mixed, ...", rich_help_panel="Trainer"
            ),
        ),
        inspect.Parameter(
            "deterministic",
            keyword,
            annotation=Optional[bool],
            default=typer.Option(
                None,
                "--deterministic/--no-deterministic",
                help="deterministic algorithms only (Lightning)",
                rich_help_panel="Trainer",
            ),
        ),
        inspect.Parameter(
            "logger",
            keyword,
            annotation=Optional[LOGGER_CHOICES],
            default=typer.Option(
                None,
                "--logger",
                help="training log: csv, tensorboard (needs the tensorboard package) or none",
                rich_help_panel="Trainer",
            ),
        ),
    ]
    if with_max_epochs:
        params.append(
            inspect.Parameter(
                "max_epochs",
                keyword,
                annotation=Optional[int],
                default=typer.Option(None, "--max-epochs", help="epochs to train", rich_help_panel="Trainer"),
            )
        )
    return params


def load_study_config(entry: StudyEntry, config: Path | None, overrides: list[str], values: dict[str, Any]) -> Any:
    """CONFIG (default: the shipped config, else the schema's defaults) with ``--set`` overrides and the
    command-line ``values`` applied, validated against the study's schema."""
    from repscope.config import apply_overrides, read_yaml_mapping, shipped_config_path, validate_config

    schema, _, _ = entry.load()
    path = config if config is not None else (shipped_config_path(entry.shipped) if entry.shipped else None)
    data = read_yaml_mapping(path) if path is not None else {}
    source = f"config {path}" if path is not None else f"{entry.area} {entry.name}"
    if overrides:
        data = apply_overrides(data, overrides, schema)
        source += " with --set " + " ".join(overrides)
    data.update({key: value for key, value in values.items() if value is not None})
    return validate_config(data, schema, source), source


def run_study(
    entry: StudyEntry,
    config: Path | None,
    quick: bool,
    out: Path | None,
    overwrite: bool,
    overrides: list[str],
    values: dict[str, Any],
    print_config: bool,
    resume: bool = False,
) -> Path | None:
    """Load, shrink (``--quick``) and run a study; return its report path (None for ``--print-config``).
    ``resume`` (studies registered ``resumable``) continues the run in ``out``."""
    import yaml

    from repscope.errors import InvalidArgumentError
    from repscope.outputs import output_target, prepare_output

    loaded, source = load_study_config(entry, config, overrides, values)
    _, run, shrink = entry.load()
    if quick:
        loaded = shrink(loaded)
    if print_config:
        typer.echo(yaml.safe_dump(loaded.model_dump(mode="json"), sort_keys=False).rstrip())
        return None
    # the report says at its top that a --quick run is not the paper's setting
    extra = {"quick": True} if quick and "quick" in inspect.signature(run).parameters else {}
    if resume:
        if out is None:
            raise InvalidArgumentError("--resume: name the run to continue with --out")
        extra["resume"] = True
    if out is None:
        return run(loaded, source=source, **extra)
    can_resume = True if resume else (False if entry.resumable else None)
    prepare_output(out, overwrite=overwrite, resume=can_resume, kind="directory")
    with output_target(out, overwrite=overwrite, resume=can_resume, kind="directory") as target:
        report = run(loaded, out=target, source=source, **extra)
    return out / Path(report).name


def study_command(entry: StudyEntry) -> Any:
    """A typer command for ``entry`` (its signature built from the entry and its schema)."""
    positional = [a for a in entry.arguments if a.positional]
    options = [a for a in entry.arguments if not a.positional]
    keyword = inspect.Parameter.KEYWORD_ONLY
    params: list[inspect.Parameter] = [
        inspect.Parameter(
            a.key, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=a.type, default=typer.Argument(..., help=a.help)
        )
        for a in positional
    ]
    config_help = (
        "study config (YAML); default: the shipped config of the paper's setting"
        if entry.shipped
        else "study config (YAML) holding the keys below"
    )
    if positional:
        params.append(
            inspect.Parameter(
                "config", keyword, annotation=Optional[Path], default=typer.Option(None, "--config", help=config_help)
            )
        )
    else:
        params.append(
            inspect.Parameter(
                "config",
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=Optional[Path],
                default=typer.Argument(None, help=config_help),
            )
        )
    params += [
        inspect.Parameter(
            a.key,
            keyword,
            annotation=Optional[a.type],
            default=typer.Option(
                None if positional or not a.required else ...,
                f"--{a.key.replace('_', '-')}",
                help=a.help,
                metavar=a.metavar,
            ),
        )
        for a in options
    ]
    if entry.quick:
        params.append(
            inspect.Parameter(
                "quick",
                keyword,
                annotation=bool,
                default=typer.Option(False, "--quick", help="shrink to minutes on 2 CPU cores"),
            )
        )
    params += [
        inspect.Parameter(
            "out",
            keyword,
            annotation=Optional[Path],
            default=typer.Option(None, "--out", "-o", help=f"run directory (default runs/{entry.kind}-<time>)"),
        ),
        inspect.Parameter(
            "overwrite",
            keyword,
            annotation=bool,
            default=typer.Option(
                False, "--overwrite", help="replace --out if it holds files (once the new run is complete)"
            ),
        ),
        inspect.Parameter(
            "set_",
            keyword,
            annotation=List[str],
            default=typer.Option([], "--set", help="override a config key, e.g. --set seed=1"),
        ),
        inspect.Parameter(
            "print_config",
            keyword,
            annotation=bool,
            default=typer.Option(
                False, "--print-config", help="print the config as it would run (after --set and --quick) and exit"
            ),
        ),
    ]
    if entry.resumable:
        params.append(
            inspect.Parameter(
                "resume",
                keyword,
                annotation=bool,
                default=typer.Option(False, "--resume", help="continue the run in --out where it stopped"),
            )
        )
    trains = entry.trains
    if trains:
        params += trainer_parameters()

    def command(**kwargs: Any) -> None:
        values = {a.key: kwargs.pop(a.key) for a in entry.arguments}
        overrides = list(kwargs.pop("set_"))
        if trains:
            overrides += trainer_overrides(
                "training.trainer",
                *(
                    kwargs.pop(k)
                    for k in ("accelerator", "devices", "num_nodes", "precision", "deterministic", "logger")
                ),
            )
        report = run_study(
            entry,
            kwargs["config"],
            kwargs.get("quick", False),
            kwargs["out"],
            kwargs["overwrite"],
            overrides,
            values,
            kwargs["print_config"],
            kwargs.get("resume", False),
        )
        if report is not None:
            typer.echo(f"report: {report}")

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = entry.summary + ("\n\n" + entry.details if entry.details else "")
    command.__name__ = f"{entry.area}_{entry.name}"
    return command


def add_study_commands(app: typer.Typer, area: str) -> None:
    """Register every study of ``area`` on the area's app."""
    for entry in studies(area):
        command = study_command(entry)
        app.command(entry.name, help=command.__doc__)(command)


__all__ = ["add_study_commands", "study_command", "run_study", "trainer_overrides", "trainer_parameters"]

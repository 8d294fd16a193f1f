"""The one builder of config-driven commands: ``repscope [<area>] <name> [CONFIG] [--quick] [--out DIR]
[--overwrite] [--resume] [--set key=value ...] [--print-config]`` plus the Lightning flags where the
command trains, made from its registry entry (:mod:`repscope.studies.registry`).

The options every such command shares are defined here and nowhere else. The commands only parse
arguments and print: the entry loads the config, its module's run function does the work.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, List, Literal, Optional

import typer

from repscope.studies.registry import CommandArgument, CommandEntry, studies

LOGGER_CHOICES = Literal["csv", "tensorboard", "none"]
TRAINER_PANEL = "Trainer"
# the Lightning flags (parameter name -> config key under the entry's trainer_key)
TRAINER_FLAGS = (
    "accelerator",
    "devices",
    "num_nodes",
    "precision",
    "compile",
    "deterministic",
    "logger",
    "max_epochs",
)
COMPILE_CHOICES = Literal["off", "default", "reduce-overhead", "max-autotune"]

# CONFIG of every config-driven command: a file (relative to the working directory) or a shipped config's name
CONFIG_HELP = "config: a YAML file or a shipped config's name (repscope configs lists them)"

# what the CLI prints once a command has run: show(config, result, out) with the run function's result
# and --out as given (None: the run chose its own place)
Show = Callable[[Any, Any, Optional[Path]], None]


def trainer_overrides(prefix: str, flags: dict[str, Any]) -> list[str]:
    """The Lightning flags given on the command line as ``<prefix>.<key>=value`` overrides, applied after
    ``--set`` (so a flag wins over the file and over ``--set``); flags not given are left out."""
    out = []
    for key in TRAINER_FLAGS:
        value = flags.get(key)
        if value is None:
            continue
        if key == "devices" and isinstance(value, str) and "," in value:
            value = "[" + value + "]"
        if isinstance(value, bool):
            value = "true" if value else "false"
        out.append(f"{prefix}.{key}={value}")
    return out


def _option(name: str, annotation: Any, default: Any, *flags: str, **settings: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=typer.Option(default, *flags, **settings)
    )


def trainer_parameters(with_max_epochs: bool = False) -> list[inspect.Parameter]:
    """The Lightning flags every command that trains takes, in the Trainer panel of its ``--help``."""
    panel = {"rich_help_panel": TRAINER_PANEL}
    params = [
        _option("accelerator", Optional[str], None, "--accelerator", help="cpu, gpu, mps, auto (Lightning)", **panel),
        _option("devices", Optional[str], None, "--devices", help="number of devices, or a list such as 0,1", **panel),
        _option("num_nodes", Optional[int], None, "--num-nodes", help="machines (Lightning)", **panel),
        _option("precision", Optional[str], None, "--precision", help="32-true, 16-mixed, bf16-mixed, ...", **panel),
        _option(
            "compile",
            Optional[COMPILE_CHOICES],
            None,
            "--compile",
            help="torch.compile each training step (reduce-overhead: CUDA graphs, the fastest on a GPU; the "
            "first steps pay the compilation)",
            **panel,
        ),
        _option(
            "deterministic",
            Optional[bool],
            None,
            "--deterministic/--no-deterministic",
            help="deterministic algorithms only (Lightning)",
            **panel,
        ),
        _option(
            "logger",
            Optional[LOGGER_CHOICES],
            None,
            "--logger",
            help="training log: csv, tensorboard (needs the tensorboard package) or none",
            **panel,
        ),
    ]
    if with_max_epochs:
        # one name for the epochs of what a command trains: --epochs (tests/test_cli_rules.py)
        params.append(
            _option("max_epochs", Optional[int], None, "--epochs", help="epochs to train (trainer.max_epochs)", **panel)
        )
    return params


def with_trainer_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """A plain typer command (not config-driven) that trains, with the Lightning flags of
    :func:`trainer_parameters` (the Trainer panel of its ``--help``) added to its own options.

    ``command`` takes the keyword ``trainer_flags`` (left out of its options): the flags as given,
    parameter name -> value (None: not given), which :func:`trainer_section` turns into the trainer of its
    trainings.
    """
    signature = inspect.signature(command)
    own = [parameter for name, parameter in signature.parameters.items() if name != "trainer_flags"]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        flags = {key: kwargs.pop(key) for key in TRAINER_FLAGS if key in kwargs}
        return command(**kwargs, trainer_flags=flags)

    wrapper.__signature__ = signature.replace(parameters=[*own, *trainer_parameters()])  # type: ignore[attr-defined]
    return wrapper


def trainer_section(flags: Mapping[str, Any] | None, base: Any = None) -> Any:
    """The trainer of a plain command's trainings: ``base`` (a ``TrainerSection``; default its defaults)
    with the Lightning flags given (:func:`with_trainer_flags`), read as ``--set`` reads them.

    Raises
    ------
    InvalidArgumentError
        Naming the flag whose value the trainer section refuses.
    """
    from repscope.config import apply_overrides, validate_config
    from repscope.train.config import TrainerSection

    base = base if base is not None else TrainerSection()
    data = apply_overrides({"trainer": base.model_dump(mode="json")}, trainer_overrides("trainer", dict(flags or {})))
    return validate_config(data["trainer"], TrainerSection, "the Trainer flags")


def _argument_parameter(argument: CommandArgument, any_positional: bool) -> inspect.Parameter:
    """The typer parameter of one of an entry's own arguments."""
    if argument.positional:
        return inspect.Parameter(
            argument.key,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=argument.type,
            default=typer.Argument(..., help=argument.help),
        )
    flag = argument.flag or f"--{argument.key.replace('_', '-')}"
    if argument.destination == "run":
        default = list(argument.default) if isinstance(argument.default, tuple) else argument.default
        return _option(argument.key, argument.type, default, flag, help=argument.help, metavar=argument.metavar)
    # a config key: not given leaves the file's value (or the schema's default)
    default = None if any_positional or not argument.required else ...
    return _option(argument.key, Optional[argument.type], default, flag, help=argument.help, metavar=argument.metavar)


def _common_parameters(entry: CommandEntry) -> list[inspect.Parameter]:
    """``--quick``, ``--out``, ``--overwrite``, ``--set``, ``--print-config``, ``--resume`` as the entry
    offers them."""
    words = entry.option_help
    params = []
    if entry.quick:
        params.append(
            _option("quick", bool, False, "--quick", help=words.get("quick", "shrink to minutes on 2 CPU cores"))
        )
    order = "--quick, then --set: --set wins" if entry.quick else "after --set"
    print_help = f"print the config as it would run ({order}) and exit"
    params += [
        _option(
            "out",
            Path if entry.out_required else Optional[Path],
            ... if entry.out_required else None,
            "--out",
            "-o",
            help=words.get("out", f"run directory (default runs/{entry.kind}-<time>)"),
        ),
        _option(
            "overwrite",
            bool,
            False,
            "--overwrite",
            help=words.get("overwrite", "replace --out if it holds files (once the new run is complete)"),
        ),
        _option("set_", List[str], [], "--set", help=words.get("set", "override a config key, e.g. --set seed=1")),
        _option("print_config", bool, False, "--print-config", help=print_help),
    ]
    if entry.resumable:
        resume_help = words.get("resume", "continue the run in --out where it stopped")
        params.append(_option("resume", bool, False, "--resume", help=resume_help))
    return params


def config_inputs(
    entry: CommandEntry, config: Path | None, loaded: Any, values: Mapping[str, Any] | None = None
) -> list[Any]:
    """What a config-driven command reads, which its ``--out`` must not land on: CONFIG when it names a file,
    and every file or folder its config names (:func:`repscope.outputs.inputs_in_mapping`); a key given on
    the command line (``repscope sprites evaluate FOLDER``) is named by its argument.

    Returns
    -------
    list of repscope.outputs.CommandInput
    """
    from repscope.outputs import CommandInput, inputs_in_mapping

    positional = any(argument.positional for argument in entry.arguments)
    found = []
    if config is not None and Path(config).exists():  # else a shipped config's name
        found.append(CommandInput(config, "--config" if positional else "CONFIG", "the config"))
    plain = loaded.model_dump(mode="json") if hasattr(loaded, "model_dump") else loaded
    if not isinstance(plain, Mapping):
        return found
    arguments = {a.key: a for a in entry.arguments if a.destination == "config"}
    given = {key for key, value in (values or {}).items() if value is not None}
    for key, value in plain.items():
        argument = arguments.get(key) if key in given else None
        if argument is None:
            found += inputs_in_mapping(value, "{key} in the config", key)
        else:
            name = key.upper() if argument.positional else argument.flag or f"--{key.replace('_', '-')}"
            found += inputs_in_mapping(value, name, key)
    return found


def run_config_command(
    entry: CommandEntry,
    config: Path | None,
    *,
    quick: bool = False,
    out: Path | None = None,
    overwrite: bool = False,
    resume: bool = False,
    overrides: Sequence[str] = (),
    values: dict[str, Any] | None = None,
    run_values: dict[str, Any] | None = None,
    print_config: bool = False,
) -> tuple[Any, Any] | None:
    """Load the entry's config (CONFIG, ``--set`` overrides, config keys given as options, ``--quick``),
    then print it (``print_config``: returns None) or run it under the output rule of
    :mod:`repscope.outputs`. Returns the config and what the run function returned."""
    import yaml

    from repscope.errors import InvalidArgumentError
    from repscope.outputs import output_target, prepare_output

    overrides = list(overrides)
    loaded, source = entry.load_config(config, overrides, values or {}, quick)
    if print_config:
        typer.echo(yaml.safe_dump(loaded.model_dump(mode="json"), sort_keys=False).rstrip())
        return None
    offered: dict[str, Any] = {"source": source, "config_file": config, "overrides": overrides, **(run_values or {})}
    if quick:
        offered["quick"] = True  # a --quick run's report says at its top that it is not the paper's setting
    if resume:
        if out is None:
            raise InvalidArgumentError("--resume: name the run to continue with --out")
        offered["resume"] = True
    if out is None:
        return loaded, entry.call_run(loaded, **offered)
    # an output on the command's own input, or an existing one, is refused before any work: with --overwrite
    # the new output is written beside it and takes its place once complete
    can_resume = True if resume else (False if entry.resumable else None)
    inputs = config_inputs(entry, config, loaded, values)
    prepare_output(out, overwrite=overwrite, resume=can_resume, kind="directory", inputs=inputs)
    with output_target(out, overwrite=overwrite, resume=can_resume, kind="directory", inputs=inputs) as target:
        result = entry.call_run(loaded, target, **offered)
    return loaded, result


def show_report(config: Any, report: Any, out: Path | None) -> None:
    """What a study prints: the path of its report (under ``--out`` when given: the run may have been
    written beside it first)."""
    typer.echo(f"report: {out / Path(report).name if out is not None else report}")


def config_command(entry: CommandEntry, show: Show = show_report) -> Any:
    """A typer command for ``entry`` (its signature built from the entry); ``show`` prints its outcome."""
    positional = [a for a in entry.arguments if a.positional]
    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [_argument_parameter(a, bool(positional)) for a in positional]
    if entry.config_required:
        config_help = CONFIG_HELP + "; --print-config shows its keys"
    elif entry.shipped:
        config_help = (
            f"{CONFIG_HELP}; default: the shipped {entry.shipped} (the paper's setting); --print-config shows its keys"
        )
    else:
        config_help = CONFIG_HELP + "; default: the settings --print-config shows with every key"
    config_help = entry.option_help.get("config", config_help)
    if positional:  # CONFIG is then an option
        params.append(
            inspect.Parameter(
                "config",
                keyword,
                annotation=Path if entry.config_required else Optional[Path],
                default=typer.Option(... if entry.config_required else None, "--config", help=config_help),
            )
        )
    else:
        params.append(
            inspect.Parameter(
                "config",
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=Path if entry.config_required else Optional[Path],
                default=typer.Argument(... if entry.config_required else None, help=config_help),
            )
        )
    params += [_argument_parameter(a, bool(positional)) for a in entry.arguments if not a.positional]
    params += _common_parameters(entry)
    if entry.trains:
        params += trainer_parameters(with_max_epochs=entry.max_epochs)

    def command(**kwargs: Any) -> None:
        arguments = {a.key: kwargs.pop(a.key) for a in entry.arguments}
        flags = {key: kwargs.pop(key) for key in TRAINER_FLAGS if key in kwargs}
        overrides = list(kwargs.pop("set_")) + trainer_overrides(entry.trainer_key, flags)
        outcome = run_config_command(
            entry,
            kwargs["config"],
            quick=kwargs.get("quick", False),
            out=kwargs["out"],
            overwrite=kwargs["overwrite"],
            resume=kwargs.get("resume", False),
            overrides=overrides,
            values={a.key: arguments[a.key] for a in entry.arguments if a.destination == "config"},
            run_values={a.key: arguments[a.key] for a in entry.arguments if a.destination == "run"},
            print_config=kwargs["print_config"],
        )
        if outcome is not None:
            show(*outcome, kwargs["out"])

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = entry.summary + ("\n\n" + entry.details if entry.details else "")
    command.__name__ = entry.kind.replace("-", "_")
    return command


def add_study_commands(app: typer.Typer, area: str) -> None:
    """Register every study of ``area`` on the area's app."""
    for entry in studies(area):
        command = config_command(entry)
        app.command(entry.name, help=command.__doc__)(command)


def configs_command() -> None:
    """List the configs shipped with repscope: name, the commands that take it, what it holds.

    A config-driven command takes the name in place of a path (``repscope train train-cnn5``);
    ``--print-config`` prints it whole.
    """
    from repscope.config import SHIPPED_DIR, config_description, shipped_config_names
    from repscope.studies.registry import config_takers

    rows = [
        (name, ", ".join(config_takers(name)) or "-", config_description(SHIPPED_DIR / f"{name}.yaml"))
        for name in shipped_config_names()
    ]
    widths = [max(len(row[i]) for row in [("name", "command", ""), *rows]) for i in range(2)]
    for name, takers, description in [("name", "command", "description"), *rows]:
        typer.echo(f"{name:<{widths[0]}}  {takers:<{widths[1]}}  {description}".rstrip())
    typer.echo(f"files: {SHIPPED_DIR}")


__all__ = [
    "CONFIG_HELP",
    "add_study_commands",
    "config_command",
    "config_inputs",
    "configs_command",
    "run_config_command",
    "show_report",
    "trainer_overrides",
    "trainer_parameters",
    "trainer_section",
    "with_trainer_flags",
]

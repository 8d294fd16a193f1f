"""What ``repscope mmvae train`` and ``repscope mmvae sweep`` run (their registry entries in
:mod:`repscope.studies.registry`): the config loader and the two run functions, callable from scripts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from repscope.errors import InvalidArgumentError
from repscope.outputs import prepare_output
from repscope.studies.multimodal.train import (
    MultimodalConfig,
    check_evaluation_before_training,
    load_multimodal_config,
    quick_config,
    train_multimodal,
)
from repscope.sweeps import SWEEP_FILE, expand_grid
from repscope.sweeps import run_sweep as run_points


def load_command_config(
    path: str | Path | None, overrides: list[str], values: Mapping[str, Any], quick: bool = False
) -> tuple[MultimodalConfig, str]:
    """The config of a command: :func:`load_multimodal_config` with the command-line config keys
    (``--epochs``) applied after the ``--set`` overrides.

    Parameters
    ----------
    path : str or pathlib.Path, optional
        A YAML file or the name of a shipped config; default the shipped ``mmvae-cdsprites``.
    overrides : list of str
        ``key=value`` strings: ``--set`` and the trainer flags.
    values : mapping
        Config keys given as options (``{"epochs": 5}``), applied last.
    quick : bool, default=False
        Shrink to minutes on 2 CPU cores (:func:`quick_config`).

    Returns
    -------
    (MultimodalConfig, str)
        The config and where it came from (for error messages).
    """
    settings = [*overrides, *(f"{key}={value}" for key, value in values.items())]
    return load_multimodal_config(path, settings, quick)


def run_train(
    config: MultimodalConfig,
    out: Path | None = None,
    *,
    source: str = "config",
    resume: bool = False,
    evaluate: bool = True,
) -> dict[str, Any]:
    """``repscope mmvae train``: train one multimodal VAE and evaluate it (:func:`train_multimodal`).

    Parameters
    ----------
    config : MultimodalConfig
        The run.
    out : pathlib.Path, optional
        Run directory (default ``runs/train-<time>``); with ``resume`` the run to continue.
    source : str, default="config"
        Where the config came from, for error messages.
    resume : bool, default=False
        Continue ``out`` from its last checkpoint.
    evaluate : bool, default=True
        False skips the coherency evaluation; True evaluates where the config asks for it
        (``evaluation.enabled`` on ``cdsprites``).

    Returns
    -------
    dict
        What :func:`train_multimodal` returns: ``run``, ``metrics``, ``evaluation``.
    """
    # True leaves the choice to the config: a run on other data, or with evaluation disabled, is not evaluated
    return train_multimodal(config, out=out, resume=resume, source=source, evaluate=None if evaluate else False)


def check_holds_a_sweep(out: Path) -> None:
    """Refuse to continue, with ``--resume``, a folder that never held a sweep.

    A sweep writes its record (``sweep.json``) before its first point runs, so a folder that holds files
    but no record holds someone else's files: a sweep resumed into it would write its points beside them.
    An empty or missing folder is accepted (a sweep stopped before its record starts again).

    Parameters
    ----------
    out : pathlib.Path
        The ``--out`` given with ``--resume``.

    Raises
    ------
    InvalidArgumentError
        Naming the folder and the missing record.
    """
    if out.is_dir() and any(out.iterdir()) and not (out / SWEEP_FILE).is_file():
        raise InvalidArgumentError(
            f"--resume: {out} holds no sweep record ({SWEEP_FILE}), so it never held a sweep; give the folder of the "
            "sweep to continue, or another --out to start one"
        )


def run_sweep(
    config: MultimodalConfig,
    out: Path | None = None,
    *,
    grid: Sequence[str] = (),
    config_file: str | Path | None = None,
    overrides: Sequence[str] = (),
    quick: bool = False,
    resume: bool = False,
    workers: int | None = 1,
    backend: Literal["local", "ray"] = "local",
    address: str | None = None,
    cpus_per_run: float | None = None,
    gpus_per_run: float | None = None,
) -> Any:
    """``repscope mmvae sweep``: train and evaluate every point of a grid of overrides of one config.

    Every point's config is checked before anything runs. A point is ``config_file`` with the sweep's
    ``overrides``, then the point's own, shrunk by ``quick``; each worker loads it again, so a point
    runs exactly as ``repscope mmvae train`` with the same arguments would.

    Parameters
    ----------
    config : MultimodalConfig
        The sweep's base config (without the grid), as loaded by the command.
    out : pathlib.Path, optional
        The sweep folder (default ``runs/sweep-<time>``).
    grid : list of str
        ``key=v1,v2,...`` axes (:func:`repscope.sweeps.expand_grid`; the first varies slowest).
    config_file : str or pathlib.Path, optional
        CONFIG as given (a file or a shipped config's name; default the shipped one).
    overrides : list of str
        The sweep's ``--set`` overrides and trainer flags, applied to every point.
    quick : bool, default=False
        ``--quick`` for every point.
    resume : bool, default=False
        Continue the sweep in ``out``: finished points are skipped. Another base config (a changed CONFIG,
        ``--set`` or ``--quick``) or another grid is refused, naming every setting that differs with both
        values; where the work runs (workers, backend, the trainer's devices, logger, ...) may change.
    workers, backend, address, cpus_per_run, gpus_per_run
        Where the points run (:func:`repscope.sweeps.run_sweep`): with ``--accelerator gpu``, local
        ``workers`` share the GPUs they see; Ray trials need ``gpus_per_run`` (0.25: four on one GPU).

    Returns
    -------
    repscope.sweeps.SweepResult
        The status of every point; ``out`` is the sweep folder.

    Raises
    ------
    InvalidArgumentError
        No grid axis, a point with a bad config, ``resume`` without ``out``, into a folder that holds no sweep
        (:func:`check_holds_a_sweep`) or with other settings.
    """
    if not grid:
        raise InvalidArgumentError("--grid: give at least one axis, e.g. --grid model=mvae,mmvae")
    points = expand_grid(list(grid))
    for point in points:  # every point's config, and its evaluation, must be valid before anything runs
        loaded, source = load_multimodal_config(config_file, [*overrides, *point.as_set_arguments()], quick)
        if loaded.evaluation.enabled and loaded.data.name == "cdsprites":
            check_evaluation_before_training(loaded, source, device=False)  # points may run elsewhere (Ray)
    if resume and out is None:
        raise InvalidArgumentError("--resume: continuing a sweep needs --out, the sweep folder to continue")
    if resume:
        check_holds_a_sweep(Path(out))
    if out is None:
        out = prepare_output(Path("runs") / f"sweep-{datetime.now():%Y%m%d-%H%M%S}", resume=resume, kind="directory")
    common = {
        "config": str(config_file) if config_file is not None else None,
        "base_overrides": list(overrides),
        "quick": quick,
    }
    return run_points(
        points,
        "repscope.studies.multimodal.train:sweep_point",
        out,
        common=common,
        workers=workers,
        backend=backend,
        address=address,
        cpus_per_run=cpus_per_run,
        gpus_per_run=gpus_per_run,
        description="sweep mmvae",
        # what the points' results depend on: the base config as validated (CONFIG, --set, --quick); a
        # continued sweep must have it and the grid it was started with
        identity=config.model_dump(mode="json"),
        labels={"points": "--grid"},
    )


__all__ = ["MultimodalConfig", "check_holds_a_sweep", "load_command_config", "quick_config", "run_sweep", "run_train"]

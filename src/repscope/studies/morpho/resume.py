"""``--resume`` for the Morpho-MNIST studies: reopen a run directory, keep what it holds, do the rest.

A study run is a series of steps (a model trained, a model's samples measured and compared, a
model evaluated on a task). Each finished step leaves ``steps/<name>.json`` holding what the study
needs from it; a resumed run reads those and skips their work. A member model whose training stopped
part-way continues from its ``checkpoints/last.ckpt`` (:func:`repscope.train.fitting.fit` with
``resume=True``); one that finished (its ``metrics.json`` written) is loaded, not trained again. The
config must be the one the run started with, except the keys of ``training.trainer`` that only say
where the work runs (accelerator, devices, logger, data placement, ...): every other key that differs
is named in the refusal, with its stored and its new value (:mod:`repscope.resume_check`).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repscope.fileio import write_json_atomic
from repscope.resume_check import PLACEMENT_TEXT, differences, refuse_changes, where_the_work_runs
from repscope.run_directory import RunDirectory, read_config, to_plain

# where the work runs, not what it computes: a resumed run may change them
PLACEMENT_KEYS = frozenset(
    f"training.trainer.{key}" for key in ("accelerator", "devices", "num_nodes", "strategy", "compile", "logger")
) | {"repscope_version"}
STEPS = "steps"


def _may_change_on_resume(key: str) -> bool:
    return key in PLACEMENT_KEYS or where_the_work_runs(key)


def first_difference(stored: Any, current: Any, prefix: str = "", ignore: frozenset[str] = frozenset()) -> str | None:
    """The dotted name of the first key (in ``current``'s order, then keys only ``stored`` has) whose
    value differs between two configs, or None when they are the same.

    Parameters
    ----------
    stored : object
        The config the run started with (nested mappings and lists, as read from ``config.yaml``).
    current : object
        The config of this call, in the same plain form.
    prefix : str
        Dotted name of ``stored`` and ``current`` inside the whole config ("" at the top).
    ignore : frozenset of str
        Dotted names whose values may differ.

    Returns
    -------
    str or None
        ``training.trainer.max_epochs``, ``models[1].params.latent_dim``; ``<top>`` when whole
        configs of different kinds differ; None when nothing differs.
    """
    if prefix in ignore:
        return None
    if isinstance(stored, Mapping) and isinstance(current, Mapping):
        for key in [*current, *(k for k in stored if k not in current)]:
            name = f"{prefix}.{key}" if prefix else str(key)
            if key not in stored or key not in current:
                if name not in ignore:
                    return name
                continue
            found = first_difference(stored[key], current[key], name, ignore)
            if found is not None:
                return found
        return None
    if isinstance(stored, list) and isinstance(current, list):
        for k in range(max(len(stored), len(current))):
            name = f"{prefix}[{k}]"
            if k >= len(stored) or k >= len(current):
                return name
            found = first_difference(stored[k], current[k], name, ignore)
            if found is not None:
                return found
        return None
    return None if stored == current else (prefix or "<top>")


def open_study_run(kind: str, config: Any, out: Path | None, root: Path, resume: bool) -> RunDirectory:
    """The run directory of a study: a new one, or with ``resume`` the one in ``out``, whose stored
    config must match ``config``; the config is (re)written.

    Parameters
    ----------
    kind : str
        The study's run kind (``morpho-supervised``), naming a default folder.
    config : pydantic model
        The study's validated config.
    out : pathlib.Path or None
        The run directory (required with ``resume``).
    root : pathlib.Path
        Parent of the default folder when ``out`` is None.
    resume : bool
        Continue the run in ``out``.

    Returns
    -------
    RunDirectory

    Raises
    ------
    InvalidArgumentError
        ``--resume`` with a config that differs from the stored one (naming every differing key with
        both values), or without ``out``.
    """
    current = to_plain(config.model_dump(mode="json"))
    run = RunDirectory.create(kind, out=out, root=root, resume=resume, resumable=True)
    if resume and run.config_path.exists():
        stored = read_config(run.root)
        try:  # a setting added since the run started takes its default, as the run did
            settings = {key: value for key, value in stored.items() if key != "repscope_version"}
            stored = to_plain(type(config).model_validate(settings).model_dump(mode="json"))
        except ValueError:  # pydantic's ValidationError: another study's config stays as stored
            pass
        found = differences(stored, current, _may_change_on_resume)
        refuse_changes(found, str(run.root), f"where the work runs ({PLACEMENT_TEXT})")
    run.write_config(current)
    return run


def step_path(run: RunDirectory, name: str) -> Path:
    """Where the finished step ``name`` keeps its result: ``steps/<name>.json``.

    Parameters
    ----------
    run : RunDirectory
        The study's run directory.
    name : str
        The step's name (a file name).

    Returns
    -------
    pathlib.Path
    """
    return run.root / STEPS / f"{name}.json"


def load_step(run: RunDirectory, name: str, resume: bool) -> Any:
    """The stored result of the finished step ``name`` when resuming, else None (the step runs).

    Parameters
    ----------
    run : RunDirectory
        The study's run directory.
    name : str
        The step's name.
    resume : bool
        Whether this call continues a run (a new run never reads a step).

    Returns
    -------
    object or None
        What :func:`save_step` stored.
    """
    import json  # noqa: PLC0415

    path = step_path(run, name)
    if not resume or not path.exists():
        return None
    return json.loads(path.read_text())


def save_step(run: RunDirectory, name: str, value: Any) -> None:
    """Record the step ``name`` as finished with its result ``value`` (written atomically).

    Parameters
    ----------
    run : RunDirectory
        The study's run directory.
    name : str
        The step's name.
    value : object
        Plain data (mappings, lists, numbers, strings) the study needs from the step.

    Returns
    -------
    None
    """
    path = step_path(run, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, to_plain(value, where=name))


def train_member(
    member: Any,
    data: Any,
    training: Any,
    seed: int,
    out: Path,
    source: str,
    position: tuple[int, int] | None = None,
    resume: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """A study member's trained task and training metrics (:func:`repscope.studies.common.train_or_load`),
    with ``resume``: loaded when ``out`` holds a finished training, continued from its last checkpoint
    when it stopped part-way, trained anew when it stopped before its first checkpoint.

    Parameters
    ----------
    member : MemberModel
        The model to train.
    data : Named
        Its dataset.
    training : TrainingSection
        Trainer settings and batch size.
    seed : int
        Seed of the training.
    out : pathlib.Path
        Its run directory.
    source : str
        Named in messages.
    position : (int, int), optional
        The k-th of the study's n models, for the progress bar.
    resume : bool
        Continue the study's run.

    Returns
    -------
    (task, dict)
        The trained task (eval mode) and its training metrics.
    """
    from repscope.studies.common import member_config, train_or_load  # noqa: PLC0415
    from repscope.train.fitting import fit  # noqa: PLC0415
    from repscope.train.reader import open_run  # noqa: PLC0415

    if resume and not member.checkpoint and out.exists():
        if (out / "metrics.json").exists():  # finished: metrics.json is written last
            trained = open_run(out)
            return trained.task(), dict(trained.metrics)
        if (out / "checkpoints" / "last.ckpt").exists():
            config = member_config(member, data, training, seed)
            description = f"training {member.label}" + (
                f" ({position[0]} of {position[1]}, resumed)" if position else " (resumed)"
            )
            where = f"{source}: model {member.label!r}"
            outcome = fit(config, out=out, resume=True, source=where, description=description)
            outcome.task.eval()
            return outcome.task, outcome.metrics
        shutil.rmtree(out)  # stopped before its first epoch ended: nothing to continue
    return train_or_load(member, data, training, seed, out, source, position=position)


__all__ = ["first_difference", "load_step", "open_study_run", "save_step", "step_path", "train_member"]

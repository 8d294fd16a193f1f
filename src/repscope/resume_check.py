"""What ``--resume`` may change, and the refusal that names every setting that may not.

Every command that continues an output (``repscope train``, ``mmvae train``, the sweeps, the morpho,
zero-shot and disentangle studies, ``invariance repo build``, ``candle render``) compares the settings
stored with the output against the ones given now through :func:`differences`, and refuses a change
with :func:`refuse_changes`: one line naming each setting that differs, with its stored and its new
value (``model.params.beta 4.0, now 2.0; batch_size 64, now 32``); a setting present on one side only
shows ``not set`` on the other.

Only where the work runs may change (:func:`where_the_work_runs`): how it is spread (``--workers``,
``--backend``, ``--address``, a Ray trial's CPUs and GPUs) and, in any ``trainer`` section, the
accelerator, devices, nodes, strategy, logger, data placement and compilation. The numbers of a run
do not depend on them on one kind of machine (the data placements give the same batches; the logger
and compilation leave the weights alone), so a run continued elsewhere is still the same run. A
training run may also train for more epochs (``trainer.max_epochs``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from repscope.errors import InvalidArgumentError, shown

# the keys of a ``trainer`` section that say where a training runs, not what it computes
TRAINER_PLACEMENT_KEYS = ("accelerator", "devices", "num_nodes", "strategy", "logger", "data_placement", "compile")
# how a command spreads its work over processes or a cluster (the sweep runner's options), at any depth
SPREAD_KEYS = ("workers", "backend", "address", "cpus_per_run", "gpus_per_run")
# what the refusals say may change, for the commands that train
PLACEMENT_TEXT = "the trainer's " + ", ".join(TRAINER_PLACEMENT_KEYS[:-1]) + f" and {TRAINER_PLACEMENT_KEYS[-1]}"
SPREAD_TEXT = "--workers, --backend, --address"


class _NotSet:
    """The value of a setting that one side of a comparison does not hold."""

    def __repr__(self) -> str:
        return "not set"


NOT_SET: Any = _NotSet()


@dataclass(frozen=True)
class Difference:
    """One setting that differs: its dotted key, the stored value and the new one (:data:`NOT_SET` when absent)."""

    key: str
    stored: Any
    current: Any

    def __str__(self) -> str:
        return f"{self.key} {_shown(self.stored)}, now {_shown(self.current)}"


def _shown(value: Any) -> str:
    return "not set" if value is NOT_SET else shown(value)


def _key_parts(key: str) -> list[str]:
    # "models[1].trainer.logger" -> ["models", "1", "trainer", "logger"]
    return [part for part in key.replace("[", ".").replace("]", "").split(".") if part]


def where_the_work_runs(key: str) -> bool:
    """Whether a dotted setting only says where the work runs (see the module docstring).

    Parameters
    ----------
    key : str
        A dotted key as :func:`differences` names it (``training.trainer.logger``, ``workers``).

    Returns
    -------
    bool
        True for a key of :data:`SPREAD_KEYS` at any depth, and for a key of
        :data:`TRAINER_PLACEMENT_KEYS` directly inside a section named ``trainer``.
    """
    parts = _key_parts(key)
    if not parts:
        return False
    if parts[-1] in SPREAD_KEYS:
        return True
    return parts[-1] in TRAINER_PLACEMENT_KEYS and len(parts) >= 2 and parts[-2] == "trainer"


def differences(
    stored: Any,
    current: Any,
    ignore: Callable[[str], bool] | Collection[str] = (),
    *,
    new_keys: bool = True,
    prefix: str = "",
) -> list[Difference]:
    """Every setting whose value differs between two nested configs.

    Mappings are compared key by key (``current``'s keys in order, then those only ``stored`` has),
    lists of sections (mappings or lists) of the same length item by item (``models[1].params.beta``);
    other lists (``resolution [320, 240], now [640, 480]``) and any other values are compared whole with
    ``==``.

    Parameters
    ----------
    stored : object
        The settings the output was started with (plain mappings, lists and values, as read from its
        ``config.yaml`` or JSON record).
    current : object
        The settings given now, in the same plain form.
    ignore : callable or collection of str, optional
        The dotted keys that may differ: a predicate on the key (e.g. :func:`where_the_work_runs`) or the
        keys themselves; ignoring a key ignores everything under it.
    new_keys : bool, default=True
        Whether a key that only ``current`` holds is a difference. False for records written before a
        setting was added to the package (the run then ran with that setting's default).
    prefix : str
        The dotted key of ``stored`` and ``current`` inside the whole config ("" at the top).

    Returns
    -------
    list of Difference
        In the order above; empty when nothing differs.
    """
    skip = ignore if callable(ignore) else frozenset(ignore).__contains__
    if prefix and skip(prefix):
        return []
    if isinstance(stored, Mapping) and isinstance(current, Mapping):
        found: list[Difference] = []
        for key in [*current, *(k for k in stored if k not in current)]:
            name = f"{prefix}.{key}" if prefix else str(key)
            if key not in stored:
                if new_keys and not skip(name):
                    found.append(Difference(name, NOT_SET, current[key]))
            elif key not in current:
                if not skip(name):
                    found.append(Difference(name, stored[key], NOT_SET))
            else:
                found.extend(differences(stored[key], current[key], skip, new_keys=new_keys, prefix=name))
        return found
    if _is_list(stored) and _is_list(current) and len(stored) == len(current) and _structured(stored, current):
        found = []
        for index, (before, now) in enumerate(zip(stored, current, strict=True)):
            found.extend(differences(before, now, skip, new_keys=new_keys, prefix=f"{prefix}[{index}]"))
        return found
    return [] if stored == current else [Difference(prefix or "<top>", stored, current)]


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _structured(*lists: Sequence[Any]) -> bool:
    # a list of sections (models, modalities) is compared item by item; a list of numbers or names
    # (a resolution, a grid's values) whole, as the user wrote it
    return any(isinstance(item, Mapping) or _is_list(item) for values in lists for item in values)


def describe(found: Sequence[Difference]) -> str:
    """The differences as one line: ``model.params.beta 4.0, now 2.0; batch_size 64, now 32``.

    Parameters
    ----------
    found : sequence of Difference
        What :func:`differences` returned.

    Returns
    -------
    str
        Each difference as ``key stored, now new`` (values cut to about 80 characters each), joined by
        ``"; "``.
    """
    return "; ".join(str(difference) for difference in found)


def refuse_changes(found: Sequence[Difference], subject: str, may_change: str, verb: str = "started") -> None:
    """Raise the refusal of a resume whose settings differ from the stored ones; nothing when none differ.

    Parameters
    ----------
    found : sequence of Difference
        What :func:`differences` returned.
    subject : str
        The output continued (its path), as the message names it.
    may_change : str
        What may change on resume, e.g. ``"trainer.max_epochs and where the work runs (...)"``.
    verb : str, default="started"
        ``<subject> was <verb> with ...`` (``trained``, ``rendered``).

    Raises
    ------
    InvalidArgumentError
        ``--resume: runs/x was trained with model.params.beta 4.0, now 2.0; batch_size 64, now 32 (on
        resume only ... may change: use the settings it was started with, or another --out)``.
    """
    if found:
        raise InvalidArgumentError(
            f"--resume: {subject} was {verb} with {describe(found)} (on resume only {may_change} may change: "
            "use the settings it was started with, or another --out)"
        )


__all__ = [
    "NOT_SET",
    "PLACEMENT_TEXT",
    "SPREAD_KEYS",
    "SPREAD_TEXT",
    "TRAINER_PLACEMENT_KEYS",
    "Difference",
    "describe",
    "differences",
    "refuse_changes",
    "where_the_work_runs",
]

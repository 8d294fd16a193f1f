"""Config-driven commands by area and name: the papers' studies and the commands that train from a YAML
config (``repscope train``, ``repscope mmvae train|sweep``, ``repscope invariance repo build``). A new study
is one module (config schema, run function, quick variant) plus one line here; the CLI builds every
command of this module with one builder (:func:`repscope.cli.studies.config_command`).

Every command runs as ``repscope [<area>] <name> [CONFIG] [--quick] [--out DIR] [--overwrite] [--resume]
[--set key=value ...] [--print-config]`` plus the Lightning flags where it trains: CONFIG (a YAML file, or a
shipped config's name: ``repscope configs`` lists them, :func:`config_takers` says which command takes which;
``--set`` and the config keys given as options win over ``--quick``) defaults to the
shipped config of the paper's setting (``shipped``), else to the schema's defaults, unless the command
needs one (``config_required``); ``--quick`` shrinks it with the module's ``quick(config)``; the run
function writes a run directory whose ``metrics.json`` holds the headline numbers by name. ``arguments``
adds command-line arguments: config keys (``repscope sprites evaluate FOLDER --level 5``; CONFIG is then
the ``--config`` option) or keywords of the run function (``--workers``). The CLI reads only these lines
at start-up; a command's module is imported when it runs.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from repscope.errors import InvalidArgumentError

# the options of every config-driven command whose help an entry may word its own way
OPTION_HELP_KEYS = ("config", "quick", "out", "overwrite", "set", "resume")


@dataclass(frozen=True)
class CommandArgument:
    """A command-line argument of a config-driven command: a positional argument, or the option
    ``--<key>`` (``flag`` spells it otherwise, e.g. ``--evaluate/--no-evaluate``).

    Its value goes into the config as the top-level key ``key`` (``destination="config"``; left out when
    not given, so the config file's value or the schema's default stays) or to the run function as the
    keyword ``key`` (``destination="run"``, with ``default`` when not given).
    """

    key: str
    help: str
    positional: bool = False
    type: Any = str
    metavar: str | None = None
    # an option a command cannot run without (a command with a positional argument makes every option optional)
    required: bool = True
    destination: Literal["config", "run"] = "config"
    default: Any = None  # the value of a run argument not given (a list option: a tuple)
    flag: str | None = None


@dataclass(frozen=True)
class CommandEntry:
    """One config-driven command: what it reads, what it offers on the command line, what runs it.

    ``module`` defines the config ``schema``, the ``run`` function, the ``quick`` function and, where the
    config is more than its schema, the ``loader``. ``run(config, out=None, **keywords)`` writes the
    command's output (``out``: the folder to write, None for its default place) and returns what the CLI
    prints (a study: its report path). It receives ``source`` (where the config came from, for messages),
    ``quick``, ``resume`` (``resumable`` commands; a run that always continues what its output holds takes
    none), ``config_file`` (CONFIG as given) and ``overrides`` (the ``--set`` and trainer flags) when its
    signature takes them, and every argument whose destination is ``"run"``.
    """

    area: str | None  # None: a top-level command (repscope train)
    name: str  # the verb; words separated by a space name a command of a sub-group ("repo build")
    module: str
    schema: str
    run: str
    summary: str  # one line for --help
    details: str = ""  # more for the command's --help
    shipped: str | None = None  # repscope/configs/<shipped>.yaml, the CONFIG when none is given
    quick: str | None = "quick"  # the module's quick(config), or None: no --quick
    arguments: tuple[CommandArgument, ...] = ()
    trains: bool = True  # takes the Lightning flags, written under ``trainer_key`` of its config
    trainer_key: str = "training.trainer"
    max_epochs: bool = False  # also takes --epochs (into ``<trainer_key>.max_epochs``)
    # takes --resume: its run function continues an output (``run(..., resume=True)``)
    resumable: bool = False
    config_required: bool = False  # CONFIG is a required argument
    out_required: bool = False  # --out is a required option
    # the module's loader(path, overrides, values, quick) -> (config, source), for a config that is more
    # than its schema (a shipped config named by name, checks across sections); default load_config below
    loader: str | None = None
    # the help of the common options (OPTION_HELP_KEYS) where the command's own words say more than the
    # general text
    option_help: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        unknown = set(self.option_help) - set(OPTION_HELP_KEYS)
        if unknown:  # a misspelt key would fall back to the general text unnoticed
            raise InvalidArgumentError(f"{self.kind}: option_help has unknown keys {sorted(unknown)}")

    @property
    def words(self) -> tuple[str, ...]:
        """The command line that runs it: ``("morpho", "diversity")``, ``("train",)``."""
        return (*([self.area] if self.area else []), *self.name.split())

    @property
    def kind(self) -> str:
        """The name of its default run directory, ``runs/<kind>-<time>``."""
        return "-".join(self.words)

    def load(self) -> tuple[type, Any, Any]:
        """The config schema, the run function and the quick function (None when there is none)."""
        module = importlib.import_module(self.module)
        return (
            getattr(module, self.schema),
            getattr(module, self.run),
            getattr(module, self.quick) if self.quick else None,
        )

    def load_config(
        self,
        path: str | Path | None,
        overrides: Sequence[str] = (),
        values: Mapping[str, Any] | None = None,
        quick: bool = False,
    ) -> tuple[Any, str]:
        """The command's config: ``path`` (a file, or a shipped config's name; default: the shipped config,
        else the schema's defaults), the ``--set`` ``overrides``, then the command-line ``values`` (config
        keys; None values are left out), validated against the schema and shrunk by ``quick``; the
        overrides and values are then set again, so that they win over what ``quick`` chose.

        Returns
        -------
        (config, str)
            The validated config and where it came from (for messages: ``config <path> with --set ...``).

        Raises
        ------
        InvalidArgumentError
            Naming the key and the file: an unknown key, a wrong type, a missing CONFIG.
        """
        # imported here: the CLI reads this module at start-up, before it knows which command runs
        from repscope.config import (  # noqa: PLC0415
            apply_overrides,
            read_yaml_mapping,
            reapply_after_quick,
            resolve_config_path,
            shipped_config_path,
            shown_key,
            validate_config,
        )

        overrides = list(overrides)
        given = {key: value for key, value in (values or {}).items() if value is not None}
        if self.loader:
            # the loader shrinks by quick itself (and sets the overrides again after it)
            loader = getattr(importlib.import_module(self.module), self.loader)
            return loader(path, overrides, given, quick)
        if path is None and self.config_required:
            raise InvalidArgumentError(
                f"{' '.join(self.words)}: CONFIG missing; name the config (YAML) to run, or a shipped config's name "
                "(repscope configs lists them)"
            )
        schema, _, shrink = self.load()
        if path is not None:
            path = resolve_config_path(path)
        elif self.shipped:
            path = shipped_config_path(self.shipped)
        data = read_yaml_mapping(path) if path is not None else {}
        source = f"config {path}" if path is not None else " ".join(self.words)
        if overrides:
            data = apply_overrides(data, overrides, schema)
            source += " with --set " + " ".join(map(shown_key, overrides))
        data.update(given)
        config = validate_config(data, schema, source)
        if quick and shrink is not None:
            # --set and the config keys given as options win over what --quick chose
            config = reapply_after_quick(shrink(config), overrides, given, source)
        return config, source

    def call_run(self, config: Any, out: Path | None = None, **offered: Any) -> Any:
        """Call the run function on ``config``: ``out`` when given, every keyword in ``offered`` that it
        takes among ``source``, ``quick``, ``resume``, ``config_file`` and ``overrides``, and the others
        as given (the run arguments, which it must take)."""
        _, run, _ = self.load()
        parameters = inspect.signature(run).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        keywords = {
            key: value
            for key, value in offered.items()
            if key not in _OPTIONAL_KEYWORDS or key in parameters or takes_any
        }
        if out is not None:
            keywords["out"] = out
        return run(config, **keywords)


# what a run function receives only where its signature asks for it
# (a run that continues whatever its output holds, as a sweep does, takes no ``resume``)
_OPTIONAL_KEYWORDS = ("source", "quick", "resume", "config_file", "overrides")

# where a study's many trainings run (its config keys workers, backend, address; repscope.sweeps)
_SWEEP_ARGUMENTS = (
    CommandArgument(
        "workers", "local worker processes running trainings at once (-1: all cores)", type=int, required=False
    ),
    CommandArgument("backend", "local, or Ray Tune (repscope[ray])", metavar="[local|ray]", required=False),
    CommandArgument("address", "Ray cluster address (default: a local instance)", required=False),
)

STUDIES: tuple[CommandEntry, ...] = (
    CommandEntry(
        "disentangle",
        "study",
        "repscope.studies.candle.disentanglement",
        "DisentangleStudyConfig",
        "run_disentangle_study",
        "Disentanglement VAEs on dSprites scored on IRS, UC and CG (rho 1, 2), MIG, DCI, SAP: the CANDLE Table 2.",
        resumable=True,
        option_help={"resume": "continue the study in --out: models trained and scored there are kept"},
    ),
    CommandEntry(
        "candle",
        "study",
        "repscope.studies.candle.candle_half",
        "CandleStudyConfig",
        "run_candle_study",
        "The disentanglement study on CANDLE's confounded subset (renders it first): IRS, UC, CG (Table 2).",
        resumable=True,
        option_help={"resume": "continue the study in --out: the render, and the models trained and scored there"},
    ),
    CommandEntry(
        "morpho",
        "diversity",
        "repscope.studies.morpho.diversity",
        "DiversityConfig",
        "run_diversity",
        "Sample diversity: train generators, compare their samples' morphometrics with the test digits by MMD.",
        shipped="morpho-diversity",
        resumable=True,
    ),
    CommandEntry(
        "morpho",
        "disentangle",
        "repscope.studies.morpho.infogan",
        "DisentangleConfig",
        "run_disentangle",
        "Disentanglement: partial correlations of InfoGAN codes with morphometrics, inferential and generative.",
        shipped="morpho-disentangle",
        resumable=True,
    ),
    CommandEntry(
        "morpho",
        "supervised",
        "repscope.studies.morpho.supervised",
        "SupervisedConfig",
        "run_supervised",
        "Supervised tasks: digit recognition, abnormality detection, thickness regression (Table 3).",
        shipped="morpho-supervised",
        resumable=True,
    ),
    CommandEntry(
        "sprites",
        "evaluate",
        "repscope.studies.multimodal.coherency",
        "CoherencyConfig",
        "run_coherency",
        "Cross- and joint-coherency (Strict / Features / Letters) of a model's generated outputs.",
        details="FOLDER/text_to_image/{truth.txt, images.npy}, FOLDER/image_to_text/{truth.txt, captions.txt}, "
        "FOLDER/joint/{images.npy, captions.txt}, FOLDER/joint_traversal/{images.npy, captions.txt}; any of them "
        "may be missing. Images: (N, 64, 64, 3) RGB, uint8 or float in [0, 1]. Captions: one per line, exactly as "
        "generated (an empty line is an empty caption); an optional captions_raw.txt beside captions.txt (the "
        "decoder's whole output) is what the toolkit's rules read. --compat both (default) scores by our strict "
        "rules and by the authors' toolkit's (eval_cdsprites.py) side by side.",
        quick=None,
        # the Lightning flags reach the attribute classifiers' training when they are not cached yet
        trainer_key="trainer",
        arguments=(
            CommandArgument(
                "folder",
                "folder of a model's outputs: text_to_image/, image_to_text/, joint/ (see --help)",
                positional=True,
            ),
            CommandArgument("level", "CdSprites+ level 1-5", type=int, metavar="[1|2|3|4|5]"),
            CommandArgument(
                "compat",
                "coherency rules: both (side by side), ours (strict) or toolkit (the authors' eval_cdsprites.py)",
                required=False,
                metavar="[both|ours|toolkit]",
            ),
        ),
    ),
    CommandEntry(
        "zeroshot",
        "study",
        "repscope.studies.zeroshot.study",
        "ZeroShotConfig",
        "run_zeroshot_study",
        "Raw Zero-Shot: n + 1 trainings per architecture, DBI and Amalgam metrics, L0 / L-inf attacks, correlation.",
        shipped="zeroshot-fashion",
        details="The paper's five architectures (CapsNet, AllConv, ResNet, NIN, LeNet) on Fashion-MNIST by default; "
        "trainings and attacks run on the sweep runner (--workers N, or --backend ray).",
        resumable=True,
        arguments=_SWEEP_ARGUMENTS,
    ),
    CommandEntry(
        "zeroshot",
        "evaluate",
        "repscope.studies.zeroshot.study",
        "ZeroShotConfig",
        "run_zeroshot_evaluate",
        "Raw Zero-Shot test of one architecture: its n + 1 trainings, soft-labels, DBI and Amalgam metrics, attacks.",
        shipped="zeroshot-fashion",
        details="ARCH: a label of the study config (CapsNet, AllConv, ResNet, NIN, LeNet), any registered "
        "classifier (capsnet, allconv, resnet, nin, lenet5, cnn5, ...) or your network's factory pkg.module:factory "
        "or file.py:factory (called with num_classes; trained with the study's recipe).",
        resumable=True,
        arguments=(
            CommandArgument(
                "arch",
                "the architecture: a study label, a registered model, or pkg.module:factory / file.py:factory",
                positional=True,
            ),
        )
        + _SWEEP_ARGUMENTS,
    ),
)

_MMVAE_CONFIG_HELP = (
    "config (YAML) or a shipped config's name (mmvae-cdsprites-paper); default the CPU config mmvae-cdsprites; "
    "--print-config shows its keys"
)
_BACKEND = Literal["local", "ray"]

# the config-driven commands that are not a paper's study: training from a YAML config, alone or by grid
TRAINING_COMMANDS: tuple[CommandEntry, ...] = (
    CommandEntry(
        None,
        "train",
        "repscope.train.fitting",
        "TrainConfig",
        "fit",
        "Train a model and write a run directory (config, metrics.json, curves, report, checkpoints).",
        quick=None,
        trainer_key="trainer",
        max_epochs=True,
        resumable=True,
        config_required=True,
        option_help={
            "config": "training config: a YAML file or a shipped config's name (repscope configs lists them) holding "
            "model, data, trainer, batch_size, seed, ... (--print-config shows every key)",
            "set": "override a config key, e.g. --set trainer.max_epochs=5",
            "resume": "continue the run in --out from its last checkpoint",
        },
    ),
    CommandEntry(
        "mmvae",
        "train",
        "repscope.studies.multimodal.run_commands",
        "MultimodalConfig",
        "run_train",
        "Train one multimodal VAE (--set model=NAME, a registered multimodal model) and evaluate it on CdSprites+.",
        quick="quick_config",
        trainer_key="trainer",
        resumable=True,
        loader="load_command_config",
        arguments=(
            CommandArgument(
                "evaluate",
                "coherency after training (CdSprites+)",
                type=bool,
                destination="run",
                default=True,
                flag="--evaluate/--no-evaluate",
            ),
            CommandArgument("epochs", "epochs to train (the config's epochs)", type=int, required=False),
        ),
        option_help={
            "config": _MMVAE_CONFIG_HELP,
            "set": "override a key, e.g. --set model=mopoe --set data.level=2",
            "quick": "three epochs on 3,000 samples, evaluated on 200",
            "out": "run directory (default runs/train-<time>)",
            "resume": "continue the run in --out from its last checkpoint",
        },
    ),
    CommandEntry(
        "mmvae",
        "sweep",
        "repscope.studies.multimodal.run_commands",
        "MultimodalConfig",
        "run_sweep",
        "Train and evaluate every point of a grid (models x levels x latent sizes x seeds); a restarted sweep "
        "skips finished runs. Writes one run directory per point and summary.csv / summary.md.",
        quick="quick_config",
        trainer_key="trainer",
        resumable=True,
        loader="load_command_config",
        arguments=(
            CommandArgument(
                "grid",
                "key=v1,v2,...: one axis of the grid (repeat; first varies slowest)",
                type=list[str],
                destination="run",
                default=(),
            ),
            CommandArgument(
                "workers", "local worker processes (-1: all cores)", type=int, destination="run", default=1
            ),
            CommandArgument(
                "backend",
                "local processes, or Ray Tune (repscope[ray])",
                type=_BACKEND,
                destination="run",
                default="local",
            ),
            CommandArgument(
                "address", "Ray cluster address (default: a local instance)", type=Optional[str], destination="run"
            ),
            CommandArgument("cpus_per_run", "Ray: CPUs reserved per run", type=Optional[float], destination="run"),
            CommandArgument(
                "gpus_per_run",
                "Ray: share of a GPU reserved per run (0.25: four runs on one GPU)",
                type=Optional[float],
                destination="run",
            ),
        ),
        option_help={
            "config": _MMVAE_CONFIG_HELP,
            "set": "override a key for every run of the sweep",
            "quick": "every run: three epochs on 3,000 samples, evaluated on 200",
            "out": "sweep folder (default runs/sweep-<time>)",
            "overwrite": "replace --out if it holds files (once the new sweep is complete)",
            "resume": "continue the sweep in --out: finished runs are skipped",
        },
    ),
    CommandEntry(
        "invariance",
        "repo build",
        "repscope.studies.invariance.repo",
        "RepoConfig",
        "build_repository",
        "Train and test a repository of classifiers with varied settings (augmentation, lr, epochs, anomalies).",
        # the Lightning flags reach every model's training; its epochs come from the repository's list
        trainer_key="trainer",
        resumable=True,
        out_required=True,
        arguments=(
            CommandArgument("workers", "local worker processes (-1: all cores)", type=Optional[int], destination="run"),
            CommandArgument(
                "backend", "local, or Ray Tune (repscope[ray])", type=_BACKEND, destination="run", default="local"
            ),
            CommandArgument(
                "address", "Ray cluster address (default: a local instance)", type=Optional[str], destination="run"
            ),
        ),
        option_help={
            "config": "repository config: a YAML file or a shipped config's name; default: 60 CNN5 models on digits "
            "(--print-config shows every key)",
            "set": "override a config key, e.g. --set count=100",
            "quick": "6 short models, to try it out",
            "out": "repository folder: one run directory per model",
            "resume": "continue the repository in --out",
        },
    ),
)

COMMANDS: tuple[CommandEntry, ...] = TRAINING_COMMANDS + STUDIES

# the commands that take a shipped config by its name's prefix (besides a study's own ``shipped`` config)
SHIPPED_PREFIXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("train-", ("train",)),
    ("mmvae-", ("mmvae train", "mmvae sweep")),
)


def config_takers(name: str) -> list[str]:
    """The commands that run the shipped config ``name`` (``["train"]``, ``["morpho diversity"]``): those of
    its prefix (:data:`SHIPPED_PREFIXES`) and those whose default it is, in registry order.

    Parameters
    ----------
    name : str
        A shipped config's name (``repscope/configs/<name>.yaml``).

    Returns
    -------
    list of str
        The command lines without ``repscope``; empty when no command claims it.
    """
    takers = [taker for prefix, names in SHIPPED_PREFIXES if name.startswith(prefix) for taker in names]
    takers += [" ".join(entry.words) for entry in COMMANDS if entry.shipped == name]
    return list(dict.fromkeys(takers))


def studies(area: str | None = None) -> list[CommandEntry]:
    """The registered studies (of ``area``), in registry order."""
    return [entry for entry in STUDIES if area is None or entry.area == area]


def commands(area: str | None = None) -> list[CommandEntry]:
    """Every config-driven command (of ``area``), studies included, in registry order."""
    return [entry for entry in COMMANDS if area is None or entry.area == area]


def command(area: str | None, name: str) -> CommandEntry:
    """The config-driven command ``repscope [<area>] <name>``.

    Raises
    ------
    InvalidArgumentError
        No such command; the message lists the registered ones.
    """
    for entry in COMMANDS:
        if (entry.area, entry.name) == (area, name):
            return entry
    known = ", ".join(" ".join(e.words) for e in COMMANDS)
    raise InvalidArgumentError(f"command: no config-driven command {area or ''} {name}; registered: {known}")


def study(area: str, name: str) -> CommandEntry:
    """The study ``repscope <area> <name>``.

    Raises
    ------
    InvalidArgumentError
        No such study; the message lists the registered ones.
    """
    for entry in STUDIES:
        if (entry.area, entry.name) == (area, name):
            return entry
    known = ", ".join(f"{e.area} {e.name}" for e in STUDIES)
    raise InvalidArgumentError(f"study: no study {area} {name}; registered: {known}")


__all__ = [
    "COMMANDS",
    "CommandArgument",
    "CommandEntry",
    "STUDIES",
    "TRAINING_COMMANDS",
    "SHIPPED_PREFIXES",
    "command",
    "commands",
    "config_takers",
    "studies",
    "study",
]

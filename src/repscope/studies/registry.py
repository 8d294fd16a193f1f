"""Studies by area and name: a new study is one module (config schema, run function, quick variant)
plus one line here; the CLI makes ``repscope <area> <name>`` from the line.

Every study runs as ``repscope <area> <study> [CONFIG] [--quick] [--out DIR] [--set key=value ...]
[--print-config]``: CONFIG defaults to the shipped config of the paper's setting (``shipped``),
``--quick`` shrinks it with the module's ``quick(config)``, and the run function writes a run
directory whose ``metrics.json`` holds the headline numbers by name. ``arguments`` lets a study take
some config keys as command-line arguments (``repscope sprites evaluate FOLDER --level 5``); CONFIG is
then the ``--config`` option. The CLI reads only these lines at start-up; a study's module is imported
when it runs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from repscope.errors import InvalidArgumentError


@dataclass(frozen=True)
class StudyArgument:
    """A config key taken on the command line: a positional argument, or the option ``--<key>``."""

    key: str
    help: str
    positional: bool = False
    type: type = str
    metavar: str | None = None
    # an option a study cannot run without (a study with a positional argument makes every option optional)
    required: bool = True


@dataclass(frozen=True)
class StudyEntry:
    area: str
    name: str
    module: str  # defines ``schema``, ``run(config, out=None, source=...) -> report path`` and ``quick``
    schema: str
    run: str
    summary: str  # one line for --help
    details: str = ""  # more for the command's --help
    shipped: str | None = None  # repscope/configs/<shipped>.yaml
    quick: str | None = "quick"
    arguments: tuple[StudyArgument, ...] = ()
    trains: bool = True  # takes the Lightning flags (``training.trainer`` in its config)
    # takes --resume: its run function continues a run directory (``run(..., resume=True)``)
    resumable: bool = False

    @property
    def kind(self) -> str:
        return f"{self.area}-{self.name}"

    def load(self) -> tuple[type, Any, Any]:
        """The config schema, the run function and the quick function (None when there is none)."""
        module = importlib.import_module(self.module)
        return (
            getattr(module, self.schema),
            getattr(module, self.run),
            getattr(module, self.quick) if self.quick else None,
        )


# where a study's many trainings run (its config keys workers, backend, address; repscope.sweeps)
_SWEEP_ARGUMENTS = (
    StudyArgument(
        "workers", "local worker processes running trainings at once (-1: all cores)", type=int, required=False
    ),
    StudyArgument("backend", "local, or Ray Tune (repscope[ray])", metavar="[local|ray]", required=False),
    StudyArgument("address", "Ray cluster address (default: a local instance)", required=False),
)

STUDIES: tuple[StudyEntry, ...] = (
    StudyEntry(
        "disentangle",
        "study",
        "repscope.studies.disentangle.study",
        "DisentangleStudyConfig",
        "run_disentangle_study",
        "Disentanglement VAEs on dSprites scored on IRS, UC and CG (rho 1, 2), MIG, DCI, SAP: the CANDLE Table 2.",
    ),
    StudyEntry(
        "candle",
        "study",
        "repscope.studies.candle.study",
        "CandleStudyConfig",
        "run_candle_study",
        "The disentanglement study on CANDLE's confounded subset (renders it first): IRS, UC, CG (Table 2).",
    ),
    StudyEntry(
        "morpho",
        "diversity",
        "repscope.studies.morpho.diversity",
        "DiversityConfig",
        "run_diversity",
        "Sample diversity: train generators, compare their samples' morphometrics with the test digits by MMD.",
        shipped="morpho-diversity",
    ),
    StudyEntry(
        "morpho",
        "disentangle",
        "repscope.studies.morpho.disentangle",
        "DisentangleConfig",
        "run_disentangle",
        "Disentanglement: partial correlations of InfoGAN codes with morphometrics, inferential and generative.",
        shipped="morpho-disentangle",
    ),
    StudyEntry(
        "morpho",
        "supervised",
        "repscope.studies.morpho.supervised",
        "SupervisedConfig",
        "run_supervised",
        "Supervised tasks: digit recognition, abnormality detection, thickness regression (Table 3).",
        shipped="morpho-supervised",
    ),
    StudyEntry(
        "sprites",
        "evaluate",
        "repscope.studies.sprites.coherency",
        "CoherencyConfig",
        "run_coherency",
        "Cross- and joint-coherency (Strict / Features / Letters) of a model's generated outputs.",
        details="FOLDER/text_to_image/{truth.txt, images.npy}, FOLDER/image_to_text/{truth.txt, captions.txt}, "
        "FOLDER/joint/{images.npy, captions.txt}; any of the three may be missing. Images: "
        "(N, 64, 64, 3) RGB, uint8 or float in [0, 1]. Captions: one per line.",
        quick=None,
        trains=False,
        arguments=(
            StudyArgument(
                "folder",
                "folder of a model's outputs: text_to_image/, image_to_text/, joint/ (see --help)",
                positional=True,
            ),
            StudyArgument("level", "CdSprites+ level 1-5", type=int, metavar="[1|2|3|4|5]"),
        ),
    ),
    StudyEntry(
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
    StudyEntry(
        "zeroshot",
        "evaluate",
        "repscope.studies.zeroshot.study",
        "ZeroShotConfig",
        "run_zeroshot_evaluate",
        "Raw Zero-Shot test of one architecture: its n + 1 trainings, soft-labels, DBI and Amalgam metrics, attacks.",
        shipped="zeroshot-fashion",
        details="ARCH: a label of the study config (CapsNet, AllConv, ResNet, NIN, LeNet) or any registered "
        "classifier (capsnet, allconv, resnet, nin, lenet5, cnn5, ...).",
        resumable=True,
        arguments=(StudyArgument("arch", "the architecture: a study label or a registered model", positional=True),)
        + _SWEEP_ARGUMENTS,
    ),
)


def studies(area: str | None = None) -> list[StudyEntry]:
    """The registered studies (of ``area``), in registry order."""
    return [entry for entry in STUDIES if area is None or entry.area == area]


def study(area: str, name: str) -> StudyEntry:
    for entry in STUDIES:
        if (entry.area, entry.name) == (area, name):
            return entry
    known = ", ".join(f"{e.area} {e.name}" for e in STUDIES)
    raise InvalidArgumentError(f"study: no study {area} {name}; registered: {known}")


__all__ = ["StudyEntry", "StudyArgument", "STUDIES", "studies", "study"]

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


STUDIES: tuple[StudyEntry, ...] = (
    StudyEntry(
        "disentangle",
        "study",
        "repscope.studies.disentangle_study",
        "DisentangleStudyConfig",
        "run_disentangle_study",
        "Disentanglement VAEs on dSprites scored on IRS, UC and CG (rho 1, 2), MIG, DCI, SAP: the CANDLE Table 2.",
    ),
    StudyEntry(
        "candle",
        "study",
        "repscope.studies.candle_study",
        "CandleStudyConfig",
        "run_candle_study",
        "The disentanglement study on CANDLE's confounded subset (renders it first): IRS, UC, CG (Table 2).",
    ),
    StudyEntry(
        "morpho",
        "diversity",
        "repscope.studies.morpho_diversity",
        "DiversityConfig",
        "run_diversity",
        "Sample diversity: train generators, compare their samples' morphometrics with the test digits by MMD.",
        shipped="morpho-diversity",
    ),
    StudyEntry(
        "morpho",
        "disentangle",
        "repscope.studies.morpho_disentangle",
        "DisentangleConfig",
        "run_disentangle",
        "Disentanglement: partial correlations of InfoGAN codes with morphometrics, inferential and generative.",
        shipped="morpho-disentangle",
    ),
    StudyEntry(
        "morpho",
        "supervised",
        "repscope.studies.morpho_supervised",
        "SupervisedConfig",
        "run_supervised",
        "Supervised tasks: digit recognition, abnormality detection, thickness regression (Table 3).",
        shipped="morpho-supervised",
    ),
    StudyEntry(
        "sprites",
        "evaluate",
        "repscope.studies.sprites_coherency",
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

"""Models by name: a new model is one module (``nn.Module`` + its ``LightningModule`` task) plus
one line here.

An entry names the LightningModule that trains the model and the constructor arguments fixed by
the name; the remaining constructor arguments are what ``model.params`` in a config may set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from repscope.data.registry import resolve
from repscope.errors import InvalidArgumentError


@dataclass(frozen=True)
class ModelEntry:
    task: str  # "module:Class" of the LightningModule
    fixed: dict[str, Any] = field(default_factory=dict)
    supervised: bool = False  # takes kind / num_outputs from the data's target


MODELS: dict[str, ModelEntry] = {
    "beta-vae": ModelEntry("repscope.train.tasks:VAETask"),
    "gan": ModelEntry("repscope.train.tasks:GANTask"),
    "infogan": ModelEntry("repscope.train.tasks:InfoGANTask"),
    "lenet5": ModelEntry("repscope.train.tasks:SupervisedTask", {"network": "lenet5"}, supervised=True),
    "mlp": ModelEntry("repscope.train.tasks:SupervisedTask", {"network": "mlp"}, supervised=True),
}


def model_entry(name: str) -> ModelEntry:
    if name not in MODELS:
        raise InvalidArgumentError(f"model.name: unknown model {name!r}; registered: {', '.join(sorted(MODELS))}")
    return MODELS[name]


def task_class(name: str) -> Any:
    return resolve(model_entry(name).task)

"""The training config: which model, on which data, run where (a Lightning ``Trainer``).

.. code-block:: yaml

    model: {name: lenet5, params: {lr: 0.001}}        # repscope.train.registry
    data:  {name: morpho-mnist, params: {set: local, target: abnormal}}   # repscope.data.registry
    trainer: {accelerator: cpu, devices: 1, num_nodes: 1, precision: 32-true, max_epochs: 20,
              deterministic: false, logger: csv, data_placement: auto, compile: off}
    batch_size: 64
    val_fraction: 0.1
    seed: 0

``model.params`` are checked against the hyper-parameters of the registered task (its ``Config``:
types and rules, :func:`repscope.train.tasks.base.validate_hyperparameters`), ``data.params`` against the
signature of the registered loader: an unknown key, a wrong type or a value out of its range is an
error naming it.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

from pydantic import Field, field_validator

from repscope.config import Section, validate_params
from repscope.data.registry import dataset_loader
from repscope.errors import InvalidArgumentError
from repscope.train.registry import model_entry, task_class
from repscope.validation import Seed


class Named(Section):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class TrainerSection(Section):
    """Where and how the training runs: passed to ``lightning.pytorch.Trainer`` as they are, but for
    the last two.

    ``logger``: ``csv`` (Lightning's CSV logger, the run's ``logs/``), ``tensorboard`` (needs the
    ``tensorboard`` package) or ``none``. ``deterministic``: use deterministic algorithms only
    (slower on GPUs; identical results on the same hardware). ``precision``: ``bf16-mixed`` trains in
    bfloat16 autocast on GPUs that have it (and on CPUs).

    ``data_placement``: how batches reach the model (:mod:`repscope.train.datamodule`): ``device``
    holds the data on the accelerator and draws each batch there by index, ``loader`` uses a
    DataLoader, ``auto`` takes the device where it fits; the batches, and so the numbers, are the same.
    ``compile``: ``off``, or a ``torch.compile`` mode for the task's networks (``default``;
    ``reduce-overhead``: CUDA graphs, for the fixed shapes of a training step; ``max-autotune``).
    """

    accelerator: str = "cpu"
    devices: int | str | list[int] = 1
    num_nodes: int = Field(1, ge=1)
    strategy: str = "auto"
    precision: str = "32-true"
    max_epochs: int = Field(20, ge=1)
    limit_train_batches: int | float | None = None
    gradient_clip_val: float | None = None
    deterministic: bool = False
    logger: Literal["csv", "tensorboard", "none"] = "csv"
    data_placement: Literal["auto", "loader", "device"] = "auto"
    compile: Literal["off", "default", "reduce-overhead", "max-autotune"] = "off"

    @field_validator("compile", mode="before")
    @classmethod
    def _compile_switch(cls, value: Any) -> Any:
        # ``compile: true`` in YAML (or --set trainer.compile=true) means the default mode
        return {True: "default", False: "off"}.get(value, value) if isinstance(value, bool) else value


class TrainConfig(Section):
    model: Named
    data: Named
    trainer: TrainerSection = Field(default_factory=TrainerSection)
    batch_size: int = Field(64, ge=1)
    val_fraction: float = Field(0.1, ge=0.0, lt=1.0)
    seed: Seed = 0
    num_workers: int = Field(0, ge=0)
    # False feeds the training examples in their stored order every epoch (an ML4ML anomaly)
    shuffle: bool = True

    def framework_params(self) -> set[str]:
        """Constructor arguments the framework sets (from the model's name and the data).

        Returns
        -------
        set of str
            The model's fixed parameters (its registry entry), ``kind`` and ``num_outputs`` for the
            supervised family, and ``image_shape`` when the task's constructor takes it.

        Raises
        ------
        InvalidArgumentError
            When ``model.name`` is not a registered model.
        """
        entry = model_entry(self.model.name)
        accepted = inspect.signature(task_class(self.model.name)).parameters
        keys = set(entry.fixed) | ({"kind", "num_outputs"} if entry.supervised else set())
        keys |= {"field_specs"} if "field_specs" in accepted else set()
        return keys | ({"image_shape"} if "image_shape" in accepted else set())

    def check_params(self, source: str = "config") -> None:
        """Check ``model.params`` / ``data.params`` against what they configure (errors name the key).

        ``model.params`` is checked against the registered task's hyper-parameters (less the
        :meth:`framework_params`): each key's type and rule, as the task's constructor checks them;
        ``data.params`` against the registered dataset loader's signature.

        Parameters
        ----------
        source : str, default="config"
            Where the config came from (a file, a study member), named in error messages.

        Raises
        ------
        InvalidArgumentError
            When ``model.name`` or ``data.name`` is not registered, ``model.params`` sets a framework
            parameter, or a key is unknown, has the wrong type or a value out of its range, or is required
            and missing.
        """
        # torch and Lightning stay out of the import of a config (the task class imports them when resolved)
        from repscope.train.tasks.base import validate_hyperparameters  # noqa: PLC0415

        fixed = self.framework_params()
        clash = sorted(fixed & set(self.model.params))
        if clash:
            raise InvalidArgumentError(
                f"{source}: model.params.{clash[0]} is set by the model name {self.model.name!r} "
                "or by the data (its target or image shape); remove it"
            )
        validate_hyperparameters(task_class(self.model.name), self.model.params, source, "model.params", skip=fixed)
        validate_params(dataset_loader(self.data.name), self.data.params, source, "data.params")

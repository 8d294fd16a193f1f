"""What every task shares: hyper-parameters that inherit, images at the numpy boundary, decoding to
uint8, seeded sampling, logging, and the inference protocol of each family.

A task is a small LightningModule of one training family (supervised, VAE, GAN); it takes its
networks by name (:mod:`repscope.models.networks`) for the image shape of its data, and declares the
batch fields it reads (:attr:`ImageTask.batch_fields`), which the DataModule serves as a dict of
tensors: ``image`` float32 ``(B, C, H, W)`` in [0, 1], ``target`` int64 classes or float32 values.

Hyper-parameters
----------------
Each task class declares its hyper-parameters as a nested dataclass ``Config``; a subclass's ``Config``
inherits its parent's and declares only its own fields (or a new default of an inherited one), as
nmichlo/disent's nested ``cfg`` does. A field's rule is part of its type, as pydantic states it
(``Annotated[int, Field(ge=1)]``, ``Literal["i", "ii"]``)::

    class BetaTCVAETask(VAETask):
        @dataclass(kw_only=True)
        class Config(VAETask.Config):
            beta: Annotated[float, Field(ge=0)] = 6.0    # a new default of an inherited field
            dataset_size: Annotated[int, Field(ge=1)] = DSPRITES_SIZE

A new default restates the field's whole type, rule included: the subclass's annotation replaces the
parent's. A class that does not say whose ``Config`` it extends (a mixin's fields, a forgotten base) gets one
merged from every base's, so no field can be dropped. From the ``Config`` each class gets its
constructor: ``Task(field=value, ...)`` (or by position, in field order), with the fields as its
signature; a config's ``model.params`` are checked against the same ``Config``
(:meth:`repscope.train.config.TrainConfig.check_params`). The constructor

1. binds the arguments (an unknown one is a ``TypeError`` naming it) and validates them against the
   ``Config``'s types (:func:`validate_hyperparameters`: a bad value is an
   :class:`~repscope.errors.InvalidArgumentError` naming ``model.params.<key>``, the key a config
   file sets); the ``Config`` holds the validated values (``latent_dim`` an int, ``beta`` a float),
2. calls :meth:`ImageTask.check_config` for the rules across fields (``num_outputs`` against ``kind``)
   and values derived from others (a default architecture resolved from the image shape),
3. saves every field with ``save_hyperparameters``, so a checkpoint's ``hyper_parameters`` hold all of
   them and ``cls(**hyper_parameters)`` rebuilds the task,
4. calls :meth:`ImageTask.build`, where each class creates its networks (a subclass calls
   ``super().build()`` first, so the parent's networks are created, and draw their initial weights,
   first).

Values are plain (ints, floats, strings, lists and dicts of those), so a checkpoint loads with
``torch.load(..., weights_only=True)``.

Inference protocols
-------------------
Inference methods run in eval mode without gradients, on the module's device, and restore the
train/eval mode they found. Sampling draws from a CPU ``torch.Generator`` seeded with ``seed``: the
same seed gives the same bytes. Images are uint8 ``(N, H, W)`` (grey) or ``(N, H, W, C)`` (colour).
One protocol per family (:class:`Encoder`, :class:`Generator`, :class:`Classifier`):

==================  ===================================================================================
family              protocol
==================  ===================================================================================
VAE family          :class:`Encoder` (``encode``: posterior means) and :class:`Generator` (``sample``
                    from the prior, ``decode`` of codes ``(N, latent_dim)``)
GAN                 :class:`Generator` (``decode`` of ``z`` ``(N, latent_dim)``)
InfoGAN             :class:`Generator` and :class:`Encoder`: ``encode`` gives the recognition network's
                    codes as one ``(N, D)`` array, one column per code in the order of
                    ``code_spec.code_columns()`` (categorical codes as their class index, then
                    continuous means, then binary 0/1); ``decode`` takes that layout (or the codes by
                    column name) and the noise
supervised          :class:`Classifier` (``predict``: classes or values, ``soft_labels``: class
                    probabilities)
multimodal VAEs     ``encode`` (the joint posterior's codes of the given modalities), ``sample`` (every
                    modality from the prior) and ``decode`` (every modality from codes), each a dict by
                    modality where more than one modality is involved
==================  ===================================================================================
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, ClassVar, Protocol, runtime_checkable

import lightning.pytorch as pl
import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from repscope.config import format_validation_error
from repscope.errors import InvalidArgumentError
from repscope.validation import check_images as check_image_batch
from repscope.validation import (
    check_pixel_values,  # noqa: F401 -- the pixel rule, importable from here too
    check_positive_int,
)

EVAL_BATCH = 512
DIGIT_SHAPE = (1, 28, 28)

#: The type of an ``image_shape`` hyper-parameter: ``[channels, height, width]``, each at least 1 (stored
#: as a list of plain ints, fit for ``save_hyperparameters``).
ImageShape = Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=3, max_length=3)]


def channels_last_shape(image_shape: Sequence[int]) -> tuple[int, ...]:
    """``(C, H, W)`` -> the numpy layout users pass: ``(H, W)`` for grey, ``(H, W, C)`` for colour.

    Parameters
    ----------
    image_shape : sequence of int
        ``(C, H, W)``, the channels-first shape of one image.

    Returns
    -------
    tuple of int
        ``(H, W)`` when ``C == 1``, else ``(H, W, C)``.
    """
    channels, height, width = (int(s) for s in image_shape)
    return (height, width) if channels == 1 else (height, width, channels)


def check_images(images: Any, name: str = "images", image_shape: Sequence[int] = DIGIT_SHAPE) -> np.ndarray:
    """``images`` checked against ``image_shape`` ``(C, H, W)``: uint8 (0-255) or float in [0, 1],
    grey ``(N, H, W)`` (or ``(N, 1, H, W)``), colour ``(N, H, W, C)`` (or ``(N, C, H, W)``). Returns
    the batch in the channels-last numpy layout; raises :class:`InvalidArgumentError` naming ``name``.

    Parameters
    ----------
    images : array-like or torch.Tensor
        The batch, at least one image: uint8 (0-255), or float / bool with finite values in [0, 1].
    name : str, default="images"
        The argument named in error messages.
    image_shape : sequence of int, default=(1, 28, 28)
        ``(C, H, W)`` of one image.

    Returns
    -------
    numpy.ndarray
        ``(N, H, W)`` for grey, ``(N, H, W, C)`` for colour images; the values and dtype as given (not
        converted; a view where the layout had to change).

    Raises
    ------
    InvalidArgumentError
        When ``images`` is empty, not a batch of images of ``image_shape``, or breaks the pixel rule
        (another dtype, NaN / infinite values, floats outside [0, 1]).
    """
    return check_image_batch(images, name, image_shape=channels_last_shape(image_shape))


def image_batches(images: np.ndarray, batch_size: int, device: torch.device) -> Iterator[torch.Tensor]:
    """Float ``(b, C, H, W)`` tensors in [0, 1] on ``device`` from a checked channels-last batch.

    Parameters
    ----------
    images : numpy.ndarray
        A batch as :func:`check_images` returns it: ``(N, H, W)`` or ``(N, H, W, C)``, uint8 (0-255,
        divided by 255) or float in [0, 1] (cast to float32 as it is). Read-only arrays are copied.
    batch_size : int
        Images per yielded tensor (the last one may hold fewer), at least 1.
    device : torch.device
        Where the tensors are put.

    Yields
    ------
    torch.Tensor
        float32 ``(b, C, H, W)`` in [0, 1], ``b <= batch_size``, in the order of ``images``.

    Raises
    ------
    InvalidArgumentError
        When ``batch_size`` is below 1 (on the first ``next``: this is a generator).
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    for start in range(0, len(images), batch_size):
        rows = np.ascontiguousarray(images[start : start + batch_size])
        chunk = torch.from_numpy(rows if rows.flags.writeable else rows.copy())  # memory-mapped files are read-only
        chunk = chunk.float() / 255.0 if chunk.dtype == torch.uint8 else chunk.float()
        yield (chunk.unsqueeze(1) if chunk.ndim == 3 else chunk.permute(0, 3, 1, 2)).to(device)


def to_uint8(probabilities: torch.Tensor) -> np.ndarray:
    """``(B, C, H, W)`` intensities in [0, 1] -> uint8 ``round(255 p)``: ``(B, H, W)`` for one channel,
    ``(B, H, W, C)`` for colour.

    Parameters
    ----------
    probabilities : torch.Tensor, shape (B, C, H, W)
        Pixel intensities (e.g. Bernoulli means, not logits) in [0, 1], on any device.

    Returns
    -------
    numpy.ndarray
        uint8 ``round(255 p)`` clipped to 0-255, on the CPU: ``(B, H, W)`` when ``C == 1``, else
        ``(B, H, W, C)``.
    """
    pixels = torch.round(probabilities * 255.0).clamp(0, 255).to(torch.uint8)
    pixels = pixels[:, 0] if pixels.shape[1] == 1 else pixels.permute(0, 2, 3, 1)
    return pixels.cpu().numpy()


def seeded(seed: int) -> torch.Generator:
    """A CPU random generator seeded with ``seed``: the same seed gives the same draws.

    Parameters
    ----------
    seed : int
        The seed (an integral float such as ``3.0`` is accepted; bools are not).

    Returns
    -------
    torch.Generator
        A new CPU generator, ``manual_seed(int(seed))``.

    Raises
    ------
    InvalidArgumentError
        When ``seed`` is a bool or a non-integral number.
    """
    if isinstance(seed, bool) or int(seed) != seed:
        raise InvalidArgumentError(f"seed: must be an integer, got {seed!r}")
    return torch.Generator().manual_seed(int(seed))


def count(n: int) -> int:
    """``n`` checked as a number of samples to draw.

    Parameters
    ----------
    n : int
        How many samples; 0 is allowed (an integral float such as ``3.0`` is accepted; bools are not).

    Returns
    -------
    int
        ``n`` as an int.

    Raises
    ------
    InvalidArgumentError
        When ``n`` is a bool, a non-integral number or negative.
    """
    if isinstance(n, bool) or int(n) != n or n < 0:
        raise InvalidArgumentError(f"n: must be a non-negative integer, got {n!r}")
    return int(n)


@contextmanager
def evaluating(module: torch.nn.Module) -> Iterator[None]:
    """Eval mode and no gradients inside; the module's previous mode restored after.

    Parameters
    ----------
    module : torch.nn.Module
        The module switched to eval mode (with its children) for the ``with`` block.

    Yields
    ------
    None
        Once; inside, ``torch.no_grad()`` is active. ``module.train(previous mode)`` runs on exit,
        also when the block raises.
    """
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        module.train(was_training)


@runtime_checkable
class Encoder(Protocol):
    """A task that infers codes from images (the VAE family, InfoGAN)."""

    def encode(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """Codes of ``images``, one row per image.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one image of the task's image shape: uint8 (0-255) or float in [0, 1], grey
            ``(N, H, W)`` or colour ``(N, H, W, C)`` (channels-first accepted).
        batch_size : int, default=512
            Images per forward pass.

        Returns
        -------
        numpy.ndarray
            float32 ``(N, D)``; the family documents its columns (posterior means, InfoGAN's code columns).
        """
        ...


@runtime_checkable
class Generator(Protocol):
    """A task that makes images: from its prior (``sample``) or from given codes (``decode``)."""

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """Images from the prior.

        Parameters
        ----------
        n : int
            Number of images, 0 or more.
        seed : int, default=0
            Seed of the CPU generator of the prior's draws: the same seed gives the same bytes.

        Returns
        -------
        numpy.ndarray
            uint8 ``(n, H, W)`` grey or ``(n, H, W, C)`` colour images.
        """
        ...

    def decode(self, codes: Any) -> np.ndarray:
        """Images of given codes.

        Parameters
        ----------
        codes : array-like, shape (N, D)
            Codes in the layout :meth:`Encoder.encode` gives (a GAN: its generator's input ``z``).

        Returns
        -------
        numpy.ndarray
            uint8 ``(N, H, W)`` grey or ``(N, H, W, C)`` colour images.
        """
        ...


@runtime_checkable
class Classifier(Protocol):
    """A task that predicts a target from images (the supervised family)."""

    def predict(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """The predicted target of each image.

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one image of the task's image shape, as for :meth:`Encoder.encode`.
        batch_size : int, default=512
            Images per forward pass.

        Returns
        -------
        numpy.ndarray
            ``(N,)`` int64 classes (classification) or float32 values (regression).
        """
        ...

    def soft_labels(self, images: Any, batch_size: int = EVAL_BATCH) -> np.ndarray:
        """The class probabilities of each image (classifiers only).

        Parameters
        ----------
        images : array-like or torch.Tensor
            At least one image of the task's image shape, as for :meth:`Encoder.encode`.
        batch_size : int, default=512
            Images per forward pass.

        Returns
        -------
        numpy.ndarray
            float64 ``(N, classes)``, non-negative, rows summing to one.
        """
        ...


def optimiser_options(module: torch.nn.Module) -> dict[str, Any]:
    """Keyword arguments that make a ``torch.optim`` optimiser fast where ``module``'s parameters are.

    On a CUDA device: ``fused=True``, one kernel updating every parameter per step instead of several
    per tensor. Elsewhere nothing: the CPU keeps torch's default (``foreach`` where it applies), so
    CPU numbers do not change. Call it in ``configure_optimizers``, which Lightning runs once the
    module is on its device.

    Parameters
    ----------
    module : torch.nn.Module
        The module whose parameters the optimiser updates.

    Returns
    -------
    dict of str to object
        ``{"fused": True}`` on CUDA, else ``{}``.
    """
    parameter = next(module.parameters(), None)
    return {"fused": True} if parameter is not None and parameter.device.type == "cuda" else {}


def _merged_config(cls: type) -> type:
    """``cls``'s hyper-parameter dataclass: its own ``Config`` extended by every base's it does not inherit.

    A ``Config`` declared without ``@dataclass`` is made one (keyword-only fields), and a class that
    declares none, or one that does not inherit a base's (a mixin's fields, a forgotten parent), gets a
    ``Config`` deriving from all of them. Its fields come in dataclass order (the merged class's reverse
    MRO): for ``class X(Mixin, Parent)`` the parent's fields, then the mixin's, then those of a ``Config``
    that ``X`` declares without deriving from either.
    """
    own = cls.__dict__.get("Config")
    if own is not None and "__dataclass_fields__" not in own.__dict__:
        own = dataclasses.dataclass(kw_only=True)(own)
    inherited: list[type] = []
    for base in cls.__bases__:
        parent = getattr(base, "Config", None)
        if parent is not None and parent not in inherited and not (own is not None and issubclass(own, parent)):
            inherited.append(parent)
    # a parent's Config already extended by another base's adds nothing (and would break the MRO)
    inherited = [p for p in inherited if not any(q is not p and issubclass(q, p) for q in inherited)]
    if not inherited:
        return own if own is not None else cls.Config
    if own is None and len(inherited) == 1:
        return inherited[0]
    # dataclass fields follow the reverse MRO: the bases listed last (the main parent) come first
    bases = (*([own] if own is not None else []), *inherited)
    namespace = {
        "__module__": cls.__module__,
        "__qualname__": f"{cls.__qualname__}.Config",
        "__doc__": f"The hyper-parameters of {cls.__name__}: those of {', '.join(b.__qualname__ for b in bases)}.",
    }
    return dataclasses.dataclass(kw_only=True)(type("Config", bases, namespace))


def _constructor(cls: type) -> Any:
    """An ``__init__`` for ``cls`` whose signature is its ``Config``'s fields (by position or keyword)."""
    hints = typing.get_type_hints(cls.Config)
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for field in dataclasses.fields(cls.Config):
        default = field.default if field.default is not dataclasses.MISSING else inspect.Parameter.empty
        parameters.append(
            inspect.Parameter(
                field.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=hints[field.name]
            )
        )
    signature = inspect.Signature(parameters)

    def __init__(self: ConfiguredModule, *args: Any, **kwargs: Any) -> None:
        kwargs = type(self).accepted_arguments(kwargs)
        try:
            arguments = signature.bind(self, *args, **kwargs).arguments
        except TypeError as exc:  # name the class, as Python's own message for a bad argument does
            raise TypeError(f"{type(self).__name__}.__init__() {exc}") from None
        arguments.pop("self")
        ConfiguredModule.__init__(self, **arguments)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    __init__.__annotations__ = {field.name: hints[field.name] for field in dataclasses.fields(cls.Config)}
    __init__.__annotations__["return"] = None
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    __init__.__doc__ = f"A {cls.__name__} of the hyper-parameters of its ``Config`` (see the class docstring)."
    return __init__


def config_schema(task: type, skip: Iterable[str] = ()) -> type[BaseModel]:
    """The pydantic model of ``task``'s hyper-parameters: a field per ``Config`` field (its type, with the
    rule ``Annotated`` on it, and its default), less those in ``skip``; an unknown key is refused, and a
    default is validated too, so that every value comes out in its stored form.

    Parameters
    ----------
    task : type
        A :class:`ConfiguredModule` subclass.
    skip : iterable of str, default=()
        Fields left out (those the framework sets, which a config may not).

    Returns
    -------
    type of pydantic.BaseModel
        Built once per task class and ``skip``.
    """
    return _config_schema(task, frozenset(skip))


@functools.cache
def _config_schema(task: type, skip: frozenset[str]) -> type[BaseModel]:
    hints = typing.get_type_hints(task.Config, include_extras=True)
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(task.Config):
        if field.name not in skip:
            default = field.default if field.default is not dataclasses.MISSING else ...
            fields[field.name] = (hints[field.name], default)
    settings = ConfigDict(extra="forbid", validate_default=True, arbitrary_types_allowed=True)
    return create_model(f"{task.__name__}Config", __config__=settings, **fields)


def validate_hyperparameters(
    task: type, params: Mapping[str, Any], source: str, prefix: str = "model.params", skip: Iterable[str] = ()
) -> dict[str, Any]:
    """``params`` validated against the ``Config`` of ``task`` (:func:`config_schema`): the one check of a
    hyper-parameter's value, for a constructor call and a config file's ``model.params`` alike.

    Parameters
    ----------
    task : type
        A :class:`ConfiguredModule` subclass.
    params : mapping
        Field name -> value, as given.
    source : str
        Where they come from (the class, a config file), first in the message.
    prefix : str, default="model.params"
        Put before each key in the message (where a config file sets it).
    skip : iterable of str, default=()
        Fields left out of the check (and of the result).

    Returns
    -------
    dict
        Every field (but ``skip``) -> its validated value (the default where not given), in field order.

    Raises
    ------
    InvalidArgumentError
        One line naming each bad key (``<source>: key model.params.beta: Input should be greater than or
        equal to 0 (got -1)``) and each unknown one.
    """
    schema = config_schema(task, skip)
    try:
        validated = schema.model_validate(dict(params))
    except ValidationError as exc:
        raise InvalidArgumentError(format_validation_error(exc, source, prefix)) from None
    return {name: getattr(validated, name) for name in schema.model_fields}


class ConfiguredModule(pl.LightningModule):
    """A LightningModule whose hyper-parameters are its nested ``Config`` dataclass (module docstring).

    The one mechanism of every task family (:class:`ImageTask`, the multimodal VAEs): a subclass
    declares its fields, with their rules, in a ``Config`` extending its parent's, checks the rules
    across fields in :meth:`check_config` and creates its networks in :meth:`build`; its constructor,
    and saving every field into the checkpoint, follow from the ``Config``. Two hooks let a family adapt
    what is taken and what is recorded: :meth:`accepted_arguments` and :meth:`recorded_hyperparameters`.

    ``trainer.compile`` (:func:`repscope.train.fitting.compile_networks`) compiles the methods named in
    :attr:`compiled_methods`, each whole; where there are none, each child network.
    """

    # the methods that hold a step's whole differentiable computation, for a family whose step calls
    # its networks through methods (``net.loss``) rather than ``net(...)``: compiling the child
    # networks would then compile code the step never runs
    compiled_methods: ClassVar[tuple[str, ...]] = ()

    @dataclasses.dataclass(kw_only=True)
    class Config:
        """The hyper-parameters every task shares: none."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.Config = _merged_config(cls)
        if "__init__" not in cls.__dict__:
            cls.__init__ = _constructor(cls)  # type: ignore[method-assign]

    def __init__(self, **hyperparameters: Any) -> None:
        super().__init__()
        self._epoch_sums: dict[str, tuple[torch.Tensor, int]] = {}  # log_training's running epoch means
        config = self.Config(**validate_hyperparameters(type(self), hyperparameters, type(self).__name__))
        self.check_config(config)
        self.save_hyperparameters(self.recorded_hyperparameters(config))
        self.build()

    @classmethod
    def config_fields(cls) -> tuple[str, ...]:
        """The names of the class's hyper-parameters (its ``Config`` fields, the parents' first).

        Returns
        -------
        tuple of str
            What the constructor takes.
        """
        return tuple(field.name for field in dataclasses.fields(cls.Config))

    @classmethod
    def accepted_arguments(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        """The constructor's keyword arguments before they are bound to the ``Config`` (a hook).

        A family that records more than its fields (see :meth:`recorded_hyperparameters`) removes it
        here, so that ``cls(**hyper_parameters)`` rebuilds the task; the default takes them as they are.

        Parameters
        ----------
        arguments : dict
            The keyword arguments as given.

        Returns
        -------
        dict
            The arguments bound to the ``Config`` (an unknown one is a ``TypeError`` naming it).
        """
        return arguments

    def recorded_hyperparameters(self, config: Any) -> dict[str, Any]:
        """What ``save_hyperparameters`` records (a hook): every field of the checked ``config``.

        Parameters
        ----------
        config : Config
            The checked hyper-parameters.

        Returns
        -------
        dict
            Field name -> value, in field order.
        """
        return {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}

    def check_config(self, config: Any) -> None:
        """Check the rules across fields and derive the values that depend on others, in place.

        Each field's own rule is part of its type and was checked before (:func:`validate_hyperparameters`);
        a class with a rule across fields (``num_outputs`` against ``kind``) or a value resolved from
        others (a default architecture for the image shape) extends this method and calls
        ``super().check_config(config)``. The values saved as hyper-parameters are those it leaves.

        Parameters
        ----------
        config : Config
            The task's validated hyper-parameters.

        Raises
        ------
        InvalidArgumentError
            When values do not fit together (naming the argument).
        """

    def build(self) -> None:
        """Create the task's networks from ``self.hparams`` (the checked hyper-parameters).

        A subclass that adds networks calls ``super().build()`` first, so the networks are created,
        and draw their initial weights from the global torch generator, in the same order every time.
        """

    def log_training(self, name: str, value: torch.Tensor, batch_size: int) -> None:
        """Log a value of a step as ``self.log(name, value, on_epoch=True, batch_size=batch_size)`` does,
        for a fraction of its cost in a training step.

        Lightning's ``self.log`` costs about a millisecond a call on a CPU (it moves its record of the
        value to the value's device on every call), as much as a whole LeNet-5 step. In a training step
        the value is added here to a running batch-size-weighted sum on its device (no host read), and
        Lightning is called only where its logger writes: ``<name>_step`` on the steps the logger
        writes (every ``log_every_n_steps``) and on an epoch's last step, ``<name>_epoch`` (the
        logger's and the callbacks') and
        ``<name>`` (the callbacks') once an epoch, the mean ``sum(mean(value) * batch_size) /
        sum(batch_size)``, Lightning's own formula in the same order, so the same number. Outside a
        training step (validation, no Trainer) it is ``self.log`` itself.

        Parameters
        ----------
        name : str
            The metric's name (``train_loss``).
        value : torch.Tensor
            Its value in this step (a scalar, or a tensor whose mean is logged).
        batch_size : int
            Examples in the step: the weight of its value in the epoch mean.
        """
        trainer = self._trainer
        if trainer is None or not trainer.training:
            self.log(name, value, on_epoch=True, prog_bar=False, batch_size=batch_size)
            return
        value = value.detach()
        weighted = value.mean() * batch_size
        total, count = self._epoch_sums.get(name, (None, 0))
        self._epoch_sums[name] = (weighted if total is None else total + weighted, count + batch_size)
        # the step value: on the steps the logger writes, and on an epoch's last step (what callbacks
        # and the run's final metrics see as <name>_step)
        last = trainer.fit_loop.epoch_loop.batch_idx + 1 >= trainer.num_training_batches
        if last or trainer._logger_connector.should_update_logs:
            self.log(f"{name}_step", value, on_step=True, on_epoch=False, batch_size=batch_size)

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        """After an epoch's last step, log the epoch means of :meth:`log_training`, so that callbacks see
        them at the end of the epoch as they saw Lightning's (a subclass that extends it calls this)."""
        if batch_idx + 1 >= self.trainer.num_training_batches:
            self._log_epoch_means()

    def on_train_epoch_end(self) -> None:
        """An epoch cut short (``max_steps``): log its means now (a subclass that extends it calls this)."""
        self._log_epoch_means()

    def _log_epoch_means(self) -> None:
        for name, (total, count) in self._epoch_sums.items():
            mean = total / count
            # batch_size 1: Lightning's epoch reduction of this one value, mean * 1 / 1, is the mean itself
            self.log(f"{name}_epoch", mean, on_step=False, on_epoch=True, batch_size=1)
            self.log(name, mean, on_step=False, on_epoch=True, logger=False, batch_size=1)
        self._epoch_sums.clear()


class ImageTask(ConfiguredModule):
    """Shared plumbing: hyper-parameters from :attr:`Config` (:class:`ConfiguredModule`), the fields a
    batch must hold, logging defaults, decoding latents in chunks.

    A subclass declares its hyper-parameters, with their rules, in a nested ``Config`` dataclass
    extending its parent's, checks the rules across fields in :meth:`check_config` and creates its
    networks in :meth:`build` (module docstring); its constructor, and saving every field into the
    checkpoint, follow from the ``Config``.
    """

    batch_fields: tuple[str, ...] = ("image",)

    @property
    def image_shape(self) -> tuple[int, ...]:
        return tuple(self.hparams.get("image_shape") or DIGIT_SHAPE)

    def _log(self, name: str, value: torch.Tensor, batch_size: int) -> None:
        # in a training step: ``<name>_step`` and ``<name>_epoch``, as Lightning's defaults give them
        self.log_training(name, value, batch_size)

    def _decode(self, network: torch.nn.Module, latent: torch.Tensor) -> np.ndarray:
        with evaluating(self):
            chunks = [
                to_uint8(network(latent[s : s + EVAL_BATCH].to(self.device))) for s in range(0, len(latent), EVAL_BATCH)
            ]
        if chunks:
            return np.concatenate(chunks)
        return np.zeros((0, *channels_last_shape(self.image_shape)), np.uint8)


__all__ = [
    "ImageTask",
    "Encoder",
    "Generator",
    "Classifier",
    "check_images",
    "image_batches",
    "to_uint8",
    "seeded",
    "count",
    "evaluating",
    "EVAL_BATCH",
    "channels_last_shape",
    "ImageShape",
    "config_schema",
    "validate_hyperparameters",
    "DIGIT_SHAPE",
]

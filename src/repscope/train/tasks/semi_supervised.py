"""Semi-supervised variants of the VAE family: factor labels for a fixed fraction of the data.

Locatello et al. (2020), "Disentangling factors of variation using few labels": the unsupervised loss
of a model plus ``supervision_weight`` (their ``gamma_sup``) times a supervised loss ``L_s`` on the
labelled examples, which ties latent dimensions to the factors. The CANDLE paper trains beta-VAE,
beta-TCVAE, DIP-VAE and FactorVAE so, with labels for 10% of the data points, ``rho`` latent dimensions
per factor.

Definitions implemented here (per training / validation batch):

* **Labelled examples** -- a deterministic function of the example's dataset ``index`` field and
  ``label_seed`` only (:func:`labelled_mask`): ``u(index) < labelled_fraction`` with ``u`` the splitmix64
  hash of ``index + label_seed * 2^32`` mapped to [0, 1). The same examples are labelled in every
  epoch, batch order, run and split; about ``labelled_fraction`` of any set of indices, independently of
  the factors.
* **Latent assignment** -- the ``k``-th supervised factor (``supervised_factors[k]``, a column of the
  ``factors`` field) owns latent dimensions ``k * rho .. (k + 1) * rho - 1`` with ``rho =
  dims_per_factor``; the remaining dimensions are unsupervised.
* **Supervised loss** -- Locatello et al.'s "xent" loss: ``sigmoid(mu_j)`` of each of factor ``k``'s
  dimensions ``j`` is matched to the factor's class ``c``, scaled to a target ``t_k`` in [0, 1], by binary
  cross-entropy::

      L_s(x) = sum_k sum_{j of factor k} BCE(t_k, sigmoid(mu_j))
             = sum_k sum_j [softplus(mu_j) - t_k * mu_j]

  (``mu``: the posterior means, no sampling). The soft targets make the minimum the targets' entropy,
  not 0.
* **Where the labelled examples come from** (``supervision``):

  - ``"stream"`` (default), as Locatello et al.'s code trains: every step draws a full batch of labelled
    examples, as many as the (unlabelled) batch, from a :class:`LabelledStream` that cycles through the
    labelled examples of the training data in a seeded order (``stream_seed``, default the run's seed),
    and ``supervised = sum over that batch of L_s`` with ``t_k = c / K`` for a factor of ``K`` classes.
    The reference: google-research/disentanglement_lib (whose semi-supervised methods the CANDLE fork
    causal-disentanglement/disentanglement_lib keeps), ``methods/semi_supervised/train_semi_supervised_lib.py``,
    ``semi_supervised_dataset_from_ground_truth_data`` (the labelled set ``repeat()``-ed and zipped with
    the unlabelled stream before ``batch(batch_size)``), and ``methods/semi_supervised/semi_supervised_vae.py``,
    ``BaseS2VAE.model_fn`` (the labelled images encoded by the same encoder, the term added to the
    regulariser with weight ``gamma_sup``), ``supervised_regularizer_xent`` (``reduce_sum`` over the batch
    and the factors: a sum, not a mean) and ``normalize_labels`` (``labels / factors_num_values``).
    Validation steps draw likewise from the validation data's labelled examples (from the start of that
    stream each validation epoch; no term when it has none), batches as large as the training batch.
    Unlike the reference, whose labelled set is a separate random sample, the labelled examples are those
    of the training data that :func:`labelled_mask` picks, the same ones ``"batch_share"`` uses.
  - ``"batch_share"`` (this package's earlier behaviour): ``supervised = mean of L_s over the batch's own
    labelled examples`` (0 when the batch holds none; about ``labelled_fraction`` of each batch) with
    ``t_k = c / (K - 1)``. About batch-size times weaker than the reference's term.
* **Loss** -- ``loss = <the model's loss> + supervision_weight * supervised``; logged as ``train_loss``,
  with ``train_supervised`` and ``train_labelled`` (labelled examples in the step; ``val_*`` likewise).

A training step on an accelerator reads nothing back to the host (each read would make the CPU wait for
the device): the stream's rows are held on the device and its draws computed there from Python integers
(its classes are checked once, on the CPU, when it is built); with ``"batch_share"`` the labelled examples
are hashed on the batch's device (:func:`labelled_on_device`, the same bits as :func:`labelled_mask`) and
the supervised loss is a masked average, and the checks of the batch's values (negative indices, classes
out of range) read it on the CPU, and on an accelerator only for the first batch the task sees.

Every variant reads the batch fields ``image``, ``factors`` (int64 ``(B, F)`` classes) and ``index``
(int64 ``(B,)``), e.g. of the ``dsprites`` dataset. The mixin adds the term through the
:meth:`VAETask.regulariser` hook, which sees the posterior means, so FactorVAE's manual optimisation step
includes it too (its discriminator step is unchanged).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field

from repscope.errors import InvalidArgumentError
from repscope.train.datamodule import SplitView, field_to_tensor
from repscope.train.tasks.disentangling_vaes import BetaTCVAETask, DIPVAETask, FactorVAETask
from repscope.train.tasks.vae import VAETask
from repscope.validation import Seed

DSPRITES_FACTOR_SIZES = (1, 3, 6, 40, 32, 32)  # color, shape, scale, orientation, posX, posY (dsprites.FACTOR_SIZES)
LABELLED_FRACTION = 0.1  # the CANDLE paper: labels for 10% of the data points
SUPERVISION_WEIGHT = 4.0  # gamma_sup; Locatello et al. (2020) sweep it over a small range around 1-16
# where the labelled examples of a step come from (module docstring): a labelled stream zipped into every
# step, as Locatello et al.'s code does, or the batch's own labelled share
SUPERVISIONS = ("stream", "batch_share")

_MASK64 = (1 << 64) - 1


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser of uint64 ``x`` (wrapping arithmetic): a well-mixed 64-bit hash."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(_MASK64)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def labelled_mask(index: Any, fraction: float = LABELLED_FRACTION, seed: int = 0) -> np.ndarray:
    """Which examples have labels: ``u(index) < fraction``, a pure function of ``(index, seed)``.

    ``u = (splitmix64(index + seed * 2^32) >> 11) / 2^53``, uniform on [0, 1) over indices, so about
    ``fraction`` of any set of indices is labelled, the same ones in every epoch and run.

    Parameters
    ----------
    index : array-like or torch.Tensor of int
        Non-negative dataset indices (the ``index`` field), any shape.
    fraction : float, default=0.1
        In [0, 1]: 0 labels nothing, 1 everything.
    seed : int, default=0
        Non-negative; a different seed labels a different (independent) subset.

    Returns
    -------
    numpy.ndarray
        bool, ``index``'s shape.

    Raises
    ------
    InvalidArgumentError
        When ``fraction`` is outside [0, 1], ``seed`` negative, or an index negative.
    """
    if not 0.0 <= float(fraction) <= 1.0:
        raise InvalidArgumentError(f"labelled_fraction: must be in [0, 1], got {fraction}")
    if int(seed) < 0:
        raise InvalidArgumentError(f"label_seed: must be non-negative, got {seed}")
    if isinstance(index, torch.Tensor):
        index = index.detach().cpu().numpy()
    index = np.asarray(index, dtype=np.int64)
    if index.size and index.min() < 0:
        raise InvalidArgumentError(f"index: must be non-negative, got {int(index.min())}")
    with np.errstate(over="ignore"):
        key = index.astype(np.uint64) + np.uint64((int(seed) << 32) & _MASK64)
        uniform = (_splitmix64(key) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return uniform < float(fraction)


def _on_host(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` lives on the CPU, where reading its values on the host costs no synchronisation."""
    return tensor.device.type == "cpu"


def _signed(value: int) -> int:
    """The int64 with the bits of the uint64 ``value``."""
    return value - (1 << 64) if value >= (1 << 63) else value


def _shift_right(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int64 ``x`` seen as uint64 (torch's ``>>`` on int64 is arithmetic)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def labelled_on_device(index: torch.Tensor, fraction: float = LABELLED_FRACTION, seed: int = 0) -> torch.Tensor:
    """:func:`labelled_mask` computed by torch on ``index``'s device, without a copy to the host.

    splitmix64 in int64 arithmetic (wrapping, as uint64's) with logical shifts: the same bits as the numpy
    version, so the same examples are labelled on any device. The arguments are not checked (a training
    step checks them once, :meth:`SemiSupervisedMixin.check_config` and the first batch).

    Parameters
    ----------
    index : torch.Tensor of int
        Non-negative dataset indices, any shape.
    fraction : float, default=0.1
        In [0, 1].
    seed : int, default=0
        Non-negative.

    Returns
    -------
    torch.Tensor
        bool, ``index``'s shape and device.
    """
    x = index.to(torch.int64) + _signed((int(seed) << 32) & _MASK64)
    x = x + _signed(0x9E3779B97F4A7C15)
    x = (x ^ _shift_right(x, 30)) * _signed(0xBF58476D1CE4E5B9)
    x = (x ^ _shift_right(x, 27)) * _signed(0x94D049BB133111EB)
    x = x ^ _shift_right(x, 31)
    uniform = _shift_right(x, 11).to(torch.float64) / float(1 << 53)
    return uniform < float(fraction)


def supervised_xent(mean: torch.Tensor, targets: torch.Tensor, dims_per_factor: int = 1) -> torch.Tensor:
    """Locatello et al.'s "xent" loss per example: ``sum_k sum_{j of factor k} BCE(t_k, sigmoid(mu_j))``.

    Parameters
    ----------
    mean : torch.Tensor, shape (B, D)
        Posterior means; factor ``k`` owns dimensions ``k * rho .. (k + 1) * rho - 1``.
    targets : torch.Tensor, shape (B, K)
        Factor classes scaled to [0, 1] (``class / size`` for ``supervision="stream"``, ``class / (size - 1)``
        for ``"batch_share"``), float.
    dims_per_factor : int, default=1
        ``rho``; ``K * rho <= D``.

    Returns
    -------
    torch.Tensor
        ``(B,)`` losses in nats.
    """
    k = targets.shape[1]
    logits = mean[:, : k * dims_per_factor]
    expanded = targets.to(logits.dtype).repeat_interleave(dims_per_factor, dim=1)
    return F.binary_cross_entropy_with_logits(logits, expanded, reduction="none").sum(1)


class LabelledStream:
    """A full batch of labelled examples for every step, cycling through a labelled subset in a seeded order.

    Locatello et al.'s code zips an endless labelled dataset into the unlabelled one before batching
    (google-research/disentanglement_lib, ``methods/semi_supervised/train_semi_supervised_lib.py``,
    ``semi_supervised_dataset_from_ground_truth_data``: ``from_tensor_slices(labelled).repeat()`` zipped with
    the unlabelled stream, then ``batch(batch_size)``): step ``s`` takes the labelled examples ``s * B ..
    s * B + B - 1`` of the repeated subset, wrapping around, so every step has ``B`` labelled examples and
    each example is used once per pass over the subset. Here the subset's order is a seeded permutation
    (the reference's subset is drawn at random, in the order drawn) and the draws are::

        rows(step s) = order[(p_s + arange(B)) mod N],   p_{s+1} = (p_s + B) mod N

    with ``N`` the subset's size and ``p_0 = 0``. The rows are computed on the tensors' device from Python
    integers (no read back to the host); images held as uint8 become float32 in [0, 1] per batch.

    Parameters
    ----------
    images : torch.Tensor, shape (N, C, H, W)
        The labelled examples' images, uint8 (0-255) or float in [0, 1], on the device the batches are
        wanted on.
    factors : torch.Tensor, shape (N, F)
        Their int64 factor classes (all columns of the ``factors`` field), on the same device.
    seed : int
        Seed of the order (a ``torch.Generator`` on the CPU draws the permutation once).

    Raises
    ------
    InvalidArgumentError
        When there is no labelled example or ``images`` and ``factors`` differ in length.
    """

    def __init__(self, images: torch.Tensor, factors: torch.Tensor, seed: int) -> None:
        if len(images) == 0:
            raise InvalidArgumentError("labelled_fraction: the labelled stream needs at least one labelled example")
        if len(images) != len(factors) or factors.ndim != 2:
            raise InvalidArgumentError(
                f"factors: expected shape ({len(images)}, F) for {len(images)} labelled images, "
                f"got {tuple(factors.shape)}"
            )
        self.seed = int(seed)
        self.images, self.factors = images, factors
        order = torch.randperm(len(images), generator=torch.Generator().manual_seed(self.seed))
        self.order = order.to(images.device)
        self.position = 0

    def __len__(self) -> int:
        return len(self.images)

    @property
    def device(self) -> torch.device:
        """Where the stream's rows are held.

        Returns
        -------
        torch.device
            The device of the images.
        """
        return self.images.device

    def to(self, device: torch.device | str) -> LabelledStream:
        """Move the held rows and the order to ``device`` (the position is kept).

        Parameters
        ----------
        device : torch.device or str
            The new device.

        Returns
        -------
        LabelledStream
            ``self``.
        """
        self.images, self.factors, self.order = (t.to(device) for t in (self.images, self.factors, self.order))
        return self

    def next_rows(self, size: int) -> torch.Tensor:
        """The row numbers (into ``images``) of the next ``size`` labelled examples; advances the position.

        Parameters
        ----------
        size : int
            The batch size ``B`` (at least 1; may exceed the subset's size, which then repeats).

        Returns
        -------
        torch.Tensor
            int64 ``(size,)`` on the stream's device.
        """
        positions = torch.remainder(torch.arange(int(size), device=self.order.device) + self.position, len(self))
        self.position = (self.position + int(size)) % len(self)
        return self.order.index_select(0, positions)

    def next(self, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The next ``size`` labelled examples (:meth:`next_rows`): images float32 in [0, 1] and factors.

        Parameters
        ----------
        size : int
            The batch size ``B``.

        Returns
        -------
        tuple of torch.Tensor
            ``(images (B, C, H, W) float32, factors (B, F) int64)`` on the stream's device.
        """
        rows = self.next_rows(size)
        images = self.images.index_select(0, rows)
        images = images.float() / 255.0 if images.dtype == torch.uint8 else images
        return images, self.factors.index_select(0, rows)


def _index_values(data: Any, chunk: int = 8192) -> np.ndarray:
    """The ``index`` field of every row of ``data`` (a :class:`SplitView` or a map-style dataset of dicts).

    A split drawn on demand draws whole samples to read it: once per run, ``chunk`` rows at a time."""
    if isinstance(data, SplitView):
        parts = [
            data.dataset.batch(data.split, data.rows[start : start + chunk], ("index",))["index"]
            for start in range(0, len(data), chunk)
        ]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
    return np.asarray([int(data[i]["index"]) for i in range(len(data))], dtype=np.int64)


def labelled_rows(data: Any, fraction: float = LABELLED_FRACTION, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The images and factors of the labelled examples (:func:`labelled_mask` of their ``index``) of ``data``.

    Parameters
    ----------
    data : SplitView or torch.utils.data.Dataset
        The examples: a :class:`~repscope.train.datamodule.SplitView` (its ``index`` field is read for every
        row, then the labelled rows' ``image`` and ``factors``), or any map-style dataset whose items are
        dicts with ``image``, ``factors`` and ``index`` (every item is read once).
    fraction : float, default=0.1
        ``labelled_fraction``.
    seed : int, default=0
        ``label_seed``.

    Returns
    -------
    tuple of torch.Tensor
        ``(images, factors)`` on the CPU in the order of ``data``: images as the data hold them (uint8
        0-255 where the field is uint8, else float32 in [0, 1]), factors int64 ``(N, F)``.

    Raises
    ------
    InvalidArgumentError
        When ``fraction`` or ``seed`` is out of range, or an index is negative.
    """
    mask = labelled_mask(_index_values(data), fraction, seed)
    if isinstance(data, SplitView):
        rows = data.rows[mask]
        batch = data.dataset.batch(data.split, rows, ("image", "factors"))
        images = torch.from_numpy(np.ascontiguousarray(batch["image"]))
        if images.dtype != torch.uint8:
            images = field_to_tensor(batch["image"], "image")
        return images, field_to_tensor(batch["factors"], "categorical")
    items = [data[int(i)] for i in np.flatnonzero(mask)]
    if not items:
        return torch.zeros(0), torch.zeros((0, 0), dtype=torch.int64)
    images = torch.stack([torch.as_tensor(item["image"]) for item in items])
    factors = torch.stack([torch.as_tensor(item["factors"]) for item in items]).long()
    return images, factors


class SemiSupervisedMixin:
    """Adds ``supervision_weight * supervised`` (see the module docstring) to a :class:`VAETask`'s loss.

    Put it before the VAE class: ``class X(SemiSupervisedMixin, VAETask)``; its ``Config`` fields follow
    the VAE's in ``X``'s constructor and hyper-parameters (:class:`~repscope.train.tasks.base.ImageTask`
    merges them), and :meth:`check_config` checks them after the VAE's own.

    With ``supervision="stream"`` (the default) a training step draws a full labelled batch from a
    :class:`LabelledStream` over the labelled examples of the training data (read once, from the Trainer's
    data module or training DataLoader, or given with :meth:`attach_labelled`); a validation step likewise
    from the validation data's labelled examples, from the start of the stream each validation epoch.
    :meth:`losses` takes that batch as ``labelled=(images, factors)``. With ``"batch_share"`` the labels come
    from the batch (fields ``factors`` and ``index``), or as :meth:`losses`' ``factors`` and ``index``.
    Without labels (``losses(images)`` alone) the model's unsupervised loss is returned.
    """

    batch_fields: tuple[str, ...] = ("image", "factors", "index")
    _supervision: tuple[str, Any] | None = None
    _batch_checked: bool = False  # whether a batch on an accelerator has been checked (the first one)
    _streams: dict[str, LabelledStream | None] | None = None
    _stream_size: int | None = None  # the size of the last training batch (the labelled batch's size)
    _restored_stream: dict[str, int] | None = None  # the training stream's state from a checkpoint

    @dataclass(kw_only=True)
    class Config:
        """The semi-supervised hyper-parameters (``_SEMI_DOC``), added to those of the VAE they extend."""

        labelled_fraction: Annotated[float, Field(ge=0, le=1)] = LABELLED_FRACTION
        supervision_weight: Annotated[float, Field(ge=0)] = SUPERVISION_WEIGHT
        supervised_factors: list[int] | None = None  # default: every factor with more than one class
        # the class count of each column of the factors field
        factor_sizes: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)] = DSPRITES_FACTOR_SIZES
        dims_per_factor: Annotated[int, Field(ge=1)] = 1
        label_seed: Seed = 0
        supervision: Literal[SUPERVISIONS] = "stream"
        stream_seed: Seed | None = None  # default: the run's seed (torch.initial_seed())

    def check_config(self, config: Any) -> None:
        """The model's checks, then the rules across the supervision fields: the chosen factors, enough latents.

        Parameters
        ----------
        config : Config
            The task's validated hyper-parameters; ``supervised_factors`` is resolved (default: every factor
            with more than one class) and put in its stored form, in place.

        Raises
        ------
        InvalidArgumentError
            Naming the argument: supervised factors that are not distinct columns of ``factor_sizes`` or
            have one class, too few latent dimensions for them.
        """
        super().check_config(config)  # type: ignore[misc]
        sizes = config.factor_sizes
        supervised_factors = config.supervised_factors
        if supervised_factors is None:
            supervised_factors = [k for k, size in enumerate(sizes) if size > 1]
        chosen = [int(k) for k in supervised_factors]
        if not chosen or len(set(chosen)) != len(chosen) or not all(0 <= k < len(sizes) for k in chosen):
            raise InvalidArgumentError(
                f"supervised_factors: expected distinct columns of the factors field (0..{len(sizes) - 1}), "
                f"got {list(supervised_factors)}"
            )
        if any(sizes[k] < 2 for k in chosen):
            raise InvalidArgumentError(
                f"supervised_factors: a factor with one class cannot be supervised (sizes {sizes}, chosen {chosen})"
            )
        needed = len(chosen) * config.dims_per_factor
        if needed > config.latent_dim:
            raise InvalidArgumentError(
                f"latent_dim: {len(chosen)} supervised factors x {config.dims_per_factor} dimensions need {needed}, "
                f"got latent_dim {config.latent_dim}"
            )
        config.supervised_factors = chosen

    def labelled(self, index: torch.Tensor) -> torch.Tensor:
        """Which examples of a batch have labels (:func:`labelled_mask` with the task's fraction and seed).

        Parameters
        ----------
        index : torch.Tensor, shape (B,)
            int64 dataset indices.

        Returns
        -------
        torch.Tensor
            bool ``(B,)`` on ``index``'s device.

        Raises
        ------
        InvalidArgumentError
            When an index is negative (read on the CPU; on an accelerator :meth:`supervised_loss` reads the
            first batch only).
        """
        if _on_host(index):
            self._check_index(index)
        return labelled_on_device(index, self.hparams.labelled_fraction, self.hparams.label_seed)

    @staticmethod
    def _check_index(index: torch.Tensor) -> None:
        if index.numel() and bool((index < 0).any()):
            raise InvalidArgumentError(f"index: must be non-negative, got {int(index.min())}")

    def _first_batch(self) -> bool:
        """True once, for the first batch on an accelerator: the one whose values the checks read (a read
        stalls the step until the device has caught up, so later batches are not read)."""
        first, self._batch_checked = not self._batch_checked, True
        return first

    def _class_scale(self, like: torch.Tensor, offset: int = -1) -> torch.Tensor:
        """``size + offset`` of each supervised factor, filled on ``like``'s device (a tensor built from a
        list is copied from the host: a synchronisation every step)."""
        sizes = [self.hparams.factor_sizes[k] + offset for k in self.hparams.supervised_factors]
        return torch.stack([torch.full((), size, dtype=like.dtype, device=like.device) for size in sizes])

    def _supervised_columns(self, factors: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        # the columns one by one: a list index is a host tensor copied to the device
        return torch.stack([factors[:, k] for k in self.hparams.supervised_factors], 1).to(dtype)

    def stream_supervised_loss(self, mean: torch.Tensor, factors: torch.Tensor) -> dict[str, Any]:
        """``{"supervised": sum of L_s over a labelled batch, "labelled": its size}`` (``supervision="stream"``).

        Locatello et al.'s code (google-research/disentanglement_lib and the CANDLE fork
        causal-disentanglement/disentanglement_lib, ``methods/semi_supervised/semi_supervised_vae.py``:
        ``supervised_regularizer_xent`` and ``normalize_labels``): the labels are scaled to ``t = c / K``
        (``K`` the factor's class count) and the sigmoid cross-entropy is summed over the batch and the
        factors::

            supervised = sum_b sum_k sum_{j of factor k} [softplus(mu_bj) - t_bk * mu_bj]

        Parameters
        ----------
        mean : torch.Tensor, shape (B, latent_dim)
            Posterior means of the labelled batch.
        factors : torch.Tensor, shape (B, F)
            Their int64 factor classes (all columns of the ``factors`` field).

        Returns
        -------
        dict of str to torch.Tensor
            Scalars: ``supervised`` (nats summed over the batch, with gradients) and ``labelled`` (``B``, float).

        Raises
        ------
        InvalidArgumentError
            When ``factors`` has the wrong shape, or (read on the CPU only) a class is out of range.
        """
        hp = self.hparams
        if factors.ndim != 2 or factors.shape[1] != len(hp.factor_sizes) or len(factors) != len(mean):
            raise InvalidArgumentError(
                f"factors: expected shape ({len(mean)}, {len(hp.factor_sizes)}), got {tuple(factors.shape)}"
            )
        chosen = self._supervised_columns(factors, mean.dtype)
        if _on_host(chosen):
            self._check_classes(chosen)
        targets = chosen / self._class_scale(mean, offset=0)
        supervised = supervised_xent(mean, targets, hp.dims_per_factor).sum()
        count = torch.full((), len(mean), dtype=mean.dtype, device=mean.device)
        return {"supervised": supervised, "labelled": count}

    def supervised_loss(self, mean: torch.Tensor, factors: torch.Tensor, index: torch.Tensor) -> dict[str, Any]:
        """``{"supervised": mean L_s over the labelled examples (0 if none), "labelled": their count}``.

        The ``supervision="batch_share"`` term: the batch's own labelled examples, labels scaled to
        ``c / (K - 1)``.

        Parameters
        ----------
        mean : torch.Tensor, shape (B, latent_dim)
            Posterior means.
        factors : torch.Tensor, shape (B, F)
            int64 factor classes (all columns of the ``factors`` field).
        index : torch.Tensor, shape (B,)
            Dataset indices of the examples.

        Returns
        -------
        dict of str to torch.Tensor
            Scalars: ``supervised`` (nats, with gradients) and ``labelled`` (float count).

        Raises
        ------
        InvalidArgumentError
            When ``factors`` has fewer columns than ``factor_sizes``, or a labelled class is out of range.
        """
        hp = self.hparams
        if factors.ndim != 2 or factors.shape[1] != len(hp.factor_sizes) or len(factors) != len(mean):
            raise InvalidArgumentError(
                f"factors: expected shape ({len(mean)}, {len(hp.factor_sizes)}), got {tuple(factors.shape)}"
            )
        # on an accelerator the checks read the first batch only (:meth:`_first_batch`)
        if not _on_host(index) and self._first_batch():
            self._check_index(index)
            first_batch = True
        else:
            first_batch = False
        mask = self.labelled(index.reshape(-1))
        scale = self._class_scale(mean)
        count = mask.sum()
        if _on_host(mean):
            # on the CPU, the labelled rows picked out (their shape is read on the host, which costs nothing
            # there): the same bits as ever
            chosen = factors[mask][:, hp.supervised_factors].to(mean.dtype)
            self._check_classes(chosen)
            if chosen.shape[0] == 0:
                supervised = mean.sum() * 0.0  # keeps the graph (and the device) without a term
            else:
                supervised = supervised_xent(mean[mask], chosen / scale, hp.dims_per_factor).mean()
            return {"supervised": supervised, "labelled": count.to(mean.dtype)}
        # on an accelerator, a masked average over every row: picking the labelled rows out would read their
        # number on the host (a synchronisation every step); equal to the above up to float rounding
        chosen = self._supervised_columns(factors, mean.dtype)
        if first_batch:
            self._check_classes(torch.where(mask[:, None], chosen, torch.zeros_like(chosen)))  # labelled rows
        per_example = supervised_xent(mean, chosen / scale, hp.dims_per_factor)
        labelled_sum = torch.where(mask, per_example, torch.zeros_like(per_example)).sum()
        supervised = labelled_sum / count.clamp(min=1).to(mean.dtype)  # 0 (with the graph) when none is labelled
        return {"supervised": supervised, "labelled": count.to(mean.dtype)}

    def _check_classes(self, chosen: torch.Tensor) -> None:
        """Refuse classes outside ``0..size-1`` in ``chosen`` (the supervised factors' columns)."""
        hp = self.hparams
        scale = self._class_scale(chosen)
        if chosen.numel() and (bool((chosen < 0).any()) or bool((chosen > scale).any())):
            raise InvalidArgumentError(
                f"factors: classes outside 0..size-1 for supervised factors {hp.supervised_factors} "
                f"(sizes {[hp.factor_sizes[k] for k in hp.supervised_factors]})"
            )

    def regulariser(self, mean: torch.Tensor, log_var: torch.Tensor, z: torch.Tensor) -> dict[str, torch.Tensor]:
        """The model's regulariser plus ``supervision_weight * supervised`` while labels are present.

        Parameters
        ----------
        mean, log_var, z : torch.Tensor, shape (B, latent_dim)
            As :meth:`VAETask.regulariser`; the ``batch_share`` term reads ``mean``, the ``stream`` term the
            encoder's means of the labelled batch.

        Returns
        -------
        dict of str to torch.Tensor
            The model's keys (``regulariser`` including the weighted term), plus ``supervised`` and
            ``labelled`` (:meth:`stream_supervised_loss` or :meth:`supervised_loss`) when labels are present.
        """
        parts = super().regulariser(mean, log_var, z)  # type: ignore[misc]
        if self._supervision is None:
            return parts
        kind, labels = self._supervision
        if kind == "batch_share":
            terms = self.supervised_loss(mean, *labels)
        elif labels is None:  # a validation split without labelled examples: no term
            terms = {"supervised": mean.sum() * 0.0, "labelled": torch.zeros((), dtype=mean.dtype, device=mean.device)}
        else:
            images, factors = labels
            labelled_mean, _ = self.encoder(images)  # type: ignore[attr-defined]
            terms = self.stream_supervised_loss(labelled_mean, factors)
        parts["regulariser"] = parts["regulariser"] + self.hparams.supervision_weight * terms["supervised"]
        return {**parts, **terms}

    @contextmanager
    def _labels(
        self,
        factors: torch.Tensor | None,
        index: torch.Tensor | None,
        labelled: tuple[torch.Tensor, torch.Tensor] | None = None,
        empty_stream: bool = False,
    ) -> Iterator[None]:
        previous = self._supervision
        supervision = self.hparams.supervision
        if labelled is not None or empty_stream:
            if supervision != "stream":
                raise InvalidArgumentError(
                    "labelled: a labelled batch is what supervision 'stream' reads; this task has supervision "
                    f"{supervision!r} (give factors and index)"
                )
            if factors is not None or index is not None:
                raise InvalidArgumentError("losses: give the labelled batch or factors and index, not both")
            self._supervision = ("stream", labelled)
        elif factors is not None and index is not None:
            if supervision != "batch_share":
                raise InvalidArgumentError(
                    "losses: supervision 'stream' reads a labelled batch, labelled=(images, factors); factors and "
                    "index of the batch itself are what supervision 'batch_share' reads"
                )
            self._supervision = ("batch_share", (factors, index))
        elif factors is not None or index is not None:
            raise InvalidArgumentError("losses: give both factors and index, or neither")
        try:
            yield
        finally:
            self._supervision = previous

    def losses(
        self,
        images: torch.Tensor,
        factors: torch.Tensor | None = None,
        index: torch.Tensor | None = None,
        *,
        labelled: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> dict[str, torch.Tensor]:
        """The model's losses plus the supervised term when labels are given.

        Parameters
        ----------
        images : torch.Tensor, shape (B, C, H, W)
            float32 in [0, 1].
        factors : torch.Tensor, shape (B, F), optional
            int64 factor classes of ``images`` (``supervision="batch_share"``).
        index : torch.Tensor, shape (B,), optional
            Dataset indices of ``images`` (decide which are labelled; ``supervision="batch_share"``).
        labelled : tuple of torch.Tensor, optional
            ``(images (B', C, H, W) float32, factors (B', F) int64)``, a labelled batch
            (``supervision="stream"``, e.g. :meth:`LabelledStream.next`).

        Returns
        -------
        dict of str to torch.Tensor
            The model's keys (``loss`` including ``supervision_weight * supervised``), plus ``supervised``
            and ``labelled`` when labels are present.

        Raises
        ------
        InvalidArgumentError
            When the labels given are not those the task's ``supervision`` reads.
        """
        with self._labels(factors, index, labelled):
            return super().losses(images)  # type: ignore[misc]

    # ------------------------------------------------------------------------------------------
    # the labelled stream

    def attach_labelled(self, images: torch.Tensor, factors: torch.Tensor, stage: str = "train") -> LabelledStream:
        """Use ``images`` and ``factors`` as the labelled examples of ``stage``'s stream (``supervision="stream"``).

        A Trainer's data are read on their own when no stream is attached (the class docstring); this gives
        the labelled examples directly (e.g. when training from a plain iterable of batches).

        Parameters
        ----------
        images : torch.Tensor, shape (N, C, H, W)
            uint8 (0-255) or float in [0, 1].
        factors : torch.Tensor, shape (N, F)
            int64 classes, all columns of the ``factors`` field.
        stage : {"train", "val"}, default="train"
            Which steps draw from it.

        Returns
        -------
        LabelledStream
            The stream, on the task's device, seeded with ``stream_seed`` (default: ``torch.initial_seed()``).

        Raises
        ------
        InvalidArgumentError
            When ``stage`` is not train or val, there is no example, or a class is out of range.
        """
        if stage not in ("train", "val"):
            raise InvalidArgumentError(f"stage: train or val, got {stage!r}")
        factors = torch.as_tensor(factors).long()
        if factors.ndim != 2 or factors.shape[1] != len(self.hparams.factor_sizes):
            raise InvalidArgumentError(
                f"factors: expected shape (N, {len(self.hparams.factor_sizes)}), got {tuple(factors.shape)}"
            )
        self._check_classes(self._supervised_columns(factors.cpu(), torch.float64))
        seed = self.hparams.stream_seed if self.hparams.stream_seed is not None else torch.initial_seed()
        restored = self._restored_stream if stage == "train" else None
        if restored is not None:
            seed = restored["seed"]
        device = self.device  # type: ignore[attr-defined]
        stream = LabelledStream(torch.as_tensor(images).to(device), factors.to(device), seed)
        if restored is not None:
            stream.position = int(restored["position"]) % len(stream)
            self._restored_stream = None
        if self._streams is None:
            self._streams = {}
        self._streams[stage] = stream
        return stream

    def _stream_data(self, stage: str) -> Any:
        """The Trainer's examples of ``stage``: the data module's split view, else the DataLoader's dataset."""
        trainer = getattr(self, "_trainer", None)
        if trainer is None:
            return None
        data = getattr(getattr(trainer, "datamodule", None), "train_set" if stage == "train" else "val_set", None)
        if data is not None:
            return data
        loaders = trainer.train_dataloader if stage == "train" else trainer.val_dataloaders
        if isinstance(loaders, (list, tuple)):
            loaders = loaders[0] if loaders else None
        data = getattr(loaders, "dataset", None)
        return data if data is not None and hasattr(data, "__len__") else None

    def labelled_stream(self, stage: str = "train") -> LabelledStream | None:
        """The stream a ``stage`` step draws from, built at its first use from the Trainer's data.

        Parameters
        ----------
        stage : {"train", "val"}, default="train"
            Training or validation steps.

        Returns
        -------
        LabelledStream or None
            None for a validation split without labelled examples (its steps add no term).

        Raises
        ------
        InvalidArgumentError
            When no data are attached or reachable, or the training data hold no labelled example.
        """
        streams = self._streams or {}
        if stage in streams:
            stream = streams[stage]
            if stream is not None and stream.device != self.device:  # type: ignore[attr-defined]
                stream.to(self.device)  # type: ignore[attr-defined]
            return stream
        hp = self.hparams
        data = self._stream_data(stage)
        if data is None:
            raise InvalidArgumentError(
                f"supervision: 'stream' draws labelled examples from the {stage} data, which this task cannot "
                "reach (train it with a Trainer and a data module or DataLoader, or call attach_labelled)"
            )
        images, factors = labelled_rows(data, hp.labelled_fraction, hp.label_seed)
        if len(images) == 0:
            if stage == "train":
                raise InvalidArgumentError(
                    f"labelled_fraction: none of the {len(data)} training examples is labelled (fraction "
                    f"{hp.labelled_fraction}, label_seed {hp.label_seed}); use more data, another fraction or "
                    "supervision batch_share"
                )
            if self._streams is None:
                self._streams = {}
            self._streams[stage] = None
            return None
        return self.attach_labelled(images, factors, stage)

    def on_validation_epoch_start(self) -> None:
        """Every validation epoch reads the validation stream from its start (the same labelled batches)."""
        super().on_validation_epoch_start()  # type: ignore[misc]
        stream = (self._streams or {}).get("val")
        if stream is not None:
            stream.position = 0

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Store the training stream's seed and position, so that a resumed run continues the same draws.

        Parameters
        ----------
        checkpoint : dict
            Lightning's checkpoint, given the key ``labelled_stream``.
        """
        super().on_save_checkpoint(checkpoint)  # type: ignore[misc]
        stream = (self._streams or {}).get("train")
        if stream is not None:
            checkpoint["labelled_stream"] = {"seed": stream.seed, "position": stream.position}

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore the training stream's seed and position (:meth:`on_save_checkpoint`) at its next build.

        Parameters
        ----------
        checkpoint : dict
            Lightning's checkpoint.
        """
        super().on_load_checkpoint(checkpoint)  # type: ignore[misc]
        state = checkpoint.get("labelled_stream")
        if state is not None:
            self._restored_stream = {"seed": int(state["seed"]), "position": int(state["position"])}
            if self._streams is not None:
                self._streams.pop("train", None)

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        if self.hparams.supervision == "batch_share":
            with self._labels(batch["factors"], batch["index"]):
                return super().training_step(batch, batch_idx)  # type: ignore[misc]
        self._stream_size = len(batch["image"])  # the reference's labelled batch is as large as the batch
        labelled = self.labelled_stream("train").next(self._stream_size)  # type: ignore[union-attr]
        with self._labels(None, None, labelled):
            return super().training_step(batch, batch_idx)  # type: ignore[misc]

    def validation_step(self, batch: Any, batch_idx: int) -> Any:
        if self.hparams.supervision == "batch_share":
            with self._labels(batch["factors"], batch["index"]):
                return super().validation_step(batch, batch_idx)  # type: ignore[misc]
        stream = self.labelled_stream("val")
        size = self._stream_size or len(batch["image"])  # the training batch's size, as in training
        labelled = stream.next(size) if stream is not None else None
        with self._labels(None, None, labelled, empty_stream=labelled is None):
            return super().validation_step(batch, batch_idx)  # type: ignore[misc]


_SEMI_DOC = """
    Semi-supervised parameters (:class:`SemiSupervisedMixin`, module docstring):

    labelled_fraction : float, default=0.1
        Fraction of the examples (by dataset index, :func:`labelled_mask`) whose factors are used; the
        CANDLE paper's 10%.
    supervision_weight : float, default=4.0
        ``gamma_sup``, the weight of the supervised loss (Locatello et al., 2020, sweep a small range
        around 1-16).
    supervised_factors : list of int, optional
        Columns of the ``factors`` field tied to latent dimensions, in order; default: every factor with
        more than one class (for dSprites: shape, scale, orientation, posX, posY -- colour is constant).
    factor_sizes : list of int, default=dSprites' (1, 3, 6, 40, 32, 32)
        Classes of every column of ``factors`` (class ``c`` becomes the target ``c / size``; ``c / (size - 1)``
        with ``supervision="batch_share"``).
    dims_per_factor : int, default=1
        ``rho``, latent dimensions per supervised factor (the CANDLE paper uses 1 and 2).
    label_seed : int, default=0
        Which subset is labelled (:func:`labelled_mask`).
    supervision : {"stream", "batch_share"}, default="stream"
        ``stream``: a full labelled batch every step, its supervised loss summed, labels ``c / size``, as
        Locatello et al.'s code (module docstring); ``batch_share``: the mean over the batch's own labelled
        examples, labels ``c / (size - 1)``.
    stream_seed : int, optional
        Seed of the labelled stream's order; default the run's seed (``torch.initial_seed()`` when the
        stream is built).
    box_weight : float, default=1.0
        Weight of the reconstruction inside the ``box`` field's bounding boxes (:class:`VAETask`).
"""


class SemiSupervisedVAETask(SemiSupervisedMixin, VAETask):
    """beta-VAE (:class:`VAETask`) with the semi-supervised term; other parameters as :class:`VAETask`."""

    __doc__ = (__doc__ or "") + _SEMI_DOC


class SemiSupervisedBetaTCVAETask(SemiSupervisedMixin, BetaTCVAETask):
    """beta-TCVAE (:class:`BetaTCVAETask`) with the semi-supervised term; other parameters as there."""

    __doc__ = (__doc__ or "") + _SEMI_DOC


class SemiSupervisedDIPVAETask(SemiSupervisedMixin, DIPVAETask):
    """DIP-VAE I / II (:class:`DIPVAETask`) with the semi-supervised term; other parameters as there."""

    __doc__ = (__doc__ or "") + _SEMI_DOC


class SemiSupervisedFactorVAETask(SemiSupervisedMixin, FactorVAETask):
    """FactorVAE (:class:`FactorVAETask`) with the semi-supervised term in its VAE step (the discriminator
    step is unchanged); other parameters as there."""

    __doc__ = (__doc__ or "") + _SEMI_DOC


__all__ = [
    "LabelledStream",
    "SemiSupervisedMixin",
    "SemiSupervisedVAETask",
    "SemiSupervisedBetaTCVAETask",
    "SemiSupervisedDIPVAETask",
    "SemiSupervisedFactorVAETask",
    "labelled_mask",
    "labelled_rows",
    "supervised_xent",
    "DSPRITES_FACTOR_SIZES",
    "LABELLED_FRACTION",
    "SUPERVISION_WEIGHT",
    "SUPERVISIONS",
]

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
* **Supervised loss** -- Locatello et al.'s "xent" loss: each factor class ``c`` of a factor with ``K``
  classes is scaled to ``t = c / (K - 1)`` in [0, 1], and ``sigmoid(mu_j)`` of each of the factor's
  dimensions ``j`` is matched to it by binary cross-entropy::

      L_s(x) = sum_k sum_{j of factor k} BCE(t_k, sigmoid(mu_j))
             = sum_k sum_j [softplus(mu_j) - t_k * mu_j]

  (``mu``: the posterior means, no sampling). ``supervised = mean over the batch's labelled examples of
  L_s`` (0 when the batch holds none), as Locatello et al. average ``L_s`` over a labelled batch. The soft
  targets make the minimum the targets' entropy, not 0.
* **Loss** -- ``loss = <the model's loss> + supervision_weight * supervised``; logged as ``train_loss``,
  with ``train_supervised`` and ``train_labelled`` (labelled examples per batch; ``val_*`` likewise).

A training step on an accelerator reads nothing back to the host (each read would make the CPU wait for
the device): the labelled examples are hashed on the batch's device (:func:`labelled_on_device`, the same
bits as :func:`labelled_mask`) and the supervised loss is a masked average; the checks of the batch's
values (negative indices, classes out of range) read it on the CPU, and on an accelerator only for the
first batch the task sees.

Every variant reads the batch fields ``image``, ``factors`` (int64 ``(B, F)`` classes) and ``index``
(int64 ``(B,)``), e.g. of the ``dsprites`` dataset. The mixin adds the term through the
:meth:`VAETask.regulariser` hook, which sees the posterior means, so FactorVAE's manual optimisation step
includes it too (its discriminator step is unchanged).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from repscope.errors import InvalidArgumentError
from repscope.train.tasks.disentangling_vaes import BetaTCVAETask, DIPVAETask, FactorVAETask
from repscope.train.tasks.vae import VAETask

DSPRITES_FACTOR_SIZES = (1, 3, 6, 40, 32, 32)  # color, shape, scale, orientation, posX, posY (dsprites.FACTOR_SIZES)
LABELLED_FRACTION = 0.1  # the CANDLE paper: labels for 10% of the data points
SUPERVISION_WEIGHT = 4.0  # gamma_sup; Locatello et al. (2020) sweep it over a small range around 1-16

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
        Factor classes scaled to [0, 1] (``class / (size - 1)``), float.
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


class SemiSupervisedMixin:
    """Adds ``supervision_weight * supervised`` (see the module docstring) to a :class:`VAETask`'s loss.

    Put it before the VAE class: ``class X(SemiSupervisedMixin, VAETask)``; its ``Config`` fields follow
    the VAE's in ``X``'s constructor and hyper-parameters (:class:`~repscope.train.tasks.base.ImageTask`
    merges them), and :meth:`check_config` checks them after the VAE's own. Labels reach the loss either from the batch
    (``training_step`` / ``validation_step``, fields ``factors`` and ``index``) or as arguments of
    :meth:`losses`; without them (``losses(images)`` alone) the model's unsupervised loss is returned.
    """

    batch_fields: tuple[str, ...] = ("image", "factors", "index")
    _supervision: tuple[torch.Tensor, torch.Tensor] | None = None
    _batch_checked: bool = False  # whether a batch on an accelerator has been checked (the first one)

    @dataclass(kw_only=True)
    class Config:
        """The semi-supervised hyper-parameters (``_SEMI_DOC``), added to those of the VAE they extend."""

        labelled_fraction: float = LABELLED_FRACTION
        supervision_weight: float = SUPERVISION_WEIGHT
        supervised_factors: Sequence[int] | None = None  # default: every factor with more than one class
        factor_sizes: Sequence[int] = DSPRITES_FACTOR_SIZES
        dims_per_factor: int = 1
        label_seed: int = 0

    def check_config(self, config: Any) -> None:
        """The model's checks, then the supervision fields': sizes, chosen factors, enough latents.

        Parameters
        ----------
        config : Config
            The task's hyper-parameters; ``supervised_factors`` is resolved (default: every factor with
            more than one class) and the values put in their stored form, in place.

        Raises
        ------
        InvalidArgumentError
            Naming the argument: a factor size below 1, supervised factors that are not distinct columns
            or have one class, too few latent dimensions, a negative weight, a fraction outside [0, 1].
        """
        super().check_config(config)  # type: ignore[misc]
        sizes = [int(s) for s in config.factor_sizes]
        if not sizes or min(sizes) < 1:
            raise InvalidArgumentError(f"factor_sizes: expected positive class counts, got {list(config.factor_sizes)}")
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
        dims_per_factor = config.dims_per_factor
        if int(dims_per_factor) < 1:
            raise InvalidArgumentError(f"dims_per_factor: must be at least 1, got {dims_per_factor}")
        needed = len(chosen) * int(dims_per_factor)
        if needed > config.latent_dim:
            raise InvalidArgumentError(
                f"latent_dim: {len(chosen)} supervised factors x {dims_per_factor} dimensions need {needed}, "
                f"got latent_dim {config.latent_dim}"
            )
        if config.supervision_weight < 0:
            raise InvalidArgumentError(f"supervision_weight: must be non-negative, got {config.supervision_weight}")
        # checks fraction and seed
        labelled_mask(np.zeros(0, np.int64), config.labelled_fraction, config.label_seed)
        config.labelled_fraction = float(config.labelled_fraction)
        config.supervision_weight = float(config.supervision_weight)
        config.supervised_factors = chosen
        config.factor_sizes = sizes
        config.dims_per_factor = int(dims_per_factor)
        config.label_seed = int(config.label_seed)

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

    def _class_scale(self, like: torch.Tensor) -> torch.Tensor:
        """``size - 1`` of each supervised factor, filled on ``like``'s device (a tensor built from a list
        is copied from the host: a synchronisation every step)."""
        sizes = [self.hparams.factor_sizes[k] - 1 for k in self.hparams.supervised_factors]
        return torch.stack([torch.full((), size, dtype=like.dtype, device=like.device) for size in sizes])

    def supervised_loss(self, mean: torch.Tensor, factors: torch.Tensor, index: torch.Tensor) -> dict[str, Any]:
        """``{"supervised": mean L_s over the labelled examples (0 if none), "labelled": their count}``.

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
        # number on the host (a synchronisation every step); equal to the above up to float rounding. The
        # columns are picked one by one: a list index is a host tensor copied to the device
        chosen = torch.stack([factors[:, k] for k in hp.supervised_factors], 1).to(mean.dtype)
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
            As :meth:`VAETask.regulariser`; the supervised loss reads ``mean``.

        Returns
        -------
        dict of str to torch.Tensor
            The model's keys (``regulariser`` including the weighted term), plus ``supervised`` and
            ``labelled`` (:meth:`supervised_loss`) when the batch carries labels.
        """
        parts = super().regulariser(mean, log_var, z)  # type: ignore[misc]
        if self._supervision is None:
            return parts
        terms = self.supervised_loss(mean, *self._supervision)
        parts["regulariser"] = parts["regulariser"] + self.hparams.supervision_weight * terms["supervised"]
        return {**parts, **terms}

    @contextmanager
    def _labels(self, factors: torch.Tensor | None, index: torch.Tensor | None) -> Iterator[None]:
        previous = self._supervision
        if factors is not None and index is not None:
            self._supervision = (factors, index)
        elif factors is not None or index is not None:
            raise InvalidArgumentError("losses: give both factors and index, or neither")
        try:
            yield
        finally:
            self._supervision = previous

    def losses(
        self, images: torch.Tensor, factors: torch.Tensor | None = None, index: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """The model's losses plus the supervised term when ``factors`` and ``index`` are given.

        Parameters
        ----------
        images : torch.Tensor, shape (B, C, H, W)
            float32 in [0, 1].
        factors : torch.Tensor, shape (B, F), optional
            int64 factor classes.
        index : torch.Tensor, shape (B,), optional
            Dataset indices (decide which examples are labelled).

        Returns
        -------
        dict of str to torch.Tensor
            The model's keys (``loss`` including ``supervision_weight * supervised``), plus ``supervised``
            and ``labelled`` when labels are present.
        """
        with self._labels(factors, index):
            return super().losses(images)  # type: ignore[misc]

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        with self._labels(batch["factors"], batch["index"]):
            return super().training_step(batch, batch_idx)  # type: ignore[misc]

    def validation_step(self, batch: Any, batch_idx: int) -> Any:
        with self._labels(batch["factors"], batch["index"]):
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
        Classes of every column of ``factors`` (normalise class ``c`` to ``c / (size - 1)``).
    dims_per_factor : int, default=1
        ``rho``, latent dimensions per supervised factor (the CANDLE paper uses 1 and 2).
    label_seed : int, default=0
        Which subset is labelled (:func:`labelled_mask`).
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
    "SemiSupervisedMixin",
    "SemiSupervisedVAETask",
    "SemiSupervisedBetaTCVAETask",
    "SemiSupervisedDIPVAETask",
    "SemiSupervisedFactorVAETask",
    "labelled_mask",
    "supervised_xent",
    "DSPRITES_FACTOR_SIZES",
    "LABELLED_FRACTION",
    "SUPERVISION_WEIGHT",
]

"""Latent codes of an InfoGAN: which codes, how they are sampled, how they enter the generator, and
the variational lower bound on their mutual information with the generated images.

A :class:`CodeSpec` names the structured codes (categorical, continuous, binary) and the size of the
unstructured noise. Codes are numbered as in Castro et al. (Morpho-MNIST, section 4.2, Table 2): the
categorical codes first (``c1``, ``c2`` ...), then the continuous codes, then the binary codes, the
numbering running on. Setting A (a 10-way categorical and 2 continuous codes) has ``c1`` (10-way),
``c2``, ``c3``; setting C adds two binary codes ``c4``, ``c5``.

Priors (Chen et al., 2016): categorical codes uniform over their ``K`` classes, continuous codes
Uniform(-1, 1), binary codes Bernoulli(0.5), noise N(0, I).

References
----------
Chen et al., InfoGAN: Interpretable Representation Learning by Information Maximizing Generative
Adversarial Nets, NeurIPS 2016. Castro et al., Morpho-MNIST: Quantitative Assessment and Diagnostics
for Representation Learning, 2018.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from repscope.errors import InvalidArgumentError

NOISE_KEY = "noise"
LOG_STD_RANGE = (-5.0, 2.0)  # predicted log-std of continuous codes; the prior's std is 0.58
_LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class CodeSpec:
    """The latent codes of an InfoGAN.

    Parameters
    ----------
    categorical
        Number of classes ``K`` of each categorical code (one entry per code).
    continuous
        Number of continuous codes.
    binary
        Number of binary codes.
    noise
        Dimension of the unstructured noise vector.
    """

    categorical: tuple[int, ...] = (10,)
    continuous: int = 2
    binary: int = 0
    noise: int = 62

    def __post_init__(self) -> None:
        categorical = tuple(int(k) for k in self.categorical)
        object.__setattr__(self, "categorical", categorical)
        if any(k < 2 for k in categorical):
            raise InvalidArgumentError(
                f"codes.categorical: every categorical code needs at least 2 classes, got {categorical}"
            )
        for name in ("continuous", "binary", "noise"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 0:
                raise InvalidArgumentError(f"codes.{name}: must be a non-negative integer, got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.code_dim + self.noise == 0:
            raise InvalidArgumentError("codes: the generator input would be empty (no codes and no noise)")

    # -- sizes and names ---------------------------------------------------------------------------

    @property
    def code_dim(self) -> int:
        """Width of the structured part of the generator input: ``sum(K) + continuous + binary``."""
        return sum(self.categorical) + self.continuous + self.binary

    @property
    def input_dim(self) -> int:
        """Width of the whole generator input: ``code_dim + noise``."""
        return self.code_dim + self.noise

    @property
    def parameter_dim(self) -> int:
        """Width of the recognition network's output: ``K`` logits per categorical code, a mean and
        a log-std per continuous code, a logit per binary code."""
        return sum(self.categorical) + 2 * self.continuous + self.binary

    def code_columns(self) -> list[str]:
        """Code names in the paper's numbering: categorical, then continuous, then binary."""
        return [f"c{i + 1}" for i in range(len(self.categorical) + self.continuous + self.binary)]

    def categorical_columns(self) -> list[str]:
        return self.code_columns()[: len(self.categorical)]

    def continuous_columns(self) -> list[str]:
        start = len(self.categorical)
        return self.code_columns()[start : start + self.continuous]

    def binary_columns(self) -> list[str]:
        return self.code_columns()[len(self.categorical) + self.continuous :]

    def categories(self, column: str) -> int:
        """Number of classes of the categorical code ``column``."""
        names = self.categorical_columns()
        if column not in names:
            raise InvalidArgumentError(f"column: {column!r} is not a categorical code; categorical codes: {names}")
        return self.categorical[names.index(column)]

    def describe(self) -> str:
        """E.g. ``"c1 (10-way categorical), c2, c3 (continuous), 62-d noise"``."""
        parts = [f"{c} ({k}-way categorical)" for c, k in zip(self.categorical_columns(), self.categorical)]
        if self.continuous:
            parts.append(f"{', '.join(self.continuous_columns())} (continuous)")
        if self.binary:
            parts.append(f"{', '.join(self.binary_columns())} (binary)")
        parts.append(f"{self.noise}-d noise")
        return ", ".join(parts)

    # -- (de)serialisation -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain types only (ints and a list), fit for YAML configs and ``weights_only`` checkpoints."""
        return {
            "categorical": list(self.categorical),
            "continuous": self.continuous,
            "binary": self.binary,
            "noise": self.noise,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> CodeSpec:
        """The inverse of :meth:`to_dict`; missing keys take the defaults, unknown keys are an error."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise InvalidArgumentError(
                f"codes: expected a mapping with keys categorical, continuous, binary, noise; got {type(data).__name__}"
            )
        unknown = sorted(set(data) - {"categorical", "continuous", "binary", "noise"})
        if unknown:
            raise InvalidArgumentError(
                f"codes: unknown key {unknown[0]!r} (known: categorical, continuous, binary, noise)"
            )
        kwargs = dict(data)
        if "categorical" in kwargs:
            value = kwargs["categorical"]
            kwargs["categorical"] = (value,) if isinstance(value, int) else tuple(value)
        return cls(**kwargs)

    # -- sampling ------------------------------------------------------------------------------------

    def sample(
        self, n: int, generator: torch.Generator | None = None, device: torch.device | str | None = None
    ) -> dict[str, torch.Tensor]:
        """Draw ``n`` codes and noise vectors from the prior.

        Returns ``{column: (n,) tensor, ..., "noise": (n, noise)}``: int64 class indices ``0..K-1``
        for categorical codes, float32 values for continuous and binary (0.0 / 1.0) codes.

        The noise is drawn first, so a generator seeded alike gives the same noise here as
        ``torch.randn(n, noise, generator=g)`` (what ``InfoGANTask.sample_noise`` returns). With a
        ``generator`` the draw happens on the CPU (the same numbers on every device) and is then
        moved to ``device``; without one it uses the global RNG of ``device``.
        """
        if int(n) != n or n < 0:
            raise InvalidArgumentError(f"n: must be a non-negative integer, got {n!r}")
        n = int(n)
        where = "cpu" if generator is not None else device
        out: dict[str, torch.Tensor] = {NOISE_KEY: torch.randn(n, self.noise, generator=generator, device=where)}
        for column, k in zip(self.categorical_columns(), self.categorical):
            out[column] = torch.randint(0, k, (n,), generator=generator, device=where)
        for column in self.continuous_columns():
            out[column] = torch.rand(n, generator=generator, device=where) * 2.0 - 1.0
        for column in self.binary_columns():
            out[column] = (torch.rand(n, generator=generator, device=where) < 0.5).float()
        if generator is not None and device is not None:
            out = {key: value.to(device) for key, value in out.items()}
        return {key: out[key] for key in [*self.code_columns(), NOISE_KEY]}

    def assemble(self, sampled: Mapping[str, Any]) -> torch.Tensor:
        """The generator input ``(n, input_dim)`` from codes and noise (tensors or arrays).

        Layout, left to right: the one-hot encoding of each categorical code in order (``K`` columns
        each), the continuous codes, the binary codes, then the noise.
        """
        missing = [key for key in [*self.code_columns(), NOISE_KEY] if key not in sampled]
        if missing:
            raise InvalidArgumentError(f"codes: missing {missing}; expected {[*self.code_columns(), NOISE_KEY]}")
        noise = torch.as_tensor(
            np.asarray(sampled[NOISE_KEY]) if not torch.is_tensor(sampled[NOISE_KEY]) else sampled[NOISE_KEY]
        )
        noise = noise.float()
        if noise.ndim != 2 or noise.shape[1] != self.noise:
            raise InvalidArgumentError(f"noise: expected shape (n, {self.noise}), got {tuple(noise.shape)}")
        n, device = noise.shape[0], noise.device
        parts = []
        for column, k in zip(self.categorical_columns(), self.categorical):
            classes = _column(sampled[column], column, n, device)
            if classes.is_floating_point() and not torch.equal(classes, classes.round()):
                raise InvalidArgumentError(f"codes[{column!r}]: categorical codes are class indices 0..{k - 1}")
            classes = classes.long()
            if len(classes) and (classes.min() < 0 or classes.max() >= k):
                raise InvalidArgumentError(f"codes[{column!r}]: class indices must lie in 0..{k - 1}")
            parts.append(F.one_hot(classes, k).float())
        for column in self.continuous_columns() + self.binary_columns():
            parts.append(_column(sampled[column], column, n, device).float().unsqueeze(1))
        parts.append(noise)
        joined = torch.cat(parts, dim=1)
        if not torch.isfinite(joined).all():
            raise InvalidArgumentError("codes: NaN or infinite values in the codes or the noise")
        return joined

    # -- recognition network output --------------------------------------------------------------------

    def split_parameters(self, parameters: torch.Tensor) -> dict[str, torch.Tensor]:
        """Split the recognition output ``(n, parameter_dim)`` into one entry per code: categorical
        ``(n, K)`` logits; continuous ``(n, 2)`` = (mean, log-std); binary ``(n,)`` logits.
        Layout: the logits of each categorical code, all continuous means, all continuous
        log-stds (clamped to ``LOG_STD_RANGE``), the binary logits."""
        out: dict[str, torch.Tensor] = {}
        start = 0
        for column, k in zip(self.categorical_columns(), self.categorical):
            out[column] = parameters[:, start : start + k]
            start += k
        means = parameters[:, start : start + self.continuous]
        # bounded so a near-perfect mean cannot drive the likelihood (and its gradients) to infinity
        log_stds = parameters[:, start + self.continuous : start + 2 * self.continuous].clamp(*LOG_STD_RANGE)
        start += 2 * self.continuous
        for i, column in enumerate(self.continuous_columns()):
            out[column] = torch.stack([means[:, i], log_stds[:, i]], dim=1)
        for i, column in enumerate(self.binary_columns()):
            out[column] = parameters[:, start + i]
        return out

    def information_loss(
        self, parameters: torch.Tensor, sampled: Mapping[str, torch.Tensor], continuous_weight: float = 1.0
    ) -> dict[str, torch.Tensor]:
        """Negative variational lower bound on the mutual information between codes and images (up
        to the constant prior entropy), averaged over the batch.

        ``categorical``: cross-entropy of the predicted logits, summed over categorical codes;
        ``continuous``: Gaussian negative log-likelihood ``log s + (c - m)^2 / (2 s^2) + log(2 pi) / 2``
        with the predicted mean ``m`` and log-std ``log s``, summed over continuous codes;
        ``binary``: binary cross-entropy of the predicted logits, summed over binary codes;
        ``total`` = categorical + ``continuous_weight`` * continuous + binary. Absent code types
        give zeros.
        """
        split = self.split_parameters(parameters)
        zero = parameters.new_zeros(())
        categorical, continuous, binary = zero, zero, zero
        for column in self.categorical_columns():
            categorical = categorical + F.cross_entropy(split[column], sampled[column].long())
        for column in self.continuous_columns():
            mean, log_std = split[column][:, 0], split[column][:, 1]
            nll = log_std + 0.5 * ((sampled[column] - mean) * torch.exp(-log_std)) ** 2 + 0.5 * _LOG_2PI
            continuous = continuous + nll.mean()
        for column in self.binary_columns():
            binary = binary + F.binary_cross_entropy_with_logits(split[column], sampled[column].float())
        total = categorical + continuous_weight * continuous + binary
        return {"total": total, "categorical": categorical, "continuous": continuous, "binary": binary}


def _column(value: Any, column: str, n: int, device: torch.device) -> torch.Tensor:
    tensor = value if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
    if tensor.ndim != 1 or tensor.shape[0] != n:
        raise InvalidArgumentError(
            f"codes[{column!r}]: expected shape ({n},) like the noise, got {tuple(tensor.shape)}"
        )
    return tensor.to(device)


INFOGAN_SETTINGS: dict[str, CodeSpec] = {
    "A": CodeSpec((10,), 2, 0),  # plain digits
    "B": CodeSpec((10,), 3, 0),  # global: plain + thinned + thickened
    "C": CodeSpec((10,), 2, 2),  # local: plain + swollen + fractured
}
"""The settings of Castro et al., Table 2 (10-way categorical; continuous; binary codes)."""

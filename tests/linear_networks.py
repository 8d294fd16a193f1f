"""Linear encoders and decoders with fixed weights, for objectives computed by hand (tests/mmvae)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class LinearEncoder(nn.Module):
    """``x -> (x W_mu, x W_logvar)`` with fixed weights."""

    def __init__(self, w_mu: np.ndarray, w_logvar: np.ndarray) -> None:
        super().__init__()
        self.w_mu = nn.Parameter(torch.tensor(w_mu))
        self.w_logvar = nn.Parameter(torch.tensor(w_logvar))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x @ self.w_mu, x @ self.w_logvar


class LinearDecoder(nn.Module):
    """``z -> z V + c`` with fixed weights."""

    def __init__(self, weight: np.ndarray, bias: np.ndarray) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.tensor(weight))
        self.bias = nn.Parameter(torch.tensor(bias))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return z @ self.weight + self.bias

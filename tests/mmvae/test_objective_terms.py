"""Multimodal objectives computed by hand with every weight away from its neutral value.

``beta != 1``, two modalities with different likelihood weights and scales, a learned auxiliary scale
away from 1: each term of the bound changes the value, so a weight applied to the wrong term, a term left
out or a modality's code used in the wrong decoder shows. The expected values are computed with numpy
from the printed formulas; torch is used only as the source of the recorded noise.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from linear_networks import LinearDecoder, LinearEncoder  # tests/linear_networks.py
from repscope.models.multimodal import objectives
from repscope.models.multimodal.mmvae_plus import ModalitySpecificMixtureVAE
from repscope.models.multimodal.models import LikelihoodSpec
from repscope.train.registry import MODELS, task_class

BETA = 0.6
SHARED, PRIVATE = 2, 2
SCALES = {"a": 0.5, "b": 0.9}
WEIGHTS = {"a": 1.5, "b": 0.4}
AUXILIARY_LOG_SCALE = {"a": np.array([0.3, -0.2]), "b": np.array([-0.4, 0.1])}
X = {
    "a": np.array([[0.5, -1.0, 0.3], [-0.2, 0.4, 1.1]]),
    "b": np.array([[1.2, -0.3, 0.7, 0.2], [0.1, 0.9, -0.5, 0.6]]),
}


def _matrix(rows: int, cols: int, offset: float) -> np.ndarray:
    return np.sin(np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) * 1.7 + offset) * 0.5


PARAMS = {
    name: {
        "w_mu": _matrix(x.shape[1], SHARED + PRIVATE, 0.3 + i),
        "w_logvar": _matrix(x.shape[1], SHARED + PRIVATE, 1.9 + i) * 0.6,
        "v": _matrix(SHARED + PRIVATE, x.shape[1], 2.6 + i),
        "c": _matrix(1, x.shape[1], 0.8 + i)[0],
    }
    for i, (name, x) in enumerate(X.items())
}


def log_gauss(x, mean, variance):
    """Sum over the last axis of log N(x; mean, variance)."""
    return np.sum(-0.5 * (x - mean) ** 2 / variance - 0.5 * np.log(2 * math.pi * variance), axis=-1)


# -- the generic ELBO / IWAE on log-densities ----------------------------------------------------------------


def test_elbo_weights_only_the_kl_part_by_hand():
    log_likelihood = torch.tensor([[-3.0, -1.5, -0.2], [-2.0, -4.0, -1.0]], dtype=torch.float64)
    log_prior = torch.tensor([[-1.1, -0.7, -2.5], [-0.9, -1.3, -0.4]], dtype=torch.float64)
    log_posterior = torch.tensor([[0.4, -0.1, 0.8], [0.2, 0.9, -0.6]], dtype=torch.float64)
    # example 0: mean over the two samples of ll - beta (lq - lp)
    expected_0 = ((-3.0 - BETA * (0.4 + 1.1)) + (-2.0 - BETA * (0.2 + 0.9))) / 2
    expected = [
        expected_0,
        ((-1.5 - BETA * (-0.1 + 0.7)) + (-4.0 - BETA * (0.9 + 1.3))) / 2,
        ((-0.2 - BETA * (0.8 + 2.5)) + (-1.0 - BETA * (-0.6 + 0.4))) / 2,
    ]
    value = objectives.elbo(log_likelihood, log_prior, log_posterior, beta=BETA)
    np.testing.assert_allclose(value.numpy(), expected, rtol=1e-12)
    # IWAE with K = 2: log mean exp(ll + lp - lq)
    log_w = np.array(
        [[-3.0 - 1.1 - 0.4, -1.5 - 0.7 + 0.1, -0.2 - 2.5 - 0.8], [-2.0 - 0.9 - 0.2, -4.0 - 1.3 - 0.9, -1.0 - 0.4 + 0.6]]
    )
    weights = objectives.log_importance_weights(log_likelihood, log_prior, log_posterior)
    np.testing.assert_allclose(weights.numpy(), log_w, rtol=1e-12)
    np.testing.assert_allclose(objectives.iwae(weights).numpy(), np.log(np.exp(log_w).mean(0)), rtol=1e-12)


# -- MMVAE+ ---------------------------------------------------------------------------------------------------


def make_plus() -> ModalitySpecificMixtureVAE:
    encoders = {name: LinearEncoder(p["w_mu"], p["w_logvar"]) for name, p in PARAMS.items()}
    decoders = {name: LinearDecoder(p["v"], p["c"]) for name, p in PARAMS.items()}
    likelihoods = {name: LikelihoodSpec("gaussian", SCALES[name], WEIGHTS[name]) for name in X}
    net = ModalitySpecificMixtureVAE(encoders, decoders, likelihoods, SHARED, PRIVATE).double()
    with torch.no_grad():
        for name, values in AUXILIARY_LOG_SCALE.items():
            net.auxiliary_log_scale[name].copy_(torch.tensor(values))
    return net


def plus_loss_by_hand(draws: list[np.ndarray], beta: float) -> float:
    """Minus the stratified MMVAE+ ELBO (Palumbo et al. 2023, eq. 4), K = 1, both modalities present.

    Draw order: for source a, its (z, w_a) noise then r_b's noise; for source b, its (z, w_b) then r_a's.
    """
    posteriors = {name: (X[name] @ p["w_mu"], X[name] @ p["w_logvar"]) for name, p in PARAMS.items()}
    draws = list(draws)
    bounds = []
    for source, other in (("a", "b"), ("b", "a")):
        mu, logvar = posteriors[source]
        latents = mu + np.exp(0.5 * logvar) * draws.pop(0)[0]
        z, w = latents[:, :SHARED], latents[:, SHARED:]
        auxiliary = draws.pop(0)[0] * np.exp(AUXILIARY_LOG_SCALE[other])
        codes = {source: w, other: auxiliary}
        log_px = sum(
            WEIGHTS[n]
            * log_gauss(X[n], np.concatenate([z, codes[n]], 1) @ PARAMS[n]["v"] + PARAMS[n]["c"], SCALES[n] ** 2)
            for n in ("a", "b")
        )
        log_p = log_gauss(z, 0.0, 1.0) + log_gauss(w, 0.0, 1.0)
        mixture = np.mean(
            [np.exp(log_gauss(z, posteriors[c][0][:, :SHARED], np.exp(posteriors[c][1][:, :SHARED]))) for c in "ab"],
            axis=0,
        )
        log_q = np.log(mixture) + log_gauss(w, mu[:, SHARED:], np.exp(logvar[:, SHARED:]))
        bounds.append(log_px - beta * (log_q - log_p))
    assert not draws
    return float(-np.mean((bounds[0] + bounds[1]) / 2))


def test_mmvae_plus_elbo_by_hand_with_every_weight_away_from_one(recorded_noise):
    net = make_plus()
    inputs = {name: torch.tensor(x) for name, x in X.items()}
    loss = float(net.loss(inputs, beta=BETA, generator=torch.Generator().manual_seed(4)).detach())
    assert len(recorded_noise) == 4
    assert loss == pytest.approx(plus_loss_by_hand(recorded_noise, BETA), rel=1e-10)
    # the KL part matters at this beta: the same draws with beta = 1 give another value
    assert abs(plus_loss_by_hand(recorded_noise, 1.0) - loss) > 1e-3


# -- the training task hands its settings to the model's objective --------------------------------------------

TASK_SPECS = {"vector": {"shape": [5], "classes": None}, "label": {"shape": [], "classes": 3, "kind": "categorical"}}
TASK_MODALITIES = {
    "vector": {"field": "vector", "network": "fc-image", "params": {"hidden": 8}, "likelihood": "gaussian",
               "scale": 0.6, "weight": 1.7},
    "label": {"field": "label", "network": "label", "likelihood": "categorical", "weight": 0.3},
}  # fmt: skip


def _multimodal_names() -> list[str]:
    return [name for name, entry in MODELS.items() if entry.family == "multimodal"]


@pytest.mark.parametrize("name", _multimodal_names())
def test_the_task_loss_is_the_models_objective_with_its_beta_weights_and_scales(name):
    torch.manual_seed(0)
    task = task_class(name)(modalities=TASK_MODALITIES, latent_dim=3, field_specs=TASK_SPECS, beta=BETA)
    task.double()
    batch = {
        "vector": torch.linspace(0.05, 0.95, 20, dtype=torch.float64).reshape(4, 5) ** 1.5,
        "label": torch.tensor([2, 0, 1, 2]),
    }
    specs = task.net.likelihoods
    assert (specs["vector"].kind, specs["vector"].scale, specs["vector"].weight) == ("gaussian", 0.6, 1.7)
    assert (specs["label"].kind, specs["label"].weight) == ("categorical", 0.3)
    torch.manual_seed(11)
    from_task = float(task.losses(batch)["loss"].detach())
    values = {}
    for beta in (BETA, 1.0):
        torch.manual_seed(11)
        values[beta] = float(task.net.loss({"vector": batch["vector"], "label": batch["label"]}, beta=beta).detach())
    assert from_task == pytest.approx(values[BETA], rel=1e-10)
    assert abs(values[1.0] - values[BETA]) > 1e-6  # beta reaches a term that is not zero here

"""MoPoE, DMVAE and MMVAE+ objectives with three modalities and examples missing one, by hand.

Two modalities, all present, is where a mixture over the wrong subsets, a weight divided by the wrong
count, an ignored presence mask or a KL counted once too often cannot show: with two modalities every
proper subset is a single modality and ``N - 1 = 1``; with every modality present the count of available
components is the same for every example. Here three modalities of different sizes, likelihood weights
and scales (none 1), ``beta = 0.6`` and a batch of three examples: the first has every modality, the
second lacks ``b``, the third lacks ``a``. The networks are fixed linear maps and every reparameterised
draw of MoPoE and DMVAE uses the same fixed noise; the values are worked out with numpy from the printed
formulas and the toolkit's accounting (gabinsane/multimodal-vae-comparison, ``multimodal_compare/models/
mmvae_models.py``: ``POE.objective`` with ``utils.subsample_input_modalities``, ``MoPOE.modality_mixing`` and
``poe_fusion``, ``DMVAE.objective``), the subsets written out by name.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from linear_networks import LinearDecoder, LinearEncoder  # tests/linear_networks.py
from repscope.models.multimodal import experts
from repscope.models.multimodal.dmvae import PrivateSharedVAE
from repscope.models.multimodal.mmvae_plus import ModalitySpecificMixtureVAE
from repscope.models.multimodal.models import LikelihoodSpec, MixtureOfProductsVAE, ProductOfExpertsVAE

BETA = 0.6
LATENT, SHARED, PRIVATE = 3, 2, 2
NAMES = ("a", "b", "c")
SCALES = {"a": 0.5, "b": 0.9, "c": 0.7}
WEIGHTS = {"a": 1.5, "b": 0.4, "c": 2.2}
X = {
    "a": np.array([[0.5, -1.0, 0.3], [-0.2, 0.4, 1.1], [0.9, 0.2, -0.7]]),
    "b": np.array([[1.2, -0.3, 0.7, 0.2], [0.1, 0.9, -0.5, 0.6], [-0.8, 0.3, 0.4, -1.1]]),
    "c": np.array([[0.6, -0.4], [-1.3, 0.2], [0.35, 0.85]]),
}
PRESENT = {
    "a": np.array([True, True, False]),
    "b": np.array([True, False, True]),
    "c": np.array([True, True, True]),
}
NOISE = np.array([[0.3, -1.1, 0.6, 0.2], [-0.7, 0.25, 1.3, -0.5], [0.45, 0.9, -0.35, 1.05]])  # (B, 4)
# MoPoE's components, written out: every non-empty subset of three modalities
SUBSETS = ("a", "b", "c", "ab", "ac", "bc", "abc")


def _matrix(rows: int, cols: int, offset: float) -> np.ndarray:
    return np.sin(np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) * 1.3 + offset) * 0.6


def parameters(code: int) -> dict[str, dict[str, np.ndarray]]:
    """Encoder and decoder weights per modality for codes of ``code`` dimensions."""
    return {
        name: {
            "w_mu": _matrix(X[name].shape[1], code, 0.2 + i),
            "w_logvar": _matrix(X[name].shape[1], code, 1.7 + i) * 0.5,
            "v": _matrix(code, X[name].shape[1], 2.9 + i),
            "c": _matrix(1, X[name].shape[1], 0.4 + i)[0],
        }
        for i, name in enumerate(NAMES)
    }


def networks(code: int) -> tuple[dict, dict, dict]:
    p = parameters(code)
    encoders = {name: LinearEncoder(p[name]["w_mu"], p[name]["w_logvar"]) for name in NAMES}
    decoders = {name: LinearDecoder(p[name]["v"], p[name]["c"]) for name in NAMES}
    likelihoods = {name: LikelihoodSpec("gaussian", SCALES[name], WEIGHTS[name]) for name in NAMES}
    return encoders, decoders, likelihoods


def inputs() -> dict[str, torch.Tensor]:
    return {name: torch.tensor(x) for name, x in X.items()}


def present(everything: bool) -> dict[str, torch.Tensor] | None:
    return None if everything else {name: torch.tensor(mask) for name, mask in PRESENT.items()}


def presence(everything: bool) -> dict[str, np.ndarray]:
    return {name: np.ones(3, bool) if everything else PRESENT[name] for name in NAMES}


@pytest.fixture
def fixed_noise(monkeypatch):
    """Every reparameterised draw ``mu + exp(logvar / 2) * eps`` uses ``eps`` = the first columns of NOISE."""

    def draw(mu, logvar, generator=None, samples=None):
        noise = torch.tensor(NOISE[:, : mu.shape[-1]], dtype=mu.dtype)
        if samples is not None:
            noise = noise.expand(int(samples), *noise.shape)
        return mu + torch.exp(0.5 * logvar) * noise

    monkeypatch.setattr(experts, "reparameterise", draw)


# -- the formulas, in numpy -------------------------------------------------------------------------------


def log_gauss(x, mean, variance):
    """Sum over the last axis of log N(x; mean, variance)."""
    return np.sum(-0.5 * (x - mean) ** 2 / variance - 0.5 * np.log(2 * math.pi * variance), axis=-1)


def expert(name: str, code: int) -> tuple[np.ndarray, np.ndarray]:
    p = parameters(code)[name]
    return X[name] @ p["w_mu"], X[name] @ p["w_logvar"]


def log_lik(name: str, code_value: np.ndarray, code: int, weighted: bool = True) -> np.ndarray:
    """Gaussian log-likelihood of modality ``name`` decoded from ``code_value`` (B, code), with its weight."""
    p = parameters(code)[name]
    value = log_gauss(X[name], code_value @ p["v"] + p["c"], SCALES[name] ** 2)
    return WEIGHTS[name] * value if weighted else value


def product(names: str, with_prior: bool, code: int, dims: slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the product of the named experts (and of N(0, I) with ``with_prior``)."""
    precision, weighted = (1.0 if with_prior else 0.0), 0.0
    for name in names:
        mu, logvar = expert(name, code)
        precision = precision + np.exp(-logvar[:, dims])
        weighted = weighted + np.exp(-logvar[:, dims]) * mu[:, dims]
    return weighted / precision, 1.0 / precision


def sample(mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    return mean + np.sqrt(variance) * NOISE[:, : mean.shape[-1]]


def mc_kl(z, mean, variance):
    """One-sample KL estimate log q(z) - log N(z; 0, I)."""
    return log_gauss(z, mean, variance) - log_gauss(z, 0.0, 1.0)


# -- MVAE -----------------------------------------------------------------------------------------------------


def mvae_loss_by_hand(everything: bool) -> float:
    """Minus the toolkit's MVAE objective (``subsampling="all"``, ``reconstruct="all"``): one ELBO per
    non-empty subset, the product of the experts of the subset that the example has with the prior expert,
    reconstructing every modality the example has; an example with none of the subset's modalities has
    no term there. The subsets' batch means are summed."""
    has = presence(everything)
    total = 0.0
    for subset in SUBSETS:
        precision, weighted = 1.0, 0.0
        for name in subset:
            mu, logvar = expert(name, LATENT)
            precision = precision + has[name][:, None] * np.exp(-logvar)
            weighted = weighted + has[name][:, None] * np.exp(-logvar) * mu
        mean, variance = weighted / precision, 1.0 / precision
        z = sample(mean, variance)
        elbo = sum(has[name] * log_lik(name, z, LATENT) for name in NAMES) - BETA * mc_kl(z, mean, variance)
        counted = np.any([has[name] for name in subset], axis=0)
        total += np.mean(counted * elbo)
    return float(-total)


@pytest.mark.parametrize("everything", [True, False], ids=["all-present", "missing"])
def test_mvae_toolkit_sums_the_elbo_of_every_subset_of_three_modalities(fixed_noise, everything):
    net = ProductOfExpertsVAE(*networks(LATENT), latent_dim=LATENT, subsampling="all", reconstruct="all").double()
    loss = float(net.loss(inputs(), present(everything), beta=BETA).detach())
    assert loss == pytest.approx(mvae_loss_by_hand(everything), rel=1e-10)


# -- MoPoE ---------------------------------------------------------------------------------------------------


def mopoe_loss_by_hand(prior_expert: str, everything: bool) -> float:
    """Minus the stratified MoPoE ELBO: per example the average, over the subsets whose every modality it
    has, of the subset's ELBO (the product of its experts, the prior expert too in the subset of all three
    with ``full_subset``) reconstructing every modality the example has."""
    has = presence(everything)
    total, count = np.zeros(3), np.zeros(3)
    for subset in SUBSETS:
        available = np.all([has[name] for name in subset], axis=0)
        mean, variance = product(subset, prior_expert == "full_subset" and subset == "abc", LATENT)
        z = sample(mean, variance)
        reconstruction = sum(has[name] * log_lik(name, z, LATENT) for name in NAMES)
        total += available * (reconstruction - BETA * mc_kl(z, mean, variance))
        count += available
    assert count.tolist() == ([7, 7, 7] if everything else [7, 3, 3])
    return float(-np.mean(total / count))


@pytest.mark.parametrize("prior_expert", ["none", "full_subset"])
@pytest.mark.parametrize("everything", [True, False], ids=["all-present", "missing"])
def test_mopoe_mixes_every_available_subset_of_three_modalities(fixed_noise, prior_expert, everything):
    net = MixtureOfProductsVAE(*networks(LATENT), latent_dim=LATENT, prior_expert=prior_expert).double()
    loss = float(net.loss(inputs(), present(everything), beta=BETA).detach())
    assert loss == pytest.approx(mopoe_loss_by_hand(prior_expert, everything), rel=1e-10)


@pytest.mark.parametrize("prior_expert", ["none", "full_subset"])
def test_mopoe_sampled_estimator_draws_one_available_subset_per_example(fixed_noise, monkeypatch, prior_expert):
    """``estimator="sampled"``: each example's bound is the ELBO of one subset drawn among those whose every
    modality it has (the draw is recorded; its bound is worked out here)."""
    drawn = []
    original = experts.choose_present

    def record(available, generator=None, check=True):
        component = original(available, generator, check)
        drawn.append(component.clone())
        return component

    monkeypatch.setattr(experts, "choose_present", record)
    net = MixtureOfProductsVAE(
        *networks(LATENT), latent_dim=LATENT, estimator="sampled", prior_expert=prior_expert
    ).double()
    has = presence(everything=False)
    seen = set()
    for seed in range(6):
        drawn.clear()
        generator = torch.Generator().manual_seed(seed)
        loss = float(net.loss(inputs(), present(False), beta=BETA, generator=generator).detach())
        (component,) = drawn
        bounds = []
        for example, index in enumerate(component.tolist()):
            subset = SUBSETS[index]
            assert all(has[name][example] for name in subset), (example, subset)
            seen.add((example, subset))
            mean, variance = product(subset, prior_expert == "full_subset" and subset == "abc", LATENT)
            z = sample(mean, variance)
            elbo = sum(has[name] * log_lik(name, z, LATENT) for name in NAMES) - BETA * mc_kl(z, mean, variance)
            bounds.append(elbo[example])
        assert loss == pytest.approx(-np.mean(bounds), rel=1e-10)
    assert len(seen) > 6  # the draws reach several subsets of each example


def test_mopoe_full_subset_gives_the_prior_expert_to_the_subset_of_all_three_only():
    net = MixtureOfProductsVAE(*networks(LATENT), latent_dim=LATENT, prior_expert="full_subset").double()
    c_mu, c_logvar, available = net.posterior(inputs(), present(False))
    assert available.tolist() == [
        [True, True, False],  # a
        [True, False, True],  # b
        [True, True, True],  # c
        [True, False, False],  # ab
        [True, True, False],  # ac
        [True, False, True],  # bc
        [True, False, False],  # abc
    ]
    for index, subset in enumerate(SUBSETS):
        mean, variance = product(subset, subset == "abc", LATENT)
        np.testing.assert_allclose(c_mu[index].detach().numpy(), mean, rtol=1e-12, err_msg=subset)
        np.testing.assert_allclose(np.exp(c_logvar[index].detach().numpy()), variance, rtol=1e-12, err_msg=subset)
    # the posterior mean of the example lacking b averages its three components a, c and ac
    means = net.posterior_mean({"a": inputs()["a"], "c": inputs()["c"]}).detach().numpy()
    by_hand = sum(product(s, False, LATENT)[0] for s in ("a", "c", "ac")) / 3
    np.testing.assert_allclose(means, by_hand, rtol=1e-12)


# -- DMVAE ---------------------------------------------------------------------------------------------------


def dmvae_terms(everything: bool) -> dict[str, np.ndarray]:
    """Per example: the reconstructions of each source of the shared code, their shared KL estimates and
    the private KL estimates, each modality counted only where the example has it."""
    code = SHARED + PRIVATE
    shared, private = slice(0, SHARED), slice(SHARED, code)
    has = presence(everything)
    own, private_kl = {}, {}
    for name in NAMES:
        mu, logvar = expert(name, code)
        own[name] = sample(mu[:, private], np.exp(logvar[:, private]))
        private_kl[name] = mc_kl(own[name], mu[:, private], np.exp(logvar[:, private]))
    terms = {f"private_kl_{name}": private_kl[name] for name in NAMES}
    for source in ("joint", *NAMES):
        if source == "joint":  # the product of the present shared experts with the prior expert
            precision, weighted = 1.0, 0.0
            for name in NAMES:
                mu, logvar = expert(name, code)
                precision = precision + has[name][:, None] * np.exp(-logvar[:, shared])
                weighted = weighted + has[name][:, None] * np.exp(-logvar[:, shared]) * mu[:, shared]
            mean, variance = weighted / precision, 1.0 / precision
        else:
            mu, logvar = expert(source, code)
            mean, variance = mu[:, shared], np.exp(logvar[:, shared])
        z = sample(mean, variance)
        terms[f"reconstruction_{source}"] = sum(
            has[name] * log_lik(name, np.concatenate([z, own[name]], axis=1), code) for name in NAMES
        )
        terms[f"kl_{source}"] = mc_kl(z, mean, variance)
    return terms


def dmvae_loss_by_hand(accounting: str, everything: bool) -> float:
    t, has = dmvae_terms(everything), presence(everything)
    count = sum(has[name].astype(float) for name in NAMES)  # N_present per example
    assert count.tolist() == ([3, 3, 3] if everything else [3, 2, 2])
    private = sum(has[name] * t[f"private_kl_{name}"] for name in NAMES)
    total = t["reconstruction_joint"] + sum(has[name] * t[f"reconstruction_{name}"] for name in NAMES)
    if accounting == "per_source":
        # every source: its shared KL and every present modality's private KL (Lee & Pavlovic 2021)
        total = total - BETA * (t["kl_joint"] + private)
        total = total - BETA * sum(has[name] * (t[f"kl_{name}"] + private) for name in NAMES)
    else:
        # the toolkit: per modality n, its own KL, the joint KL, and its private KL once per other modality
        total = total - BETA * sum(has[name] * t[f"kl_{name}"] for name in NAMES)
        total = total - BETA * count * t["kl_joint"]
        total = total - BETA * sum(has[name] * (count - 1) * t[f"private_kl_{name}"] for name in NAMES)
    return float(-np.mean(total))


@pytest.mark.parametrize("accounting", ["per_source", "toolkit"])
@pytest.mark.parametrize("everything", [True, False], ids=["all-present", "missing"])
def test_dmvae_counts_each_kl_term_by_hand_with_three_modalities(fixed_noise, accounting, everything):
    encoders, decoders, likelihoods = networks(SHARED + PRIVATE)
    net = PrivateSharedVAE(encoders, decoders, likelihoods, SHARED, PRIVATE, kl_accounting=accounting).double()
    loss = float(net.loss(inputs(), present(everything), beta=BETA).detach())
    assert loss == pytest.approx(dmvae_loss_by_hand(accounting, everything), rel=1e-10)


def test_dmvae_toolkit_private_kl_counts_grow_with_the_modalities_present(fixed_noise):
    """With all three present the toolkit counts each private KL twice (N - 1 = 2) and the joint KL three
    times; the paper's accounting counts each private KL in all four sources. Their difference is the
    predicted sum of KL terms, times beta."""
    t = dmvae_terms(everything=True)
    private = sum(t[f"private_kl_{name}"] for name in NAMES)
    predicted = BETA * (4 * private - 2 * private - 2 * t["kl_joint"]).mean()
    losses = {}
    for accounting in ("per_source", "toolkit"):
        net = PrivateSharedVAE(*networks(SHARED + PRIVATE), SHARED, PRIVATE, kl_accounting=accounting).double()
        losses[accounting] = float(net.loss(inputs(), beta=BETA).detach())
    assert losses["per_source"] - losses["toolkit"] == pytest.approx(predicted, rel=1e-10)
    assert abs(predicted) > 1e-2


# -- MMVAE+ ---------------------------------------------------------------------------------------------------

AUXILIARY_LOG_SCALE = {"a": np.array([0.3, -0.2]), "b": np.array([-0.4, 0.25]), "c": np.array([0.5, 0.15])}


def make_plus() -> ModalitySpecificMixtureVAE:
    """MMVAE+ with every auxiliary scale set away from its start (1): its log is AUXILIARY_LOG_SCALE."""
    net = ModalitySpecificMixtureVAE(*networks(SHARED + PRIVATE), SHARED, PRIVATE).double()
    with torch.no_grad():
        for name, values in AUXILIARY_LOG_SCALE.items():
            net.auxiliary_log_scale[name].copy_(torch.tensor(values))
    return net


def test_mmvae_plus_weights_a_missing_modalitys_code_by_its_learned_auxiliary_scale(recorded_noise):
    """``log p(X_S)``'s weights with ``a`` given and ``b``, ``c`` scored but missing: their codes come from
    ``r_n = N(0, s_n^2)`` and each brings ``log p(w~_n) - log r_n(w~_n)``, zero only while ``s_n = 1``."""
    net = make_plus()
    code = SHARED + PRIVATE
    scored = {name: torch.tensor(x) for name, x in X.items()}
    weights = net.log_likelihood_weights({"a": scored["a"]}, scored, 2, generator=torch.Generator().manual_seed(5))
    assert len(recorded_noise) == 4  # z from the mixture (of a alone), w_a, then w~_b and w~_c
    shared_noise, own_noise, *auxiliary_noise = recorded_noise
    mu, logvar = expert("a", code)
    z = mu[:, :SHARED] + np.exp(0.5 * logvar[:, :SHARED]) * shared_noise  # (K, B, SHARED)
    w_a = mu[:, SHARED:] + np.exp(0.5 * logvar[:, SHARED:]) * own_noise
    expected = log_gauss(z, 0.0, 1.0) - log_gauss(z, mu[:, :SHARED], np.exp(logvar[:, :SHARED]))
    expected += log_gauss(w_a, 0.0, 1.0) - log_gauss(w_a, mu[:, SHARED:], np.exp(logvar[:, SHARED:]))
    codes = {"a": w_a}
    ratio = 0.0
    for name, noise in zip(("b", "c"), auxiliary_noise):
        scale = np.exp(AUXILIARY_LOG_SCALE[name])
        codes[name] = noise * scale
        ratio = ratio + log_gauss(codes[name], 0.0, 1.0) - log_gauss(codes[name], 0.0, scale**2)
    for name in NAMES:  # the estimate leaves the likelihood weights out
        stacked = np.concatenate([z, codes[name]], axis=-1)
        expected += np.stack([log_lik(name, stacked[k], code, weighted=False) for k in range(2)])
    expected += ratio
    np.testing.assert_allclose(weights.numpy(), expected, rtol=1e-10)
    assert np.abs(ratio).mean() > 0.1  # the scales away from 1 make the ratio count


def plus_loss_by_hand(draws: list[np.ndarray]) -> float:
    """Minus the stratified MMVAE+ ELBO over the present modalities of each example (Palumbo et al. 2023,
    eq. 4), K = 1. Draw order per source m: its (z, w_m) noise, then r_n's noise for each other n."""
    code = SHARED + PRIVATE
    posteriors = {name: expert(name, code) for name in NAMES}
    has = presence(everything=False)
    draws = list(draws)
    total = np.zeros(3)
    for source in NAMES:
        mu, logvar = posteriors[source]
        latents = mu + np.exp(0.5 * logvar) * draws.pop(0)[0]
        z, w = latents[:, :SHARED], latents[:, SHARED:]
        codes = {name: w if name == source else draws.pop(0)[0] * np.exp(AUXILIARY_LOG_SCALE[name]) for name in NAMES}
        log_px = sum(has[n] * log_lik(n, np.concatenate([z, codes[n]], axis=1), code) for n in NAMES)
        # the mixture of the shared experts the example has: 1/|X| sum over them
        densities = [
            has[c] * np.exp(log_gauss(z, posteriors[c][0][:, :SHARED], np.exp(posteriors[c][1][:, :SHARED])))
            for c in NAMES
        ]
        count = sum(has[c].astype(float) for c in NAMES)
        log_q = np.log(sum(densities) / count) + log_gauss(w, mu[:, SHARED:], np.exp(logvar[:, SHARED:]))
        log_p = log_gauss(z, 0.0, 1.0) + log_gauss(w, 0.0, 1.0)
        total += has[source] * (log_px - BETA * (log_q - log_p))
    assert not draws
    return float(-np.mean(total / np.array([3.0, 2.0, 2.0])))


def test_mmvae_plus_stratifies_over_the_modalities_each_example_has(recorded_noise):
    net = make_plus()
    loss = float(net.loss(inputs(), present(False), beta=BETA, generator=torch.Generator().manual_seed(4)).detach())
    assert len(recorded_noise) == 9  # three sources, each its own noise and two auxiliary draws
    assert loss == pytest.approx(plus_loss_by_hand(recorded_noise), rel=1e-10)

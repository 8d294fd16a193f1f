"""The toolkit settings of the multimodal VAEs against hand-computed values.

Each setting reproduces how the CdSprites+ authors' toolkit (gabinsane/multimodal-vae-comparison,
``multimodal_compare/models/mmvae_models.py``) trains a model where it differs from the model's paper: MVAE
``reconstruct``, MMVAE ``bound``, MoPoE ``prior_expert``, DMVAE ``kl_accounting``. The networks are fixed
linear maps, every reparameterised draw uses the same fixed noise, and the values are computed here with
numpy from the formulas (nothing of the code under test), for both settings of each, so that their
difference is the predicted term.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from linear_networks import LinearDecoder, LinearEncoder  # tests/linear_networks.py
from repscope.errors import InvalidArgumentError
from repscope.models.multimodal import experts
from repscope.models.multimodal.dmvae import PrivateSharedVAE
from repscope.models.multimodal.models import (
    LikelihoodSpec,
    MixtureOfExpertsVAE,
    MixtureOfProductsVAE,
    ProductOfExpertsVAE,
)
from repscope.train.registry import task_class

LATENT, PRIVATE = 3, 2
BETA = 0.7
SCALES = {"a": 0.5, "b": 0.8}
WEIGHTS = {"a": 1.0, "b": 2.0}
X = {
    "a": np.array([[0.5, -1.0, 0.3, 0.8], [-0.2, 0.4, 1.1, -0.6]]),
    "b": np.array([[1.2, -0.3], [0.1, 0.9]]),
}
NOISE = np.array([[0.3, -1.1, 0.6, 0.2, -0.4], [-0.7, 0.25, 1.3, -0.5, 0.9]])  # (B, 5): every draw's eps


def _matrix(rows: int, cols: int, offset: float) -> np.ndarray:
    values = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    return np.sin(values * 1.3 + offset) * 0.6


def weights(code: int) -> dict[str, dict[str, np.ndarray]]:
    """Encoder and decoder weights per modality for codes of ``code`` dimensions."""
    out = {}
    for index, (name, x) in enumerate(X.items()):
        features = x.shape[1]
        out[name] = {
            "w_mu": _matrix(features, code, 0.2 + index),
            "w_logvar": _matrix(features, code, 1.7 + index) * 0.5,
            "v": _matrix(code, features, 2.9 + index),
            "c": _matrix(1, features, 0.4 + index)[0],
        }
    return out


def networks(code: int) -> tuple[dict, dict, dict]:
    w = weights(code)
    encoders = {name: LinearEncoder(w[name]["w_mu"], w[name]["w_logvar"]) for name in X}
    decoders = {name: LinearDecoder(w[name]["v"], w[name]["c"]) for name in X}
    likelihoods = {name: LikelihoodSpec("gaussian", SCALES[name], WEIGHTS[name]) for name in X}
    return encoders, decoders, likelihoods


@pytest.fixture(autouse=True)
def fixed_noise(monkeypatch):
    """Every reparameterised draw ``mu + exp(logvar / 2) * eps`` uses ``eps`` = the first columns of NOISE."""

    def draw(mu, logvar, generator=None, samples=None):
        noise = torch.tensor(NOISE[:, : mu.shape[-1]], dtype=mu.dtype)
        if samples is not None:
            noise = noise.expand(int(samples), *noise.shape)
        return mu + torch.exp(0.5 * logvar) * noise

    monkeypatch.setattr(experts, "reparameterise", draw)


def inputs() -> dict[str, torch.Tensor]:
    return {name: torch.tensor(x) for name, x in X.items()}


# -- the formulas, in numpy -------------------------------------------------------------------------------


def log_gauss(x, mean, variance):
    """Sum over the last axis of log N(x; mean, variance)."""
    return np.sum(-0.5 * (x - mean) ** 2 / variance - 0.5 * np.log(2 * math.pi * variance), axis=-1)


def expert(name: str, code: int) -> tuple[np.ndarray, np.ndarray]:
    w = weights(code)[name]
    return X[name] @ w["w_mu"], X[name] @ w["w_logvar"]


def log_lik(name: str, z: np.ndarray, code: int) -> np.ndarray:
    """Weighted Gaussian log-likelihood of modality ``name`` decoded from ``z`` (B, code)."""
    w = weights(code)[name]
    return WEIGHTS[name] * log_gauss(X[name], z @ w["v"] + w["c"], SCALES[name] ** 2)


def product(names: list[str], with_prior: bool, dims: slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the product of the named experts (and of N(0, I) with ``with_prior``)."""
    precision, weighted = (1.0 if with_prior else 0.0), 0.0
    for name in names:
        mu, logvar = expert(name, LATENT + PRIVATE if dims != slice(None) else LATENT)
        mu, logvar = mu[:, dims], logvar[:, dims]
        precision = precision + np.exp(-logvar)
        weighted = weighted + np.exp(-logvar) * mu
    variance = 1.0 / precision
    return weighted * variance, variance


def sample(mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    return mean + np.sqrt(variance) * NOISE[:, : mean.shape[-1]]


def mc_kl(z, mean, variance):
    """One-sample KL estimate log q(z) - log N(z; 0, I)."""
    return log_gauss(z, mean, variance) - log_gauss(z, 0.0, 1.0)


# -- MVAE ---------------------------------------------------------------------------------------------------


def mvae_loss_by_hand(reconstruct: str) -> float:
    total = 0.0
    for subset in (["a", "b"], ["a"], ["b"]):  # the joint term, then each single modality
        mean, variance = product(subset, with_prior=True)
        z = sample(mean, variance)
        scored = ["a", "b"] if (reconstruct == "all" or len(subset) == 2) else subset
        elbo = sum(log_lik(name, z, LATENT) for name in scored) - BETA * mc_kl(z, mean, variance)
        total -= elbo.mean()
    return total


def test_mvae_reconstruct_all_adds_the_cross_reconstructions_of_each_single_modality_term():
    losses = {}
    for reconstruct in ("given", "all"):
        net = ProductOfExpertsVAE(*networks(LATENT), latent_dim=LATENT, reconstruct=reconstruct).double()
        losses[reconstruct] = float(net.loss(inputs(), beta=BETA).detach())
        assert losses[reconstruct] == pytest.approx(mvae_loss_by_hand(reconstruct), rel=1e-10)
    # the predicted difference: b decoded from a's product, a decoded from b's product
    z_from_a = sample(*product(["a"], with_prior=True))
    z_from_b = sample(*product(["b"], with_prior=True))
    cross = (log_lik("b", z_from_a, LATENT) + log_lik("a", z_from_b, LATENT)).mean()
    assert losses["given"] - losses["all"] == pytest.approx(cross, rel=1e-10)
    assert abs(cross) > 1.0  # the fixture makes the terms matter


def test_mvae_reconstruct_all_leaves_out_an_example_without_the_subsets_modalities():
    net = ProductOfExpertsVAE(*networks(LATENT), latent_dim=LATENT, reconstruct="all").double()
    present = {"a": torch.tensor([True, False]), "b": torch.tensor([True, True])}
    loss = float(net.loss(inputs(), present, beta=BETA).detach())
    # example 1 has b only: its joint term is b's product scoring b, the {a} term is absent, {b} scores b
    total = np.zeros(2)
    mean, variance = product(["a", "b"], with_prior=True)
    z = sample(mean, variance)
    joint = log_lik("a", z, LATENT) + log_lik("b", z, LATENT) - BETA * mc_kl(z, mean, variance)
    mean_b, variance_b = product(["b"], with_prior=True)
    z_b = sample(mean_b, variance_b)
    joint[1] = (log_lik("b", z_b, LATENT) - BETA * mc_kl(z_b, mean_b, variance_b))[1]
    total += joint
    mean_a, variance_a = product(["a"], with_prior=True)
    z_a = sample(mean_a, variance_a)
    single_a = log_lik("a", z_a, LATENT) + log_lik("b", z_a, LATENT) - BETA * mc_kl(z_a, mean_a, variance_a)
    single_a[1] = 0.0
    single_b = log_lik("a", z_b, LATENT) + log_lik("b", z_b, LATENT) - BETA * mc_kl(z_b, mean_b, variance_b)
    single_b[1] -= log_lik("a", z_b, LATENT)[1]  # a is missing there: not scored
    expected = -(total.mean() + single_a.mean() + single_b.mean())
    assert loss == pytest.approx(expected, rel=1e-10)


# -- MMVAE --------------------------------------------------------------------------------------------------


def m_elbo_by_hand() -> np.ndarray:
    posteriors = {name: expert(name, LATENT) for name in X}
    z = {name: sample(mu, np.exp(logvar)) for name, (mu, logvar) in posteriors.items()}

    def log_q(name, point):
        mu, logvar = posteriors[name]
        return log_gauss(point, mu, np.exp(logvar))

    likelihood = 0.0
    for r, d in (("a", "b"), ("b", "a")):
        weight = np.exp(log_q(r, z[d]) - log_q(d, z[d]))
        likelihood = likelihood + log_lik(r, z[r], LATENT) + weight * log_lik(r, z[d], LATENT)
    kl = sum(0.5 * np.sum(np.exp(lv) + mu**2 - 1.0 - lv, axis=-1) for mu, lv in posteriors.values())
    return (likelihood - 4 * BETA * kl) / 2  # four stacked terms, each minus beta * the KLs; 1/M


def mixture_elbo_by_hand() -> np.ndarray:
    posteriors = {name: expert(name, LATENT) for name in X}
    total = 0.0
    for mu, logvar in posteriors.values():
        z = sample(mu, np.exp(logvar))
        log_mixture = np.log(0.5 * sum(np.exp(log_gauss(z, m, np.exp(v))) for m, v in posteriors.values()))
        reconstruction = log_lik("a", z, LATENT) + log_lik("b", z, LATENT)
        total = total + reconstruction - BETA * (log_mixture - log_gauss(z, 0.0, 1.0))
    return total / 2


def test_mmvae_m_elbo_is_the_toolkits_importance_weighted_sum_and_the_mixture_bound_stays():
    losses = {}
    for bound in ("mixture", "m_elbo"):
        net = MixtureOfExpertsVAE(*networks(LATENT), latent_dim=LATENT, bound=bound).double()
        losses[bound] = float(net.loss(inputs(), beta=BETA).detach())
    assert losses["m_elbo"] == pytest.approx(-m_elbo_by_hand().mean(), rel=1e-10)
    assert losses["mixture"] == pytest.approx(-mixture_elbo_by_hand().mean(), rel=1e-10)
    assert abs(losses["m_elbo"] - losses["mixture"]) > 0.1


def test_mmvae_m_elbo_gradient_detaches_the_weights_sample_and_the_other_experts_density():
    # the gradient of a torch transcription of the formula with the toolkit's two detaches
    net = MixtureOfExpertsVAE(*networks(LATENT), latent_dim=LATENT, bound="m_elbo").double()
    net.loss(inputs(), beta=BETA).backward()
    ours = {name: p.grad.clone() for name, p in net.named_parameters()}

    reference = MixtureOfExpertsVAE(*networks(LATENT), latent_dim=LATENT).double()
    x = inputs()
    posterior = {m: reference.encoders[m](x[m]) for m in X}
    eps = torch.tensor(NOISE[:, :LATENT])
    z = {m: mu + torch.exp(0.5 * lv) * eps for m, (mu, lv) in posterior.items()}

    def log_q(m, point):
        mu, lv = posterior[m]
        return (-0.5 * (point - mu) ** 2 / lv.exp() - 0.5 * (lv + math.log(2 * math.pi))).sum(-1)

    def lik(m, point):
        mean = reference.decoders[m](point)
        return WEIGHTS[m] * (
            -0.5 * ((x[m] - mean) / SCALES[m]) ** 2 - math.log(SCALES[m] * math.sqrt(2 * math.pi))
        ).sum(-1)

    objective = 0.0
    for r, d in (("a", "b"), ("b", "a")):
        weight = torch.exp(log_q(r, z[d].detach()) - log_q(d, z[d].detach()).detach())
        objective = objective + lik(r, z[r]) + weight * lik(r, z[d])
    kl = sum(0.5 * (lv.exp() + mu**2 - 1 - lv).sum(-1) for mu, lv in posterior.values())
    (-((objective - 4 * BETA * kl) / 2).mean()).backward()
    for name, p in reference.named_parameters():
        assert torch.allclose(ours[name], p.grad, rtol=1e-10, atol=1e-12), name


def test_mmvae_m_elbo_drops_the_terms_of_a_missing_modality():
    net = MixtureOfExpertsVAE(*networks(LATENT), latent_dim=LATENT, bound="m_elbo").double()
    present = {"a": torch.tensor([True, True]), "b": torch.tensor([True, False])}
    loss = net.loss(inputs(), present, beta=BETA)
    loss.backward()
    mu, logvar = expert("a", LATENT)
    z_a = sample(mu, np.exp(logvar))
    kl_a = 0.5 * np.sum(np.exp(logvar) + mu**2 - 1.0 - logvar, axis=-1)
    # example 1 has a only: a's own reconstruction and a's KL remain, with the toolkit's weights
    only_a = (log_lik("a", z_a, LATENT) - 4 * BETA * kl_a) / 2
    expected = -(m_elbo_by_hand()[0] + only_a[1]) / 2
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-10)
    assert all(torch.isfinite(p.grad).all() for p in net.parameters())


def test_mmvae_m_elbo_refuses_what_the_toolkit_does_not_define():
    net = MixtureOfExpertsVAE(*networks(LATENT), latent_dim=LATENT, bound="m_elbo").double()
    with pytest.raises(InvalidArgumentError, match="m_elbo.*elbo objective with k = 1"):
        net.loss(inputs(), objective="iwae", k=2)
    with pytest.raises(InvalidArgumentError, match="bound: m_elbo takes prior='normal'"):
        MixtureOfExpertsVAE(*networks(LATENT), latent_dim=LATENT, prior="laplace", bound="m_elbo")
    with pytest.raises(InvalidArgumentError, match="bound: must be one of mixture, m_elbo"):
        MixtureOfExpertsVAE(*networks(LATENT), latent_dim=LATENT, bound="m-elbo")
    encoders, decoders, likelihoods = networks(LATENT)
    encoders["c"], decoders["c"], likelihoods["c"] = encoders["a"], decoders["a"], likelihoods["a"]
    with pytest.raises(InvalidArgumentError, match="two modalities, got 3"):
        MixtureOfExpertsVAE(encoders, decoders, likelihoods, latent_dim=LATENT, bound="m_elbo")


@pytest.mark.parametrize(
    "params, key",
    [
        ({"bound": "m_elbo", "objective": "dreg", "k": 2}, "objective"),
        ({"bound": "m_elbo", "k": 3}, "k"),
        ({"bound": "m_elbo", "estimator": "sampled"}, "estimator"),
        ({"bound": "mixed"}, None),
    ],
)
def test_mmvae_task_config_refuses_m_elbo_outside_its_definition(params, key):
    pattern = (
        f"model.params.bound: m_elbo .* {key} = "
        if key
        else r"model\.params\.bound: Input should be 'mixture' or 'm_elbo' \(got 'mixed'\)"
    )
    with pytest.raises(InvalidArgumentError, match=pattern):
        task_class("mmvae")(latent_dim=LATENT, **params)


@pytest.mark.parametrize(
    "name, params, message",
    [
        (
            "mvae",
            {"reconstruct": "every"},
            r"model\.params\.reconstruct: Input should be 'given' or 'all' \(got 'every'\)",
        ),
        (
            "mopoe",
            {"prior_expert": "every_subset"},
            r"model\.params\.prior_expert: Input should be 'none' or 'full_subset' \(got 'every_subset'\)",
        ),
        (
            "dmvae",
            {"kl_accounting": "once"},
            r"model\.params\.kl_accounting: Input should be 'per_source' or 'toolkit' \(got 'once'\)",
        ),
    ],
)
def test_task_configs_name_an_unknown_toolkit_setting(name, params, message):
    with pytest.raises(InvalidArgumentError, match=message):
        task_class(name)(latent_dim=LATENT, **params)


# -- MoPoE --------------------------------------------------------------------------------------------------


def mopoe_component_elbos(prior_expert: str) -> list[np.ndarray]:
    elbos = []
    for subset in (["a"], ["b"], ["a", "b"]):
        mean, variance = product(subset, with_prior=prior_expert == "full_subset" and len(subset) == 2)
        z = sample(mean, variance)
        reconstruction = log_lik("a", z, LATENT) + log_lik("b", z, LATENT)
        elbos.append(reconstruction - BETA * mc_kl(z, mean, variance))
    return elbos


def test_mopoe_full_subset_prior_expert_changes_only_the_joint_component():
    losses = {}
    for prior_expert in ("none", "full_subset"):
        net = MixtureOfProductsVAE(*networks(LATENT), latent_dim=LATENT, prior_expert=prior_expert).double()
        losses[prior_expert] = float(net.loss(inputs(), beta=BETA).detach())
        assert losses[prior_expert] == pytest.approx(-(sum(mopoe_component_elbos(prior_expert)) / 3).mean(), rel=1e-10)
    # the single-modality components are the same: the difference is the joint component's, over three
    joint_without, joint_with = mopoe_component_elbos("none")[2], mopoe_component_elbos("full_subset")[2]
    assert losses["none"] - losses["full_subset"] == pytest.approx((joint_with - joint_without).mean() / 3, rel=1e-10)
    assert abs(losses["none"] - losses["full_subset"]) > 1e-3


def test_mopoe_full_subset_prior_expert_is_in_the_posterior_used_for_inference():
    net = MixtureOfProductsVAE(*networks(LATENT), latent_dim=LATENT, prior_expert="full_subset").double()
    c_mu, c_logvar, _ = net.posterior(inputs())
    mean, variance = product(["a", "b"], with_prior=True)
    np.testing.assert_allclose(c_mu[2].detach().numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(np.exp(c_logvar[2].detach().numpy()), variance, rtol=1e-12)
    single, single_variance = product(["a"], with_prior=False)
    np.testing.assert_allclose(c_mu[0].detach().numpy(), single, rtol=1e-12)
    np.testing.assert_allclose(np.exp(c_logvar[0].detach().numpy()), single_variance, rtol=1e-12)


# -- DMVAE --------------------------------------------------------------------------------------------------


def dmvae_terms() -> dict[str, np.ndarray]:
    """Reconstructions of the three sources and the KL estimates, per example."""
    code = LATENT + PRIVATE
    shared, private = slice(0, LATENT), slice(LATENT, code)
    privates = {}
    for name in X:
        mu, logvar = expert(name, code)
        w = sample(mu[:, private], np.exp(logvar[:, private]))
        privates[name] = (w, mc_kl(w, mu[:, private], np.exp(logvar[:, private])))
    terms = {"reconstruction": 0.0}
    for source in (["a", "b"], ["a"], ["b"]):
        if len(source) == 2:
            mean, variance = product(source, with_prior=True, dims=shared)
        else:
            mu, logvar = expert(source[0], code)
            mean, variance = mu[:, shared], np.exp(logvar[:, shared])
        z = sample(mean, variance)
        for name in X:
            terms["reconstruction"] = terms["reconstruction"] + log_lik(
                name, np.concatenate([z, privates[name][0]], axis=1), code
            )
        terms["kl_" + "".join(source)] = mc_kl(z, mean, variance)
    terms["private_kl"] = privates["a"][1] + privates["b"][1]
    return terms


def test_dmvae_toolkit_counts_each_private_kl_once_and_the_joint_kl_per_modality():
    t = dmvae_terms()
    shared = t["kl_ab"] + t["kl_a"] + t["kl_b"]
    expected = {
        "per_source": -(t["reconstruction"] - BETA * (shared + 3 * t["private_kl"])).mean(),
        "toolkit": -(t["reconstruction"] - BETA * (shared + t["kl_ab"] + t["private_kl"])).mean(),
    }
    losses = {}
    for accounting in ("per_source", "toolkit"):
        torch.manual_seed(0)
        encoders, decoders, likelihoods = networks(LATENT + PRIVATE)
        net = PrivateSharedVAE(encoders, decoders, likelihoods, LATENT, PRIVATE, kl_accounting=accounting).double()
        losses[accounting] = float(net.loss(inputs(), beta=BETA).detach())
        assert losses[accounting] == pytest.approx(expected[accounting], rel=1e-10)
    # the difference: the toolkit's loss has two private KLs fewer and one joint KL more, times beta
    predicted = BETA * (2 * t["private_kl"] - t["kl_ab"]).mean()
    assert losses["per_source"] - losses["toolkit"] == pytest.approx(predicted, rel=1e-10)
    assert abs(predicted) > 1e-2


def test_dmvae_refuses_an_unknown_kl_accounting():
    with pytest.raises(InvalidArgumentError, match="kl_accounting: must be one of per_source, toolkit"):
        PrivateSharedVAE(*networks(LATENT + PRIVATE), LATENT, PRIVATE, kl_accounting="once")


# -- the settings in a task's hyper-parameters ----------------------------------------------------------------

SPECS = {"vector": {"shape": [5], "classes": None}, "label": {"shape": [], "classes": 3, "kind": "categorical"}}
TINY = {
    "vector": {"field": "vector", "network": "fc-image", "params": {"hidden": 8}, "likelihood": "gaussian"},
    "label": {"field": "label", "network": "label", "likelihood": "categorical"},
}
SETTINGS = {
    "mvae": ("reconstruct", "given", "all", "subset_reconstruction"),
    "mmvae": ("bound", "mixture", "m_elbo", "bound"),
    "mopoe": ("prior_expert", "none", "full_subset", "prior_expert"),
    "dmvae": ("kl_accounting", "per_source", "toolkit", "kl_accounting"),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_a_toolkit_setting_is_recorded_reaches_the_model_and_defaults_for_older_hyper_parameters(name):
    key, default, toolkit, attribute = SETTINGS[name]
    torch.manual_seed(0)
    task = task_class(name)(modalities=TINY, latent_dim=3, field_specs=SPECS, **{key: toolkit})
    assert task.hparams[key] == toolkit and getattr(task.net, attribute) == toolkit
    older = {field: value for field, value in dict(task.hparams).items() if field != key}  # saved before it existed
    reloaded = task_class(name)(**older)
    assert reloaded.hparams[key] == default and getattr(reloaded.net, attribute) == default

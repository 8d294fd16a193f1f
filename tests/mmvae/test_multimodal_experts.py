"""Mixing rules and objectives of the multimodal VAEs, on small cases computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from repscope.errors import InvalidArgumentError
from repscope.models.multimodal import experts, objectives


def test_product_of_two_gaussians_and_the_prior_is_the_closed_form():
    # experts N(1, 1) and N(3, 4) and the prior N(0, 1): precisions 1, 1/4, 1
    mu = torch.tensor([[[1.0]], [[3.0]]], dtype=torch.float64)
    logvar = torch.log(torch.tensor([[[1.0]], [[4.0]]], dtype=torch.float64))
    joint_mu, joint_logvar = experts.product_of_experts(mu, logvar)
    precision = 1 + 0.25 + 1
    assert torch.exp(joint_logvar).item() == pytest.approx(1 / precision)
    assert joint_mu.item() == pytest.approx((1 * 1 + 3 * 0.25 + 0 * 1) / precision)
    # without the prior expert
    joint_mu, joint_logvar = experts.product_of_experts(mu, logvar, prior_expert=False)
    assert joint_mu.item() == pytest.approx((1 + 0.75) / 1.25) and torch.exp(joint_logvar).item() == pytest.approx(0.8)


def test_a_missing_expert_leaves_the_product():
    mu = torch.randn(3, 5, 2, dtype=torch.float64)
    logvar = torch.randn(3, 5, 2, dtype=torch.float64)
    present = torch.tensor([[True] * 5, [False] * 5, [True] * 5])
    with_mask = experts.product_of_experts(mu, logvar, present)
    without = experts.product_of_experts(mu[[0, 2]], logvar[[0, 2]])
    for a, b in zip(with_mask, without):
        torch.testing.assert_close(a, b)
    # nothing present: the prior
    nothing = torch.zeros(3, 5, dtype=torch.bool)
    prior_mu, prior_logvar = experts.product_of_experts(mu, logvar, nothing)
    assert torch.all(prior_mu == 0) and torch.all(prior_logvar == 0)
    with pytest.raises(InvalidArgumentError, match="no modality"):
        experts.product_of_experts(mu, logvar, nothing, prior_expert=False)


def test_a_mixture_sample_comes_from_exactly_one_present_expert():
    # experts far apart with tiny variance: each sample sits on one of them
    mu = torch.tensor([[[-100.0]] * 400, [[0.0]] * 400, [[100.0]] * 400])
    logvar = torch.full((3, 400, 1), -20.0)
    present = torch.ones(3, 400, dtype=torch.bool)
    present[2, :200] = False
    generator = torch.Generator().manual_seed(0)
    z, component = experts.mixture_of_experts_sample(mu, logvar, present, generator)
    assert torch.allclose(z.squeeze(1), mu[component, torch.arange(400), 0], atol=1e-3)
    assert not torch.any(component[:200] == 2)  # never a missing expert
    counts = torch.bincount(component[200:], minlength=3)
    assert torch.all(counts > 40)  # uniform over the three present ones (expected 67 each of 200)
    assert torch.all(torch.bincount(component[:200], minlength=2)[:2] > 70)  # 100 each of experts 0, 1
    again = experts.mixture_of_experts_sample(mu, logvar, present, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], z)


def test_mopoe_has_one_product_per_subset_and_masks_incomplete_ones():
    assert experts.subsets(3) == [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]
    mu = torch.randn(2, 4, 3, dtype=torch.float64)
    logvar = torch.randn(2, 4, 3, dtype=torch.float64)
    present = torch.tensor([[True, True, False, True], [True, False, True, True]])
    parts_mu, parts_logvar, available = experts.mixture_of_products(mu, logvar, present)
    assert parts_mu.shape == (3, 4, 3)
    torch.testing.assert_close(parts_mu[0], mu[0])  # a one-expert product is the expert itself
    torch.testing.assert_close(parts_logvar[1], logvar[1])
    assert available.tolist() == [[True, True, False, True], [True, False, True, True], [True, False, False, True]]


def test_iwae_with_one_sample_is_the_elbo_and_grows_with_k():
    generator = torch.Generator().manual_seed(1)
    log_likelihood, log_prior, log_posterior = (torch.randn(1, 6, generator=generator) for _ in range(3))
    weights = objectives.log_importance_weights(log_likelihood, log_prior, log_posterior)
    torch.testing.assert_close(objectives.iwae(weights), objectives.elbo(log_likelihood, log_prior, log_posterior))
    # by hand: log mean exp
    values = torch.tensor([[0.0], [math.log(3.0)]])
    assert objectives.iwae(values).item() == pytest.approx(math.log(2.0))
    # Jensen: the K-sample bound is at least the mean of the one-sample bounds
    many = torch.randn(10, 6, generator=generator)
    assert torch.all(objectives.iwae(many) >= many.mean(0))


def _toy_log_weights(mu, log_sigma, x, noise, detach_posterior):
    # p(z) = N(0, 1), p(x | z) = N(z, 1), q(z | x) = N(mu, sigma^2); z = mu + sigma * eps
    latents = (mu + torch.exp(log_sigma) * noise).unsqueeze(-1)  # (K, B, D = 1)
    z = latents[..., 0]
    q_mu, q_log_sigma = (mu.detach(), log_sigma.detach()) if detach_posterior else (mu, log_sigma)
    log_q = -0.5 * ((z - q_mu) / torch.exp(q_log_sigma)) ** 2 - q_log_sigma
    log_p = -0.5 * z**2 - 0.5 * (x - z) ** 2
    return log_p - log_q, latents


def test_dreg_gradient_agrees_with_the_iwae_gradient_in_expectation():
    # both estimate the gradient of the same IWAE bound; DReG with smaller variance
    x, k, trials = 1.5, 8, 200
    generator = torch.Generator().manual_seed(2)
    noise = torch.randn(trials, k, generator=generator, dtype=torch.float64)
    gradients = {}
    for name in ("iwae", "dreg"):
        mu = torch.tensor(0.2, dtype=torch.float64, requires_grad=True)
        log_sigma = torch.tensor(-0.3, dtype=torch.float64, requires_grad=True)
        per_trial = []
        for t in range(trials):  # each trial is one K-sample estimate
            if mu.grad is not None:
                mu.grad = None
                log_sigma.grad = None
            log_w, latents = _toy_log_weights(mu, log_sigma, x, noise[t][:, None], name == "dreg")
            if name == "iwae":
                value = objectives.iwae(log_w).sum()
            else:
                value = objectives.dreg(log_w, latents).sum()
            value.backward()
            per_trial.append(torch.stack([mu.grad.clone(), log_sigma.grad.clone()]))
        gradients[name] = torch.stack(per_trial)
    mean_iwae, mean_dreg = gradients["iwae"].mean(0), gradients["dreg"].mean(0)
    stderr = (gradients["iwae"].std(0) + gradients["dreg"].std(0)) / math.sqrt(trials)
    assert torch.all((mean_iwae - mean_dreg).abs() < 4 * stderr + 1e-3)
    assert torch.all(gradients["dreg"].std(0) < gradients["iwae"].std(0))  # the point of DReG


def test_shapes_are_checked():
    with pytest.raises(InvalidArgumentError, match="mu and logvar"):
        experts.product_of_experts(torch.zeros(2, 3), torch.zeros(2, 3))
    with pytest.raises(InvalidArgumentError, match="present"):
        experts.product_of_experts(torch.zeros(2, 3, 1), torch.zeros(2, 3, 1), torch.ones(3, 2, dtype=torch.bool))
    with pytest.raises(InvalidArgumentError, match="log-densities"):
        objectives.elbo(torch.zeros(1, 3), torch.zeros(1, 4), torch.zeros(1, 3))


def test_likelihoods_match_torch_distributions_and_respect_scaling_and_masks():
    from repscope.models.multimodal import likelihoods

    generator = torch.Generator().manual_seed(3)
    output = torch.randn(4, 3, 2, generator=generator, dtype=torch.float64)
    target = torch.rand(4, 3, 2, generator=generator, dtype=torch.float64)
    normal = torch.distributions.Normal(output, 0.5).log_prob(target).sum((1, 2))
    torch.testing.assert_close(likelihoods.log_likelihood("gaussian", output, target, scale=0.5), normal)
    laplace = torch.distributions.Laplace(output, 0.2).log_prob(target).sum((1, 2))
    torch.testing.assert_close(likelihoods.log_likelihood("laplace", output, target, scale=0.2), laplace)
    bernoulli = torch.distributions.Bernoulli(logits=output).log_prob((target > 0.5).double()).sum((1, 2))
    # the decoder gives the mean (a sigmoid output), as the image networks do
    got = likelihoods.log_likelihood("bernoulli", torch.sigmoid(output), (target > 0.5).double())
    torch.testing.assert_close(got, bernoulli)
    torch.testing.assert_close(
        likelihoods.log_likelihood("gaussian", output, target, weight=3.0), 3.0 * normal_default(output, target)
    )
    # a caption: 2 examples of 4 characters over an alphabet of 5; the padding counts zero
    logits = torch.randn(2, 4, 5, generator=generator, dtype=torch.float64)
    characters = torch.tensor([[1, 2, 0, 0], [3, 3, 3, 4]])
    mask = torch.tensor([[True, True, False, False], [True, True, True, True]])
    by_hand = torch.log_softmax(logits, -1).gather(-1, characters.unsqueeze(-1)).squeeze(-1) * mask
    got = likelihoods.log_likelihood("categorical", logits, characters, mask=mask)
    torch.testing.assert_close(got, by_hand.sum(1))
    # one-hot rows (how captions are stored) give the same as the indices
    one_hot = torch.nn.functional.one_hot(characters, 5).double()
    torch.testing.assert_close(likelihoods.log_likelihood("categorical", logits, one_hot, mask=mask), got)
    with pytest.raises(InvalidArgumentError, match="does not match"):
        likelihoods.log_likelihood("gaussian", output, target[:, :2])
    with pytest.raises(InvalidArgumentError, match="likelihood"):
        likelihoods.log_likelihood("poisson", output, target)


def test_priors_and_posterior_density_match_torch():
    from repscope.models.multimodal import likelihoods

    z = torch.randn(7, 3, dtype=torch.float64)
    torch.testing.assert_close(
        likelihoods.log_prior("normal", z), torch.distributions.Normal(0.0, 1.0).log_prob(z).sum(-1)
    )
    torch.testing.assert_close(
        likelihoods.log_prior("laplace", z), torch.distributions.Laplace(0.0, 1.0).log_prob(z).sum(-1)
    )
    mu, logvar = torch.randn(7, 3, dtype=torch.float64), torch.randn(7, 3, dtype=torch.float64)
    expected = torch.distributions.Normal(mu, torch.exp(0.5 * logvar)).log_prob(z).sum(-1)
    torch.testing.assert_close(likelihoods.log_normal(z, mu, logvar), expected)
    with pytest.raises(InvalidArgumentError, match="prior"):
        likelihoods.log_prior("cauchy", z)


def normal_default(output, target):
    # the default scale, 0.75
    return torch.distributions.Normal(output, 0.75).log_prob(target).sum((1, 2))

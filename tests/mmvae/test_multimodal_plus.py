"""MMVAE+ learns a toy pair through its shared code; log-likelihood estimates equal closed forms where they exist."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_multimodal_models import (
    CLASSES,
    SMALL_NETS,
    LabelEncoder,
    assert_both_directions,
    make_dmvae,
    toy_data,
    train_on_toy_pairs,
)
from torch import nn

from repscope.models.multimodal.mmvae_plus import ModalitySpecificMixtureVAE
from repscope.models.multimodal.models import (
    LikelihoodSpec,
    MixtureOfExpertsVAE,
    MixtureOfProductsVAE,
    ProductOfExpertsVAE,
)


def make_plus(shared: int = 2, private: int = 2) -> ModalitySpecificMixtureVAE:
    dmvae = make_dmvae(shared, private)  # the same networks: shared and private codes together
    torch.manual_seed(0)
    plus = ModalitySpecificMixtureVAE(
        dict(dmvae.encoders), dict(dmvae.decoders), dmvae.likelihoods, shared, private
    ).double()
    return plus


@pytest.mark.parametrize("objective, k", [("elbo", 1), pytest.param("dreg", 4, marks=pytest.mark.slow)])
def test_mmvae_plus_learns_both_directions_through_its_shared_code(objective, k):
    net = make_plus()
    assert_both_directions(net, train_on_toy_pairs(net, objective, k))


def test_mmvae_plus_cross_reconstruction_uses_the_auxiliary_prior():
    """The other modality's code in the cross term comes from r_n: its learned scale gets a gradient; the
    modality's own private posterior never reaches another modality's decoder."""
    inputs, _ = toy_data(64, seed=0)
    net = make_plus()
    loss = net.loss(inputs, generator=torch.Generator().manual_seed(0))
    loss.backward()
    for name in ("vector", "label"):
        assert net.auxiliary_log_scale[name].grad is not None
        assert net.auxiliary_log_scale[name].grad.abs().sum() > 0


@pytest.mark.parametrize("make_net", [make_plus, make_dmvae], ids=["mmvae-plus", "dmvae"])
def test_a_modality_missing_for_some_examples_is_left_out_of_their_loss(make_net):
    inputs, _ = toy_data(64, seed=0)
    net = make_net()
    present = {"label": torch.tensor([True] * 32 + [False] * 32)}
    base = net.loss(inputs, present, generator=torch.Generator().manual_seed(3)).item()
    changed = {**inputs, "label": inputs["label"].clone()}
    changed["label"][40:] = (changed["label"][40:] + 1) % CLASSES
    again = net.loss(changed, present, generator=torch.Generator().manual_seed(3)).item()
    assert again == pytest.approx(base, rel=1e-12)
    # ... but it does change the loss of an example that has it
    changed["label"][:8] = (changed["label"][:8] + 1) % CLASSES
    assert net.loss(changed, present, generator=torch.Generator().manual_seed(3)).item() != pytest.approx(base)
    # generation from the vector alone for the examples without the label
    out = net.reconstruct(inputs, present)
    alone = net.reconstruct({"vector": inputs["vector"]})
    assert torch.allclose(out["label"][32:], alone["label"][32:])


# -- log-likelihood estimates ---------------------------------------------------------------------

W_DIAGONAL, SIGMA, OFFSET = torch.tensor([2.0, 1.0], dtype=torch.float64), 0.5, 0.3


class ExactEncoder(nn.Module):
    """For the linear Gaussian decoder x = W z + b + N(0, sigma^2) with W = [diag(w); 0]: the expert whose
    posterior is exact (with the prior expert for MVAE, alone for MMVAE)."""

    def __init__(self, with_prior_expert: bool) -> None:
        super().__init__()
        self.with_prior_expert = with_prior_expert

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        centred = (x - OFFSET)[:, :2]
        likelihood_precision = W_DIAGONAL**2 / SIGMA**2
        if self.with_prior_expert:  # the product with N(0, I) gives the posterior
            return centred / W_DIAGONAL, (-torch.log(likelihood_precision)).expand_as(centred)
        precision = 1.0 + likelihood_precision
        mean = (W_DIAGONAL * centred / SIGMA**2) / precision
        return mean, (-torch.log(precision)).expand_as(centred)


class LinearDecoder(nn.Module):
    def forward(self, z: torch.Tensor) -> torch.Tensor:
        x = torch.zeros(*z.shape[:-1], 3, dtype=z.dtype)
        x[..., :2] = W_DIAGONAL * z
        return x + OFFSET


@pytest.mark.parametrize(
    "model", [ProductOfExpertsVAE, MixtureOfExpertsVAE, MixtureOfProductsVAE], ids=["mvae", "mmvae", "mopoe"]
)
def test_the_log_likelihood_estimate_of_an_exact_posterior_is_the_closed_form(model):
    """log p(x) = log N(x; b, W W^T + sigma^2 I); with the exact posterior every importance weight equals p(x)."""
    torch.manual_seed(0)
    label_decoder = nn.Sequential(nn.Linear(2, CLASSES), nn.Unflatten(1, (1, CLASSES)))
    net = model(
        {"vector": ExactEncoder(with_prior_expert=model is ProductOfExpertsVAE), "label": LabelEncoder(CLASSES)},
        {"vector": LinearDecoder(), "label": label_decoder},
        {"vector": LikelihoodSpec("gaussian", SIGMA, weight=7.0), "label": LikelihoodSpec("categorical")},
        latent_dim=2,
    ).double()
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 2
    covariance = torch.diag(torch.cat([W_DIAGONAL**2, torch.zeros(1, dtype=torch.float64)])) + SIGMA**2 * torch.eye(3)
    exact = torch.distributions.MultivariateNormal(torch.full((3,), OFFSET, dtype=torch.float64), covariance)
    weights = net.log_likelihood_weights({"vector": x}, {"vector": x}, 7, generator=torch.Generator().manual_seed(2))
    estimate = torch.logsumexp(weights, 0) - math.log(7)
    # the likelihood weight (7) is a training choice and is left out of the estimate
    assert torch.allclose(estimate, exact.log_prob(x), atol=1e-9)
    assert torch.allclose(weights, weights[:1].expand_as(weights), atol=1e-9)  # zero variance


@pytest.mark.parametrize("name", ["mmvae", "dmvae", "mmvae-plus"])
def test_a_trained_task_gives_latents_decodings_and_log_likelihoods(tmp_path, name):
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit
    from repscope.train.registry import task_class

    private = {"private_dim": 2} if task_class(name).private_latents else {}  # only those models take it
    config = TrainConfig(
        model=Named(name=name, params={"latent_dim": 6, **private, "modalities": SMALL_NETS}),
        data=Named(name="cdsprites", params={"level": 1, "train_size": 128, "val_size": 32, "test_size": 32}),
        trainer=TrainerSection(max_epochs=1),
        batch_size=32,
    )
    outcome = fit(config, out=tmp_path / "run")
    task, data = outcome.task, outcome.data
    curves = (tmp_path / "run" / "tables" / "training_curves.csv").read_text().splitlines()[0]
    for column in ("val_recon_image", "val_recon_text", "val_kl_image", "val_kl_text"):
        assert column in curves
    test = data.batch("test", np.arange(12), ["image", "text", "mask"])
    latents = task.encode({"image": test["image"], "text": test["text"]})
    assert latents.shape == (12, 6) and np.isfinite(latents).all()
    # cross-generation from a posterior sample: seeded, and not the posterior mean's decoding
    sampled = task.generate({"text": test["text"]}, seed=3, sample=True)["image"]
    assert np.array_equal(sampled, task.generate({"text": test["text"]}, seed=3, sample=True)["image"])
    assert not np.allclose(sampled, task.generate({"text": test["text"]}, seed=3)["image"])
    decoded = task.decode(latents[:3])
    assert decoded["image"].shape == (3, 3, 64, 64) and decoded["text"].shape[0] == 3
    # the mean of the importance weights grows with K (Burda et al.'s bound tightens; averaged over examples)
    given = {"image": test["image"], "text": test["text"]}
    one = task.log_likelihood(given, k=1, seed=0)
    many = task.log_likelihood(given, k=64, seed=0)
    assert one.shape == many.shape == (12,) and np.isfinite(many).all()
    assert many.mean() >= one.mean()
    # the joint of two modalities is less likely than either alone (log p(x, y) <= log p(x) up to MC error)
    image_only = task.log_likelihood({"image": test["image"]}, k=64, seed=0)
    assert many.mean() < image_only.mean()


@pytest.mark.parametrize("subsampling, terms", [("singles", 1 + 3), ("all", 1 + 6)])
def test_mvae_sums_the_joint_and_the_subsampled_subsets(subsampling, terms):
    """Three modalities: joint + 3 singles, or joint + the 6 proper non-empty subsets."""
    coders = {name: (nn.Linear(2, 4), nn.Linear(2, 2)) for name in ("a", "b", "c")}

    class Split(nn.Module):
        def __init__(self, linear):
            super().__init__()
            self.linear = linear

        def forward(self, x):
            return self.linear(x).chunk(2, dim=-1)

    net = ProductOfExpertsVAE(
        {n: Split(e) for n, (e, _) in coders.items()},
        {n: d for n, (_, d) in coders.items()},
        {n: LikelihoodSpec() for n in coders},
        2,
        subsampling=subsampling,
    )
    calls = []
    original = net._component_objective
    net._component_objective = lambda mu, logvar, mask, *rest: (
        calls.append(mask.any(1).tolist()) or original(mu, logvar, mask, *rest)
    )
    inputs = {n: torch.randn(5, 2) for n in coders}
    assert torch.isfinite(net.loss(inputs))
    assert len(calls) == terms
    assert calls[0] == [True, True, True]  # the joint term first
    assert sorted(map(sum, calls[1:])) == ([1, 1, 1] if subsampling == "singles" else [1, 1, 1, 2, 2, 2])


@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 28, 28)])
def test_the_conv_image_nets_take_grey_and_colour_28x28_images(shape):
    from repscope.models.multimodal.networks import build_modality_networks

    encoder, decoder = build_modality_networks("conv-image", shape, 5)
    mu, logvar = encoder(torch.rand(4, *shape))
    assert mu.shape == logvar.shape == (4, 5)
    images = decoder(torch.randn(4, 5))
    assert images.shape == (4, *shape) and bool(((images >= 0) & (images <= 1)).all())


def test_the_sampled_mixture_estimator_decodes_once_and_has_the_stratified_mean():
    from test_multimodal_models import make

    inputs, _ = toy_data(64, seed=4)
    stratified = make(MixtureOfProductsVAE)
    sampled = make(MixtureOfProductsVAE)
    sampled.estimator = "sampled"
    decodes = []
    original = sampled.decode
    sampled.decode = lambda z: decodes.append(z.shape) or original(z)
    sampled.loss(inputs, generator=torch.Generator().manual_seed(0))
    assert len(decodes) == 1  # one z per example, not one per subset (3)
    sampled.decode = original
    with torch.no_grad():
        draws = {
            name: torch.tensor(
                [net.loss(inputs, generator=torch.Generator().manual_seed(s)).item() for s in range(300)]
            )
            for name, net in (("stratified", stratified), ("sampled", sampled))
        }
    error = (draws["sampled"].var() / 300 + draws["stratified"].var() / 300).sqrt()
    assert abs(draws["sampled"].mean() - draws["stratified"].mean()) < 4 * error
    assert draws["sampled"].var() > draws["stratified"].var()  # the price of one decoding

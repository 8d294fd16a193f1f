"""MVAE, MMVAE and MoPoE learn a toy two-modality dataset and infer from either modality."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.models.multimodal.models import (
    LikelihoodSpec,
    MixtureOfExpertsVAE,
    MixtureOfProductsVAE,
    MultimodalVAE,
    ProductOfExpertsVAE,
)

CLASSES, FEATURES, LATENT = 4, 8, 2


class Encoder(nn.Module):
    def __init__(self, inputs: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, 32), nn.ReLU(), nn.Linear(32, 2 * LATENT))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.net(x).chunk(2, dim=-1)
        return mu, logvar


class LabelEncoder(Encoder):
    def forward(self, label: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return super().forward(nn.functional.one_hot(label[:, 0], CLASSES).double())


def toy_data(n: int, seed: int) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """A class c drawn uniformly; modality "vector": the class's pattern + noise; "label": c itself."""
    generator = torch.Generator().manual_seed(seed)
    patterns = torch.eye(CLASSES, FEATURES, dtype=torch.float64) * 3.0
    classes = torch.randint(0, CLASSES, (n,), generator=generator)
    vector = patterns[classes] + 0.1 * torch.randn(n, FEATURES, generator=generator, dtype=torch.float64)
    return {"vector": vector, "label": classes[:, None]}, patterns


def make(model: type[MultimodalVAE]) -> MultimodalVAE:
    torch.manual_seed(0)
    net = model(
        encoders={"vector": Encoder(FEATURES), "label": LabelEncoder(CLASSES)},
        decoders={
            "vector": nn.Sequential(nn.Linear(LATENT, 32), nn.ReLU(), nn.Linear(32, FEATURES)),
            "label": nn.Sequential(
                nn.Linear(LATENT, 32), nn.ReLU(), nn.Linear(32, CLASSES), nn.Unflatten(1, (1, CLASSES))
            ),
        },
        likelihoods={"vector": LikelihoodSpec("gaussian", 0.3), "label": LikelihoodSpec("categorical")},
        latent_dim=LATENT,
    )
    return net.double()


def train_on_toy_pairs(net, objective: str = "elbo", k: int = 1, steps: int = 600) -> torch.Generator:
    """Adam on 512 toy pairs, 64 a step; the loss must fall. Returns the generator the steps drew from."""
    inputs, _ = toy_data(512, seed=1)
    optimiser = torch.optim.Adam(net.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(2)
    first = None
    for step in range(steps):
        batch = {name: value[(step * 64) % 512 : (step * 64) % 512 + 64] for name, value in inputs.items()}
        loss = net.loss(batch, objective=objective, k=k, generator=generator)
        first = first if first is not None else loss.item()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert loss.item() < first
    return generator


def assert_both_directions(net, generator: torch.Generator) -> None:
    """Label from the vector alone far above chance (25%); the vector from the label alone near its pattern.

    Answering the mean pattern (0.75 on the first four features) errs by (3 - 0.75)^2 + 3 * 0.75^2 = 6.75;
    MVAE's cross-generation learns slowest (its single-label ELBO never decodes the vector), so the bar is
    half of that. Models with private codes take a missing modality's from its prior (its mean).
    """
    test, patterns = toy_data(400, seed=9)
    from_vector = net.reconstruct({"vector": test["vector"]}, generator=generator)
    accuracy = (from_vector["label"][:, 0].argmax(-1) == test["label"][:, 0]).double().mean().item()
    assert accuracy > 0.9, accuracy
    from_label = net.reconstruct({"label": test["label"]}, generator=generator)
    error = ((from_label["vector"] - patterns[test["label"][:, 0]]) ** 2).sum(-1).mean().item()
    assert error < 6.75 / 2, error


@pytest.mark.parametrize(
    "model, objective, k",
    [
        (ProductOfExpertsVAE, "elbo", 1),
        (MixtureOfExpertsVAE, "elbo", 1),
        (MixtureOfExpertsVAE, "dreg", 4),
        (MixtureOfProductsVAE, "elbo", 1),
        (ProductOfExpertsVAE, "iwae", 4),
    ],
    ids=["mvae-elbo", "mmvae-elbo", "mmvae-dreg", "mopoe-elbo", "mvae-iwae"],
)
def test_each_model_learns_both_directions_of_a_toy_pair(model, objective, k):
    net = make(model)
    assert_both_directions(net, train_on_toy_pairs(net, objective, k))


def test_missing_modalities_per_example_are_left_out():
    inputs, _ = toy_data(6, seed=3)
    net = make(MixtureOfProductsVAE)
    present = {"vector": torch.tensor([True, True, False, True, False, True]), "label": torch.ones(6, dtype=torch.bool)}
    mu, logvar, available = net.posterior(inputs, present)
    # subsets (vector), (label), (vector, label): the first and last need the vector
    assert available[0].tolist() == present["vector"].tolist() and available[1].all()
    assert available[2].tolist() == present["vector"].tolist()
    loss = net.loss(inputs, present, generator=torch.Generator().manual_seed(0))
    assert torch.isfinite(loss)
    # the vector of an example without it does not change the loss
    changed = {**inputs, "vector": inputs["vector"].clone()}
    changed["vector"][2] += 100.0
    again = net.loss(changed, present, generator=torch.Generator().manual_seed(0))
    assert again.item() == pytest.approx(loss.item(), rel=1e-12)


def test_bad_settings_are_refused():
    networks = ({"a": Encoder(2)}, {"a": nn.Linear(2, 2)}, {"a": LikelihoodSpec()}, 2)
    with pytest.raises(InvalidArgumentError, match="subsampling"):
        ProductOfExpertsVAE(*networks, subsampling="pairs")
    with pytest.raises(InvalidArgumentError, match="estimator"):
        MixtureOfProductsVAE(*networks, estimator="stratifed")
    with pytest.raises(InvalidArgumentError, match="same modalities"):
        ProductOfExpertsVAE({"a": Encoder(2)}, {"b": nn.Linear(2, 2)}, {"a": LikelihoodSpec()}, 2)
    with pytest.raises(NotImplementedError):  # the shared part alone joins no experts
        MultimodalVAE(*networks).loss({"a": torch.zeros(3, 2)})
    net = make(ProductOfExpertsVAE)
    inputs, _ = toy_data(4, seed=0)
    with pytest.raises(InvalidArgumentError, match="objective"):
        net.loss(inputs, objective="vimco")


def test_image_and_caption_networks_train_on_cdsprites_level_1():
    """The paper's pairing: CdSprites+ images (fc-image) and one-hot captions (text-transformer)."""
    from repscope.data.multimodal.datasets import cdsprites_dataset
    from repscope.models.multimodal.networks import build_modality_networks

    data = cdsprites_dataset(level=1, train_size=64, test_size=8, val_size=8, seed=0)  # streamed: with captions
    batch = {name: torch.from_numpy(value) for name, value in data.batch("train", np.arange(64)).items()}
    images = batch["image"].float() / 255.0
    text, mask = batch["text"].float(), batch["mask"]
    assert tuple(text.shape[1:]) == tuple(data.fields["text"].shape)
    torch.manual_seed(0)
    image_nets = build_modality_networks("fc-image", tuple(images.shape[1:]), 8, hidden=64)
    text_nets = build_modality_networks("text-transformer", tuple(text.shape[1:]), 8, width=32, layers=1, hidden=64)
    for model in (ProductOfExpertsVAE, MixtureOfExpertsVAE, MixtureOfProductsVAE):
        net = model(
            {"image": image_nets[0], "text": text_nets[0]},
            {"image": image_nets[1], "text": text_nets[1]},
            {"image": LikelihoodSpec("gaussian", 0.75), "text": LikelihoodSpec("categorical")},
            8,
        )
        optimiser = torch.optim.Adam(net.parameters(), lr=1e-3)
        inputs = {"image": images, "text": text}
        losses = []
        for _ in range(15):
            loss = net.loss(inputs, feature_masks={"text": mask}, generator=torch.Generator().manual_seed(1))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
        assert losses[-1] < losses[0], (model, losses)
        out = net.reconstruct({"text": text})
        assert out["image"].shape == images.shape and out["text"].shape == text.shape


SMALL_NETS = {
    "image": {"field": "image", "network": "fc-image", "params": {"hidden": 64}, "likelihood": "gaussian"},
    "text": {
        "field": "text",
        "network": "text-transformer",
        "params": {"width": 32, "layers": 1, "hidden": 64},
        "likelihood": "categorical",
        "mask": "mask",
    },
}


@pytest.mark.parametrize("name", ["mvae", "mopoe"])
def test_the_training_entry_point_fits_a_multimodal_vae_on_cdsprites(tmp_path, name):
    import pandas as pd

    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit, load_task

    config = TrainConfig(
        model=Named(name=name, params={"latent_dim": 8, "modalities": SMALL_NETS}),
        data=Named(name="cdsprites", params={"level": 1, "train_size": 256, "val_size": 64, "test_size": 64}),
        trainer=TrainerSection(max_epochs=4),
        batch_size=32,
    )
    outcome = fit(config, out=tmp_path / "run")
    curves = pd.read_csv(tmp_path / "run" / "tables" / "training_curves.csv")
    assert curves["val_loss"].iloc[-1] < curves["val_loss"].iloc[0]  # it learns
    assert np.isfinite(outcome.metrics["test_loss"])
    assert set(outcome.task.batch_fields) == {"image", "text", "mask"}
    # the run directory gives the same model back
    again = load_task(tmp_path / "run")
    for key, value in outcome.task.state_dict().items():
        assert torch.equal(value, again.state_dict()[key])


def test_a_modality_naming_a_missing_field_or_key_is_one_clear_error(tmp_path):
    from repscope.train.config import Named, TrainConfig
    from repscope.train.fitting import fit

    data = Named(name="cdsprites", params={"level": 1, "train_size": 32, "val_size": 8, "test_size": 8})
    wrong_field = {**SMALL_NETS, "text": {**SMALL_NETS["text"], "field": "caption"}}
    with pytest.raises(InvalidArgumentError, match="modalities.text.field"):
        fit(TrainConfig(model=Named(name="mmvae", params={"modalities": wrong_field}), data=data), out=tmp_path / "a")
    typo = {**SMALL_NETS, "image": {**SMALL_NETS["image"], "likelyhood": "laplace"}}
    with pytest.raises(InvalidArgumentError, match="likelyhood"):
        fit(TrainConfig(model=Named(name="mmvae", params={"modalities": typo}), data=data), out=tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


class OracleTask:
    """Answers every direction perfectly from the evaluation's own test samples (a stand-in model)."""

    modalities = {"image": {}, "text": {}}

    def __init__(self, level: int, n: int, seed: int) -> None:
        from repscope.data.multimodal.datasets import cdsprites_dataset
        from repscope.studies.multimodal.evaluate import EVALUATION_SEED_OFFSET

        data = cdsprites_dataset(level=level, train_size=1, val_size=1, test_size=n, seed=seed + EVALUATION_SEED_OFFSET)
        self.test = data.batch("test", np.arange(n), ["image", "text", "mask"])

    def _spoken(self) -> np.ndarray:
        # the captions ended by two spaces (class 0) and followed by anything, as a trained decoder writes
        text = self.test["text"].copy()
        text[~self.test["mask"], 0] = 1.0
        for row, length in enumerate(self.test["mask"].sum(-1)):
            text[row, length + 2 :] = 0.0
            text[row, length + 2 :, 5] = 1.0  # 'e': not part of the caption
        return text

    def generate(self, given, seed=0, sample=False):
        return {"image": self.test["image"] / 255.0, "text": self._spoken()}

    def sample(self, n, seed=0):
        return {"image": self.test["image"][:n] / 255.0, "text": self._spoken()[:n]}


def test_evaluation_outputs_round_trip_a_perfect_model(tmp_path):
    from repscope.data.multimodal.captions import decode_captions
    from repscope.metrics.multimodal import coherency
    from repscope.studies.multimodal.coherency import read_captions, read_output_images
    from repscope.studies.multimodal.evaluate import write_cdsprites_outputs

    oracle = OracleTask(level=2, n=24, seed=5)
    folder = write_cdsprites_outputs(oracle, 2, 24, 5, tmp_path / "outputs")
    truth = read_captions(folder / "image_to_text" / "truth.txt")
    assert truth == decode_captions(oracle.test["text"], oracle.test["mask"])
    written = read_captions(folder / "image_to_text" / "captions.txt")
    assert written == truth  # padding spaces are not part of a caption
    images = read_output_images(folder / "text_to_image" / "images.npy")
    assert np.array_equal(images, oracle.test["image"].transpose(0, 2, 3, 1))
    from repscope.studies.multimodal.coherency import _truth_table

    table = _truth_table(2, truth, folder / "image_to_text" / "truth.txt")
    assert coherency.image_to_text(2, table, written)["strict"] == 100.0


def test_evaluate_refuses_what_is_not_a_cdsprites_multimodal_run(tmp_path):
    from repscope.studies.multimodal.evaluate import evaluate_run

    with pytest.raises(InvalidArgumentError, match="config.yaml"):
        evaluate_run(tmp_path)
    (tmp_path / "config.yaml").write_text("model: {name: lenet5}\ndata: {name: morpho-mnist}\n")
    with pytest.raises(InvalidArgumentError, match="not cdsprites"):
        evaluate_run(tmp_path)
    with pytest.raises(InvalidArgumentError, match="--n"):
        evaluate_run(tmp_path, n=0)


def test_a_caption_ends_with_two_scored_spaces_and_padding_is_hidden_from_the_encoder():
    from repscope.data.multimodal.datasets import cdsprites_dataset
    from repscope.train.datamodule import field_to_tensor
    from repscope.train.tasks.multimodal import MoPoETask

    data = cdsprites_dataset(level=2, train_size=6, val_size=1, test_size=1)
    specs = {name: {"shape": list(spec.shape), "classes": spec.classes} for name, spec in data.fields.items()}
    task = MoPoETask(field_specs=specs)
    arrays = data.batch("train", np.arange(6), ["image", "text", "mask"])
    batch = {name: field_to_tensor(values, data.fields[name].kind) for name, values in arrays.items()}
    inputs, masks, targets = task._inputs(batch)
    padding = ~batch["mask"]
    assert padding.any()
    assert torch.all(inputs["text"][padding] == 0)  # the encoder sees padding as all-zero rows
    lengths = batch["mask"].sum(-1)
    for row, length in enumerate(lengths.tolist()):
        # scored: the caption and the two spaces that end it, nothing after
        expected = torch.zeros(batch["mask"].shape[1], dtype=torch.bool)
        expected[: length + 2] = True
        assert torch.equal(masks["text"][row], expected)
        assert torch.all(targets["text"][row, length : length + 2, 0] == 1)
    assert torch.equal(targets["text"][~padding], inputs["text"][~padding])


def make_dmvae(shared: int = 2, private: int = 2):
    from repscope.models.multimodal.dmvae import PrivateSharedVAE

    size = shared + private

    class Coder(nn.Module):
        def __init__(self, inputs: int, one_hot: bool = False) -> None:
            super().__init__()
            self.one_hot = one_hot
            self.net = nn.Sequential(nn.Linear(inputs, 32), nn.ReLU(), nn.Linear(32, 2 * size))

        def forward(self, x):
            x = nn.functional.one_hot(x[:, 0], CLASSES).double() if self.one_hot else x
            return self.net(x).chunk(2, dim=-1)

    torch.manual_seed(0)
    return PrivateSharedVAE(
        {"vector": Coder(FEATURES), "label": Coder(CLASSES, one_hot=True)},
        {
            "vector": nn.Sequential(nn.Linear(size, 32), nn.ReLU(), nn.Linear(32, FEATURES)),
            "label": nn.Sequential(
                nn.Linear(size, 32), nn.ReLU(), nn.Linear(32, CLASSES), nn.Unflatten(1, (1, CLASSES))
            ),
        },
        {"vector": LikelihoodSpec("gaussian", 0.3), "label": LikelihoodSpec("categorical")},
        shared,
        private,
    ).double()


def test_dmvae_learns_both_directions_through_its_shared_code():
    net = make_dmvae()
    assert_both_directions(net, train_on_toy_pairs(net))
    inputs, _ = toy_data(8, seed=1)
    with pytest.raises(InvalidArgumentError, match="ELBO"):
        net.loss(inputs, objective="iwae")


def test_dmvae_trains_through_the_framework(tmp_path):
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    config = TrainConfig(
        model=Named(name="dmvae", params={"latent_dim": 6, "private_dim": 2, "modalities": SMALL_NETS}),
        data=Named(name="cdsprites", params={"level": 1, "train_size": 128, "val_size": 32, "test_size": 32}),
        trainer=TrainerSection(max_epochs=2),
        batch_size=32,
    )
    outcome = fit(config, out=tmp_path / "run")
    assert np.isfinite(outcome.metrics["test_loss"])
    joint = outcome.task.sample(3, seed=1)
    assert joint["image"].shape == (3, 3, 64, 64) and joint["text"].shape[0] == 3
    generated = outcome.task.generate({"text": np.zeros((2, *joint["text"].shape[1:]), np.float32)})
    assert generated["image"].shape == (2, 3, 64, 64)

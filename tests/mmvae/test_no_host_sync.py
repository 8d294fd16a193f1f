"""A training step of every multimodal VAE reads nothing back to the host (issue 27).

On an accelerator, a host read of a tensor (``bool(t)``, ``t.item()``, ``t.tolist()``, ``int(t)``,
``float(t)``, an index whose size depends on the data, a copy between host and device) makes the CPU wait
for the device before it can queue the next kernel. There is no accelerator here, so the tests catch the
reads two ways: the Python conversions raise during ``training_step`` (run by a Lightning ``Trainer``, so
that ``self.log`` is part of it), and a dispatch mode records the aten calls that wait for the device or copy
between host and device; the meta device, where no value can be read at all, stands in for the accelerator.
The checks that read masks on the CPU are told they are on an accelerator (``may_read`` False).
"""

from __future__ import annotations

import logging

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from host_reads import no_host_reads  # tests/host_reads.py (tests/ is on the path of its conftest)
from repscope.data.multimodal.datasets import cdsprites_dataset
from repscope.errors import InvalidArgumentError
from repscope.models.multimodal import experts
from repscope.train.datamodule import field_to_tensor
from repscope.train.registry import MODELS, task_class
from repscope.train.tasks import semi_supervised
from repscope.train.tasks.semi_supervised import SemiSupervisedVAETask, labelled_mask, labelled_on_device

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning", "ignore::FutureWarning")

NAMES = [name for name, entry in MODELS.items() if entry.family == "multimodal"]
VARIANTS = [
    *((name, {}) for name in NAMES),
    ("mvae", {"objective": "dreg", "k": 2, "subsampling": "all"}),
    ("mmvae", {"estimator": "sampled"}),
    ("mmvae", {"objective": "dreg", "k": 2}),
    ("mopoe", {"estimator": "sampled", "objective": "iwae", "k": 2}),
    ("mmvae-plus", {"objective": "dreg", "k": 2}),
    # the toolkit's accounting (gabinsane/multimodal-vae-comparison, multimodal_compare/models/mmvae_models.py)
    ("mvae", {"reconstruct": "all", "subsampling": "all"}),
    ("mmvae", {"bound": "m_elbo"}),
    ("mopoe", {"prior_expert": "full_subset"}),
    ("dmvae", {"kl_accounting": "toolkit"}),
]
NETWORKS = {
    "image": {"field": "image", "network": "fc-image", "params": {"hidden": 16}, "likelihood": "gaussian"},
    "text": {
        "field": "text",
        "network": "text-transformer",
        "params": {"width": 8, "layers": 1, "hidden": 16},
        "likelihood": "categorical",
        "mask": "mask",
        "pad_class": 0,
    },
}


@pytest.fixture(scope="module")
def cdsprites():
    """16 level-1 CdSprites+ rows (image, caption, its mask) as the data module gives them, and the field specs."""
    data = cdsprites_dataset(level=1, train_size=16, val_size=1, test_size=1, seed=0)
    arrays = data.batch("train", np.arange(16), ["image", "text", "mask"])
    batch = {name: field_to_tensor(values, data.fields[name].kind) for name, values in arrays.items()}
    specs = {name: {"shape": list(spec.shape), "classes": spec.classes} for name, spec in data.fields.items()}
    return batch, specs


@pytest.fixture
def as_on_an_accelerator(monkeypatch):
    """Mask checks behave as on an accelerator: they may not read a tensor."""
    monkeypatch.setattr(experts, "may_read", lambda tensor: False)


def build(name, specs, **params):
    torch.manual_seed(0)
    return task_class(name)(modalities=NETWORKS, latent_dim=3, field_specs=specs, **params)


@pytest.mark.parametrize("name", NAMES)
def test_a_lightning_training_step_reads_nothing_on_the_host(name, cdsprites, as_on_an_accelerator):
    batch, specs = cdsprites
    task = build(name, specs)
    step, outcomes = task.training_step, []

    def guarded_training_step(batch, batch_idx):
        with no_host_reads() as reads:
            loss = step(batch, batch_idx)  # the task's loss and its self.log
        outcomes.append((loss.detach(), reads.calls))
        return loss

    task.training_step = guarded_training_step
    rows = [{key: value[i] for key, value in batch.items()} for i in range(len(batch["image"]))]
    trainer = pl.Trainer(
        max_steps=2,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(task, train_dataloaders=DataLoader(rows, batch_size=8))
    assert len(outcomes) == 2  # both steps ran through the guard
    for loss, calls in outcomes:
        assert calls == []
        assert torch.isfinite(loss)


@pytest.mark.parametrize("name, params", VARIANTS)
def test_a_training_step_on_the_meta_device_reads_and_copies_nothing(name, params, cdsprites):
    # the meta device holds no values: a host read fails there, and a copy from the host shows in the record
    batch, specs = cdsprites
    task = build(name, specs, **params).to("meta")
    inputs = {key: value.to("meta") for key, value in batch.items()}
    with no_host_reads() as reads:
        loss = task.losses(inputs)["loss"]
        loss.backward()
    assert reads.calls == []
    assert loss.device.type == "meta" and loss.shape == ()


@pytest.mark.parametrize("name", NAMES)
def test_presence_masks_without_reading_them_give_the_same_loss(name, cdsprites, monkeypatch):
    # with masks, the CPU reads them to leave out a term no example has; on an accelerator that term is kept
    # with weight zero instead: the same loss (it comes last, so the same random numbers are drawn before it)
    batch, specs = cdsprites
    task = build(name, specs)
    inputs, masks, targets = task._inputs(batch)
    some = {"image": torch.arange(16) % 3 != 0, "text": torch.arange(16) % 3 != 1}  # every row has one
    no_text = {"image": torch.ones(16, dtype=torch.bool), "text": torch.zeros(16, dtype=torch.bool)}
    for present in (some, no_text):

        def loss(present=present):
            generator = torch.Generator().manual_seed(5)
            torch.manual_seed(5)
            return task.net.loss(inputs, present, feature_masks=masks, targets=targets, generator=generator)

        read = loss()
        with monkeypatch.context() as patch:
            patch.setattr(experts, "may_read", lambda tensor: False)
            with no_host_reads() as reads:
                unread = loss()
        assert reads.calls == []
        assert torch.equal(read, unread)


def test_the_mixture_component_draw_is_torch_multinomial_without_its_host_checks():
    present = torch.rand(3, 50, generator=torch.Generator().manual_seed(0)) < 0.5
    present[1] = True
    drawn = experts.choose_present(present, torch.Generator().manual_seed(7))
    weights = present.T.to(torch.float64)
    assert torch.equal(drawn, torch.multinomial(weights, 1, generator=torch.Generator().manual_seed(7)).squeeze(1))
    assert present[drawn, torch.arange(50)].all()
    present[:, 4] = False
    with pytest.raises(InvalidArgumentError, match="no modality"):
        experts.choose_present(present)  # read on the CPU
    assert experts.choose_present(present, check=False).shape == (50,)


# --------------------------------------------------------------------------------------------
# the semi-supervised VAEs' supervised term (the step of the VAE family itself is not this module's)

# the batch-share supervision reads each batch's own labelled rows (the default stream's step is checked on
# the meta device in tests/candle/test_semi_supervised_reference.py)
SMALL = {
    "latent_dim": 4,
    "supervised_factors": [1, 2],
    "factor_sizes": [1, 8, 8],
    "labelled_fraction": 0.3,
    "supervision": "batch_share",
}


def semi_batch(size: int = 32, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    images = torch.rand(size, 1, 28, 28, generator=generator)
    factors = torch.stack(
        [torch.zeros(size, dtype=torch.long), *torch.randint(0, 8, (2, size), generator=generator)], -1
    )
    return images, factors, torch.randint(0, 10_000, (size,), generator=generator)


def test_the_labelled_examples_are_hashed_on_the_device_with_the_same_bits():
    index = np.concatenate([np.arange(50_000), np.random.default_rng(0).integers(0, 2**62, 50_000), [2**63 - 1]])
    for seed in (0, 3, 2**33 + 1):
        for fraction in (0.0, 0.1, 0.5, 1.0):
            expected = labelled_mask(index, fraction, seed)
            assert np.array_equal(labelled_on_device(torch.as_tensor(index), fraction, seed).numpy(), expected)


def test_the_supervised_term_reads_nothing_after_the_first_batch_and_agrees_with_the_cpu(monkeypatch):
    images, factors, index = semi_batch()
    torch.manual_seed(0)
    task = SemiSupervisedVAETask(image_shape=(1, 28, 28), **SMALL)
    mean = torch.randn(32, 4, generator=torch.Generator().manual_seed(1), requires_grad=True)
    on_cpu = task.supervised_loss(mean, factors, index)
    (cpu_gradient,) = torch.autograd.grad(on_cpu["supervised"], mean)
    monkeypatch.setattr(semi_supervised, "_on_host", lambda tensor: False)  # as on an accelerator
    first = task.supervised_loss(mean, factors, index)  # the first batch is checked (read) once
    with no_host_reads() as reads:
        masked = task.supervised_loss(mean, factors, index)
        (masked_gradient,) = torch.autograd.grad(masked["supervised"], mean)
    assert reads.calls == []
    assert torch.equal(masked["labelled"], on_cpu["labelled"]) and 0 < float(on_cpu["labelled"]) < 32
    assert torch.allclose(masked["supervised"], on_cpu["supervised"], rtol=1e-6, atol=1e-6)
    assert torch.allclose(first["supervised"], masked["supervised"])
    assert torch.allclose(masked_gradient, cpu_gradient, rtol=1e-6, atol=1e-7)
    nobody = SemiSupervisedVAETask(image_shape=(1, 28, 28), **{**SMALL, "labelled_fraction": 0.0})
    assert float(nobody.supervised_loss(mean, factors, index)["supervised"]) == 0.0
    # on meta (no values) the whole loss runs after the first batch, with no copy from the host
    task.to("meta")
    on_meta = [tensor.to("meta") for tensor in (images, factors, index)]
    with no_host_reads() as reads:
        losses = task.losses(*on_meta)
        losses["loss"].backward()
    assert reads.calls == [] and losses["supervised"].device.type == "meta"


def test_bad_labels_are_refused_on_the_first_batch_of_an_accelerator(monkeypatch):
    images, factors, index = semi_batch()
    monkeypatch.setattr(semi_supervised, "_on_host", lambda tensor: False)
    labelled = torch.as_tensor(labelled_mask(index.numpy(), SMALL["labelled_fraction"]))
    bad = factors.clone()
    bad[labelled.nonzero()[0, 0], 2] = 8
    for broken, other in ((bad, index), (factors, -index)):
        task = SemiSupervisedVAETask(image_shape=(1, 28, 28), **SMALL)
        with pytest.raises(InvalidArgumentError, match="outside|non-negative"):
            task.losses(images, broken, other)
    task = SemiSupervisedVAETask(image_shape=(1, 28, 28), **SMALL)
    task.losses(images, factors, index)
    task.losses(images, bad, index)  # later batches are not read on an accelerator


@pytest.mark.parametrize("name", ["mvae", "mmvae-plus"])
def test_trainer_compile_traces_the_whole_multimodal_loss(name, cdsprites, monkeypatch):
    """``trainer.compile`` compiles what the step runs: the step calls ``net.loss``, never ``net(...)``, so
    compiling the child networks (as for the image families) traced nothing. Dynamo's ``eager`` backend
    stands in for inductor: the same tracing, no kernels to build, the same numbers as uncompiled."""
    from torch._dynamo.utils import counters

    from repscope.train.fitting import compile_networks

    batch, specs = cdsprites
    compiled_with = []
    real_compile = torch.compile

    def eager_compile(function, mode=None, **options):
        compiled_with.append(mode)
        return real_compile(function, backend="eager")

    monkeypatch.setattr(torch, "compile", eager_compile)
    torch._dynamo.reset()
    counters.clear()
    plain = build(name, specs)
    compiled = compile_networks(build(name, specs), "reduce-overhead")
    assert compiled_with == ["reduce-overhead"]  # one graph: the loss, in the mode asked for
    torch.manual_seed(1)
    expected = plain.losses(batch)["loss"]
    expected.backward()
    torch.manual_seed(1)
    loss = compiled.losses(batch)["loss"]
    loss.backward()
    # the encoders, the decoders and the objective were traced, as one graph (a graph break would split it)
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    assert counters["stats"]["calls_captured"] > 50
    assert torch.equal(loss, expected)
    gradients = [(p.grad, q.grad) for p, q in zip(plain.parameters(), compiled.parameters(), strict=True)]
    assert all(torch.equal(a, b) for a, b in gradients if a is not None)
    assert compiled.state_dict().keys() == plain.state_dict().keys()

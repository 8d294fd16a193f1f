"""The Raw Zero-Shot classifiers (All-CNN-C, Network in Network, ResNet, CapsNet): shapes for digits and
CIFAR images, parameter counts by hand, network parameters, the capsule formulas against hand values,
soft-labels, a checkpoint round trip and short trainings on real digits. Tiny sizes throughout."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
import torch

from repscope.errors import InvalidArgumentError
from repscope.models.networks import build_classifier, network_parameters
from repscope.models.zeroshot.capsnet import CapsNet, capsule_lengths, dynamic_routing, squash
from repscope.train.config import TrainConfig
from repscope.train.fitting import fit, load_task, read_checkpoint
from repscope.train.tasks import CapsNetTask, SupervisedTask
from repscope.train.tasks.capsule import margin_loss, reconstruction_error

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

SHAPES = ((1, 28, 28), (3, 32, 32))
# tiny versions of each network: every layer kind, a fraction of the cost
TINY = {
    "allconv": {"width": 0.05},
    "nin": {"width": 0.05},
    "resnet": {"depth": 8, "width": 4},
    "capsnet": {"conv_channels": 8, "primary_types": 2, "primary_dim": 4, "class_dim": 4},
}
SMALL_CAPSNET = {"conv_channels": 16, "primary_types": 4, "class_dim": 8}


def n_parameters(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def hand_squash(s: torch.Tensor) -> torch.Tensor:
    norm = s.norm(dim=-1, keepdim=True)
    return norm**2 / (1 + norm**2) * s / norm


# ---------------------------------------------------------------------------------------------
# networks


@pytest.mark.parametrize("name", sorted(TINY))
@pytest.mark.parametrize("shape", SHAPES)
def test_every_network_maps_digits_and_cifar_images_to_one_output_per_class(name, shape):
    outputs = 3 if shape[0] == 1 else 10
    torch.manual_seed(0)
    network = build_classifier(name, shape, outputs, TINY[name]).eval()
    with torch.no_grad():
        result = network(torch.rand(4, *shape))
    assert result.shape == (4, outputs) and torch.isfinite(result).all()
    other = SHAPES[1] if shape == SHAPES[0] else SHAPES[0]
    with pytest.raises(RuntimeError):  # built for its input channels: the other images are refused
        network(torch.rand(4, *other))


def resnet_parameters(channels: int, outputs: int, depth: int = 20, w: int = 16) -> int:
    """He et al.'s CIFAR ResNet counted layer by layer (convolutions without bias, each followed by a
    batch normalisation with a scale and a shift per map; projections where the width doubles)."""
    n = (depth - 2) // 6
    stem = channels * w * 9 + 2 * w
    stage1 = n * (2 * (w * w * 9 + 2 * w))

    def stage(narrow: int, wide: int) -> int:
        first = narrow * wide * 9 + 2 * wide + wide * wide * 9 + 2 * wide
        projection = narrow * wide + 2 * wide
        return first + projection + (n - 1) * 2 * (wide * wide * 9 + 2 * wide)

    return stem + stage1 + stage(w, 2 * w) + stage(2 * w, 4 * w) + 4 * w * outputs + outputs


def test_resnet20_has_the_hand_counted_parameters():
    assert resnet_parameters(3, 10) == 272_474  # He et al.: 0.27M
    assert n_parameters(build_classifier("resnet", (3, 32, 32), 10)) == 272_474
    assert n_parameters(build_classifier("resnet", (1, 28, 28), 10)) == resnet_parameters(1, 10)
    assert n_parameters(build_classifier("resnet", (1, 28, 28), 7, {"depth": 14, "width": 8})) == resnet_parameters(
        1, 7, depth=14, w=8
    )
    blocks = [m for m in build_classifier("resnet", (3, 32, 32), 10).modules() if type(m).__name__ == "BasicBlock"]
    assert len(blocks) == 9  # 3 stages of n = 3


def test_all_cnn_c_and_nin_have_the_hand_counted_parameters():
    def conv(inputs, outputs, kernel):
        return inputs * outputs * kernel * kernel + outputs

    all_cnn_c = (
        conv(3, 96, 3)
        + 2 * conv(96, 96, 3)
        + conv(96, 192, 3)
        + 3 * conv(192, 192, 3)
        + conv(192, 192, 1)
        + conv(192, 10, 1)
    )
    assert all_cnn_c == 1_369_738  # Springenberg et al.: 1.4M
    plain = build_classifier("allconv", (3, 32, 32), 10, {"batch_norm": False})
    assert n_parameters(plain) == all_cnn_c
    # normalised: each of the 9 convolutions trades its bias for a scale and a shift
    maps = 3 * 96 + 5 * 192 + 10
    assert n_parameters(build_classifier("allconv", (3, 32, 32), 10)) == all_cnn_c + maps
    nin = (
        conv(3, 192, 5)
        + conv(192, 160, 1)
        + conv(160, 96, 1)
        + conv(96, 192, 5)
        + 2 * conv(192, 192, 1)
        + conv(192, 192, 3)
        + conv(192, 192, 1)
        + conv(192, 10, 1)
    )
    assert n_parameters(build_classifier("nin", (3, 32, 32), 10, {"batch_norm": False})) == nin == 966_986


def test_capsnet_has_the_papers_parameter_count():
    grid = 6 * 6  # 28 -> 20 -> 6
    capsnet = 1 * 256 * 81 + 256 + 256 * 256 * 81 + 256 + 32 * grid * 10 * 16 * 8
    decoder = 160 * 512 + 512 + 512 * 1024 + 1024 + 1024 * 784 + 784
    assert n_parameters(build_classifier("capsnet", (1, 28, 28), 10, {"reconstruction": False})) == capsnet
    assert n_parameters(build_classifier("capsnet", (1, 28, 28), 10)) == capsnet + decoder
    assert (round(capsnet / 1e6, 1), round((capsnet + decoder) / 1e6, 1)) == (6.8, 8.2)  # Sabour et al.


def test_width_and_depth_change_the_size():
    for name in ("allconv", "nin"):
        full = n_parameters(build_classifier(name, (1, 28, 28), 10))
        half = n_parameters(build_classifier(name, (1, 28, 28), 10, {"width": 0.5}))
        assert 0.2 * full < half < 0.3 * full  # convolution weights scale with width squared
    assert n_parameters(build_classifier("resnet", (1, 28, 28), 10, {"width": 8})) == resnet_parameters(1, 10, w=8)
    assert n_parameters(build_classifier("resnet", (1, 28, 28), 10, {"depth": 32})) == resnet_parameters(1, 10, 32)
    small = build_classifier("capsnet", (1, 28, 28), 10, TINY["capsnet"])
    assert small.routing_weights.shape == (2 * 36, 10, 4, 4) and small.num_primary == 72


def test_network_params_are_checked_and_named():
    with pytest.raises(InvalidArgumentError, match=r"network 'allconv'.*'widht'.*takes width, batch_norm, dropout"):
        build_classifier("allconv", (1, 28, 28), 10, {"widht": 0.5})
    with pytest.raises(InvalidArgumentError, match=r"network 'lenet5'.*'width'.*takes none"):
        build_classifier("lenet5", (1, 28, 28), 10, {"width": 0.5})
    assert network_parameters("lenet5") == {} and network_parameters("resnet") == {"depth": 20, "width": 16}
    bad = [
        ("resnet", {"depth": 21}, "depth"),
        ("resnet", {"width": 2.5}, "width"),
        ("allconv", {"width": 0}, "width"),
        ("nin", {"batch_norm": "yes"}, "batch_norm"),
        ("capsnet", {"routing_iterations": 0}, "routing_iterations"),
        ("capsnet", {"primary_dim": True}, "primary_dim"),
    ]
    for name, params, key in bad:
        with pytest.raises(InvalidArgumentError, match=rf"network '{name}': {key}:"):
            build_classifier(name, (1, 28, 28), 10, params)
    with pytest.raises(InvalidArgumentError, match="num_outputs"):
        build_classifier("capsnet", (1, 28, 28), 1, TINY["capsnet"])
    with pytest.raises(InvalidArgumentError, match="image_shape"):
        build_classifier("capsnet", (1, 16, 16), 10, TINY["capsnet"])
    # through the task: the same errors, and only plain values are stored
    with pytest.raises(InvalidArgumentError, match=r"network 'resnet'.*'depht'"):
        SupervisedTask("resnet", network_params={"depht": 8})
    with pytest.raises(InvalidArgumentError, match=r"network_params\.width: must be a plain value"):
        SupervisedTask("allconv", network_params={"width": np.float32(0.5)})
    assert SupervisedTask("lenet5").hparams["network_params"] == {}
    assert SupervisedTask("allconv", network_params={"width": 0.1}).hparams["network_params"] == {"width": 0.1}


def test_a_config_with_an_unknown_network_param_fails_before_writing(tmp_path):
    config = TrainConfig.model_validate(
        {
            "model": {"name": "resnet", "params": {"network_params": {"deepth": 8}}},
            "data": {"name": "digits", "params": {"source": "mnist-sample", "train_size": 50, "target": "label"}},
            "trainer": {"max_epochs": 1, "logger": "none"},
        }
    )
    with pytest.raises(InvalidArgumentError, match=r"network 'resnet'.*'deepth'"):
        fit(config, out=tmp_path / "run", report=False)
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------------------------------
# capsule formulas


def test_squash_and_lengths_match_hand_values():
    s = torch.tensor([[3.0, 4.0], [0.0, 0.0], [0.0, 0.5]], dtype=torch.float64)
    v = squash(s)
    # |s| = 5: length 25/26 along (3, 4)/5; zero stays zero; |s| = 0.5: length 0.25/1.25 = 0.2
    expected = torch.tensor([[25 / 26 * 0.6, 25 / 26 * 0.8], [0.0, 0.0], [0.0, 0.2]], dtype=torch.float64)
    torch.testing.assert_close(v, expected, rtol=1e-7, atol=1e-12)
    torch.testing.assert_close(capsule_lengths(v), torch.tensor([25 / 26, 1e-4, 0.2], dtype=torch.float64))
    s.requires_grad_(True)
    capsule_lengths(squash(s)).sum().backward()
    assert torch.isfinite(s.grad).all()  # the eps inside the square roots: no NaN at the zero vector


def test_margin_and_reconstruction_losses_match_hand_values():
    lengths = torch.tensor([[0.95, 0.2, 0.05], [0.5, 0.3, 0.0]])
    targets = torch.tensor([0, 1])
    # row 0: present 0.95 >= 0.9 -> 0; absent 0.2 -> 0.5 * 0.1^2 = 0.005; absent 0.05 < 0.1 -> 0
    # row 1: present 0.3 -> 0.6^2 = 0.36; absent 0.5 -> 0.5 * 0.4^2 = 0.08; absent 0 -> 0
    assert margin_loss(lengths, targets).item() == pytest.approx((0.005 + 0.44) / 2, abs=1e-7)
    images = torch.zeros(2, 1, 2, 2)
    reconstructed = torch.stack([torch.full((1, 2, 2), 0.5), torch.ones(1, 2, 2)])
    assert reconstruction_error(reconstructed, images).item() == pytest.approx((4 * 0.25 + 4 * 1.0) / 2)


def test_one_routing_iteration_is_the_squashed_uniform_sum():
    torch.manual_seed(0)
    network = CapsNet(5, (1, 28, 28), **TINY["capsnet"], routing_iterations=1)
    images = torch.rand(3, 1, 28, 28)
    with torch.no_grad():
        u = network.primary_capsules(images)
        u_hat = torch.einsum("nkdp,bnp->bnkd", network.routing_weights, u)
        expected = hand_squash(u_hat.sum(1) / 5)
        torch.testing.assert_close(network.capsules(images), expected, rtol=1e-5, atol=1e-6)
    # a second iteration: logits b = u_hat . v, couplings softmax over the classes
    u_hat = torch.randn(2, 30, 5, 4)
    first = hand_squash(u_hat.sum(1) / 5)
    agreement = torch.einsum("bnkd,bkd->bnk", u_hat, first)
    second = hand_squash(torch.einsum("bnk,bnkd->bkd", torch.softmax(agreement, 2), u_hat))
    torch.testing.assert_close(dynamic_routing(u_hat, 1), first, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(dynamic_routing(u_hat, 2), second, rtol=1e-5, atol=1e-6)
    assert (second - first).abs().max() > 0.05  # routing changes the capsules


def test_capsule_lengths_stay_in_the_unit_interval():
    torch.manual_seed(0)
    network = CapsNet(4, (3, 32, 32), **TINY["capsnet"]).eval()
    with torch.no_grad():
        lengths = network(torch.rand(6, 3, 32, 32))
        long = capsule_lengths(dynamic_routing(torch.randn(2, 50, 4, 8) * 30, 3))
    assert lengths.shape == (6, 4) and (lengths >= 0).all() and (lengths < 1).all()
    assert (long > 0.9).any() and (long < 1).all()
    images = torch.rand(6, 3, 32, 32)
    with torch.no_grad():
        capsules = network.capsules(images)
        longest = network.reconstruct(capsules)
        chosen = network.reconstruct(capsules, torch.tensor([0, 1, 2, 3, 0, 1]))
    assert longest.shape == chosen.shape == (6, 3, 32, 32) and 0 <= longest.min() and longest.max() <= 1
    assert not torch.equal(longest, chosen)  # a different capsule kept, a different image
    with pytest.raises(InvalidArgumentError, match="decoder"):
        CapsNet(4, (1, 28, 28), **TINY["capsnet"], reconstruction=False).reconstruct(capsules)


# ---------------------------------------------------------------------------------------------
# tasks


def test_soft_labels_are_probability_rows():
    torch.manual_seed(0)
    images = np.random.default_rng(0).integers(0, 256, (7, 28, 28), dtype=np.uint8)
    task = SupervisedTask("resnet", num_outputs=4, network_params=TINY["resnet"])
    soft = task.soft_labels(images, batch_size=3)
    assert soft.dtype == np.float64 and soft.shape == (7, 4)
    np.testing.assert_allclose(soft.sum(1), 1.0, rtol=0, atol=1e-12)
    logits = task.outputs(images, batch_size=3).double()
    np.testing.assert_allclose(soft, torch.softmax(logits, 1).numpy(), rtol=1e-12)
    caps = CapsNetTask(num_outputs=4, network_params=TINY["capsnet"])
    soft = caps.soft_labels(images)
    lengths = caps.outputs(images).double().numpy()
    assert soft.dtype == np.float64 and soft.shape == (7, 4) and (soft > 0).all()
    np.testing.assert_allclose(soft.sum(1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(soft * lengths.sum(1, keepdims=True), lengths, rtol=1e-12)  # lengths, normalised
    assert not np.allclose(soft, np.exp(lengths) / np.exp(lengths).sum(1, keepdims=True))  # not a softmax
    with pytest.raises(InvalidArgumentError, match="regression"):
        SupervisedTask("mlp", "regression", num_outputs=1).soft_labels(images)
    with pytest.raises(InvalidArgumentError, match="images"):
        task.soft_labels(np.zeros((2, 32, 32), np.uint8))


def test_capsnet_task_refuses_what_it_cannot_train():
    with pytest.raises(InvalidArgumentError, match="kind.*regression"):
        CapsNetTask(kind="regression", num_outputs=1, network_params=TINY["capsnet"])
    with pytest.raises(InvalidArgumentError, match="network.*capsule.*'lenet5'"):
        CapsNetTask(network="lenet5")
    with pytest.raises(InvalidArgumentError, match="reconstruction_weight"):
        CapsNetTask(network_params=TINY["capsnet"], reconstruction_weight=-1.0)


def test_the_capsnet_loss_adds_the_weighted_reconstruction_error():
    torch.manual_seed(0)
    task = CapsNetTask(num_outputs=3, network_params=TINY["capsnet"], reconstruction_weight=0.5).train()
    images, targets = torch.rand(4, 1, 28, 28), torch.tensor([0, 1, 2, 0])
    loss, lengths, _ = task._step({"image": images, "target": targets})
    capsules = task.network.capsules(images)
    expected = margin_loss(lengths, targets) + 0.5 * reconstruction_error(
        task.network.reconstruct(capsules, targets), images
    )
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert loss.item() > margin_loss(lengths, targets).item() + 1.0  # a random decoder errs by far more than 2


def test_older_checkpoints_without_network_params_load(tmp_path):
    task = SupervisedTask("lenet5")
    hyper_parameters = {k: v for k, v in task.hparams.items() if k != "network_params"}
    path = tmp_path / "old.ckpt"
    torch.save({"state_dict": task.state_dict(), "hyper_parameters": hyper_parameters}, path)
    loaded = load_task(path, model="lenet5")
    assert loaded.hparams["network_params"] == {}
    images = np.random.default_rng(0).integers(0, 256, (3, 28, 28), dtype=np.uint8)
    np.testing.assert_array_equal(loaded.soft_labels(images), task.soft_labels(images))


# ---------------------------------------------------------------------------------------------
# short trainings on real digits


def train_config(name: str, params: dict, train_size: int, epochs: int) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "model": {"name": name, "params": params},
            "data": {
                "name": "digits",
                "params": {"source": "mnist-sample", "train_size": train_size, "test_size": 300, "target": "label"},
            },
            "trainer": {"max_epochs": epochs, "logger": "none"},
            "batch_size": 32,
            "seed": 0,
        }
    )


@pytest.fixture(scope="module")
def capsnet_run(tmp_path_factory):
    config = train_config("capsnet", {"network_params": SMALL_CAPSNET}, train_size=800, epochs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(config, out=tmp_path_factory.mktemp("capsnet") / "run", report=False)


def test_a_capsnet_run_reloads_with_identical_soft_labels(capsnet_run):
    images = capsnet_run.data.arrays("test", ["image"])["image"]
    reloaded = load_task(capsnet_run.run.root)
    assert isinstance(reloaded, CapsNetTask)
    np.testing.assert_array_equal(reloaded.soft_labels(images), capsnet_run.task.soft_labels(images))
    stored = read_checkpoint(capsnet_run.run.root / "checkpoints" / "final.ckpt")["hyper_parameters"]
    assert stored["network_params"] == SMALL_CAPSNET and stored["reconstruction_weight"] == 0.0005
    assert stored["network"] == "capsnet" and stored["kind"] == "classification"


def test_a_small_capsnet_learns_digits(capsnet_run):
    # 720 digits, one epoch: chance is 0.1; seeds 0-2 reach 0.67-0.79
    assert capsnet_run.metrics["test_accuracy"] > 0.5
    images = capsnet_run.data.arrays("test", ["image"])["image"]
    lengths = capsnet_run.task.outputs(images)
    assert (lengths >= 0).all() and (lengths < 1).all()


@pytest.mark.slow  # a learning claim; tests/test_contracts.py builds, steps and reloads the resnet
def test_a_small_resnet_learns_digits(tmp_path):
    # the cosine schedule ends on small steps, so the batch-norm running statistics that the test
    # accuracy uses catch up with the weights (at a constant 0.01, one seed in three ended at chance)
    params = {"network_params": {"depth": 8, "width": 8}, "lr": 0.005, "schedule": "cosine"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = fit(train_config("resnet", params, 1000, 3), out=tmp_path / "run", report=False)
    # 900 digits, three epochs: chance is 0.1; seeds 0-4 reach 0.70-0.75
    assert outcome.metrics["test_accuracy"] > 0.5

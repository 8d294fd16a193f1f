"""``repscope invariance test`` and ``repscope zeroshot attack`` on models from outside repscope: a network
factory in a module file (``file.py:factory``, ``pkg.module:factory``, with ``--model-arg`` and
``--weights``) and the same network saved as TorchScript give the same robust accuracy and attack counts;
a model from outside without ``--data`` and a pickle are refused in one line, before anything is written.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

# a classifier of 28x28 grey images as a user writes it: two convolutions (the paper's CONV-1 / CONV-2
# positions), the second one 28x28 template per class, and a factory whose seed decides the initial weights
TINY_MODULE = textwrap.dedent(
    """
    import torch
    from torch import nn


    class TemplateNet(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 1, 1)
            self.conv2 = nn.Conv2d(1, num_classes, 28)

        def forward(self, images):
            return self.conv2(self.conv1(images)).flatten(1)


    def make(num_classes=10, seed=0):
        torch.manual_seed(seed)
        return TemplateNet(num_classes)
    """
)
DATA_PARAMS = {"source": "mnist-sample", "test_size": 30, "train_size": 500}
DATA = ["--data", "digits", *[f for k, v in DATA_PARAMS.items() for f in ("--data-param", f"{k}={v}")]]
TEST = ["invariance", "test", "--n", "30", "--steps", "3", "--range", "10", *DATA]
ATTACK = ["zeroshot", "attack", "--n", "2", "--threshold", "1", "--budget", "2", "--norm", "l0", *DATA]


def _nearest_mean_weights(num_classes=10):
    """TemplateNet's weights of the nearest class mean of the training digits: argmin_k |x - m_k|^2 is
    argmax_k x . m_k - |m_k|^2 / 2, the second convolution's template and bias for class k."""
    from repscope.data.registry import load_dataset

    train = load_dataset("digits", **DATA_PARAMS).arrays("train", ["image", "target"])
    images = torch.as_tensor(train["image"]).float().reshape(len(train["target"]), 1, 28, 28) / 255.0
    labels = torch.as_tensor(train["target"]).long()
    means = torch.stack([images[labels == k].mean(0) for k in range(num_classes)])
    return {
        "conv1.weight": torch.ones(1, 1, 1, 1),
        "conv1.bias": torch.zeros(1),
        "conv2.weight": means,
        "conv2.bias": -0.5 * (means**2).sum(dim=(1, 2, 3)),
    }


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """The factory file with the nearest-mean weights, that network as TorchScript and ONNX, and seed 1's
    initial weights."""
    from repscope.models.external import InputContract, export_onnx, export_torchscript, load_model

    folder = tmp_path_factory.mktemp("outside")
    module = folder / "tinynet.py"
    module.write_text(TINY_MODULE)
    weights = folder / "nearest-mean.pt"
    torch.save(_nearest_mean_weights(), weights)
    network = load_model(f"{module}:make", weights=weights).module
    contract, example = InputContract(image_shape=(1, 28, 28)), torch.zeros(2, 1, 28, 28)
    scripted = export_torchscript(network, folder / "tiny.pt", contract, example)
    onnx = export_onnx(network, folder / "tiny.onnx", contract, example)
    seed1 = folder / "seed1.pt"
    torch.save(load_model(f"{module}:make", model_args={"seed": 1}).module.state_dict(), seed1)
    return {
        "factory": ["--model", f"{module}:make", "--weights", str(weights)],
        "torchscript": ["--model", str(scripted)],
        "onnx": ["--model", str(onnx)],
        # the state_dict route: --arch a network factory (models.networks.build_classifier) instead of a name
        "state_dict": ["--model", str(weights), "--arch", f"{module}:make"],
        "module": module,
        "seed1": seed1,
        "folder": folder,
    }


def _metrics(out):
    return json.loads((out / "metrics.json").read_text())


def test_invariance_test_of_a_factory_its_torchscript_and_onnx_agree(tmp_path, run_cli, sources):
    printed = {}
    for kind in ("factory", "torchscript", "onnx"):
        # the factory's own argument (seed of its initial weights, which --weights then replaces) goes through
        seeded = ["--model-arg", "seed=3"] if kind == "factory" else []
        code, printed[kind], err = run_cli([*TEST, *sources[kind], *seeded, "--out", str(tmp_path / kind)])
        assert code == 0, err
    by_factory = _metrics(tmp_path / "factory")
    recorded = yaml.safe_load((tmp_path / "factory" / "config.yaml").read_text())
    assert recorded["model_args"] == {"seed": 3} and recorded["weights"] == sources["factory"][-1]
    confidence = np.load(tmp_path / "factory" / "matrices" / "max_at_CONF.npy")
    assert confidence.shape == (3, 3)
    assert by_factory["robust_accuracy"] <= by_factory["accuracy"]  # Eq. 1 counts a subset of the identity's hits
    assert by_factory["accuracy"] > 0.5  # the nearest class mean, far above chance (0.1): the weights were loaded
    # hooks reach the factory's two convolutions (the paper's five modalities)
    assert set(by_factory["features"]) == {"max@CONF", "max@CONV-1", "mean@CONV-1", "max@CONV-2", "mean@CONV-2"}
    for kind in ("torchscript", "onnx"):
        saved = _metrics(tmp_path / kind)
        # the same network: the same correctness under every rotation, so the same accuracies
        assert (saved["robust_accuracy"], saved["accuracy"]) == (by_factory["robust_accuracy"], by_factory["accuracy"])
        # no layer to hook in a saved graph: the output modality alone, said on the terminal
        assert list(saved["features"]) == ["max@CONF"] and "only max@CONF" in printed[kind]
        # the confidence matrix is the same matrix (the same softmax outputs, to float precision)
        matrix = np.load(tmp_path / kind / "matrices" / "max_at_CONF.npy")
        np.testing.assert_allclose(matrix, confidence, rtol=1e-4, atol=1e-7)
    assert "only max@CONF" not in printed["factory"]


def test_a_factory_by_module_name_takes_its_arguments_and_weights(tmp_path, run_cli, sources, monkeypatch):
    monkeypatch.syspath_prepend(str(sources["folder"]))  # the pkg.module:factory form of the same file
    seeded = ["--model", "tinynet:make", "--model-arg", "seed=1"]
    weighted = ["--model", f"{sources['module']}:make", "--weights", str(sources["seed1"])]
    for name, model in (("seeded", seeded), ("weighted", weighted)):
        code, _, err = run_cli([*ATTACK, *model, "--out", str(tmp_path / name)])
        assert code == 0, err
    # seed 1's network either way: the same images drawn, the same outcomes
    seeded_attacks = pd.read_csv(tmp_path / "seeded" / "attacks.csv")
    pd.testing.assert_frame_equal(seeded_attacks, pd.read_csv(tmp_path / "weighted" / "attacks.csv"))
    assert _metrics(tmp_path / "seeded")["model_args"] == {"seed": 1}
    assert _metrics(tmp_path / "weighted")["weights"] == str(sources["seed1"])


def test_zeroshot_attack_of_a_factory_its_saved_forms_and_its_state_dict_agree(tmp_path, run_cli, sources):
    printed = {}
    for kind in ("factory", "torchscript", "onnx", "state_dict"):
        code, printed[kind], err = run_cli([*ATTACK, *sources[kind], "--out", str(tmp_path / kind)])
        assert code == 0, err
    by_factory = pd.read_csv(tmp_path / "factory" / "attacks.csv")
    for kind in ("torchscript", "onnx", "state_dict"):
        # the same images drawn (those the network gets right), the same seeded searches, the same outcomes
        pd.testing.assert_frame_equal(by_factory, pd.read_csv(tmp_path / kind / "attacks.csv"))
    counts = pd.read_csv(tmp_path / "factory" / "counts.csv")
    assert counts[["norm", "threshold", "images"]].values.tolist() == [["l0", 1, len(by_factory)]]
    assert 1 <= len(by_factory) <= 2 and f"of {len(by_factory)} succeeded" in printed["factory"]


@pytest.mark.parametrize("command", [TEST, ATTACK], ids=["invariance-test", "zeroshot-attack"])
def test_a_model_from_outside_without_data_is_refused_in_one_line(tmp_path, run_cli, sources, command):
    without_data = [word for word in command if word not in DATA]
    out = tmp_path / "out"
    code, _, err = run_cli([*without_data, *sources["factory"], "--out", str(out)])
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1 and "--data" in lines[0] and "required" in lines[0]
    assert not out.exists()


def test_a_pickled_model_is_refused_unopened_naming_the_state_dict_routes(tmp_path, run_cli, sources):
    from repscope.models.external import load_model

    marker = tmp_path / "ran.txt"
    pickled = tmp_path / "whole.pt"
    torch.save(load_model(f"{sources['module']}:make").module, pickled)  # a whole model: a pickle of the user's class
    out = tmp_path / "out"
    code, _, err = run_cli([*TEST, "--model", str(pickled), "--out", str(out)])
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1 and "pickle" in lines[0]
    assert "--arch" in lines[0] and "--weights" in lines[0] and str(pickled) in lines[0]
    assert not out.exists() and not marker.exists()


@pytest.mark.slow
def test_zeroshot_evaluate_trains_a_factory_network(tmp_path, run_cli, sources):
    """``repscope zeroshot evaluate file.py:factory``: the n + 1 trainings of the user's network (the supervised
    model ``classifier`` with ``network`` its import path), its soft-label metrics and attacks (~40 s)."""
    out = tmp_path / "evaluate"
    settings = {
        "data.params.source": "mnist-sample",
        "data.params.train_size": 300,
        "data.params.test_size": 100,
        "attack.n": 2,
        "attack.thresholds": "[1]",
        "attack.budget": 2,
        "soft_label_n": 5,
        "projection_n": 5,
    }
    sets = [word for key, value in settings.items() for word in ("--set", f"{key}={value}")]
    factory = f"{sources['module']}:make"
    code, _, err = run_cli(["zeroshot", "evaluate", factory, "--quick", *sets, "--out", str(out)])
    assert code == 0, err
    trainings = sorted(path.name for path in (out / "models").iterdir() if path.is_dir())
    assert trainings == [f"arch-make_excluded-{k}" for k in range(10)] + ["arch-make_excluded-full"]
    trained = yaml.safe_load((out / "models" / "arch-make_excluded-3" / "train" / "config.yaml").read_text())
    assert trained["model"]["name"] == "classifier" and trained["model"]["params"]["network"] == factory
    metrics = _metrics(out)
    scores = metrics["architectures"]["make"]
    assert scores["soft_label_kind"] == "probabilities" and 0.0 <= scores["accuracy"] <= 1.0
    assert scores["dbi"] >= 0 and 0 <= scores["l0_th1"] <= metrics["attack_images"] <= 2


def test_out_may_not_replace_the_factory_file_or_its_weights(tmp_path, run_cli, sources):
    folder = tmp_path / "mine"
    folder.mkdir()
    module = folder / "tinynet.py"
    module.write_text(TINY_MODULE)
    weights = folder / "weights.pt"
    stored = (sources["folder"] / "nearest-mean.pt").read_bytes()
    weights.write_bytes(stored)
    for out, named in ((folder, "--model"), (weights, "--weights")):
        args = ["--model", f"{module}:make", "--weights", str(weights), "--out", str(out), "--overwrite"]
        code, _, err = run_cli([*ATTACK, *args])
        assert code != 0 and f"--out {out}" in err and named in err
    assert module.read_text() == TINY_MODULE and weights.read_bytes() == stored


def test_the_data_fills_an_open_input_shape_and_another_size_is_refused(sources):
    from repscope.errors import InvalidArgumentError
    from repscope.models.external import fitted_to_data, load_model

    factory = load_model(f"{sources['module']}:make")  # states no input shape: the data's is taken
    assert factory.contract.image_shape is None
    assert fitted_to_data(factory, (1, 28, 28), "digits").contract.image_shape == (1, 28, 28)
    scripted = load_model(sources["torchscript"][-1])  # its file records (1, 28, 28)
    assert fitted_to_data(scripted, (1, 28, 28), "digits") is scripted
    with pytest.raises(InvalidArgumentError, match=r"--data dsprites: .*\(1, 64, 64\).*\(1, 28, 28\)"):
        fitted_to_data(scripted, (1, 64, 64), "dsprites")

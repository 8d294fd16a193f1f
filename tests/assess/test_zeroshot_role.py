"""Raw Zero-Shot for a user's architecture: a classifier network given as an import path, the n + 1 models
read from a folder and scored, and (slow) the n + 1 trainings of a factory end to end."""

from __future__ import annotations

import textwrap
import warnings

import numpy as np
import pytest
import torch
from torch import nn

from repscope.errors import InvalidArgumentError
from repscope.metrics.zeroshot import zero_shot_scores
from repscope.models.networks import build_classifier, network_parameters

CLASSES = 3
# a user's module: factories that take the class count in the ways the loader accepts, and two it refuses
USER_MODULE = textwrap.dedent(
    """
    from torch import nn

    def make(num_classes, hidden=8):
        return nn.Sequential(nn.Flatten(), nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))

    def make_shaped(num_outputs, image_shape):
        channels, height, width = image_shape
        return nn.Sequential(nn.Flatten(), nn.Linear(channels * height * width, num_outputs))

    def not_a_module(num_classes):
        return {"classes": num_classes}

    def no_count(width=2):
        return nn.Linear(width, width)
    """
)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    path = tmp_path / "zeroshot_role_user_nets.py"
    path.write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return path


def test_an_import_path_network_is_built_with_the_class_count(user_module):
    network = build_classifier("zeroshot_role_user_nets:make", (1, 28, 28), 7, {"hidden": 5})
    assert network[1].out_features == 5 and network(torch.zeros(2, 1, 28, 28)).shape == (2, 7)
    # num_outputs and image_shape are passed when the factory takes them; a file path works as well
    shaped = build_classifier(f"{user_module}:make_shaped", (3, 8, 6), 4)
    assert shaped[1].in_features == 3 * 8 * 6 and shaped[1].out_features == 4
    assert network_parameters("zeroshot_role_user_nets:make") == {"hidden": 8}


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("zeroshot_role_user_nets:not_a_module", {}, "must return a torch.nn.Module, it returned a dict"),
        ("zeroshot_role_user_nets:no_count", {}, "must take num_classes (or num_outputs)"),
        ("zeroshot_role_user_nets:make", {"depth": 3}, "parameter 'depth' in network_params"),
        ("zeroshot_role_user_nets:make", {"num_classes": 3}, "'num_classes' in network_params: is set from the data"),
        ("zeroshot_role_user_nets:missing", {}, "has no callable 'missing'"),
        ("zeroshot_role_no_such_module:make", {}, "cannot import 'zeroshot_role_no_such_module'"),
    ],
)
def test_an_import_path_network_that_cannot_serve_is_named_in_one_line(user_module, name, params, expected):
    with pytest.raises(InvalidArgumentError) as caught:
        build_classifier(name, (1, 28, 28), CLASSES, params)
    message = str(caught.value)
    assert expected in message and f"network {name!r}" in message and "\n" not in message


# ---- a folder of n + 1 models whose soft-labels the test knows --------------------------------------------


class Linear(nn.Module):
    """Logits ``x @ W.T`` of the flattened [0, 1] image: soft-labels a test can work out with numpy."""

    def __init__(self, weights: np.ndarray) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.tensor(weights, dtype=torch.float32))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return images.flatten(1) @ self.weights.T


def _weights(outputs: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 0.08, size=(outputs, 784))


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _save_scripted(module: nn.Module, path) -> None:
    # TorchScript is what many users export; torch warns that it is deprecated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(module).save(str(path))


def _three_class_source(folder):
    """30 images a class: noise with a bright block where the class says (labels 0, 1, 2), as an .npz source."""
    rng = np.random.default_rng(5)
    labels = np.repeat(np.arange(CLASSES), 30)
    images = rng.integers(0, 90, size=(len(labels), 28, 28)).astype(np.uint8)
    for row, label in enumerate(labels):
        images[row, 4 + 7 * label : 11 + 7 * label, 6:20] = 230
    path = folder / "three.npz"
    np.savez(path, images=images, labels=labels)
    return str(path)


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zeroshot_models")
    source = _three_class_source(folder)
    models = folder / "models"
    models.mkdir()
    weights = {"full": _weights(CLASSES, 100)} | {f"without-{k}": _weights(CLASSES - 1, 200 + k) for k in range(3)}
    for name, matrix in weights.items():
        _save_scripted(Linear(matrix), models / f"{name}.pt")
    return models, source, weights


@pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")
def test_a_folder_of_models_gives_the_metrics_of_their_soft_labels(model_folder):
    from repscope.data.registry import load_dataset
    from repscope.studies.assess.zeroshot import ZeroShotFolder, zeroshot_assessment

    models, source, weights = model_folder
    found = zeroshot_assessment(
        ZeroShotFolder(models, data_name="digits", data_params={"source": source}), resamples=20, progress=False
    )
    test = load_dataset("digits", source=source).arrays("test", ["image", "target"])
    pixels = test["image"].reshape(len(test["image"]), -1).astype(np.float64) / 255.0
    members = [np.flatnonzero(test["target"] == k) for k in range(CLASSES)]
    loo = [_softmax(pixels[rows] @ weights[f"without-{k}"].T) for k, rows in enumerate(members)]
    full = [_softmax(pixels[rows] @ weights["full"].T) for rows in members]
    expected = zero_shot_scores(loo, full)
    metrics = found.metrics["zeroshot"]
    for key in ("dbi", "davies_bouldin", "am", "am_per_image"):
        assert metrics[key] == pytest.approx(expected[key], rel=1e-4), key
    headline = {row.metric: row for row in found.headline}
    assert headline["dbi"].value == pytest.approx(expected["dbi"], rel=1e-4)
    # every headline score has a chance level and an interval; the soft-labels dealt among the classes at random
    # make less separated clusters than each class's own (the block marks the class in every image; the zero
    # put at each cluster's excluded class still separates them a little)
    assert all(row.chance is not None for row in found.headline)
    assert all(row.ci_low < row.ci_high for row in found.headline if row.metric != "accuracy")
    assert headline["davies_bouldin"].chance > headline["davies_bouldin"].value
    assert headline["accuracy"].chance == pytest.approx(1 / CLASSES)
    predicted = _softmax(pixels @ weights["full"].T).argmax(axis=1)
    assert metrics["accuracy"] == pytest.approx(np.mean(predicted == test["target"]))
    np.testing.assert_allclose(found.arrays["zeroshot_loo_1"], loo[1], rtol=1e-4)
    table = found.tables["zeroshot_per_class"]
    assert table["images"].tolist() == [len(rows) for rows in members]


# ---- a factory trained n + 1 times by the study's machinery -----------------------------------------------


@pytest.mark.slow
def test_a_factory_trains_n_plus_one_models_that_a_restart_keeps(tmp_path, monkeypatch):
    from repscope.studies.assess.zeroshot import ZeroShotFactory, ZeroShotFolder, zeroshot_assessment
    from repscope.train.reader import open_run

    module = tmp_path / "zeroshot_role_trained_nets.py"
    module.write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    source = ZeroShotFactory(
        factory=f"{module.name}:make",  # a file path relative to the working directory
        model_args={"hidden": 6},
        data_name="digits",
        data_params={"source": _three_class_source(tmp_path)},
        epochs=1,
        batch_size=16,
        out=tmp_path / "assessment" / "zeroshot",
    )
    found = zeroshot_assessment(source, resamples=10, progress=False)
    models = tmp_path / "assessment" / "zeroshot" / "models"
    points = sorted(p.name for p in models.iterdir() if p.is_dir())
    assert points == [f"arch-Mine_excluded-{k}" for k in (0, 1, 2)] + ["arch-Mine_excluded-full"]
    # the metrics are those of the soft-labels each trained model left
    loo = [np.load(models / f"arch-Mine_excluded-{k}" / "softlabels.npy") for k in range(CLASSES)]
    counts = [len(e) for e in loo]
    full = np.split(np.load(models / "arch-Mine_excluded-full" / "softlabels.npy"), np.cumsum(counts)[:-1])
    expected = zero_shot_scores(loo, full)
    for key in ("dbi", "davies_bouldin", "am_per_image"):
        assert found.metrics["zeroshot"][key] == pytest.approx(expected[key], rel=1e-5), key
    # the run records the import path (the file's absolute path in the checkpoint), and reading it back from
    # another working directory rebuilds the user's network
    monkeypatch.chdir(models)
    run = open_run(models / "arch-Mine_excluded-1" / "train")
    assert run.config.model.name == "classifier" and run.config.model.params["network"] == f"{module.name}:make"
    task = run.task()
    assert task.hparams.network == f"{module}:make"
    assert task.network[1].out_features == 6 and task.network[3].out_features == CLASSES - 1
    monkeypatch.chdir(tmp_path)
    # a restart keeps the finished trainings
    stamps = {p: p.stat().st_mtime_ns for p in models.glob("*/softlabels.npy")}
    again = zeroshot_assessment(source, resamples=10, progress=False)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    assert again.metrics["zeroshot"]["dbi"] == found.metrics["zeroshot"]["dbi"]
    # the study's run read as a folder of trained models: the same soft-labels, the same scores
    folder = ZeroShotFolder(tmp_path / "assessment" / "zeroshot", data_name="digits", data_params=source.data_params)
    read = zeroshot_assessment(folder, resamples=10, progress=False)
    for key in ("dbi", "davies_bouldin", "am", "accuracy"):
        assert read.metrics["zeroshot"][key] == pytest.approx(found.metrics["zeroshot"][key], rel=1e-4), key


def test_a_folder_without_a_model_of_each_class_is_refused_by_name(tmp_path):
    from repscope.studies.assess.zeroshot import ZeroShotFolder, zeroshot_assessment

    models = tmp_path / "models"
    models.mkdir()
    for name, outputs in (("full", CLASSES), ("without-0", CLASSES - 1), ("without-1", CLASSES - 1)):
        _save_scripted(Linear(_weights(outputs, 0)), models / f"{name}.pt")
    folder = ZeroShotFolder(models, data_name="digits", data_params={"source": _three_class_source(tmp_path)})
    with pytest.raises(InvalidArgumentError, match=r"no model without class 2 \(without-2\)"):
        zeroshot_assessment(folder)
    # a model without a class that still names every class is refused before anything is scored
    _save_scripted(Linear(_weights(CLASSES, 0)), models / "without-2.pt")
    with pytest.raises(InvalidArgumentError, match=r"without-2.pt: expected soft-labels of 2 classes \(18, 2\)"):
        zeroshot_assessment(folder)
    with pytest.raises(InvalidArgumentError, match="neither full/ and without-<k>/ models nor"):
        zeroshot_assessment(ZeroShotFolder(tmp_path))

"""The contracts every registry entry keeps, checked over every entry (as scikit-learn's
``check_estimator`` checks every estimator):

* models (:data:`repscope.train.registry.MODELS`): built on a tiny dataset through ``build_task``, one
  optimisation step, saved, reloaded with ``load_task``: the same hyper-parameters, weights and outputs,
  and the family's inference protocol (:mod:`repscope.train.tasks.base`) with its documented shapes;
* datasets (:data:`repscope.data.registry.DATASETS`): built with tiny parameters, every split's batches
  match the field descriptions (shape, dtype, classes);
* studies (:data:`repscope.studies.registry.STUDIES`): schema, run and quick functions import, the
  shipped (or default) config validates, and so does its quick variant.

The entries are read from the registries when the tests are collected: a new entry is checked without
a line here, and fails until it keeps the contract (a dataset needs its tiny parameters below).
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import json
import logging
import warnings
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import pytest
import torch
from PIL import Image

from repscope.config import shipped_config_path
from repscope.data.datasets import FIELD_KINDS
from repscope.data.registry import DATASETS, load_dataset
from repscope.studies.registry import STUDIES
from repscope.train.config import Named, TrainConfig
from repscope.train.datamodule import DatasetModule
from repscope.train.fitting import build_task, load_task
from repscope.train.registry import MODELS, task_class
from repscope.train.tasks.base import Classifier, Encoder, Generator, channels_last_shape
from repscope.train.tasks.vae import VAETask

for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.ERROR)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

DIGITS = {"source": "mnist-sample", "train_size": 40, "test_size": 12}

# the inference protocol of each family (the module docstring of repscope.train.tasks.base)
FAMILY_PROTOCOLS = {"supervised": (Classifier,), "vae": (Encoder, Generator), "gan": (Generator,)}
MULTIMODAL_METHODS = ("encode", "sample", "decode")

# what makes a model tiny where its defaults are large (network_params) or its data is not the family's
# default; a model not named here trains with its registered defaults on its family's dataset
TINY_MODELS: dict[str, dict[str, Any]] = {
    "allconv": {"params": {"network_params": {"width": 0.05}}},
    "nin": {"params": {"network_params": {"width": 0.05}}},
    "resnet": {"params": {"network_params": {"depth": 8, "width": 4}}},
    "capsnet": {"params": {"network_params": {"conv_channels": 8, "primary_types": 2, "class_dim": 4}}},
    "attribute-cnn": {
        "data": ("cdsprites", {"level": 1, "train_size": 16, "val_size": 8, "test_size": 8, "target": "shape"})
    },
    "factor-cnn": {"data": ("dsprites", {"train_size": 32, "test_size": 8, "target": "posX"})},
    "vgg13-bn": {"data": ("cifar10", {})},  # 32 pixels at least: the tiny CIFAR-10 folder below
}


def model_data(name: str, folders: dict[str, Path]) -> tuple[str, dict[str, Any]]:
    """The tiny dataset a model trains on: digits (28x28), dSprites (64x64, with the factors and index a
    semi-supervised model reads), CdSprites+ level 1 for the multimodal family; ``folders`` are the tiny
    datasets on disk (:func:`dataset_folders`)."""
    if "data" in TINY_MODELS.get(name, {}):
        data_name, params = TINY_MODELS[name]["data"]
        return data_name, ({"data_dir": str(folders[data_name])} if data_name in folders else {}) | params
    entry = MODELS[name]
    if entry.family == "multimodal":
        return "cdsprites", {"level": 1, "train_size": 16, "val_size": 8, "test_size": 8}
    if {"factors", "index"} & set(getattr(task_class(name), "batch_fields", ())):
        return "dsprites", {"train_size": 32, "test_size": 8}
    target = "label" if entry.supervised else "none"
    return "digits", {**DIGITS, "target": target}


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """Datasets by ``(name, params)``, loaded once per module."""
    cache: dict[str, Any] = {}

    def get(name: str, params: dict[str, Any]) -> Any:
        key = json.dumps([name, params], sort_keys=True, default=str)
        if key not in cache:
            cache[key] = load_dataset(name, **params)
        return cache[key]

    return get


@pytest.fixture(scope="module", autouse=True)
def isolated_home(tmp_path_factory):
    """REPSCOPE_HOME in a temporary folder for the module (the Morpho-MNIST cache is built there)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REPSCOPE_HOME", str(tmp_path_factory.mktemp("home")))
        yield


def write_candle_render(folder: Path, name: str, obj: str, color: str, size: str, light: str, corner: int) -> None:
    """A render in the published CANDLE layout (``.png`` and its ``.json``): a grey scene, a coloured box."""
    image = np.full((48, 64, 3), 90, np.uint8)
    image[corner : corner + 12, corner : corner + 12] = (200, 40, 40)
    Image.fromarray(image).save(folder / f"{name}.png")
    box = [[corner, corner], [corner + 12, corner + 12]]
    objects = {f"{obj.title()}_0": {"object_type": obj, "color": color, "size": size, "rotation": 0, "bounds": box}}
    (folder / f"{name}.json").write_text(json.dumps({"scene": "indoor", "lights": light, "objects": objects}))


def write_cifar_batch(path: Path, labels: list[int], rng: np.random.Generator) -> None:
    """CIFAR-10 binary records: a label byte, then 3 x 32 x 32 bytes (red, green, blue planes)."""
    images = rng.integers(0, 256, size=(len(labels), 3 * 32 * 32), dtype=np.uint8)
    path.write_bytes(np.concatenate([np.asarray(labels, np.uint8)[:, None], images], axis=1).tobytes())


@pytest.fixture(scope="module")
def dataset_folders(tmp_path_factory):
    """Tiny folders of the datasets read from disk: CANDLE renders and CIFAR-10 binary batches."""
    from repscope.data.candle.dataset import COLORS, OBJECTS

    candle = tmp_path_factory.mktemp("candle")
    grid = itertools.product(OBJECTS, COLORS[:2], ("small", "large"))
    for k, (obj, color, size) in enumerate(grid):
        write_candle_render(candle, f"{k:04d}", obj, color, size, ("left", "right")[k % 2], 4 + 2 * (k % 10))
    cifar = tmp_path_factory.mktemp("cifar") / "cifar-10-batches-bin"
    cifar.mkdir()
    rng = np.random.default_rng(0)
    for k in (1, 2):
        write_cifar_batch(cifar / f"data_batch_{k}.bin", list(range(10)), rng)
    write_cifar_batch(cifar / "test_batch.bin", [3, 1, 4, 1, 5, 9], rng)
    return {"candle": candle, "cifar10": cifar}


def one_step(task: Any, dataset: Any) -> pl.Trainer:
    """One optimisation step (and one validation batch before it) on the dataset's first batch."""
    torch.manual_seed(0)
    module = DatasetModule(dataset, task.batch_fields, batch_size=8, val_fraction=0.25, seed=0)
    trainer = pl.Trainer(
        max_steps=1,
        max_epochs=1,
        limit_train_batches=1,
        limit_val_batches=1,
        num_sanity_val_steps=1,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(task, datamodule=module)
    return trainer


def check_protocols(task: Any, loaded: Any, family: str, dataset: Any) -> None:
    """The family's protocol methods exist, return the documented shapes, and agree between ``task`` and
    its reloaded copy ``loaded``."""
    task.eval()
    rows = np.arange(min(6, len(dataset.split("test"))))
    batch = dataset.batch("test", rows)
    if family == "multimodal":
        for method in MULTIMODAL_METHODS:
            assert callable(getattr(loaded, method, None)), f"multimodal tasks implement {method}"
        given = {name: batch[spec.get("field", name)] for name, spec in task.modalities.items()}
        codes = loaded.encode(given)
        assert np.array_equal(codes, task.encode(given)) and codes.shape[0] == len(rows) and codes.ndim == 2
        joint = loaded.sample(3, seed=1)
        assert all(len(values) == 3 for values in joint.values())
        for name, values in task.sample(3, seed=1).items():
            assert np.array_equal(values, joint[name])
        decoded = loaded.decode(codes)
        assert all(len(values) == len(rows) for values in decoded.values())
        return
    protocols = FAMILY_PROTOCOLS[family]
    for protocol in protocols:
        assert isinstance(loaded, protocol), f"a {family} task implements {protocol.__name__}"
    images = batch["image"]
    image_layout = channels_last_shape(task.image_shape)
    if isinstance(loaded, Encoder):
        codes = loaded.encode(images)
        assert codes.dtype == np.float32 and codes.ndim == 2 and codes.shape[0] == len(images)
        assert np.array_equal(codes, task.encode(images))
    if Generator in protocols:
        sampled = loaded.sample(3, seed=1)
        assert sampled.dtype == np.uint8 and sampled.shape == (3, *image_layout)
        assert sampled.tobytes() == task.sample(3, seed=1).tobytes() == loaded.sample(3, seed=1).tobytes()
        codes = loaded.encode(images) if isinstance(loaded, Encoder) else np.zeros((2, task.hparams.latent_dim))
        decoded = loaded.decode(codes)
        assert decoded.dtype == np.uint8 and decoded.shape == (len(codes), *image_layout)
        assert np.array_equal(decoded, task.decode(codes))
    if Classifier in protocols:
        predicted = loaded.predict(images)
        assert predicted.shape == (len(images),) and np.array_equal(predicted, task.predict(images))
        if task.hparams.kind == "classification":
            assert predicted.dtype == np.int64
            soft = loaded.soft_labels(images)
            assert soft.shape == (len(images), task.hparams.num_outputs)
            assert np.allclose(soft.sum(1), 1.0) and np.array_equal(soft, task.soft_labels(images))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_builds_steps_saves_and_reloads(name, datasets, dataset_folders, tmp_path):
    entry = MODELS[name]
    data_name, data_params = model_data(name, dataset_folders)
    config = TrainConfig(
        model=Named(name=name, params=TINY_MODELS.get(name, {}).get("params", {})),
        data=Named(name=data_name, params=data_params),
    )
    config.check_params("contract test")  # the params a config may set are the constructor's
    dataset = datasets(data_name, data_params)
    torch.manual_seed(0)
    task = build_task(config, dataset)
    before = {key: value.clone() for key, value in task.state_dict().items()}
    trainer = one_step(task, dataset)
    assert trainer.global_step >= 1
    assert any(not torch.equal(before[key], value) for key, value in task.state_dict().items()), "a step trains"
    path = tmp_path / "final.ckpt"
    trainer.save_checkpoint(path)
    stored = torch.load(path, map_location="cpu", weights_only=True)["hyper_parameters"]
    assert stored == dict(task.hparams)
    loaded = load_task(path, model=name)
    assert type(loaded) is type(task) and dict(loaded.hparams) == dict(task.hparams)
    loaded_state = loaded.state_dict()
    assert set(loaded_state) == set(task.state_dict())
    assert all(torch.equal(loaded_state[key], value) for key, value in task.state_dict().items())
    check_protocols(task, loaded, entry.family, dataset)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_models_optimisers_take_the_device_options(name, datasets, dataset_folders, monkeypatch):
    """Each optimiser a task makes gets :func:`~repscope.train.tasks.base.optimiser_options` (fused Adam on
    CUDA: one kernel per step instead of several per tensor); a task that forgets it trains slower on a GPU
    while every CPU number stays the same. The options are replaced by a marker here, wherever imported."""
    import sys
    import types

    from repscope.train.tasks import base

    marker, original = {"foreach": False}, base.optimiser_options  # torch's default foreach is None
    for module in list(sys.modules.values()):
        if getattr(module, "optimiser_options", None) is original:
            monkeypatch.setattr(module, "optimiser_options", lambda module, marker=marker: dict(marker))
    data_name, data_params = model_data(name, dataset_folders)
    config = TrainConfig(
        model=Named(name=name, params=TINY_MODELS.get(name, {}).get("params", {})),
        data=Named(name=data_name, params=data_params),
    )
    task = build_task(config, datasets(data_name, data_params))
    task._trainer = types.SimpleNamespace(estimated_stepping_batches=10)  # a schedule reads the run's length
    configured = task.configure_optimizers()
    found = []
    for item in configured if isinstance(configured, (list, tuple)) else [configured]:
        found.extend(item if isinstance(item, (list, tuple)) else [item])
    optimisers = [item["optimizer"] if isinstance(item, dict) else item for item in found]
    optimisers = [item for item in optimisers if isinstance(item, torch.optim.Optimizer)]
    assert optimisers, f"{name}: configure_optimizers gave no optimiser"
    for optimiser in optimisers:
        kind = type(optimiser).__name__
        assert optimiser.defaults.get("foreach") is False, f"{name}: {kind} without optimiser_options"


# ---------------------------------------------------------------------------------------------
# hyper-parameters: a subclass declares its own fields, saving and reloading them is automatic


class SharperVAETask(VAETask):
    """A VAE variant as a contributor adds one: one new field, one changed default."""

    @dataclasses.dataclass(kw_only=True)
    class Config(VAETask.Config):
        beta: float = 2.0
        sharpness: float = 1.0


class ForgetfulVAETask(VAETask):
    """Declares its field without extending the parent's Config (nor ``@dataclass``): still merged."""

    class Config:
        sharpness: float = 1.0


@pytest.mark.parametrize("cls", [SharperVAETask, ForgetfulVAETask])
def test_a_subclass_field_reloads_with_its_value_not_the_default(cls, tmp_path):
    torch.manual_seed(0)
    task = cls(latent_dim=2, sharpness=3.0)
    assert task.hparams.sharpness == 3.0 and task.hparams.architecture == "infogan-mnist"
    images = torch.rand(4, 1, 28, 28)
    trainer = pl.Trainer(
        max_steps=1, logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False
    )
    loader = torch.utils.data.DataLoader([{"image": image} for image in images], batch_size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(task, train_dataloaders=loader)
    path = tmp_path / "task.ckpt"
    trainer.save_checkpoint(path)
    stored = torch.load(path, map_location="cpu", weights_only=True)["hyper_parameters"]
    assert stored["sharpness"] == 3.0 and stored["latent_dim"] == 2
    rebuilt = cls(**stored)
    assert rebuilt.hparams.sharpness == 3.0 and dict(rebuilt.hparams) == dict(task.hparams)
    reloaded = cls.load_from_checkpoint(path, weights_only=True)
    assert reloaded.hparams.sharpness == 3.0
    assert reloaded.encode(images).tobytes() == task.encode(images).tobytes()


def test_a_subclass_constructor_is_its_parents_fields_plus_its_own():
    parameters = inspect.signature(SharperVAETask).parameters
    assert list(parameters) == [*inspect.signature(VAETask).parameters, "sharpness"]
    assert parameters["beta"].default == 2.0 and parameters["sharpness"].default == 1.0
    assert SharperVAETask(latent_dim=2).hparams.beta == 2.0
    assert SharperVAETask(3).hparams.latent_dim == 3  # by position, in field order
    with pytest.raises(TypeError, match="SharperVAETask.*unexpected keyword argument 'sharp'"):
        SharperVAETask(sharp=3.0)


def test_semi_supervised_constructors_are_their_models_plus_the_supervision_fields():
    from repscope.train.tasks.disentangling_vaes import FactorVAETask
    from repscope.train.tasks.semi_supervised import SemiSupervisedFactorVAETask, SemiSupervisedMixin

    supervision = [field.name for field in dataclasses.fields(SemiSupervisedMixin.Config)]
    semi = inspect.signature(SemiSupervisedFactorVAETask).parameters
    assert list(semi) == [*inspect.signature(FactorVAETask).parameters, *supervision]
    assert semi["beta"].default == 1.0  # FactorVAE's default, not the VAE's


# ---------------------------------------------------------------------------------------------
# datasets


def tiny_dataset_params(name: str, folders: dict[str, Path]) -> dict[str, Any]:
    digits = {**DIGITS, "target": "label"}
    cases = {
        "digits": digits,
        "morpho-mnist": {"set": "plain", "train_size": 30, "test_size": 10},
        "dsprites": {"train_size": 32, "test_size": 8, "target": "shape"},
        "cdsprites": {"level": 1, "train_size": 16, "val_size": 8, "test_size": 8},
        "polymnist": {"modalities": 2, "train_size": 16, "val_size": 8, "test_size": 8},
        "candle": {"data_dir": str(folders["candle"]), "image_size": 32, "target": "object"},
        "anomalous": {"base": "digits", "base_params": digits, "anomaly": "noise"},
        "cifar10": {"data_dir": str(folders["cifar10"])},
        "leave-class-out": {"base": "digits", "base_params": digits, "excluded": 3},
    }
    if name not in cases:
        pytest.fail(f"dataset {name!r} is registered without tiny parameters in {__file__}: add them")
    return cases[name]


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_every_dataset_serves_batches_as_its_fields_describe(name, dataset_folders, datasets):
    dataset = datasets(name, tiny_dataset_params(name, dataset_folders))
    assert dataset.name == name and {"train", "test"} <= set(dataset.splits)
    assert dataset.target is None or dataset.target in dataset.fields
    for split in dataset.splits:
        size = len(dataset.split(split))
        assert size > 0, f"{name}: split {split} is empty"
        rows = np.arange(min(size, 5))
        batch = dataset.batch(split, rows)
        assert set(dataset.fields) <= set(batch), f"{name}/{split}: fields described but not served"
        for field, values in batch.items():
            if field == "target":
                continue
            assert field in dataset.fields, f"{name}/{split}: field {field!r} served without a description"
            spec = dataset.fields[field]
            assert spec.kind in FIELD_KINDS
            assert values.shape == (len(rows), *spec.shape), f"{name}/{split}/{field}: shape"
            assert values.dtype == np.dtype(spec.dtype), f"{name}/{split}/{field}: dtype {values.dtype}"
            if spec.kind == "categorical" and spec.classes is not None:
                assert values.min() >= 0 and values.max() < spec.classes, f"{name}/{split}/{field}: classes"
        if dataset.target is not None:
            target = dataset.batch(split, rows, ["target"])["target"]
            assert np.array_equal(target, batch[dataset.target])


# one name per concept: the size of a split, the folder the data come from
SIZE_PARAMETERS = ("train_size", "test_size")
FOLDER_PARAMETER = "data_dir"
OTHER_NAMES = ("size", "max_train", "max_test", "n_train", "n_test", "root", "folder", "path", "directory")


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_every_dataset_names_its_sizes_and_folder_alike(name):
    from repscope.data.registry import dataset_loader

    parameters = set(inspect.signature(dataset_loader(name)).parameters)
    assert not parameters & set(OTHER_NAMES), f"{name}: use {SIZE_PARAMETERS} / {FOLDER_PARAMETER!r}"
    # a dataset that lets the training size be chosen lets the test size be chosen too
    assert ("train_size" in parameters) == ("test_size" in parameters), name


def test_a_config_with_an_old_parameter_name_is_told_the_new_one(tmp_path):
    from repscope.config import load_config
    from repscope.errors import InvalidArgumentError
    from repscope.train.fitting import fit

    path = tmp_path / "old.yaml"
    path.write_text("model: {name: lenet5}\ndata: {name: digits, params: {max_train: 40, root: /x}}\n")
    with pytest.raises(InvalidArgumentError) as error:
        fit(load_config(path, TrainConfig), out=tmp_path / "run")
    assert "data.params.max_train (renamed train_size)" in str(error.value)
    assert "data.params.root (renamed data_dir)" in str(error.value)
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------------------------------
# studies


def required_values(entry: Any) -> dict[str, Any]:
    """Values for the config keys a command takes from its command line (e.g. a folder to evaluate)."""
    values: dict[str, Any] = {}
    for argument in entry.arguments:
        if argument.destination == "config" and (argument.positional or argument.required):
            values[argument.key] = 1 if argument.type is int else "folder"
    return values


@pytest.mark.parametrize("entry", STUDIES, ids=lambda entry: " ".join(entry.words))
def test_every_study_imports_and_its_configs_validate(entry):
    schema, run, quick = entry.load()
    assert callable(run) and (quick is None) == (entry.quick is None)
    if entry.shipped:
        assert Path(shipped_config_path(entry.shipped)).is_file()
    values = required_values(entry)
    config, _ = entry.load_config(None, values=values)
    assert isinstance(config, schema)
    assert schema.model_validate(config.model_dump(mode="json")) == config
    if quick is not None:
        shrunk, _ = entry.load_config(None, values=values, quick=True)
        assert isinstance(shrunk, schema)
        assert schema.model_validate(shrunk.model_dump(mode="json")) == shrunk

"""Each multimodal VAE is its own registry entry and task class: its hyper-parameters rebuild it, a checkpoint
of the one shared constructor still loads into the right class, and the studies read the facts from the classes."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.models.multimodal.models import OBJECTIVES
from repscope.train.fitting import load_task
from repscope.train.registry import MODELS, task_class
from repscope.train.tasks.multimodal import MMVAETask, MultimodalVAETask, multimodal_models

NAMES = [name for name, entry in MODELS.items() if entry.family == "multimodal"]  # read at collection time
SPECS = {"vector": {"shape": [5], "classes": None}, "label": {"shape": [], "classes": 3, "kind": "categorical"}}
TINY = {
    "vector": {"field": "vector", "network": "fc-image", "params": {"hidden": 8}, "likelihood": "gaussian"},
    "label": {"field": "label", "network": "label", "likelihood": "categorical"},
}


def build(name: str, **params):
    torch.manual_seed(0)
    return task_class(name)(modalities=TINY, latent_dim=3, field_specs=SPECS, **params)


def same_weights(first, second) -> bool:
    one, two = first.state_dict(), second.state_dict()
    return one.keys() == two.keys() and all(torch.equal(one[key], two[key]) for key in one)


def old_style_hyper_parameters(name: str) -> dict:
    """What a checkpoint held when every model shared one constructor: every model's settings, and its name."""
    return {
        "model": name,
        "modalities": TINY,
        "latent_dim": 3,
        "private_dim": 4,
        "objective": "elbo",
        "k": 1,
        "beta": 1.0,
        "lr": 0.001,
        "prior": "normal",
        "optimizer": "adam",
        "weight_decay": 0.0,
        "subsampling": "singles",
        "estimator": "stratified",
        "field_specs": SPECS,
        "image_shape": None,
    }


def test_every_multimodal_entry_names_its_own_class():
    classes = [task_class(name) for name in NAMES]
    assert len(NAMES) == 5 and len(set(classes)) == len(NAMES)  # no class shared by two names
    assert all(issubclass(cls, MultimodalVAETask) for cls in classes)
    assert all(not MODELS[name].fixed for name in NAMES)  # no name handed to a shared class
    assert list(multimodal_models()) == NAMES and list(multimodal_models().values()) == classes


@pytest.mark.parametrize("name", NAMES)
def test_a_task_rebuilds_from_its_own_checkpoint(tmp_path, name):
    task = build(name, beta=2.5)
    hyper_parameters = dict(task.hparams)
    assert hyper_parameters["model"] == name and hyper_parameters["beta"] == 2.5
    assert set(hyper_parameters) == {"model", *type(task).config_fields()}  # its own settings, no other model's
    path = tmp_path / "final.ckpt"
    torch.save({"state_dict": task.state_dict(), "hyper_parameters": hyper_parameters}, path)
    again = load_task(path, model=name)
    assert type(again) is type(task)
    assert dict(again.hparams) == hyper_parameters
    assert same_weights(again, task)


@pytest.mark.parametrize("name", NAMES)
def test_a_checkpoint_of_the_shared_constructor_loads_into_the_right_class(tmp_path, name):
    old = old_style_hyper_parameters(name)
    reference = build(name)  # the same settings, given as the class takes them
    path = tmp_path / "last.ckpt"
    torch.save({"state_dict": reference.state_dict(), "hyper_parameters": old}, path)
    task = load_task(path, model=name)
    assert type(task) is task_class(name)
    assert dict(task.hparams) == dict(reference.hparams)  # the other models' settings are left out
    assert same_weights(task, reference)


def test_hyper_parameters_of_another_model_are_refused(tmp_path):
    path = tmp_path / "last.ckpt"
    mopoe = build("mopoe")
    torch.save({"state_dict": mopoe.state_dict(), "hyper_parameters": old_style_hyper_parameters("mopoe")}, path)
    # MMVAE and MoPoE have the same networks and settings: only the recorded name tells them apart
    with pytest.raises(DataFormatError, match="'mopoe'"):
        load_task(path, model="mmvae")
    with pytest.raises(InvalidArgumentError, match="model 'mopoe', this is 'mmvae'"):
        MMVAETask(**old_style_hyper_parameters("mopoe"))
    # another model's setting is taken only from a checkpoint that names the model
    with pytest.raises(TypeError, match="private_dim"):
        task_class("mvae")(field_specs=SPECS, modalities=TINY, private_dim=4)


def test_a_subclass_declares_only_its_own_settings_and_they_are_saved():
    @dataclasses.dataclass(kw_only=True)
    class Config(MMVAETask.Config):
        temperature: float = 1.0

    Tempered = type("Tempered", (MMVAETask,), {"Config": Config})
    parameters = inspect.signature(Tempered).parameters
    assert list(parameters)[-2:] == ["bound", "temperature"] and parameters["temperature"].default == 1.0
    torch.manual_seed(0)
    task = Tempered(modalities=TINY, field_specs=SPECS, temperature=3.0)
    assert "model" not in task.hparams  # the registry does not name it
    assert Tempered(**dict(task.hparams)).hparams["temperature"] == 3.0
    with pytest.raises(TypeError, match="Config"):
        type("Bad", (MMVAETask,), {"__init__": lambda self, **params: None})


def test_the_class_facts_the_studies_read():
    models = multimodal_models()
    assert len({cls.display_name for cls in models.values()}) == len(models)
    ranks = [cls.paper_table_rank for cls in models.values() if cls.paper_table_rank is not None]
    assert sorted(ranks) == list(range(len(ranks)))  # the paper's table: each row once
    for name, cls in models.items():
        assert cls.private_latents == ("private_dim" in cls.config_fields()), name
        assert set(cls.objectives) <= set(OBJECTIVES), name


@pytest.mark.parametrize("name", NAMES)
def test_the_study_config_gives_each_model_the_settings_its_class_declares(name):
    from repscope.studies.multimodal.train import MODEL_SETTINGS, MultimodalConfig

    params = MultimodalConfig(model=name).train_config().model.params
    declared = set(task_class(name).config_fields())
    assert set(params) - {"modalities"} == declared & set(MODEL_SETTINGS)
    assert ("private_dim" in params) == task_class(name).private_latents


def test_the_study_config_refuses_an_unregistered_model_listing_the_registered_ones():
    from repscope.studies.multimodal.train import MultimodalConfig

    with pytest.raises(ValueError, match="unknown multimodal model 'vae'; registered: " + ", ".join(NAMES)):
        MultimodalConfig(model="vae")


def test_dmvae_refuses_an_objective_it_does_not_train_on():
    with pytest.raises(InvalidArgumentError, match="DMVAE trains on the ELBO with k = 1"):
        build("dmvae", objective="iwae", k=4)
    assert task_class("dmvae").objectives == ("elbo",)


def test_the_family_protocol_takes_and_gives_rows_by_modality():
    task = build("mopoe")
    given = {"vector": torch.rand(4, 5).numpy(), "label": torch.tensor([0, 1, 2, 1]).numpy()}
    codes = task.encode(given)
    assert codes.shape == (4, 3) and codes.dtype == "float32"
    assert set(task.decode(codes)) == set(task.sample(2, seed=1)) == {"vector", "label"}
    assert task.sample(2, seed=1)["vector"].shape == (2, 5)
    # an image batch, as the image families' encode takes it, is refused with the modalities named
    with pytest.raises(InvalidArgumentError, match="mapping of modality name -> rows.*vector, label"):
        task.encode(given["vector"])
    with pytest.raises(InvalidArgumentError, match="mapping of modality name"):
        task.generate(given["vector"])

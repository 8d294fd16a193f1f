"""Reading a run directory back: ``open_run(path) -> TrainedRun`` (typed config, metrics, the task on demand),
the generic ``read_config`` / ``read_metrics`` of any run, and the errors that name the file and the key."""

from __future__ import annotations

import dataclasses
import inspect
import json

import numpy as np
import pytest
import yaml

from repscope import __version__
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.run_directory import read_config, read_metrics
from repscope.train import TrainedRun, open_run
from repscope.train.config import Named, TrainConfig, TrainerSection
from repscope.train.fitting import fit, load_task

TINY_DATA = {"source": "mnist-sample", "train_size": 120, "test_size": 40, "target": "label"}
ORIGIN = {"command": "a study", "config": {"models": ["mlp"], "rounds": 2}}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny training through fit (an MLP, one epoch on 108 digits), recorded with an origin."""
    config = TrainConfig(
        model=Named(name="mlp", params={"lr": 0.003}),
        data=Named(name="digits", params=TINY_DATA),
        trainer=TrainerSection(max_epochs=1),
        batch_size=32,
        seed=4,
    )
    out = tmp_path_factory.mktemp("reader") / "run"
    return config, fit(config, out=out, report=False, origin=ORIGIN)


def write_run(folder, text=None, **config):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(text if text is not None else yaml.safe_dump(config))
    return folder


def test_open_run_gives_back_the_config_metrics_and_task_that_fit_trained(trained):
    config, outcome = trained
    run = open_run(outcome.run.root)
    assert isinstance(run, TrainedRun) and isinstance(run.config, TrainConfig)
    assert run.config == config and run.config.trainer.max_epochs == 1 and run.config.seed == 4
    assert run.metrics == outcome.metrics and run.metrics["n_train"] == 108
    assert run.version == __version__ and run.origin == ORIGIN
    assert (run.model_name, run.data_name, run.data_params) == ("mlp", "digits", TINY_DATA)
    assert run.model_params == {"lr": 0.003}
    assert run.checkpoint == outcome.run.root / "checkpoints" / "final.ckpt"
    images = outcome.data.arrays("test", ["image"])["image"]
    outcome.task.eval()
    assert np.array_equal(run.task().predict(images), outcome.task.predict(images))
    assert run.task() is run.task()  # loaded once
    assert np.array_equal(load_task(outcome.run.root).predict(images), outcome.task.predict(images))


def test_the_dataset_and_its_arguments_come_from_the_runs_data_section(trained):
    _, outcome = trained
    run = open_run(outcome.run.root)
    again = run.dataset().arrays("test", ["image", "target"])
    original = outcome.data.arrays("test", ["image", "target"])
    assert all(np.array_equal(again[key], original[key]) for key in ("image", "target"))
    assert len(run.dataset(test_size=10).split("test")) == 10
    assert run.data_params == TINY_DATA  # an override does not change the run
    # the loader's defaults fill what the config left unset; what it set wins
    from repscope.data.registry import dataset_loader

    defaults = {
        name: p.default
        for name, p in inspect.signature(dataset_loader("digits")).parameters.items()
        if p.default is not inspect.Parameter.empty and name not in TINY_DATA
    }
    assert defaults and run.data_arguments == {**defaults, **TINY_DATA}


def test_a_trained_run_is_frozen_and_load_task_refuses_another_model_name(trained):
    _, outcome = trained
    run = open_run(outcome.run.root)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.config = None
    with pytest.raises(InvalidArgumentError, match="trained model 'mlp', not 'lenet5'"):
        load_task(outcome.run.root, model="lenet5")


def test_a_directory_without_config_yaml_is_not_a_run(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidArgumentError, match=r"empty: no config\.yaml; not a run directory of repscope train"):
        open_run(tmp_path / "empty")
    # a study's run directory has a config.yaml of its own schema
    study = tmp_path / "study"
    study.mkdir()
    (study / "config.yaml").write_text("source: mnist-sample\njobs: 2\n")
    with pytest.raises(InvalidArgumentError, match=r"study: not a run directory of repscope train \(config\.yaml"):
        open_run(study)
    # a study that trained several models (disentangle, CANDLE) has a data section and models/<name> runs
    many = tmp_path / "many"
    for name in ("ss-beta-vae", "beta-vae", "notes"):
        (many / "models" / name).mkdir(parents=True)
    for name in ("ss-beta-vae", "beta-vae"):
        (many / "models" / name / "config.yaml").write_text("model: {name: beta-vae}\ndata: {name: dsprites}\n")
    (many / "config.yaml").write_text("data: {name: dsprites}\nmodels: [{label: beta-VAE, name: beta-vae}]\n")
    with pytest.raises(InvalidArgumentError, match=r"study that trained 2 models, not of one training") as info:
        open_run(many)
    assert str(info.value).endswith(f"{many / 'models'}/<name> (beta-vae, ss-beta-vae)")


@pytest.mark.parametrize(
    "text, message",
    [
        (b"model: [\xff\n", "not UTF-8"),
        (b"model: [lenet5\n", "not valid YAML"),
        (b"- model\n- data\n", "must hold a mapping"),
        (b"model: {name: mlp}\n", "missing key data"),
        (b"model: {name: mlp}\ndata: {name: digits}\nepochs: 3\n", "unknown key epochs"),
        (b"model: {name: mlp}\ndata: {name: digits}\nbatch_size: many\n", "key batch_size"),
        (b"model: {name: mlp}\ndata: {name: digits}\norigin: [a]\n", "origin must be a mapping"),
    ],
)
def test_an_unreadable_or_invalid_config_is_a_data_format_error_naming_the_file_and_key(tmp_path, text, message):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_bytes(text)
    with pytest.raises(DataFormatError, match=message) as error:
        open_run(run)
    assert str(run / "config.yaml") in str(error.value)


def test_unreadable_metrics_and_a_missing_checkpoint_name_their_files(tmp_path):
    run = write_run(tmp_path / "run", model={"name": "mlp"}, data={"name": "digits"})
    assert open_run(run).metrics == {}  # not finished: no metrics yet
    with pytest.raises(InvalidArgumentError, match=r"no checkpoints/final\.ckpt or last\.ckpt"):
        open_run(run).task()
    (run / "metrics.json").write_text("[1, 2]")
    with pytest.raises(DataFormatError, match=r"metrics\.json: not a JSON object"):
        open_run(run)
    (run / "metrics.json").write_text("{'test_accuracy': 1}")
    with pytest.raises(DataFormatError, match=r"metrics\.json: not a readable JSON"):
        open_run(run)


def test_a_config_written_before_later_keys_existed_still_opens(tmp_path):
    # what the first training runs wrote: no repscope_version, no num_workers / shuffle / trainer.logger
    old = write_run(
        tmp_path / "old",
        model={"name": "lenet5", "params": {"lr": 0.002}},
        data={"name": "digits", "params": {"train_size": 300}},
        trainer={"accelerator": "cpu", "devices": 1, "num_nodes": 1, "precision": "32-true", "max_epochs": 20},
        batch_size=64,
        val_fraction=0.1,
        seed=0,
        config_source="lenet.yaml",
    )
    run = open_run(old)
    assert run.version is None and run.origin is None
    assert run.config.shuffle is True and run.config.num_workers == 0 and run.config.trainer.logger == "csv"
    assert run.config.trainer.max_epochs == 20 and run.data_params == {"train_size": 300}


def test_a_multimodal_run_of_before_keeps_its_config_file_as_the_origin(tmp_path):
    run_dir = write_run(tmp_path / "mm", model={"name": "mmvae"}, data={"name": "cdsprites", "params": {"level": 2}})
    (run_dir / "mmvae-config.yaml").write_text(yaml.safe_dump({"model": "mmvae", "latent_dim": 4}))
    run = open_run(run_dir)
    assert run.origin == {"command": "mmvae train", "config": {"model": "mmvae", "latent_dim": 4}}


def test_the_cdsprites_level_is_the_configs_else_the_loaders_default(tmp_path):
    from repscope.data.multimodal.datasets import cdsprites_dataset
    from repscope.studies.multimodal.leaderboard import cdsprites_level, open_cdsprites_run

    unset = write_run(tmp_path / "unset", model={"name": "mmvae"}, data={"name": "cdsprites"})
    default = inspect.signature(cdsprites_dataset).parameters["level"].default
    assert cdsprites_level(open_cdsprites_run(unset)) == default
    set_two = write_run(tmp_path / "two", model={"name": "mmvae"}, data={"name": "cdsprites", "params": {"level": 2}})
    assert cdsprites_level(open_cdsprites_run(set_two)) == 2
    bad = write_run(tmp_path / "bad", model={"name": "mmvae"}, data={"name": "cdsprites", "params": {"level": 9}})
    with pytest.raises(InvalidArgumentError, match="data.params.level"):
        cdsprites_level(open_cdsprites_run(bad))
    digits = write_run(tmp_path / "digits", model={"name": "lenet5"}, data={"name": "digits"})
    with pytest.raises(InvalidArgumentError, match="not cdsprites"):
        open_cdsprites_run(digits)


def test_read_config_and_read_metrics_read_any_run_directory(tmp_path):
    run = tmp_path / "study"
    run.mkdir()
    with pytest.raises(InvalidArgumentError, match=r"no config\.yaml"):
        read_config(run)
    assert read_metrics(run) == {}
    (run / "config.yaml").write_text("study: zeroshot\nworkers: 2\n")
    (run / "metrics.json").write_text(json.dumps({"spearman": float("nan"), "n": 3}))
    assert read_config(run) == {"study": "zeroshot", "workers": 2}
    metrics = read_metrics(run)
    assert metrics["n"] == 3 and np.isnan(metrics["spearman"])

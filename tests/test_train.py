"""The training stack: configs validated with errors naming the key, runs, resume, checkpoints."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from repscope.cli import app, main
from repscope.config import apply_overrides, load_config, shipped_config_path
from repscope.errors import DataFormatError, InvalidArgumentError, OutputExistsError
from repscope.train.config import TrainConfig
from repscope.train.fitting import fit, load_task, read_checkpoint

SMALL_DATA = {
    "name": "digits",
    "params": {"source": "mnist-sample", "train_size": 300, "test_size": 100, "target": "label"},
}


def write_config(path, **changes):
    config = {
        "model": {"name": "lenet5", "params": {"lr": 0.002}},
        "data": SMALL_DATA,
        "trainer": {"max_epochs": 2},
        "batch_size": 32,
        "seed": 0,
    }
    config.update(changes)
    path.write_text(yaml.safe_dump(config))
    return path


def test_overrides_parse_values_as_yaml():
    data = apply_overrides(
        {"trainer": {"max_epochs": 3}}, ["trainer.max_epochs=5", "model.params.dims=[1, 2]", "seed=x"]
    )
    assert data == {"trainer": {"max_epochs": 5}, "model": {"params": {"dims": [1, 2]}}, "seed": "x"}
    with pytest.raises(InvalidArgumentError, match="key=value"):
        apply_overrides({}, ["no-equals-sign"])
    with pytest.raises(InvalidArgumentError, match="trainer.max_epochs is not a mapping"):
        apply_overrides({"trainer": {"max_epochs": 3}}, ["trainer.max_epochs.x=1"])


def test_override_into_a_defaulted_section_keeps_its_other_defaults():
    from repscope.studies.invariance.repo import RepoConfig

    # the repository's default data is digits from the MNIST sample; changing one parameter keeps the rest
    config = load_config(None, RepoConfig, ["data.params.source=fashion-mnist", "count=7"])
    assert config.data.name == "digits"
    assert config.data.params == {"source": "fashion-mnist", "target": "label"}
    assert config.count == 7
    # a section the data sets itself is not filled from the default
    data = apply_overrides({"data": {"name": "cifar10"}}, ["data.params.data_dir=/x"], RepoConfig)
    assert data == {"data": {"name": "cifar10", "params": {"data_dir": "/x"}}}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"batchsize": 3}, "unknown key batchsize"),
        ({"trainer": {"max_epochs": "many"}}, "key trainer.max_epochs"),
        ({"trainer": {"max_epoch": 2}}, "unknown key trainer.max_epoch"),
        ({"model": {"name": "lenet5", "params": {"learning_rate": 1}}}, "unknown key model.params.learning_rate"),
        ({"model": {"name": "lenet5", "params": {"lr": "fast"}}}, "key model.params.lr"),
        ({"model": {"name": "lenet5", "params": {"num_outputs": 3}}}, "model.params.num_outputs is set by"),
        # a task's rule on a value (its Config field) is checked with the config, naming the key and the value
        ({"model": {"name": "beta-vae", "params": {"beta": -1}}}, r"key model\.params\.beta: .*\(got -1\)"),
        ({"model": {"name": "dip-vae-i-semi", "params": {"supervision": "x"}}}, r"model\.params\.supervision: .*'x'"),
        ({"data": {"name": "digits", "params": {"sauce": "x"}}}, "unknown key data.params.sauce"),
        ({"model": {"name": "resnet-152", "params": {}}}, "unknown model 'resnet-152'"),
    ],
)
def test_bad_configs_name_the_key_and_the_file(tmp_path, changes, message):
    path = write_config(tmp_path / "bad.yaml", **changes)
    with pytest.raises(InvalidArgumentError, match=message) as info:
        config = load_config(path, TrainConfig)
        config.check_params(f"config {path}")
    assert str(path) in str(info.value) or "model.name" in str(info.value)


def test_unparsable_yaml_is_a_data_format_error(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("model: [unclosed\n")
    with pytest.raises(DataFormatError, match="broken.yaml.*not valid YAML"):
        load_config(path, TrainConfig)


def test_shipped_configs_are_valid():
    for name in ("train-lenet5-plain", "train-beta-vae"):
        config = load_config(shipped_config_path(name), TrainConfig)
        config.check_params(name)


@pytest.fixture(scope="module")
def lenet_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    config = load_config(write_config(root / "lenet.yaml"), TrainConfig)
    return fit(config, out=root / "run"), root


def test_training_writes_the_run_directory_and_learns(lenet_run):
    outcome, _ = lenet_run
    run = outcome.run.root
    assert {p.name for p in run.iterdir()} >= {"config.yaml", "metrics.json", "checkpoints", "tables", "logs"}
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["epochs"] == 2 and metrics["n_train"] == 270 and metrics["n_val"] == 30
    assert metrics["test_accuracy"] > 0.5  # 10 classes: chance is 0.1
    curves = pd.read_csv(run / "tables" / "training_curves.csv")
    assert list(curves["epoch"]) == [0, 1]
    assert {"train_loss_epoch", "val_loss"} <= set(curves.columns)
    assert curves["train_loss_epoch"].iloc[1] < curves["train_loss_epoch"].iloc[0]
    stored = yaml.safe_load((run / "config.yaml").read_text())
    assert stored["model"] == {"name": "lenet5", "params": {"lr": 0.002}} and "repscope_version" in stored


def test_the_training_report_is_drawn_without_warnings(lenet_run):
    """A user sees the report path, not matplotlib's layout warnings (tight_layout on a constrained figure)."""
    import warnings

    from repscope.report.training import training_report
    from repscope.train.fitting import epoch_curves

    outcome, root = lenet_run
    config = load_config(root / "lenet.yaml", TrainConfig)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = training_report(config, outcome.task, outcome.data, outcome.metrics, epoch_curves(outcome.run.root))
    assert "test_accuracy" in report.render()


def test_reloaded_final_weights_give_the_same_outputs(lenet_run):
    outcome, _ = lenet_run
    images = outcome.data.arrays("test", ["image"])["image"]
    reloaded = load_task(outcome.run.root)
    outcome.task.eval()
    assert np.array_equal(reloaded.predict(images), outcome.task.predict(images))
    raw = read_checkpoint(outcome.run.root / "checkpoints" / "final.ckpt")
    assert raw["hyper_parameters"]["network"] == "lenet5"


def test_resume_continues_from_the_last_checkpoint(lenet_run, tmp_path):
    outcome, root = lenet_run
    config = load_config(root / "lenet.yaml", TrainConfig, ["trainer.max_epochs=3"])
    resumed = fit(config, out=outcome.run.root, resume=True)
    curves = pd.read_csv(outcome.run.root / "tables" / "training_curves.csv")
    assert resumed.metrics["epochs"] == 3 and list(curves["epoch"]) == [0, 1, 2]
    changed = load_config(root / "lenet.yaml", TrainConfig, ["trainer.max_epochs=4", "batch_size=16"])
    # more epochs may change; the batch size may not, and the refusal says from what to what
    with pytest.raises(InvalidArgumentError, match=r"was trained with batch_size 32, now 16 \(on resume only"):
        fit(changed, out=outcome.run.root, resume=True)
    with pytest.raises(OutputExistsError):
        fit(config, out=outcome.run.root)


def test_corrupt_and_mismatched_checkpoints_are_clear_errors(lenet_run, tmp_path):
    outcome, _ = lenet_run
    final = outcome.run.root / "checkpoints" / "final.ckpt"
    corrupt = tmp_path / "corrupt.ckpt"
    corrupt.write_bytes(final.read_bytes()[:1000])
    with pytest.raises(DataFormatError, match="corrupt.ckpt"):
        load_task(corrupt, model="lenet5")
    with pytest.raises(DataFormatError, match="does not match model 'mlp'|do not fit model 'mlp'"):
        load_task(final, model="mlp")
    with pytest.raises(DataFormatError, match="model 'beta-vae'"):
        load_task(final, model="beta-vae")
    # a pickle that would run code is refused by weights_only loading
    import pickle

    class Exploit:
        def __reduce__(self):
            return (print, ("pwned",))

    evil = tmp_path / "evil.ckpt"
    evil.write_bytes(pickle.dumps({"state_dict": Exploit()}))
    with pytest.raises(DataFormatError, match="evil.ckpt"):
        read_checkpoint(evil)
    # garbage of every kind is a DataFormatError naming the file (b"broken" fails inside torch's unpickler
    # with an IndexError)
    for k, garbage in enumerate((b"broken", b"not a checkpoint", b"\x80\x02}q", b"PK\x03\x04")):
        (tmp_path / f"garbage{k}.ckpt").write_bytes(garbage)
        with pytest.raises(DataFormatError, match=f"garbage{k}.ckpt: not a readable checkpoint"):
            read_checkpoint(tmp_path / f"garbage{k}.ckpt")


def test_supervised_model_needs_a_target(tmp_path):
    path = write_config(
        tmp_path / "c.yaml", data={"name": "digits", "params": {"train_size": 50, "test_size": 20, "target": "none"}}
    )
    with pytest.raises(InvalidArgumentError, match="data.params.target"):
        fit(load_config(path, TrainConfig), out=tmp_path / "run")


def test_cli_train_with_flags_and_one_line_errors(tmp_path, capsys):
    path = write_config(tmp_path / "mlp.yaml", model={"name": "mlp", "params": {}})
    result = CliRunner().invoke(
        app,
        [
            "train",
            str(path),
            "--out",
            str(tmp_path / "run"),
            "--epochs",
            "1",
            "--set",
            "data.params.target=label",
            "--accelerator",
            "cpu",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"run: {tmp_path / 'run'}" in result.output
    stored = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert stored["trainer"]["max_epochs"] == 1 and stored["trainer"]["accelerator"] == "cpu"
    with pytest.raises(SystemExit) as exit_info:
        main(["train", str(path), "--set", "trainer.max_epochs=zero"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "trainer.max_epochs" in err[0] and "mlp.yaml" in err[0]

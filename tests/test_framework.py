"""The framework: datasets as described fields, dict batches, tasks built from the data, fit() and its
failures (nothing left behind), the study registry and its CLI, a beta-VAE on dSprites 64x64."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import yaml

from repscope.cli import main
from repscope.config import load_config
from repscope.data.datasets import ArraySplit, Dataset, FieldSpec, GeneratorSplit
from repscope.data.multimodal.cdsprites import CdSpritesPlus
from repscope.data.multimodal.datasets import cdsprites_dataset, dsprites_dataset
from repscope.data.registry import DATASETS, load_dataset
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.studies.registry import STUDIES
from repscope.train.config import Named, TrainConfig
from repscope.train.datamodule import DatasetModule
from repscope.train.fitting import build_task, fit, load_task
from repscope.train.registry import MODELS

SMALL_DIGITS = {
    "name": "digits",
    "params": {"source": "mnist-sample", "train_size": 120, "test_size": 40, "target": "label"},
}


def cli(argv):
    """Run the CLI in this process; a successful command ends with exit status 0."""
    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code in (0, None), f"exit status {exc.code}"


def config(tmp_path, **changes):
    data = {
        "model": {"name": "lenet5", "params": {"lr": 0.002}},
        "data": SMALL_DIGITS,
        "trainer": {"max_epochs": 1},
        "batch_size": 32,
        "seed": 0,
    }
    data.update(changes)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# ---------------------------------------------------------------------------------------------
# datasets


def test_digits_dataset_describes_its_fields_and_serves_channels_first_images():
    dataset = load_dataset("digits", **SMALL_DIGITS["params"])
    assert dataset.image_shape == (1, 28, 28) and dataset.target == "label" and dataset.num_classes == 10
    assert dataset.fields["image"].kind == "image" and dataset.fields["label"].kind == "categorical"
    assert set(dataset.splits) == {"train", "test"} and len(dataset.split("train")) == 120
    batch = dataset.batch("train", np.array([3, 0]), ["image", "target"])
    plain = dataset.extras["training_set"]
    assert batch["image"].shape == (2, 1, 28, 28) and batch["image"].dtype == np.uint8
    assert np.array_equal(batch["image"][:, 0], plain.train_images[[3, 0]])
    assert np.array_equal(batch["target"], plain.train_targets[[3, 0]])


def test_morpho_mnist_targets_are_fields_of_their_kind():
    abnormal = load_dataset("morpho-mnist", set="local", target="abnormal", train_size=60, test_size=30)
    thickness = load_dataset("morpho-mnist", set="global", target="thickness", train_size=60, test_size=30)
    assert abnormal.target_kind == "classification" and abnormal.num_classes == 2
    assert thickness.target_kind == "regression" and thickness.fields["thickness"].dtype == "float32"
    values = thickness.arrays("test", ["target"])["target"]
    assert np.allclose(values, thickness.extras["training_set"].test_morphometrics["thickness"])


def test_dsprites_dataset_splits_are_disjoint_and_images_match_the_grid():
    from repscope.data import dsprites

    dataset = dsprites_dataset(train_size=500, test_size=100, seed=3, target="shape")
    train, test = dataset.split("train"), dataset.split("test")
    assert not set(train.indices) & set(test.indices)
    batch = dataset.batch("test", np.arange(5), ["image", "factors", "index", "target"])
    assert batch["image"].shape == (5, 1, 64, 64) and set(np.unique(batch["image"])) <= {0, 255}
    assert np.array_equal(batch["image"][:, 0] // 255, dsprites.render(dsprites.index_to_classes(batch["index"])))
    assert np.array_equal(batch["target"], batch["factors"][:, 1])
    assert dataset.num_classes == 3


def test_cdsprites_in_memory_and_on_demand_give_the_same_samples():
    kwargs = {"level": 3, "train_size": 20, "val_size": 10, "test_size": 10, "seed": 1, "target": "colour"}
    streamed, held = cdsprites_dataset(**kwargs), cdsprites_dataset(**kwargs, in_memory=True)
    rows = np.array([0, 7, 19])
    a = streamed.batch("train", rows, ["image", "target"])
    b = held.batch("train", rows, ["image", "target"])
    assert np.array_equal(a["image"], b["image"]) and np.array_equal(a["target"], b["target"])
    images, captions, table = CdSpritesPlus(3, size=20, seed=1).batch(rows)
    assert np.array_equal(a["image"], images.transpose(0, 3, 1, 2)) and np.array_equal(a["target"], table[:, 2])
    with pytest.raises(InvalidArgumentError, match="target"):
        cdsprites_dataset(level=2, target="colour")


def test_split_checks_and_dataset_errors_name_what_is_wrong():
    split = ArraySplit({"image": np.zeros((4, 2, 2), np.uint8), "y": np.arange(4)}, image_shapes={"image": (1, 2, 2)})
    with pytest.raises(InvalidArgumentError, match="indices"):
        split.batch(np.array([4]))
    with pytest.raises(InvalidArgumentError, match="no field 'z'"):
        split.batch(np.array([0]), ["z"])
    with pytest.raises(InvalidArgumentError, match="differ in length"):
        ArraySplit({"a": np.zeros(3), "b": np.zeros(4)})
    fields = {"image": FieldSpec("image", (1, 2, 2), "uint8")}
    with pytest.raises(InvalidArgumentError, match="train"):
        Dataset("x", {"test": split}, fields)
    dataset = Dataset("x", {"train": split}, fields)
    with pytest.raises(InvalidArgumentError, match="no target"):
        dataset.batch("train", np.array([0]), ["target"])
    with pytest.raises(InvalidArgumentError, match="has train, not 'val'"):
        dataset.split("val")


def test_a_parameter_the_loader_does_not_take_is_named_in_one_line():
    # a wrapped loader (digits, morpho-mnist) shows the signature it wraps; the key is refused before it runs
    with pytest.raises(InvalidArgumentError, match="dataset 'digits' takes no parameter 'size'; it takes source"):
        load_dataset("digits", source="mnist-sample", size=32)


def test_datamodule_holds_out_the_seeded_validation_digits_and_serves_dict_batches():
    dataset = load_dataset("digits", **SMALL_DIGITS["params"])
    module = DatasetModule(dataset, ("image", "target"), batch_size=16, val_fraction=0.25, seed=5)
    order = np.random.default_rng([5, 17]).permutation(120)
    assert np.array_equal(module.val_set.rows, np.sort(order[:30]))
    assert np.array_equal(module.train_set.rows, np.sort(order[30:]))
    batch = next(iter(module.train_dataloader()))
    assert set(batch) == {"image", "target"} and batch["image"].dtype == torch.float32
    assert batch["image"].shape == (16, 1, 28, 28) and 0.0 <= batch["image"].min() and batch["image"].max() <= 1.0
    again = next(iter(DatasetModule(dataset, ("image", "target"), 16, 0.25, 5).train_dataloader()))
    assert torch.equal(batch["image"], again["image"])
    # a dataset with its own validation split uses it
    sprites = cdsprites_dataset(level=1, train_size=12, val_size=6, test_size=6, target="shape")
    assert len(DatasetModule(sprites, ("image", "target"), 4).val_set) == 6


def test_generator_split_serves_a_chosen_subset():
    split = GeneratorSplit(CdSpritesPlus(1, size=30, seed=2), indices=[5, 9])
    assert len(split) == 2
    assert np.array_equal(split.batch(np.array([1]), ["index"])["index"], [9])


# ---------------------------------------------------------------------------------------------
# models built from the data


def test_tasks_take_the_image_shape_and_target_from_the_data():
    sprites = dsprites_dataset(train_size=64, test_size=16, target="scale")
    vae = build_task(
        TrainConfig(model=Named(name="beta-vae", params={"latent_dim": 3}), data=Named(name="dsprites")),
        sprites.with_target(None),
    )
    assert vae.hparams.image_shape == [1, 64, 64] and vae.hparams.architecture == "conv64"
    assert vae.sample(2, seed=0).shape == (2, 64, 64)
    lenet = build_task(TrainConfig(model=Named(name="lenet5"), data=Named(name="dsprites")), sprites)
    assert lenet.hparams.num_outputs == 6 and lenet.predict(np.zeros((2, 64, 64), np.uint8)).shape == (2,)
    with pytest.raises(InvalidArgumentError, match="28x28"):
        build_task(TrainConfig(model=Named(name="gan"), data=Named(name="dsprites")), sprites)
    assert {"beta-vae", "gan", "infogan", "lenet5", "mlp", "attribute-cnn"} <= set(MODELS)
    assert {"digits", "morpho-mnist", "dsprites", "cdsprites"} <= set(DATASETS)


def test_a_vae_regulariser_is_one_hook():
    from repscope.train.tasks import VAETask

    class NoKL(VAETask):
        def regulariser(self, mean, log_var, z):
            return {"regulariser": torch.zeros(()), "kl": torch.zeros(())}

    torch.manual_seed(0)
    task = NoKL(latent_dim=2)
    losses = task.losses(torch.rand(4, 1, 28, 28))
    assert torch.equal(losses["loss"], losses["reconstruction"])


# ---------------------------------------------------------------------------------------------
# fit: failures leave nothing behind


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--precision", "17-bogus", "precision"),
        ("--accelerator", "tpu9", "accelerator"),
    ],
)
def test_bad_trainer_flags_are_one_line_and_leave_no_run_directory(tmp_path, capsys, flag, value, message):
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        main(["train", str(config(tmp_path)), "--out", str(out), flag, value])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not out.exists()
    cli(["train", str(config(tmp_path)), "--out", str(out)])  # the corrected command runs
    assert (out / "metrics.json").is_file()


def test_a_bad_source_leaves_nothing_that_blocks_the_corrected_command(tmp_path, capsys):
    out = tmp_path / "run"
    bad = config(tmp_path, data={"name": "digits", "params": {"source": str(tmp_path / "nowhere.npy")}})
    with pytest.raises(SystemExit):
        main(["train", str(bad), "--out", str(out)])
    assert not out.exists()


def test_resume_refuses_checkpoints_it_cannot_continue_before_writing(tmp_path):
    cfg = load_config(config(tmp_path), TrainConfig)
    run = fit(cfg, out=tmp_path / "run", report=False).run.root
    last = run / "checkpoints" / "last.ckpt"
    checkpoint = torch.load(last, weights_only=True)
    before = sorted(p.name for p in run.iterdir())
    torch.save({"state_dict": checkpoint["state_dict"]}, last)  # no epoch, optimiser states ...
    with pytest.raises(DataFormatError, match="last.ckpt.*training state"):
        fit(cfg, out=run, resume=True)
    state = dict(checkpoint["state_dict"])
    state["network.classifier.4.weight"] = torch.zeros(3, 84)
    torch.save({**checkpoint, "state_dict": state}, last)
    with pytest.raises(DataFormatError, match="last.ckpt.*shape"):
        fit(cfg, out=run, resume=True)
    assert sorted(p.name for p in run.iterdir()) == before  # no logs-resume-1


def test_load_task_names_bad_hyper_parameters_and_bad_configs(tmp_path):
    cfg = load_config(config(tmp_path), TrainConfig)
    run = fit(cfg, out=tmp_path / "run", report=False).run.root
    final = run / "checkpoints" / "final.ckpt"
    checkpoint = torch.load(final, weights_only=True)
    torch.save({**checkpoint, "hyper_parameters": {**checkpoint["hyper_parameters"], "num_outputs": -3}}, final)
    with pytest.raises(DataFormatError, match="final.ckpt.*hyper-parameters"):
        load_task(run)
    (run / "config.yaml").write_bytes(b"model: [\xff\n")
    with pytest.raises(DataFormatError, match="config.yaml"):
        load_task(run)


def test_beta_vae_on_dsprites_trains_through_repscope_train_with_the_shipped_config(tmp_path, capsys):
    from repscope.config import shipped_config_path

    out = tmp_path / "bvae"
    cli(
        [
            "train",
            str(shipped_config_path("train-beta-vae-dsprites")),
            "--out",
            str(out),
            "--epochs",
            "1",
            "--set",
            "data.params.train_size=256",
            "--set",
            "data.params.test_size=32",
            "--set",
            "batch_size=32",
        ]
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["n_train"], metrics["n_val"], metrics["n_test"], metrics["epochs"]) == (
        253,
        3,
        32,
        1,
    )  # 1% held out
    assert np.isfinite(metrics["test_loss"]) and metrics["test_reconstruction"] > 0
    assert (out / "report.html").is_file() and "report.html" in capsys.readouterr().out
    task = load_task(out)
    assert task.hparams.image_shape == [1, 64, 64] and task.encode(np.zeros((3, 64, 64), np.uint8)).shape == (3, 10)


# ---------------------------------------------------------------------------------------------
# studies from the registry


def test_every_registered_study_is_a_command_that_prints_its_config(capsys):
    for entry in STUDIES:
        argv = [entry.area, entry.name, "--print-config"]
        if entry.area == "sprites":
            argv += ["some-folder", "--level", "3"]
        if (entry.area, entry.name) == ("zeroshot", "evaluate"):
            argv.append("LeNet")
        if entry.quick:
            argv.append("--quick")
        cli(argv)
        printed = yaml.safe_load(capsys.readouterr().out)
        assert isinstance(printed, dict) and printed, entry.name
    cli(["morpho", "supervised", "--print-config", "--quick", "--set", "seed=4", "--accelerator", "cpu"])
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["seed"] == 4 and printed["training"]["trainer"]["max_epochs"] == 4
    assert printed["training"]["trainer"]["accelerator"] == "cpu"


def test_study_config_errors_name_the_key(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["morpho", "diversity", "--set", "samples_per_model=3", "--print-config"])
    assert exit_info.value.code == 1
    assert "unknown key samples_per_model" in capsys.readouterr().err

"""Batches held on the device (``trainer.data_placement``): the same batches, and so the same training,
as the DataLoader path, without its per-step host work."""

from __future__ import annotations

import lightning.pytorch as pl
import numpy as np
import pytest
import torch

from repscope.data.datasets import ArraySplit, Dataset, FieldSpec
from repscope.data.registry import load_dataset
from repscope.errors import InvalidArgumentError
from repscope.train.config import TrainConfig
from repscope.train.datamodule import DatasetModule, DeviceBatches, DeviceStore, SplitView, loader
from repscope.train.fitting import build_task

STEPS = 20
# MVAE's step on 64x64 colour images costs ~1.5 s on a CPU core: 6 steps (one epoch of 120 rows at batch
# 6 is 20) still take rows from several batches of the shuffled order, enough to catch a wrong row or order
STEPS_OF_CASE = {"MVAE, CdSprites+": 6}


def small_digits(n: int = 150) -> Dataset:
    """uint8 images, a float field and an int target, in memory (no symmetry: every row differs)."""
    rng = np.random.default_rng(4)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    arrays = {"image": images, "label": (np.arange(n) * 7) % 10, "value": rng.normal(size=n).astype(np.float32)}
    fields = {
        "image": FieldSpec("image", (1, 28, 28), "uint8"),
        "label": FieldSpec("categorical", (), "int64", 10),
        "value": FieldSpec("continuous", (), "float32"),
    }
    split = ArraySplit(arrays, image_shapes={"image": (1, 28, 28)})
    test = ArraySplit({k: v[:10] for k, v in arrays.items()}, image_shapes={"image": (1, 28, 28)})
    return Dataset("tiny", {"train": split, "test": test}, fields, "label")


def test_device_batches_are_the_loader_batches_epoch_after_epoch():
    dataset = small_digits()
    view = SplitView(dataset, "train", ("image", "target", "value"), rows=np.arange(3, 140, 2))
    store = DeviceStore(view, "cpu")
    assert store.tensors["image"].dtype == torch.uint8  # held as bytes, a quarter of float32
    for shuffle, drop_last in ((True, True), (True, False), (False, False)):
        ours = DeviceBatches(store, 16, shuffle=shuffle, seed=11, drop_last=drop_last)
        theirs = loader(view, 16, shuffle=shuffle, seed=11, drop_last=drop_last)
        assert len(ours) == len(theirs)
        for _ in range(3):  # each epoch draws a new order from the same generator in both
            pairs = list(zip(ours, theirs, strict=True))
            for mine, reference in pairs:
                assert mine.keys() == reference.keys()
                for name in mine:
                    assert mine[name].dtype == reference[name].dtype, name
                    assert torch.equal(mine[name], reference[name]), name
    # shuffled epochs differ from each other (the order really is redrawn)
    batches = DeviceBatches(store, 16, shuffle=True, seed=11)
    first, second = next(iter(batches))["value"], next(iter(batches))["value"]
    assert not torch.equal(first, second)


class StepLosses(pl.Callback):
    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        self.losses.append(float(loss))


def train_steps(case: tuple, dataset: Dataset, placement: str, steps: int = STEPS) -> tuple[list[float], dict]:
    model, params, data, data_params, batch_size = case
    config = TrainConfig.model_validate(
        {"model": {"name": model, "params": params}, "data": {"name": data, "params": data_params}}
    )
    pl.seed_everything(0, verbose=False)
    task = build_task(config, dataset)
    module = DatasetModule(dataset, task.batch_fields, batch_size=batch_size, seed=5, placement=placement)
    record = StepLosses()
    trainer = pl.Trainer(
        accelerator="cpu",
        max_steps=steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[record],
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    trainer.fit(task, datamodule=module)
    assert module.placed == (placement == "device")
    return record.losses, {k: v.clone() for k, v in task.state_dict().items()}


CASES = {
    # in memory; a classifier reading the target
    "supervised, digits": ("lenet5", {}, "digits", {"train_size": 200, "test_size": 20, "target": "label"}, 16),
    # drawn on demand by its generator (placing it generates every row once)
    "VAE, dSprites": ("beta-vae", {"latent_dim": 4}, "dsprites", {"train_size": 200, "test_size": 8}, 10),
    # several fields: colour images, caption characters and their mask
    "MVAE, CdSprites+": (
        "mvae",
        {"latent_dim": 4},
        "cdsprites",
        {"level": 1, "train_size": 120, "val_size": 8, "test_size": 8},
        6,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_steps_on_the_device_path_give_the_loader_paths_losses_and_weights(case):
    _, _, data, data_params, _ = CASES[case]
    dataset = load_dataset(data, **data_params)
    steps = STEPS_OF_CASE.get(case, STEPS)
    held, held_state = train_steps(CASES[case], dataset, "device", steps)
    loaded, loaded_state = train_steps(CASES[case], dataset, "loader", steps)
    assert len(held) == len(loaded) == steps
    assert held == loaded  # bit for bit: same rows, same conversion, same order of operations
    assert all(torch.equal(held_state[k], loaded_state[k]) for k in held_state)


def test_auto_holds_in_memory_data_and_leaves_generated_data_to_the_loader_on_the_cpu():
    digits = small_digits()
    module = DatasetModule(digits, ("image", "target"), placement="auto")
    assert module.uses_device()
    sprites = load_dataset("dsprites", train_size=64, test_size=8)
    assert not DatasetModule(sprites, ("image",), placement="auto").uses_device()
    # worker processes ask for the DataLoader
    assert not DatasetModule(digits, ("image",), num_workers=1, placement="auto").uses_device()
    with pytest.raises(InvalidArgumentError, match="data_placement: device serves one process"):
        DatasetModule(digits, ("image",), num_workers=1, placement="device").uses_device()
    with pytest.raises(InvalidArgumentError, match="data_placement: one of auto, loader, device"):
        DatasetModule(digits, ("image",), placement="gpu")


def test_a_run_records_how_its_batches_were_served(tmp_path):
    from repscope.train.fitting import fit

    config = TrainConfig.model_validate(
        {
            "model": {"name": "beta-vae", "params": {"latent_dim": 2}},
            "data": {"name": "digits", "params": {"train_size": 64, "test_size": 16, "target": "none"}},
            "trainer": {"max_epochs": 1, "logger": "none", "data_placement": "device"},
            "batch_size": 32,
        }
    )
    outcome = fit(config, out=tmp_path / "run", report=False)
    assert outcome.metrics["data_placement"] == "device"
    # compile and placement are not part of what a resumed run must repeat
    resumed = config.model_copy(update={"trainer": config.trainer.model_copy(update={"max_epochs": 2})})
    resumed.trainer.data_placement = "loader"
    again = fit(resumed, out=tmp_path / "run", resume=True, report=False)
    assert again.metrics["epochs"] == 2 and again.metrics["data_placement"] == "loader"


@pytest.mark.slow  # inductor compiles C++ kernels: about a minute on 2 cores
def test_compiled_networks_train_to_the_same_losses_and_save_the_same_keys(tmp_path):
    from repscope.train.fitting import fit

    def run(mode: str):
        config = TrainConfig.model_validate(
            {
                "model": {"name": "beta-vae", "params": {"latent_dim": 2}},
                "data": {"name": "digits", "params": {"train_size": 96, "test_size": 16, "target": "none"}},
                "trainer": {"max_epochs": 1, "logger": "none", "compile": mode},
                "batch_size": 32,
            }
        )
        return fit(config, out=tmp_path / mode, report=False)

    plain, compiled = run("off"), run("default")
    plain_state = torch.load(tmp_path / "off" / "checkpoints" / "final.ckpt", weights_only=True)["state_dict"]
    compiled_state = torch.load(tmp_path / "default" / "checkpoints" / "final.ckpt", weights_only=True)["state_dict"]
    assert plain_state.keys() == compiled_state.keys()  # compiled in place: no _orig_mod prefixes
    # the same training up to float rounding (compiled kernels fuse and reorder operations): 527.72
    # against 527.79 here; a compiled network that lost a term or a layer would be far off
    assert compiled.metrics["test_loss"] == pytest.approx(plain.metrics["test_loss"], rel=1e-3)

"""Training throughput on CPU: images/s for one epoch of the beta-VAE and LeNet-5, and whether data
loading is the bottleneck.

For each model, in one run on the same real digits:

* ``trainer``: one epoch through ``lightning.pytorch.Trainer`` with our ``DatasetModule`` (dict
  batches of a registered dataset: the digits in memory, dSprites drawn on demand);
* ``preloaded``: the same number of optimisation steps in a plain loop over batches sliced in
  advance from one tensor (no DataLoader, no Lightning): the ceiling the model itself allows;
* ``loader only``: iterating the DataModule's train loader without any model.

``trainer / preloaded`` near 1 and ``loader only`` far above both mean the data never starve the
model.

    .venv/bin/python benchmarks/train_throughput.py [--digits 4000] [--batch-size 64] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def _digits(n: int) -> tuple[np.ndarray, np.ndarray]:
    from repscope.data.sources import load_source

    source = load_source("mnist-sample")
    order = np.random.default_rng(0).permutation(len(source.images))
    reps = -(-n // len(order))
    index = np.concatenate([order] * reps)[:n]
    return source.images[index], source.labels[index].astype(np.int64)


def _trainer_epoch(task, module) -> float:
    import lightning.pytorch as pl

    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    start = time.perf_counter()
    trainer.fit(task, train_dataloaders=module.train_dataloader())
    return time.perf_counter() - start


def _preloaded_epoch(task, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> float:
    """Same steps by hand: the task's optimiser and training step, batches pre-sliced."""
    import warnings

    warnings.filterwarnings("ignore", message=".*self.log.*")  # no Trainer here to log to
    batches = [
        {"image": x[i : i + batch_size], "target": y[i : i + batch_size]}
        for i in range(0, len(x) - batch_size + 1, batch_size)
    ]
    optimisers = task.configure_optimizers()
    optimiser = optimisers[0] if isinstance(optimisers, (list, tuple)) else optimisers
    task.train()
    start = time.perf_counter()
    for index, batch in enumerate(batches):
        loss = task.training_step(batch, index)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    return time.perf_counter() - start


def _loader_only(module) -> float:
    start = time.perf_counter()
    for _ in module.train_dataloader():
        pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--digits", type=int, default=4000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from repscope.data.morpho.training_sets import TrainingSet, as_dataset
    from repscope.data.multimodal.datasets import dsprites_dataset
    from repscope.train.datamodule import DatasetModule
    from repscope.train.fitting import quiet_lightning
    from repscope.train.tasks import SupervisedTask, VAETask

    quiet_lightning()
    images, labels = _digits(args.digits)
    digits = as_dataset(
        TrainingSet(images, labels, images[:1], labels[:1], "label", 10, "benchmark", labels, labels[:1]), "digits"
    )
    sprites = dsprites_dataset(train_size=args.digits, test_size=1)

    print(f"# training throughput, images/s, {args.digits} images, batch {args.batch_size}, {args.threads} threads")
    print(f"{'model':<22}{'trainer':>10}{'preloaded':>11}{'ratio':>8}{'loader only':>13}")
    cases = (
        ("beta-VAE 64, digits", digits, lambda: VAETask(latent_dim=64, beta=4.0)),
        ("LeNet-5, digits", digits, lambda: SupervisedTask(network="lenet5", kind="classification", num_outputs=10)),
        (
            "beta-VAE conv64, dSprites",
            sprites,
            lambda: VAETask(latent_dim=10, beta=4.0, image_shape=(1, 64, 64), architecture="conv64"),
        ),
    )
    for name, dataset, make in cases:
        fields = make().batch_fields
        module = DatasetModule(dataset, fields, batch_size=args.batch_size, val_fraction=0.0, seed=0)
        steps = len(module.train_dataloader())
        n = steps * args.batch_size
        everything = module.train_set.__getitems__(list(range(len(module.train_set))))
        x, y = everything["image"], everything.get("target", torch.zeros(len(everything["image"])))
        loader_rate = n / _loader_only(module)
        torch.manual_seed(0)
        trainer_rate = n / _trainer_epoch(make(), module)
        torch.manual_seed(0)
        preloaded_rate = n / _preloaded_epoch(make(), x, y, args.batch_size)
        print(
            f"{name:<22}{trainer_rate:>10.0f}{preloaded_rate:>11.0f}{trainer_rate / preloaded_rate:>7.2f}x"
            f"{loader_rate:>13.0f}"
        )


if __name__ == "__main__":
    main()

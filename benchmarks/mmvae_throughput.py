"""Training throughput of the multimodal VAEs on CdSprites+ level 1 (CPU): samples/s per model.

Each model trains ``--steps`` optimisation steps on the same pre-drawn batches (images and captions of
level 1, batch ``--batch-size``, latent ``--latent-dim``) with the shipped config's networks, after two
warm-up steps; the plain loop measures the models themselves, not data loading (the CdSprites+
loader delivers ~12,000 level-5 samples/s with 2 workers; see the README). MMVAE runs with K = 1
(ELBO) and with the DReG objective at ``--k`` samples.

    .venv/bin/python benchmarks/mmvae_throughput.py [--steps 30] [--batch-size 32] [--threads 2]

The comparison with the MultiVae library at equal network sizes is still to be added.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def _batches(n_batches: int, batch_size: int) -> list[dict[str, torch.Tensor]]:
    from repscope.data.sprites.datasets import cdsprites_dataset
    from repscope.train.datamodule import field_to_tensor

    data = cdsprites_dataset(level=1, train_size=n_batches * batch_size, val_size=1, test_size=1, seed=0)
    arrays = data.batch("train", np.arange(n_batches * batch_size), ["image", "text", "mask"])
    tensors = {name: field_to_tensor(values, data.fields[name].kind) for name, values in arrays.items()}
    return [{k: v[i * batch_size : (i + 1) * batch_size] for k, v in tensors.items()} for i in range(n_batches)]


def _rate(model: str, objective: str, k: int, batches, latent_dim: int) -> float:
    from repscope.data.sprites.datasets import cdsprites_dataset
    from repscope.train.tasks.multimodal import MultimodalVAETask

    fields = cdsprites_dataset(level=1, train_size=1, val_size=1, test_size=1).fields
    specs = {name: {"shape": list(spec.shape), "classes": spec.classes} for name, spec in fields.items()}
    torch.manual_seed(0)
    task = MultimodalVAETask(model, latent_dim=latent_dim, objective=objective, k=k, field_specs=specs)
    optimiser = torch.optim.Adam(task.parameters(), lr=1e-3)

    def step(batch):
        loss = task.losses(batch)["loss"]
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()

    for batch in batches[:2]:
        step(batch)
    started = time.perf_counter()
    for batch in batches[2:]:
        step(batch)
    return sum(len(b["image"]) for b in batches[2:]) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--latent-dim", type=int, default=16)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    batches = _batches(args.steps + 2, args.batch_size)
    print(
        f"# multimodal VAEs on CdSprites+ level 1, batch {args.batch_size}, latent {args.latent_dim}, "
        f"{args.threads} threads: training samples/s"
    )
    for model, objective, k in (
        ("mvae", "elbo", 1),
        ("mmvae", "elbo", 1),
        ("mmvae", "dreg", args.k),
        ("mopoe", "elbo", 1),
        ("dmvae", "elbo", 1),
    ):
        label = f"{model} ({objective}, K = {k})"
        print(f"{label:<24}{_rate(model, objective, k, batches, args.latent_dim):>10.1f}")


if __name__ == "__main__":
    main()

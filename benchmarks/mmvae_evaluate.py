"""The model steps of ``repscope mmvae evaluate`` on CPU and accelerator: seconds per 1,000 test samples.

What ``evaluate_run`` asks of the model, on ``--n`` fresh CdSprites+ test samples of level ``--level``:
cross-generation (text -> image, image -> text), joint samples, the importance-sampled log-likelihoods
(joint, image, text; ``--k`` samples each), the posterior means (joint, image, text) and a latent
traversal. The model has the networks of a shipped config (``--config``: ``mmvae-cdsprites``, the CPU
sizes, or ``mmvae-cdsprites-paper``), freshly initialised (the cost does not depend on the weights).

Rows, in one run on the same samples:

* ``cpu, earlier defaults``: the model on the CPU, 64 examples per log-likelihood pass and 256 elsewhere:
  what every evaluation did before ``--accelerator`` (the model stayed on the CPU even beside a GPU);
  the baseline of the ratios;
* ``cpu, batch B``: the CPU with ``--batch-size`` B;
* ``gpu, batch 1024`` (``ACCELERATOR_BATCH_SIZE``) and ``gpu, batch B``: where torch sees a GPU.

Not timed: drawing the test samples, the coherency classifiers (:mod:`repscope.studies.multimodal.coherency`),
the linear probes, t-SNE and the report, which run on the CPU whatever ``--accelerator`` says. The goal
(issue 27): ``mmvae evaluate --n 10000`` in under a minute on one GPU.

    .venv/bin/python benchmarks/mmvae_evaluate.py [--n 1000] [--k 30] [--batch-size 512] [--model mmvae]
        [--config mmvae-cdsprites] [--threads 2]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

STEPS = ("generation", "log_likelihood", "posterior_means", "traversal")


def _task(model: str, config: str, level: int) -> Any:
    from repscope.data.multimodal.datasets import cdsprites_dataset
    from repscope.studies.multimodal.train import load_multimodal_config
    from repscope.train.registry import task_class

    params = load_multimodal_config(config, [f"model={model}"])[0].train_config().model.params
    fields = cdsprites_dataset(level=level, train_size=1, val_size=1, test_size=1).fields
    specs = {name: {"shape": list(spec.shape), "classes": spec.classes} for name, spec in fields.items()}
    torch.manual_seed(0)
    return task_class(model)(**params, field_specs=specs)


def _synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(step: Callable[[], Any], device: torch.device) -> float:
    _synchronise(device)
    started = time.perf_counter()
    step()  # every step returns numpy arrays: its results are on the host when it returns
    _synchronise(device)
    return time.perf_counter() - started


def _steps(task: Any, test: dict[str, np.ndarray], k: int, forward: int, likelihood: int) -> dict[str, Callable]:
    from repscope.studies.multimodal import analysis

    given = {"image": test["image"], "text": test["text"]}
    n = len(test["image"])

    def generation():
        task.generate({"text": given["text"]}, seed=0, batch_size=forward)
        task.generate({"image": given["image"]}, seed=0, batch_size=forward)
        task.sample(n, seed=0)

    def traversal():
        base = task.encode({"image": given["image"][:1], "text": given["text"][:1]})[0]
        analysis.latent_traversals(task, base, batch_size=forward)

    return {
        "generation": generation,
        "log_likelihood": lambda: analysis.log_likelihoods(task, given, k=k, seed=0, batch_size=likelihood),
        "posterior_means": lambda: analysis.posterior_latents(task, given, batch_size=forward),
        "traversal": traversal,
    }


def main() -> None:
    from repscope.studies.multimodal.evaluate import ACCELERATOR_BATCH_SIZE, CPU_BATCH_SIZES, evaluation_test_set

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="test samples")
    parser.add_argument("--k", type=int, default=30, help="importance samples per example")
    parser.add_argument("--batch-size", type=int, default=512, help="the batch size of the extra rows")
    parser.add_argument("--model", default="mmvae")
    parser.add_argument("--config", default="mmvae-cdsprites")
    parser.add_argument("--level", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--no-cpu", action="store_true", help="leave out the CPU rows (a large --n on a GPU)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    test = evaluation_test_set(args.level, args.n, seed=0)
    task = _task(args.model, args.config, args.level)
    rows: list[tuple[str, torch.device, int, int]] = []
    if not args.no_cpu:
        cpu = torch.device("cpu")
        rows.append(("cpu, earlier defaults", cpu, CPU_BATCH_SIZES["forward"], CPU_BATCH_SIZES["log_likelihood"]))
        rows.append((f"cpu, batch {args.batch_size}", cpu, args.batch_size, args.batch_size))
    if torch.cuda.is_available():
        gpu = torch.device("cuda", torch.cuda.current_device())
        rows.append((f"gpu, batch {ACCELERATOR_BATCH_SIZE}", gpu, ACCELERATOR_BATCH_SIZE, ACCELERATOR_BATCH_SIZE))
        rows.append((f"gpu, batch {args.batch_size}", gpu, args.batch_size, args.batch_size))
    device_name = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    print(
        f"# mmvae evaluate's model steps: {args.model} ({args.config}), level {args.level}, n = {args.n}, "
        f"k = {args.k}, {torch.get_num_threads()} CPU threads, {device_name}; seconds per 1,000 samples"
    )
    print(f"{'# setting':<26}" + "".join(f"{step:>17}" for step in STEPS) + f"{'total':>10}{'speed-up':>10}")
    baseline = None
    for label, device, forward, likelihood in rows:
        task.to(device)
        steps = _steps(task, test, args.k, forward, likelihood)
        _steps(task, {key: value[: min(64, args.n)] for key, value in test.items()}, 2, forward, likelihood)[
            "log_likelihood"
        ]()  # warm-up: kernels, allocator
        seconds = {step: _timed(run, device) * 1000.0 / args.n for step, run in steps.items()}
        total = sum(seconds.values())
        baseline = baseline or total
        print(
            f"{label:<26}" + "".join(f"{seconds[s]:>17.2f}" for s in STEPS) + f"{total:>10.2f}{baseline / total:>10.1f}"
        )
    if not torch.cuda.is_available():
        print("# no GPU here: the gpu rows need a CUDA device")


if __name__ == "__main__":
    main()

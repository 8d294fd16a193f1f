"""Training throughput per model family on the accelerator: samples/s with the data held on the device
against the DataLoader path, at the paper's batch size and at a large one, and the GPU's utilisation.

For every case, in one run on the same machine:

* ``device``: ``Trainer.fit`` with ``trainer.data_placement: device`` (the rows held on the accelerator,
  each batch gathered there by index);
* ``loader``: the same steps with ``data_placement: loader`` (a DataLoader fetches every batch and the
  Trainer copies it over): the baseline, measured in the same run;
* ``util``: the GPU's mean utilisation during the timed ``device`` steps, not the warm-up nor compilation
  (``nvidia-smi``; ``-`` on a CPU);
* with ``--share N``: ``N`` processes train the case at once on the same device (as ``mmvae sweep
  --workers N`` does), each at the paper's batch size; the row gives each one's rate as a share of the
  rate alone (goal: >= 75% with 4 runs on one GPU).

The first ``--warmup`` steps of each fit are not timed (CUDA context, kernel selection, placing the
data). The families: LeNet-5 on digits, the conv64 beta-VAE on dSprites 64x64 (batch 64 and 1024), a
GAN on digits, and the five multimodal VAEs on CdSprites+ level 1 with the paper's networks
(``configs/mmvae-cdsprites-paper.yaml``; batch 32 and 256). Goals (issue 27): >= 3,000 samples/s for
every multimodal model at batch 32, >= 20,000 at 256; beta-VAE >= 20,000 images/s at batch 64,
>= 100,000 at 1024.

    python benchmarks/gpu_throughput.py                   # on a GPU: about 5 minutes
    python benchmarks/gpu_throughput.py --tiny            # CPU, tiny sizes and networks: under a minute
    python benchmarks/gpu_throughput.py --models mvae,beta-vae --precision bf16-mixed --compile default
    python benchmarks/gpu_throughput.py --models mvae --compile reduce-overhead --no-loader
    python benchmarks/gpu_throughput.py --models mvae --batches 32 --no-loader --profile   # host time
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import lightning.pytorch as pl
import torch

PAPER_CONFIG = "mmvae-cdsprites-paper"
CPU_CONFIG = "mmvae-cdsprites"
MULTIMODAL = ("mvae", "mmvae", "mopoe", "dmvae", "mmvae-plus")
CASE_MODELS = ("lenet5", "beta-vae", "gan", *MULTIMODAL)  # the models of cases(), in order


@dataclass
class Case:
    label: str  # what the row says
    model: str  # registered model
    params: dict[str, Any]
    data: str  # registered dataset
    data_params: dict[str, Any]
    batches: tuple[int, ...]  # the paper's batch size, a large one


def multimodal_params(model: str, tiny: bool) -> dict[str, Any]:
    """The paper's networks and settings for ``model`` (the shipped paper config; ``tiny``: the
    shipped CPU config's smaller networks)."""
    from repscope.studies.multimodal.train import load_multimodal_config

    config, _ = load_multimodal_config(CPU_CONFIG if tiny else PAPER_CONFIG, [f"model={model}"])
    return config.train_config().model.params


def cases(tiny: bool) -> list[Case]:
    n = 64 if tiny else 20_000
    sprites_n = 64 if tiny else 100_000
    digits = {"train_size": 256} if tiny else {}
    out = [
        Case("LeNet-5, digits", "lenet5", {}, "digits", {**digits, "target": "label"}, (64, 1024)),
        Case(
            "beta-VAE conv64, dSprites",
            "beta-vae",
            {"latent_dim": 10, "architecture": "conv64"},
            "dsprites",
            {"train_size": sprites_n, "test_size": 8},
            (64, 1024),
        ),
        Case("GAN, digits", "gan", {}, "digits", {**digits, "target": "none"}, (64, 1024)),
    ]
    for model in MULTIMODAL:
        out.append(
            Case(
                f"{model}, CdSprites+ L1",
                model,
                multimodal_params(model, tiny),
                "cdsprites",
                {"level": 1, "train_size": n, "val_size": 8, "test_size": 8},
                (32, 256),
            )
        )
    if tiny:  # one small batch size per case
        out = [Case(c.label, c.model, c.params, c.data, c.data_params, (8,)) for c in out]
    return out


class StepTimer(pl.Callback):
    """Wall time from the end of step ``warmup`` to the end of the fit, with the device synchronised."""

    def __init__(self, warmup: int, profile: bool = False, utilisation: Utilisation | None = None) -> None:
        self.warmup, self.started, self.steps = warmup, None, 0
        # sampled over the timed steps only: a compiled run's first steps spend a minute compiling
        self.utilisation = utilisation
        # cProfile over the timed steps: where the host spends a step (Lightning's loop, the optimiser,
        # the compiled graphs' wrappers) when the device waits for it
        self.profiler = cProfile.Profile() if profile else None

    def _sync(self, module: Any) -> None:
        if module.device.type == "cuda":
            torch.cuda.synchronize(module.device)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.steps += 1
        if self.steps == self.warmup:
            self._sync(pl_module)
            self.started = time.perf_counter()
            if self.utilisation is not None:
                self.utilisation.start()
            if self.profiler is not None:
                self.profiler.enable()

    def seconds(self, module: Any) -> float:
        self._sync(module)
        elapsed = time.perf_counter() - self.started
        if self.utilisation is not None:
            self.utilisation.stop()
        if self.profiler is not None:
            self.profiler.disable()
            stats = pstats.Stats(self.profiler, stream=sys.stdout)
            print(f"# host time of the {self.steps - self.warmup} timed steps, by function (cProfile)")
            stats.sort_stats("tottime").print_stats(25)
            stats.sort_stats("cumulative").print_stats(40)  # which caller (Lightning, the optimiser...) owns it
        return elapsed


class Utilisation:
    """Mean GPU utilisation (%) between :meth:`start` and :meth:`stop`, sampled from ``nvidia-smi`` every 0.2 s."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and shutil.which("nvidia-smi") is not None
        self.samples: list[float] = []
        self._stop = threading.Event()

    def _sample(self) -> None:
        query = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-i", "0"]
        while not self._stop.is_set():
            try:
                self.samples.append(float(subprocess.run(query, capture_output=True, text=True).stdout.split()[0]))
            except (OSError, ValueError, IndexError):
                return
            self._stop.wait(0.2)

    def start(self) -> None:
        if self.enabled:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if self.enabled and hasattr(self, "_thread"):
            self._stop.set()
            self._thread.join()

    def mean(self) -> str:
        return f"{sum(self.samples) / len(self.samples):.0f}%" if self.samples else "-"


def rate(case: Case, dataset: Any, batch: int, placement: str, args: argparse.Namespace) -> tuple[float, str]:
    """Samples/s of ``args.steps`` timed steps of ``case`` at ``batch``, and the GPU utilisation."""
    from repscope.train.config import TrainConfig
    from repscope.train.datamodule import DatasetModule
    from repscope.train.fitting import build_task, compile_networks

    config = TrainConfig.model_validate(
        {
            "model": {"name": case.model, "params": case.params},
            "data": {"name": case.data, "params": case.data_params},
            "trainer": {"accelerator": args.accelerator, "precision": args.precision, "compile": args.compile},
            "batch_size": batch,
        }
    )
    pl.seed_everything(0, verbose=False)
    task = compile_networks(build_task(config, dataset), config.trainer.compile)
    module = DatasetModule(dataset, task.batch_fields, batch_size=batch, val_fraction=0.0, placement=placement)
    utilisation = Utilisation(placement == "device" and args.accelerator != "cpu")
    timer = StepTimer(args.warmup, profile=args.profile and placement == "device", utilisation=utilisation)
    trainer = pl.Trainer(
        accelerator=args.accelerator,
        devices=1,
        precision=args.precision,
        max_steps=args.warmup + args.steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        callbacks=[timer],
    )
    try:
        trainer.fit(task, datamodule=module)
        seconds = timer.seconds(task)
    finally:
        utilisation.stop()
    steps = timer.steps - args.warmup
    if steps < 1:
        raise SystemExit(f"{case.label}: fewer than --warmup + 1 steps; raise the dataset size or lower --warmup")
    return steps * batch / seconds, utilisation.mean()


def die_with_parent() -> None:
    """Have the kernel end this process when the one that started it ends (Linux): a ``--share`` run
    whose parent a time limit killed must not go on holding the GPU and the parent's output pipe."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def shared_rate(case: Case, batch: int, args: argparse.Namespace, barrier: Any, results: Any) -> None:
    """One of ``--share`` processes: load the data, wait for the others, time the device path, put its
    rate (or its error) on ``results``."""
    from repscope.data.registry import load_dataset
    from repscope.train.fitting import quiet_lightning

    die_with_parent()
    try:
        quiet_lightning()
        if args.accelerator == "cpu":
            torch.set_num_threads(1)
        dataset = load_dataset(case.data, **case.data_params)
        barrier.wait()  # the timed steps of the N runs overlap
        results.put(rate(case, dataset, batch, "device", args)[0])
    except BaseException as error:  # the parent waits for one answer per run
        barrier.abort()
        results.put(f"{type(error).__name__}: {error}")


def share(case: Case, alone: float, batch: int, args: argparse.Namespace) -> str:
    """The ``--share`` row: ``args.share`` runs of ``case`` at once, each one's rate against ``alone``."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # CUDA cannot be used in a forked child
    barrier, results = context.Barrier(args.share), context.Queue()
    # plain daemon processes, ended here once they answered: a process pool's shutdown could wait for
    # ever on a child that tears down CUDA
    runs = [
        context.Process(target=shared_rate, args=(case, batch, args, barrier, results), daemon=True)
        for _ in range(args.share)
    ]
    for run in runs:
        run.start()
    try:
        answers = [results.get() for _ in runs]
    finally:
        for run in runs:
            run.join(timeout=20)
            if run.is_alive():
                run.terminate()
    errors = [answer for answer in answers if isinstance(answer, str)]
    if errors:
        raise SystemExit(f"{case.label}: a shared run failed: {errors[0]}")
    rates = [float(answer) for answer in answers]
    each = sum(rates) / len(rates)
    label = f"  {args.share} at once, each"
    return f"{label:<30}{batch:>6}{each:>10.0f}{'':>10}{each / alone:>9.0%}{'':>7}  of its rate alone"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="CPU, tiny datasets and batches, few steps")
    parser.add_argument("--accelerator", default=None, help="cpu, gpu, auto (default: gpu, cpu with --tiny)")
    parser.add_argument("--models", default="", help="comma-separated registered names (default: every case)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per measurement (default 200; 8 tiny)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed first steps (default 20; 3 tiny)")
    parser.add_argument("--precision", default="32-true", help="32-true, bf16-mixed, 16-mixed")
    parser.add_argument("--compile", default="off", help="off, default, reduce-overhead, max-autotune")
    parser.add_argument("--share", type=int, default=0, help="also train N runs at once on the device (N >= 2)")
    parser.add_argument("--profile", action="store_true", help="print the host's time per function (device path)")
    parser.add_argument("--batches", default="", help="comma-separated batch sizes (default: each case's own two)")
    parser.add_argument(
        "--no-loader", action="store_true", help="measure the device path only (the loader column shows -)"
    )
    args = parser.parse_args()
    if args.share == 1 or args.share < 0:
        raise SystemExit("--share: give 2 or more runs (0: none)")
    args.accelerator = args.accelerator or ("cpu" if args.tiny else "gpu")
    args.steps = args.steps or (8 if args.tiny else 200)
    args.warmup = args.warmup or (3 if args.tiny else 20)
    if args.accelerator == "cpu":
        torch.set_num_threads(min(2, torch.get_num_threads()))

    chosen = {m.strip() for m in args.models.split(",") if m.strip()}
    unknown = chosen - set(CASE_MODELS)
    if unknown:
        raise SystemExit(f"--models: no case for {', '.join(sorted(unknown))}")
    from repscope.data.registry import load_dataset
    from repscope.train.fitting import quiet_lightning

    quiet_lightning()
    selected = [c for c in cases(args.tiny) if not chosen or c.model in chosen]
    if args.batches:
        sizes = tuple(int(b) for b in args.batches.split(","))
        selected = [Case(c.label, c.model, c.params, c.data, c.data_params, sizes) for c in selected]
    device = torch.cuda.get_device_name(0) if args.accelerator != "cpu" and torch.cuda.is_available() else "CPU"
    print(
        f"# training samples/s on {device}: {args.steps} timed steps after {args.warmup}, precision "
        f"{args.precision}, compile {args.compile}; loader = the DataLoader path, measured in the same run"
        + ("\n# --tiny: a smoke run of every code path; its rates are too short to compare" if args.tiny else "")
    )
    print(f"{'case':<30}{'batch':>6}{'device':>10}{'loader':>10}{'speed-up':>10}{'util':>7}")
    datasets: dict[str, Any] = {}
    for case in selected:
        key = f"{case.data}:{sorted(case.data_params.items())}"
        if key not in datasets:
            datasets[key] = load_dataset(case.data, **case.data_params)
        for batch in case.batches:
            held, util = rate(case, datasets[key], batch, "device", args)
            if args.no_loader:
                print(f"{case.label:<30}{batch:>6}{held:>10.0f}{'-':>10}{'-':>10}{util:>7}", flush=True)
            else:
                loaded, _ = rate(case, datasets[key], batch, "loader", args)
                print(
                    f"{case.label:<30}{batch:>6}{held:>10.0f}{loaded:>10.0f}{held / loaded:>9.2f}x{util:>7}", flush=True
                )
            if args.share and batch == case.batches[0]:
                print(share(case, held, batch, args), flush=True)


if __name__ == "__main__":
    main()

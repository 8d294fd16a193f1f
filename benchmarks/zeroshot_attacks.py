"""Raw Zero-Shot attacks (Table 1): our batched L0 / L-infinity CMA-ES attacks against the
adversarial-robustness-toolbox's own ``PixelAttack`` / ``ThresholdAttack`` (``es=0``) on one LeNet-5.

Both run the same search with the same cma seeds (ART's ``cma.CMAEvolutionStrategy`` is patched during
its call to take the seed :func:`repscope.studies.zeroshot.attacks.attack_seed` gives ours), the same budget
(``max_iter``) and the same model: ART through its ``PyTorchClassifier`` (one forward pass per
candidate, one more per iteration for ``xbest``, one at the end), ours through a ``predict`` that
runs the population as one batch. For each norm and threshold the table gives the success counts of
both (they should be equal; a ``MISMATCH`` line says otherwise, and then ours is run again with
one-image forward passes to tell the search from the float bits of batched passes apart), the model
queries per image, the seconds per image and the speed-up, all measured in this run. ``predict %``
is the share of our time spent in the model.

The model is trained here (a few seconds: ``lenet5`` on ``--source``) unless ``--model RUN_DIR`` names
a run of ``repscope train``; the attacked images are the first ``--n`` correctly classified test images.

    .venv/bin/python benchmarks/zeroshot_attacks.py [--n 20] [--budget 100] [--threads 1] [--model RUN_DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
import warnings

import cma
import numpy as np
import threadpoolctl
import torch
from torch import nn

from repscope.data.morpho.training_sets import load_digits
from repscope.studies.zeroshot.attacks import PAPER_THRESHOLDS, attack, attack_seed
from repscope.train.config import TrainConfig
from repscope.train.fitting import fit, load_task


class SoftLabels(nn.Module):
    """0-255 float images -> class probabilities (the attacks' objective is the true class's soft-label)."""

    def __init__(self, task: nn.Module) -> None:
        super().__init__()
        self.task = task

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.task(images / 255.0), dim=1)


class OneByOne(nn.Module):
    """The same model, one image per forward pass (a batch then gives the bits ART's single passes give)."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.module(images[i : i + 1]) for i in range(len(images))])


class TimedPredict:
    """``predict`` for our attacks: the whole batch in one forward pass, its time summed."""

    def __init__(self, module: nn.Module) -> None:
        self.module, self.seconds = module, 0.0

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        clock = time.perf_counter()
        with torch.no_grad():
            output = self.module(torch.from_numpy(batch)).numpy()
        self.seconds += time.perf_counter() - clock
        return output


def trained_task(args: argparse.Namespace, workdir: str) -> tuple[nn.Module, str]:
    if args.model:
        return load_task(args.model), f"model {args.model}"
    config = TrainConfig.model_validate(
        {
            "model": {"name": "lenet5"},
            "data": {"name": "digits", "params": {"source": args.source, "train_size": args.train}},
            "trainer": {"max_epochs": args.epochs, "logger": "none"},
            "seed": 0,
        }
    )
    clock = time.perf_counter()
    outcome = fit(config, out=f"{workdir}/run", report=False)
    accuracy = outcome.metrics.get("test_accuracy")
    return outcome.task, (
        f"lenet5 trained on {args.train} {args.source} images, {args.epochs} epochs, "
        f"{time.perf_counter() - clock:.1f} s, test accuracy {accuracy:.3f}"
    )


@contextlib.contextmanager
def seeded_art(seeds: list[int]):
    """ART's CMA-ES takes ``seeds`` in order (ART never seeds cma); numpy's global state restored after."""
    original, remaining = cma.CMAEvolutionStrategy, iter(seeds)

    class Seeded(original):
        def __init__(self, x0, sigma0, inopts=None):
            super().__init__(x0, sigma0, cma.CMAOptions(dict(inopts or {}, seed=next(remaining))))

    state = np.random.get_state()
    cma.CMAEvolutionStrategy = Seeded
    try:
        with warnings.catch_warnings():
            # ART hands cma one-element arrays as f-values; cma warns once per search
            warnings.filterwarnings("ignore", message="function_values is not a list of scalars")
            yield
    finally:
        cma.CMAEvolutionStrategy = original
        np.random.set_state(state)


def art_attack(classifier, norm: str, images: np.ndarray, labels: np.ndarray, threshold: int, args) -> tuple:
    """ART's attack: (adversarial float32 images, seconds, queries)."""
    from art.attacks.evasion import PixelAttack, ThresholdAttack

    attack_class = PixelAttack if norm == "L0" else ThresholdAttack
    queries = [0]
    predict = classifier.predict

    def counted(x, *rest, **kwargs):
        queries[0] += len(x)
        return predict(x, *rest, **kwargs)

    classifier.predict = counted
    seeds = [attack_seed(args.seed, norm, threshold, i) for i in range(len(images))]
    try:
        with seeded_art(seeds):
            clock = time.perf_counter()
            adversarial = attack_class(classifier, th=threshold, es=0, max_iter=args.budget, verbose=False).generate(
                images.astype(np.float32), labels
            )
            seconds = time.perf_counter() - clock
    finally:
        classifier.predict = predict
    return adversarial, seconds, queries[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20, help="correctly classified test images attacked")
    parser.add_argument("--budget", type=int, default=100, help="CMA-ES iterations (ART's max_iter)")
    parser.add_argument("--thresholds", type=int, nargs="+", default=list(PAPER_THRESHOLDS))
    parser.add_argument("--norms", nargs="+", default=["L0", "Linf"], choices=["L0", "Linf"])
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads, the same for both")
    parser.add_argument("--model", help="a run directory of repscope train (default: train lenet5 here)")
    parser.add_argument("--source", default="fashion-mnist", help="digits source: fashion-mnist or mnist-sample")
    parser.add_argument("--train", type=int, default=12000, help="training images when training here")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from art.estimators.classification import PyTorchClassifier

    torch.set_num_threads(args.threads)
    # cma's eigendecompositions (most of the L-infinity time) run in numpy's BLAS: limited alike
    blas_limit = threadpoolctl.threadpool_limits(limits=args.threads, user_api="blas")
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as workdir:
        task, described = trained_task(args, workdir)
    module = SoftLabels(task.eval()).eval()
    data = load_digits(source=args.source, test_size=2000, seed=0)
    test_images = data.test_images[:, None]
    predict = TimedPredict(module)
    correct = np.flatnonzero(predict(test_images.astype(np.float32)).argmax(1) == data.test_targets)
    chosen = correct[: args.n]
    images, labels = test_images[chosen], data.test_targets[chosen].astype(np.int64)
    classifier = PyTorchClassifier(
        module,
        loss=nn.CrossEntropyLoss(),  # unused by these attacks
        input_shape=images.shape[1:],
        nb_classes=int(module(torch.zeros((1,) + images.shape[1:])).shape[1]),
        clip_values=(0.0, 255.0),
        channels_first=True,
    )

    print(described)
    print(
        f"{len(images)} correctly classified test images, budget {args.budget} iterations, seed {args.seed}; "
        f"torch.set_num_threads({torch.get_num_threads()}) and BLAS threads {args.threads} (threadpoolctl) for "
        f"both; ART: one image per forward pass, ours: one batch per population"
    )
    header = (
        f"{'norm':5} {'th':>3} {'ART ok':>6} {'ours ok':>7} {'ART q/img':>9} {'ours q/img':>10} "
        f"{'ART s/img':>9} {'ours s/img':>10} {'predict %':>9} {'speed-up':>8}"
    )
    print(header)
    print("-" * len(header))
    totals = {"art": 0.0, "ours": 0.0}
    mismatches = []
    for norm in args.norms:
        for threshold in args.thresholds:
            adversarial, art_seconds, art_queries = art_attack(classifier, norm, images, labels, threshold, args)
            art_success = predict(adversarial).argmax(1) != labels
            predict.seconds = 0.0
            clock = time.perf_counter()
            ours = attack(norm, predict, images, labels, threshold, budget=args.budget, seed=args.seed)
            our_seconds = time.perf_counter() - clock
            totals["art"] += art_seconds
            totals["ours"] += our_seconds
            count = len(images)
            print(
                f"{norm:5} {threshold:3d} {int(art_success.sum()):6d} {ours.success_count:7d} "
                f"{art_queries / count:9.0f} {ours.queries.mean():10.0f} {art_seconds / count:9.3f} "
                f"{our_seconds / count:10.3f} {100 * predict.seconds / our_seconds:8.0f}% "
                f"{art_seconds / our_seconds:7.1f}x"
            )
            same_images = np.array_equal(adversarial, ours.adversarial.astype(np.float32))
            if not np.array_equal(art_success, ours.success) or not same_images:
                differ_images = (adversarial != ours.adversarial).any(axis=(1, 2, 3))
                differ = np.flatnonzero((art_success != ours.success) | differ_images)
                single = attack(
                    norm, TimedPredict(OneByOne(module)), images, labels, threshold, budget=args.budget, seed=args.seed
                )
                single_same = np.array_equal(single.success, art_success) and np.array_equal(
                    single.adversarial.astype(np.float32), adversarial
                )
                mismatches.append(
                    f"MISMATCH {norm} th {threshold}: images {differ.tolist()} differ (success flags "
                    f"{'differ' if not np.array_equal(art_success, ours.success) else 'equal'}); ours with "
                    f"one-image forward passes {'matches ART exactly' if single_same else 'still differs'}"
                )
    print("-" * len(header))
    print(
        f"all: ART {totals['art']:.1f} s, ours {totals['ours']:.1f} s, speed-up {totals['art'] / totals['ours']:.1f}x"
    )
    for line in mismatches:
        print(line)
    if not mismatches:
        print("success flags and adversarial images identical to ART's for every norm and threshold")
    blas_limit.restore_original_limits()


if __name__ == "__main__":
    main()

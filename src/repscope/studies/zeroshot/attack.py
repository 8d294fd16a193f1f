"""Black-box attacks on one trained classifier (``repscope zeroshot attack``): the paper's Table 1 for any model.

The L0 (pixel) and L-infinity (threshold) attacks of :mod:`repscope.attacks` run with CMA-ES at each
threshold on a seeded draw of test images the model classifies correctly (an attack on an image it
already gets wrong would count as a free success).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.errors import InvalidArgumentError
from repscope.fileio import write_json_atomic, write_text_atomic

# our names of the norms (configs, CLI) -> the attacks package's
ATTACK_NORMS = {"l0": "L0", "linf": "Linf"}


def predictor(task: Any) -> Any:
    """The attacks' model boundary for a trained task: float images ``(B, C, H, W)`` in 0-255 -> its
    soft-labels (softmax outputs, or CapsNet's normalised capsule lengths)."""

    def predict(images: np.ndarray) -> np.ndarray:
        return task.soft_labels(np.clip(images, 0, 255).astype(np.float32) / np.float32(255.0))

    return predict


def check_norms(norms: Sequence[str], thresholds: Sequence[int]) -> None:
    """Refuse unknown norms and thresholds that are not positive integers, naming the option."""
    unknown = [norm for norm in norms if norm not in ATTACK_NORMS]
    if unknown or not norms:
        raise InvalidArgumentError(f"--norm: expected l0 or linf, got {', '.join(unknown) or 'none'}")
    bad = [t for t in thresholds if isinstance(t, bool) or not isinstance(t, int | np.integer) or t < 1]
    if bad or not thresholds:
        raise InvalidArgumentError(f"--threshold: expected positive integers (pixels or 0-255 levels), got {bad}")


def run_attacks(
    task: Any,
    images: np.ndarray,
    labels: np.ndarray,
    norm: str,
    threshold: int,
    budget: int,
    seed: int,
    rows: Any = None,
    progress: Any = None,
) -> pd.DataFrame:
    """One attack (norm, threshold) on every image: :func:`attack_table` of its result (``rows``: the
    images' test rows, for its ``image`` column)."""
    from repscope.attacks import attack  # noqa: PLC0415

    result = attack(
        ATTACK_NORMS[norm], predictor(task), images, labels, threshold, budget=budget, seed=seed, progress=progress
    )
    return attack_table(result, norm, threshold, labels, rows)


def attack_table(result: Any, norm: str, threshold: int, labels: np.ndarray, rows: Any = None) -> pd.DataFrame:
    """One ``AttackResult`` as a table of ``success``, ``queries``, ``iterations`` and ``predicted`` per
    image, after ``norm`` (our name), ``threshold``, ``image`` (the test rows, when given) and ``label``."""
    return pd.DataFrame(
        {
            "norm": norm,
            "threshold": threshold,
            **({} if rows is None else {"image": rows}),
            "label": labels,
            "success": result.success.astype(bool),
            "queries": result.queries,
            "iterations": result.iterations,
            "predicted": result.predicted,
        }
    )


def attack_classifier(
    model: str | Path,
    out: Path,
    arch: str | None,
    data: str | None,
    data_params: dict[str, Any],
    norms: list[str],
    thresholds: list[int],
    n: int,
    budget: int,
    seed: int,
) -> pd.DataFrame:
    """Attack the classifier of ``model`` (a ``repscope train`` run or a ``.ckpt`` with ``arch``) on ``n``
    correctly classified test images of its data (or ``data``); write ``attacks.csv`` (per image),
    ``counts.csv`` (successes per norm and threshold) and ``metrics.json`` into ``out``.

    Returns
    -------
    pandas.DataFrame
        ``counts.csv``: ``norm``, ``threshold``, ``successes``, ``images``, ``queries``.
    """
    from repscope.attacks import attack_counts  # noqa: PLC0415
    from repscope.progress import progress_bar  # noqa: PLC0415
    from repscope.studies.invariance.testing import load_classifier  # noqa: PLC0415
    from repscope.train.run import load_task  # noqa: PLC0415

    check_norms(norms, thresholds)
    if n < 1 or budget < 1:
        raise InvalidArgumentError(f"--n, --budget: expected positive numbers, got {n} and {budget}")
    path = Path(model)
    if not (path.is_dir() or path.suffix == ".ckpt"):
        raise InvalidArgumentError(f"--model {path}: expected a run directory of repscope train or a .ckpt file")
    _, dataset, data, data_params = load_classifier(path, arch, data, data_params)
    task = load_task(path, model=arch)
    test = dataset.arrays("test", ["image", "target"])
    correct = np.flatnonzero(task.predict(test["image"]) == test["target"])
    if not len(correct):
        raise InvalidArgumentError(f"--model {path}: classifies no test image of {data} correctly")
    rows = np.sort(np.random.default_rng([seed, 61]).choice(correct, size=min(n, len(correct)), replace=False))
    images, labels = test["image"][rows], test["target"][rows]

    with progress_bar(f"attacking {len(rows)} images", total=len(rows) * len(norms) * len(thresholds)) as update:
        counted = attack_counts(
            predictor(task),
            images,
            labels,
            thresholds,
            norms=[ATTACK_NORMS[norm] for norm in norms],
            budget=budget,
            seed=seed,
            progress=lambda done, total: update(done),
        )
    ours = {name: norm for norm, name in ATTACK_NORMS.items()}
    per_image = pd.concat(
        [
            attack_table(result, ours[norm], threshold, labels, rows)
            for (norm, threshold), result in counted.results.items()
        ],
        ignore_index=True,
    )
    counts = (
        per_image.groupby(["norm", "threshold"], sort=False)
        .agg(successes=("success", "sum"), images=("success", "size"), queries=("queries", "sum"))
        .reset_index()
    )
    write_text_atomic(out / "attacks.csv", per_image.to_csv(index=False))
    write_text_atomic(out / "counts.csv", counts.to_csv(index=False))
    totals = {norm: int(counts.loc[counts["norm"] == norm, "successes"].sum()) for norm in norms}
    write_json_atomic(
        out / "metrics.json",
        {
            "model": str(path),
            "data": data,
            "data_params": data_params,
            "images": len(rows),
            "budget": budget,
            "seed": seed,
            "successes": {f"{row.norm}_th{row.threshold}": int(row.successes) for row in counts.itertuples()},
            "totals": {**totals, "total": sum(totals.values())},
        },
    )
    return counts


__all__ = ["ATTACK_NORMS", "attack_classifier", "attack_table", "check_norms", "predictor", "run_attacks"]

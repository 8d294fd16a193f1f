"""The report of one training run (``repscope train``): what trained on what, the learning curves,
the test metrics, and what the model makes of test images.

* every model: the config, the headline metrics, the loss curves per epoch;
* supervised models: the test accuracy (or RMSE) against the constant-prediction baseline;
* VAEs: test images beside their reconstructions, and samples from the prior;
* GANs: samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import yaml

from repscope.report.figures import image_grid, new_figure
from repscope.report.html import Report

SHOWN = 16  # images per grid row


def _curves_figure(curves: pd.DataFrame) -> Any:
    columns = [c for c in curves.columns if c != "epoch" and ("loss" in c or "accuracy" in c or "rmse" in c)]
    fig = new_figure(6.0, 3.2)
    axis = fig.add_subplot(1, 1, 1)
    for column in columns:
        values = curves[column].to_numpy(dtype=float)
        if np.isfinite(values).any():
            axis.plot(curves["epoch"] + 1, values, marker="o", label=column.removesuffix("_epoch"))
    axis.set_xlabel("epoch")
    axis.set_ylabel("value")
    axis.legend(fontsize=7)
    return fig  # laid out by new_figure's constrained layout


def _baseline(dataset: Any) -> tuple[str, float] | None:
    """The score of a constant prediction on the test split (commonest training class / mean value)."""
    if dataset.target is None or "test" not in dataset.splits:
        return None
    train = dataset.arrays("train", ["target"])["target"]
    test = dataset.arrays("test", ["target"])["target"]
    if dataset.target_kind == "classification":
        majority = np.bincount(train.astype(np.int64)).argmax()
        return "test_accuracy", float(np.mean(test == majority))
    return "test_rmse", float(np.sqrt(np.mean((test - train.mean()) ** 2)))


def training_report(
    config: Any,
    task: Any,
    dataset: Any,
    metrics: dict[str, Any],
    curves: pd.DataFrame,
    images_in_and_out: bool = True,
) -> Report:
    """The report of a finished training run (see the module docstring).

    ``images_in_and_out``: the task's ``encode`` / ``decode`` / ``sample`` take and give image batches,
    so reconstructions and samples are drawn (False for a multimodal VAE, whose methods take and give
    one entry per modality).
    """
    report = Report(
        f"Training {config.model.name} on {config.data.name}", subtitle=f"{dataset.description}; seed {config.seed}"
    )
    headline = {k: v for k, v in metrics.items() if k.startswith("test_")}
    headline.update({k: metrics[k] for k in ("epochs", "n_train", "n_val", "n_test", "fit_seconds") if k in metrics})
    baseline = _baseline(dataset)
    if baseline is not None:
        name, value = baseline
        headline[f"constant_prediction_{name}"] = value
        score = metrics.get(name)
        if score is not None and (
            (name == "test_accuracy" and score <= value) or (name == "test_rmse" and score >= value)
        ):
            report.add_warning(
                f"{name} {score:.4g} is no better than always predicting the commonest class / "
                f"the mean ({value:.4g}): the model has not learnt the target."
            )
    report.add_metrics(headline, title="Test metrics", labels=True)
    if len(curves) and "epoch" in curves:
        report.add_figure(_curves_figure(curves), caption="Losses and validation metrics per epoch")
    if images_in_and_out and "test" in dataset.splits and "image" in dataset.fields and len(dataset.split("test")):
        size = len(dataset.split("test"))
        count = min(SHOWN, size)
        # a seeded spread over the test split: its first rows may all share a factor (grid order)
        chosen = np.sort(np.random.default_rng(config.seed).choice(size, size=count, replace=False))
        images = dataset.batch("test", chosen, ["image"])["image"]
        shown = images[:, 0] if images.shape[1] == 1 else images.transpose(0, 2, 3, 1)
        if hasattr(task, "encode") and hasattr(task, "decode"):
            rebuilt = task.decode(task.encode(shown))
            report.add_figure(
                image_grid(np.concatenate([shown, rebuilt]), 2, count, row_labels=["test", "rebuilt"]),
                caption="Test images (top) and their reconstructions from the posterior means",
            )
    if images_in_and_out and hasattr(task, "sample"):
        samples = task.sample(2 * SHOWN, seed=config.seed)
        report.add_figure(image_grid(samples, 2, SHOWN), caption=f"Samples from the prior (seed {config.seed})")
    report.add_code(_config_text(config))
    return report


def _config_text(config: Any) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False).rstrip()


__all__ = ["training_report"]

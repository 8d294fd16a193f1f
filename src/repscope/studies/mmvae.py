"""Evaluating a trained multimodal VAE on CdSprites+: cross- and joint-coherency (Sejnova et al., Sec. 3.3).

On a fresh test set of the run's level (its own seed, never seen in training):

* text -> image: images generated from the test captions, judged by the level's attribute classifiers;
* image -> text: captions generated from the test images, parsed word by word;
* joint: image and caption decoded from the same prior sample ``z`` (the reference toolkit draws them
  from different samples; here both come from one ``z``, as joint coherency means).

The outputs are written in the layout of ``repscope sprites evaluate`` (:data:`OUTPUT_LAYOUT`) and scored
by the same code, so a model trained elsewhere and ours are judged alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from repscope.data.sprites.captions import decode_captions
from repscope.data.sprites.datasets import cdsprites_dataset
from repscope.errors import InvalidArgumentError
from repscope.fileio import write_bytes_atomic, write_json_atomic
from repscope.studies.sprites_coherency import OUTPUT_LAYOUT, evaluate_outputs
from repscope.train.run import load_task

EVALUATION_SEED_OFFSET = 1_000_003  # test samples of the evaluation never share a seed with training's


def _captions_of(logits: np.ndarray) -> list[str]:
    # the decoder ends a caption with two spaces (END_MARK); what it writes after them is not a caption
    return [" ".join(caption.split("  ")[0].split()) for caption in decode_captions(logits)]


def _images_of(means: np.ndarray) -> np.ndarray:
    return np.rint(np.clip(means.transpose(0, 2, 3, 1), 0.0, 1.0) * 255.0).astype(np.uint8)


def write_cdsprites_outputs(task: Any, level: int, n: int, seed: int, folder: Path) -> Path:
    """Generate text -> image, image -> text and joint outputs on ``n`` fresh test samples into ``folder``.

    Parameters
    ----------
    task : MultimodalVAETask
        A trained task with modalities ``image`` and ``text``.
    level : int
        CdSprites+ level of the test samples.
    n : int
        Samples per direction.
    seed : int
        Seed of the test samples (offset from the training seeds) and of the generation.
    folder : pathlib.Path
        Where the outputs go (layout :data:`OUTPUT_LAYOUT`).

    Returns
    -------
    pathlib.Path
        ``folder``.
    """
    if set(getattr(task, "modalities", {})) != {"image", "text"}:
        raise InvalidArgumentError("evaluate: needs a model with the modalities 'image' and 'text' (CdSprites+)")
    data = cdsprites_dataset(level=level, train_size=1, val_size=1, test_size=n, seed=seed + EVALUATION_SEED_OFFSET)
    test = data.batch("test", np.arange(n), ["image", "text", "mask"])
    truth = decode_captions(test["text"], test["mask"])
    lines = ("\n".join(truth) + "\n").encode()
    from_text = task.generate({"text": test["text"]}, seed=seed)
    from_image = task.generate({"image": test["image"]}, seed=seed)
    joint = task.sample_joint(n, seed=seed)
    outputs = {
        "text_to_image/truth.txt": lines,
        "image_to_text/truth.txt": lines,
        "image_to_text/captions.txt": ("\n".join(_captions_of(from_image["text"])) + "\n").encode(),
        "joint/captions.txt": ("\n".join(_captions_of(joint["text"])) + "\n").encode(),
    }
    for name, data_bytes in outputs.items():
        write_bytes_atomic(folder / name, data_bytes)
    for name, images in (("text_to_image", from_text["image"]), ("joint", joint["image"])):
        (folder / name).mkdir(parents=True, exist_ok=True)
        np.save(folder / name / "images.npy", _images_of(images))
    return folder


def evaluate_run(run_dir: str | Path, n: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Coherency of a trained multimodal VAE run on its CdSprites+ level; written to ``evaluation/``.

    Parameters
    ----------
    run_dir : str or pathlib.Path
        A run directory of ``repscope train`` with a multimodal VAE on ``cdsprites``.
    n : int, default=1000
        Fresh test samples per direction.
    seed : int, default=0
        Seed of the test samples and the generation.

    Returns
    -------
    dict
        The results of :func:`repscope.studies.sprites_coherency.evaluate_outputs` (Strict / Features /
        Letters per direction), also written to ``run_dir/evaluation/coherency.json``; the generated
        outputs are kept under ``run_dir/evaluation/outputs/``.

    Raises
    ------
    InvalidArgumentError
        When the run is not a multimodal VAE on CdSprites+ or ``n < 1``.
    """
    run_dir = Path(run_dir)
    if n < 1:
        raise InvalidArgumentError(f"--n: must be >= 1, got {n}")
    config_path = run_dir / "config.yaml"
    if not config_path.exists():
        raise InvalidArgumentError(f"{run_dir}: no config.yaml; not a run directory of repscope train")
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    if config.get("data", {}).get("name") != "cdsprites":
        raise InvalidArgumentError(f"{run_dir}: trained on {config.get('data', {}).get('name')!r}, not cdsprites")
    level = int(config["data"].get("params", {}).get("level", 5))
    task = load_task(run_dir)
    folder = write_cdsprites_outputs(task, level, n, seed, run_dir / "evaluation" / "outputs")
    results = evaluate_outputs(folder, level)
    results["model"] = config.get("model", {}).get("name")
    results["n"] = n
    write_json_atomic(run_dir / "evaluation" / "coherency.json", json.loads(json.dumps(results, default=float)))
    return results


__all__ = ["evaluate_run", "write_cdsprites_outputs", "OUTPUT_LAYOUT"]

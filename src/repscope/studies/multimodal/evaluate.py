"""Evaluating a trained multimodal VAE on CdSprites+ (Sejnova et al., Sec. 3.3 and 4.2): the study behind
``repscope mmvae evaluate RUN``.

On a fresh test set of the run's level (its own seed, never seen in training):

* **coherency** (dataset-dependent): text -> image (images generated from the test captions, judged by
  the level's attribute classifiers), image -> text (captions generated from the test images, parsed
  word by word), joint (image and caption decoded from the same prior sample ``z``; the reference toolkit
  draws them from different samples, here both come from one ``z``, as joint coherency means), and joint
  by traversals (Sejnova et al., A.2.3: each latent dimension traversed in turn, ``joint_traversal_steps``
  values in ``joint_traversal_range``, the others at 0;
  :func:`~repscope.studies.multimodal.analysis.joint_traversal_latents`).
  The outputs are written in the layout of ``repscope sprites evaluate`` (:data:`OUTPUT_LAYOUT`) and scored
  by the same code, so a model trained elsewhere and ours are judged alike; every direction is scored both
  by our rules and by the authors' toolkit's (:func:`repscope.studies.multimodal.coherency.toolkit_coherency`),
  from the same generated outputs: the toolkit's rules read the decoder's whole caption (``captions_raw.txt``,
  all 45 characters, as the toolkit's ``output_onehot2text`` gives it), ours the caption up to its end mark
  (``captions.txt``).
* **analysis** (dataset-independent, on the first ``n_analysis`` test samples;
  :mod:`repscope.studies.multimodal.analysis`): importance-sampled test log-likelihoods (joint and per
  modality), the linear factorisation of the posterior means per attribute, their t-SNE, latent
  traversals; and the per-modality KL and reconstruction curves of the training run.

Everything goes to ``RUN/evaluation/`` (or ``out``): ``config.yaml`` (the evaluation's settings),
``metrics.json`` (the headline numbers by name), ``coherency.json``, ``outputs/``, ``tables/*.csv``,
``figures/*.png`` and ``report.html``.

Where the model runs: ``accelerator`` (``cpu``, the default, ``gpu``, ``auto``; :func:`evaluation_device`)
places the model on that device, and every model step (generation, log-likelihoods, posterior means,
traversals) runs there in batches of ``batch_size`` examples (each with its ``k`` importance samples in
the log-likelihoods), its results copied back once per step. The random draws depend on the batches:
left unset, the batch sizes are the task methods' defaults on the CPU (:data:`CPU_BATCH_SIZES`: 64
examples for the log-likelihoods, 256 elsewhere, the numbers of every earlier evaluation) and
:data:`ACCELERATOR_BATCH_SIZE` on an accelerator; both are recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from repscope.data.multimodal.attributes import ATTRIBUTE_VALUES, level_attributes
from repscope.data.multimodal.captions import decode_captions
from repscope.data.multimodal.datasets import cdsprites_dataset
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import TEMP_PREFIX, replace_directory, write_bytes_atomic, write_json_atomic
from repscope.outputs import CommandInput, prepare_output, refuse_output_onto_inputs
from repscope.progress import progress_bar
from repscope.report.cdsprites_figures import captioned_grid
from repscope.report.multimodal_report import (
    evaluation_report,
    loss_terms_figure,
    traversal_caption_table,
    traversal_figure,
    tsne_figure,
)
from repscope.resources import THREADS_ENV, configure_torch_threads
from repscope.run_directory import RunDirectory
from repscope.studies.multimodal import analysis as mmvae_analysis
from repscope.studies.multimodal.coherency import OUTPUT_LAYOUT, coherency_table, evaluate_outputs, read_captions
from repscope.studies.multimodal.leaderboard import (
    DIRECTIONS,
    cdsprites_level,
    coherency_metrics,
    latent_sizes,
    open_cdsprites_run,
)

EVALUATION_SEED_OFFSET = 1_000_003  # test samples of the evaluation never share a seed with training's
DEFAULT_N = 1000
DEFAULT_K = 30
DEFAULT_N_ANALYSIS = 1000
PAPER_TRAVERSAL_STEPS = 1000  # A.2.3: 1,000 traversal samples per latent dimension
TRAVERSAL_CHUNK = 4096  # latents decoded and written at a time (32,000 float images would take 1.5 GB)
MIN_N_ANALYSIS = 20  # a linear probe and a t-SNE need some rows
# what the messages call each setting of evaluate_run: the options of repscope mmvae evaluate
CLI_OPTIONS = {
    "n": "--n",
    "k": "--k",
    "n_analysis": "--n-analysis",
    "batch_size": "--batch-size",
    "joint_traversal_steps": "--joint-traversal-steps",
    "accelerator": "--accelerator",
}
SHOWN = 8  # examples per direction in the report
ANALYSIS_METHODS = ("encode", "decode", "log_likelihood")
ACCELERATORS = ("cpu", "gpu", "cuda", "mps", "auto")  # Lightning's names of the devices torch can reach
ACCELERATOR_BATCH_SIZE = 1024  # examples per pass on an accelerator (x k importance samples)
# on the CPU: the task methods' defaults, so that the numbers are those of every earlier evaluation
CPU_BATCH_SIZES = {"forward": 256, "log_likelihood": 64}


def evaluation_device(accelerator: str) -> torch.device:
    """The torch device an evaluation runs on.

    Parameters
    ----------
    accelerator : {"cpu", "gpu", "cuda", "mps", "auto"}
        ``gpu``: the current CUDA device, else Apple's MPS; ``cuda`` / ``mps``: that one; ``auto``: a GPU
        when torch sees one, else the CPU.

    Returns
    -------
    torch.device

    Raises
    ------
    InvalidArgumentError
        On another name, or a GPU that torch does not see.
    """
    if accelerator not in ACCELERATORS:
        raise InvalidArgumentError(f"--accelerator: must be one of {', '.join(ACCELERATORS)}, got {accelerator!r}")
    if accelerator == "cpu":
        return torch.device("cpu")
    if accelerator in ("gpu", "cuda", "auto") and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    if accelerator in ("gpu", "mps", "auto") and torch.backends.mps.is_available():
        return torch.device("mps")
    if accelerator != "auto":
        raise InvalidArgumentError(
            f"--accelerator {accelerator}: torch sees no such GPU (a CPU build of torch, or no device visible); "
            "use --accelerator cpu or auto"
        )
    return torch.device("cpu")


def check_evaluation_settings(
    *,
    n: int,
    k: int,
    analysis: bool,
    n_analysis: int,
    batch_size: int | None = None,
    joint_traversal_steps: int | None = None,
    joint_traversal_range: tuple[float, float] = mmvae_analysis.JOINT_TRAVERSAL_RANGE,
    accelerator: str = "cpu",
    names: Mapping[str, str] | None = None,
) -> tuple[torch.device, int]:
    """Check the settings of an evaluation before any work (also before the training of ``repscope mmvae train``).

    Parameters
    ----------
    n, k, analysis, n_analysis, batch_size, joint_traversal_steps, joint_traversal_range, accelerator
        As :func:`evaluate_run`.
    names : dict, optional
        What the messages call each setting: :data:`CLI_OPTIONS` (``--n-analysis``) updated by these
        (``{"n_analysis": "evaluation.n_analysis"}`` for a config's key).

    Returns
    -------
    (torch.device, int)
        The device (:func:`evaluation_device`) and the joint traversal steps (``min(n, 1000)`` when None).

    Raises
    ------
    InvalidArgumentError
        Naming the setting: ``n``, ``k`` or ``batch_size`` below 1, ``n_analysis`` below
        :data:`MIN_N_ANALYSIS` with the analysis, negative ``joint_traversal_steps``, a range that is not
        ``(low, high)``, an unknown or absent accelerator.
    """
    named = {**CLI_OPTIONS, **dict(names or {})}
    if n < 1:
        raise InvalidArgumentError(f"{named['n']}: must be >= 1, got {n}")
    if analysis and k < 1:
        raise InvalidArgumentError(f"{named['k']}: must be >= 1, got {k}")
    if analysis and n_analysis < MIN_N_ANALYSIS:
        raise InvalidArgumentError(f"{named['n_analysis']}: must be >= {MIN_N_ANALYSIS}, got {n_analysis}")
    if batch_size is not None and int(batch_size) < 1:
        raise InvalidArgumentError(f"{named['batch_size']}: must be >= 1, got {batch_size}")
    if joint_traversal_steps is None:
        joint_traversal_steps = min(int(n), PAPER_TRAVERSAL_STEPS)
    if int(joint_traversal_steps) < 0:
        raise InvalidArgumentError(f"{named['joint_traversal_steps']}: must be >= 0, got {joint_traversal_steps}")
    mmvae_analysis.joint_traversal_latents(1, 1, joint_traversal_range)  # a bad range is refused before the work
    try:
        device = evaluation_device(accelerator)
    except InvalidArgumentError as exc:
        message = str(exc)
        if message.startswith(CLI_OPTIONS["accelerator"]):
            message = named["accelerator"] + message.removeprefix(CLI_OPTIONS["accelerator"])
        raise InvalidArgumentError(message) from None
    return device, int(joint_traversal_steps)


def check_finite_weights(task: Any, checkpoint: str | Path) -> None:
    """Refuse a model whose weights hold NaN or infinite values (a training that diverged).

    Parameters
    ----------
    task : torch.nn.Module
        The trained task.
    checkpoint : str or pathlib.Path
        The file its weights came from, for the message.

    Raises
    ------
    DataFormatError
        Naming the checkpoint and the first tensor of the state dict that is not finite.
    """
    state = task.state_dict() if hasattr(task, "state_dict") else {}
    for name, tensor in state.items():
        if torch.is_tensor(tensor) and tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise DataFormatError(
                f"checkpoint {checkpoint}: weight {name} holds {bad} NaN or infinite value(s) (the training "
                "diverged); nothing was evaluated: retrain, e.g. with a lower lr"
            )


def _batch_sizes(batch_size: int | None, device: torch.device) -> dict[str, int]:
    """Examples per pass of the forward steps (generation, posterior means, traversals) and of the
    log-likelihoods: ``batch_size`` for both, else :data:`CPU_BATCH_SIZES` or :data:`ACCELERATOR_BATCH_SIZE`."""
    if batch_size is not None:
        return {"forward": int(batch_size), "log_likelihood": int(batch_size)}
    if device.type == "cpu":
        return dict(CPU_BATCH_SIZES)
    return {"forward": ACCELERATOR_BATCH_SIZE, "log_likelihood": ACCELERATOR_BATCH_SIZE}


def write_cdsprites_outputs(
    task: Any,
    level: int,
    n: int,
    seed: int,
    folder: Path,
    test: dict[str, np.ndarray] | None = None,
    sample: bool = False,
    batch_size: int | None = None,
) -> Path:
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
    test : dict of str to numpy.ndarray, optional
        The test samples' ``image``, ``text`` and ``mask`` rows (at least ``n``); default: drawn here as
        :func:`evaluation_test_set` draws them.
    sample : bool, default=False
        Cross-generate from a sample of the posterior instead of its mean (``task.generate(sample=True)``).
    batch_size : int, optional
        Examples per forward pass of ``task.generate`` (default: its own).

    Returns
    -------
    pathlib.Path
        ``folder``.
    """
    if set(getattr(task, "modalities", {})) != {"image", "text"}:
        raise InvalidArgumentError("evaluate: needs a model with the modalities 'image' and 'text' (CdSprites+)")
    test = evaluation_test_set(level, n, seed) if test is None else test
    test = {name: test[name][:n] for name in ("image", "text", "mask")}
    truth = decode_captions(test["text"], test["mask"])
    lines = ("\n".join(truth) + "\n").encode()
    passes = {} if batch_size is None else {"batch_size": int(batch_size)}
    from_text = task.generate({"text": test["text"]}, seed=seed, sample=sample, **passes)
    from_image = task.generate({"image": test["image"]}, seed=seed, sample=sample, **passes)
    joint = task.sample(n, seed=seed)
    outputs = {
        "text_to_image/truth.txt": lines,
        "image_to_text/truth.txt": lines,
        "image_to_text/captions.txt": _lines(mmvae_analysis.captions_of_logits(from_image["text"])),
        "image_to_text/captions_raw.txt": _lines(decode_captions(from_image["text"])),
        "joint/captions.txt": _lines(mmvae_analysis.captions_of_logits(joint["text"])),
        "joint/captions_raw.txt": _lines(decode_captions(joint["text"])),
    }
    for name, data_bytes in outputs.items():
        write_bytes_atomic(folder / name, data_bytes)
    for name, images in (("text_to_image", from_text["image"]), ("joint", joint["image"])):
        (folder / name).mkdir(parents=True, exist_ok=True)
        np.save(folder / name / "images.npy", mmvae_analysis.images_of_means(images))
    return folder


def _lines(captions: list[str]) -> bytes:
    return ("\n".join(captions) + "\n").encode()


def write_joint_traversal_outputs(
    task: Any,
    latent_dim: int,
    steps: int,
    folder: Path,
    value_range: tuple[float, float] = mmvae_analysis.JOINT_TRAVERSAL_RANGE,
    batch_size: int | None = None,
) -> Path:
    """Decode the latents of joint coherency by traversals into ``folder`` (``images.npy``, ``captions.txt``
    up to each caption's end mark, ``captions_raw.txt`` the decoder's whole caption).

    Parameters
    ----------
    task : MultimodalVAETask
        A trained task with ``decode(z (M, latent_dim)[, batch_size=])`` giving ``image`` means and ``text``
        logits.
    latent_dim : int
        Size of the shared latent.
    steps : int
        Samples per dimension (Sejnova et al., A.2.3: 1,000).
    folder : pathlib.Path
        Where the outputs go (the ``joint`` layout of :data:`OUTPUT_LAYOUT`).
    value_range : (float, float), default=(-1.0, 1.0)
        Range of the traversed dimension (:func:`~repscope.studies.multimodal.analysis.joint_traversal_latents`).
    batch_size : int, optional
        Latents per forward pass of ``task.decode`` (default: its own).

    Returns
    -------
    pathlib.Path
        ``folder``.
    """
    latents = mmvae_analysis.joint_traversal_latents(latent_dim, steps, value_range)
    passes = {} if batch_size is None else {"batch_size": int(batch_size)}
    folder.mkdir(parents=True, exist_ok=True)
    images = None
    captions: list[str] = []
    raw: list[str] = []
    for start in range(0, len(latents), TRAVERSAL_CHUNK):
        decoded = task.decode(latents[start : start + TRAVERSAL_CHUNK], **passes)
        chunk = mmvae_analysis.images_of_means(decoded["image"])
        if images is None:  # written in place: the whole set never sits in memory as floats
            images = np.lib.format.open_memmap(
                folder / ".images.npy.part", mode="w+", dtype=np.uint8, shape=(len(latents), *chunk.shape[1:])
            )
        images[start : start + len(chunk)] = chunk
        captions += mmvae_analysis.captions_of_logits(decoded["text"])
        raw += decode_captions(decoded["text"])
    images.flush()
    del images
    os.replace(folder / ".images.npy.part", folder / "images.npy")
    write_bytes_atomic(folder / "captions.txt", _lines(captions))
    write_bytes_atomic(folder / "captions_raw.txt", _lines(raw))
    return folder


def toolkit_and_traversal_metrics(coherency: dict[str, Any]) -> dict[str, float]:
    """The headline numbers :func:`~repscope.studies.multimodal.leaderboard.coherency_metrics` leaves out: joint
    coherency by traversals by our rules (``joint_traversal_strict`` / ``_features``) and every direction by
    the toolkit's rules (``<direction>_strict_toolkit``, ``<direction>_features_toolkit``,
    ``image_to_text_letters_toolkit``; ``<direction>`` one of ``text_to_image``, ``image_to_text``, ``joint``,
    ``joint_traversal``) and the share of generated images the judge recognises no shape in
    (``<direction>_rejected``, %, for the directions whose images were judged).

    Parameters
    ----------
    coherency : dict
        What :func:`repscope.studies.multimodal.coherency.evaluate_outputs` returns.

    Returns
    -------
    dict of str to float
        The numbers by name (Strict and Letters in %, Features 0 to the level).
    """
    out: dict[str, float] = {}
    traversal = coherency.get("joint_traversal")
    if isinstance(traversal, dict):
        out.update({f"joint_traversal_{key}": float(traversal[key]) for key in ("strict", "features")})
    for direction in (*DIRECTIONS, "joint_traversal"):
        scores = coherency.get("toolkit", {}).get(direction)
        if isinstance(scores, dict):
            for key in ("strict", "features", "letters"):
                if key in scores:
                    out[f"{direction}_{key}_toolkit"] = float(scores[key])
    for direction, share in coherency.get("rejected", {}).items():
        out[f"{direction}_rejected"] = float(share)
    return out


def evaluation_test_set(level: int, n: int, seed: int) -> dict[str, np.ndarray]:
    """The first ``n`` samples of the evaluation's test stream (seed ``seed + EVALUATION_SEED_OFFSET``):
    ``image``, ``text``, ``mask`` and ``attributes`` rows. Sample ``i`` does not depend on ``n``."""
    data = cdsprites_dataset(level=level, train_size=1, val_size=1, test_size=n, seed=seed + EVALUATION_SEED_OFFSET)
    return data.batch("test", np.arange(n), ["image", "text", "mask", "attributes"])


class _Steps:
    """One progress bar over the evaluation's steps, each named as it starts; the seconds of each are kept."""

    def __init__(self, update: Callable[..., None], prefix: str, total: int) -> None:
        self.update, self.prefix, self.total, self.done = update, prefix, total, 0
        self.seconds: dict[str, float] = {}
        self._current: tuple[str, float] | None = None

    def start(self, key: str, text: str) -> None:
        self._current = (key, time.perf_counter())
        self.update(self.done, description=f"{self.prefix}: {text} (step {self.done + 1} of {self.total})")

    def finish(self) -> None:
        if self._current is not None:
            key, started = self._current
            self.seconds[key] = round(time.perf_counter() - started, 2)
            self._current = None
        self.done += 1
        self.update(self.done)


def evaluate_run(
    run_dir: str | Path,
    n: int = DEFAULT_N,
    seed: int = 0,
    *,
    k: int = DEFAULT_K,
    analysis: bool = True,
    n_analysis: int = DEFAULT_N_ANALYSIS,
    sample: bool = False,
    out: str | Path | None = None,
    overwrite: bool = False,
    accelerator: str = "cpu",
    batch_size: int | None = None,
    trainer: Any = None,
    joint_traversal_steps: int | None = None,
    joint_traversal_range: tuple[float, float] = mmvae_analysis.JOINT_TRAVERSAL_RANGE,
    setting_names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Coherency and (``analysis``) the dataset-independent analysis of a trained multimodal VAE run.

    Parameters
    ----------
    run_dir : str or pathlib.Path
        A run directory of ``repscope train`` with a multimodal VAE on ``cdsprites``.
    n : int, default=1000
        Fresh test samples per coherency direction (the paper used 10,000).
    seed : int, default=0
        Seed of the test samples, the generation, the importance samples, the probe split and t-SNE.
    k : int, default=30
        Importance samples per example of the log-likelihood estimates.
    analysis : bool, default=True
        Also estimate the log-likelihoods, probe, embed and traverse the latents.
    n_analysis : int, default=1000
        Test samples of the analysis (the first of the same test stream), at least 20.
    sample : bool, default=False
        Cross-generate from a posterior sample (as the reference toolkits' forward pass does) instead of
        the posterior mean (the default: no sampling noise; a blur where the given modality leaves
        position or rotation open). Recorded in ``metrics.json`` as ``cross_generation``.
    out : str or pathlib.Path, optional
        The evaluation folder (default ``run_dir/evaluation``).
    overwrite : bool, default=False
        Replace an existing non-empty ``out`` (once the new evaluation is complete); refused otherwise.
    accelerator : {"cpu", "gpu", "cuda", "mps", "auto"}, default="cpu"
        Where the model runs (:func:`evaluation_device`).
    batch_size : int, optional
        Examples per pass of every model step (each with ``k`` samples in the log-likelihoods); default:
        the task methods' own on the CPU (the numbers of earlier evaluations), :data:`ACCELERATOR_BATCH_SIZE`
        on an accelerator (module docstring).
    trainer : TrainerSection, optional
        Where the level's attribute classifiers train if they are not cached yet (default: theirs,
        :func:`repscope.studies.multimodal.judges.default_trainer`).
    joint_traversal_steps : int, optional
        Samples per latent dimension of joint coherency by traversals (Sejnova et al., A.2.3: 1,000);
        default ``min(n, 1000)``; 0 leaves it out.
    joint_traversal_range : (float, float), default=(-1.0, 1.0)
        Range of the traversed dimension (the authors' toolkit's).
    setting_names : dict, optional
        What the messages call the settings (default the command's options, :data:`CLI_OPTIONS`); e.g.
        ``{"n_analysis": "evaluation.n_analysis"}`` where they come from a config.

    Returns
    -------
    dict
        The ``metrics.json`` written: ``model``, ``level``, ``latent_dim``, ``dims``, ``training_seed``,
        ``run``, ``n``, ``seed``, ``accelerator``, ``device``, ``batch_size`` and
        ``batch_size_log_likelihood`` (as used), ``joint_traversal_steps`` and ``joint_traversal_range``, then
        ``<direction>_strict`` / ``_features`` (and ``image_to_text_letters``) by our rules, the same with
        ``_toolkit`` appended by the toolkit's rules, ``joint_traversal_strict`` / ``_features`` (and
        ``_toolkit``) where traversals ran (:func:`toolkit_and_traversal_metrics`), and with the analysis ``k``,
        ``n_analysis``, ``log_likelihood_joint``,
        ``log_likelihood_<modality>``, ``linear_<attribute>`` (joint posterior), ``linear_<attribute>_chance``,
        ``linear_<attribute>_<modality>``; ``seconds`` and ``seconds_by_step``.

    Raises
    ------
    InvalidArgumentError
        When ``n``, ``k``, ``n_analysis``, ``batch_size`` or ``joint_traversal_steps`` is too small, the
        ``joint_traversal_range`` not ``(low, high)``, the accelerator unknown or absent, or
        the run is not a multimodal VAE on CdSprites+ (or its model lacks the analysis methods while
        ``analysis``).
    DataFormatError
        When the checkpoint's weights hold NaN or infinite values (:func:`check_finite_weights`).
    OutputExistsError
        When ``out`` holds files and ``overwrite`` is false.

    Notes
    -----
    The evaluation is built in a temporary sibling folder (``.tmp-<name>.*``) that takes the place of ``out``
    only once it is complete: a failed or interrupted evaluation leaves ``out`` as it was (missing, or the
    previous evaluation), so the corrected re-run is not blocked.
    """
    run_dir = Path(run_dir)
    device, joint_traversal_steps = check_evaluation_settings(
        n=n,
        k=k,
        analysis=analysis,
        n_analysis=n_analysis,
        batch_size=batch_size,
        joint_traversal_steps=joint_traversal_steps,
        joint_traversal_range=joint_traversal_range,
        accelerator=accelerator,
        names=setting_names,
    )
    out = Path(out) if out is not None else run_dir / "evaluation"
    # an out on the run itself, or in it (but for its evaluation folder), is refused before the run is read
    run_input = CommandInput(run_dir, "RUN_DIR", "the run", room=("evaluation",))
    refuse_output_onto_inputs(out, [run_input])
    run = open_cdsprites_run(run_dir)
    level = cdsprites_level(run)
    prepare_output(out, overwrite=overwrite, kind="directory", inputs=[run_input])  # refuse before the long work
    if os.environ.get(THREADS_ENV, "").strip():
        configure_torch_threads()  # the user chose torch's thread count, as for training
    task = run.task()
    check_finite_weights(task, run.checkpoint)  # before anything is written
    if hasattr(task, "to"):
        task = task.to(device)  # every model step runs there (module docstring)
    batches = _batch_sizes(None if batch_size is None else int(batch_size), device)
    if set(getattr(task, "modalities", {})) != {"image", "text"}:
        raise InvalidArgumentError(f"{run_dir}: needs a model with the modalities 'image' and 'text' (CdSprites+)")
    missing = [name for name in ANALYSIS_METHODS if not callable(getattr(task, name, None))]
    if analysis and missing:
        raise InvalidArgumentError(f"{run_dir}: its model has no {', '.join(missing)}; pass --no-analysis")
    model = run.model_name
    # the checkpoint's hyper-parameters are what was trained (the config may leave them at their defaults)
    params = dict(getattr(task, "hparams", None) or run.model_params)
    latent_dim, dims = latent_sizes(model, params)
    summary: dict[str, Any] = {
        "cross_generation": "posterior sample" if sample else "posterior mean",
        "model": model,
        "level": level,
        "latent_dim": latent_dim,
        "dims": dims,
        "training_seed": run.config.seed,
        "run": str(run_dir.resolve()),
        "n": int(n),
        "seed": int(seed),
        "accelerator": accelerator,
        "device": str(device),
        "batch_size": batches["forward"],
        "batch_size_log_likelihood": batches["log_likelihood"],
        "joint_traversal_steps": int(joint_traversal_steps),
        "joint_traversal_range": [float(v) for v in joint_traversal_range],
    }
    if analysis:
        summary.update({"k": int(k), "n_analysis": int(n_analysis)})
    modalities = list(task.modalities)
    traverse = int(joint_traversal_steps) > 0
    total = 3 + int(traverse) + (1 + len(modalities) + 3 if analysis else 0)
    started = time.perf_counter()
    with _built_beside(out, overwrite) as target:
        run = RunDirectory.create("mmvae-evaluate", out=target)
        run.write_config({"study": "mmvae evaluate", **summary})
        with progress_bar(f"evaluating {model} on level {level}", total=total) as update:
            steps = _Steps(update, f"evaluating {model} ({run_dir.name})", total)
            steps.start("generation", f"generating {n} samples per direction")
            test = evaluation_test_set(level, max(n, n_analysis if analysis else 0), seed)
            folder = write_cdsprites_outputs(
                task, level, n, seed, run.path("outputs"), test=test, sample=sample, batch_size=batches["forward"]
            )
            steps.finish()
            if traverse:
                steps.start(
                    "joint_traversal",
                    f"decoding {joint_traversal_steps} traversal samples of each of {latent_dim} dimensions",
                )
                write_joint_traversal_outputs(
                    task,
                    latent_dim,
                    int(joint_traversal_steps),
                    folder / "joint_traversal",
                    joint_traversal_range,
                    batch_size=batches["forward"],
                )
                steps.finish()
            steps.start("coherency", "scoring coherency (our rules and the toolkit's)")
            coherency = evaluate_outputs(folder, level, trainer=trainer, compat="both")
            coherency.update({"model": model, "n": n})
            write_json_atomic(run.path("coherency.json"), json.loads(json.dumps(coherency, default=float)))
            summary.update(coherency_metrics(coherency))
            summary.update(toolkit_and_traversal_metrics(coherency))
            steps.finish()
            tables: dict[str, pd.DataFrame] = {"coherency": coherency_table(coherency)}
            run.write_table("coherency", tables["coherency"])
            figures = _sample_figures(run, folder, test)
            notes: dict[str, str] = {}
            if analysis:
                _analyse(task, test, level, k, n_analysis, seed, run, steps, summary, tables, figures, notes, batches)
            steps.start("report", "writing the report")
            _training_figure(run_dir, run, figures, notes)
            warnings = list(coherency.get("warnings", []))
            report = evaluation_report(
                summary, tables, figures, notes, warnings, files=[run.metrics_path, *run.tables.values()], base=run.root
            )
            run.write_report(report)
            steps.finish()
        summary["seconds"] = round(time.perf_counter() - started, 2)
        summary["seconds_by_step"] = steps.seconds
        run.write_metrics(summary)
    return summary


@contextlib.contextmanager
def _built_beside(out: Path, overwrite: bool) -> Iterator[Path]:
    """A new temporary folder beside ``out`` to write the evaluation in: it takes the place of ``out`` when the
    block ends without error (the output rule checked again), and is removed otherwise."""
    out.parent.mkdir(parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{out.name}.", dir=out.parent))
    try:
        yield target
        prepare_output(out, overwrite=overwrite, kind="directory")  # written meanwhile by another process?
        replace_directory(target, out)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise


def _sample_figures(run: RunDirectory, folder: Path, test: dict[str, np.ndarray]) -> dict[str, Path]:
    from_text = np.load(folder / "text_to_image" / "images.npy")[:SHOWN]
    truth = read_captions(folder / "text_to_image" / "truth.txt")[:SHOWN]
    captions = read_captions(folder / "image_to_text" / "captions.txt")[:SHOWN]
    joint_images = np.load(folder / "joint" / "images.npy")[:SHOWN]
    joint_captions = read_captions(folder / "joint" / "captions.txt")[:SHOWN]
    shown = test["image"][: len(captions)].transpose(0, 2, 3, 1)
    captions, joint_captions = ([text or "(empty)" for text in part] for part in (captions, joint_captions))
    return {
        "text_to_image": run.save_figure("text_to_image", captioned_grid(from_text, truth, ncols=SHOWN)),
        "image_to_text": run.save_figure("image_to_text", captioned_grid(shown, captions, ncols=SHOWN)),
        "joint_samples": run.save_figure("joint_samples", captioned_grid(joint_images, joint_captions, ncols=SHOWN)),
    }


def _training_figure(run_dir: Path, run: RunDirectory, figures: dict[str, Path], notes: dict[str, str]) -> None:
    path = run_dir / "tables" / "training_curves.csv"
    if not path.exists():
        notes["loss_terms"] = f"{path} is missing: no training curves to show."
        return
    try:
        curves = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        notes["loss_terms"] = f"{path} is not readable ({exc}): no training curves to show."
        return
    fig = loss_terms_figure(curves)
    if fig is None:
        notes["loss_terms"] = (
            f"{path} holds no val_recon_<modality> / val_kl_<modality> columns (a run trained before they were "
            "logged): retrain to see the KL and reconstruction terms per modality."
        )
        return
    figures["loss_terms"] = run.save_figure("loss_terms", fig)


def _analyse(
    task: Any,
    test: dict[str, np.ndarray],
    level: int,
    k: int,
    n_analysis: int,
    seed: int,
    run: RunDirectory,
    steps: _Steps,
    summary: dict[str, Any],
    tables: dict[str, pd.DataFrame],
    figures: dict[str, Path],
    notes: dict[str, str],
    batches: dict[str, int],
) -> None:
    given = {name: test[spec.get("field", name)][:n_analysis] for name, spec in task.modalities.items()}
    names = list(level_attributes(level))
    attributes = test["attributes"][:n_analysis]

    started = []

    def next_estimate(name: str) -> None:
        if started:
            steps.finish()
        started.append(name)
        steps.start(f"log_likelihood_{name}", f"log-likelihood {name}, k={k}, n={n_analysis}")

    values = mmvae_analysis.log_likelihoods(
        task, given, k=k, seed=seed, batch_size=batches["log_likelihood"], step=next_estimate
    )
    steps.finish()
    table = mmvae_analysis.summarise_log_likelihoods(values, k=k)
    for row in table.itertuples():
        summary[f"log_likelihood_{row.estimate}"] = float(row.mean_nats)
    tables["log_likelihood"] = table
    run.write_table("log_likelihood", table)

    steps.start("latents_and_linear_probes", f"posterior latents and linear probes, n={n_analysis}")
    latents = mmvae_analysis.posterior_latents(task, given, batch_size=batches["forward"])
    rows = []
    for source, codes in latents.items():
        probe = mmvae_analysis.linear_factorisation(codes, attributes, names, seed=seed)
        for name in names:
            suffix = "" if source == mmvae_analysis.JOINT else f"_{source}"
            summary[f"linear_{name}{suffix}"] = probe["accuracy"][name]
            if source == mmvae_analysis.JOINT:
                summary[f"linear_{name}_chance"] = probe["chance"][name]
            rows.append(
                {
                    "attribute": name,
                    "posterior": source,
                    "accuracy": probe["accuracy"][name],
                    "chance": probe["chance"][name],
                    "classes": probe["classes"][name],
                    "n_train": probe["n_train"],
                    "n_test": probe["n_test"],
                }
            )
    tables["linear_factorisation"] = pd.DataFrame(rows)
    run.write_table("linear_factorisation", tables["linear_factorisation"])
    steps.finish()

    steps.start("tsne", f"t-SNE of {n_analysis} latents")
    joint = latents[mmvae_analysis.JOINT]
    embedding = mmvae_analysis.tsne_embedding(joint, seed=seed)
    run.write_table(
        "tsne", pd.DataFrame({"x": embedding[:, 0], "y": embedding[:, 1], **dict(zip(names, attributes.T))})
    )
    words = {name: ATTRIBUTE_VALUES[name] for name in names}
    figures["tsne"] = run.save_figure("tsne", tsne_figure(embedding, attributes, names, words))
    steps.finish()

    steps.start("traversals", f"latent traversals of {joint.shape[1]} dimensions")
    base = joint[0]
    traversal = mmvae_analysis.latent_traversals(task, base, batch_size=batches["forward"])
    figures["traversals"] = run.save_figure(
        "traversals",
        traversal_figure(
            traversal["images"],
            traversal["values"],
            traversal["dims"],
            model=f"{summary['model']} (level {level})",
        ),
    )
    captions = traversal_caption_table(traversal["captions"], traversal["values"], traversal["dims"])
    run.write_table("traversal_captions", captions, index=True)
    tables["traversal_captions"] = captions.replace("", "(empty)")
    notes["traversals"] = (
        "Each row sets one latent dimension to the column's value (in prior standard deviations), the other "
        "dimensions held at the joint posterior mean of the first test sample "
        f"({' '.join(decode_captions(test['text'][:1], test['mask'][:1]))!r}); every latent is decoded into an "
        "image and a caption (private latents, where the model has them, at the prior mean)."
    )
    steps.finish()


__all__ = [
    "ACCELERATORS",
    "ACCELERATOR_BATCH_SIZE",
    "DEFAULT_K",
    "DEFAULT_N",
    "DEFAULT_N_ANALYSIS",
    "OUTPUT_LAYOUT",
    "coherency_metrics",
    "evaluate_run",
    "evaluation_device",
    "evaluation_test_set",
    "latent_sizes",
    "toolkit_and_traversal_metrics",
    "write_cdsprites_outputs",
    "write_joint_traversal_outputs",
]

"""Evaluating a trained multimodal VAE on CdSprites+ (Sejnova et al., Sec. 3.3 and 4.2): the study behind
``repscope mmvae evaluate RUN``.

On a fresh test set of the run's level (its own seed, never seen in training):

* **coherency** (dataset-dependent): text -> image (images generated from the test captions, judged by
  the level's judges, its attribute classifiers), image -> text (captions generated from the test images, parsed
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

The study is three steps: :func:`compute_evaluation` takes a trained task and gives an
:class:`EvaluationResult` (arrays, tables and numbers; nothing is written), :func:`write_evaluation` writes it
and :func:`write_evaluation_report` draws its figures and page; :func:`evaluate_run` does the three for a run
directory. Everything goes to ``RUN/evaluation/`` (or ``out``): ``config.yaml`` (the evaluation's settings),
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

import dataclasses
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from repscope.data.multimodal.attributes import ATTRIBUTE_VALUES, level_attributes
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.fileio import atomic_path, write_json_atomic
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
from repscope.studies.multimodal.coherency import OUTPUT_LAYOUT, CoherencyResult, compute_coherency
from repscope.studies.multimodal.generation import (
    EVALUATION_SEED_OFFSET,
    GeneratedOutputs,
    decode_joint_traversal,
    evaluation_test_set,
    generate_cdsprites_outputs,
    write_cdsprites_outputs,
    write_generated_outputs,
    write_joint_traversal_outputs,
)
from repscope.studies.multimodal.leaderboard import (
    DIRECTIONS,
    cdsprites_level,
    coherency_metrics,
    latent_sizes,
    open_cdsprites_run,
)
from repscope.validation import check_positive_int

DEFAULT_N = 1000
DEFAULT_K = 30
DEFAULT_N_ANALYSIS = 1000
PAPER_TRAVERSAL_STEPS = 1000  # A.2.3: 1,000 traversal samples per latent dimension
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
    check_positive_int(n, named["n"])
    if analysis:
        check_positive_int(k, named["k"])
    if analysis and n_analysis < MIN_N_ANALYSIS:
        raise InvalidArgumentError(f"{named['n_analysis']}: must be >= {MIN_N_ANALYSIS}, got {n_analysis}")
    check_positive_int(batch_size, named["batch_size"], allow_none=True)
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


class StepProgress:
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


@dataclass(frozen=True)
class EvaluationSettings:
    """What an evaluation does (the options of ``repscope mmvae evaluate``, the ``evaluation`` section of a
    ``repscope mmvae train`` config).

    Attributes
    ----------
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
    accelerator : {"cpu", "gpu", "cuda", "mps", "auto"}, default="cpu"
        Where the model runs (:func:`evaluation_device`).
    batch_size : int, optional
        Examples per pass of every model step (each with ``k`` samples in the log-likelihoods); default:
        the task methods' own on the CPU (the numbers of earlier evaluations), :data:`ACCELERATOR_BATCH_SIZE`
        on an accelerator (module docstring).
    joint_traversal_steps : int, optional
        Samples per latent dimension of joint coherency by traversals (Sejnova et al., A.2.3: 1,000);
        default ``min(n, 1000)``; 0 leaves it out.
    joint_traversal_range : (float, float), default=(-1.0, 1.0)
        Range of the traversed dimension (the authors' toolkit's).
    """

    n: int = DEFAULT_N
    seed: int = 0
    k: int = DEFAULT_K
    analysis: bool = True
    n_analysis: int = DEFAULT_N_ANALYSIS
    sample: bool = False
    accelerator: str = "cpu"
    batch_size: int | None = None
    joint_traversal_steps: int | None = None
    joint_traversal_range: tuple[float, float] = mmvae_analysis.JOINT_TRAVERSAL_RANGE

    def check(self, names: Mapping[str, str] | None = None) -> tuple[torch.device, int]:
        """:func:`check_evaluation_settings` of these settings: the device and the joint traversal steps."""
        return check_evaluation_settings(
            n=self.n,
            k=self.k,
            analysis=self.analysis,
            n_analysis=self.n_analysis,
            batch_size=self.batch_size,
            joint_traversal_steps=self.joint_traversal_steps,
            joint_traversal_range=self.joint_traversal_range,
            accelerator=self.accelerator,
            names=names,
        )


@dataclass(frozen=True)
class LatentAnalysis:
    """The dataset-independent analysis of an evaluation (:mod:`repscope.studies.multimodal.analysis`).

    Attributes
    ----------
    log_likelihood : pandas.DataFrame
        One row per estimate (joint, each modality):
        :func:`~repscope.studies.multimodal.analysis.summarise_log_likelihoods`.
    linear_factorisation : pandas.DataFrame
        One row per attribute and posterior: ``accuracy``, ``chance``, ``classes``, ``n_train``, ``n_test``.
    tsne_embedding : numpy.ndarray
        ``(n_analysis, 2)``: the t-SNE of the joint posterior means.
    attributes : numpy.ndarray
        ``(n_analysis, level)``: the analysed samples' attribute classes, by :attr:`attribute_names`.
    attribute_names : tuple of str
        The level's attributes.
    traversal : dict
        :func:`~repscope.studies.multimodal.analysis.latent_traversals` around the first sample's joint latent.
    metrics : dict of str to float
        ``log_likelihood_<estimate>``, ``linear_<attribute>`` (joint posterior), ``linear_<attribute>_chance``,
        ``linear_<attribute>_<modality>``.
    """

    log_likelihood: pd.DataFrame
    linear_factorisation: pd.DataFrame
    tsne_embedding: np.ndarray
    attributes: np.ndarray
    attribute_names: tuple[str, ...]
    traversal: dict[str, Any]
    metrics: dict[str, float]

    def tsne_table(self) -> pd.DataFrame:
        """``tables/tsne.csv``: ``x``, ``y`` and the attributes of each analysed sample."""
        embedding = self.tsne_embedding
        return pd.DataFrame(
            {"x": embedding[:, 0], "y": embedding[:, 1], **dict(zip(self.attribute_names, self.attributes.T))}
        )

    def traversal_captions(self) -> pd.DataFrame:
        """``tables/traversal_captions.csv``: the caption decoded at each dimension (rows) and value (columns)."""
        traversal = self.traversal
        return traversal_caption_table(traversal["captions"], traversal["values"], traversal["dims"])


@dataclass(frozen=True)
class EvaluationResult:
    """What :func:`compute_evaluation` measures of a trained multimodal VAE; nothing of it is written yet.

    Attributes
    ----------
    record : dict
        The settings as used and the model evaluated (``config.yaml``; :func:`evaluate_run` lists the keys).
    metrics : dict
        ``record`` and the headline numbers by name (``metrics.json`` but the seconds).
    coherency : CoherencyResult
        Every coherency score (:func:`~repscope.studies.multimodal.coherency.compute_coherency`).
    outputs : GeneratedOutputs
        What the model generated, scored by ``coherency``.
    given_images : numpy.ndarray
        The test images given to the model for image -> text, ``(n, 3, 64, 64)``.
    analysis : LatentAnalysis or None
        The dataset-independent analysis, where it ran.
    """

    record: dict[str, Any]
    metrics: dict[str, Any]
    coherency: CoherencyResult
    outputs: GeneratedOutputs
    given_images: np.ndarray
    analysis: LatentAnalysis | None = None

    @property
    def coherency_scores(self) -> dict[str, Any]:
        """``coherency.json``: :meth:`CoherencyResult.as_dict` with the ``model`` and ``n``."""
        return {**self.coherency.as_dict(), "model": self.record["model"], "n": self.record["n"]}


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
    """Coherency and (``analysis``) the dataset-independent analysis of a trained multimodal VAE run:
    :func:`compute_evaluation`, :func:`write_evaluation` and :func:`write_evaluation_report` into ``out``.

    Parameters
    ----------
    run_dir : str or pathlib.Path
        A run directory of ``repscope train`` with a multimodal VAE on ``cdsprites``.
    n, seed, k, analysis, n_analysis, sample, accelerator, batch_size, joint_traversal_steps, joint_traversal_range
        As the fields of :class:`EvaluationSettings`.
    out : str or pathlib.Path, optional
        The evaluation folder (default ``run_dir/evaluation``).
    overwrite : bool, default=False
        Replace an existing non-empty ``out`` (once the new evaluation is complete); refused otherwise.
    trainer : TrainerSection, optional
        Where the level's judges train if they are not cached yet (default: theirs,
        :func:`repscope.studies.multimodal.judges.default_trainer`).
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
    settings = EvaluationSettings(
        n=n,
        seed=seed,
        k=k,
        analysis=analysis,
        n_analysis=n_analysis,
        sample=sample,
        accelerator=accelerator,
        batch_size=batch_size,
        joint_traversal_steps=joint_traversal_steps,
        joint_traversal_range=joint_traversal_range,
    )
    device, traversal_steps = settings.check(setting_names)
    out = Path(out) if out is not None else run_dir / "evaluation"
    # an out on the run itself, or in it (but for its evaluation folder), is refused before the run is read
    run_input = CommandInput(run_dir, "RUN_DIR", "the run", room=("evaluation",))
    refuse_output_onto_inputs(out, [run_input])
    run = open_cdsprites_run(run_dir)
    level = cdsprites_level(run)
    prepare_output(out, overwrite=overwrite, kind="directory", inputs=[run_input])  # refuse before the long work
    task = _trained_task(run, run_dir, device, settings.analysis)
    started = time.perf_counter()
    with atomic_path(out, directory=True) as target:
        evaluation = RunDirectory.create("mmvae-evaluate", out=target)
        total = _step_count(task, settings.analysis, traversal_steps)
        with progress_bar(f"evaluating {run.model_name} on level {level}", total=total) as update:
            steps = StepProgress(update, f"evaluating {run.model_name} ({run_dir.name})", total)
            identity = {"model": run.model_name, "params": run.model_params, "training_seed": run.config.seed}
            result = compute_evaluation(
                task, level, settings, **identity, run=str(run_dir.resolve()), trainer=trainer, steps=steps
            )
            steps.start("report", "writing the report")
            write_evaluation(result, evaluation)
            write_evaluation_report(result, evaluation, run_dir / "tables" / "training_curves.csv")
            steps.finish()
        metrics = {
            **result.metrics,
            "seconds": round(time.perf_counter() - started, 2),
            "seconds_by_step": steps.seconds,
        }
        evaluation.write_metrics(metrics)
        prepare_output(out, overwrite=overwrite, kind="directory")  # written meanwhile by another process?
    return metrics


def _trained_task(run: Any, run_dir: Path, device: torch.device, analysis: bool) -> Any:
    """The run's trained task on ``device``, refused before any work when its weights are not finite or it
    cannot be evaluated (:func:`check_evaluable`)."""
    if os.environ.get(THREADS_ENV, "").strip():
        configure_torch_threads()  # the user chose torch's thread count, as for training
    task = run.task()
    check_finite_weights(task, run.checkpoint)  # before anything is written
    if hasattr(task, "to"):
        task = task.to(device)  # every model step runs there (module docstring)
    check_evaluable(task, analysis, str(run_dir))
    return task


def _step_count(task: Any, analysis: bool, traversal_steps: int) -> int:
    # generation, coherency and the report; the traversals; one log-likelihood per modality and the joint one,
    # the probes, the t-SNE and the latent traversals
    return 3 + int(traversal_steps > 0) + (1 + len(task.modalities) + 3 if analysis else 0)


def check_evaluable(task: Any, analysis: bool, label: str) -> None:
    """Refuse a task that is not a multimodal VAE of CdSprites+ (modalities ``image`` and ``text``), or that
    lacks the methods of the analysis (:data:`ANALYSIS_METHODS`) while ``analysis``.

    Parameters
    ----------
    task : MultimodalVAETask
        The trained task.
    analysis : bool
        Whether the analysis runs.
    label : str
        What the messages call the task (its run directory).

    Raises
    ------
    InvalidArgumentError
        Naming ``label``.
    """
    if set(getattr(task, "modalities", {})) != {"image", "text"}:
        raise InvalidArgumentError(f"{label}: needs a model with the modalities 'image' and 'text' (CdSprites+)")
    missing = [name for name in ANALYSIS_METHODS if not callable(getattr(task, name, None))]
    if analysis and missing:
        raise InvalidArgumentError(f"{label}: its model has no {', '.join(missing)}; pass --no-analysis")


def compute_evaluation(
    task: Any,
    level: int,
    settings: EvaluationSettings = EvaluationSettings(),  # noqa: B008 -- frozen, so one shared default is safe
    *,
    model: str,
    params: Mapping[str, Any] | None = None,
    training_seed: int | None = None,
    run: str | None = None,
    trainer: Any = None,
    steps: StepProgress | None = None,
) -> EvaluationResult:
    """Evaluate a trained multimodal VAE on fresh CdSprites+ test samples; nothing is written.

    Parameters
    ----------
    task : MultimodalVAETask
        The trained task (modalities ``image`` and ``text``); moved to the settings' device.
    level : int
        CdSprites+ level it was trained on.
    settings : EvaluationSettings, optional
        What to evaluate, where and how much.
    model : str
        The model's registry name (its latent sizes are read by it, :func:`latent_sizes`).
    params : mapping, optional
        The model's parameters where the task carries no ``hparams`` (the checkpoint's are what was trained).
    training_seed : int, optional
        The seed it was trained with (recorded).
    run : str, optional
        The run directory it came from (recorded, and named in the messages).
    trainer : TrainerSection, optional
        Where the level's judges train if they are not cached yet.
    steps : StepProgress, optional
        The progress bar to advance, step by step (default: none shown).

    Returns
    -------
    EvaluationResult

    Raises
    ------
    InvalidArgumentError
        As :func:`evaluate_run`, for the settings and the task.
    """
    device, traversal_steps = settings.check()
    check_evaluable(task, settings.analysis, run or "task")
    task = task.to(device) if hasattr(task, "to") else task
    steps = steps if steps is not None else StepProgress(lambda *args, **kwargs: None, "", 0)
    batches = _batch_sizes(None if settings.batch_size is None else int(settings.batch_size), device)
    latent_dim, dims = latent_sizes(model, dict(getattr(task, "hparams", None) or params or {}))
    record = _record(settings, model, level, latent_dim, dims, training_seed, run, device, batches, traversal_steps)
    steps.start("generation", f"generating {settings.n} samples per direction")
    n_test = max(settings.n, settings.n_analysis if settings.analysis else 0)
    test = evaluation_test_set(level, n_test, settings.seed)
    outputs = generate_cdsprites_outputs(
        task, level, settings.n, settings.seed, test=test, sample=settings.sample, batch_size=batches["forward"]
    )
    steps.finish()
    if traversal_steps > 0:
        steps.start(
            "joint_traversal", f"decoding {traversal_steps} traversal samples of each of {latent_dim} dimensions"
        )
        traversal = decode_joint_traversal(
            task, latent_dim, traversal_steps, settings.joint_traversal_range, batch_size=batches["forward"]
        )
        outputs = outputs.with_traversal(traversal)
        steps.finish()
    steps.start("coherency", "scoring coherency (our rules and the toolkit's)")
    coherency = compute_coherency(outputs.parts(), level, trainer=trainer, compat="both")
    result = EvaluationResult(record, dict(record), coherency, outputs, test["image"][: settings.n])
    result.metrics.update(coherency_metrics(result.coherency_scores))
    result.metrics.update(toolkit_and_traversal_metrics(result.coherency_scores))
    steps.finish()
    if not settings.analysis:
        return result
    latents = analyse_latents(task, test, level, settings, batches, steps)
    result.metrics.update(latents.metrics)
    return dataclasses.replace(result, analysis=latents)


def _record(
    settings: EvaluationSettings,
    model: str,
    level: int,
    latent_dim: int,
    dims: Any,
    training_seed: int | None,
    run: str | None,
    device: torch.device,
    batches: dict[str, int],
    traversal_steps: int,
) -> dict[str, Any]:
    """The settings as used and the model evaluated, in the order of ``config.yaml``."""
    record: dict[str, Any] = {
        "cross_generation": "posterior sample" if settings.sample else "posterior mean",
        "model": model,
        "level": level,
        "latent_dim": latent_dim,
        "dims": dims,
        "training_seed": training_seed,
        "run": run,
        "n": int(settings.n),
        "seed": int(settings.seed),
        "accelerator": settings.accelerator,
        "device": str(device),
        "batch_size": batches["forward"],
        "batch_size_log_likelihood": batches["log_likelihood"],
        "joint_traversal_steps": int(traversal_steps),
        "joint_traversal_range": [float(v) for v in settings.joint_traversal_range],
    }
    if settings.analysis:
        record.update({"k": int(settings.k), "n_analysis": int(settings.n_analysis)})
    return record


def analyse_latents(
    task: Any,
    test: dict[str, np.ndarray],
    level: int,
    settings: EvaluationSettings,
    batches: dict[str, int],
    steps: StepProgress,
) -> LatentAnalysis:
    """The dataset-independent analysis on the first ``settings.n_analysis`` test samples: log-likelihoods,
    linear probes of the posterior means, their t-SNE and latent traversals (module docstring)."""
    n_analysis, seed = settings.n_analysis, settings.seed
    given = {name: test[spec.get("field", name)][:n_analysis] for name, spec in task.modalities.items()}
    names = tuple(level_attributes(level))
    attributes = test["attributes"][:n_analysis]
    log_likelihood = _log_likelihood_table(task, given, settings, batches, steps)
    metrics = {f"log_likelihood_{row.estimate}": float(row.mean_nats) for row in log_likelihood.itertuples()}

    steps.start("latents_and_linear_probes", f"posterior latents and linear probes, n={n_analysis}")
    latents = mmvae_analysis.posterior_latents(task, given, batch_size=batches["forward"])
    probes = _linear_probes(latents, attributes, list(names), seed, metrics)
    steps.finish()

    steps.start("tsne", f"t-SNE of {n_analysis} latents")
    joint = latents[mmvae_analysis.JOINT]
    embedding = mmvae_analysis.tsne_embedding(joint, seed=seed)
    steps.finish()

    steps.start("traversals", f"latent traversals of {joint.shape[1]} dimensions")
    traversal = mmvae_analysis.latent_traversals(task, joint[0], batch_size=batches["forward"])
    steps.finish()
    return LatentAnalysis(log_likelihood, probes, embedding, attributes, names, traversal, metrics)


def _log_likelihood_table(
    task: Any, given: dict[str, np.ndarray], settings: EvaluationSettings, batches: dict[str, int], steps: StepProgress
) -> pd.DataFrame:
    """The importance-sampled log-likelihoods, a step of the progress bar per estimate."""
    k, n_analysis = settings.k, settings.n_analysis
    started = []

    def next_estimate(name: str) -> None:
        if started:
            steps.finish()
        started.append(name)
        steps.start(f"log_likelihood_{name}", f"log-likelihood {name}, k={k}, n={n_analysis}")

    values = mmvae_analysis.log_likelihoods(
        task, given, k=k, seed=settings.seed, batch_size=batches["log_likelihood"], step=next_estimate
    )
    steps.finish()
    return mmvae_analysis.summarise_log_likelihoods(values, k=k)


def _linear_probes(
    latents: dict[str, np.ndarray], attributes: np.ndarray, names: list[str], seed: int, metrics: dict[str, float]
) -> pd.DataFrame:
    """A linear probe per attribute on each posterior's latents: one row each; their accuracies (and the
    joint posterior's chance) added to ``metrics``."""
    rows = []
    for source, codes in latents.items():
        probe = mmvae_analysis.linear_factorisation(codes, attributes, names, seed=seed)
        for name in names:
            suffix = "" if source == mmvae_analysis.JOINT else f"_{source}"
            metrics[f"linear_{name}{suffix}"] = probe["accuracy"][name]
            if source == mmvae_analysis.JOINT:
                metrics[f"linear_{name}_chance"] = probe["chance"][name]
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
    return pd.DataFrame(rows)


def write_evaluation(result: EvaluationResult, run: RunDirectory) -> None:
    """Write an evaluation into ``run``: ``config.yaml``, ``outputs/`` (:data:`OUTPUT_LAYOUT`),
    ``coherency.json`` and ``tables/*.csv`` (``coherency``; with the analysis ``log_likelihood``,
    ``linear_factorisation``, ``tsne``, ``traversal_captions``). ``metrics.json`` is the caller's, once the
    seconds are known (:func:`evaluate_run`); the figures and the page are :func:`write_evaluation_report`'s.

    Parameters
    ----------
    result : EvaluationResult
        What :func:`compute_evaluation` measured.
    run : repscope.run_directory.RunDirectory
        Where it goes.
    """
    run.write_config({"study": "mmvae evaluate", **result.record})
    write_generated_outputs(result.outputs, run.path("outputs"))
    write_json_atomic(run.path("coherency.json"), json.loads(json.dumps(result.coherency_scores, default=float)))
    run.write_table("coherency", result.coherency.table())
    if result.analysis is not None:
        run.write_table("log_likelihood", result.analysis.log_likelihood)
        run.write_table("linear_factorisation", result.analysis.linear_factorisation)
        run.write_table("tsne", result.analysis.tsne_table())
        run.write_table("traversal_captions", result.analysis.traversal_captions(), index=True)


def write_evaluation_report(result: EvaluationResult, run: RunDirectory, training_curves: Path) -> Path:
    """The figures of an evaluation and its page (:func:`~repscope.report.multimodal_report.evaluation_report`),
    written into ``run``.

    Parameters
    ----------
    result : EvaluationResult
        What :func:`compute_evaluation` measured.
    run : repscope.run_directory.RunDirectory
        Where the figures and ``report.html`` go (its tables written by :func:`write_evaluation` are listed).
    training_curves : pathlib.Path
        The training run's ``tables/training_curves.csv`` (the KL and reconstruction terms per modality).

    Returns
    -------
    pathlib.Path
        The page.
    """
    figures = _sample_figures(run, result)
    tables = {"coherency": result.coherency.table()}
    notes: dict[str, str] = {}
    if result.analysis is not None:
        _analysis_figures(run, result, figures, tables, notes)
    _training_figure(training_curves, run, figures, notes)
    report = evaluation_report(
        result.metrics,
        tables,
        figures,
        notes,
        result.coherency.warnings,
        files=[run.metrics_path, *run.tables.values()],
        base=run.root,
    )
    return run.write_report(report)


def _sample_figures(run: RunDirectory, result: EvaluationResult) -> dict[str, Path]:
    outputs = result.outputs
    from_text, truth = outputs.text_to_image[:SHOWN], outputs.truth[:SHOWN]
    captions = outputs.image_to_text[:SHOWN]
    joint_images, joint_captions = outputs.joint.images[:SHOWN], outputs.joint.captions[:SHOWN]
    shown = result.given_images[: len(captions)].transpose(0, 2, 3, 1)
    captions, joint_captions = ([text or "(empty)" for text in part] for part in (captions, joint_captions))
    return {
        "text_to_image": run.save_figure("text_to_image", captioned_grid(from_text, truth, ncols=SHOWN)),
        "image_to_text": run.save_figure("image_to_text", captioned_grid(shown, captions, ncols=SHOWN)),
        "joint_samples": run.save_figure("joint_samples", captioned_grid(joint_images, joint_captions, ncols=SHOWN)),
    }


def _analysis_figures(
    run: RunDirectory,
    result: EvaluationResult,
    figures: dict[str, Path],
    tables: dict[str, pd.DataFrame],
    notes: dict[str, str],
) -> None:
    """The t-SNE and the traversals as figures, the analysis's tables and the traversals' note for the page."""
    latents = result.analysis
    names = list(latents.attribute_names)
    tables["log_likelihood"] = latents.log_likelihood
    tables["linear_factorisation"] = latents.linear_factorisation
    words = {name: ATTRIBUTE_VALUES[name] for name in names}
    figures["tsne"] = run.save_figure("tsne", tsne_figure(latents.tsne_embedding, latents.attributes, names, words))
    traversal = latents.traversal
    model = f"{result.record['model']} (level {result.record['level']})"
    figure = traversal_figure(traversal["images"], traversal["values"], traversal["dims"], model=model)
    figures["traversals"] = run.save_figure("traversals", figure)
    tables["traversal_captions"] = latents.traversal_captions().replace("", "(empty)")
    notes["traversals"] = (
        "Each row sets one latent dimension to the column's value (in prior standard deviations), the other "
        "dimensions held at the joint posterior mean of the first test sample "
        f"({result.outputs.truth[0]!r}); every latent is decoded into an "
        "image and a caption (private latents, where the model has them, at the prior mean)."
    )


def _training_figure(path: Path, run: RunDirectory, figures: dict[str, Path], notes: dict[str, str]) -> None:
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


__all__ = [
    "ACCELERATORS",
    "ACCELERATOR_BATCH_SIZE",
    "DEFAULT_K",
    "DEFAULT_N",
    "DEFAULT_N_ANALYSIS",
    "EVALUATION_SEED_OFFSET",
    "OUTPUT_LAYOUT",
    "EvaluationResult",
    "EvaluationSettings",
    "LatentAnalysis",
    "StepProgress",
    "analyse_latents",
    "check_evaluable",
    "coherency_metrics",
    "compute_evaluation",
    "evaluate_run",
    "evaluation_device",
    "evaluation_test_set",
    "latent_sizes",
    "toolkit_and_traversal_metrics",
    "write_cdsprites_outputs",
    "write_evaluation",
    "write_evaluation_report",
    "write_joint_traversal_outputs",
]

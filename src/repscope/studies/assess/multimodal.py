"""Assess an image-caption model on CdSprites+ (``repscope assess MODEL --role multimodal``): cross- and
joint-coherency, Strict / Features / Letters (Sejnova et al., Sec. 3.3 and A.2.3, Table 4).

The model sees a fresh CdSprites+ test set of the level (the stream of ``mmvae evaluate``:
:func:`~repscope.studies.multimodal.generation.evaluation_test_set`) and its outputs are scored by the
compute step of ``repscope sprites evaluate``
(:func:`~repscope.studies.multimodal.coherency.compute_coherency`): images judged by the level's packaged
judges, captions parsed, by our rules (the paper's definitions, ``"repscope"``) and by those of the
authors' toolkit (``"toolkit"``).

**The model.** Either a trained repscope multimodal task (a ``repscope mmvae`` run's, modalities ``image``
and ``text``: its outputs are generated as ``mmvae evaluate`` generates them, from the posterior mean), or any
object with this minimal contract (:class:`CaptionImageModel`), every method optional but at least one:

* ``image_to_text(images) -> captions``: images uint8 ``(N, 64, 64, 3)`` RGB in, ``N`` caption strings out
  (lower-case words, one space apart, e.g. ``"small pink heart at bottom left on dark"``);
* ``text_to_image(captions) -> images``: ``N`` caption strings in, ``N`` images out, uint8 ``(N, 64, 64, 3)``
  (float in [0, 1] and channels-first ``(N, 3, 64, 64)`` accepted);
* ``sample(n, seed) -> (images, captions)``: ``n`` image-caption pairs generated together (joint coherency).

A model with an encoder and a decoder per modality and a shared latent fits it through
:class:`SharedLatentModel`.

**Reference points.** Chance: the same outputs scored against a seeded permutation of their rows (each
generated caption or image judged against another sample's truth; for joint pairs, each image against
another pair's caption), so chance keeps the model's own distribution of outputs. Intervals: percentile
bootstrap of our rules' scores over the samples (:func:`repscope.metrics.disentanglement.bootstrap.bootstrap_interval`).
Paper: Table 4 (:data:`~repscope.studies.multimodal.paper_table4.PAPER_TABLE4`, scored by the toolkit's
rules, so beside the toolkit's rows when they are computed), for the model named by ``reference_model`` (a
repscope task: its own), else the best of the four printed models at the level. repscope: the README's
``mmvae --quick`` runs at levels 1 and 2, for a named model.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from repscope.data.multimodal.attributes import check_level, parse_caption
from repscope.data.multimodal.captions import decode_captions
from repscope.errors import InvalidArgumentError
from repscope.metrics.disentanglement.bootstrap import bootstrap_interval
from repscope.metrics.multimodal import coherency
from repscope.progress import quiet_progress
from repscope.studies.assess.assessment import Assessment, HeadlineRow
from repscope.studies.assess.generator import sample_grid
from repscope.studies.multimodal.coherency import CoherencyResult, OutputPart, compute_coherency
from repscope.studies.multimodal.evaluate import toolkit_and_traversal_metrics
from repscope.studies.multimodal.generation import evaluation_test_set, generate_cdsprites_outputs
from repscope.studies.multimodal.judges import load_judges, read_judges
from repscope.studies.multimodal.leaderboard import coherency_metrics
from repscope.studies.multimodal.paper_table4 import PAPER_METRICS, PAPER_TABLE4
from repscope.train.tasks.multimodal import registered_name
from repscope.validation import check_images, check_positive_int, check_seed, to_uint8

__all__ = ["RULES", "CaptionImageModel", "SharedLatentModel", "assess_multimodal"]

RULES = ("repscope", "toolkit")
DIRECTIONS = ("text_to_image", "image_to_text", "joint")
DIRECTION_NAMES = {"text_to_image": "text -> image", "image_to_text": "image -> text", "joint": "joint"}
SCORES = {"text_to_image": ("strict", "features"), "image_to_text": ("strict", "features", "letters")}
IMAGE_SHAPE = (64, 64, 3)
SHOWN = 16  # generated images in each figure
SEED_SHUFFLE, SEED_BOOTSTRAP = 1, 2  # offsets from seed: each random step its own stream
PAPER_SOURCE = "Sejnova et al., CdSprites+ benchmark, Table 4 (toolkit's rules)"
# README, "mmvae evaluate": `repscope mmvae ... --quick` runs (3 epochs of 3,000 samples, evaluated on 200),
# measured 2026-11-25 by our rules; level 2 printed one value for all five models
REPSCOPE_QUICK_SOURCE = "README: repscope mmvae --quick, level {level}, {model}"
QUICK_METRICS = ("text_to_image_strict", "image_to_text_strict", "image_to_text_letters", "joint_strict")
REPSCOPE_QUICK: dict[tuple[int, str], tuple[float, ...]] = {
    (1, "mvae"): (66.5, 28.0, 32.3, 23.0),
    (1, "mmvae"): (100.0, 50.5, 62.9, 56.5),
    (1, "mopoe"): (66.5, 61.0, 75.9, 80.0),
    (1, "dmvae"): (100.0, 33.0, 33.0, 0.0),
    (1, "mmvae-plus"): (100.0, 49.5, 67.0, 53.0),
    # level 2: one text -> image Strict for all five, image -> text Strict 0.0 (Letters and joint as ranges)
    **{(2, m): (17.0, 0.0) for m in ("mvae", "mmvae", "mopoe", "dmvae", "mmvae-plus")},
}


class CaptionImageModel(Protocol):
    """The minimal contract of a user's image-caption model (module docstring); each method is optional,
    at least one is needed."""

    def image_to_text(self, images: np.ndarray) -> Sequence[str]:
        """Captions of uint8 ``(N, 64, 64, 3)`` RGB images, one string each."""
        ...

    def text_to_image(self, captions: list[str]) -> np.ndarray:
        """Images of captions: uint8 ``(N, 64, 64, 3)`` (float in [0, 1], channels-first accepted)."""
        ...

    def sample(self, n: int, seed: int) -> tuple[np.ndarray, Sequence[str]]:
        """``n`` image-caption pairs generated together."""
        ...


@dataclasses.dataclass(frozen=True)
class SharedLatentModel:
    """:class:`CaptionImageModel` from an encoder and a decoder per modality that share a latent space.

    Parameters
    ----------
    encode_image : callable, optional
        uint8 ``(N, 64, 64, 3)`` images -> ``(N, D)`` latents.
    encode_text : callable, optional
        ``N`` caption strings -> ``(N, D)`` latents.
    decode_image : callable, optional
        ``(N, D)`` latents -> images (as :meth:`CaptionImageModel.text_to_image` returns them).
    decode_text : callable, optional
        ``(N, D)`` latents -> ``N`` caption strings.
    latent_dim : int, optional
        ``D``: with both decoders, joint pairs are decoded from ``z ~ N(0, I)`` (seeded).
    """

    encode_image: Callable[[np.ndarray], np.ndarray] | None = None
    encode_text: Callable[[list[str]], np.ndarray] | None = None
    decode_image: Callable[[np.ndarray], np.ndarray] | None = None
    decode_text: Callable[[np.ndarray], Sequence[str]] | None = None
    latent_dim: int | None = None

    def __getattr__(self, name: str) -> Any:
        # a direction exists only where its encoder and decoder were given (getattr(model, ...) finds none)
        pairs = {
            "image_to_text": ("encode_image", "decode_text"),
            "text_to_image": ("encode_text", "decode_image"),
            "sample": ("decode_image", "decode_text", "latent_dim"),
        }
        if name in pairs and all(self.__dict__.get(part) is not None for part in pairs[name]):
            return getattr(self, f"_{name}")
        raise AttributeError(name)

    def _image_to_text(self, images: np.ndarray) -> Sequence[str]:
        return self.decode_text(self.encode_image(images))

    def _text_to_image(self, captions: list[str]) -> np.ndarray:
        return self.decode_image(self.encode_text(captions))

    def _sample(self, n: int, seed: int) -> tuple[np.ndarray, Sequence[str]]:
        latents = np.random.default_rng(seed).standard_normal((n, int(self.latent_dim))).astype(np.float32)
        return self.decode_image(latents), self.decode_text(latents)


def assess_multimodal(
    model: Any,
    *,
    level: int,
    n: int = 500,
    seed: int = 0,
    rules: Sequence[str] = RULES,
    judges: Any = None,
    progress: Callable[[str], None] | None = None,
    resamples: int = 200,
    reference_model: str | None = None,
    name: str = "multimodal model",
) -> Assessment:
    """Cross- and joint-coherency of an image-caption model on a fresh CdSprites+ test set of ``level``.

    Strict (% of samples with every attribute right), Features (mean right attributes, 0 to ``level``) and,
    for image -> text, Letters (% of the true caption's characters reproduced in place), as
    :mod:`repscope.metrics.multimodal.coherency` and the toolkit's rules define them (Sejnova et al., A.2.3).

    Parameters
    ----------
    model : object
        A trained repscope multimodal task, or an object with the contract of :class:`CaptionImageModel`
        (module docstring).
    level : int
        CdSprites+ level 1-5 of the test set and the captions.
    n : int, default=500
        Test samples per direction (and joint pairs).
    seed : int, default=0
        Seed of the test set and the generation (as ``mmvae evaluate``'s), of the chance permutation
        (``seed + 1``) and of the bootstrap (``seed + 2``).
    rules : sequence of {"repscope", "toolkit"}, default=("repscope", "toolkit")
        Which rules score the outputs.
    judges : AttributeJudges or str or pathlib.Path, optional
        The level's judges, or a folder of them (``repscope sprites train-judges``); default the user's
        cache, else the packaged ones (:func:`~repscope.studies.multimodal.judges.load_judges`).
    progress : callable or bool, optional
        Called with one line as each step starts; False: no progress bars (the judges' training, if any).
    resamples : int, default=200
        Bootstrap resamples of our rules' scores (0: no intervals).
    reference_model : str, optional
        The Table 4 model (``mvae``, ``mmvae``, ``mopoe``, ``dmvae``) to set beside; default a repscope task's
        own, else the best printed model at the level.
    name : str, default="multimodal model"
        What is assessed, for the record.

    Returns
    -------
    Assessment
        Role ``multimodal``; metrics ``coherency``; tables ``coherency``, ``coherency_chance``, ``examples``;
        arrays of the judged attribute tables; figures of the generated images.

    Raises
    ------
    InvalidArgumentError
        A bad argument, a model with none of the methods, or outputs of the wrong shape or count.

    References
    ----------
    G. Sejnova, M. Vavrecka, K. Stepanova. Benchmarking multimodal variational autoencoders: CdSprites+
    dataset and toolkit, Sec. 3.3, Appendix A.2.3, Table 4.
    """
    level, n, seed = check_level(level, "level"), check_positive_int(n, "n"), check_seed(seed)
    compat, resamples = _compat(rules), _resamples(resamples)
    say = progress if callable(progress) else (lambda line: None)
    say(f"generating {n} outputs per direction at CdSprites+ level {level}")
    with quiet_progress(progress is False):
        judged = _JudgedOnce(_judges(level, judges))  # a bad judges argument is named before any work
        test = evaluation_test_set(level, n, seed)
        parts, kind = _generated_parts(model, level, n, seed, test)
    say("scoring coherency")
    found = compute_coherency(parts, level, compat=compat, judges=judged)
    chance = compute_coherency(_shuffled(parts, seed + SEED_SHUFFLE), level, compat=compat, judges=judged)
    intervals = {}
    if resamples and compat != "toolkit":
        say(f"bootstrapping the scores ({resamples} resamples)")
        intervals = _intervals(parts, level, judged, resamples, seed + SEED_BOOTSTRAP)
    reference = reference_model or (registered_name(type(model)) if kind == "task" else None)
    headline = _headline(found, chance, intervals, level, reference)
    return Assessment(
        role="multimodal",
        model=name,
        data=f"CdSprites+ level {level}, {n} fresh test samples (seed {seed})",
        metrics={"coherency": _metrics(found, chance, intervals)},
        headline=headline,
        tables={"coherency": found.table(), "coherency_chance": chance.table(), "examples": _examples(parts)},
        arrays=_arrays(parts, judged, test),
        figures=_figures(parts),
        settings={
            "level": level,
            "n": n,
            "seed": seed,
            "rules": list(_rules(rules)),
            "resamples": resamples,
            "judges": _judges_name(judges),
            "model_kind": kind,
            "reference_model": reference,
            "cross_generation": "posterior mean" if kind == "task" else "the model's own",
        },
        notes=_notes(found, parts, n),
    )


def _rules(rules: Sequence[str]) -> tuple[str, ...]:
    given = (rules,) if isinstance(rules, str) else tuple(rules)
    if not given or any(rule not in RULES for rule in given):
        raise InvalidArgumentError(f"rules: expected one or both of {', '.join(RULES)}, got {rules!r}")
    return given


def _compat(rules: Sequence[str]) -> str:
    """The ``compat`` of :func:`compute_coherency` for the rules asked: ``both``, ``ours`` or ``toolkit``."""
    given = set(_rules(rules))
    return "both" if len(given) == 2 else "ours" if "repscope" in given else "toolkit"


def _resamples(resamples: Any) -> int:
    if resamples == 0:
        return 0
    value = check_positive_int(resamples, "resamples")
    if value < 2:
        raise InvalidArgumentError(f"resamples: 0 (no intervals) or at least 2, got {resamples!r}")
    return value


def _judges(level: int, judges: Any) -> Any:
    """The level's judges: given, read from a folder, or the user's cache / the packaged ones."""
    if judges is None:
        return load_judges(level)
    if isinstance(judges, (str, Path)):
        return read_judges(judges, level)
    if not callable(getattr(judges, "judge", None)):
        raise InvalidArgumentError(f"judges: expected AttributeJudges or a folder of them, got {type(judges).__name__}")
    return judges


def _judges_name(judges: Any) -> str:
    if judges is None:
        return "the user's cache, else the packaged judges"
    return str(judges) if isinstance(judges, (str, Path)) else str(getattr(judges, "directory", None) or "given")


class _JudgedOnce:
    """The judges, reading each images array once: the chance and the bootstrap score the same images again."""

    def __init__(self, judges: Any) -> None:
        self.judges = judges
        self.seen: dict[int, tuple[np.ndarray, Any]] = {}  # the array is kept, so its id is never reused

    def judge(self, images: np.ndarray) -> Any:
        key = id(images)
        if key not in self.seen:
            self.seen[key] = (images, self.judges.judge(images))
        return self.seen[key][1]

    def familiarity(self, confidence: Any) -> dict[str, Any]:
        return self.judges.familiarity(confidence)

    @property
    def accuracies(self) -> dict[str, float]:
        return self.judges.accuracies


def _is_task(model: Any) -> bool:
    """A repscope multimodal task: cross-generation by ``generate`` over named ``modalities``."""
    return callable(getattr(model, "generate", None)) and isinstance(getattr(model, "modalities", None), dict)


def _generated_parts(model: Any, level: int, n: int, seed: int, test: dict[str, np.ndarray]) -> tuple[dict, str]:
    """The model's outputs in every direction it has, as :func:`compute_coherency` scores them, and its kind."""
    if _is_task(model):
        return generate_cdsprites_outputs(model, level, n, seed, test=test).parts(), "task"
    directions = [d for d in ("text_to_image", "image_to_text", "sample") if callable(getattr(model, d, None))]
    if not directions:
        raise InvalidArgumentError(
            f"model: {type(model).__name__} has none of image_to_text(images), text_to_image(captions), "
            "sample(n, seed); it needs at least one (or is a repscope multimodal task)"
        )
    truth = decode_captions(test["text"], test["mask"])
    where = Path("outputs")
    parts = {}
    if "text_to_image" in directions:
        images = _output_images(model.text_to_image(list(truth)), "model.text_to_image", n)
        parts["text_to_image"] = OutputPart(where / "text_to_image", truth=truth, images=images)
    if "image_to_text" in directions:
        given = np.ascontiguousarray(np.transpose(test["image"], (0, 2, 3, 1)))  # (N, 64, 64, 3), as the contract
        captions = _output_captions(model.image_to_text(given), "model.image_to_text", n)
        parts["image_to_text"] = OutputPart(where / "image_to_text", truth=truth, captions=captions)
    if "sample" in directions:
        pairs = model.sample(n, seed=seed)
        if not isinstance(pairs, tuple) or len(pairs) != 2:
            raise InvalidArgumentError(f"model.sample: expected (images, captions), got {type(pairs).__name__}")
        images = _output_images(pairs[0], "model.sample images", n)
        parts["joint"] = OutputPart(
            where / "joint", images=images, captions=_output_captions(pairs[1], "model.sample captions", n)
        )
    return parts, "user"


def _output_images(images: Any, name: str, n: int) -> np.ndarray:
    array = check_images(images, name, image_shape=IMAGE_SHAPE)
    if len(array) != n:
        raise InvalidArgumentError(f"{name}: expected {n} images (one per caption), got {len(array)}")
    return np.ascontiguousarray(to_uint8(array))


def _output_captions(captions: Any, name: str, n: int) -> list[str]:
    if isinstance(captions, (str, bytes)) or not isinstance(captions, Sequence | np.ndarray):
        raise InvalidArgumentError(f"{name}: expected a list of {n} caption strings, got {type(captions).__name__}")
    captions = list(captions)
    if len(captions) != n:
        raise InvalidArgumentError(f"{name}: expected {n} captions, got {len(captions)}")
    return captions


def _shuffled(parts: dict[str, OutputPart], seed: int) -> dict[str, OutputPart]:
    """Each part with its rows paired at random (seeded): a generated output against another sample's truth,
    a joint image against another pair's caption; the images stay the same arrays (judged once)."""
    out = {}
    for k, (name, part) in enumerate(parts.items()):
        order = np.random.default_rng([seed, k]).permutation(
            len(part.truth if part.truth is not None else part.captions)
        )
        if name in ("text_to_image", "image_to_text"):
            out[name] = dataclasses.replace(part, truth=[part.truth[i] for i in order])
        else:
            raw = None if part.raw_captions is None else [part.raw_captions[i] for i in order]
            out[name] = dataclasses.replace(part, captions=[part.captions[i] for i in order], raw_captions=raw)
    return out


def _text_to_image(level: int, truth: np.ndarray, judged: np.ndarray) -> dict[str, Any]:
    return coherency.text_to_image(level, truth, judged[:, :-1], judged[:, -1].astype(bool))


def _image_to_text(level: int, truth: np.ndarray, captions: np.ndarray) -> dict[str, Any]:
    return coherency.image_to_text(level, truth, list(captions))


def _joint(level: int, judged: np.ndarray, captions: np.ndarray) -> dict[str, Any]:
    return coherency.joint(level, list(captions), judged[:, :-1], judged[:, -1].astype(bool))


def _intervals(parts: dict[str, OutputPart], level: int, judged: _JudgedOnce, resamples: int, seed: int) -> dict:
    """Percentile bootstrap intervals of our rules' scores, direction by direction (rows resampled)."""
    out = {}
    for name, part in parts.items():
        if part.images is not None:
            judgement = judged.judge(part.images)
            seen = np.column_stack([judgement.table, judgement.recognised.astype(np.int64)])
        if part.captions is not None:
            captions = np.empty(len(part.captions), dtype=object)
            captions[:] = part.captions
        if name == "text_to_image":
            factors, codes, metric = _truth(level, part.truth), seen, _text_to_image
        elif name == "image_to_text":
            factors, codes, metric = _truth(level, part.truth), captions, _image_to_text
        else:
            factors, codes, metric = seen, captions, _joint
        out[name] = bootstrap_interval(functools.partial(metric, level), factors, codes, resamples, seed=seed)
    return out


def _truth(level: int, captions: list[str]) -> np.ndarray:
    """The attribute table of the test set's captions (always well-formed: composed from its attributes)."""
    return np.stack([parse_caption(level, caption) for caption in captions])


def _paper(level: int, reference: str | None, metric: str) -> tuple[float | None, str | None]:
    """Table 4's mean for ``metric`` at ``level``: the reference model's, else the best printed model's."""
    if metric not in PAPER_METRICS:
        return None, None
    column = PAPER_METRICS.index(metric)
    if reference is not None:
        found = PAPER_TABLE4.get((level, reference))
        if found is None:
            return None, None
        return float(found[1][column][0]), f"{PAPER_SOURCE}, level {level}, {reference}"
    models = {m: cells[column][0] for (lvl, m), (_, cells) in PAPER_TABLE4.items() if lvl == level}
    best = max(models, key=lambda m: models[m])
    return float(models[best]), f"{PAPER_SOURCE}, level {level}, best of the four models ({best})"


def _repscope(level: int, reference: str | None, metric: str) -> tuple[float | None, str | None]:
    values = dict(zip(QUICK_METRICS, REPSCOPE_QUICK.get((level, reference or ""), ())))
    value = values.get(metric)
    return (value, REPSCOPE_QUICK_SOURCE.format(level=level, model=reference)) if value is not None else (None, None)


def _headline(
    found: CoherencyResult, chance: CoherencyResult, intervals: dict, level: int, reference: str | None
) -> tuple[HeadlineRow, ...]:
    """Per direction and rules: Strict, Features (and Letters) beside chance, interval, paper and repscope."""
    rows = []
    toolkit = found.toolkit is not None
    for direction in DIRECTIONS:
        for rules, scores, shuffled in (
            ("repscope", found.ours.get(direction), chance.ours.get(direction)),
            ("toolkit", (found.toolkit or {}).get(direction), (chance.toolkit or {}).get(direction)),
        ):
            if not isinstance(scores, dict):
                continue
            for score in SCORES.get(direction, ("strict", "features")):
                if score not in scores:
                    continue
                key = f"{direction}_{score}"
                paper = _paper(level, reference, key) if (rules == "toolkit") == toolkit else (None, None)
                ours = _repscope(level, reference, key) if rules == "repscope" else (None, None)
                interval = intervals.get(direction, {}).get(score, {}) if rules == "repscope" else {}
                rows.append(
                    HeadlineRow(
                        assessment="coherency",
                        metric=key if rules == "repscope" else f"{key}_toolkit",
                        value=float(scores[score]),
                        chance=float(shuffled[score]),
                        ci_low=interval.get("low"),
                        ci_high=interval.get("high"),
                        paper=paper[0],
                        paper_source=paper[1],
                        repscope=ours[0],
                        repscope_source=ours[1],
                        description=_describe(direction, score, rules, level),
                    )
                )
    return tuple(rows)


def _describe(direction: str, score: str, rules: str, level: int) -> str:
    what = {
        "strict": "% of samples with every attribute right",
        "features": f"mean right attributes per sample, of {level}",
        "letters": "% of the true caption's letters in place",
    }[score]
    by = "our rules (the paper's definitions)" if rules == "repscope" else "the toolkit's rules"
    return f"{DIRECTION_NAMES[direction]} {score.capitalize()}: {what}, by {by}; higher is better"


def _flat(result: CoherencyResult) -> dict[str, float]:
    """The scores by name, as ``mmvae evaluate``'s ``metrics.json`` holds them: ``<direction>_<score>`` by our
    rules, ``..._toolkit`` by the toolkit's, and the share of rejected images ``<direction>_rejected``."""
    scores = result.as_dict()
    return {**coherency_metrics(scores), **toolkit_and_traversal_metrics(scores)}


def _metrics(found: CoherencyResult, chance: CoherencyResult, intervals: dict) -> dict[str, Any]:
    return {
        **_flat(found),
        "chance": _flat(chance),
        "intervals": {
            d: {k: {"low": v["low"], "high": v["high"]} for k, v in scores.items()} for d, scores in intervals.items()
        },
        "counts": dict(found.counts),
        "judge_validation_accuracy": found.judge_validation_accuracy,
    }


def _examples(parts: dict[str, OutputPart]) -> pd.DataFrame:
    """The first captions of each direction: what was given or true beside what the model wrote."""
    rows = []
    for name, part in parts.items():
        for k in range(min(SHOWN, len(part.truth if part.truth is not None else part.captions))):
            rows.append(
                {
                    "direction": name.replace("_", " "),
                    "row": k,
                    "truth": None if part.truth is None else part.truth[k],
                    "caption": None if part.captions is None else str(part.captions[k]),
                }
            )
    return pd.DataFrame(rows, columns=["direction", "row", "truth", "caption"])


def _figures(parts: dict[str, OutputPart]) -> dict[str, np.ndarray]:
    return {name: sample_grid(part.images[:SHOWN], 8) for name, part in parts.items() if part.images is not None}


def _arrays(parts: dict[str, OutputPart], judged: _JudgedOnce, test: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    arrays = {"test_attributes": np.asarray(test["attributes"])}
    for name, part in parts.items():
        if part.images is not None:
            judgement = judged.judge(part.images)
            arrays[f"{name}_judged"] = judgement.table
            arrays[f"{name}_recognised"] = judgement.recognised
    return arrays


def _notes(found: CoherencyResult, parts: dict[str, OutputPart], n: int) -> tuple[str, ...]:
    notes = list(found.warnings)
    missing = [DIRECTION_NAMES[d] for d in DIRECTIONS if d not in parts]
    if missing:
        notes.append(f"not assessed: {', '.join(missing)} (the model has no method for it)")
    if n < 200:
        notes.append(
            f"{n} samples per direction: Strict moves by about {100 / n**0.5:.0f} points from one test set to another"
        )
    return tuple(notes)

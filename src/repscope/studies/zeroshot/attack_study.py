"""Black-box attacks on one trained classifier (``repscope zeroshot attack``): the paper's Table 1 for any model.

The L0 (pixel) and L-infinity (threshold) attacks run with CMA-ES at each threshold on a seeded draw of
test images the model classifies correctly (an attack on an image it already gets wrong would count as a
free success). Two searches:

- ``art`` (default): :mod:`repscope.studies.zeroshot.attacks`, the adversarial-robustness-toolbox's ``PixelAttack`` /
  ``ThresholdAttack`` (cma's default population, up to ``budget`` generations, stop at the first success);
- ``dqa``: :func:`dqa_attack`, the search of the authors' dual quality assessment code, whose attacks the
  paper's Table 1 counts: one CMA-ES generation of 400 candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope.errors import InvalidArgumentError
from repscope.fileio import write_json_atomic, write_text_atomic
from repscope.validation import check_positive_int

# our names of the norms (configs, CLI) -> the attacks package's
ATTACK_NORMS = {"l0": "L0", "linf": "Linf"}
# the searches: today's adversarial-robustness-toolbox search, and the authors' DQA search
SEARCHES = ("art", "dqa")
# DQA's settings (code/attacks/our_attacks.py, OurAttack.attack; code/run_attack.py defaults)
DQA_POPULATION = 400  # --pop_size: cma's popsize
DQA_GENERATIONS = 1  # es.optimize(..., iterations=1)
DQA_MAX_ITERATIONS = 100  # --max_iter: cma's maxiter option, never reached in one generation
DQA_PIXEL_STD = 63  # sigma0 = std / 4: 63 for the pixel attack, the threshold for the threshold attack


def predictor(task: Any, compat: str = "paper") -> Any:
    """The attacks' model boundary for a trained task: float images ``(B, C, H, W)`` in 0-255 -> its
    soft-labels (softmax outputs, or CapsNet's normalised capsule lengths; with ``compat="reference"``
    CapsNet's raw capsule lengths, the output of the authors' Keras CapsNet that DQA attacks).

    Parameters
    ----------
    task : SupervisedTask
        A trained classifier (``soft_labels(images)`` on float images in [0, 1]).
    compat : {"paper", "reference"}, default="paper"
        Which CapsNet outputs the attack reads (other models give their softmax either way).

    Returns
    -------
    callable
        ``predict(images) -> (B, n_classes)`` numpy array.
    """
    if compat not in ("paper", "reference"):
        raise InvalidArgumentError(f"compat: expected paper or reference, got {compat!r}")
    raw = False
    if compat == "reference":  # the capsule task (and Lightning with it) is imported only where it can matter
        from repscope.train.tasks.capsule import CapsNetTask  # noqa: PLC0415

        raw = isinstance(task, CapsNetTask)

    def predict(images: np.ndarray) -> np.ndarray:
        scaled = np.clip(images, 0, 255).astype(np.float32) / np.float32(255.0)
        return task.soft_labels(scaled, compat="reference") if raw else task.soft_labels(scaled)

    return predict


def check_norms(norms: Sequence[str], thresholds: Sequence[int]) -> None:
    """Refuse unknown norms and thresholds that are not positive integers, naming the option."""
    unknown = [norm for norm in norms if norm not in ATTACK_NORMS]
    if unknown or not norms:
        raise InvalidArgumentError(f"--norm: expected l0 or linf, got {', '.join(unknown) or 'none'}")
    bad = _refused_counts(thresholds)
    if bad or not thresholds:
        raise InvalidArgumentError(f"--threshold: expected positive integers (pixels or 0-255 levels), got {bad}")


def _refused_counts(values: Sequence[Any]) -> list[Any]:
    """The values :func:`repscope.validation.check_positive_int` refuses, for a message naming every one."""
    refused = []
    for value in values:
        try:
            check_positive_int(value, "value")
        except InvalidArgumentError:
            refused.append(value)
    return refused


def check_search(search: str) -> None:
    """Refuse a search other than ``art`` and ``dqa``, naming the option."""
    if search not in SEARCHES:
        raise InvalidArgumentError(f"--search: expected one of {', '.join(SEARCHES)}, got {search!r}")


# ---------------------------------------------------------------------------------------------------
# DQA's search


def _dqa_start(image: np.ndarray, norm: str, threshold: int) -> tuple[list, list, float]:
    """Start point, box ``[lower, upper]`` and ``sigma0`` of DQA's search on one ``(H, W, C)`` image."""
    height, width, channels = image.shape
    if norm == "L0":
        # PixelAttack.get_bounds: the first `threshold` pixels in row-major order with their own values
        initial: list = []
        for count in range(threshold):
            row, col = divmod(count, width)
            initial += [row, col, *image[row, col].tolist()]
        lower = [0] * (2 + channels) * threshold
        upper = ([height, width] + [255] * channels) * threshold
        return initial, [lower, upper], DQA_PIXEL_STD / 4
    # ThresholdAttack.get_bounds: every value, (row, col, channel) order, within +-threshold and 0-255
    values = image.ravel().astype(np.float64)
    lower = np.clip(values - threshold, 0, 255)
    upper = np.clip(values + threshold, 0, 255)
    return values.tolist(), [lower.tolist(), upper.tolist()], threshold / 4


def _dqa_images(image: np.ndarray, candidates: np.ndarray, norm: str, threshold: int) -> np.ndarray:
    """DQA's ``perturb_image`` for a population: ``(B, H, W, C)`` float32 images of the candidates."""
    height, width, channels = image.shape
    genes = candidates.astype(int)  # truncation toward zero, DQA's astype(int)
    if norm == "Linf":
        return genes.reshape((len(candidates), height, width, channels)).astype(np.float32)
    genes = genes.reshape(len(candidates), threshold, 2 + channels)
    batch = np.repeat(image[None], len(candidates), axis=0)
    members = np.arange(len(candidates))
    # pixel slots in order, so a later slot at the same position wins, as in DQA's loop
    for slot in range(threshold):
        batch[members, genes[:, slot, 0] % height, genes[:, slot, 1] % width] = genes[:, slot, 2:]
    return batch


def _dqa_options(bounds: list, seed: int) -> Any:
    import cma  # noqa: PLC0415

    options = cma.CMAOptions()
    for key, value in (
        ("verbose", -9),
        ("verb_disp", 40000),
        ("verb_log", 40000),
        ("verb_time", False),
        ("popsize", DQA_POPULATION),
        ("maxiter", DQA_MAX_ITERATIONS),
        ("bounds", bounds),
        ("seed", seed),
    ):
        options.set(key, value)
    return options


def _dqa_search(model: Any, image: np.ndarray, label: int, norm: str, threshold: int, seed: int) -> tuple:
    """One image ``(H, W, C)``: one generation; ``(success, image of xbest (C, H, W), class, queries)``."""
    import cma  # noqa: PLC0415

    initial, bounds, sigma0 = _dqa_start(image, norm, threshold)
    caller_state = np.random.get_state()
    caller_verbosity = cma.utilities.utils.global_verbosity
    try:
        strategy = cma.CMAEvolutionStrategy(initial, sigma0, _dqa_options(bounds, seed))  # seeds numpy
        candidates = strategy.ask()
        population = np.array(candidates)
        batch = _dqa_images(image, population, norm, threshold).transpose(0, 3, 1, 2)
        search_state = np.random.get_state()
        np.random.set_state(caller_state)  # the model runs with the caller's random state
        try:
            probabilities = model(batch)
        finally:
            caller_state = np.random.get_state()
            np.random.set_state(search_state)
        # fitness: the soft-label of the true class (DQA's predict_classes, untargeted), minimised
        strategy.tell(candidates, list(probabilities[:, label]))
        xbest = strategy.result[0]
    finally:
        np.random.set_state(caller_state)
        cma.utilities.utils.global_verbosity = caller_verbosity
    queries = len(batch)
    member = next((k for k, c in enumerate(candidates) if c is xbest), None)
    if member is None:  # cma keeps the evaluated array itself; by value in case a version copies it
        member = next((k for k in range(len(population)) if np.array_equal(population[k], xbest)), None)
    if member is not None:
        best_image, best_class = batch[member], int(np.argmax(probabilities[member]))
    else:  # never seen: one more call
        best_image = _dqa_images(image, np.asarray(xbest)[None], norm, threshold).transpose(0, 3, 1, 2)[0]
        best_class = int(np.argmax(model(best_image[None])[0]))
        queries += 1
    # Attack.start_attack: success when the class of xbest's image is not the true class
    return best_class != label, best_image, best_class, queries


def dqa_attack(
    norm: str,
    predict: Any,
    images: np.ndarray,
    labels: np.ndarray,
    threshold: int,
    *,
    seed: int = 0,
    progress: Any = None,
) -> Any:
    """The L0 (pixel) or L-infinity (threshold) attack with the search of the authors' dual quality
    assessment code, whose attacks the Raw Zero-Shot paper's Table 1 counts.

    Follows ``shashankkotyan/DualQualityAssessment`` (``code/attacks/our_attacks.py``: ``OurAttack.attack``,
    ``PixelAttack.get_bounds`` / ``perturb_image``, ``ThresholdAttack.get_bounds`` / ``perturb_image``;
    ``code/attacks/base_attack.py``: ``Attack.start_attack``; defaults of ``code/run_attack.py``), with
    the image in DQA's ``(H, W, C)`` layout:

    * encoding: L0, ``threshold`` pixels ``(row, col, v_1, ..., v_C)``, starting from the first
      ``threshold`` pixels in row-major order with their own values, box ``[0, H] x [0, W] x [0, 255]^C``,
      ``sigma0 = 63 / 4``; a candidate's image sets pixel ``(int(row) mod H, int(col) mod W)`` to
      ``int(v)``, slot by slot. L-infinity, every value in ``(row, col, channel)`` order, starting from
      the image, box ``[clip(v - th, 0, 255), clip(v + th, 0, 255)]``, ``sigma0 = th / 4``; the image is
      ``int(candidate)`` (truncation toward zero);
    * CMA-ES (the ``cma`` package) with ``popsize`` 400, ``maxiter`` 100 and the box as cma's ``bounds``
      (default ``BoundTransform``: every candidate lies inside the box), run by ``optimize(...,
      iterations=1)``: **one generation** of 400 candidates; the fitness of a candidate is the model's
      soft-label of the true class (untargeted), minimised;
    * the answer is cma's ``xbest`` (the best of the 400), and the attack succeeds when the model's
      predicted class (argmax) on its image is not the true class.

    Not as in DQA: the 400 candidates are scored in one call of ``predict`` (DQA scores them one by one;
    equal inputs give equal scores, but a network's batched and single passes may differ in the last
    float bits), and cma gets a seed (:func:`repscope.studies.zeroshot.attacks.attack_seed`, DQA's cma seeds from the
    clock); numpy's global random state of the caller is restored afterwards.

    Parameters
    ----------
    norm : {"L0", "Linf"}
        Pixel (L0) or threshold (L-infinity) attack.
    predict : callable
        ``predict(batch) -> probabilities``, float32 ``(B, C, H, W)`` on the 0-255 scale to
        ``(B, n_classes)``; called once per image with the 400 candidates.
    images : numpy.ndarray
        ``(N, C, H, W)`` uint8 or float 0-255, channels first.
    labels : array-like of int
        ``(N,)`` true classes.
    threshold : int
        Pixels changed (L0) or largest change of a value (L-infinity), a positive integer.
    seed : int, default=0
        Seed of the per-image cma seeds (:func:`repscope.studies.zeroshot.attacks.attack_seed`).
    progress : callable, optional
        ``progress(done, total)`` after each image.

    Returns
    -------
    repscope.studies.zeroshot.attacks.AttackResult
        ``success``, ``adversarial`` (the image of ``xbest`` where the attack succeeded, the original
        otherwise), ``predicted`` (the class of ``xbest``'s image), ``queries`` (400 a image),
        ``iterations`` (1), ``budget`` (1 generation) and the cma ``seeds``.

    Raises
    ------
    InvalidArgumentError
        An unknown norm, or an argument :func:`repscope.studies.zeroshot.attacks.pixel_attack` would refuse.
    """
    from repscope.studies.zeroshot.attacks import AttackResult, attack_seed  # noqa: PLC0415
    from repscope.studies.zeroshot.attacks.pixel_threshold import NORMS, _check_inputs, _Model  # noqa: PLC0415

    if norm not in NORMS:
        raise InvalidArgumentError(f"norm: must be one of {', '.join(NORMS)}, got {norm!r}")
    images, labels, threshold = _check_inputs(predict, images, labels, threshold, 1, seed, norm)
    model = _Model(predict, labels)
    count = len(images)
    success = np.zeros(count, dtype=bool)
    adversarial = images.copy()
    predicted = np.zeros(count, dtype=np.int64)
    queries = np.zeros(count, dtype=np.int64)
    seeds = np.array([attack_seed(seed, norm, threshold, i) for i in range(count)], dtype=np.int64)
    for i in range(count):
        image = images[i].astype(np.float32).transpose(1, 2, 0)  # DQA's float32 (H, W, C) image
        fooled, best_image, best_class, used = _dqa_search(model, image, int(labels[i]), norm, threshold, int(seeds[i]))
        success[i], predicted[i], queries[i] = fooled, best_class, used
        if fooled:
            adversarial[i] = best_image.astype(images.dtype)  # integers 0-255: exact in any dtype
        if callable(progress):  # False / None: no progress (as the batched attacks take it)
            progress(i + 1, count)
    return AttackResult(
        norm=norm,
        threshold=threshold,
        budget=DQA_GENERATIONS,
        seed=int(seed),
        success=success,
        adversarial=adversarial,
        predicted=predicted,
        queries=queries,
        iterations=np.full(count, DQA_GENERATIONS, dtype=np.int64),
        seeds=seeds,
    )


# ---------------------------------------------------------------------------------------------------
# one classifier


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
    search: str = "art",
) -> pd.DataFrame:
    """One attack (norm, threshold) on every image: :func:`attack_table` of its result (``rows``: the
    images' test rows, for its ``image`` column; ``search``: ``art`` or ``dqa``, see the module; the
    ``dqa`` search ignores ``budget`` and reads CapsNet's raw capsule lengths, as DQA does)."""
    from repscope.studies.zeroshot.attacks import attack  # noqa: PLC0415

    check_search(search)
    if search == "dqa":
        result = dqa_attack(
            ATTACK_NORMS[norm], predictor(task, "reference"), images, labels, threshold, seed=seed, progress=progress
        )
    else:
        result = attack(
            ATTACK_NORMS[norm], predictor(task), images, labels, threshold, budget=budget, seed=seed, progress=progress
        )
    return attack_table(result, norm, threshold, labels, rows, search)


def attack_table(
    result: Any, norm: str, threshold: int, labels: np.ndarray, rows: Any = None, search: str = "art"
) -> pd.DataFrame:
    """One ``AttackResult`` as a table of ``success``, ``queries``, ``iterations`` and ``predicted`` per
    image, after ``search`` (which search made it), ``norm`` (our name), ``threshold``, ``image`` (the test
    rows, when given) and ``label``."""
    return pd.DataFrame(
        {
            "search": search,
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


@dataclass(frozen=True)
class ClassifierAttacks:
    """The attacks of ``repscope zeroshot attack`` on one classifier: every image once per norm and threshold.

    Attributes
    ----------
    per_image : pandas.DataFrame
        One row per image, norm and threshold (:func:`attack_table`): ``search``, ``norm``, ``threshold``,
        ``image`` (the test row), ``label``, ``success``, ``queries``, ``iterations``, ``predicted``.
    counts : pandas.DataFrame
        One row per norm and threshold: ``search``, ``norm``, ``threshold``, ``successes``, ``images``,
        ``queries``.
    norms : tuple of str
        The norms attacked (``l0``, ``linf``), in order.
    images : int
        Images attacked.
    search : str
        ``art`` or ``dqa``.
    budget : int
        CMA-ES generations of the ``art`` search.
    seed : int
        Seed of the attacks.
    """

    per_image: pd.DataFrame
    counts: pd.DataFrame
    norms: tuple[str, ...]
    images: int
    search: str
    budget: int
    seed: int

    @property
    def totals(self) -> dict[str, int]:
        """Successful attacks per norm, summed over the thresholds, and their ``total`` (Table 1's columns)."""
        totals = {norm: int(self.counts.loc[self.counts["norm"] == norm, "successes"].sum()) for norm in self.norms}
        return {**totals, "total": sum(totals.values())}


def compute_classifier_attacks(
    task: Any,
    images: np.ndarray,
    labels: np.ndarray,
    norms: Sequence[str],
    thresholds: Sequence[int],
    budget: int,
    seed: int,
    *,
    rows: Any = None,
    search: str = "art",
) -> ClassifierAttacks:
    """Attack a trained classifier on ``images`` with every norm at every threshold; writes nothing.

    Parameters
    ----------
    task : SupervisedTask
        A trained classifier (``soft_labels`` on float images in [0, 1]).
    images : numpy.ndarray
        ``(N, C, H, W)`` test images the classifier gets right, as its data gives them.
    labels : numpy.ndarray
        ``(N,)`` their classes.
    norms, thresholds : sequence
        ``l0`` / ``linf``; positive integer thresholds (:func:`check_norms`).
    budget, seed : int
        CMA-ES generations of the ``art`` search (unused by ``dqa``); seed of the attacks.
    rows : array-like, optional
        The images' test rows, for the ``image`` column.
    search : {"art", "dqa"}, default="art"
        See the module.

    Returns
    -------
    ClassifierAttacks
    """
    from repscope.progress import progress_bar  # noqa: PLC0415

    count = len(images)
    tables = []
    with progress_bar(
        f"attacking {count} images ({search} search)", total=count * len(norms) * len(thresholds)
    ) as update:
        for norm in norms:
            for threshold in thresholds:
                offset = len(tables) * count
                tables.append(
                    run_attacks(
                        task,
                        images,
                        labels,
                        norm,
                        int(threshold),
                        budget,
                        seed,
                        rows=rows,
                        progress=lambda done, _, offset=offset: update(offset + done),
                        search=search,
                    )
                )
    per_image = pd.concat(tables, ignore_index=True)
    counts = (
        per_image.groupby(["search", "norm", "threshold"], sort=False)
        .agg(successes=("success", "sum"), images=("success", "size"), queries=("queries", "sum"))
        .reset_index()
    )
    return ClassifierAttacks(per_image, counts, tuple(norms), count, search, budget, seed)


def write_classifier_attacks(result: ClassifierAttacks, out: Path, provenance: dict[str, Any]) -> None:
    """Write ``attacks.csv`` (per image), ``counts.csv`` (per norm and threshold) and ``metrics.json`` (the
    settings, the successes and their totals, after ``provenance``: the model and its data) into ``out``."""
    write_text_atomic(out / "attacks.csv", result.per_image.to_csv(index=False))
    write_text_atomic(out / "counts.csv", result.counts.to_csv(index=False))
    search_settings = (
        {"budget": result.budget}
        if result.search == "art"
        else {"population": DQA_POPULATION, "generations": DQA_GENERATIONS, "capsnet_outputs": "raw lengths"}
    )
    successes = {f"{row.norm}_th{row.threshold}": int(row.successes) for row in result.counts.itertuples()}
    metrics = {
        **provenance,
        "images": result.images,
        "search": result.search,
        **search_settings,
        "seed": result.seed,
        "successes": successes,
        "totals": result.totals,
    }
    write_json_atomic(out / "metrics.json", metrics)


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
    search: str = "art",
    *,
    model_args: dict[str, Any] | None = None,
    weights: str | Path | None = None,
) -> pd.DataFrame:
    """Attack the classifier of ``model`` on ``n`` correctly classified test images of its data (or
    ``data``); write ``attacks.csv`` (per image), ``counts.csv`` (successes per norm and threshold) and
    ``metrics.json`` into ``out``.

    Parameters
    ----------
    model : str or pathlib.Path
        A run directory of ``repscope train``; a ``.ckpt`` file (``arch`` names its model); a state_dict
        file (``arch`` a classifier network, registered or ``pkg.module:factory``); or a model from outside
        (:func:`repscope.studies.invariance.testing.load_outside_classifier`: ``pkg.module:factory``,
        ``file.py:factory``, a TorchScript / ``torch.export`` file or an ``.onnx`` file), attacked through
        its :class:`repscope.models.external.ImageClassifier`'s ``predict`` and ``soft_labels``.
    out : pathlib.Path
        The output folder.
    arch, data : str, optional
        See ``model``; the registered dataset (default: the run's own; required for the other sources).
    data_params : dict
        The dataset's parameters.
    norms, thresholds : list
        ``l0`` / ``linf``; positive integer thresholds.
    n, budget, seed : int
        Images attacked, CMA-ES generations of the ``art`` search (unused by ``dqa``), seed.
    search : {"art", "dqa"}, default="art"
        ``art``: :mod:`repscope.studies.zeroshot.attacks`; ``dqa``: :func:`dqa_attack` (one generation of 400, the
        authors' search).
    model_args, weights : optional
        A factory's keyword arguments (``--model-arg``) and state_dict file (``--weights``).

    Returns
    -------
    pandas.DataFrame
        ``counts.csv``: ``search``, ``norm``, ``threshold``, ``successes``, ``images``, ``queries``.

    Raises
    ------
    InvalidArgumentError
        Bad norms, thresholds, counts or search; a model :func:`~repscope.studies.invariance.testing.
        load_classifier` refuses; a model that classifies no test image correctly.
    """
    check_norms(norms, thresholds)
    check_search(search)
    if _refused_counts([n, budget]):
        raise InvalidArgumentError(f"--n, --budget: expected positive numbers, got {n} and {budget}")
    task, dataset, data, data_params = _attacked_classifier(model, arch, data, data_params, model_args, weights)
    test = dataset.arrays("test", ["image", "target"])
    refusal = f"--model {model}: classifies no test image of {data} correctly"
    rows = _correctly_classified_draw(task, test, n, seed, refusal)
    images, labels = test["image"][rows], test["target"][rows]
    result = compute_classifier_attacks(task, images, labels, norms, thresholds, budget, seed, rows=rows, search=search)
    provenance = {"model": str(model), "data": data, "data_params": data_params}
    if model_args:  # what rebuilds a factory's network
        provenance["model_args"] = dict(model_args)
    if weights is not None:
        provenance["weights"] = str(weights)
    write_classifier_attacks(result, out, provenance)
    return result.counts


def _attacked_classifier(
    model: str | Path, arch: str | None, data: str | None, data_params: dict[str, Any], model_args: Any, weights: Any
) -> tuple[Any, Any, str, dict[str, Any]]:
    """The classifier :func:`attack_classifier` attacks (``predict``, ``soft_labels``) and its dataset: a run's
    or a checkpoint's trained task, a state_dict's network or a model from outside behind an ``ImageClassifier``."""
    from repscope.models.external import ImageClassifier, load_model  # noqa: PLC0415
    from repscope.studies.invariance.classifiers import (  # noqa: PLC0415
        is_outside_source,
        load_classifier,
        load_outside_classifier,
    )

    if is_outside_source(model, arch):
        return load_outside_classifier(model, data, data_params, model_args=model_args, weights=weights)
    network, dataset, data, data_params = load_classifier(
        model, arch, data, data_params, model_args=model_args, weights=weights
    )
    path = Path(model)
    if path.is_dir() or path.suffix == ".ckpt":
        from repscope.train.fitting import load_task  # noqa: PLC0415 -- Lightning, only for repscope's own runs

        # the trained task itself: CapsNet's soft-labels and compat="reference" outputs are its own
        return load_task(path, model=arch), dataset, data, data_params
    return ImageClassifier(load_model(network)), dataset, data, data_params


def _correctly_classified_draw(task: Any, test: dict[str, np.ndarray], n: int, seed: int, refusal: str) -> np.ndarray:
    """A seeded draw of ``n`` test rows the classifier gets right (all of them when fewer), sorted; an attack
    on an image it already gets wrong would be a free success. ``refusal``: the message when it gets none right."""
    correct = np.flatnonzero(task.predict(test["image"]) == test["target"])
    if not len(correct):
        raise InvalidArgumentError(refusal)
    return np.sort(np.random.default_rng([seed, 61]).choice(correct, size=min(n, len(correct)), replace=False))


__all__ = [
    "ATTACK_NORMS",
    "DQA_GENERATIONS",
    "DQA_POPULATION",
    "SEARCHES",
    "ClassifierAttacks",
    "attack_classifier",
    "attack_table",
    "check_norms",
    "check_search",
    "compute_classifier_attacks",
    "dqa_attack",
    "predictor",
    "run_attacks",
    "write_classifier_attacks",
]

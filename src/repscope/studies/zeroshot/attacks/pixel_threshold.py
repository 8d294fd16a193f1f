"""The L0 (pixel) and L-infinity (threshold) black-box attacks of the "dual quality assessment" with
CMA-ES: the search of the adversarial-robustness-toolbox's ``PixelAttack`` / ``ThresholdAttack``
with ``es=0``, step for step, but with each CMA-ES population scored by one batched call of the
model and the candidate images built with array operations instead of loops over pixels.

Procedure, for one image ``x`` (``C x H x W``, 0-255) of true class ``c`` and threshold ``th``:

* **L0** (Su et al. 2019; Vargas & Kotyan 2019): a candidate is ``th`` pixels, each
  ``(row, col, v_1, ..., v_C)``; the start point is the first ``th`` pixels in row-major order with
  their own values (the unchanged image), the box is ``[0, H] x [0, W] x [0, 255]^C`` per pixel and
  CMA-ES starts with step size ``sigma0 = 63 / 4``. The image of a candidate is ``x`` with, pixel by
  pixel in order, position ``(int(row) mod H, int(col) mod W)`` set to ``int(v)``.
* **L-infinity** (Vargas & Kotyan 2019): a candidate is the whole image, one value per channel and
  pixel; the start point is ``x``, the box ``[clip(x - th, 0, 255), clip(x + th, 0, 255)]`` and
  ``sigma0 = th / 4``. The image of a candidate is ``int(candidate)`` (truncation toward zero,
  as ART's ``astype(int)``: from an integer pixel ``v``, ``v + th`` is reached only on the bound).

CMA-ES (Hansen & Ostermeier 2001; the ``cma`` package) minimises the soft-label of the true class,
``f(candidate) = predict(image(candidate))[c]``, for at most ``budget`` iterations (ART's
``max_iter``; also cma's own stopping rules, e.g. ``tolflatfitness``: a population whose soft-labels
are all equal ends the search after its first iteration, and ART's cap of 40,000 evaluations, never
reached with the default budget). After each iteration the best candidate evaluated so far (cma's
``xbest``) is checked: when the model no longer predicts ``c`` on its image the search stops and the
attack succeeds, otherwise the image is returned unchanged.

What differs from ART, and why the outcome is the same:

* ART scores each candidate with its own forward pass and re-predicts ``xbest`` after every
  iteration (one more pass) and once at the end. Here a population is one call of ``predict``. cma's
  ``tell`` stores the very candidate array it was given as ``xbest`` (``BestSolution.update``: ``x =
  arx[argmin f]``), and with its default ``BoundTransform`` the candidates ``ask`` hands out are
  already inside the box, so ``xbest`` is always one of the evaluated candidates: its class is read
  from the population's output (checked by identity and value; otherwise one extra call is made).
* Batched and one-image forward passes of a neural network may differ in the last float bits. Equal
  inputs get equal scores either way, but two candidates whose soft-labels differ by a few ulps can
  swap ranks, after which the two searches follow different paths (see the benchmark).
* cma seeds numpy's *global* random generator. Each (image, norm, threshold) gets its own seed
  (:func:`attack_seed`, never 0, which cma reads as "seed from the clock"), and the global state of
  the caller is restored afterwards (and swapped back in while ``predict`` runs).

References
----------
.. [1] D. V. Vargas and S. Kotyan, "Model agnostic dual quality assessment for adversarial machine
   learning and an analysis of current neural networks and defenses", arXiv:1906.06026, 2019.
.. [2] J. Su, D. V. Vargas and K. Sakurai, "One pixel attack for fooling deep neural networks",
   IEEE Transactions on Evolutionary Computation 23(5), 2019.
.. [3] N. Hansen and A. Ostermeier, "Completely derandomized self-adaptation in evolution
   strategies", Evolutionary Computation 9(2), 2001; N. Hansen, "The CMA evolution strategy: a
   tutorial", arXiv:1604.00772.
.. [4] D. V. Vargas, S. Kotyan and M. Matsuki, "Uncovering why deep neural networks lack robustness:
   representation metrics that link to adversarial attacks" (Raw Zero-Shot), Sec. 4 and Table 1.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import cma
import numpy as np

from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int

NORMS = ("L0", "Linf")
# ART caps the evaluations at max(1, 400 // len(bounds)) * len(bounds) * 100, and for CMA-ES its
# bounds are the pair [lower, upper]: 200 * 2 * 100
MAX_EVALUATIONS = 40_000
# ART's step sizes: sigma0 = std / 4 with std 63 for the pixel attack and th for the threshold attack
PIXEL_STD = 63
# rows per call of predict for the extra pass over the originals of failed attacks
_CHUNK = 256

Predict = Callable[[np.ndarray], Any]
Progress = Callable[[int, int], Any]
# what ``progress`` may be: a callback ``progress(done, total)``, True / None (a bar, or nothing), False
ProgressArgument = Progress | bool | None


@dataclass(frozen=True)
class AttackResult:
    """The outcome of one attack (norm and threshold) on N images.

    Attributes
    ----------
    norm : str
        ``"L0"`` (pixel attack) or ``"Linf"`` (threshold attack).
    threshold : int
        Pixels changed (L0) or largest change of a value on the 0-255 scale (L-infinity).
    budget : int
        Most CMA-ES iterations per image.
    seed : int
        The seed the per-image cma seeds were derived from (:func:`attack_seed`).
    success : numpy.ndarray
        ``(N,)`` bool: the model no longer predicts the true class on the returned image.
    adversarial : numpy.ndarray
        ``(N, C, H, W)``, the dtype of the input images: the perturbed image where the attack
        succeeded, the original otherwise.
    predicted : numpy.ndarray
        ``(N,)`` int64: the class ``predict`` gives the returned image.
    queries : numpy.ndarray
        ``(N,)`` int64: images the search passed to ``predict`` (population sizes summed, plus any
        extra check of ``xbest``); the pass over the originals of failed attacks is not counted.
    iterations : numpy.ndarray
        ``(N,)`` int64: CMA-ES iterations run.
    seeds : numpy.ndarray
        ``(N,)`` int64: the cma seed of each image.
    """

    norm: str
    threshold: int
    budget: int
    seed: int
    success: np.ndarray
    adversarial: np.ndarray
    predicted: np.ndarray
    queries: np.ndarray
    iterations: np.ndarray
    seeds: np.ndarray

    @property
    def success_count(self) -> int:
        """Number of images the attack fooled the model on (one cell of the paper's Table 1)."""
        return int(self.success.sum())


def attack_seed(seed: int, norm: str, threshold: int, index: int) -> int:
    """The cma seed of image ``index`` under ``norm`` and ``threshold``, derived from ``seed``.

    Parameters
    ----------
    seed : int
        The run's seed (non-negative).
    norm : {"L0", "Linf"}
        The attack.
    threshold : int
        The attack's threshold.
    index : int
        Position of the image in the batch attacked.

    Returns
    -------
    int
        ``1 + s mod (2**32 - 1)`` for ``s`` the first 32-bit word of
        ``numpy.random.SeedSequence([seed, norm code, threshold, index])``: in ``[1, 2**32 - 1]``,
        the range ``numpy.random.seed`` takes, never 0 (cma seeds from the clock on 0).
    """
    if norm not in NORMS:
        raise InvalidArgumentError(f"norm: must be one of {', '.join(NORMS)}, got {norm!r}")
    words = [_nonnegative_int(seed, "seed"), NORMS.index(norm), int(threshold), int(index)]
    state = np.random.SeedSequence(words).generate_state(1, dtype=np.uint32)[0]
    return int(state) % (2**32 - 1) + 1


def pixel_attack(
    predict: Predict,
    images: np.ndarray,
    labels: np.ndarray,
    threshold: int,
    *,
    budget: int = 100,
    seed: int = 0,
    progress: ProgressArgument = None,
) -> AttackResult:
    """L0 black-box attack: change at most ``threshold`` pixels (all channels of each) so that the model
    stops predicting the true class; ART's ``PixelAttack(es=0)`` search with batched evaluation.

    Parameters
    ----------
    predict : callable
        ``predict(batch) -> probabilities``: ``batch`` float32 ``(B, C, H, W)`` with values on the
        0-255 scale, the result ``(B, n_classes)`` class probabilities (soft-labels, e.g. after a
        softmax) as a numpy array or anything ``numpy.asarray`` reads. Called once per CMA-ES
        iteration with the whole population.
    images : numpy.ndarray
        ``(N, C, H, W)`` uint8, or float with values in [0, 255], channels first. The search runs on
        their float32 values, as ART's does.
    labels : array-like of int
        ``(N,)`` true classes (the attack is untargeted), each below ``predict``'s output width.
    threshold : int
        Pixels changed, 1 to ``H * W`` (the paper uses 1, 3, 5 and 10).
    budget : int, default=100
        Most CMA-ES iterations per image (ART's ``max_iter``).
    seed : int, default=0
        Seed of the per-image cma seeds (:func:`attack_seed`); the same seed gives the same result.
    progress : callable or bool, optional
        ``progress(done, total)``, called after each image; True shows a progress bar
        (:func:`repscope.progress.progress_bar`), False or None nothing.

    Returns
    -------
    AttackResult
        Success flags, adversarial images, predicted classes, queries and iterations per image.

    Raises
    ------
    InvalidArgumentError
        When an argument has a wrong value, shape or dtype (the message names it), or ``predict``
        returns something that is not ``(B, n_classes)`` finite values.
    """
    return _attack_batch("L0", predict, images, labels, threshold, budget, seed, progress)


def threshold_attack(
    predict: Predict,
    images: np.ndarray,
    labels: np.ndarray,
    threshold: int,
    *,
    budget: int = 100,
    seed: int = 0,
    progress: ProgressArgument = None,
) -> AttackResult:
    """L-infinity black-box attack: change every value by at most ``threshold`` (0-255 scale) so that the
    model stops predicting the true class; ART's ``ThresholdAttack(es=0)`` search with batched evaluation.

    Parameters
    ----------
    predict : callable
        ``predict(batch) -> probabilities``: ``batch`` float32 ``(B, C, H, W)`` with values on the
        0-255 scale, the result ``(B, n_classes)`` class probabilities. Called once per CMA-ES
        iteration with the whole population.
    images : numpy.ndarray
        ``(N, C, H, W)`` uint8, or float with values in [0, 255], channels first. With non-integer
        values, ART's truncation of candidates to integers can step up to 1 beyond ``threshold``;
        integer-valued images stay within it.
    labels : array-like of int
        ``(N,)`` true classes, each below ``predict``'s output width.
    threshold : int
        Largest change of a value, a positive integer (the paper uses 1, 3, 5 and 10).
    budget : int, default=100
        Most CMA-ES iterations per image (ART's ``max_iter``).
    seed : int, default=0
        Seed of the per-image cma seeds (:func:`attack_seed`).
    progress : callable or bool, optional
        ``progress(done, total)``, called after each image; True shows a progress bar
        (:func:`repscope.progress.progress_bar`), False or None nothing.

    Returns
    -------
    AttackResult
        Success flags, adversarial images, predicted classes, queries and iterations per image.

    Raises
    ------
    InvalidArgumentError
        When an argument has a wrong value, shape or dtype (the message names it), or ``predict``
        returns something that is not ``(B, n_classes)`` finite values.
    """
    return _attack_batch("Linf", predict, images, labels, threshold, budget, seed, progress)


def attack(
    norm: str,
    predict: Predict,
    images: np.ndarray,
    labels: np.ndarray,
    threshold: int,
    *,
    budget: int = 100,
    seed: int = 0,
    progress: ProgressArgument = None,
) -> AttackResult:
    """:func:`pixel_attack` (``norm="L0"``) or :func:`threshold_attack` (``norm="Linf"``).

    Parameters
    ----------
    norm : {"L0", "Linf"}
        Which attack.
    predict, images, labels, threshold, budget, seed, progress
        As for :func:`pixel_attack` / :func:`threshold_attack`.

    Returns
    -------
    AttackResult
        The attack's outcome.
    """
    if norm not in NORMS:
        raise InvalidArgumentError(f"norm: must be one of {', '.join(NORMS)}, got {norm!r}")
    return _attack_batch(norm, predict, images, labels, threshold, budget, seed, progress)


# ---------------------------------------------------------------------------------------------------
# validation


def _nonnegative_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise InvalidArgumentError(f"{name}: expected a non-negative integer, got {value!r}")
    return int(value)


def _check_inputs(
    predict: Any, images: Any, labels: Any, threshold: Any, budget: Any, seed: Any, norm: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """The boundary checks: ``(images as given, int64 labels, threshold as an int)``; the L0 threshold
    is at most ``H * W``."""
    if not callable(predict):
        raise InvalidArgumentError(f"predict: expected a callable batch -> probabilities, got {type(predict).__name__}")
    if not isinstance(images, np.ndarray):
        raise InvalidArgumentError(f"images: expected a numpy array (N, C, H, W), got {type(images).__name__}")
    if images.ndim != 4 or 0 in images.shape:
        raise InvalidArgumentError(
            f"images: expected a non-empty (N, C, H, W) array, channels first, got shape {images.shape}"
        )
    if images.dtype != np.uint8:
        if not np.issubdtype(images.dtype, np.floating):
            raise InvalidArgumentError(f"images: expected uint8 or float values 0-255, got dtype {images.dtype}")
        if not np.isfinite(images).all():
            raise InvalidArgumentError("images: hold NaN or infinite values")
        low, high = float(images.min()), float(images.max())
        if low < 0 or high > 255:
            raise InvalidArgumentError(f"images: float values must lie in [0, 255], found [{low:g}, {high:g}]")
    labels = np.asarray(labels)
    if labels.shape != (len(images),):
        raise InvalidArgumentError(f"labels: expected shape ({len(images)},) (one per image), got {labels.shape}")
    if not np.issubdtype(labels.dtype, np.integer):
        raise InvalidArgumentError(f"labels: expected integer classes, got dtype {labels.dtype}")
    if (labels < 0).any():
        raise InvalidArgumentError(f"labels: classes must be non-negative, found {int(labels.min())}")
    threshold = check_positive_int(threshold, "threshold")
    height, width = images.shape[2:]
    if norm == "L0" and threshold > height * width:
        raise InvalidArgumentError(
            f"threshold: the pixel attack changes at most H * W = {height * width} pixels, got {threshold}"
        )
    check_positive_int(budget, "budget")
    _nonnegative_int(seed, "seed")
    return images, labels.astype(np.int64), threshold


class _Model:
    """``predict`` with its output checked (``(B, n)`` finite, every label below ``n``) and its images
    counted."""

    def __init__(self, predict: Predict, labels: np.ndarray) -> None:
        self.predict = predict
        self.labels = labels
        self.classes: int | None = None

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        output = np.asarray(self.predict(batch))
        if output.ndim != 2 or output.shape[0] != len(batch):
            raise InvalidArgumentError(
                f"predict: must return (B, n_classes) probabilities for a batch of B = {len(batch)} images, "
                f"got shape {output.shape}"
            )
        if not np.issubdtype(output.dtype, np.floating) or not np.isfinite(output).all():
            raise InvalidArgumentError(f"predict: returned non-finite or non-float values (dtype {output.dtype})")
        if self.classes is None:
            self.classes = output.shape[1]
            if self.labels.max() >= self.classes:
                raise InvalidArgumentError(
                    f"labels: class {int(self.labels.max())} is out of range for predict's {self.classes} outputs"
                )
        elif output.shape[1] != self.classes:
            raise InvalidArgumentError(
                f"predict: returned {output.shape[1]} classes after {self.classes} on an earlier batch"
            )
        return output


# ---------------------------------------------------------------------------------------------------
# the two encodings: start point, box and step size of the search; image of a population


def _pixel_start(image: np.ndarray, threshold: int) -> tuple[list, list, float]:
    channels, height, width = image.shape
    initial: list = []
    # python ints and numpy float32 values in ART's order, so that cma receives the same numbers
    for count in range(threshold):
        row, col = divmod(count, width)
        initial += [row, col] + [image[k, row, col] for k in range(channels)]
    lower = [0] * (2 + channels) * threshold
    upper = ([height, width] + [255] * channels) * threshold
    return initial, [lower, upper], PIXEL_STD / 4


def _pixel_images(image: np.ndarray, candidates: np.ndarray, threshold: int) -> np.ndarray:
    channels, height, width = image.shape
    genes = candidates.astype(int).reshape(len(candidates), threshold, 2 + channels)  # truncation, as ART
    rows, cols = genes[..., 0] % height, genes[..., 1] % width
    batch = np.repeat(image[None], len(candidates), axis=0)
    members = np.arange(len(candidates))
    # one assignment per pixel slot, in order: a later slot at the same position wins, as in ART's loop
    # (within one assignment every candidate writes its own image, so no index repeats)
    for slot in range(threshold):
        batch[members, :, rows[:, slot], cols[:, slot]] = genes[:, slot, 2:]
    return batch


def _threshold_start(image: np.ndarray, threshold: int) -> tuple[list, list, float]:
    # ART computes each bound from a float32 scalar and a Python int: numpy's scalar promotion
    # decides the precision (float64 under numpy 1.x's value-based casting, float32 under NEP 50)
    precision = (np.float32(0) - threshold).dtype
    values = image.ravel().astype(precision)
    lower = np.clip(values - threshold, 0, 255)
    upper = np.clip(values + threshold, 0, 255)
    return list(image.ravel()), [list(lower), list(upper)], threshold / 4


def _threshold_images(image: np.ndarray, candidates: np.ndarray, threshold: int) -> np.ndarray:
    return candidates.astype(int).reshape((len(candidates),) + image.shape).astype(np.float32)


_ENCODINGS = {"L0": (_pixel_start, _pixel_images), "Linf": (_threshold_start, _threshold_images)}


# ---------------------------------------------------------------------------------------------------
# the search


def _cma_options(bounds: list, seed: int) -> cma.CMAOptions:
    options = cma.CMAOptions()
    # ART's settings (verbose -9 also turns cma's file logger and display off)
    options.set("verbose", -9)
    options.set("verb_disp", 40000)
    options.set("verb_log", 40000)
    options.set("verb_time", False)
    options.set("bounds", bounds)
    options.set("seed", seed)
    return options


@dataclass
class _Outcome:
    success: bool
    image: np.ndarray  # float32, the perturbed image of xbest
    predicted: int  # class of xbest's image
    queries: int
    iterations: int


def _search(
    model: _Model, image: np.ndarray, label: int, norm: str, threshold: int, budget: int, seed: int
) -> _Outcome:
    """One image: cma's ``optimize`` loop as ART drives it, with the population scored in one call."""
    start, images_of = _ENCODINGS[norm]
    initial, bounds, sigma0 = start(image, threshold)
    caller_state = np.random.get_state()
    caller_verbosity = cma.utilities.utils.global_verbosity
    try:
        strategy = cma.CMAEvolutionStrategy(initial, sigma0, _cma_options(bounds, seed))  # seeds numpy
        queries = iterations = evaluations = 0
        best: Any = None  # the xbest array whose class is known, with a copy of its values and the class
        best_values = best_class = best_image = None
        # OOOptimizer.optimize: at least one iteration, then until cma stops, the budget or the cap
        while not strategy.stop() or iterations < 1:
            if evaluations >= MAX_EVALUATIONS or iterations >= budget:
                break
            iterations += 1
            candidates = strategy.ask()
            population = np.array(candidates)
            batch = images_of(image, population, threshold)
            # predict runs with the caller's random state, so a model drawing from numpy's global
            # generator neither changes the search nor is changed by it
            search_state = np.random.get_state()
            np.random.set_state(caller_state)
            try:
                probabilities = model(batch)
            finally:
                caller_state = np.random.get_state()
                np.random.set_state(search_state)
            queries += len(batch)
            evaluations += len(candidates)
            # the soft-labels as predict's own scalars, as ART hands them to cma (ranks and the
            # float arithmetic of cma's termination tests then see the same numbers)
            strategy.tell(candidates, list(probabilities[:, label]))
            xbest = strategy.result[0]
            # xbest is one of this population, or the xbest of an earlier iteration
            member = next((k for k, c in enumerate(candidates) if c is xbest), None)
            if member is not None and np.array_equal(xbest, population[member]):
                best, best_values = xbest, population[member]
                best_class, best_image = int(np.argmax(probabilities[member])), batch[member]
            elif xbest is not best or not np.array_equal(xbest, best_values):  # never seen: one more call
                best, best_values = xbest, np.array(xbest)
                best_image = images_of(image, best_values[None], threshold)[0]
                best_class = int(np.argmax(model(best_image[None])[0]))
                queries += 1
            if best_class != label:  # ART's callback: stop once xbest fools the model
                break
    finally:
        np.random.set_state(caller_state)
        cma.utilities.utils.global_verbosity = caller_verbosity
    return _Outcome(best_class != label, best_image, best_class, queries, iterations)


def _attack_batch(
    norm: str,
    predict: Predict,
    images: np.ndarray,
    labels: Any,
    threshold: Any,
    budget: Any,
    seed: Any,
    progress: ProgressArgument,
) -> AttackResult:
    images, labels, threshold = _check_inputs(predict, images, labels, threshold, budget, seed, norm)
    with _reporting(progress, f"{norm} attack, threshold {threshold}: {len(images)} images", len(images)) as report:
        return _attack_images(norm, predict, images, labels, threshold, int(budget), int(seed), report)


@contextlib.contextmanager
def _reporting(progress: Any, description: str, total: int) -> Iterator[Progress | None]:
    """The callback of a ``progress`` argument: the caller's own, a bar's (True), or None (False, None)."""
    if progress is None or progress is False:
        yield None
    elif progress is True:
        from repscope.progress import progress_bar  # noqa: PLC0415 -- rich only when a bar is asked for

        with progress_bar(description, total) as update:
            yield lambda done, _: update(done)
    elif callable(progress):
        yield progress
    else:
        raise InvalidArgumentError(
            f"progress: expected a callable (done, total), True or False, got {type(progress).__name__}"
        )


def _attack_images(
    norm: str,
    predict: Predict,
    images: np.ndarray,
    labels: np.ndarray,
    threshold: int,
    budget: int,
    seed: int,
    progress: Progress | None,
) -> AttackResult:
    """The attack of every image, after the checks (:func:`_attack_batch`)."""
    model = _Model(predict, labels)
    count = len(images)
    success = np.zeros(count, dtype=bool)
    adversarial = images.copy()
    predicted = np.zeros(count, dtype=np.int64)
    queries = np.zeros(count, dtype=np.int64)
    iterations = np.zeros(count, dtype=np.int64)
    seeds = np.array([attack_seed(seed, norm, threshold, i) for i in range(count)], dtype=np.int64)
    for i in range(count):
        # ART attacks the float32 copy of the image
        outcome = _search(
            model, images[i].astype(np.float32), int(labels[i]), norm, threshold, int(budget), int(seeds[i])
        )
        success[i], queries[i], iterations[i] = outcome.success, outcome.queries, outcome.iterations
        if outcome.success:
            adversarial[i] = outcome.image.astype(images.dtype)  # integers 0-255: exact in any dtype
            predicted[i] = outcome.predicted
        if progress is not None:
            progress(i + 1, count)
    failed = np.flatnonzero(~success)
    for begin in range(0, len(failed), _CHUNK):
        rows = failed[begin : begin + _CHUNK]
        predicted[rows] = np.argmax(model(images[rows].astype(np.float32)), axis=1)
    return AttackResult(
        norm=norm,
        threshold=threshold,
        budget=int(budget),
        seed=int(seed),
        success=success,
        adversarial=adversarial,
        predicted=predicted,
        queries=queries,
        iterations=iterations,
        seeds=seeds,
    )

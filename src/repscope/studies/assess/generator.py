"""Assess a digit generator (``repscope assess MODEL --role generator``): the Morpho-MNIST measurements of its
samples (Castro et al., sections 4.1 and 4.2).

Three assessments, each by the compute steps of the Morpho-MNIST studies:

* ``morphometrics``: the morphometrics (:func:`repscope.data.morpho.measure`) of ``n`` samples, each
  one's mean and standard deviation beside the test digits';
* ``diversity``: the linear-time and quadratic MMD tests of the samples' morphometrics against the test
  digits' and the near-replica count
  (:func:`repscope.studies.morpho.diversity.compare_morphometrics`; Castro et al., section 4.1, Appendix C).
  Its chance row is the same test between two halves of the test digits: what a generator that draws
  test digits themselves would get;
* ``correlations`` (when ``codes`` names code dimensions): codes drawn from the standard normal prior,
  decoded and measured; the partial correlation of each chosen dimension with each morphometric,
  controlling for the other chosen dimensions (:func:`repscope.metrics.partial_correlations.code_partial_correlations`;
  the generative analysis of :func:`repscope.studies.morpho.infogan.generative_correlations`, Castro et al.,
  section 4.2). Its chance value is the same matrix with the codes shuffled across rows (seeded).

:func:`assess_generator` returns an :class:`~repscope.studies.assess.assessment.Assessment` and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from repscope.data.morpho.training_sets import load_digits
from repscope.errors import InvalidArgumentError
from repscope.metrics.partial_correlations import code_partial_correlations
from repscope.progress import quiet_progress
from repscope.studies.assess.assessment import Assessment, HeadlineRow
from repscope.studies.morpho.diversity import COMPARED, DiversityConfig, compare_morphometrics, measured
from repscope.validation import check_images, check_positive_int, check_seed, to_uint8

__all__ = ["REPSCOPE_DIVERSITY", "assess_generator", "sample_grid"]

# repscope's own generators on the same test digits (README, "Training and the Morpho-MNIST studies":
# `repscope morpho diversity`, linear-time MMD^2 against the mnist-sample test digits and its p-value)
REPSCOPE_DIVERSITY_SOURCE = "repscope morpho diversity, GAN 64-d vs the mnist-sample test digits (README)"
REPSCOPE_DIVERSITY = {"mmd2": 0.0003, "p_value": 0.48, "fraction_in_replica_groups": 0.0}
# the Morpho-MNIST paper prints its diversity results as figures (Fig. 4) and its Table 1 is not stored in
# the code base: no paper value is given
DIGIT_SHAPE = (28, 28)
GRID_COLUMNS = 8
GRID_ROWS = 4
TRAVERSAL_STEPS = 9
TRAVERSAL_RANGE = 2.0  # codes traverse [-2, 2] standard deviations of the prior
SEED_SAMPLES, SEED_TESTS, SEED_CODES, SEED_SHUFFLE = 0, 1, 2, 3  # offsets: each random step its own stream


def assess_generator(
    generator: Any,
    *,
    test_images: np.ndarray | None = None,
    n: int = 1000,
    codes: Sequence[int] | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    latent_dim: int | None = None,
    permutations: int = 200,
    replica_threshold: float = 0.05,
    name: str = "generator",
) -> Assessment:
    """Morphometrics, sample diversity and (optionally) code-morphometric correlations of a digit generator.

    Parameters
    ----------
    generator : object
        ``sample(n, seed) -> uint8 (n, 28, 28)`` digits from its prior; with ``codes`` also
        ``decode(codes (N, latent_dim)) -> uint8 (N, 28, 28)`` and its latent size (``latent_dim``, here or
        as its ``latent_dim`` or ``hparams.latent_dim`` attribute). Float images in [0, 1] and a singleton
        channel axis ``(n, 1, 28, 28)`` are accepted.
    test_images : numpy.ndarray, optional
        The reference digits ``(M, 28, 28)``, M >= 16; default the test split of the embedded MNIST sample
        (:func:`repscope.data.morpho.training_sets.load_digits`).
    n : int, default=1000
        Samples drawn (>= 8); also the codes drawn for the correlations.
    codes : sequence of int, optional
        Code dimensions whose partial correlations with the morphometrics are measured (e.g. ``[0, 1]``).
    seed : int, default=0
        Seed of the samples (``seed``), the tests (``seed + 1``), the codes (``seed + 2``) and the shuffle
        of the chance values (``seed + 3``).
    progress : callable or bool, optional
        Called with one line as each step starts; False: no progress bars.
    latent_dim : int, optional
        The generator's latent size, where it carries none.
    permutations : int, default=200
        Permutations of the quadratic MMD test.
    replica_threshold : float, default=0.05
        Distance (standardised morphometrics) within which samples count as near replicas.
    name : str, default="generator"
        What is assessed (its source), for the record.

    Returns
    -------
    Assessment
        Role ``generator``; metrics ``morphometrics``, ``diversity`` (and ``correlations``); tables
        ``morphometrics_summary``, ``diversity`` (and ``partial_correlations``); arrays ``samples`` and the
        samples' morphometrics; figures ``samples`` (and ``traversals``).

    Raises
    ------
    InvalidArgumentError
        A bad argument, a generator without the methods needed, or outputs that are not 28x28 digits.

    References
    ----------
    Castro et al., Morpho-MNIST: quantitative assessment and diagnostics for representation learning,
    sections 4.1 and 4.2, Appendix C.
    """
    n, seed = check_positive_int(n, "n"), check_seed(seed)
    if n < 8:
        raise InvalidArgumentError(f"n: the diversity test needs at least 8 samples, got {n}")
    config = _config(n, seed, permutations, replica_threshold)
    say = progress if callable(progress) else (lambda line: None)
    reference, data = _reference_digits(test_images)
    # the codes asked are checked before the long steps
    size = None if codes is None else _latent_dim(generator, latent_dim)
    chosen = None if codes is None else _chosen(codes, size)
    with quiet_progress(progress is False):
        result, samples, sample_morpho = _assessed(generator, reference, n, (chosen, size), config, say)
    figures = {"samples": sample_grid(samples[: GRID_ROWS * GRID_COLUMNS], GRID_COLUMNS), **result.figures}
    return Assessment(
        role="generator",
        model=name,
        data=data,
        metrics=result.metrics,
        headline=result.headline,
        tables=result.tables,
        arrays={"samples": samples, "sample_morphometrics": _as_array(sample_morpho), **result.arrays},
        figures=figures,
        settings={
            "n": n,
            "seed": seed,
            "codes": chosen,
            "permutations": int(config.permutations),
            "replica_threshold": float(config.replica_threshold),
            "morphometrics": list(COMPARED),
            "test_digits": int(len(reference)),
        },
        notes=_notes(n, len(reference), sample_morpho),
    )


def _config(n: int, seed: int, permutations: Any, replica_threshold: Any) -> DiversityConfig:
    """The diversity study's settings for the tests, checked here so a bad one is named as an argument."""
    permutations = check_positive_int(permutations, "permutations")
    if permutations < 10:
        raise InvalidArgumentError(f"permutations: at least 10 for a permutation p-value, got {permutations}")
    if (
        isinstance(replica_threshold, bool)
        or not isinstance(replica_threshold, (int, float))
        or not (0 < float(replica_threshold) < float("inf"))
    ):
        raise InvalidArgumentError(f"replica_threshold: expected a positive number, got {replica_threshold!r}")
    return DiversityConfig(samples=n, permutations=permutations, replica_threshold=replica_threshold, seed=seed)


def _assessed(
    generator: Any,
    reference: np.ndarray,
    n: int,
    codes: tuple[list[int] | None, int | None],
    config: DiversityConfig,
    say: Callable[[str], None],
) -> tuple[Assessment, np.ndarray, pd.DataFrame]:
    """Sample, measure and compare (and correlate the chosen code dimensions of ``codes``, ``(chosen,
    latent size)``): the assessment without its settings, the samples and their morphometrics."""
    seed = config.seed
    say(f"sampling {n} digits")
    # the generator's output is checked before the long steps
    samples = _digits(_call(generator, "sample", n, seed=seed + SEED_SAMPLES), "generator.sample", n)
    say(f"measuring {len(reference)} test digits and {n} samples")
    test_morpho = measured(reference, f"measuring {len(reference)} test digits")
    sample_morpho = measured(samples, f"measuring {n} samples")
    result = _diversity(test_morpho, sample_morpho, config, seed + SEED_TESTS)
    result = result.merged(_morphometrics(test_morpho, sample_morpho))
    chosen, size = codes
    if chosen is not None:
        say(f"decoding and measuring {n} codes")
        result = result.merged(_correlations(generator, chosen, size, n, seed))
    return result, samples, sample_morpho


def _reference_digits(test_images: np.ndarray | None) -> tuple[np.ndarray, str]:
    """The reference digits and how to name them."""
    if test_images is None:
        digits = load_digits(target="none").test_images
        return digits, f"mnist-sample test split ({len(digits)} digits)"
    digits = check_images(test_images, "test_images", image_shape=DIGIT_SHAPE, min_count=16)
    return digits, f"the given test digits ({len(digits)})"


def _call(owner: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``owner.method(*args, **kwargs)``, or a one-line error naming the missing method."""
    function = getattr(owner, method, None)
    if not callable(function):
        raise InvalidArgumentError(f"generator: has no {method}() method (a generator needs sample(n, seed))")
    return function(*args, **kwargs)


def _digits(images: Any, name: str, count: int) -> np.ndarray:
    """``images`` as ``count`` uint8 28x28 digits, or a one-line error naming where they came from."""
    array = check_images(images, name, image_shape=DIGIT_SHAPE)
    if len(array) != count:
        raise InvalidArgumentError(f"{name}: asked for {count} digits, got {len(array)}")
    return np.ascontiguousarray(to_uint8(array))


def _valid(morpho: pd.DataFrame) -> pd.DataFrame:
    return morpho.loc[morpho["valid"].astype(bool), list(COMPARED)]


def _as_array(morpho: pd.DataFrame) -> np.ndarray:
    """The morphometrics ``(n, 5)`` in :data:`COMPARED` order, NaN for a digit without foreground."""
    return morpho[list(COMPARED)].to_numpy(np.float64)


def _morphometrics(test_morpho: pd.DataFrame, sample_morpho: pd.DataFrame) -> Assessment:
    """The samples' mean and standard deviation of each morphometric beside the test digits'."""
    test, sample = _valid(test_morpho), _valid(sample_morpho)
    table = pd.DataFrame(
        {
            "morphometric": list(COMPARED),
            "samples_mean": [float(sample[c].mean()) for c in COMPARED],
            "samples_std": [float(sample[c].std(ddof=1)) for c in COMPARED],
            "test_mean": [float(test[c].mean()) for c in COMPARED],
            "test_std": [float(test[c].std(ddof=1)) for c in COMPARED],
        }
    )
    table["difference"] = table["samples_mean"] - table["test_mean"]
    unit = {"slant": "rad"}
    headline = tuple(
        HeadlineRow(
            assessment="morphometrics",
            metric=f"{row.morphometric}_mean",
            value=row.samples_mean,
            description=f"mean {row.morphometric} of the samples ({unit.get(row.morphometric, 'px')}); "
            f"test digits {row.test_mean:.3g} (std {row.test_std:.3g}); closer is better",
        )
        for row in table.itertuples()
    )
    metrics = {
        "morphometrics": {
            "valid_samples": int(len(sample)),
            "invalid_samples": int(len(sample_morpho) - len(sample)),
            "samples": {
                row.morphometric: {"mean": row.samples_mean, "std": row.samples_std} for row in table.itertuples()
            },
            "test_digits": {
                row.morphometric: {"mean": row.test_mean, "std": row.test_std} for row in table.itertuples()
            },
        }
    }
    return Assessment("generator", "", "", metrics, headline=headline, tables={"morphometrics_summary": table})


def _diversity(
    test_morpho: pd.DataFrame, sample_morpho: pd.DataFrame, config: DiversityConfig, seed: int
) -> Assessment:
    """The MMD tests and replica count of the samples against the test digits, and of one half of the test
    digits against the other (the chance row)."""
    columns = list(COMPARED)
    if int(sample_morpho["valid"].sum()) < 4:
        raise InvalidArgumentError(
            f"generator.sample: only {int(sample_morpho['valid'].sum())} of {len(sample_morpho)} samples hold a "
            "digit (foreground); the diversity test needs at least 4"
        )
    found = compare_morphometrics(test_morpho, sample_morpho, columns, config, seed)
    order = np.random.default_rng([seed, 11]).permutation(len(test_morpho))
    half = len(order) // 2
    halves = test_morpho.iloc[order[:half]], test_morpho.iloc[order[half:]]
    chance = compare_morphometrics(halves[0], halves[1], columns, config, seed)
    spread = 1.959963984540054 * found["mmd2_std_error"]  # the linear-time statistic is asymptotically normal
    rows = (
        HeadlineRow(
            "diversity",
            "mmd2",
            found["mmd2"],
            chance=chance["mmd2"],
            ci_low=found["mmd2"] - spread,
            ci_high=found["mmd2"] + spread,
            repscope=REPSCOPE_DIVERSITY["mmd2"],
            repscope_source=REPSCOPE_DIVERSITY_SOURCE,
            description="linear-time MMD^2 of the samples' morphometrics against the test digits' (normal 95% "
            "interval; chance: test digits against other test digits); lower is better",
        ),
        HeadlineRow(
            "diversity",
            "p_value",
            found["p_value"],
            chance=chance["p_value"],
            repscope=REPSCOPE_DIVERSITY["p_value"],
            repscope_source=REPSCOPE_DIVERSITY_SOURCE,
            description="p-value of the linear-time MMD test: small means the samples differ from the test digits",
        ),
        HeadlineRow(
            "diversity",
            "fraction_in_replica_groups",
            found["fraction_in_replica_groups"],
            chance=chance["fraction_in_replica_groups"],
            repscope=REPSCOPE_DIVERSITY["fraction_in_replica_groups"],
            repscope_source=REPSCOPE_DIVERSITY_SOURCE,
            description=f"share of samples within {config.replica_threshold} (standardised morphometrics) of "
            "another: mode collapse; lower is better",
        ),
    )
    table = pd.DataFrame([{"compared": "samples vs test digits", **found}, {"compared": "test half vs half", **chance}])
    metrics = {"diversity": {**found, "chance": chance}}
    return Assessment("generator", "", "", metrics, headline=rows, tables={"diversity": table})


def _latent_dim(generator: Any, latent_dim: int | None) -> int:
    """The generator's latent size: given, or its ``latent_dim`` / ``hparams.latent_dim`` attribute."""
    found = latent_dim
    if found is None:
        found = getattr(generator, "latent_dim", None)
    if found is None:
        found = getattr(getattr(generator, "hparams", None), "latent_dim", None)
    if found is None:
        raise InvalidArgumentError(
            "latent_dim: the generator carries no latent_dim attribute; pass the size of its codes (latent_dim=...)"
        )
    return check_positive_int(found, "latent_dim")


def _chosen(codes: Sequence[int], latent_dim: int) -> list[int]:
    """The chosen code dimensions as distinct ints in ``0..latent_dim - 1``, or a one-line error."""
    given = np.atleast_1d(np.asarray(codes))
    chosen = [int(c) for c in given] if given.dtype.kind in "iu" and given.ndim == 1 else []
    if not chosen or any(c < 0 or c >= latent_dim for c in chosen) or len(set(chosen)) != len(chosen):
        raise InvalidArgumentError(
            f"codes: expected distinct code dimensions in 0..{latent_dim - 1}, got {list(codes)!r}"
        )
    return chosen


def _correlations(generator: Any, chosen: list[int], size: int, n: int, seed: int) -> Assessment:
    """Partial correlations of the chosen code dimensions with the morphometrics of the digits decoded from
    codes drawn from N(0, 1), beside the same with the codes shuffled across rows (chance)."""
    drawn = np.random.default_rng([seed, SEED_CODES]).standard_normal((n, size)).astype(np.float32)
    images = _digits(_call(generator, "decode", drawn), "generator.decode", n)
    morpho = measured(images, f"measuring {n} decoded codes")
    ok = morpho["valid"].astype(bool).to_numpy()
    factors = morpho.loc[ok, list(COMPARED)].reset_index(drop=True)
    named = {f"z[{c}]": drawn[ok, c] for c in chosen}
    matrix = code_partial_correlations(named, factors)
    order = np.random.default_rng([seed, SEED_SHUFFLE]).permutation(int(ok.sum()))
    shuffled = code_partial_correlations({name: values[order] for name, values in named.items()}, factors)
    headline = []
    for name in named:
        column = matrix[name].astype(float)
        factor = str(column.abs().idxmax()) if column.notna().any() else str(column.index[0])
        headline.append(
            HeadlineRow(
                "correlations",
                f"{name}_{factor}",
                float(column[factor]),
                chance=float(shuffled.loc[factor, name]),
                description=f"partial correlation of code {name} with {factor}, its strongest morphometric "
                "(codes from N(0, 1), others controlled; chance: codes shuffled across rows)",
            )
        )
    metrics = {
        "correlations": {
            "codes": list(named),
            "partial_correlations": _nested(matrix),
            "chance": _nested(shuffled),
            "valid_digits": int(ok.sum()),
        }
    }
    table = matrix.rename_axis("factor").reset_index()
    figures = {"traversals": _traversals(generator, chosen, size)}
    arrays = {"codes": drawn, "code_morphometrics": _as_array(morpho)}
    tables = {"partial_correlations": table}
    return Assessment(
        "generator", "", "", metrics, headline=tuple(headline), tables=tables, arrays=arrays, figures=figures
    )


def _nested(matrix: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """A factors x codes matrix as ``{code: {factor: r}}`` (NaN as None), JSON-ready."""
    return {
        str(code): {str(f): (None if np.isnan(v) else float(v)) for f, v in matrix[code].astype(float).items()}
        for code in matrix.columns
    }


def _traversals(generator: Any, chosen: list[int], size: int) -> np.ndarray:
    """One row per chosen dimension: the digits of the zero code with that dimension over [-2, 2]."""
    values = np.linspace(-TRAVERSAL_RANGE, TRAVERSAL_RANGE, TRAVERSAL_STEPS, dtype=np.float32)
    codes = np.zeros((len(chosen) * TRAVERSAL_STEPS, size), dtype=np.float32)
    for row, dimension in enumerate(chosen):
        codes[row * TRAVERSAL_STEPS : (row + 1) * TRAVERSAL_STEPS, dimension] = values
    images = _digits(_call(generator, "decode", codes), "generator.decode", len(codes))
    return sample_grid(images, TRAVERSAL_STEPS)


def sample_grid(images: np.ndarray, columns: int, gap: int = 2) -> np.ndarray:
    """Images tiled row by row into one uint8 picture, ``gap`` pixels of 0 between them (the report's grids).

    Parameters
    ----------
    images : numpy.ndarray
        uint8 ``(N, H, W)`` or ``(N, H, W, 3)``, N >= 1.
    columns : int
        Images per row; the last row is padded with blank cells.
    gap : int, default=2
        Pixels between cells.

    Returns
    -------
    numpy.ndarray
        uint8 ``(rows (H + gap) - gap, columns (W + gap) - gap[, 3])``.
    """
    images = np.asarray(images)
    columns = min(check_positive_int(columns, "columns"), len(images))
    rows = -(-len(images) // columns)
    height, width = images.shape[1:3]
    canvas = np.zeros((rows * (height + gap) - gap, columns * (width + gap) - gap, *images.shape[3:]), np.uint8)
    for k, image in enumerate(images):
        top, left = (k // columns) * (height + gap), (k % columns) * (width + gap)
        canvas[top : top + height, left : left + width] = image
    return canvas


def _notes(n: int, test_digits: int, sample_morpho: pd.DataFrame) -> tuple[str, ...]:
    notes = []
    if n < 500:
        notes.append(f"{n} samples: the MMD tests detect only large differences from the test digits at this size")
    invalid = int((~sample_morpho["valid"].astype(bool)).sum())
    if invalid:
        notes.append(f"{invalid} of {n} samples hold no foreground and were left out of every morphometric number")
    if test_digits < 200:
        notes.append(f"only {test_digits} test digits: the reference and chance rows are themselves noisy")
    return tuple(notes)

"""The dataset-independent evaluation of a multimodal VAE (Sejnova et al., Sec. 4.2).

* **Test log-likelihood**: importance-sampled ``log p(x_S)`` per example (nats), jointly (every modality
  given and scored) and per modality (that one given and scored): :func:`log_likelihoods`,
  summarised by :func:`summarise_log_likelihoods`.
* **Latent factorisation**: how well a linear classifier reads each attribute from the posterior means
  (:func:`linear_factorisation`, beside the accuracy of always answering the commonest class).
* **t-SNE** of the posterior means (:func:`tsne_embedding`), drawn coloured by each attribute.
* **Latent traversals**: one latent dimension varied at a time around a base latent and decoded
  (:func:`traversal_latents`, :func:`latent_traversals`).

The functions named for a quantity (:func:`linear_factorisation`, :func:`tsne_embedding`,
:func:`traversal_latents`, :func:`summarise_log_likelihoods`) take arrays and no model; the others
call a trained task's ``encode``, ``decode`` and ``log_likelihood`` methods
(:class:`repscope.train.tasks.multimodal.MultimodalVAETask`), so any object with those methods works.

References
----------
G. Sejnova, M. Vavrecka, K. Stepanova. Benchmarking multimodal variational autoencoders: CdSprites+
dataset and toolkit, Sec. 4.2. Y. Burda, R. Grosse, R. Salakhutdinov. Importance weighted autoencoders,
ICLR 2016 (the log-likelihood estimate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.manifold import TSNE
from threadpoolctl import threadpool_limits

from repscope.data.multimodal.captions import decode_captions
from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int

TRAVERSAL_VALUES: tuple[float, ...] = (-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0)  # in prior standard deviations
# joint coherency by traversals: the range the authors' toolkit's save_joint_samples returns (its last)
JOINT_TRAVERSAL_RANGE: tuple[float, float] = (-1.0, 1.0)
JOINT = "joint"


# --------------------------------------------------------------------------------------------
# decoder outputs as images and captions


def captions_of_logits(logits: np.ndarray) -> list[str]:
    """Captions from caption logits ``(N, L, V)``: each ends at its first double space (the decoder's end
    mark; what follows is not part of it), words joined by single spaces."""
    return [" ".join(caption.split("  ")[0].split()) for caption in decode_captions(logits)]


def images_of_means(means: np.ndarray) -> np.ndarray:
    """Image means ``(N, C, H, W)`` in [0, 1] as uint8 channels-last ``(N, H, W, C)`` (clipped, rounded)."""
    return np.rint(np.clip(np.asarray(means).transpose(0, 2, 3, 1), 0.0, 1.0) * 255.0).astype(np.uint8)


# --------------------------------------------------------------------------------------------
# pure functions on arrays


def _check_latents(latents: Any, name: str = "latents") -> np.ndarray:
    array = np.asarray(latents, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise InvalidArgumentError(f"{name}: expected a 2-D array (N, D) with N, D >= 1, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InvalidArgumentError(f"{name}: holds NaN or infinite values")
    return array


def linear_factorisation(
    latents: Any,
    attributes: Any,
    names: Sequence[str] | None = None,
    test_fraction: float = 0.25,
    seed: int = 0,
    max_iter: int = 2000,
) -> dict[str, Any]:
    """Latent factorisation as the test accuracy of a linear classifier per attribute.

    The rows are split once at random (``seed``) into a training part and a test part
    (``test_fraction`` of the rows); per attribute, a multinomial logistic regression
    (scikit-learn ``LogisticRegression``, L2, ``C = 1``) is fitted on the training part's latents,
    standardised with the training part's mean and standard deviation, and scored on the test part::

        accuracy[a] = #{n in test : argmax_c softmax(W_a z_n + b_a)_c == y[n, a]} / #test
        chance[a]   = #{n in test : y[n, a] == the commonest class of a in the training part} / #test

    An attribute with one class in the training part is answered with that class (no classifier).

    Parameters
    ----------
    latents : array-like of float, shape (N, D)
        Codes, e.g. posterior means.
    attributes : array-like of int, shape (N,) or (N, A)
        Class index of each attribute per row.
    names : sequence of str, optional
        One name per attribute column (default ``attribute_0``, ...).
    test_fraction : float, default=0.25
        Share of the rows held out for scoring, in (0, 1); at least one row goes to each part.
    seed : int, default=0
        Seed of the split.
    max_iter : int, default=2000
        Iterations of the solver (lbfgs).

    Returns
    -------
    dict
        ``accuracy`` and ``chance`` (``{name: fraction in [0, 1]}``), ``classes`` (``{name: distinct
        classes in the data}``), ``n_train``, ``n_test``, ``test_fraction``, ``seed``, ``classifier``.

    Raises
    ------
    InvalidArgumentError
        When ``latents`` is not a finite ``(N, D)`` array, ``attributes`` is not integer or has another
        number of rows, ``names`` does not match its columns, there are fewer than 2 rows, or
        ``test_fraction`` is not in (0, 1).
    """
    codes = _check_latents(latents)
    table = np.asarray(attributes)
    if table.ndim == 1:
        table = table[:, None]
    if table.ndim != 2 or table.shape[0] != codes.shape[0]:
        raise InvalidArgumentError(
            f"attributes: expected shape ({codes.shape[0]},) or ({codes.shape[0]}, A) like latents, got {table.shape}"
        )
    if table.dtype.kind not in "iub":
        raise InvalidArgumentError(f"attributes: expected integer class indices, got dtype {table.dtype}")
    names = [f"attribute_{j}" for j in range(table.shape[1])] if names is None else [str(n) for n in names]
    if len(names) != table.shape[1]:
        raise InvalidArgumentError(f"names: expected {table.shape[1]} names (one per attribute), got {len(names)}")
    if not 0.0 < float(test_fraction) < 1.0:
        raise InvalidArgumentError(f"test_fraction: must lie in (0, 1), got {test_fraction}")
    count = codes.shape[0]
    if count < 2:
        raise InvalidArgumentError(f"latents: needs at least 2 rows (one to fit, one to score), got {count}")
    n_test = min(count - 1, max(1, int(round(float(test_fraction) * count))))
    order = np.random.default_rng(seed).permutation(count)
    test_rows, train_rows = order[:n_test], order[n_test:]
    mean = codes[train_rows].mean(axis=0)
    scale = codes[train_rows].std(axis=0)
    scale[scale == 0] = 1.0  # a constant dimension carries nothing; leave it at zero
    standard = (codes - mean) / scale
    accuracy, chance, classes = {}, {}, {}
    for column, name in enumerate(names):
        labels = table[:, column].astype(np.int64)
        train_labels, test_labels = labels[train_rows], labels[test_rows]
        values, counts = np.unique(train_labels, return_counts=True)
        commonest = values[np.argmax(counts)]
        chance[name] = float(np.mean(test_labels == commonest))
        classes[name] = int(len(np.unique(labels)))
        if len(values) < 2:
            predicted = np.full(len(test_labels), commonest)
        else:
            classifier = LogisticRegression(max_iter=int(max_iter))
            classifier.fit(standard[train_rows], train_labels)
            predicted = classifier.predict(standard[test_rows])
        accuracy[name] = float(np.mean(predicted == test_labels))
    return {
        "accuracy": accuracy,
        "chance": chance,
        "classes": classes,
        "n_train": int(len(train_rows)),
        "n_test": int(n_test),
        "test_fraction": float(test_fraction),
        "seed": int(seed),
        "classifier": "logistic regression (multinomial, L2, C=1) on standardised latents",
    }


def tsne_embedding(latents: Any, seed: int = 0, perplexity: float = 30.0) -> np.ndarray:
    """Two-dimensional t-SNE embedding of ``latents`` (scikit-learn, PCA initialisation).

    Parameters
    ----------
    latents : array-like of float, shape (N, D)
        Codes, N >= 3.
    seed : int, default=0
        Seed of the optimisation.
    perplexity : float, default=30.0
        Effective number of neighbours; lowered to ``(N - 1) / 3`` for small N (t-SNE needs it below N).

    Returns
    -------
    numpy.ndarray
        float64 ``(N, 2)``; computed on one OpenMP thread, so a seed gives the same bytes on any machine.

    Raises
    ------
    InvalidArgumentError
        When ``latents`` is not a finite ``(N, D)`` array with N >= 3, or ``perplexity`` is not positive.
    """
    codes = _check_latents(latents)
    if codes.shape[0] < 3:
        raise InvalidArgumentError(f"latents: t-SNE needs at least 3 rows, got {codes.shape[0]}")
    if not float(perplexity) > 0:
        raise InvalidArgumentError(f"perplexity: must be positive, got {perplexity}")
    perplexity = min(float(perplexity), (codes.shape[0] - 1) / 3.0)
    if codes.shape[1] == 1:  # PCA initialisation needs two components
        codes = np.concatenate([codes, np.zeros_like(codes)], axis=1)
    embedding = TSNE(2, perplexity=perplexity, init="pca", learning_rate="auto", random_state=int(seed))
    # one OpenMP thread: the same bytes on any machine, and no barrier stalls beside busy cores (1,000
    # latents on a loaded 2-core machine: 9 s on one thread, 65 s on two; see repscope.resources)
    with threadpool_limits(limits=1, user_api="openmp"):
        return embedding.fit_transform(codes).astype(np.float64)


def traversal_latents(
    base: Any, values: Sequence[float] = TRAVERSAL_VALUES, dims: Sequence[int] | None = None
) -> np.ndarray:
    """Latents of a traversal: row ``r`` sets dimension ``dims[r]`` of ``base`` to each of ``values``.

    Parameters
    ----------
    base : array-like of float, shape (D,)
        The latent the traversal starts from (e.g. a test example's posterior mean, or zeros).
    values : sequence of float, default=TRAVERSAL_VALUES
        The values the traversed dimension takes, in latent units (for a standard normal prior:
        standard deviations of the prior); -3 to 3 by default.
    dims : sequence of int, optional
        The dimensions traversed, one row each (default every dimension, in order).

    Returns
    -------
    numpy.ndarray
        float32 ``(len(dims), len(values), D)``: ``out[r, s] == base`` except ``out[r, s, dims[r]] == values[s]``.

    Raises
    ------
    InvalidArgumentError
        When ``base`` is not a finite vector, ``values`` is empty or not finite, or a dimension is out of range.
    """
    base = np.asarray(base, dtype=np.float64)
    if base.ndim != 1 or base.size == 0 or not np.all(np.isfinite(base)):
        raise InvalidArgumentError(f"base: expected a finite vector (D,), got shape {base.shape}")
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise InvalidArgumentError("values: expected a non-empty sequence of finite numbers")
    dims = list(range(base.size)) if dims is None else [int(d) for d in dims]
    if not dims or any(not 0 <= d < base.size for d in dims):
        raise InvalidArgumentError(f"dims: expected dimensions in [0, {base.size}), got {dims}")
    grid = np.broadcast_to(base, (len(dims), values.size, base.size)).copy()
    for row, dim in enumerate(dims):
        grid[row, :, dim] = values
    return grid.astype(np.float32)


def joint_traversal_latents(
    latent_dim: int, steps: int, value_range: tuple[float, float] = JOINT_TRAVERSAL_RANGE
) -> np.ndarray:
    """The latents of joint coherency by traversals: ``steps`` values of each dimension in turn, the others at 0.

    Sejnova et al., CdSprites+ benchmark, A.2.3: "1000 traversal samples over each dimension of the latent
    space (i.e. 32000 samples for a 32-D latent space)". The values follow the authors' toolkit
    (gabinsane/multimodal-vae-comparison, ``multimodal_compare/utils.py``, ``get_traversal_matrix`` and
    ``traverse_line``; ``models/trainer.py``, ``save_joint_samples`` with ``traversals=True``, whose returned
    samples are those of its last range, ``(-1, 1)``)::

        z[d * steps + s] = 0 except z[d * steps + s, d] = linspace(low, high, steps)[s]

    Parameters
    ----------
    latent_dim : int
        Dimensions of the shared latent, ``D``.
    steps : int
        Samples per dimension (the paper: 1,000).
    value_range : (float, float), default=(-1.0, 1.0)
        ``(low, high)`` of the traversed dimension, in latent units (prior standard deviations).

    Returns
    -------
    numpy.ndarray
        float32 ``(D * steps, D)``, dimension 0's rows first.

    Raises
    ------
    InvalidArgumentError
        When ``latent_dim`` or ``steps`` is below 1, or the range is not two finite numbers with low <= high.
    """
    latent_dim, steps = check_positive_int(latent_dim, "latent_dim"), check_positive_int(steps, "steps")
    bounds = np.asarray(value_range, dtype=np.float64)
    if bounds.shape != (2,) or not np.all(np.isfinite(bounds)) or bounds[0] > bounds[1]:
        raise InvalidArgumentError(f"value_range: expected (low, high) finite with low <= high, got {value_range!r}")
    values = np.linspace(bounds[0], bounds[1], int(steps))
    grid = traversal_latents(np.zeros(int(latent_dim)), values)
    return grid.reshape(int(latent_dim) * int(steps), int(latent_dim))


def summarise_log_likelihoods(estimates: Mapping[str, Any], k: int | None = None) -> pd.DataFrame:
    """One row per estimate: mean, standard deviation and standard error over the examples (nats).

    Parameters
    ----------
    estimates : mapping of str to array-like of float
        Estimate name (``joint``, a modality) -> per-example values ``(N,)``.
    k : int, optional
        Importance samples behind the values (written into the table).

    Returns
    -------
    pandas.DataFrame
        Columns ``estimate``, ``scored``, ``mean_nats``, ``std_nats`` (ddof 1; NaN for one example),
        ``sem_nats`` (``std / sqrt(n)``), ``n``, ``k``, in the order of ``estimates``.

    Raises
    ------
    InvalidArgumentError
        When an entry is empty, not one-dimensional or not finite.
    """
    rows = []
    for name, values in estimates.items():
        array = np.asarray(values, dtype=np.float64)
        if array.ndim != 1 or array.size == 0:
            raise InvalidArgumentError(f"estimates[{name!r}]: expected a non-empty 1-D array, got shape {array.shape}")
        if not np.all(np.isfinite(array)):
            raise InvalidArgumentError(f"estimates[{name!r}]: holds NaN or infinite values")
        std = float(np.std(array, ddof=1)) if array.size > 1 else float("nan")
        rows.append(
            {
                "estimate": name,
                "scored": "every modality" if name == JOINT else name,
                "mean_nats": float(np.mean(array)),
                "std_nats": std,
                "sem_nats": std / np.sqrt(array.size) if array.size > 1 else float("nan"),
                "n": int(array.size),
                "k": None if k is None else int(k),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# calls into a trained task


def log_likelihoods(
    task: Any,
    given: Mapping[str, Any],
    k: int = 100,
    seed: int = 0,
    batch_size: int = 64,
    step: Callable[[str], None] | None = None,
) -> dict[str, np.ndarray]:
    """Per-example test log-likelihood estimates: jointly and per modality.

    ``joint``: ``task.log_likelihood(given)`` (every modality given and scored); modality ``m``:
    ``task.log_likelihood({m: given[m]}, scored=[m])`` (its marginal, from its own posterior).

    Parameters
    ----------
    task
        An object with ``log_likelihood(given, scored=None, k=, seed=, batch_size=) -> (N,)``.
    given : mapping of str to array-like
        Modality name -> test rows (as the dataset field holds them).
    k : int, default=100
        Importance samples per example.
    seed : int, default=0
        Seed of the samples (the same for every estimate).
    batch_size : int, default=64
        Examples per pass.
    step : callable, optional
        Called with the estimate's name before it is computed (progress).

    Returns
    -------
    dict of str to numpy.ndarray
        ``joint`` then each modality of ``given``: float64 ``(N,)`` nats.
    """
    k = check_positive_int(k, "k")
    if len(given) < 1:
        raise InvalidArgumentError("given: needs at least one modality")
    parts: list[tuple[str, dict[str, Any], list[str]]] = []
    if len(given) > 1:
        parts.append((JOINT, dict(given), list(given)))
    parts += [(name, {name: rows}, [name]) for name, rows in given.items()]
    out = {}
    for name, inputs, scored in parts:
        if step is not None:
            step(name)
        values = task.log_likelihood(inputs, scored=scored, k=int(k), seed=int(seed), batch_size=int(batch_size))
        out[name] = np.asarray(values, dtype=np.float64).reshape(-1)
    return out


def posterior_latents(task: Any, given: Mapping[str, Any], batch_size: int | None = None) -> dict[str, np.ndarray]:
    """Posterior means of the shared latent: from every modality (``joint``) and from each alone.

    Parameters
    ----------
    task
        An object with ``encode(given[, batch_size=]) -> (N, D)``.
    given : mapping of str to array-like
        Modality name -> rows.
    batch_size : int, optional
        Examples per pass (default: the task's own).

    Returns
    -------
    dict of str to numpy.ndarray
        ``joint`` (when more than one modality is given) then each modality: float ``(N, D)``.
    """
    passes = {} if batch_size is None else {"batch_size": int(batch_size)}
    out = {}
    if len(given) > 1:
        out[JOINT] = np.asarray(task.encode(dict(given), **passes))
    for name, rows in given.items():
        out[name] = np.asarray(task.encode({name: rows}, **passes))
    return out


def latent_traversals(
    task: Any,
    base: Any,
    values: Sequence[float] = TRAVERSAL_VALUES,
    dims: Sequence[int] | None = None,
    batch_size: int | None = None,
) -> dict[str, Any]:
    """Decode a traversal of every (or the given) latent dimension around ``base``: every latent of the grid
    in one call of ``task.decode``.

    Parameters
    ----------
    task
        An object with ``decode(z (M, D)[, batch_size=]) -> {modality: outputs}``; an ``image`` output is
        ``(M, C, H, W)`` means in [0, 1], a ``text`` output ``(M, L, V)`` caption logits.
    base, values, dims
        As :func:`traversal_latents`.
    batch_size : int, optional
        Latents per pass (default: the task's own).

    Returns
    -------
    dict
        ``latents`` ``(R, S, D)``, ``values``, ``dims``, and per decoded modality: ``images``
        (uint8 ``(R, S, H, W, C)``) for ``image``, ``captions`` (``R`` lists of ``S`` strings) for ``text``,
        ``outputs[name]`` (``(R, S, ...)``) for every modality.
    """
    grid = traversal_latents(base, values, dims)
    rows, steps, size = grid.shape
    passes = {} if batch_size is None else {"batch_size": int(batch_size)}
    decoded = task.decode(grid.reshape(rows * steps, size), **passes)
    result: dict[str, Any] = {
        "latents": grid,
        "values": [float(v) for v in np.asarray(values, dtype=np.float64)],
        "dims": list(range(size)) if dims is None else [int(d) for d in dims],
        "outputs": {name: np.asarray(out).reshape(rows, steps, *np.shape(out)[1:]) for name, out in decoded.items()},
    }
    if "image" in decoded:
        images = images_of_means(np.asarray(decoded["image"]))
        result["images"] = images.reshape(rows, steps, *images.shape[1:])
    if "text" in decoded:
        captions = captions_of_logits(np.asarray(decoded["text"]))
        result["captions"] = [captions[r * steps : (r + 1) * steps] for r in range(rows)]
    return result


__all__ = [
    "JOINT_TRAVERSAL_RANGE",
    "TRAVERSAL_VALUES",
    "captions_of_logits",
    "images_of_means",
    "joint_traversal_latents",
    "latent_traversals",
    "linear_factorisation",
    "log_likelihoods",
    "posterior_latents",
    "summarise_log_likelihoods",
    "traversal_latents",
    "tsne_embedding",
]

"""Text of numbers in reports: metrics, table cells and p-values (no HTML here).

:func:`format_number` writes floats with a few significant digits (scientific notation below 1e-3
and from 1e6 on, so a small value never reads 0); :func:`readable_label` turns a raw key into a
column label; :func:`format_p_value` writes
p-values so that they never read as zero and a permutation p-value at its floor reads
``<= 1/(B+1)``; the private helpers match p-value names, permutation counts and baselines for
:class:`repscope.report.Report`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from repscope.errors import InvalidArgumentError
from repscope.validation import check_positive_int

# A sequence metric longer than this is shortened on the page (metrics.json keeps it whole).
MAX_SEQUENCE_ITEMS = 20


def format_number(value: Any, digits: int = 4) -> str:
    """A number as text that keeps ``digits`` significant digits.

    Parameters
    ----------
    value
        An int, a float or a numpy scalar; anything else is returned as ``str(value)``.
    digits
        Significant digits of a float.

    Returns
    -------
    str
        Integers whole (``12345678``). Floats with ``digits`` significant digits and no trailing
        zeros: in plain notation for magnitudes from 1e-3 up to 1e6 (``0.001234``, ``12345.678`` ->
        ``12346``), in scientific notation below 1e-3 and from 1e6 on, with a short exponent
        (``1.5e-7``, ``3.2e9``), so a small value never reads ``0``. An exact zero is ``0``; NaN and
        infinities are ``NaN``, ``inf``, ``-inf``.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    digits = check_positive_int(digits, "digits")
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if not PLAIN_FROM <= magnitude < PLAIN_BELOW:
        return _scientific(value, digits)
    if math.floor(math.log10(magnitude)) >= digits:
        return f"{value:.0f}"  # more integer digits than significant ones: round to a whole number
    text = f"{value:.{digits}g}"
    if "e" in text:  # rounding carried into the next power of ten (9999.7 -> 1e+04)
        text = f"{value:.{max(0, digits - 1 - math.floor(math.log10(magnitude)))}f}"
    return text


# plain notation for magnitudes in [PLAIN_FROM, PLAIN_BELOW), scientific outside
PLAIN_FROM = 1e-3
PLAIN_BELOW = 1e6


def _scientific(value: float, digits: int) -> str:
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


QUICK_RUN_TEXT = "Quick run: shrunk to minutes on 2 CPU cores; numbers are not the paper's setting."
BELOW_BASELINE_MARK = "\u25bc"  # ▼ after a value below the baseline
_P_VALUE_NAME = re.compile(r"(?:^|.*_)(?:p|pvalue|p_value)$", re.IGNORECASE)


def is_p_value_name(name: Any) -> bool:
    """Whether a metric or column name holds p-values: ``p``, ``p_value``, ``pvalue``, or a name
    ending in ``_p``, ``_pvalue`` or ``_p_value`` (the last part of a dotted metric name counts)."""
    if isinstance(name, tuple):
        name = name[-1] if name else ""
    return bool(_P_VALUE_NAME.fullmatch(str(name).rsplit(".", 1)[-1]))


def format_p_value(p: Any, permutations: int | None = None, digits: int = 2) -> str:
    """A p-value as text that never reads as zero.

    Rule: p >= 0.001 in plain notation with 3 significant digits (``0.0213``, ``0.43``); smaller
    p in scientific notation with ``digits`` significant digits (``7.0e-38``); an exact 0 (a
    normal tail that underflowed) as ``< 1e-300``. With ``permutations`` = B, a p-value at the
    floor of a permutation test, p <= 1 / (B + 1) (no permuted statistic reached the observed one),
    is written ``<= 1/(B+1)``, e.g. ``<= 0.002`` for B = 499: the test cannot resolve smaller
    values. NaN is ``NaN``.
    """
    if isinstance(p, np.generic):
        p = p.item()
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        return str(p)
    p = float(p)
    if math.isnan(p):
        return "NaN"
    if permutations is not None:
        if isinstance(permutations, bool) or int(permutations) != permutations or permutations < 1:
            raise InvalidArgumentError(f"permutations: expected a positive integer, got {permutations!r}")
        floor = 1.0 / (int(permutations) + 1)
        if p <= floor * (1 + 1e-9):
            return "<= " + _plain_or_scientific(floor, digits)
    if p == 0:
        return "< 1e-300"
    return _plain_or_scientific(p, digits)


def _plain_or_scientific(p: float, digits: int) -> str:
    if abs(p) >= 1e-3:
        return format_number(p, 3)
    mantissa, exponent = f"{p:.{max(1, digits) - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


# words written upper-case in a readable label (the metrics and models of the five papers)
ACRONYMS = frozenset(
    "ae am auc bvae cg cnn cka dbi dci elbo fid gan irs jsd kl lda loo mi mig mlp mmd mmvae mopoe mse mvae pca "
    "rmse sap svm uc vae".split()
)
# keys whose readable form is not the key with spaces; callers add their own through ``labels``
LABELS: dict[str, str] = {
    "p": "p",
    "p_value": "p-value",
    "pvalue": "p-value",
    "n": "n",
    "tsne": "t-SNE",
    "std": "std",
    "knn": "kNN",
    "lenet5": "LeNet-5",
    "n_train": "training examples",
    "n_val": "validation examples",
    "n_test": "test examples",
}


def readable_label(key: Any) -> str:
    """A readable label for a raw key such as a JSON metric name or a table column.

    Parameters
    ----------
    key
        The key; a tuple (a column of a MultiIndex) is joined with `` / ``.

    Returns
    -------
    str
        :data:`LABELS` ``[key]`` where the key is listed there; otherwise the key with ``_`` and ``-``
        as spaces and ``.`` (a nested metric) as `` / ``, each word that is in :data:`ACRONYMS`
        upper-case, a ``p_value`` word as ``p-value``: ``dci_disentanglement`` -> ``DCI disentanglement``,
        ``text_to_image_strict`` -> ``text to image strict``, ``mig.mean`` -> ``MIG / mean``.
    """
    if isinstance(key, tuple):
        return " / ".join(readable_label(part) for part in key)
    text = str(key)
    if text in LABELS:
        return LABELS[text]
    if "." in text:
        return " / ".join(readable_label(part) for part in text.split("."))
    text = re.sub(r"(?i)(?<![a-z0-9])p_?value(?![a-z0-9])", "p-value", text)
    words = [word for word in re.split(r"[_\s]+", text) if word]
    shown = []
    for word in words:
        parts = word.split("-")
        shown.append("-".join(part.upper() if part.lower() in ACRONYMS else part for part in parts))
    return " ".join(shown) if shown else text


def resolve_label(key: Any, labels: Mapping[Any, str] | bool | None) -> str:
    """The label shown for ``key``: ``labels[key]`` from a mapping (else :func:`readable_label`),
    :func:`readable_label` for ``True``, the raw key for ``None`` or ``False``.

    Parameters
    ----------
    key
        A column name, an index name or a metric name.
    labels
        A mapping key -> label, ``True`` or ``None``/``False``.

    Returns
    -------
    str
        The label text (not escaped).
    """
    if labels is None or labels is False:
        return " / ".join(str(part) for part in key) if isinstance(key, tuple) else str(key)
    if isinstance(labels, Mapping):
        if key in labels:
            return str(labels[key])
        return readable_label(key)
    if labels is True:
        return readable_label(key)
    raise InvalidArgumentError(f"labels: expected a mapping key -> label, True or None, got {type(labels).__name__}")


def flatten_metrics(metrics: Mapping[str, Any], separator: str = ".") -> dict[str, Any]:
    """Flatten nested mappings: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``, keys in insertion order."""
    if not isinstance(metrics, Mapping):
        raise InvalidArgumentError(f"metrics: expected a mapping, got {type(metrics).__name__}")
    flat: dict[str, Any] = {}

    def visit(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping) and value:
            for key, item in value.items():
                visit(f"{prefix}{separator}{key}" if prefix else str(key), item)
        else:
            flat[prefix] = value

    for key, value in metrics.items():
        visit(str(key), value)
    return flat


def format_value(value: Any, float_format: Callable[[float], str] = format_number) -> str:
    """Text of a metric or table cell: numbers via ``float_format``, sequences item by item."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return float_format(value)
    if isinstance(value, (list, tuple)):
        shown = [format_value(item, float_format) for item in value[:MAX_SEQUENCE_ITEMS]]
        if len(value) > MAX_SEQUENCE_ITEMS:
            shown.append(f"… ({len(value)} items)")
        return "[" + ", ".join(shown) + "]"
    if isinstance(value, Mapping) and not value:
        return "{}"
    if value is None:
        return "None"
    return format_number(value)


def _float_formatter(float_format: Callable[[float], str] | str | None) -> Callable[[float], str]:
    if float_format is None:
        return format_number
    if callable(float_format):
        return float_format
    if isinstance(float_format, str):
        if "{" in float_format:
            return lambda x: float_format.format(x)
        return lambda x: format(x, float_format)
    raise InvalidArgumentError(
        f"float_format: expected a callable, a format spec such as '.3f' or None, got {float_format!r}"
    )


def _is_number(value: Any) -> bool:
    if isinstance(value, np.generic):
        value = value.item()
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def _metric_permutations(name: str, flat: Mapping[str, Any], given: int | Mapping[str, int] | None) -> int | None:
    if isinstance(given, Mapping):
        return given.get(name)
    if given is not None:
        return given
    prefix, _, last = name.rpartition(".")
    stem = re.sub(r"_(?:p|pvalue|p_value)$", "", last, flags=re.IGNORECASE) if "_" in last else ""
    candidates = [f"{stem}_permutations", "permutations"] if stem else ["permutations"]
    for candidate in candidates:
        value = flat.get(f"{prefix}.{candidate}" if prefix else candidate)
        if _is_number(value) and int(value) == value and value >= 1:
            return int(value)
    return None


def _table_permutations(
    column: Any, given: int | Mapping[str, int] | None, per_row: list | None, position: int
) -> int | None:
    if isinstance(given, Mapping):
        return given.get(column)
    if given is not None:
        return given
    if per_row is not None:
        value = per_row[position]
        if _is_number(value) and int(value) == value and value >= 1:
            return int(value)
    return None


def _column_baselines(
    columns: Any, numeric: list[bool], p_columns: list[bool], baseline: float | Mapping[str, float] | None
) -> dict[Any, float]:
    if baseline is None:
        return {}
    if isinstance(baseline, Mapping):
        missing = [str(c) for c in baseline if c not in list(columns)]
        if missing:
            raise InvalidArgumentError(f"baseline: no column named {', '.join(missing)}")
        chosen = dict(baseline)
    else:
        chosen = {
            column: baseline for column, is_numeric, is_p in zip(columns, numeric, p_columns) if is_numeric and not is_p
        }
    for column, value in chosen.items():
        if not _is_number(value):
            raise InvalidArgumentError(f"baseline: expected a number for {column!r}, got {value!r}")
    return {column: float(value) for column, value in chosen.items()}


def _describe_baselines(baselines: Mapping[Any, float]) -> str:
    values = set(baselines.values())
    if len(values) == 1 and len(baselines) > 1:
        return format_number(next(iter(values)))
    return ", ".join(f"{column}: {format_number(value)}" for column, value in baselines.items())

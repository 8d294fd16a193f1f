"""The flat public API: ``repscope.assess``, ``repscope.metrics.<metric>``, ``repscope.invariance``,
``repscope.zeroshot``, ``repscope.morpho``, ``repscope.attacks``; and every repscope name the README's and
docs' Python examples use."""

from __future__ import annotations

import ast
import importlib
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import repscope

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_MODULES = (
    "repscope",
    "repscope.metrics",
    "repscope.metrics.disentanglement",
    "repscope.invariance",
    "repscope.zeroshot",
    "repscope.morpho",
    "repscope.attacks",
)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_name_in_all_resolves(module_name):
    module = importlib.import_module(module_name)
    assert module.__all__, module_name
    assert len(set(module.__all__)) == len(module.__all__), "a name listed twice"
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{module_name}.{name}"
        assert name in dir(module)


def test_top_level_names_are_their_modules_objects():
    from repscope.studies.assess.assessment import Assessment

    assert repscope.Assessment is Assessment
    assert repscope.metrics is importlib.import_module("repscope.metrics")
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = repscope.nothing


# ---------------------------------------------------------------------------------------------------
# import repscope stays light


def test_import_repscope_loads_no_framework():
    heavy = ("numpy", "torch", "pandas", "scipy", "sklearn", "lightning", "matplotlib", "skimage", "cma")
    code = (
        "import json, sys\n"
        f"heavy = {heavy!r}\n"
        "loaded = lambda: sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "import repscope\n"
        "top = loaded()\n"
        "import repscope.metrics, repscope.metrics.disentanglement\n"
        "print(json.dumps({'top': top, 'metrics': loaded(), 'names': repscope.metrics.__all__}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found = json.loads(result.stdout)
    assert found["top"] == []
    assert found["metrics"] == []
    assert {"mig", "irs", "uc", "cg", "dci", "sap", "modularity_explicitness"} <= set(found["names"])


# ---------------------------------------------------------------------------------------------------
# repscope.metrics: every registered metric by name


def test_every_registered_metric_is_public():
    import repscope.metrics
    from repscope.metrics.registry import METRICS, metric

    for name in METRICS:
        assert name in repscope.metrics.__all__
        assert getattr(repscope.metrics, name) is metric(name)
    assert set(repscope.metrics.disentanglement.__all__) == {
        name for name, entry in METRICS.items() if entry.function.startswith("repscope.metrics.disentanglement.")
    }


def test_metric_names_beat_submodule_names():
    # irs and dci are submodules too: imported by their full names first, the package names stay the functions
    import repscope.metrics.disentanglement.dci
    import repscope.metrics.disentanglement.irs  # noqa: F401
    from repscope.metrics.disentanglement import dci, irs, mig, uc
    from repscope.metrics.disentanglement.irs import unique_capture
    from repscope.metrics.registry import metric

    assert (irs, dci, mig, uc) == (metric("irs"), metric("dci"), metric("mig"), metric("uc"))
    assert uc is unique_capture
    assert callable(irs) and callable(dci)
    # what the import system does when it first loads a submodule: bind it on its package
    package = importlib.import_module("repscope.metrics.disentanglement")
    try:
        package.irs = sys.modules["repscope.metrics.disentanglement.irs"]
        assert package.irs is metric("irs")
    finally:
        vars(package)["irs"] = metric("irs")


def test_a_metric_registered_later_appears(monkeypatch):
    import repscope.metrics
    from repscope.metrics.registry import METRICS, MetricEntry

    monkeypatch.setitem(METRICS, "mig_again", MetricEntry("repscope.metrics.disentanglement.information:mig", "", ""))
    try:
        assert repscope.metrics.mig_again is repscope.metrics.mig
        assert repscope.metrics.disentanglement.mig_again is repscope.metrics.mig
    finally:
        vars(repscope.metrics).pop("mig_again", None)
        vars(repscope.metrics.disentanglement).pop("mig_again", None)


def _entropy(probabilities):
    return -sum(p * math.log(p) for p in probabilities if p > 0)


def test_mig_by_name_equals_the_registry_and_a_hand_computed_value():
    import repscope.metrics
    from repscope.metrics.registry import metric

    # factors a (4 vs 4) and b (alternating); codes: a rescaled, b shifted, and a AND b; each code has two
    # values, so its histogram bins are a relabelling and the mutual information is the discrete one
    a = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    b = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    factors = np.stack([a, b], axis=1)
    codes = np.stack([3.0 * a - 1.0, 0.5 * b + 2.0, (a & b) * 7.0], axis=1)
    ours = repscope.metrics.mig(factors, codes)
    assert ours == metric("mig")(factors, codes)
    # I(a; a AND b) = H(a AND b) - H(a AND b | a) = H(1/4, 3/4) - H(1/2, 1/2) / 2; likewise for b
    log2 = math.log(2)
    second = _entropy([0.25, 0.75]) - log2 / 2
    assert ours["mig_per_factor"] == pytest.approx([(log2 - second) / log2] * 2, abs=1e-12)
    assert np.asarray(ours["mutual_information"]) == pytest.approx(
        np.array([[log2, 0.0], [0.0, log2], [second, second]]), abs=1e-12
    )


# ---------------------------------------------------------------------------------------------------
# repscope.morpho


@pytest.fixture(scope="module")
def digits():
    from repscope.data.sources import load_source

    sample = load_source("mnist-sample")
    # one digit of each of four classes, so the shapes differ
    rows = [int(np.flatnonzero(sample.labels == label)[0]) for label in (0, 1, 4, 7)]
    return sample.images[rows]


def test_measure_gives_the_morphometric_columns(digits):
    import repscope.morpho

    table = repscope.morpho.measure(digits)
    assert list(table.columns) == ["index", "area", "length", "thickness", "slant", "width", "height", "valid"]
    assert table["index"].tolist() == [0, 1, 2, 3]
    assert table["valid"].all()
    assert (table[["area", "length", "thickness", "width", "height"]] > 0).all().all()
    # a mirrored digit leans the other way by as much (the moments' mu_rc changes sign)
    mirrored = repscope.morpho.measure(digits[:, :, ::-1])
    assert mirrored["slant"].to_numpy() == pytest.approx(-table["slant"].to_numpy(), abs=1e-9)
    # thickening thickens every digit
    thick, _ = repscope.morpho.perturb(digits, "thick", rng=0)
    assert (repscope.morpho.measure(thick)["thickness"] > table["thickness"] + 0.5).all()


def test_measure_a_bar_of_known_size():
    import repscope.morpho

    bar = np.zeros((1, 28, 28), np.uint8)
    bar[0, 6:22, 12:15] = 255  # 16 rows by 3 columns, upright
    row = repscope.morpho.measure(bar).iloc[0]
    assert row["area"] == pytest.approx(48, abs=1.5)
    assert row["thickness"] == pytest.approx(3, abs=0.3)
    assert row["height"] == pytest.approx(16, abs=0.5)
    assert abs(row["slant"]) < 1e-9


# ---------------------------------------------------------------------------------------------------
# repscope.invariance


def _constant_classifier():
    import torch
    from torch import nn

    class ConstantClassifier(nn.Module):
        """Two convolutions the modalities read, and logits that ignore them: always class 1 of 3."""

        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 2, 3)
            self.conv2 = nn.Conv2d(2, 2, 3)
            self.head = nn.Linear(2, 3)
            self.register_buffer("bias", torch.tensor([0.0, 5.0, 0.0]))

        def forward(self, images):
            features = self.conv2(self.conv1(images).relu()).mean(dim=(2, 3))
            return self.head(features) * 0.0 + self.bias

    return ConstantClassifier()


@pytest.fixture(scope="module")
def invariance_images():
    rng = np.random.default_rng(3)
    images = np.zeros((12, 12, 12), np.uint8)
    images[:, 3:9, 5:7] = 255  # an upright bar: rotating it moves the convolutions' maxima
    images = np.clip(images.astype(int) + rng.integers(0, 40, images.shape), 0, 255).astype(np.uint8)
    labels = np.array([1, 0, 1, 2, 1, 0, 0, 1, 2, 2, 0, 1])  # 5 of 12 are class 1
    return images, labels


def test_invariance_test_of_a_module(invariance_images):
    import torch

    import repscope.invariance

    torch.manual_seed(0)
    images, labels = invariance_images
    model = _constant_classifier()
    result = repscope.invariance.test(model, images, labels, "rotation", half_range=20.0, steps=3, progress=False)
    assert result.transform == "rotation" and result.values == (-20.0, 0.0, 20.0)
    # the prediction never changes: correct exactly where the label is 1, under every rotation
    assert result.accuracy == pytest.approx(5 / 12)
    assert result.robust_accuracy == pytest.approx(5 / 12)
    assert result.correct.tolist() == [[label == 1] * 3 for label in labels]
    assert set(result.matrices) == {"max@CONF", "max@CONV-1", "mean@CONV-1", "max@CONV-2", "mean@CONV-2"}
    assert np.array_equal(result.matrices["max@CONF"], np.zeros((3, 3)))  # the confidence is constant
    conv = result.matrices["max@CONV-1"]
    assert np.allclose(conv, conv.T) and np.all(np.diag(conv) == 0) and conv[0, 2] > 0
    # grey (N, H, W) images are (N, 1, H, W)
    again = repscope.invariance.test(
        model, images[:, None], labels, "rotation", half_range=20.0, steps=3, progress=False
    )
    assert all(np.array_equal(result.matrices[key], again.matrices[key]) for key in result.matrices)


def test_invariance_test_through_the_loader_applies_the_contract(invariance_images):
    import torch
    from torch import nn

    import repscope.invariance
    import repscope.models.external as external

    class ReadsBytes(nn.Module):
        """The same classifier on pixels in 0-255, as a model trained on raw bytes reads them."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, images):
            return self.inner(images / 255.0)

    torch.manual_seed(0)
    images, labels = invariance_images
    inner = _constant_classifier()
    direct = repscope.invariance.test(inner, images, labels, half_range=20.0, steps=3, progress=False)
    contract = external.InputContract(input_range="0-255")
    loaded = repscope.invariance.test(
        ReadsBytes(inner), images, labels, half_range=20.0, steps=3, contract=contract, progress=False
    )
    for key, matrix in direct.matrices.items():
        assert loaded.matrices[key] == pytest.approx(matrix, rel=1e-5, abs=1e-9), key
    assert loaded.robust_accuracy == direct.robust_accuracy


def test_invariance_family_names_and_an_unknown_family(invariance_images):
    import repscope.invariance
    from repscope.errors import InvalidArgumentError

    assert repscope.invariance.FAMILY_NAMES == ("rotation", "brightness", "scale")
    images, labels = invariance_images
    with pytest.raises(InvalidArgumentError, match=r"^family: expected one of rotation, brightness, scale"):
        repscope.invariance.test(_constant_classifier(), images, labels, "shear")


# ---------------------------------------------------------------------------------------------------
# repscope.zeroshot


def test_soft_label_metrics_by_hand_and_stacked():
    import repscope.zeroshot

    # three classes; each model without class i gives class i's images soft-labels over the other two
    loo = [
        np.array([[0.9, 0.1], [0.7, 0.3]]),
        np.array([[0.5, 0.5], [0.5, 0.5], [0.2, 0.8]]),
        np.array([[1.0, 0.0], [0.6, 0.4]]),
    ]
    scores = repscope.zeroshot.soft_label_metrics(loo)

    def scatter(rows):  # S_i of Eq. 3: root mean squared distance to the centroid
        centre = [sum(column) / len(rows) for column in zip(*rows)]
        return math.sqrt(sum(sum((v - c) ** 2 for v, c in zip(row, centre)) for row in rows) / len(rows))

    expected = [scatter(rows.tolist()) for rows in loo]
    assert scores["dbi_per_class"] == pytest.approx(expected, abs=1e-12)
    assert scores["dbi"] == pytest.approx(sum(expected) / 3, abs=1e-12)
    assert "am" not in scores
    # the same rows stacked in another order, with their classes, and the full model's rows beside them
    order = [4, 0, 6, 2, 1, 5, 3]
    stacked, classes = np.concatenate(loo)[order], np.array([0, 0, 1, 1, 1, 2, 2])[order]
    full_per_class = [np.full((len(rows), 3), 1 / 3) for rows in loo]
    stacked_scores = repscope.zeroshot.soft_label_metrics(stacked, classes, full=np.concatenate(full_per_class)[order])
    assert stacked_scores["dbi"] == pytest.approx(scores["dbi"], abs=1e-12)
    assert stacked_scores["davies_bouldin"] == pytest.approx(scores["davies_bouldin"], abs=1e-12)
    # AM term of class 0: h' = (1, 1) (two uniform rows without class 0), h = (1.6, 0.4); |.|_1 / (n - 1) = 0.6
    assert stacked_scores["am_per_class"][0] == pytest.approx(0.6, abs=1e-12)
    assert repscope.zeroshot.attack is repscope.attacks.attack


def test_soft_label_metrics_refuses_labels_that_leave_a_class_out():
    import repscope.zeroshot
    from repscope.errors import InvalidArgumentError

    rows = np.array([[0.5, 0.5], [0.4, 0.6], [0.9, 0.1]])
    with pytest.raises(InvalidArgumentError, match=r"^labels: no soft-labels of class 1"):
        repscope.zeroshot.soft_label_metrics(rows, np.array([0, 0, 2]))
    with pytest.raises(InvalidArgumentError, match=r"^labels: expected classes 0 \.\. 2"):
        repscope.zeroshot.soft_label_metrics(rows, np.array([0, 1, 3]))


# ---------------------------------------------------------------------------------------------------
# the README's and docs' Python examples name only what exists


def _python_blocks() -> list[tuple[str, str]]:
    files = (
        [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        if (ROOT / "docs").is_dir()
        else [ROOT / "README.md"]
    )
    blocks = []
    for path in files:
        for block in re.findall(r"^```python[^\n]*\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M):
            blocks.append((str(path.relative_to(ROOT)), block))
    return blocks


def _dotted(node: ast.AST) -> str | None:
    """``repscope.a.b`` of an attribute chain rooted at the name ``repscope``, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join(["repscope", *reversed(parts)]) if isinstance(node, ast.Name) and node.id == "repscope" else None


def _source(block: str) -> str:
    """The code of a block, without the ``>>>`` / ``...`` prompts of an interactive session."""
    lines = block.splitlines()
    if not any(line.startswith(">>>") for line in lines):
        return block
    return "\n".join(line[4:] for line in lines if line.startswith((">>>", "...")))


def _names_used(block: str) -> set[str]:
    """Every ``repscope...`` module or ``module:name`` the block imports or reads as an attribute."""
    used = set()
    for node in ast.walk(ast.parse(_source(block))):
        if isinstance(node, ast.Import):
            used.update(alias.name for alias in node.names if alias.name.split(".")[0] == "repscope")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "repscope" and not node.level:
            used.update(f"{node.module}:{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Attribute) and (dotted := _dotted(node)) is not None:
            used.add(dotted)
    # keep only the longest chains: repscope.metrics.mig covers repscope.metrics
    return {name for name in used if not any(other.startswith(f"{name}.") for other in used)}


def _resolve(name: str) -> None:
    module_name, _, attribute = name.partition(":")
    if attribute:  # from module import attribute: an attribute, or a submodule
        module = importlib.import_module(module_name)
        if not hasattr(module, attribute):
            importlib.import_module(f"{module_name}.{attribute}")
        return
    value = importlib.import_module("repscope")
    parts = name.split(".")
    for index in range(1, len(parts)):
        try:
            value = getattr(value, parts[index])
        except AttributeError:
            value = importlib.import_module(".".join(parts[: index + 1]))


def test_documented_names_import():
    blocks = _python_blocks()
    assert blocks, "README.md has Python examples"
    missing = []
    for where, block in blocks:
        try:
            names = _names_used(block)
        except SyntaxError as exc:
            missing.append(f"{where}: a Python block that does not parse ({exc.msg}, its line {exc.lineno})")
            continue
        for name in sorted(names):
            try:
                _resolve(name)
            except (ImportError, AttributeError) as exc:
                missing.append(f"{where}: {name} ({exc})")
    assert missing == []


def test_a_documented_name_that_does_not_exist_is_caught():
    names = _names_used(">>> import repscope\n>>> repscope.metrics.no_such_metric(factors, codes)\n")
    assert names == {"repscope.metrics.no_such_metric"}
    with pytest.raises((ImportError, AttributeError)):
        _resolve("repscope.metrics.no_such_metric")
    with pytest.raises((ImportError, AttributeError)):
        _resolve("repscope.morpho:no_such_function")

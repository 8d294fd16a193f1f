"""The layers of repscope: imports between its top-level packages and modules go one way.

Every module under ``src/repscope`` is parsed with ``ast``; every import counts, at any depth (a
function-local import is a dependency as real as one at the top). A unit is a top-level package or
module of repscope (``data``, ``models``, ``sweeps``, ...). The order, lowest first::

    foundation  errors, fileio, outputs, resources, config, validation, cache, progress (with
                progress_display, progress_text, interrupts), pools, sweeps, resume_check, registry,
                and the package's own __init__ (__version__)
    data        ground truth: loaders and generators
    models      torch modules
    metrics     pure functions on arrays: no torch, lightning, models or train
    report      figures and the HTML report (reads data and metrics, e.g. soft labels)
    run_directory  the run directory, which writes its figures through report.figures
    train       fitting a model (writes a run and its training report)
    studies     a paper's experiment: all of the above
    api         the flat public API's facades (invariance, zeroshot, morpho, attacks): a paper's tools on
                a user's arrays and models, re-exported from data, metrics and studies
    cli         the typer app (and __main__)

``report`` and ``run_directory`` sit below ``train``, not beside ``studies``: ``train.fitting`` writes a run
directory and its training report, and ``run_directory`` imports ``report.figures`` to write PNGs, while
``report`` itself needs nothing above ``metrics``. ``sweeps`` is machinery like ``pools``: it runs
any ``"module:function"`` it is given on worker processes or Ray, so data (the sharded CANDLE render),
training and studies all use it.

A unit may import its own layer or a lower one, never a higher one, and no two units may import each
other through any chain. Naming an object by a ``"module:attribute"`` string that a registry resolves
at run time (:func:`repscope.registry.resolve`) is not an import and is not checked here.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import repscope

PACKAGE = Path(repscope.__file__).parent

LAYERS: tuple[frozenset[str], ...] = (
    frozenset(
        {
            "__init__",
            "errors",
            "fileio",
            "outputs",
            "resources",
            "config",
            "validation",
            "cache",
            "progress",
            "progress_display",
            "progress_text",
            "interrupts",
            "pools",
            "sweeps",
            "resume_check",
            "registry",
        }
    ),
    frozenset({"data"}),
    frozenset({"models"}),
    frozenset({"metrics"}),
    frozenset({"report"}),
    frozenset({"run_directory"}),
    frozenset({"train"}),
    frozenset({"studies"}),
    frozenset({"invariance", "zeroshot", "morpho", "attacks"}),
    frozenset({"cli", "__main__"}),
)
LAYER_OF = {unit: index for index, layer in enumerate(LAYERS) for unit in layer}

# metrics are functions of arrays that a JAX or TensorFlow user can call (DESIGN): no framework, no model
METRICS_MUST_NOT_IMPORT = {"torch", "lightning", "pytorch_lightning", "repscope.models", "repscope.train"}

# upward arrows that exist today and are being removed; each is (importing unit, imported unit)
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()


def unit_of(path: Path) -> str:
    """The top-level unit a source file belongs to: ``data/candle/render.py`` -> ``data``."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def module_name(path: Path) -> list[str]:
    parts = ["repscope", *path.relative_to(PACKAGE).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_modules(path: Path) -> list[tuple[str, int]]:
    """Every module the file imports, absolute and dotted, with its line; relative imports resolved."""
    found = []
    package = module_name(path) if path.name == "__init__.py" else module_name(path)[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module == "repscope":
                # from repscope import X: the subpackage or module X, or an attribute of repscope/__init__
                for alias in node.names:
                    is_unit = (PACKAGE / alias.name).is_dir() or (PACKAGE / f"{alias.name}.py").is_file()
                    found.append((f"repscope.{alias.name}" if is_unit else "repscope.__init__", node.lineno))
            else:
                found.append((module, node.lineno))
    return found


def unit_imports() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> the places (``file:line``) where the import is written."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        source = unit_of(path)
        for module, line in imported_modules(path):
            parts = module.split(".")
            if parts[0] == "repscope" and len(parts) > 1 and parts[1] != source:
                edges[(source, parts[1])].append(f"{path.relative_to(PACKAGE)}:{line}")
    return edges


EDGES = unit_imports()


def test_every_unit_has_a_layer():
    units = {unit_of(path) for path in PACKAGE.rglob("*.py")}
    assert units - set(LAYER_OF) == set(), "place the new top-level units in LAYERS (and in the docstring)"


def test_no_import_cycle_between_units():
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in EDGES:
        graph[source].add(target)
    done: set[str] = set()

    def visit(unit: str, path: list[str]) -> None:
        if unit in path:
            cycle = [*path[path.index(unit) :], unit]
            places = {f"{a} -> {b}": EDGES[(a, b)][:3] for a, b in zip(cycle, cycle[1:])}
            raise AssertionError(f"import cycle {' -> '.join(cycle)}: {places}")
        if unit in done:
            return
        for target in sorted(graph[unit]):
            visit(target, [*path, unit])
        done.add(unit)

    for unit in sorted(graph):
        visit(unit, [])


def test_no_upward_import():
    upward = {
        (source, target): places
        for (source, target), places in EDGES.items()
        if LAYER_OF[target] > LAYER_OF[source] and (source, target) not in KNOWN_EXCEPTIONS
    }
    assert upward == {}, "a lower layer imports a higher one (see the module docstring for the order)"


def test_known_exceptions_still_exist():
    # a removed violation must leave the list too, so that it cannot come back unnoticed
    assert {pair for pair in KNOWN_EXCEPTIONS if pair not in EDGES} == set(), "remove the fixed pairs"


def test_metrics_import_no_framework_and_no_model():
    offending = []
    for path in sorted((PACKAGE / "metrics").rglob("*.py")):
        for module, line in imported_modules(path):
            if any(module == name or module.startswith(f"{name}.") for name in METRICS_MUST_NOT_IMPORT):
                offending.append(f"{path.relative_to(PACKAGE)}:{line} imports {module}")
    assert offending == []

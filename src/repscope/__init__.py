"""repscope: quantitative assessment of learned representations.

Layers (data flows one way): ``repscope.data`` -> ``repscope.models`` -> ``repscope.metrics``
-> ``repscope.studies`` -> ``repscope.cli`` / ``repscope.report``.

The flat public API, each name imported on first use so that ``import repscope`` stays as light as
``repscope.errors`` (no numpy, no torch):

- :func:`assess`, :class:`Assessment`, :func:`load_model`: assess your own model in its role;
- :mod:`repscope.metrics`: every registered metric by name (``repscope.metrics.mig(factors, codes)``);
- :mod:`repscope.invariance`, :mod:`repscope.zeroshot`, :mod:`repscope.morpho`, :mod:`repscope.attacks`:
  the papers' tools on your arrays and models.
"""

from repscope.errors import RepscopeError

# the one version stamp: pyproject.toml reads it from here (setuptools dynamic version), and every
# record repscope writes (config.yaml, dataset.json, classifiers.json, reports) quotes it
__version__ = "0.1.0"

# public name -> the module that defines it. Named by string and imported on first access (PEP 562): this
# package sits in the foundation layer, below the studies and models that define these names
_EXPORTS: dict[str, str] = {
    "Assessment": "repscope.studies.assess.assessment",
    "assess": "repscope.studies.assess.api",
    "load_model": "repscope.models.external",
}
# the public submodules, reachable as ``repscope.<name>`` after a plain ``import repscope``
_SUBMODULES: tuple[str, ...] = ("attacks", "invariance", "metrics", "morpho", "zeroshot")


def version_stamp() -> str:
    """``repscope <version>``: what a file written by this repscope records as its maker."""
    return f"repscope {__version__}"


def __getattr__(name: str) -> object:
    """A public name or submodule of the flat API, imported on first access (PEP 562)."""
    # imported here, not at the top: a plain ``import repscope`` then loads nothing beyond repscope.errors
    import importlib  # noqa: PLC0415

    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})


__all__ = ["RepscopeError", "__version__", "version_stamp", *sorted(_EXPORTS), *_SUBMODULES]

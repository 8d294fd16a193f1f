"""repscope: quantitative assessment of learned representations.

Layers (data flows one way): ``repscope.data`` -> ``repscope.models`` -> ``repscope.metrics``
-> ``repscope.studies`` -> ``repscope.cli`` / ``repscope.report``.
"""

from repscope.errors import RepscopeError

# the one version stamp: pyproject.toml reads it from here (setuptools dynamic version), and every
# record repscope writes (config.yaml, dataset.json, classifiers.json, reports) quotes it
__version__ = "0.1.0"


def version_stamp() -> str:
    """``repscope <version>``: what a file written by this repscope records as its maker."""
    return f"repscope {__version__}"


__all__ = ["RepscopeError", "__version__", "version_stamp"]

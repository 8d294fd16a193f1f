"""repscope: quantitative assessment of learned representations.

Layers (data flows one way): ``repscope.data`` -> ``repscope.models`` -> ``repscope.metrics``
-> ``repscope.studies`` -> ``repscope.cli`` / ``repscope.report``.
"""

from repscope.errors import RepscopeError

__version__ = "0.1.0"

__all__ = ["RepscopeError", "__version__"]

"""The documentation rule of the public API: every public function and method of ``repscope.metrics``,
``repscope.data`` and ``repscope.train`` has a numpydoc docstring that lists its parameters (and what
it returns), so that a user reads shapes and units without opening the code.

Lightning and torch hooks (``training_step``, ``forward``, ...) are documented by their libraries and
exempt; so are names starting with an underscore.
"""

import importlib
import inspect
import pkgutil

import pytest

PACKAGES = ("repscope.metrics", "repscope.data", "repscope.train")
# hooks whose contract is the framework's, not ours
FRAMEWORK_HOOKS = {
    "forward",
    "training_step",
    "validation_step",
    "test_step",
    "predict_step",
    "configure_optimizers",
    "on_train_epoch_end",
    "on_validation_epoch_end",
    "setup",
    "train_dataloader",
    "val_dataloader",
    "test_dataloader",
    "to",
}


def public_modules():
    for package in PACKAGES:
        root = importlib.import_module(package)
        yield root
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            yield importlib.import_module(info.name)


def public_callables():
    """(qualified name, function) of every public function and public method defined in the packages."""
    for module in public_modules():
        names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name, None)
            if getattr(obj, "__module__", None) != module.__name__:
                continue  # re-exported: checked where it is defined
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj
            elif inspect.isclass(obj):
                yield f"{module.__name__}.{name}", obj
                for attribute, member in vars(obj).items():
                    if attribute.startswith("_") or attribute in FRAMEWORK_HOOKS:
                        continue
                    if isinstance(member, staticmethod | classmethod):
                        member = member.__func__
                    if inspect.isfunction(member):
                        yield f"{module.__name__}.{name}.{attribute}", member


def missing_sections(obj) -> list[str]:
    doc = inspect.getdoc(obj) or ""
    if not doc.strip():
        return ["docstring"]
    if inspect.isclass(obj):
        return []
    missing = []
    signature = inspect.signature(obj)
    arguments = [p for p in signature.parameters if p not in ("self", "cls")]
    if arguments and "Parameters\n----------" not in doc:
        missing.append("Parameters")
    returns = signature.return_annotation
    says_nothing_back = returns in (None, "None", inspect.Signature.empty) and "return " not in inspect.getsource(obj)
    if not says_nothing_back and "Returns\n-------" not in doc and "Yields\n------" not in doc:
        missing.append("Returns")
    return missing


def test_the_packages_have_public_callables():
    names = [name for name, _ in public_callables()]
    # the rule below must look at the real API, not at an empty list
    assert "repscope.train.fitting.fit" in names and "repscope.data.datasets.Dataset.batch" in names
    assert any(name.startswith("repscope.metrics.") for name in names)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_callable_has_a_numpydoc_docstring(package):
    lacking = {
        name: missing
        for name, obj in public_callables()
        if name.startswith(package + ".") and (missing := missing_sections(obj))
    }
    assert not lacking, "\n".join(f"{name}: no {', '.join(missing)} section" for name, missing in lacking.items())


def test_the_rule_notices_a_missing_section():
    def documented(x):
        """Double.

        Parameters
        ----------
        x : float

        Returns
        -------
        float
        """
        return 2 * x

    def undocumented(x):
        """Double."""
        return 2 * x

    assert missing_sections(documented) == []
    assert missing_sections(undocumented) == ["Parameters", "Returns"]

"""The README's developer section is true: its code blocks run as they stand, in order, and every
``repscope.*`` name the README mentions exists."""

from __future__ import annotations

import importlib
import re
import sys
import types
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
SECTION_TITLE = "## For developers: the framework"


def developer_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION_TITLE)
    end = text.find("\n## ", start + len(SECTION_TITLE))
    return text[start : end if end != -1 else len(text)]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_the_developer_section_has_runnable_examples():
    blocks = python_blocks(developer_section())
    # a model, its training and run reading, scoring, a dataset, a study
    assert len(blocks) >= 5
    joined = "\n".join(blocks)
    for name in ("MODELS[", "open_run(", "metric(", "DATASETS[", "CommandEntry("):
        assert name in joined, f"the developer examples no longer show {name}"


def test_the_developer_examples_run_in_order(tmp_path, monkeypatch, isolated_home):
    from repscope.data.registry import DATASETS
    from repscope.train.registry import MODELS

    # the examples register a model and a dataset; the registries are left as they were found
    saved = [(registry, dict(registry)) for registry in (MODELS, DATASETS)]
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType("readme_developer_example")  # the examples' __name__
    monkeypatch.setitem(sys.modules, module.__name__, module)
    try:
        for number, block in enumerate(python_blocks(developer_section()), 1):
            exec(compile(block, f"README.md developer block {number}", "exec"), module.__dict__)
        assert module.codes.shape == (200, 4) and module.codes.dtype.name == "float32"
        assert set(module.scores) == {"mig", "sap", "irs"} and all(module.scores.values())
        assert (tmp_path / "runs" / "capped-vae" / "checkpoints").is_dir()
    finally:
        for registry, before in saved:
            registry.clear()
            registry.update(before)


def _exists(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_every_repscope_name_in_the_readme_exists():
    names = set(re.findall(r"\brepscope(?:\.[A-Za-z_][A-Za-z0-9_]*)+", README.read_text(encoding="utf-8")))
    assert names, "the README names no module"
    missing = sorted(name for name in names if not _exists(name))
    assert missing == [], f"the README names what does not exist: {missing}"

"""The shape of the code a newcomer reads: no function over 60 lines of code, no module over its size.

A function is counted from its first statement to its end: lines that hold code, not its docstring
(nor a nested function's or class's), not blank lines, not lines that are only a comment. A nested
function counts in its parent as well as on its own, as a reader sees it. DESIGN: "a function past 60
lines of code [is] a sign it does two things"; the fix is a function per step, named for what it does.
"""

from __future__ import annotations

import ast
from pathlib import Path

import repscope

PACKAGE = Path(repscope.__file__).parent
MAX_FUNCTION_LINES = 60

# the interrupt guard, the display and the Lightning callback are three modules (DESIGN: one idea each)
MAX_PROGRESS_MODULE_LINES = 400


def docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers of every docstring in ``tree`` (module, class and function docstrings)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(source_lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef, docstrings: set[int]) -> int:
    """Lines of code in the body of ``function`` (the signature and decorators are not counted)."""
    count = 0
    for number in range(function.body[0].lineno, function.end_lineno + 1):
        text = source_lines[number - 1].strip()
        if text and not text.startswith("#") and number not in docstrings:
            count += 1
    return count


def function_lengths(path: Path) -> list[tuple[str, int]]:
    """``(name, lines of code)`` of every function and method in the file at ``path``."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    docstrings = docstring_lines(tree)
    lines = source.splitlines()
    return [
        (node.name, code_lines(lines, node, docstrings))
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def test_the_counting_rule_on_a_known_function(tmp_path):
    source = tmp_path / "example.py"
    source.write_text(
        'def f(\n    a,\n):\n    """Doc\n\n    more doc.\n    """\n    # a comment\n    x = 1\n\n'
        '    def g():\n        """inner doc"""\n        return x\n    return g\n'
    )
    assert dict(function_lengths(source)) == {"f": 4, "g": 1}


def test_no_function_over_sixty_lines_of_code():
    long = [
        f"{path.relative_to(PACKAGE)}:{name} ({count} lines)"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name, count in function_lengths(path)
        if count > MAX_FUNCTION_LINES
    ]
    assert long == [], "split these into a function per step (DESIGN, Style)"


def test_progress_modules_hold_one_idea_each():
    sizes = {
        path.name: len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.glob("*.py")
        if "progress" in path.name or "interrupt" in path.name
    }
    assert {name: size for name, size in sizes.items() if size > MAX_PROGRESS_MODULE_LINES} == {}

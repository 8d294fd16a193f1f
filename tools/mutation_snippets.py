"""Without running a test: is each mutation's snippet in its files exactly once, and do its tests exist?

    .venv/bin/python tools/mutation_snippets.py            # every mutation of tools/mutation_check.py
    .venv/bin/python tools/mutation_snippets.py src/repscope/studies/morpho   # those whose files lie there

Prints one line per mutation whose snippet moved or whose test file or function is gone; exit 1 when
any did. A refactor runs this after each move, then ``tools/mutation_check.py NAME`` for the ones it
rewrote (that one runs the tests, minutes each).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mutation_check import MUTATIONS, ROOT  # noqa: E402


def problems(mutation) -> list[str]:
    found = []
    counts = {
        name: (ROOT / name).read_text().count(mutation.original) for name in mutation.files if (ROOT / name).is_file()
    }
    if sum(counts.values()) != 1:
        found.append(f"snippet found {sum(counts.values())} times in {', '.join(mutation.files)}")
    for test in mutation.tests:
        path, _, function = test.partition("::")
        if not (ROOT / path).is_file():
            found.append(f"no test file {path}")
        elif function and f"def {function.split('[')[0].split('::')[-1]}(" not in (ROOT / path).read_text():
            found.append(f"no test {test}")
    return found


def main(prefixes: list[str]) -> int:
    bad = 0
    for mutation in MUTATIONS:
        if prefixes and not any(name.startswith(prefix) for name in mutation.files for prefix in prefixes):
            continue
        for problem in problems(mutation):
            bad += 1
            print(f"{mutation.name}: {problem}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Record ``tests/data/numpy1-argpartition-last.json``: the order ``np.argpartition(column, -1)`` gives
under numpy 1.x, the introselect order the CANDLE authors' fork ran its UC selection on.

Run with a numpy below 2 (numpy 2 on AVX-512 machines hands ``argpartition`` to a SIMD selection whose
order differs), from the repository root::

    python tests/data/record_numpy1_argpartition.py

The columns are fixed here (no random draw): sizes 1 to 12, distinct values, ties, the maximum
first, last, repeated; numpy reads them as float64, as ``reference_selection`` does.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("numpy1-argpartition-last.json")


def columns() -> list[list[float]]:
    """Columns whose orders differ between a sort, a stable top-k and the introselect scan."""
    fixed = [
        [0.5],
        [0.3, 0.6],
        [0.6, 0.3],
        [0.5, 0.5],
        [0.5, 0.2, 0.9],
        [0.9, 0.1, 0.5],
        [0.5, 0.5, 0.1],
        [0.2, 0.2, 0.2],
        [0.1, 0.9, 0.2, 0.8, 0.3],
        [0.7, 0.1, 0.95, 0.8, 0.6],
        [0.4, 0.9, 0.1, 0.9, 0.3],
        [0.7, 0.2, 0.7, 0.1, 0.7],
        [0.3, 0.1, 0.4, 0.2],
        [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
    ]
    # sizes 1-12 in a spread of patterns: k * 7 mod 11 (distinct), k mod 3 (ties), a peak in the middle
    for size in range(1, 13):
        fixed.append([round(((k * 7) % 11) / 10, 1) for k in range(size)])
        fixed.append([float(k % 3) for k in range(size)])
        fixed.append([round(1.0 - abs(k - size // 2) / size, 4) for k in range(size)])
    return fixed


def main() -> None:
    if int(np.__version__.split(".")[0]) >= 2:
        sys.exit(f"record with numpy 1.x (the fork's numpy), not {np.__version__}")
    cases = [
        {"column": column, "order": np.argpartition(np.asarray(column, dtype=np.float64), -1).tolist()}
        for column in columns()
    ]
    provenance = {
        "what": "np.argpartition(np.asarray(column, dtype=np.float64), -1).tolist() for each column",
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "recorded": datetime.date.today().isoformat(),
        "how": "python tests/data/record_numpy1_argpartition.py",
    }
    # one case a line, so that a diff of a re-recording shows the columns whose order changed
    lines = ",\n".join(f"  {json.dumps(case)}" for case in cases)
    OUT.write_text(f'{{"provenance": {json.dumps(provenance)},\n "cases": [\n{lines}\n]}}\n')


if __name__ == "__main__":
    main()

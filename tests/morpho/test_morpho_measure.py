"""``repscope morpho measure`` is a thin shell over :func:`repscope.studies.morpho.measure.measure_source`."""

from __future__ import annotations

import pandas as pd
import pytest

from repscope.data.sources import load_source
from repscope.errors import InvalidArgumentError, OutputExistsError
from repscope.studies.morpho.measure import measure_source


def test_the_command_writes_the_bytes_the_function_writes(tmp_path, run_cli):
    table = measure_source("mnist-sample", tmp_path / "function.csv", limit=12)
    code, out, _ = run_cli(["morpho", "measure", "mnist-sample", "--limit", "12", "-o", str(tmp_path / "cli.csv")])
    assert code == 0 and "measured 12 digits" in out
    assert (tmp_path / "cli.csv").read_bytes() == (tmp_path / "function.csv").read_bytes()
    # the labels of the source's first digits, beside the morphometrics
    labels = load_source("mnist-sample").labels[:12].astype(int).tolist()
    assert table["label"].tolist() == labels
    assert pd.read_csv(tmp_path / "function.csv")["label"].tolist() == labels


def test_bad_arguments_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(InvalidArgumentError, match="^--limit: expected a positive integer, got 0$"):
        measure_source("mnist-sample", tmp_path / "none.csv", limit=0)
    assert not (tmp_path / "none.csv").exists()
    (tmp_path / "kept.csv").write_text("mine\n")
    with pytest.raises(OutputExistsError):
        measure_source("mnist-sample", tmp_path / "kept.csv", limit=3)
    assert (tmp_path / "kept.csv").read_text() == "mine\n"

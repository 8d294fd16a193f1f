"""Table V (``repscope invariance correlate``): feature vs robust-accuracy correlations over a repository.

The repository is written by hand in the layout of ``repscope invariance repo build`` (one folder per
model: ``metadata.json``, ``features.json``, ``matrix_*.npy``); every expected correlation is worked out
below from the definitions, sums written out.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.studies.invariance.correlate import correlate_repository, pearson, read_model_table, spearman

ROBUST = [0.9, 0.7, 0.6, 0.2]
ACCURACY = [0.95, 0.97, 0.90, 0.93]
# features.json of models 000..003
CONF_SQUARE = [0.1, 0.3, 0.4, 0.8]  # = 1 - robust: r = rho = -1
CONF_DISCONTINUITY = [1.0, 2.0, 3.0, 4.0]
CONF_GRADIENT = [2.0, 1.0, 1.0, 5.0]  # a tie
CONV_SQUARE = [0.5, 0.5, 0.5, 0.5]  # constant: undefined
SCALES = [1.0, 2.0, 4.0, 8.0]  # model k's matrices are SCALES[k] * BASE (powers of two scale exactly)
BASE = np.array(
    [
        [0.00, 0.12, 0.25, 0.31, 0.47],
        [0.10, 0.00, 0.14, 0.22, 0.35],
        [0.21, 0.13, 0.00, 0.09, 0.26],
        [0.34, 0.20, 0.11, 0.00, 0.16],
        [0.43, 0.36, 0.24, 0.18, 0.00],
    ]
)

# x = [1, 2, 3, 4] against robust: deviations [-1.5, -0.5, 0.5, 1.5] and [0.3, 0.1, 0, -0.4]
# sum xy = -0.45 - 0.05 + 0 - 0.6 = -1.1, sum xx = 5, sum yy = 0.26
R_DISCONTINUITY = -1.1 / math.sqrt(5 * 0.26)
# ranks [3, 1.5, 1.5, 4] and [4, 3, 2, 1]: deviations [0.5, -1, -1, 1.5] and [1.5, 0.5, -0.5, -1.5]
# sum = 0.75 - 0.5 + 0.5 - 2.25 = -1.5, sums of squares 4.5 and 5
RHO_GRADIENT = -1.5 / math.sqrt(4.5 * 5)
# CONF_SQUARE against accuracy: deviations [-0.3, -0.1, 0, 0.4] and [0.0125, 0.0325, -0.0375, -0.0075]
# sum xy = -0.00375 - 0.00325 + 0 - 0.003 = -0.01; sum yy = 0.00015625 + 0.00105625 + 0.00140625 + 0.00005625
R_SQUARE_ACCURACY = -0.01 / math.sqrt(0.26 * 0.002675)
# scales [1, 2, 4, 8] against robust: deviations [-2.75, -1.75, 0.25, 4.25]; sum xy = -0.825 - 0.175 + 0 - 1.7
R_SCALE = -2.7 / math.sqrt(28.75 * 0.26)


def write_repository(root, count=4, drop_robust=None):
    root.mkdir()
    (root / "repository.json").write_text("{}")
    for k in range(count):
        folder = root / f"{k:03d}"
        folder.mkdir()
        metadata = {"settings": {"augment": "none"}, "accuracy": ACCURACY[k], "robust_accuracy": ROBUST[k]}
        if drop_robust == k:
            del metadata["robust_accuracy"]
        (folder / "metadata.json").write_text(json.dumps(metadata))
        features = {
            "max@CONF": {
                "squared_value_mean": CONF_SQUARE[k],
                "discontinuity": CONF_DISCONTINUITY[k],
                "overall_gradient": CONF_GRADIENT[k],
            },
            "max@CONV-1": {"squared_value_mean": CONV_SQUARE[k]},
        }
        (folder / "features.json").write_text(json.dumps(features))
        np.save(folder / "matrix_max_at_CONF.npy", SCALES[k] * BASE)
        np.save(folder / "matrix_mean_at_CONV-1.npy", SCALES[k] * BASE.T)
    return root


def cell(correlations, modality, feature, target, statistic):
    rows = correlations[
        (correlations["modality"] == modality)
        & (correlations["feature"] == feature)
        & (correlations["target"] == target)
    ]
    assert len(rows) == 1
    return float(rows[statistic].iloc[0])


def test_pearson_and_spearman_by_hand():
    assert pearson(CONF_DISCONTINUITY, ROBUST) == pytest.approx(R_DISCONTINUITY)
    assert spearman(CONF_GRADIENT, ROBUST) == pytest.approx(RHO_GRADIENT)
    assert pearson(CONF_SQUARE, ROBUST) == pytest.approx(-1.0)
    assert math.isnan(pearson(CONV_SQUARE, ROBUST)) and math.isnan(spearman(CONV_SQUARE, ROBUST))
    with pytest.raises(InvalidArgumentError, match="x, y"):
        pearson([1, 2, 3], [1, 2])


def test_correlations_of_a_repository_by_hand(tmp_path):
    repo = write_repository(tmp_path / "repo")
    result = correlate_repository(repo, tmp_path / "out")
    correlations = result["correlations"]
    assert result["models"] == 4 and result["compat"] == "paper"
    assert cell(correlations, "max@CONF", "squared_value_mean", "robust_accuracy", "pearson") == pytest.approx(-1.0)
    assert cell(correlations, "max@CONF", "squared_value_mean", "robust_accuracy", "spearman") == pytest.approx(-1.0)
    assert cell(correlations, "max@CONF", "squared_value_mean", "accuracy", "pearson") == pytest.approx(
        R_SQUARE_ACCURACY
    )
    assert cell(correlations, "max@CONF", "discontinuity", "robust_accuracy", "pearson") == pytest.approx(
        R_DISCONTINUITY
    )
    assert cell(correlations, "max@CONF", "overall_gradient", "robust_accuracy", "spearman") == pytest.approx(
        RHO_GRADIENT
    )
    assert math.isnan(cell(correlations, "max@CONV-1", "squared_value_mean", "robust_accuracy", "pearson"))
    # the files: the long table, the Table V cells (max@CONV-1 has only the square mean), the summary
    written = pd.read_csv(tmp_path / "out" / "correlations.csv")
    assert len(written) == 2 * 4 and set(written["n"]) == {4}
    table = pd.read_csv(tmp_path / "out" / "table5.csv")
    assert list(table.columns) == [
        "target",
        "statistic",
        "max@CONF:squared_value_mean",
        "max@CONV-1:squared_value_mean",
        "max@CONF:discontinuity",
        "max@CONF:overall_gradient",
    ]
    summary = json.loads((tmp_path / "out" / "correlations.json").read_text())
    assert summary["names"] == ["000", "001", "002", "003"] and summary["compat"] == "paper"
    first = summary["table5"][0]
    assert (first["target"], first["statistic"]) == ("robust_accuracy", "pearson")
    assert first["max@CONV-1:squared_value_mean"] is None  # undefined: null, not NaN
    assert first["max@CONF:discontinuity"] == pytest.approx(R_DISCONTINUITY)


def test_compat_reference_recomputes_from_the_matrices(tmp_path):
    repo = write_repository(tmp_path / "repo")
    table = read_model_table(repo, compat="reference")
    assert "max@CONF:mean_reference" in table.columns and "mean@CONV-1:asymmetry_reference" in table.columns
    assert not any(column.endswith(":sensitivity_reference") for column in table.columns)
    assert not any(column.endswith(":discontinuity") for column in table.columns)  # features.json unused
    correlations = correlate_repository(repo, tmp_path / "out", compat="reference")["correlations"]
    # every element scales with the matrix: the mean is linear in the scale, the square mean quadratic
    # (so its ranks are the scale's), a ratio of two such means does not move (constant: undefined)
    mean_r = cell(correlations, "max@CONF", "mean_reference", "robust_accuracy", "pearson")
    assert mean_r == pytest.approx(R_SCALE)
    assert cell(correlations, "mean@CONV-1", "squared_value_mean_reference", "robust_accuracy", "spearman") == (
        pytest.approx(-1.0)
    )
    assert math.isnan(cell(correlations, "max@CONF", "asymmetry_reference", "robust_accuracy", "pearson"))
    columns = pd.read_csv(tmp_path / "out" / "table5.csv").columns
    assert "max@CONF:squared_value_mean_reference" in columns and "mean@CONV-1:discontinuity_reference" in columns
    assert json.loads((tmp_path / "out" / "correlations.json").read_text())["compat"] == "reference"


def test_too_few_models_or_no_robust_accuracy_is_refused(tmp_path):
    with pytest.raises(InvalidArgumentError, match="2 finished model.*at least 3"):
        read_model_table(write_repository(tmp_path / "two", count=2))
    with pytest.raises(DataFormatError, match="model 002 has no robust_accuracy"):
        read_model_table(write_repository(tmp_path / "blind", drop_robust=2))
    with pytest.raises(InvalidArgumentError, match="not a folder"):
        read_model_table(tmp_path / "missing")
    with pytest.raises(InvalidArgumentError, match="compat"):
        read_model_table(tmp_path / "two", compat="released")


def test_cli_correlate_end_to_end(tmp_path, run_cli):
    repo = write_repository(tmp_path / "repo")
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(["invariance", "correlate", str(repo), "-o", str(out)])
    assert code == 0, stderr
    assert "Table V over 4 models (compat paper)" in stdout
    line = next(text for text in stdout.splitlines() if text.startswith("max@CONF:discontinuity"))
    assert line.split()[1] == f"{R_DISCONTINUITY:.2f}" and line.split()[-3:] == ["-0.53", "/", "-0.06"]
    assert (out / "table5.csv").exists()
    code, _, stderr = run_cli(["invariance", "correlate", str(repo), "-o", str(out)])
    assert code == 1 and "exists" in stderr
    code, stdout, _ = run_cli(["invariance", "correlate", str(repo), "-o", str(out), "--compat", "reference"])
    assert code == 1  # still refused without --overwrite
    code, stdout, stderr = run_cli(
        ["invariance", "correlate", str(repo), "-o", str(out), "--compat", "reference", "--overwrite"]
    )
    assert code == 0, stderr
    assert "max@CONF:squared_value_mean_reference" in stdout
    assert json.loads((out / "correlations.json").read_text())["compat"] == "reference"
    two = write_repository(tmp_path / "two", count=2)
    code, _, stderr = run_cli(["invariance", "correlate", str(two), "-o", str(tmp_path / "out2")])
    assert code == 1 and "at least 3" in stderr and len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out2").exists()
    blind = write_repository(tmp_path / "blind", drop_robust=0)
    code, _, stderr = run_cli(["invariance", "correlate", str(blind), "-o", str(tmp_path / "out3")])
    assert code == 1 and "robust_accuracy" in stderr and len(stderr.strip().splitlines()) == 1

"""The three Morpho-MNIST studies end to end at tiny sizes on real digits, and their CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from repscope.cli import app, main
from repscope.config import load_config, shipped_config_path
from repscope.studies.morpho_disentangle import DisentangleConfig, run_disentangle
from repscope.studies.morpho_diversity import DiversityConfig, run_diversity
from repscope.studies.morpho_supervised import SupervisedConfig, run_supervised

TINY_DATA = {"source": "mnist-sample", "seed": 0, "max_train": 300, "max_test": 120}
TINY_TRAINING = {"trainer": {"max_epochs": 1}, "batch_size": 32}


@pytest.fixture(scope="module", autouse=True)
def shared_home(tmp_path_factory):
    """One REPSCOPE_HOME for the module, so the tiny Morpho-MNIST build is made once."""
    mp = pytest.MonkeyPatch()
    mp.setenv("REPSCOPE_HOME", str(tmp_path_factory.mktemp("home")))
    yield
    mp.undo()


def test_shipped_study_configs_are_valid_and_match_the_paper():
    diversity = load_config(shipped_config_path("morpho-diversity"), DiversityConfig)
    assert [(m.name, m.params.get("latent_dim")) for m in diversity.models] == [("beta-vae", 64), ("gan", 64), ("gan", 2)]
    assert diversity.models[0].params["beta"] == 4.0 and diversity.samples == 10000
    disentangle = load_config(shipped_config_path("morpho-disentangle"), DisentangleConfig)
    assert [s.setting for s in disentangle.settings] == ["A", "B", "C"]
    assert disentangle.training.trainer.max_epochs == 20 and disentangle.training.batch_size == 64
    supervised = load_config(shipped_config_path("morpho-supervised"), SupervisedConfig)
    assert supervised.models == ["knn", "svm", "mlp", "lenet5"]


def test_supervised_study_fills_table_3(tmp_path):
    config = SupervisedConfig(data=TINY_DATA, training=TINY_TRAINING)
    report = run_supervised(config, out=tmp_path / "run")
    table = pd.read_csv(tmp_path / "run" / "tables" / "table3.csv")
    assert list(table["Model"]) == ["kNN", "SVM", "MLP", "LeNet-5"]
    assert list(table.columns[1:]) == ["Digit recognition PLAIN (%)", "Digit recognition LOCAL (%)",
                                       "Abnormality detection (%)", "Thickness regression (RMSE, px)"]
    accuracy = table.iloc[:, 1:4].to_numpy()
    assert np.all((accuracy >= 0) & (accuracy <= 100))
    assert table.loc[0, "Digit recognition PLAIN (%)"] > 60  # kNN on 300 real digits; chance is 10
    # thickness: kNN must beat predicting the mean thickness of the global set
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    baseline = metrics["baseline_constant_prediction"]
    assert metrics["table3"]["kNN"]["Thickness regression (RMSE, px)"] < 0.6 * baseline["thickness"]
    assert 55 < baseline["abnormality"] < 78  # two thirds of LOCAL digits are perturbed
    assert baseline["recognition"] < 20
    assert set(metrics["table3"]) == {"kNN", "SVM", "MLP", "LeNet-5"}
    assert (tmp_path / "run" / "models" / "lenet5-recognition" / "checkpoints" / "final.ckpt").exists()
    assert report.exists() and "Table 3" in report.read_text()


def test_diversity_study_writes_mmd_table_and_pairplots(tmp_path):
    config = DiversityConfig(
        data=TINY_DATA, training=TINY_TRAINING, samples=300, permutations=50,
        models=[{"label": "GAN 2-d", "name": "gan", "params": {"latent_dim": 2}},
                {"label": "VAE 8-d", "name": "beta-vae", "params": {"latent_dim": 8}}],
    )
    run_diversity(config, out=tmp_path / "run")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert set(metrics["models"]) == {"GAN 2-d", "VAE 8-d"}
    for model in metrics["models"].values():
        assert 0.0 <= model["p_value"] <= 1.0 and 0.0 < model["quadratic_p_value"] <= 1.0
        assert model["mmd2_std_error"] > 0
    figures = {p.name for p in (tmp_path / "run" / "figures").iterdir()}
    assert {"pairplot_test-digits.png", "pairplot_gan-2-d.png", "diversity_samples.png"} <= figures


def test_disentangle_study_partial_correlation_matrices(tmp_path):
    config = DisentangleConfig(data=TINY_DATA, training=TINY_TRAINING, settings=[{"label": "InfoGAN-A", "setting": "A"}],
                               generated_samples=200, traversal_rows=2, traversal_steps=5)
    run_disentangle(config, out=tmp_path / "run")
    matrix = pd.read_csv(tmp_path / "run" / "tables" / "infogan-a_inferential_partial_correlations.csv").set_index("factor")
    assert list(matrix.index) == ["length", "thickness", "slant", "width", "height"]
    assert len(matrix.columns) == 12  # ten category dummies of c1, then c2 and c3
    values = matrix.to_numpy(float)
    assert np.nanmax(np.abs(values)) <= 1.0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert set(metrics["settings"]["InfoGAN-A"]["inferential_strongest"]) == set(matrix.index)
    assert (tmp_path / "run" / "figures" / "infogan-a_traversal_c1.png").exists()


def test_study_cli_quick_with_overrides_and_errors(tmp_path, capsys):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "morpho", "supervised", "--quick", "--out", str(out),
        "--set", "models=[knn]", "--set", "tasks=[recognition]",
        "--set", "data.max_train=200", "--set", "data.max_test=100",
    ])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith(f"report: {out / 'report.html'}")
    assert list(pd.read_csv(out / "tables" / "table3.csv")["Model"]) == ["kNN"]
    with pytest.raises(SystemExit) as info:
        main(["morpho", "diversity", "--set", "sample=5", "--out", str(tmp_path / "other")])
    assert info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown key sample" in err[0] and "morpho-diversity.yaml" in err[0]
    assert not (tmp_path / "other").exists()

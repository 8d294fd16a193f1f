"""The three Morpho-MNIST studies end to end at tiny sizes on real digits, and their CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from browser_checks import assert_report_passes_browser_check  # tests/browser_checks.py
from repscope.cli import app, main
from repscope.config import load_config, shipped_config_path
from repscope.studies.morpho.diversity import DiversityConfig
from repscope.studies.morpho.infogan import DisentangleConfig, run_disentangle
from repscope.studies.morpho.supervised import SupervisedConfig, run_supervised

TINY_DATA = {"source": "mnist-sample", "seed": 0, "train_size": 300, "test_size": 120}
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
    assert [(m.name, m.params.get("latent_dim")) for m in diversity.models] == [
        ("beta-vae", 64),
        ("gan", 64),
        ("gan", 2),
    ]
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
    assert list(table.columns[1:]) == [
        "Digit recognition PLAIN (%)",
        "Digit recognition LOCAL (%)",
        "Abnormality detection (%)",
        "Thickness regression (RMSE, px)",
    ]
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


def test_disentangle_study_partial_correlation_matrices(tmp_path):
    config = DisentangleConfig(
        data=TINY_DATA,
        training=TINY_TRAINING,
        settings=[{"label": "InfoGAN-A", "setting": "A"}],
        generated_samples=200,
        traversal_rows=2,
        traversal_steps=5,
    )
    run_disentangle(config, out=tmp_path / "run")
    matrix = pd.read_csv(tmp_path / "run" / "tables" / "infogan-a_inferential_partial_correlations.csv").set_index(
        "factor"
    )
    assert list(matrix.index) == ["length", "thickness", "slant", "width", "height"]
    assert len(matrix.columns) == 12  # ten category dummies of c1, then c2 and c3
    values = matrix.to_numpy(float)
    assert np.nanmax(np.abs(values)) <= 1.0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert set(metrics["settings"]["InfoGAN-A"]["inferential_strongest"]) == set(matrix.index)
    assert (tmp_path / "run" / "figures" / "infogan-a_traversal_c1.png").exists()


def test_study_cli_quick_with_overrides_and_errors(tmp_path, capsys):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "morpho",
            "supervised",
            "--quick",
            "--out",
            str(out),
            "--set",
            "models=[knn]",
            "--set",
            "tasks=[recognition]",
            "--set",
            "data.train_size=200",
            "--set",
            "data.test_size=100",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith(f"report: {out / 'report.html'}")
    assert list(pd.read_csv(out / "tables" / "table3.csv")["Model"]) == ["kNN"]
    with pytest.raises(SystemExit) as info:
        main(["morpho", "diversity", "--set", "sample=5", "--out", str(tmp_path / "other")])
    assert info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown key sample" in err[0] and "morpho-diversity.yaml" in err[0]
    assert not (tmp_path / "other").exists()


# ------------------------------------------------------------------ which split each number uses
# The numbers of a run directory recomputed independently from the data, so a study that measures
# the wrong split (training digits as the reference, PLAIN digits in the LOCAL column) fails.

SPLIT_OVERRIDES = [
    "--set",
    "data.source=mnist-sample",
    "--set",
    "data.seed=0",
    "--set",
    "data.train_size=300",
    "--set",
    "data.test_size=120",
]


def tiny_set(name: str, target: str):
    from repscope.data.morpho.training_sets import load_morpho_mnist

    return load_morpho_mnist(set=name, target=target, source="mnist-sample", seed=0, train_size=300, test_size=120)


def knn_score(train, test, regression: bool = False) -> float:
    """The paper's kNN (k = 5, inverse-distance weights, l1) on images scaled to [0, 1], by hand."""
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

    model = (KNeighborsRegressor if regression else KNeighborsClassifier)(n_neighbors=5, weights="distance", p=1)
    model.fit(train.train_images.reshape(len(train.train_images), -1).astype(np.float32) / 255.0, train.train_targets)
    predicted = model.predict(test.test_images.reshape(len(test.test_images), -1).astype(np.float32) / 255.0)
    if regression:
        return float(np.sqrt(np.mean((np.asarray(predicted, np.float64) - test.test_targets) ** 2)))
    return float(np.mean(predicted == test.test_targets) * 100.0)


def test_supervised_columns_use_the_right_test_split(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "morpho",
            "supervised",
            "--quick",
            "--out",
            str(out),
            "--set",
            "models=[knn]",
            "--set",
            "tasks=[recognition, abnormality, thickness]",
            *SPLIT_OVERRIDES,
        ],
    )
    assert result.exit_code == 0, result.output
    row = pd.read_csv(out / "tables" / "table3.csv").set_index("Model").loc["kNN"]
    plain, local = tiny_set("plain", "label"), tiny_set("local", "label")
    # LOCAL holds the same digits as PLAIN, two thirds of them perturbed
    assert len(local.test_images) == len(plain.test_images) == 120
    assert not np.array_equal(local.test_images, plain.test_images)
    assert row["Digit recognition PLAIN (%)"] == pytest.approx(knn_score(plain, plain), abs=1e-9)
    assert row["Digit recognition LOCAL (%)"] == pytest.approx(knn_score(plain, local), abs=1e-9)
    abnormal = tiny_set("local", "abnormal")
    assert row["Abnormality detection (%)"] == pytest.approx(knn_score(abnormal, abnormal), abs=1e-9)
    thickness = tiny_set("global", "thickness")
    assert row["Thickness regression (RMSE, px)"] == pytest.approx(
        knn_score(thickness, thickness, regression=True), rel=1e-6
    )


def test_diversity_compares_samples_with_the_test_digits(tmp_path):
    from repscope.data.morpho import measure
    from repscope.metrics.mmd import mmd_quadratic_test

    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "morpho",
            "diversity",
            "--quick",
            "--out",
            str(out),
            *SPLIT_OVERRIDES,
            "--set",
            "models=[{label: VAE 4-d, name: beta-vae, params: {latent_dim: 4}}, "
            "{label: GAN 2-d, name: gan, params: {latent_dim: 2}}]",
            "--set",
            "training.trainer.max_epochs=1",
            "--set",
            "samples=200",
            "--set",
            "permutations=20",
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    from repscope.data.morpho.training_sets import load_digits

    # the models learn the source digits (not the re-rendered Morpho-MNIST plain set): their test split
    test_digits = load_digits(source="mnist-sample", seed=0, train_size=300, test_size=120).test_images
    assert metrics["test_digits"] == len(test_digits) == 120  # 270 or 300 would be training digits
    columns = metrics["morphometrics"]
    reference = measure(test_digits)
    samples = pd.read_csv(out / "tables" / "samples_vae-4-d_morphometrics.csv")
    valid = samples["valid"].astype(bool)
    # fewer digits than quadratic_max_samples: the quadratic statistic uses them all, in any order
    expected = mmd_quadratic_test(
        reference.loc[reference["valid"], columns].to_numpy(float),
        samples.loc[valid, columns].to_numpy(float),
        permutations=10,
        rng=0,
    )["mmd2"]
    assert metrics["models"]["VAE 4-d"]["quadratic_mmd2"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    # every model gets its tests, a standard error and a pair plot beside the test digits
    assert set(metrics["models"]) == {"VAE 4-d", "GAN 2-d"}
    for model in metrics["models"].values():
        assert 0.0 <= model["p_value"] <= 1.0 and 0.0 < model["quadratic_p_value"] <= 1.0
        assert model["mmd2_std_error"] > 0
    figures = {p.name for p in (out / "figures").iterdir()}
    assert {"pairplot_test-digits.png", "pairplot_gan-2-d.png", "diversity_samples.png"} <= figures
    assert_report_passes_browser_check(out / "report.html")  # as a researcher sees it: tables fit, figures load


def test_each_trained_model_is_named_with_its_place_in_the_study(tmp_path, monkeypatch):
    """Progress bars say which model trains and how many are left (the study trains several in a row)."""
    import repscope.studies.common as common

    descriptions = []
    real_fit = common.fit

    def recording_fit(config, **kwargs):
        descriptions.append(kwargs.get("description"))
        return real_fit(config, **kwargs)

    monkeypatch.setattr(common, "fit", recording_fit)
    config = SupervisedConfig(
        data=TINY_DATA, training=TINY_TRAINING, models=["knn", "mlp", "lenet5"], tasks=["recognition", "thickness"]
    )
    run_supervised(config, out=tmp_path / "run")
    assert descriptions == [
        "training mlp-recognition (1 of 4)",
        "training lenet5-recognition (2 of 4)",
        "training mlp-thickness (3 of 4)",
        "training lenet5-thickness (4 of 4)",
    ]


def test_supervised_compute_needs_no_run_directory(tmp_path, monkeypatch):
    """A Python user gets Table 3 from compute_supervised alone: a result, no file written."""
    from repscope.errors import InvalidArgumentError
    from repscope.studies.morpho.supervised import SupervisedResult, compute_supervised

    monkeypatch.chdir(tmp_path)
    config = SupervisedConfig(data=TINY_DATA, training=TINY_TRAINING, models=["knn"], tasks=["recognition"])
    result = compute_supervised(config, networks={})
    assert isinstance(result, SupervisedResult) and list(tmp_path.iterdir()) == []
    assert list(result.table["Model"]) == ["kNN"]
    assert result.columns == ["Digit recognition PLAIN (%)", "Digit recognition LOCAL (%)"]
    assert [(e["tested_on"], e["value"]) for e in result.evaluations] == [
        ("plain", result.table.loc[0, "Digit recognition PLAIN (%)"]),
        ("local", result.table.loc[0, "Digit recognition LOCAL (%)"]),
    ]
    assert result.metrics["baseline_constant_prediction"] == result.chance
    # a neural model needs its trained network
    with pytest.raises(InvalidArgumentError, match="networks: no trained network 'mlp-recognition'"):
        compute_supervised(config.model_copy(update={"models": ["mlp"]}), networks={})

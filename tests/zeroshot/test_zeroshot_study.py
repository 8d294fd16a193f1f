"""The Raw Zero-Shot study end to end on a few hundred MNIST-sample digits: n + 1 trainings per
architecture on the sweep runner, soft-label files that reproduce the reported metrics, attacks, the
rank correlations, --resume, and the one-architecture command."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from repscope.data.zeroshot.softlabels import read_soft_labels
from repscope.metrics.zeroshot import zero_shot_scores
from repscope.studies.zeroshot.study import ZeroShotConfig, chosen_architectures, quick, soft_label_rows

# three cheap registered classifiers: enough for a rank correlation
TINY = {
    "data": {"name": "digits", "params": {"source": "mnist-sample", "train_size": 400, "test_size": 150}},
    "architectures": [
        {"label": "LeNet", "name": "lenet5"},
        {"label": "MLP", "name": "mlp"},
        {"label": "CNN5", "name": "cnn5"},
    ],
    "training": {"trainer": {"max_epochs": 1}, "batch_size": 32},
    "soft_label_n": 8,
    "attack": {"n": 2, "thresholds": [1, 10], "budget": 3},
    "projection_n": 8,
}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    from repscope.cli import main

    folder = tmp_path_factory.mktemp("zeroshot")
    config = folder / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    try:
        # one worker: in a test process beside pytest's other worker, two more processes (each importing Lightning)
        # cost more than they save; the sweep runner's worker pool is tested in test_sweeps and repo build
        main(["zeroshot", "study", str(config), "--out", str(folder / "run"), "--workers", "1"])
    except SystemExit as exit_:
        assert not exit_.code
    return folder


def test_the_soft_label_files_hold_each_unknown_class_and_reproduce_the_metrics(study):
    run = study / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["classes"] == 10
    table = pd.read_csv(run / "tables" / "representation.csv")
    assert table["architecture"].tolist() == ["LeNet", "MLP", "CNN5"]
    for label in ("LeNet", "MLP", "CNN5"):
        data = read_soft_labels(run / "softlabels" / f"{label.lower()}.npz")
        assert data.num_classes == 10
        # 8 kept images of every class, n - 1 = 9 outputs without it, 10 with
        assert [e.shape for e in data.loo] == [(8, 9)] * 10
        assert [e.shape for e in data.full] == [(8, 10)] * 10
        scores = zero_shot_scores(data.loo, data.full)
        row = table.set_index("architecture").loc[label]
        for key in ("dbi", "davies_bouldin", "am", "am_per_image"):
            assert row[key] == pytest.approx(scores[key], rel=1e-5), (label, key)
            assert metrics["architectures"][label][key] == pytest.approx(scores[key], rel=1e-5)
        assert 0 < row["accuracy"] <= 1


def test_each_model_without_a_class_never_trained_on_it(study):
    models = study / "run" / "models"
    summary = pd.read_csv(models / "summary.csv")
    assert len(summary) == 33 and (summary["status"] == "done").all()
    for excluded in (0, 7):
        config = yaml.safe_load((models / f"arch-LeNet_excluded-{excluded}" / "train" / "config.yaml").read_text())
        assert config["data"] == {
            "name": "leave-class-out",
            "params": {"base": "digits", "base_params": TINY["data"]["params"], "excluded": excluded},
        }
        outputs = np.load(models / f"arch-LeNet_excluded-{excluded}" / "softlabels.npy")
        assert outputs.shape == (8, 9)
    # 400 training digits, 40 a class: a model without one class trains on 360 of them (less validation)
    rows = summary.set_index("name")
    assert rows.loc["arch-MLP_excluded-3", "train_images"] < rows.loc["arch-MLP_excluded-full", "train_images"]


def test_attacks_and_their_correlation_with_the_metrics(study):
    run = study / "run"
    attacks = pd.read_csv(run / "tables" / "attacks.csv")
    assert list(attacks.columns) == [
        "architecture",
        "l0_th1",
        "l0_th10",
        "l0_total",
        "linf_th1",
        "linf_th10",
        "linf_total",
        "total",
    ]
    assert (attacks[["l0_th1", "l0_th10", "linf_th1", "linf_th10"]] <= 2).all().all()
    assert (attacks["total"] == attacks["l0_total"] + attacks["linf_total"]).all()
    # every architecture was attacked on the same images, each classified correctly by all three
    with np.load(run / "attacks" / "images.npz") as chosen:
        index = chosen["index"]
    for label in ("LeNet", "MLP", "CNN5"):
        correct = np.load(run / "models" / f"arch-{label}_excluded-full" / "correct.npy")
        assert correct[index].all()
        per_image = pd.read_csv(run / "attacks" / f"arch-{label}_norm-linf_threshold-10" / "attack.csv")
        assert per_image["image"].tolist() == index.tolist()
    correlations = pd.read_csv(run / "tables" / "correlations.csv")
    assert set(correlations["metric"]) == {"dbi", "davies_bouldin", "am", "am_per_image", "accuracy"}
    assert correlations["rho"].dropna().between(-1, 1).all()
    report = (run / "report.html").read_text()
    assert "Table 1" in report and "Spearman" in report
    for figure in ("isomap", "tsne", "amalgam_histograms", "amalgam_differences", "amalgam_by_class"):
        assert (run / "figures" / f"{figure}.png").exists()


def test_resume_reuses_finished_work_and_refuses_another_config(study, run_cli):
    run = study / "run"
    stamps = {path: path.stat().st_mtime_ns for path in (run / "models").glob("*/softlabels.npy")}
    code, _, err = run_cli(["zeroshot", "study", str(study / "tiny.yaml"), "--out", str(run)])
    assert code == 1 and "--resume" in err
    # a run started before a setting existed (attack.search) resumes with its default
    stored = yaml.safe_load((run / "config.yaml").read_text())
    assert stored["attack"].pop("search") == "art"
    (run / "config.yaml").write_text(yaml.safe_dump(stored))
    code, out, err = run_cli(["zeroshot", "study", str(study / "tiny.yaml"), "--out", str(run), "--resume"])
    assert code == 0 and "report:" in out, err
    assert {path: path.stat().st_mtime_ns for path in stamps} == stamps  # nothing retrained
    code, _, err = run_cli(
        ["zeroshot", "study", str(study / "tiny.yaml"), "--out", str(run), "--resume", "--set", "seed=5"]
    )
    assert code == 1 and "was started with seed 0, now 5 (on resume only --workers" in err and err.count("\n") == 1


def test_one_architecture_command(tmp_path, run_cli):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, "attack": {"n": 1, "thresholds": [1], "norms": ["l0"], "budget": 2}}))
    code, out, err = run_cli(["zeroshot", "evaluate", "MLP", "--config", str(config), "--out", str(tmp_path / "mlp")])
    assert code == 0, err
    table = pd.read_csv(tmp_path / "mlp" / "tables" / "representation.csv")
    assert table["architecture"].tolist() == ["MLP"]
    assert not (tmp_path / "mlp" / "tables" / "correlations.csv").exists()  # one model: nothing to rank
    code, _, err = run_cli(
        ["zeroshot", "evaluate", "no-such-net", "--config", str(config), "--out", str(tmp_path / "x")]
    )
    assert code == 1 and "no-such-net" in err and not (tmp_path / "x").exists()


def test_default_architectures_and_quick():
    from repscope.config import load_config, shipped_config_path

    config = ZeroShotConfig()
    # the shipped config is the schema's defaults written out
    assert load_config(shipped_config_path("zeroshot-fashion"), ZeroShotConfig) == config
    assert [a.label for a in config.architectures] == ["CapsNet", "AllConv", "ResNet", "NIN", "LeNet"]
    assert config.data.params["source"] == "fashion-mnist"
    assert config.attack.thresholds == [1, 3, 5, 10] and config.attack.n == 100
    small = quick(config)
    assert small.training.trainer.max_epochs == 1 and small.data.params["train_size"] == 1500
    assert small.attack.n <= 4 and small.attack.budget <= 10
    assert [a.label for a in chosen_architectures(config.model_copy(update={"arch": "capsnet"}))] == ["CapsNet"]


def test_soft_label_rows_are_a_seeded_draw_per_class():
    labels = np.repeat(np.arange(3), [5, 2, 9])
    rows = soft_label_rows(labels, 3, 4, seed=0)
    assert [len(r) for r in rows] == [4, 2, 4]
    assert all((labels[r] == k).all() for k, r in enumerate(rows))
    assert [r.tolist() for r in rows] == [r.tolist() for r in soft_label_rows(labels, 3, 4, seed=0)]
    assert [len(r) for r in soft_label_rows(labels, 3, None, seed=0)] == [5, 2, 9]


def test_attack_command_on_a_trained_classifier(tmp_path, run_cli):
    from repscope.train.config import TrainConfig
    from repscope.train.fitting import fit, load_task

    config = TrainConfig(
        model={"name": "lenet5"},
        data={"name": "digits", "params": {"train_size": 300, "test_size": 60}},
        trainer={"max_epochs": 2, "logger": "none"},
        batch_size=32,
    )
    fit(config, out=tmp_path / "lenet", report=False)
    args = ["zeroshot", "attack", "--model", str(tmp_path / "lenet"), "--n", "3", "--threshold", "1"]
    args += ["--threshold", "10", "--budget", "3"]
    code, out, err = run_cli([*args, "--out", str(tmp_path / "a")])
    assert code == 0, err
    counts = pd.read_csv(tmp_path / "a" / "counts.csv")
    assert list(zip(counts["norm"], counts["threshold"])) == [("l0", 1), ("l0", 10), ("linf", 1), ("linf", 10)]
    assert (counts["images"] == 3).all() and (counts["successes"] <= 3).all()
    per_image = pd.read_csv(tmp_path / "a" / "attacks.csv")
    # only images the model gets right are attacked, each once per norm and threshold
    task = load_task(tmp_path / "lenet")
    from repscope.data.registry import load_dataset

    test = load_dataset("digits", train_size=300, test_size=60).arrays("test", ["image", "target"])
    attacked = per_image["image"].unique()
    assert len(attacked) == 3 and (task.predict(test["image"][attacked]) == test["target"][attacked]).all()
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert metrics["totals"]["total"] == counts["successes"].sum()
    code, _, _ = run_cli([*args, "--out", str(tmp_path / "b")])
    assert (tmp_path / "b" / "attacks.csv").read_bytes() == (tmp_path / "a" / "attacks.csv").read_bytes()
    code, _, err = run_cli([*args, "--norm", "l2", "--out", str(tmp_path / "c")])
    assert code == 1 and "--norm" in err and err.count("\n") == 1 and not (tmp_path / "c").exists()


@pytest.mark.slow  # 11 trainings; make test keeps test_one_architecture_command and the CIFAR-10 reader's tests
def test_one_architecture_on_cifar10_colour_images(tmp_path, run_cli):
    # CIFAR-10 batches in the published binary layout (1 label byte + 3 x 1,024 bytes a record)
    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    for name, count in (("data_batch_1.bin", 60), ("test_batch.bin", 30)):
        labels = np.arange(count) % 10
        images = rng.integers(0, 256, size=(count, 3 * 32 * 32), dtype=np.uint8)
        (folder / name).write_bytes(np.concatenate([labels[:, None].astype(np.uint8), images], axis=1).tobytes())
    config = tmp_path / "cifar.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                **TINY,
                "data": {"name": "cifar10", "params": {"data_dir": str(tmp_path)}},
                "architectures": [
                    {"label": "AllConv", "name": "allconv", "params": {"network_params": {"width": 0.1}}}
                ],
                "attack": {"n": 1, "thresholds": [1], "norms": ["linf"], "budget": 2},
            }
        )
    )
    code, _, err = run_cli(["zeroshot", "evaluate", "AllConv", "--config", str(config), "--out", str(tmp_path / "run")])
    assert code == 0, err
    soft = read_soft_labels(tmp_path / "run" / "softlabels" / "allconv.npz")
    assert soft.num_classes == 10
    # each model without class i saw class i's 3 test images and answers over the 9 other classes
    assert all(soft.loo[i].shape == (3, 9) and soft.full[i].shape == (3, 10) for i in range(10))
    table = pd.read_csv(tmp_path / "run" / "tables" / "representation.csv")
    assert table["dbi"].iloc[0] == pytest.approx(zero_shot_scores(soft.loo, soft.full)["dbi"], rel=1e-5)

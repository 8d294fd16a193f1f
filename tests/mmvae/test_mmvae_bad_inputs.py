"""Bad input to ``repscope mmvae train|sweep|evaluate``, refused in one line before any work, leaving nothing
behind: a sweep continued with other settings, an empty config or ``modalities: {}``, evaluation settings the
evaluation would refuse after training, and a checkpoint whose weights are not finite."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from repscope.errors import DataFormatError, InvalidArgumentError

TINY = [
    "data.train_size=96",
    "data.val_size=32",
    "data.test_size=32",
    "batch_size=32",
    "latent_dim=4",
    "modalities.image.params.hidden=32",
    "modalities.text.params.width=16",
    "modalities.text.params.layers=1",
    "modalities.text.params.hidden=32",
]


def sets(*items: str) -> list[str]:
    return [part for item in items for part in ("--set", item)]


def files(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("repscope: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def no_training(monkeypatch):
    """``fit`` of the multimodal command fails the test: a refusal must come before any training."""

    def fit(*args, **kwargs):
        raise AssertionError("a model was trained")

    monkeypatch.setattr("repscope.studies.multimodal.train.fit", fit)


# --------------------------------------------------------------------------------------------
# a sweep continued with other settings


@pytest.fixture
def fake_points(monkeypatch, tmp_path):
    """The sweep's target replaced by a stand-in that records its calls (the sweep runs it in this process)."""
    called: list[list[str]] = []

    def sweep_point(overrides, run_dir, resume, config=None, base_overrides=None, quick=False):
        called.append([*(base_overrides or []), *overrides])
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        return {"test_loss": float(len(called))}

    monkeypatch.setattr("repscope.studies.multimodal.train.sweep_point", sweep_point)
    return called


def test_a_sweep_continued_with_another_set_or_grid_is_refused_naming_it(tmp_path, run_cli, fake_points):
    out = tmp_path / "sweep"
    base = ["mmvae", "sweep", "--grid", "model=mvae,mopoe", "-o", str(out), *sets(*TINY)]
    code, _, err = run_cli(base)
    assert code == 0, err
    assert len(fake_points) == 2
    before = files(out)

    code, _, err = run_cli([*base, "--resume", *sets("latent_dim=8")])
    line = one_error_line(err)
    assert code == 1 and line.startswith(
        f"repscope: error: --resume: {out} was started with latent_dim 4, now 8 (on resume only --workers, "
    ), line
    assert line.endswith("may change: use the settings it was started with, or another --out)"), line
    code, _, err = run_cli(["mmvae", "sweep", "--grid", "model=mvae", "-o", str(out), "--resume", *sets(*TINY)])
    assert code == 1 and "was started with --grid model=mvae,mopoe, not model=mvae;" in one_error_line(err)
    code, _, err = run_cli([*base, "--resume", *sets("evaluation.k=3")])  # a nested key is named whole
    assert code == 1 and "was started with evaluation.k 30, now 3 (" in one_error_line(err)
    code, _, err = run_cli([*base, "--resume", "--quick"])  # --quick shrinks the config: every change named
    line = one_error_line(err)
    assert code == 1 and (
        "was started with epochs 10, now 3; evaluation.n 1000, now 200; evaluation.k 30, now 10; "
        "evaluation.n_analysis 1000, now 200 (" in line
    ), line
    assert files(out) == before and len(fake_points) == 2  # nothing ran, nothing was rewritten

    # the same settings (in another order) and more workers continue it: nothing runs again
    shuffled = ["mmvae", "sweep", "--grid", "model=mvae,mopoe", "-o", str(out), *sets(*TINY[::-1])]
    code, output, err = run_cli([*shuffled, "--resume", "--workers", "2"])
    assert code == 0, err
    assert "sweep: 2 runs, 0 failed" in output and len(fake_points) == 2


# --------------------------------------------------------------------------------------------
# configs that would train defaults


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "missing key model; missing key data"),
        ("# nothing but a comment\n", "missing key model; missing key data"),
        ("model: mvae\n", "missing key data"),
    ],
)
def test_an_empty_config_is_refused_as_repscope_train_refuses_one(tmp_path, run_cli, no_training, text, expected):
    config = tmp_path / "empty.yaml"
    config.write_text(text)
    for verb in (["train"], ["sweep", "--grid", "seed=0,1"]):
        out = tmp_path / f"out-{verb[0]}"
        code, _, err = run_cli(["mmvae", *verb, str(config), "-o", str(out)])
        line = one_error_line(err)
        assert code == 1 and line.startswith(f"repscope: error: config {config}: {expected}"), line
        assert not out.exists()


def test_modalities_that_name_none_are_refused_naming_the_key(tmp_path, run_cli, no_training):
    config = tmp_path / "none.yaml"
    config.write_text(yaml.safe_dump({"model": "mvae", "data": {"name": "cdsprites", "level": 1}, "modalities": {}}))
    code, _, err = run_cli(["mmvae", "train", str(config), "-o", str(tmp_path / "out")])
    line = one_error_line(err)
    assert code == 1 and f"config {config}" in line and "key modalities: Value error, names no modality" in line
    assert not (tmp_path / "out").exists()
    # the same through --set on the shipped config
    code, _, err = run_cli(["mmvae", "train", "-o", str(tmp_path / "out"), *sets("modalities={}")])
    assert code == 1 and "--set modalities={}: key modalities: Value error, names no modality" in one_error_line(err)


# --------------------------------------------------------------------------------------------
# evaluation settings, checked before training and named as the user wrote them


def test_evaluation_settings_are_refused_before_training_naming_the_config_key(tmp_path, run_cli, no_training):
    config = tmp_path / "c.yaml"
    written = {"model": "mvae", "data": {"name": "cdsprites", "level": 1}, "evaluation": {"n_analysis": 5}}
    config.write_text(yaml.safe_dump(written))
    out = tmp_path / "out"
    code, _, err = run_cli(["mmvae", "train", str(config), "-o", str(out)])
    line = one_error_line(err)
    assert code == 1 and "key evaluation.n_analysis: Value error, must be >= 20" in line and "(got 5)" in line
    assert "--n-analysis" not in line and not out.exists()
    # through --set, in a sweep: every point is checked before any runs
    code, _, err = run_cli(["mmvae", "sweep", "--grid", "seed=0,1", "-o", str(out), *sets("evaluation.n_analysis=7")])
    line = one_error_line(err)
    assert code == 1 and "with --set evaluation.n_analysis=7" in line and "(got 7)" in line and not out.exists()
    # without the analysis, the count is not used
    from repscope.studies.multimodal.train import load_multimodal_config

    loaded, _ = load_multimodal_config(None, ["evaluation.analysis=false", "evaluation.n_analysis=5"])
    assert loaded.evaluation.n_analysis == 5


def test_an_evaluation_that_cannot_run_is_refused_before_training(tmp_path, run_cli, no_training):
    out = tmp_path / "out"
    code, _, err = run_cli(["mmvae", "train", "-o", str(out), *sets("trainer.accelerator=tpu")])
    line = one_error_line(err)
    assert code == 1 and "trainer.accelerator: must be one of cpu, gpu" in line and "--accelerator" not in line
    assert not out.exists()
    renamed = "modalities={image: {network: fc-image}, caption: {field: text, network: text-transformer}}"
    code, _, err = run_cli(["mmvae", "train", "-o", str(out), *sets(renamed)])
    line = one_error_line(err)
    assert code == 1 and "modalities: the CdSprites+ evaluation reads image and text, not image, caption" in line
    assert not out.exists()
    # a GPU this machine lacks: refused before training here; a sweep's driver checks the name only
    from repscope.studies.multimodal.train import check_evaluation_before_training, load_multimodal_config

    on_gpu, _ = load_multimodal_config(None, ["trainer.accelerator=gpu"])
    check_evaluation_before_training(on_gpu, device=False)
    if not (torch.cuda.is_available() or torch.backends.mps.is_available()):
        with pytest.raises(InvalidArgumentError, match=r"^src: trainer\.accelerator gpu: torch sees no such GPU") as e:
            check_evaluation_before_training(on_gpu, "src")
        # said before any training: the message must not read as if a training had run
        assert str(e.value).endswith("(checked before training starts, for the evaluation after it)")
    # a sweep checks every point's evaluation before any point runs
    code, _, err = run_cli(["mmvae", "sweep", "--grid", "seed=0,1", "-o", str(out), *sets("trainer.accelerator=tpu")])
    assert code == 1 and "trainer.accelerator: must be one of" in one_error_line(err) and not out.exists()


# --------------------------------------------------------------------------------------------
# the evaluation of a trained run: finite weights, and no half-written folder


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """An MVAE trained one epoch on 64 level-1 samples (torch on one thread while it trains)."""
    from repscope.studies.multimodal.train import load_multimodal_config, train_multimodal

    root = tmp_path_factory.mktemp("mmvae-bad-inputs")
    config, source = load_multimodal_config(
        None, ["model=mvae", "epochs=1", *TINY, "data.train_size=64", "data.test_size=8"]
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("REPSCOPE_PROGRESS", "off")
            train_multimodal(config, out=root / "run", source=source, evaluate=False)
    finally:
        torch.set_num_threads(threads)
    return root / "run"


class SquareClassifiers:
    """Stands in for the level-1 attribute CNNs (tested elsewhere): every image reads as a square."""

    accuracies = {"shape": 1.0}

    def predict_with_confidence(self, images):
        return np.zeros((len(images), 1), np.int64), np.ones((len(images), 1))

    def judge(self, images):
        from repscope.studies.multimodal.judges import Judgement  # noqa: PLC0415

        table, confidence = self.predict_with_confidence(images)
        return Judgement(table, confidence, np.ones(len(images), bool), np.zeros(len(images)))

    def familiarity(self, confidence):
        return {"mean_confidence": {"shape": 1.0}, "warning": None}


@pytest.fixture
def stand_in_classifiers(monkeypatch):
    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    monkeypatch.setattr(
        "repscope.studies.multimodal.coherency.load_judges", lambda level, trainer=None: SquareClassifiers()
    )


def test_nan_weights_are_refused_naming_the_checkpoint_and_nothing_is_written(
    trained_run, tmp_path, run_cli, isolated_home, stand_in_classifiers
):
    run = tmp_path / "run"
    for path in trained_run.rglob("*"):  # a copy: the module's run stays finite
        if path.is_file():
            (run / path.relative_to(trained_run)).parent.mkdir(parents=True, exist_ok=True)
            (run / path.relative_to(trained_run)).write_bytes(path.read_bytes())
    checkpoint = run / "checkpoints" / "final.ckpt"
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    name = sorted(key for key, value in state["state_dict"].items() if value.is_floating_point())[2]
    state["state_dict"][name].view(-1)[1] = float("nan")
    state["state_dict"][name].view(-1)[3] = float("inf")
    torch.save(state, checkpoint)
    before = files(run)
    code, _, err = run_cli(["mmvae", "evaluate", str(run), "--n", "5", "--no-analysis", "--joint-traversal-steps", "0"])
    line = one_error_line(err)
    assert code == 1 and line == (
        f"repscope: error: checkpoint {checkpoint}: weight {name} holds 2 NaN or infinite value(s) (the training "
        "diverged); nothing was evaluated: retrain, e.g. with a lower lr"
    )
    assert files(run) == before and not (run / "evaluation").exists()
    assert [path.name for path in run.iterdir() if path.name.startswith(".tmp-")] == []


def test_a_failed_evaluation_leaves_no_half_folder_and_the_corrected_rerun_runs(
    trained_run, tmp_path, run_cli, monkeypatch, isolated_home, stand_in_classifiers
):
    def broken(*args, **kwargs):
        raise DataFormatError("disk full")

    args = ["mmvae", "evaluate", str(trained_run), "--n", "5", "--no-analysis", "--joint-traversal-steps", "0"]
    out = tmp_path / "evaluation"
    with monkeypatch.context() as patch:  # fails after the outputs were generated and written
        patch.setattr("repscope.studies.multimodal.evaluate.write_evaluation_report", broken)
        code, _, err = run_cli([*args, "-o", str(out)])
    assert code == 1 and "disk full" in err
    assert not out.exists() and list(tmp_path.glob(".tmp-*")) == []
    code, _, err = run_cli([*args, "-o", str(out)])  # the corrected re-run needs no --overwrite
    assert code == 0, err
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["n"], metrics["joint_traversal_steps"]) == (5, 0)
    # an --overwrite that fails keeps the complete evaluation there was
    before = files(out)
    with monkeypatch.context() as patch:
        patch.setattr("repscope.studies.multimodal.evaluate.write_evaluation_report", broken)
        code, _, _ = run_cli([*args, "-o", str(out), "--overwrite", "--seed", "3"])
    assert code == 1 and files(out) == before and list(tmp_path.glob(".tmp-*")) == []

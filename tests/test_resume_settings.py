"""What ``--resume`` may change, command by command: where the work runs (the trainer's logger, devices,
strategy, data placement, compile; ``--workers``, ``--backend``, ``--address``) may change; any other
setting is refused in one line naming every setting that differs with its stored and new value, a setting
one side lacks shown as ``not set``.

The commands that train end to end are in ``tests/test_resume_refusals.py`` (``repscope train``) and
``tests/test_resume_same_run.py`` (``mmvae train``); here each command's own comparison is fed a stored
record and the settings given now, as the command reads them, without training anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from repscope.errors import InvalidArgumentError, OutputExistsError
from repscope.resume_check import NOT_SET, Difference, describe, differences, where_the_work_runs
from repscope.sweeps import expand_grid, run_sweep

MOVED_TRAINER = {"logger": "none", "devices": 2, "strategy": "ddp", "data_placement": "loader", "compile": "default"}


def moved(trainer) -> None:
    """Change, in place, every trainer setting that only says where the work runs."""
    for key, value in MOVED_TRAINER.items():
        setattr(trainer, key, value)


def refusal(call) -> str:
    with pytest.raises(InvalidArgumentError) as refused:
        call()
    message = str(refused.value)
    assert message.startswith("--resume: ") and "\n" not in message
    return message


# --------------------------------------------------------------------------------------------
# the comparison itself, by hand


def test_differences_name_every_setting_in_order_with_both_values():
    stored = {"model": {"name": "beta-vae", "params": {"beta": 4.0, "lr": 0.001}}, "batch_size": 64, "seed": 0}
    current = {"model": {"name": "beta-vae", "params": {"beta": 2.0, "latent_dim": 8}}, "batch_size": 32, "seed": 0}
    found = differences(stored, current)
    # current's keys in order (beta, latent_dim), then the key only stored holds (lr)
    assert found == [
        Difference("model.params.beta", 4.0, 2.0),
        Difference("model.params.latent_dim", NOT_SET, 8),
        Difference("model.params.lr", 0.001, NOT_SET),
        Difference("batch_size", 64, 32),
    ]
    assert describe(found) == (
        "model.params.beta 4.0, now 2.0; model.params.latent_dim not set, now 8; "
        "model.params.lr 0.001, now not set; batch_size 64, now 32"
    )
    assert differences(stored, json.loads(json.dumps(stored))) == []


def test_differences_of_lists_sections_ignored_keys_and_new_keys():
    stored = {"models": [{"label": "a", "beta": 1}, {"label": "b", "beta": 2}], "rho": [1, 2], "size": [64, 64]}
    # a list of sections item by item; a list of numbers whole, as it was written
    current = {"models": [{"label": "a", "beta": 1}, {"label": "b", "beta": 3}], "rho": [1, 3], "size": [64, 64]}
    assert [str(d) for d in differences(stored, current)] == ["models[1].beta 2, now 3", "rho [1, 2], now [1, 3]"]
    shorter = {**stored, "models": stored["models"][:1]}
    assert [d.key for d in differences(stored, shorter)] == ["models"]
    # a key ignored by name ignores what is under it; a predicate sees the dotted key
    assert differences(stored, current, ignore={"models", "rho"}) == []
    assert [d.key for d in differences(stored, current, ignore=lambda key: key.startswith("models"))] == ["rho"]
    # a setting added to the package since the record was written: not compared when asked
    assert differences({"a": 1}, {"a": 1, "new": 5}, new_keys=False) == []
    assert differences({"a": 1, "old": 5}, {"a": 1}, new_keys=False) == [Difference("old", 5, NOT_SET)]
    assert differences(3, [3]) == [Difference("<top>", 3, [3])]


def test_where_the_work_runs_by_hand():
    for key in ("trainer.logger", "training.trainer.devices", "models[0].trainer.compile", "workers", "a.backend"):
        assert where_the_work_runs(key), key
    for key in ("trainer.precision", "trainer.max_epochs", "logger", "data_placement", "model.params.devices"):
        assert not where_the_work_runs(key), key


def test_a_long_value_is_cut():
    text = describe(differences({"caption": "x" * 100_000}, {"caption": "y"}))
    assert text.startswith("caption 'xxx") and text.endswith("(100000 characters), now 'y'") and len(text) < 200


# --------------------------------------------------------------------------------------------
# mmvae train


@pytest.fixture
def mmvae_run(tmp_path):
    """A run directory as ``mmvae train`` leaves it (its config.yaml, with the multimodal config as origin)."""
    from repscope.studies.multimodal.train import load_multimodal_config

    config, _ = load_multimodal_config(None, ["latent_dim=4", "beta=1.0"])
    run = tmp_path / "run"
    run.mkdir()
    record = {
        **config.train_config().model_dump(mode="json"),
        "origin": {"command": "mmvae train", "config": config.model_dump(mode="json")},
    }
    (run / "config.yaml").write_text(yaml.safe_dump(record))
    return run


def test_mmvae_train_resume_names_every_change_and_lets_the_trainer_move(mmvae_run):
    from repscope.studies.multimodal.train import check_same_run, load_multimodal_config

    given, _ = load_multimodal_config(None, ["latent_dim=4", "beta=1.0", "epochs=30", "evaluation.n=50"])
    moved(given.trainer)
    check_same_run(mmvae_run, given)  # more epochs, another evaluation, another place: the same run
    changed, _ = load_multimodal_config(None, ["latent_dim=8", "beta=2.0", "seed=3"])
    message = refusal(lambda: check_same_run(mmvae_run, changed))
    assert message.startswith(
        f"--resume: {mmvae_run} was trained with latent_dim 4, now 8; beta 1.0, now 2.0; seed 0, now 3 "
        "(on resume only epochs, evaluation and where the work runs ("
    ), message


def test_mmvae_train_cli_refuses_a_changed_config_before_training(mmvae_run, run_cli, monkeypatch):
    def no_fit(*args, **kwargs):
        raise AssertionError("a model was trained")

    monkeypatch.setattr("repscope.studies.multimodal.train.fit", no_fit)
    before = mmvae_run.joinpath("config.yaml").read_bytes()
    args = ["mmvae", "train", "--out", str(mmvae_run), "--resume", "--no-evaluate"]
    code, _, err = run_cli([*args, "--set", "latent_dim=4", "--set", "beta=3.0", "--logger", "none"])
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert f"--resume: {mmvae_run} was trained with beta 1.0, now 3.0 (on resume only" in lines[0]
    assert mmvae_run.joinpath("config.yaml").read_bytes() == before
    assert sorted(p.name for p in mmvae_run.iterdir()) == ["config.yaml"]


# --------------------------------------------------------------------------------------------
# the sweeps


def sweep_point(overrides: list[str], run_dir: Path, resume: bool, config: dict | None = None) -> dict:
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    return {"value": 1.0}


TARGET = f"{__name__}:sweep_point"


def test_a_sweep_resumes_on_other_devices_and_refuses_other_settings_naming_each(tmp_path):
    points = expand_grid(["seed=0,1"])
    out = tmp_path / "sweep"
    stored = {"lr": 0.1, "epochs": 3, "trainer": {"logger": "csv", "devices": 1, "precision": "32-true"}}
    run_sweep(points, TARGET, out, common={"config": stored}, progress=False)
    elsewhere = {**stored, "trainer": {**stored["trainer"], "logger": "none", "devices": 4}}
    again = run_sweep(points, TARGET, out, common={"config": elsewhere}, workers=1, progress=False)
    assert again.ran == [] and len(again.reused) == 2
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    changed = {"lr": 0.2, "trainer": {**stored["trainer"], "precision": "bf16-mixed"}}
    message = refusal(lambda: run_sweep(points, TARGET, out, common={"config": changed}, progress=False))
    assert message.startswith(
        f"--resume: {out} was started with config.lr 0.1, now 0.2; config.trainer.precision '32-true', now "
        "'bf16-mixed'; config.epochs 3, now not set (on resume only --workers, --backend, --address and where"
    ), message
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before


# --------------------------------------------------------------------------------------------
# the studies


def test_zeroshot_resume_lets_the_trainer_move_and_names_every_change(tmp_path):
    from repscope.studies.zeroshot.study import ZeroShotConfig, _open_run

    config = ZeroShotConfig(architectures=[{"label": "LeNet", "name": "lenet5"}])
    out = tmp_path / "run"
    _open_run(config, out, tmp_path, resume=False)
    elsewhere = config.model_copy(deep=True)
    moved(elsewhere.training.trainer)
    _open_run(elsewhere.model_copy(update={"workers": 4, "backend": "local"}), out, tmp_path, resume=True)
    changed = config.model_copy(deep=True)
    changed.seed, changed.training.batch_size = 5, 16
    message = refusal(lambda: _open_run(changed, out, tmp_path, resume=True))
    assert f"was started with training.batch_size {config.training.batch_size}, now 16; seed 0, now 5 (" in message
    # a setting the stored config holds and the package no longer knows: named, not dropped
    stored = yaml.safe_load((out / "config.yaml").read_text())
    (out / "config.yaml").write_text(yaml.safe_dump({**stored, "retired": 7}))
    assert "was started with retired 7, now not set (" in refusal(lambda: _open_run(config, out, tmp_path, True))


def test_morpho_study_resume_lets_the_trainer_move_and_names_every_change(tmp_path):
    from repscope.studies.morpho.resume import open_study_run
    from repscope.studies.morpho.supervised import SupervisedConfig

    config = SupervisedConfig()
    out = tmp_path / "run"
    open_study_run("morpho-supervised", config, out, tmp_path, resume=False)
    elsewhere = config.model_copy(deep=True)
    moved(elsewhere.training.trainer)
    open_study_run("morpho-supervised", elsewhere, out, tmp_path, resume=True)
    changed = config.model_copy(deep=True)
    changed.training.trainer.max_epochs, changed.models = 3, ["knn"]
    message = refusal(lambda: open_study_run("morpho-supervised", changed, out, tmp_path, resume=True))
    assert "was started with models ['knn', 'svm', 'mlp', 'lenet5'], now ['knn']; " in message
    assert "; training.trainer.max_epochs 20, now 3 (on resume only where the work runs" in message


def test_disentangle_study_resume_lets_the_trainer_move_and_names_every_change(tmp_path):
    from repscope.studies.candle.disentanglement import DisentangleStudyConfig, check_same_study

    config = DisentangleStudyConfig()
    out = tmp_path / "study"
    out.mkdir()
    stored = config.model_dump(mode="json")
    (out / "config.yaml").write_text(yaml.safe_dump({**stored, "repscope_version": "0.0"}))
    elsewhere = config.model_copy(deep=True)
    moved(elsewhere.training.trainer)
    assert check_same_study(out, elsewhere.model_dump(mode="json"))
    changed = config.model_copy(deep=True)
    changed.seed, changed.evaluation_n = 4, 100
    message = refusal(lambda: check_same_study(out, changed.model_dump(mode="json")))
    assert f"was started with evaluation_n {config.evaluation_n}, now 100; seed 0, now 4 (" in message
    # a setting only the stored config holds
    (out / "config.yaml").write_text(yaml.safe_dump({**stored, "retired": True}))
    assert "retired True, now not set" in refusal(lambda: check_same_study(out, stored))


def test_invariance_repository_resume_lets_the_trainer_move_and_names_every_change(tmp_path):
    from repscope.studies.invariance.repo import RepoConfig, check_resume

    config = RepoConfig()
    out = tmp_path / "repo"
    out.mkdir()
    (out / "repository.json").write_text(json.dumps({"config": config.model_dump(mode="json")}))
    elsewhere = config.model_copy(deep=True)
    moved(elsewhere.trainer)
    check_resume(elsewhere, out)
    message = refusal(lambda: check_resume(config.model_copy(update={"count": 30, "seed": 2}), out))
    assert f"repository {out} was started with count {config.count}, now 30; seed 0, now 2 (" in message
    (out / "repository.json").write_text(json.dumps({"config": {**config.model_dump(mode="json"), "old": 1}}))
    assert "with old 1, now not set (" in refusal(lambda: check_resume(config, out))


def test_candle_render_resume_names_every_change_and_lets_the_device_move(tmp_path):
    from repscope.data.candle.render import RenderSettings, _check_manifest

    out = tmp_path / "renders"
    out.mkdir()
    settings = RenderSettings(resolution=(64, 48), samples=2, seed=1)
    _check_manifest(out, settings)  # writes render.json
    _check_manifest(out, RenderSettings(resolution=(64, 48), samples=2, seed=1, device="cpu", threads=2))
    changed = RenderSettings(resolution=(80, 60), samples=4, seed=1)
    message = refusal(lambda: _check_manifest(out, changed))
    assert message.startswith(
        f"--resume: {out} was rendered with resolution [64, 48], now [80, 60]; samples 2, now 4 (on resume only"
    ), message
    manifest = json.loads((out / "render.json").read_text())
    manifest["settings"]["engine"] = "eevee"  # a setting this version does not record
    (out / "render.json").write_text(json.dumps(manifest))
    assert "rendered with engine 'eevee', now not set (" in refusal(lambda: _check_manifest(out, settings))


def test_morpho_build_resume_names_every_change(tmp_path):
    from repscope.data.morpho.build import STATE_DIR, BuildConfig, build_dataset

    out = tmp_path / "set"
    (out / STATE_DIR).mkdir(parents=True)
    record = json.loads(json.dumps(BuildConfig(seed=3).to_dict()))
    (out / STATE_DIR / "config.json").write_text(json.dumps(record))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    message = refusal(lambda: build_dataset(out, BuildConfig(seed=5, source="mnist-sample"), resume=True))
    assert f"--resume: {out} was started with seed 3, now 5 (" in message
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    # a complete build with another configuration names the difference too
    (out / "dataset.json").write_text(json.dumps({"config": record}))
    (out / STATE_DIR / "config.json").unlink()
    (out / STATE_DIR).rmdir()
    with pytest.raises(OutputExistsError, match=r"another configuration \(seed 3, now 5\)"):
        build_dataset(out, BuildConfig(seed=5), resume=True)

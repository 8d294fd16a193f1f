"""`repscope mmvae train`: one YAML to a trained multimodal VAE; its config is checked before anything runs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repscope.cli import app
from repscope.errors import InvalidArgumentError
from repscope.studies.multimodal.train import MultimodalConfig, load_multimodal_config, quick_config
from repscope.train import open_run

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


def test_the_shipped_configs_translate_into_the_framework_config():
    config, _ = load_multimodal_config(None)
    train = config.train_config()
    assert train.model.name == config.model == "mmvae"
    assert train.trainer.max_epochs == config.epochs
    assert train.data.params == {"level": 1, "train_size": 20000, "val_size": 1000, "test_size": 1000, "seed": 0}
    assert train.model.params["modalities"]["text"]["pad_class"] == 0
    assert "private_dim" not in train.model.params  # only the private-latent models take it
    paper, _ = load_multimodal_config("mmvae-cdsprites-paper", ["model=dmvae"])
    assert paper.train_config().model.params["private_dim"] == 10
    assert paper.modalities["text"].params == {"width": 64, "layers": 8, "heads": 2, "hidden": 1024, "dropout": 0.1}
    assert paper.train_config().trainer.max_epochs == 150


def test_the_paper_config_holds_the_papers_and_the_authors_settings():
    """lr 1e-4, batch 32, a BCE image loss, 150 epochs for levels 1-2 and 250 for 3-5, evaluation on 10,000
    samples decoded from a posterior sample; DMVAE with 10 shared + 10 private latents per modality."""
    paper, _ = load_multimodal_config("mmvae-cdsprites-paper")
    assert (paper.lr, paper.batch_size, paper.modalities["image"].likelihood) == (1e-4, 32, "bernoulli")
    assert (paper.evaluation.n, paper.evaluation.sample) == (10000, True)
    epochs = {}
    for level in (1, 2, 3, 4, 5):
        config, _ = load_multimodal_config("mmvae-cdsprites-paper", [f"data.level={level}"])
        epochs[level] = config.train_config().trainer.max_epochs
    assert epochs == {1: 150, 2: 150, 3: 250, 4: 250, 5: 250}
    assert paper.train_config().model.params["latent_dim"] == 16
    dmvae, _ = load_multimodal_config("mmvae-cdsprites-paper", ["model=dmvae"])
    assert (dmvae.latent_dim, dmvae.private_dim) == (10, 10)  # the per_model setting of DMVAE
    # --set wins over per_model (the paper's DMVAE grid: 10, 16, 24 shared), and --epochs over the levels
    wider, _ = load_multimodal_config("mmvae-cdsprites-paper", ["model=dmvae", "latent_dim=24", "epochs=2"])
    assert wider.latent_dim == 24 and wider.train_config().trainer.max_epochs == 2
    mvae, _ = load_multimodal_config("mmvae-cdsprites-paper", ["model=mvae"])
    assert mvae.latent_dim == 16  # DMVAE's setting is DMVAE's only
    # each model's objective as the authors' toolkit computes it, reaching the model's parameters
    toolkit = {
        "mvae": {"subsampling": "all", "reconstruct": "all"},
        "mmvae": {"bound": "m_elbo"},
        "mopoe": {"prior_expert": "full_subset"},
        "dmvae": {"kl_accounting": "toolkit"},
    }
    for model, settings in toolkit.items():
        params = load_multimodal_config("mmvae-cdsprites-paper", [f"model={model}"])[0].train_config().model.params
        assert {key: params[key] for key in settings} == settings, model
    # the shipped CPU config keeps the model papers' definitions
    plain = load_multimodal_config(None, ["model=mvae"])[0].train_config().model.params
    assert plain["reconstruct"] == "given" and plain["subsampling"] == "singles"


def test_per_model_and_per_level_epochs_refuse_what_they_cannot_hold(tmp_path):
    import yaml

    def load(**changes):
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump({"model": "mvae", "data": {"name": "cdsprites", "level": 3}, **changes}))
        return load_multimodal_config(str(path))[0]

    with pytest.raises(InvalidArgumentError, match="per_model.*unknown multimodal model 'vae'"):
        load(per_model={"vae": {"latent_dim": 3}})
    with pytest.raises(InvalidArgumentError, match="per_model.*mvae: data cannot be set per model"):
        load(per_model={"mvae": {"data": {"level": 2}}})
    with pytest.raises(InvalidArgumentError, match="epochs.*levels are 1-5, not 7"):
        load(epochs={1: 5, 7: 5})
    with pytest.raises(InvalidArgumentError, match="epochs: given for levels 1, 2, not for data.level 3"):
        load(epochs={1: 5, 2: 6}).train_config()
    assert load(epochs={1: 5, 3: 7}, per_model={"mvae": {"lr": 0.5}}).train_config().trainer.max_epochs == 7
    assert load(per_model={"mvae": {"lr": 0.5}, "mopoe": {"lr": 0.1}}).lr == 0.5


def test_set_switches_model_and_level_and_quick_shrinks_every_size():
    config, source = load_multimodal_config(None, ["model=mopoe", "data.level=2"], quick=True)
    assert (config.model, config.data.level) == ("mopoe", 2)
    assert (config.epochs, config.data.train_size, config.data.val_size, config.evaluation.n) == (3, 3000, 200, 200)
    assert "--set model=mopoe" in source
    # --quick never grows a config that is already smaller
    small = MultimodalConfig(epochs=1, data={"name": "cdsprites", "level": 1, "train_size": 100})
    assert quick_config(small).epochs == 1 and quick_config(small).data.train_size == 100


@pytest.mark.parametrize(
    "override, message",
    [
        ("model=vae", "key model"),
        ("data.level=7", "data.level"),
        ("data.params.level=2", "set it as data.level"),
        ("modalities.image.likelihood=poisson", "modalities.image.likelihood"),
        ("data.name=digits", "data.level: dataset 'digits' has no 'level'"),
        ("latent_dm=3", "unknown key latent_dm"),
        ("modalities.image.network=resnet", "network"),
    ],
)
def test_a_bad_key_is_one_error_naming_it_and_the_config(override, message):
    with pytest.raises(InvalidArgumentError, match=message) as error:
        load_multimodal_config(None, [override])
    assert "mmvae-cdsprites.yaml" in str(error.value)


def test_the_cli_trains_a_run_directory_and_refuses_to_overwrite_it(tmp_path):
    runner = CliRunner()
    out = tmp_path / "run"
    arguments = ["mmvae", "train", "--epochs", "1", "--no-evaluate", "--out", str(out), "--set", "model=mmvae-plus"]
    arguments += [item for pair in zip(["--set"] * len(TINY), TINY) for item in pair]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    assert f"run: {out}" in result.output
    run = open_run(out)  # the multimodal config is recorded in the run's config.yaml
    assert run.origin["command"] == "mmvae train" and not (out / "mmvae-config.yaml").exists()
    stored = run.origin["config"]
    assert stored["model"] == "mmvae-plus" and stored["latent_dim"] == 4
    assert run.model_name == "mmvae-plus" and run.data_arguments["level"] == stored["data"]["level"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["model"] == "mmvae-plus" and metrics["epochs"] == 1
    before = (out / "metrics.json").read_bytes()
    again = runner.invoke(app, arguments)
    assert again.exit_code != 0
    assert (out / "metrics.json").read_bytes() == before  # nothing already written is lost
    # --resume continues the run with more epochs
    resumed = runner.invoke(app, ["mmvae", "train", "--resume", "--epochs", "2", *arguments[4:]])
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((out / "metrics.json").read_text())["epochs"] == 2


def test_a_sweep_trains_every_point_and_a_restart_skips_the_finished_ones(tmp_path):
    runner = CliRunner()
    out = tmp_path / "sweep"
    tiny = [item for pair in zip(["--set"] * len(TINY), TINY) for item in pair]
    arguments = ["mmvae", "sweep", "--grid", "model=mvae,mopoe", "--set", "epochs=1"]
    arguments += ["--set", "evaluation.enabled=false"]
    result = runner.invoke(app, [*arguments, *tiny, "--out", str(out)])
    assert result.exit_code == 0, result.output
    names = ["model-mvae", "model-mopoe"]
    for name in names:
        assert json.loads((out / name / "metrics.json").read_text())["model"] == name.split("-")[1]
        assert (out / name / "sweep-done.json").exists()
    summary = (out / "summary.csv").read_text().splitlines()
    assert summary[0].startswith("name,model,status") and len(summary) == 3
    # an existing sweep folder is refused without --resume; with it, nothing is trained again
    stamps = {name: (out / name / "metrics.json").stat().st_mtime_ns for name in names}
    refused = runner.invoke(app, [*arguments, *tiny, "--out", str(out)])
    assert refused.exit_code != 0
    again = runner.invoke(app, [*arguments, *tiny, "--out", str(out), "--resume"])
    assert again.exit_code == 0, again.output
    assert {name: (out / name / "metrics.json").stat().st_mtime_ns for name in names} == stamps
    # a bad point is refused before anything runs
    bad = runner.invoke(app, ["mmvae", "sweep", "--grid", "model=mvae,vae", "--out", str(tmp_path / "bad")])
    assert bad.exit_code != 0 and not (tmp_path / "bad").exists()
    # a share of a GPU is Ray's to reserve: local workers all see every GPU
    shared = runner.invoke(app, [*arguments, "--gpus-per-run", "0.25", "--out", str(tmp_path / "shared")])
    assert shared.exit_code != 0 and "--gpus-per-run: only with --backend ray" in str(shared.exception)
    assert not (tmp_path / "shared").exists()

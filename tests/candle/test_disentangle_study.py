"""The disentanglement study writes the paper's Table 2 layout from real trainings on dSprites."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

from repscope.errors import InvalidArgumentError
from repscope.studies.candle.disentanglement import DisentangleStudyConfig, quick, run_disentangle_study
from repscope.studies.common import MemberModel


def tiny_config(**changes) -> DisentangleStudyConfig:
    config = DisentangleStudyConfig(
        data={"name": "dsprites", "params": {"train_size": 256, "test_size": 64}},
        models=[MemberModel(label="my beta-VAE", name="beta-vae", params={"latent_dim": 4})],
        evaluation_n=40,
        classifier_epochs=1,
        **changes,
    )
    config.training.trainer.max_epochs = 1
    return config


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The tiny study's folder, its report and the warnings it gave."""
    tmp_path = tmp_path_factory.mktemp("disentangle")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = run_disentangle_study(tiny_config(), out=tmp_path / "study")
    return tmp_path, report, caught


def test_the_study_trains_scores_and_writes_table_2(study):
    tmp_path, report, caught = study
    # the weak judges are named once for the study, not again for each model scored
    assert sum("CG judged by weak" in str(warning.message) for warning in caught) == 1
    # the paper's dSprites numbers sit beside ours in the report
    assert "The paper&#x27;s Table 2, dSprites half" in report.read_text()  # HTML-escaped apostrophe
    table = pd.read_csv(tmp_path / "study" / "tables" / "table2.csv")
    assert list(table.columns) == [
        "model", "irs", "uc_rho1", "cg_rho1", "uc_rho2", "cg_rho2", "mig", "dci_disentanglement", "sap"
    ]  # fmt: skip
    # UC at rho = 1 with 5 factors on 4 latents: at least two factors share a latent, so UC < 1
    assert 0.0 <= table["uc_rho1"].iloc[0] < 1.0 and 0.0 <= table["cg_rho1"].iloc[0] <= 1.0
    metrics = json.loads((tmp_path / "study" / "metrics.json").read_text())
    assert set(metrics["classifier_accuracy"]) == {"shape", "scale", "orientation", "posX", "posY"}
    # one epoch on 256 images judges poorly: the study says so, by name, in its metrics and its report
    weak = sorted(name for name, value in metrics["classifier_accuracy"].items() if value < 0.9)
    assert weak and sorted(metrics["weak_judges"]) == weak and metrics["judge_ok"] is False
    assert metrics["min_judge_accuracy"] == 0.9 and "below the 90% held-out accuracy" in report.read_text()
    assert "judge with the ones that come with repscope (--set judges_dir=packaged)" in report.read_text()
    assert (tmp_path / "study" / "figures" / "traversal_my-beta-vae.png").exists()  # a label with a space
    # --quick never grows the sizes
    shrunk = quick(DisentangleStudyConfig())
    assert shrunk.data.params["train_size"] == 2000 and shrunk.training.trainer.max_epochs == 1


def test_judges_trained_before_judge_instead_of_the_studys_own(study, tmp_path):
    first = study[0] / "study"
    out = tmp_path / "judged"
    run_disentangle_study(tiny_config(judges_dir=str(first / "judges")), out=out)
    assert not (out / "judges").exists()  # nothing trained
    metrics, before = (json.loads((folder / "metrics.json").read_text()) for folder in (out, first))
    assert metrics["judges_dir"] == str(first / "judges") and "classifiers_dir" not in metrics
    assert metrics["classifier_accuracy"] == before["classifier_accuracy"]
    assert metrics["weak_judges"] == before["weak_judges"] and metrics["judge_ok"] is False
    # the same seed trains the same model, so the same judges give the same table, CG included
    table, earlier = (pd.read_csv(folder / "tables" / "table2.csv") for folder in (out, first))
    pd.testing.assert_frame_equal(table, earlier)
    report = (out / "report.html").read_text()
    assert f"Judges of CG: the judges from {first / 'judges'}" in report
    assert "train better ones" in report


def test_judges_of_other_data_or_factors_are_refused_before_anything_is_written(study, tmp_path):
    judges = study[0] / "study" / "judges"
    out = tmp_path / "judged"
    with pytest.raises(InvalidArgumentError, match=r"^judges_dir: .* is not a folder"):
        run_disentangle_study(tiny_config(judges_dir=str(tmp_path / "none")), out=out)
    shapes_only = tmp_path / "shapes-only"
    shapes_only.mkdir()
    (shapes_only / "shape").symlink_to(judges / "shape")
    with pytest.raises(
        InvalidArgumentError, match=r"^judges_dir: .* no judge for factor\(s\) scale, orientation, posX, posY"
    ):
        run_disentangle_study(tiny_config(judges_dir=str(shapes_only)), out=out)
    # a dSprites judge of shape cannot judge CdSprites+ shapes
    sprites = tiny_config(judges_dir=str(shapes_only))
    sprites.data.name, sprites.data.factors = "cdsprites", ["shape"]
    sprites.data.params = {"level": 1, "train_size": 64, "test_size": 32}
    with pytest.raises(
        InvalidArgumentError, match="^judges_dir: the shape judge in .* was trained on dsprites, not cdsprites"
    ):
        run_disentangle_study(sprites, out=out)
    assert not out.exists()


def test_a_judge_of_another_image_size_or_factor_or_unfinished_is_refused(tmp_path):
    import yaml

    from repscope.run_directory import CONFIG_FILE
    from repscope.studies.candle.cg import trained_judges

    def judge(factor, target, judged=True):
        run = tmp_path / "judges" / factor
        run.mkdir(parents=True)
        params = {"data_dir": "/x", "target": target}
        config = {"model": {"name": "attribute-cnn"}, "data": {"name": "candle", "params": params}}
        (run / CONFIG_FILE).write_text(yaml.safe_dump(config))
        if judged:
            (run / "judge.json").write_text(json.dumps({"accuracy": 0.99, "identifiable_accuracy": 0.995}))

    judge("object", "object")
    # the loader's default (64) on the judge's side, named on the study's
    assert trained_judges(tmp_path / "judges", ["object"], "candle", {"image_size": 64}) == {"object": 0.995}
    with pytest.raises(InvalidArgumentError, match="trained at image_size 64, the study's data is at 128"):
        trained_judges(tmp_path / "judges", ["object"], "candle", {"image_size": 128})
    # a run in the wrong folder, and one stopped before it was measured
    judge("size", "color")
    with pytest.raises(InvalidArgumentError, match=r"^judges_dir: the run .*size classifies 'color', not size"):
        trained_judges(tmp_path / "judges", ["object", "size"], "candle")
    judge("light", "light", judged=False)
    with pytest.raises(InvalidArgumentError, match="^judges_dir: the light judge.* did not finish training"):
        trained_judges(tmp_path / "judges", ["object", "light"], "candle")


def test_members_are_checked_before_anything_is_trained_or_written(tmp_path):

    def config(models, data=None):
        return DisentangleStudyConfig(
            data=data or {"name": "dsprites", "params": {"train_size": 64, "test_size": 32}},
            models=[MemberModel(**model) for model in models],
        )

    out = tmp_path / "study"
    # two labels that would share a run directory and figure name
    same = [{"label": "beta VAE", "name": "beta-vae"}, {"label": "Beta-VAE", "name": "beta-tcvae"}]
    with pytest.raises(InvalidArgumentError, match="'beta VAE' and 'Beta-VAE' name the same run directory"):
        run_disentangle_study(config(same), out=out)
    # a parameter the model does not take, named with the member's label
    unknown = [{"label": "mine", "name": "beta-vae", "params": {"latent_dims": 4}}]
    with pytest.raises(InvalidArgumentError, match="model 'mine'.*latent_dims"):
        run_disentangle_study(config(unknown), out=out)
    # box weighting on data without bounding boxes
    boxed = [{"label": "boxed", "name": "beta-vae", "params": {"box_weight": 5.0}}]
    with pytest.raises(InvalidArgumentError, match="model 'boxed'.*'box'.*does not give"):
        run_disentangle_study(config(boxed, {"name": "digits", "params": {}}), out=out)
    assert not out.exists()


def test_quick_shrinks_a_dataset_without_size_parameters_by_batches():
    # every dataset with a choosable size calls it train_size / test_size, so quick shrinks it there
    sprites = quick(DisentangleStudyConfig(data={"name": "cdsprites", "params": {"level": 1}, "factors": ["shape"]}))
    assert sprites.data.params == {"level": 1, "train_size": 2000, "test_size": 500}
    assert sprites.training.trainer.limit_train_batches is None
    # a folder of CANDLE images has no size parameters: quick limits the batches per epoch instead
    config = DisentangleStudyConfig(data={"name": "candle", "params": {"data_dir": "/x"}, "factors": ["object"]})
    shrunk = quick(config)
    assert shrunk.data.params == {"data_dir": "/x"}
    assert shrunk.training.trainer.limit_train_batches == 2000 // config.training.batch_size
    assert shrunk.training.trainer.max_epochs == 1 and shrunk.evaluation_n == 300

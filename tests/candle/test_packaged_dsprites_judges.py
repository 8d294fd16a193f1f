"""The dSprites judges (factor classifiers) that come with the package (``judges_dir: packaged``,
``--judges packaged``) judge held-out dSprites images at 98% or more, and are used as they are."""

from __future__ import annotations

import json

import numpy as np
import pytest

from repscope.data import dsprites
from repscope.data.multimodal.datasets import dsprites_dataset
from repscope.errors import InvalidArgumentError
from repscope.studies.candle.cg import PACKAGED_JUDGES, judge_record, judges_folder
from repscope.studies.candle.disentanglement import DSPRITES_FACTORS, DisentangleStudyConfig, run_disentangle_study
from repscope.studies.common import MemberModel
from repscope.train.reader import open_run

FOLDER = PACKAGED_JUDGES["dsprites"]


def test_each_packaged_judge_reads_the_held_out_images_as_it_recorded():
    """Its weights, run on freshly drawn held-out images of the grid (the 10,000 no judge trained on),
    give the accuracy its judge.json recorded when it was trained, and that is at least 98%."""
    # the split of the judges' training: seed 0, the last 10,000 of the grid's permutation held out (the
    # same images for every target)
    test = dsprites_dataset(train_size=1000, test_size=10_000).arrays("test", ["image", "factors"])
    columns = list(dsprites.FACTOR_NAMES)
    for factor in DSPRITES_FACTORS:
        run = open_run(FOLDER / factor)
        assert run.data_name == "dsprites" and run.data_params["target"] == factor
        truth = test["factors"][:, columns.index(factor)]
        predicted = np.concatenate([run.task().predict(test["image"][k : k + 2500]) for k in range(0, 10_000, 2500)])
        measured = judge_record("dsprites", factor, test["factors"], truth, predicted)
        recorded = json.loads((FOLDER / factor / "judge.json").read_text())
        assert measured["n"] == recorded["n"] == 10_000
        # the same weights on the same images; an image near a decision boundary may flip across builds
        assert abs(measured["identifiable_accuracy"] - recorded["identifiable_accuracy"]) <= 0.001, factor
        assert measured["identifiable_accuracy"] >= 0.98, factor


def test_packaged_names_the_dsprites_judges_and_no_others():
    assert judges_folder("packaged", "dsprites") == FOLDER
    assert judges_folder("~/judges", "candle").name == "judges"  # a folder is passed through
    with pytest.raises(InvalidArgumentError, match=r"^judges_dir: packaged judges come with .* dsprites only, not"):
        judges_folder("packaged", "candle")
    with pytest.raises(InvalidArgumentError, match=r"^--judges: packaged"):
        judges_folder("packaged", "cdsprites", key="--judges")


def test_a_study_judged_by_the_packaged_judges_trains_none_and_says_whose_they_are(tmp_path, run_cli):
    config = DisentangleStudyConfig(
        data={"name": "dsprites", "params": {"train_size": 256, "test_size": 64}},
        models=[MemberModel(label="beta-VAE", name="beta-vae", params={"latent_dim": 4})],
        evaluation_n=40,
        judges_dir="packaged",
    )
    config.training.trainer.max_epochs = 1
    report = run_disentangle_study(config, out=tmp_path / "study")
    assert not (tmp_path / "study" / "judges").exists()  # nothing trained
    metrics = json.loads((tmp_path / "study" / "metrics.json").read_text())
    assert metrics["judges_dir"] == str(FOLDER)
    recorded = {name: json.loads((FOLDER / name / "judge.json").read_text()) for name in DSPRITES_FACTORS}
    assert metrics["classifier_accuracy"] == {
        name: recorded[name]["identifiable_accuracy"] for name in DSPRITES_FACTORS
    }
    assert metrics["judge_ok"] is True and metrics["weak_judges"] == []
    text = report.read_text()
    assert "Judges of CG: the judges that come with repscope" in text and "below the 90%" not in text
    # a model of the study scored on the command line with the same judges gives the study's CG
    model = next((tmp_path / "study" / "models").iterdir())
    code, out, err = run_cli(["disentangle", "score", str(model), "--n", "40", "--judges", "packaged"])
    assert code == 0 and "warning" not in err
    cg = json.loads(out)["metrics"]["cg"]
    assert cg["judge_ok"] is True and cg["judge_accuracy"] == metrics["classifier_accuracy"]
    assert cg["cg_rho1"] == pytest.approx(metrics["models"]["beta-VAE"]["cg_rho1"])

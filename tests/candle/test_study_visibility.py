"""What a researcher sees of the disentanglement study: progress lines (models n/m, scoring, bootstrap
resamples), the report's heatmaps, traversal grids and warnings, and ``--resume``."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from repscope.errors import InvalidArgumentError
from repscope.report.candle_figures import near_constant, uc_membership
from repscope.studies.candle import disentanglement as study_module
from repscope.studies.candle.disentanglement import (
    DisentangleStudyConfig,
    column_label,
    first_difference,
    run_disentangle_study,
)
from repscope.studies.candle.score_arrays import score_arrays
from repscope.studies.common import MemberModel

pytestmark = pytest.mark.filterwarnings("ignore:CG judged by weak:RuntimeWarning")  # the stubbed weak judge


@pytest.fixture
def lines(monkeypatch):
    """Progress as plain lines, one for every update."""
    monkeypatch.setenv("REPSCOPE_PROGRESS", "lines")
    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0")


def counts(text: str, description: str) -> list[tuple[int, int]]:
    """The ``n/m`` of every progress line of ``description``."""
    pattern = re.escape(description) + r": (\d+)/(\d+)"
    return [(int(n), int(m)) for n, m in re.findall(pattern, text)]


# ------------------------------------------------------------------------------------------------
# a tiny study: real trainings of two small VAEs; the judges and the scores stubbed (they are
# tested in test_disentangle_study.py), so that what is checked here is the study's own bookkeeping

FACTORS = ["shape", "scale"]
# latents x factors, not symmetric: latent 0 captures shape, latent 2 scale
IRS_MATRIX = [[0.9, 0.1], [0.2, 0.3], [0.05, 0.7]]
Q_SETS = {"rho1": [[0], [2]], "rho2": [[0, 1], [2, 1]]}


def tiny_config(labels=("first", "second"), seed: int = 0) -> DisentangleStudyConfig:
    config = DisentangleStudyConfig(
        data={"name": "dsprites", "params": {"train_size": 64, "test_size": 32}, "factors": FACTORS},
        models=[MemberModel(label=label, name="beta-vae", params={"latent_dim": 3}) for label in labels],
        evaluation_n=20,
        classifier_epochs=1,
        traversal_steps=3,
        seed=seed,
    )
    config.training.trainer.max_epochs = 1
    config.training.batch_size = 32
    return config


@pytest.fixture
def stubbed(monkeypatch):
    """Judges at 0.5 and 0.95 accuracy (shape weak), scores from the fixed matrices, flat traversals
    for the model labelled ``second``; returns the labels scored, in order."""
    scored: list[str] = []

    def judges(data, factors, out, **kwargs):
        out.mkdir(parents=True, exist_ok=True)
        return {"shape": 0.5, "scale": 0.95}

    def scores(run_dir, judges_dir, config):
        scored.append(run_dir.name)
        values = {"irs": 0.4, "mig": 0.1, "dci_disentanglement": 0.2, "sap": 0.3}
        values.update({f"{kind}_rho{r}": 0.5 for r in config.rho for kind in ("uc", "cg")})
        values["details"] = {"irs_matrix": IRS_MATRIX, "q_sets": Q_SETS, "factor_names": FACTORS}
        return values, np.zeros((4, 3))

    def traversals(task, codes, steps, span):
        rng = np.random.default_rng(0)
        images = rng.uniform(size=(codes.shape[1] * steps, 8, 8))
        return np.full_like(images, 0.5) if scored[-1] == "second" else images

    monkeypatch.setattr(study_module, "train_judges", judges)
    monkeypatch.setattr(study_module, "score_model", scores)
    monkeypatch.setattr(study_module, "traversal_images", traversals)
    return scored


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_study_counts_its_models_and_reports_heatmaps_traversals_and_warnings(tmp_path, stubbed, lines, capsys):
    report = run_disentangle_study(tiny_config(), out=tmp_path / "study")
    err = capsys.readouterr().err
    # "model 1/2 (first)" while the first trains, "2 models: 2/2 done" at the end
    assert "disentangle-study: model 1/2 (first): 0/2" in err
    assert "disentangle-study: model 2/2 (second): 1/2" in err
    assert "disentangle-study: 2 models: 2/2 done" in err
    # each training has its own bar, named with its position
    assert "training first (1 of 2)" in err and "training second (2 of 2)" in err
    html = report.read_text()
    # readable column names in the headline table, raw keys in the CSV
    assert "UC (ρ=1)" in html and "DCI disentanglement" in html and ">dci_disentanglement<" not in html
    assert "uc_rho1" in pd.read_csv(tmp_path / "study" / "tables" / "table2.csv").columns
    # a heatmap per model, traversal grids, and no raw reStructuredText from the docstring
    assert (tmp_path / "study" / "figures" / "irs_first.png").is_file()
    assert (tmp_path / "study" / "figures" / "traversal_second.png").is_file()
    assert "IRS matrices and UC sets" in html and ":mod:" not in html and "``" not in html
    # the weak judge (0.5 < 0.9) and the flat traversals of "second" are warnings at the top
    warnings_block = html.split("<h2", 1)[0]
    assert "shape 50.0%" in warnings_block and "below the 90% held-out accuracy" in warnings_block
    assert "Every traversal image of second is flat" in warnings_block
    assert "first is flat" not in html
    metrics = json.loads((tmp_path / "study" / "metrics.json").read_text())
    assert metrics["flat_traversal_images"] == {"first": 0.0, "second": 1.0}


def test_resume_keeps_the_scored_model_and_trains_only_the_missing_one(tmp_path, stubbed, monkeypatch, lines, capsys):
    out = tmp_path / "study"
    config = tiny_config()
    real = study_module.train_or_load

    def stopped_at_the_second(member, *args, **kwargs):
        if member.label == "second":
            raise KeyboardInterrupt
        return real(member, *args, **kwargs)

    monkeypatch.setattr(study_module, "train_or_load", stopped_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        run_disentangle_study(config, out=out)
    checkpoint = out / "models" / "first" / "checkpoints" / "last.ckpt"
    kept = (digest(checkpoint), checkpoint.stat().st_mtime_ns, digest(out / "scores" / "first.json"))
    assert not (out / "models" / "second").exists() and not (out / "report.html").exists()

    monkeypatch.setattr(study_module, "train_or_load", real)
    stubbed.clear()
    capsys.readouterr()
    report = run_disentangle_study(tiny_config(), out=out, resume=True)
    err = capsys.readouterr().err
    # the count starts at the model kept: "1/2" while the second trains, no line for the first
    assert "disentangle-study: model 2/2 (second): 1/2" in err and "model 1/2" not in err
    # the first model was neither trained nor scored again; the second was
    assert (digest(checkpoint), checkpoint.stat().st_mtime_ns, digest(out / "scores" / "first.json")) == kept
    assert stubbed == ["second"]
    assert (out / "models" / "second" / "checkpoints" / "last.ckpt").is_file()
    assert pd.read_csv(out / "tables" / "table2.csv")["model"].tolist() == ["first", "second"]
    assert report == out / "report.html"


@pytest.mark.slow  # ~9 s; going on from last.ckpt is also pinned by tests/test_train_epoch_checkpoints.py
def test_resume_continues_a_training_from_its_last_checkpoint(tmp_path, stubbed, monkeypatch):
    out = tmp_path / "study"
    run_disentangle_study(tiny_config(labels=("first",)), out=out)
    # as if stopped after its last checkpoint, before its metrics and its scores were written
    (out / "models" / "first" / "metrics.json").unlink()
    (out / "scores" / "first.json").unlink()
    calls = []
    real = study_module.fit

    def spy(config, **kwargs):
        calls.append(kwargs["resume"])
        return real(config, **kwargs)

    monkeypatch.setattr(study_module, "fit", spy)
    run_disentangle_study(tiny_config(labels=("first",)), out=out, resume=True)
    assert calls == [True] and (out / "models" / "first" / "metrics.json").is_file()


def test_resume_refuses_a_changed_config_naming_the_first_different_key(tmp_path, stubbed):
    out = tmp_path / "study"
    out.mkdir()
    stored = tiny_config().model_dump(mode="json")
    (out / "config.yaml").write_text(yaml.safe_dump({**stored, "repscope_version": "0.0"}))
    changed = tiny_config(labels=("first", "third"))
    with pytest.raises(InvalidArgumentError, match=r"started with models\[1\]\.label 'second', now 'third' \("):
        run_disentangle_study(changed, out=out, resume=True)
    epochs = tiny_config()
    epochs.training.trainer.max_epochs = 2
    with pytest.raises(InvalidArgumentError, match=r"with training\.trainer\.max_epochs 1, now 2 \("):
        run_disentangle_study(epochs, out=out, resume=True)
    assert sorted(path.name for path in out.iterdir()) == ["config.yaml"]  # nothing trained or written


def test_first_difference_and_column_labels_by_hand():
    stored = {"a": 1, "b": {"c": [1, 2], "d": "x"}, "repscope_version": "1"}
    assert first_difference(stored, {"a": 1, "b": {"c": [1, 2], "d": "x"}, "repscope_version": "2"}) is None
    assert first_difference(stored, {"a": 1, "b": {"c": [1, 3], "d": "y"}}) == ("b.c[1]", 2, 3)
    assert first_difference(stored, {"a": 1, "b": {"c": [1, 2, 3], "d": "x"}}) == ("b.c", [1, 2], [1, 2, 3])
    assert first_difference({"a": 1}, {"a": 1, "new": 5}) is None  # a setting added since is not compared
    assert [column_label(key) for key in ("irs", "cg_rho2", "dci_disentanglement", "other")] == [
        "IRS", "CG (ρ=2)", "DCI disentanglement", "other"
    ]  # fmt: skip


def test_uc_membership_and_flat_images_by_hand():
    # latent 1 joins both factors' sets at rho 2 only; latent 0 is shape's and latent 2 scale's at rho 1
    assert uc_membership(Q_SETS, 3, 2).tolist() == [[1, 0], [2, 2], [0, 1]]
    with pytest.raises(InvalidArgumentError, match="q_sets: rho1 names latent 3 of 3"):
        uc_membership({"rho1": [[3], [0]]}, 3, 2)
    flat = np.full((3, 4, 4), 0.5)
    flat[1, 0, 0] = 0.6  # std of 15 x 0.5 and one 0.6: 0.1 * sqrt(15) / 16 = 0.0242 >= 0.01
    flat[2, 0, 0] = 0.52  # 0.02 * sqrt(15) / 16 = 0.00484 < 0.01
    assert near_constant(flat).tolist() == [True, False, True]
    assert near_constant(np.full((1, 2, 2, 3), 200, dtype=np.uint8)).tolist() == [True]


def test_scoring_and_the_bootstrap_count_their_steps(lines, capsys):
    rng = np.random.default_rng(3)
    factors = rng.integers(0, 3, size=(60, 2))
    codes = np.column_stack([factors[:, 0] + rng.normal(0, 0.1, 60), rng.normal(size=60), factors[:, 1] * 2.0])
    score_arrays(factors, codes, metrics=["irs", "mig"], bootstrap=4, seed=0)
    err = capsys.readouterr().err
    # metric by metric: IRS running (0/2), then MIG (1/2), then done
    assert "scoring 60 rows: irs: 0/2" in err and "scoring 60 rows: mig: 1/2" in err
    assert "scoring 60 rows: 2/2 done" in err
    seen = counts(err, "bootstrap: 4 resamples of 60 rows")
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]  # resample k of 4 as each ends; the last is the final line
    assert "bootstrap: 4 resamples of 60 rows: 4/4 done" in err


def test_the_cli_resume_refuses_a_changed_config_in_one_line(tmp_path, run_cli):
    config = tmp_path / "study.yaml"
    config.write_text(yaml.safe_dump(tiny_config().model_dump(mode="json")))
    out = tmp_path / "study"
    out.mkdir()
    (out / "config.yaml").write_text(config.read_text())
    code, _, err = run_cli(["disentangle", "study", str(config), "--out", str(out), "--resume", "--set", "seed=3"])
    assert code != 0 and len(err.strip().splitlines()) == 1 and "was started with seed 0, now 3 (" in err
    code, _, err = run_cli(["disentangle", "study", str(config), "--resume"])
    assert code != 0 and "--resume" in err and "--out" in err
    code, out_text, _ = run_cli(["candle", "study", "--help"])
    assert code == 0 and "--resume" in out_text


def test_the_judges_are_counted_and_a_resume_keeps_the_trained_ones(tmp_path, lines, capsys):
    from repscope.studies.candle.cg import train_judges

    arguments = {"data_params": {"train_size": 64, "test_size": 32}, "epochs": 1}
    first = train_judges("dsprites", ["shape", "scale"], tmp_path / "c", **arguments)
    err = capsys.readouterr().err
    assert "2 judges (attribute-cnn): 1/2" in err and "2 judges (attribute-cnn): 2/2 done" in err
    assert "shape judge on dsprites (1 of 2)" in err and "scale judge on dsprites (2 of 2)" in err
    stamp = (tmp_path / "c" / "scale" / "judge.json").stat().st_mtime_ns
    (tmp_path / "c" / "shape" / "judge.json").unlink()  # as if stopped after its training, before its judge
    again = train_judges("dsprites", ["shape", "scale"], tmp_path / "c", resume=True, **arguments)
    err = capsys.readouterr().err
    assert "scale judge" not in err and (tmp_path / "c" / "scale" / "judge.json").stat().st_mtime_ns == stamp
    assert again == first  # shape continued from its last checkpoint: no epoch left, the same weights

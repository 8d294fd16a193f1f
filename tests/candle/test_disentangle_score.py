"""`repscope disentangle score`: the npz reader never unpickles, the bootstrap interval covers what it should."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from repscope.cli import app
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.metrics.disentanglement.bootstrap import bootstrap_interval, scalar_scores
from repscope.studies.candle.score_arrays import read_codes_npz


def mean_metric(factors, codes):
    return {"mean": float(codes[:, 0].mean()), "matrix": [[1.0]], "params": {"p": 1}}


def test_the_percentile_interval_of_a_mean_has_the_normal_width():
    rng = np.random.default_rng(0)
    codes = rng.normal(size=(400, 1))
    factors = np.zeros((400, 1), dtype=int)
    interval = bootstrap_interval(mean_metric, factors, codes, 400, seed=1)["mean"]
    # the standard error of a mean of 400 unit normals is 0.05: a 95% interval is about 0.196 wide
    assert interval["high"] - interval["low"] == pytest.approx(2 * 1.96 * codes.std() / 20, rel=0.2)
    assert interval["low"] < codes.mean() < interval["high"]
    assert interval["mean"] == pytest.approx(codes.mean(), abs=0.01)  # a mean is unbiased under resampling
    assert bootstrap_interval(mean_metric, factors, codes, 50, seed=1) == bootstrap_interval(
        mean_metric, factors, codes, 50, seed=1
    )
    assert set(scalar_scores(mean_metric(factors, codes))) == {"mean"}  # no matrices, no params
    with pytest.raises(InvalidArgumentError, match="--bootstrap"):
        bootstrap_interval(mean_metric, factors, codes, 1)


def test_the_resampled_mean_shows_the_shift_of_a_plug_in_score():
    # the fraction of distinct rows is 1 on the data and about 1 - 1/e on a resample: a shift of -0.37
    def distinct(factors, codes):
        return {"distinct": len(np.unique(codes[:, 0])) / len(codes)}

    codes = np.arange(500.0)[:, None]
    interval = bootstrap_interval(distinct, np.zeros((500, 1), int), codes, 50, seed=0)["distinct"]
    assert interval["mean"] == pytest.approx(1 - np.exp(-1), abs=0.01)
    assert interval["high"] < 1.0  # the interval excludes the score: the reason the mean is reported


def write(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_the_reader_takes_any_npz_and_refuses_what_it_cannot_trust(tmp_path):
    # 30 rows: 15 and 10 rows per class, above the 5 a class needs
    codes = np.random.default_rng(0).normal(size=(30, 2))
    factors, read_codes, sizes = read_codes_npz(write(tmp_path / "a.npz", factors=np.arange(30) % 2, codes=codes))
    assert factors.shape == (30, 1) and np.array_equal(read_codes, codes) and sizes is None
    good = {"factors": np.stack([np.arange(30) % 2, np.arange(30) % 3], 1), "codes": codes}
    assert read_codes_npz(write(tmp_path / "b.npz", **good, factor_sizes=np.array([2, 3])))[2].tolist() == [2, 3]
    cases = {
        "object": ({"factors": good["factors"], "codes": np.array([object()] * 30)}, "object arrays"),
        "missing": ({"factors": good["factors"]}, "no 'codes'"),
        "rows": ({"factors": good["factors"][:5], "codes": codes}, "5 rows"),
        "nan": ({"factors": good["factors"], "codes": np.where(np.eye(30, 2) > 0, np.nan, codes)}, "row 0"),
        "fractional": ({"factors": good["factors"] + 0.5, "codes": codes}, "whole-number"),
        "sizes": ({**good, "factor_sizes": np.array([2, 2])}, "factor 1 has classes outside 0..1"),
    }
    for name, (arrays, message) in cases.items():
        path = tmp_path / f"{name}.npz"
        np.savez(path, **arrays)  # numpy pickles an object array when saving
        with pytest.raises(DataFormatError, match=message):
            read_codes_npz(path)
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(DataFormatError, match="text.npz"):
        read_codes_npz(tmp_path / "text.npz")


def test_the_cli_scores_a_disentangled_code_above_its_rotation(tmp_path):
    rng = np.random.default_rng(0)
    grid = np.stack(np.meshgrid(np.arange(3), np.arange(4), np.arange(5), indexing="ij"), -1).reshape(-1, 3)
    factors = np.repeat(grid, 4, axis=0)
    factors = factors[rng.permutation(len(factors))]
    codes = factors + 0.05 * rng.normal(size=factors.shape)
    rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    runner = CliRunner()
    scores = {}
    for name, values in (("aligned", codes), ("rotated", codes @ rotation)):
        path = write(tmp_path / f"{name}.npz", factors=factors, codes=values)
        out = tmp_path / f"{name}.json"
        result = runner.invoke(app, ["disentangle", "score", str(path), "--out", str(out)])
        assert result.exit_code == 0, result.output
        scores[name] = json.loads(out.read_text())["scores"]
    for key in ("irs", "uc_rho1", "mig", "dci_disentanglement", "sap"):
        assert scores["aligned"][key] > scores["rotated"][key], key
    assert scores["aligned"]["mig"] > 0.9 and scores["aligned"]["uc_rho1"] == 1.0
    again = runner.invoke(app, ["disentangle", "score", str(tmp_path / "aligned.npz"), "--out", str(out)])
    assert again.exit_code != 0  # an existing result is not overwritten


def test_a_trained_vae_run_is_scored_on_its_own_test_images(tmp_path):
    from repscope.studies.candle.score_arrays import codes_of_run
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    config = TrainConfig(
        model=Named(name="beta-vae", params={"latent_dim": 4}),
        data=Named(name="dsprites", params={"train_size": 256, "test_size": 120}),
        trainer=TrainerSection(max_epochs=1),
        batch_size=64,
    )
    outcome = fit(config, out=tmp_path / "run")
    factors, codes, names = codes_of_run(tmp_path / "run", n=100, seed=3)
    # dSprites' colour is constant: dropped; the other five factors stay
    assert names == ["shape", "scale", "orientation", "posX", "posY"] and factors.shape == (100, 5)
    test = outcome.data.batch("test", np.random.default_rng(3).permutation(120)[:100], ["image"])
    assert np.allclose(codes, outcome.task.encode(test["image"]), atol=1e-6)
    result = CliRunner().invoke(app, ["disentangle", "score", str(tmp_path / "run"), "--n", "100", "--metric", "mig"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["factor_names"] == names


def test_an_infogan_run_is_scored_on_the_codes_its_recognition_network_infers(tmp_path, monkeypatch):
    from repscope.data.datasets import ArraySplit, Dataset, FieldSpec
    from repscope.studies.candle.score_arrays import codes_of_run
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit
    from repscope.train.reader import TrainedRun

    config = TrainConfig(
        model=Named(name="infogan"),
        data=Named(name="digits", params={"train_size": 64, "test_size": 40, "target": "none"}),
        trainer=TrainerSection(max_epochs=1),
        batch_size=32,
    )
    outcome = fit(config, out=tmp_path / "run")
    # no registered 28x28 dataset has factors: the run's test digits with their class (and its parity) as factors
    test = outcome.data.arrays("test", ["image", "label"])
    factors = np.stack([test["label"], test["label"] % 2], axis=1).astype(np.int64)
    fields = {
        "image": outcome.data.fields["image"],
        "factors": FieldSpec("categorical", (2,), "int64", names=("digit", "parity")),
    }
    split = ArraySplit({"image": test["image"], "factors": factors})
    with_factors = Dataset("digits", {"train": split, "test": split}, fields)
    monkeypatch.setattr(TrainedRun, "dataset", lambda self, **overrides: with_factors)
    scored, codes, names = codes_of_run(tmp_path / "run", n=30, seed=1)
    rows = np.random.default_rng(1).permutation(40)[:30]
    assert names == ["digit", "parity"] and np.array_equal(scored, factors[rows])
    # one column per code of setting A (c1 categorical, c2 and c3 continuous), as encode documents
    assert codes.shape == (30, 3) and np.allclose(codes, outcome.task.encode(test["image"][rows]), atol=1e-6)
    assert set(np.unique(codes[:, 0])) <= set(range(10))


@pytest.mark.slow  # 6 trainings; make test keeps CG of runs in the disentangle study test and the hand cases
def test_cg_of_a_run_is_the_metric_on_its_decoder_and_the_judges(tmp_path):
    import torch

    from repscope.metrics.disentanglement.counterfactual import counterfactual_generativeness
    from repscope.metrics.disentanglement.irs import unique_capture
    from repscope.studies.candle.cg import cg_of_run
    from repscope.studies.candle.score_arrays import codes_of_run
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit, load_task

    fit(
        TrainConfig(
            model=Named(name="beta-vae", params={"latent_dim": 4}),
            data=Named(name="dsprites", params={"train_size": 128, "test_size": 64}),
            trainer=TrainerSection(max_epochs=1),
            batch_size=64,
        ),
        out=tmp_path / "run",
    )
    runner = CliRunner()
    names = ["shape", "scale", "orientation", "posX", "posY"]
    arguments = [
        "disentangle",
        "train-judges",
        "--out",
        str(tmp_path / "clf"),
        "--train-size",
        "128",
        "--test-size",
        "64",
    ]
    result = runner.invoke(app, [*arguments, "--epochs", "1"])
    assert result.exit_code == 0, result.output
    assert "below 0.9 identifiable test accuracy" in result.stderr  # one epoch on 128 images (the judges checked below)
    assert all((tmp_path / "clf" / name / "metrics.json").is_file() for name in names)
    with pytest.warns(RuntimeWarning, match="CG judged by weak judges: "):  # one epoch on 128 images
        scores = cg_of_run(tmp_path / "run", tmp_path / "clf", n=32, seed=1)
    # the same numbers from the metric called directly on the run's decoder and the judges
    factors, codes, _ = codes_of_run(tmp_path / "run", n=32, seed=1)
    models = [load_task(tmp_path / "clf" / name) for name in names]
    q_sets = unique_capture(factors, codes, rho=(1,))["q_sets"]["rho1"]
    direct = counterfactual_generativeness(
        factors,
        codes,
        q_sets,
        load_task(tmp_path / "run").decode,
        lambda images: [torch.softmax(m.outputs(images), dim=1).numpy() for m in models],
    )
    assert scores["cg_rho1"] == pytest.approx(direct["cg"]) and 0.0 <= scores["cg_rho2"] <= 1.0
    # the result carries its judges: each judge's held-out accuracy on what the images show (its
    # judge.json); equal to the run's raw test accuracy but for orientation, where a turned square's
    # symmetric class counts as right, so never lower there
    recorded = {name: json.loads((tmp_path / "clf" / name / "metrics.json").read_text()) for name in names}
    judged = {name: json.loads((tmp_path / "clf" / name / "judge.json").read_text()) for name in names}
    assert scores["judge_accuracy"] == {name: judged[name]["identifiable_accuracy"] for name in names}
    assert all(judged[name]["accuracy"] == recorded[name]["test_accuracy"] for name in names)
    plain = [name for name in names if name != "orientation"]
    assert all(judged[name]["identifiable_accuracy"] == recorded[name]["test_accuracy"] for name in plain)
    assert judged["orientation"]["identifiable_accuracy"] >= recorded["orientation"]["test_accuracy"]
    weak = [name for name in names if judged[name]["identifiable_accuracy"] < 0.9]
    assert scores["weak_judges"] == weak and scores["judge_ok"] is (not weak)
    assert scores["details"]["rho2"]["judge_accuracy"] == [judged[name]["identifiable_accuracy"] for name in names]
    score = ["disentangle", "score", str(tmp_path / "run"), "--n", "32", "--metric", "irs"]
    with_cg = runner.invoke(app, [*score, "--judges", str(tmp_path / "clf")])
    assert with_cg.exit_code == 0, with_cg.output
    written = json.loads(with_cg.stdout)
    assert "cg_rho1" in written["scores"] and written["metrics"]["cg"]["judge_ok"] is (not weak)
    # one epoch on 128 images: some judge is below 0.9, and the command says so in one line
    assert weak and with_cg.stderr.count("warning: CG judged by weak judges, below 0.9") == 1
    refused = runner.invoke(app, [*score, "--judges", str(tmp_path / "clf"), "--refuse-weak-judges"])
    assert refused.exit_code != 0 and isinstance(refused.exception, InvalidArgumentError)
    assert str(refused.exception).startswith("judge_accuracy:") and weak[0] in str(refused.exception)
    lenient = runner.invoke(app, [*score, "--judges", str(tmp_path / "clf"), "--min-judge-accuracy", "0"])
    assert lenient.exit_code == 0 and "warning" not in lenient.stderr
    assert json.loads(lenient.stdout)["metrics"]["cg"]["judge_ok"] is True

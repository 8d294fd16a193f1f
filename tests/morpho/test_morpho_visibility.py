"""What a researcher sees of the Morpho-MNIST studies: true progress counts for the scikit-learn steps,
the paper's Table 3 beside ours, and ``--resume`` (done work kept, a changed config refused)."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from repscope.errors import InvalidArgumentError
from repscope.studies.morpho import supervised
from repscope.studies.morpho.resume import first_difference
from repscope.studies.morpho.supervised import SupervisedConfig, paper_comparison, run_supervised

TINY_DATA = {"source": "mnist-sample", "seed": 0, "train_size": 300, "test_size": 120}
TINY_TRAINING = {"trainer": {"max_epochs": 1}, "batch_size": 32}


@pytest.fixture(scope="module", autouse=True)
def shared_home(tmp_path_factory):
    """One REPSCOPE_HOME for the module, so the tiny Morpho-MNIST build is made once."""
    mp = pytest.MonkeyPatch()
    mp.setenv("REPSCOPE_HOME", str(tmp_path_factory.mktemp("home")))
    yield
    mp.undo()


@pytest.fixture
def lines_mode(monkeypatch):
    monkeypatch.setenv("REPSCOPE_PROGRESS", "lines")


class _Recorder:
    """A stand-in estimator: remembers the sizes of what it is given, predicts the row sums."""

    def __init__(self):
        self.fitted, self.chunks = None, []

    def fit(self, x, y):
        self.fitted = x.shape
        return self

    def predict(self, x):
        self.chunks.append(len(x))
        return x.sum(axis=1)


def test_svm_fit_says_when_it_starts_and_ends_with_the_true_count(lines_mode, capsys):
    images = np.arange(7 * 28 * 28, dtype=np.uint8).reshape(7, 28, 28)
    estimator = supervised._fit_sklearn(_Recorder(), images, np.arange(7), "fitting svm on 7 digits (abnormality)")
    assert estimator.fitted == (7, 784)
    lines = capsys.readouterr().err.strip().splitlines()
    # a first line at once (before the fit), and the last with 1 of 1 (never "0 done")
    assert lines[0].startswith("fitting svm on 7 digits (abnormality): 0/1 (0%)")
    assert re.fullmatch(r"fitting svm on 7 digits \(abnormality\): 1/1 done in \d+\.\d s", lines[-1])
    assert not any(": 0 done" in line for line in lines)


def test_prediction_is_counted_in_chunks_and_matches_one_call(lines_mode, monkeypatch, capsys):
    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0")
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, size=(1234, 28, 28), dtype=np.uint8)
    recorder = _Recorder()
    predicted = supervised._predict_sklearn(recorder, images, "predicting 1234 plain digits with knn (recognition)")
    assert recorder.chunks == [500, 500, 234]
    expected = images.reshape(1234, -1).astype(np.float32).sum(axis=1) / 255.0
    np.testing.assert_allclose(predicted, expected, rtol=1e-6)
    err = capsys.readouterr().err
    counts = [int(n) for n in re.findall(r"with knn \(recognition\): (\d+)/1234 \(", err)]
    assert counts == [500, 1000]  # 1234 itself is the final line's
    assert (
        err.strip().splitlines()[-1].startswith("predicting 1234 plain digits with knn (recognition): 1234/1234 done")
    )


def test_paper_comparison_puts_the_printed_table_3_beside_ours():
    table = pd.DataFrame(
        {
            "Model": ["kNN", "LeNet-5"],
            "Digit recognition PLAIN (%)": [93.0, 96.9],
            "Thickness regression (RMSE, px)": [0.442, 0.363],
        }
    )
    columns = ["Digit recognition PLAIN (%)", "Thickness regression (RMSE, px)"]
    beside = paper_comparison(table, columns)
    assert list(beside.columns) == ["model", "task", "ours", "paper", "difference"]
    assert list(beside["model"]) == ["kNN", "kNN", "LeNet-5", "LeNet-5"]
    # Castro et al., Table 3: kNN 96.25 % and 0.4674 px; LeNet-5 98.95 % and 0.2790 px
    assert beside["paper"].tolist() == [96.25, 0.4674, 98.95, 0.2790]
    assert beside["difference"].tolist() == pytest.approx([93.0 - 96.25, 0.442 - 0.4674, 96.9 - 98.95, 0.363 - 0.2790])


def test_first_difference_names_the_first_differing_key_in_order():
    stored = {"data": {"source": "mnist-sample", "copies": 9}, "models": ["knn", "svm"], "seed": 0}
    assert first_difference(stored, json.loads(json.dumps(stored))) is None
    assert first_difference(stored, {**stored, "seed": 1}) == "seed"
    changed = {"data": {"source": "mnist-sample", "copies": 1}, "models": ["knn", "mlp"], "seed": 1}
    assert first_difference(stored, changed) == "data.copies"  # the first in the config's order
    assert first_difference(stored, {**stored, "models": ["knn", "mlp"]}) == "models[1]"
    assert first_difference(stored, {**stored, "models": ["knn"]}) == "models[1]"
    assert first_difference(stored, {"data": stored["data"], "models": stored["models"]}) == "seed"
    ignored = frozenset({"data.copies"})
    assert first_difference(stored, {**stored, "data": {"source": "mnist-sample", "copies": 2}}, ignore=ignored) is None


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow  # about 35 s on 2 cores: builds the tiny sets, fits kNN and trains an MLP
def test_resume_keeps_done_work_and_refuses_a_changed_config(tmp_path, monkeypatch, run_cli, capsys):
    import repscope.studies.common as common

    config = SupervisedConfig(data=TINY_DATA, training=TINY_TRAINING, models=["knn", "mlp"], tasks=["recognition"])
    out = tmp_path / "run"
    run_supervised(config, out=out)
    first = pd.read_csv(out / "tables" / "table3.csv")
    knn_step = out / "steps" / "knn-recognition.json"
    checkpoint = out / "models" / "mlp-recognition" / "checkpoints" / "final.ckpt"
    kept = {knn_step: (knn_step.stat().st_mtime_ns, _digest(knn_step)), checkpoint: (0, _digest(checkpoint))}
    # as if stopped after the MLP's training and before its evaluation was recorded
    (out / "steps" / "mlp-recognition.json").unlink()
    (out / "report.html").unlink()

    def no_fit(*args, **kwargs):
        raise AssertionError("a finished step was done again")

    monkeypatch.setattr(supervised, "_fit_sklearn", no_fit)
    monkeypatch.setattr(common, "fit", no_fit)
    report = run_supervised(config, out=out, resume=True)
    assert report.exists()
    assert knn_step.stat().st_mtime_ns == kept[knn_step][0] and _digest(knn_step) == kept[knn_step][1]
    assert _digest(checkpoint) == kept[checkpoint][1]
    second = pd.read_csv(out / "tables" / "table3.csv")
    pd.testing.assert_frame_equal(first, second)  # the MLP loaded from its run gives the same accuracy
    assert (out / "steps" / "mlp-recognition.json").exists()

    longer = config.model_copy(deep=True)
    longer.training.trainer.max_epochs = 2
    with pytest.raises(
        InvalidArgumentError, match=r"--resume: .* was started with training\.trainer\.max_epochs 1, now 2 \("
    ):
        run_supervised(longer, out=out, resume=True)

    # the CLI: one line naming the key, exit status non-zero, nothing touched
    config_file = tmp_path / "tiny.yaml"
    config_file.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    capsys.readouterr()  # what the runs above printed
    code, stdout, stderr = run_cli(
        ["morpho", "supervised", str(config_file), "--out", str(out), "--resume", "--set", "seed=3"]
    )
    assert code != 0
    message = [line for line in stderr.splitlines() if line.strip()]
    assert len(message) == 1 and "was started with seed 0, now 3 (" in message[0], stderr
    assert _digest(knn_step) == kept[knn_step][1]
    # without --resume the full run directory is refused, and the message offers --resume
    code, _, stderr = run_cli(["morpho", "supervised", str(config_file), "--out", str(out)])
    assert code != 0 and "--resume" in stderr


def test_measure_reports_the_running_total_of_digits_done():
    """The bar of a caller shows what measure() reports: digits done so far, ending at n of n (one chunk's
    size gave ``500/2000 done``)."""
    from repscope.data.morpho import measure

    digits = np.zeros((7, 28, 28), np.uint8)
    digits[:, 8:20, 12:16] = 255
    seen = []
    measure(digits, chunk_size=3, progress=seen.append)
    assert seen == [3, 6, 7]
    seen.clear()
    measure(digits, chunk_size=3, jobs=2, progress=seen.append)  # in order, whichever worker ends first
    assert seen == [3, 6, 7]


def test_measuring_samples_counts_the_digits_done_so_far(lines_mode, capsys, monkeypatch):
    """The diversity study's bar follows measure()'s running total and ends at n of n."""
    from repscope import progress
    from repscope.studies.morpho import diversity

    seen = []

    def fake_measure(images, progress=None):
        for done in (2, 4, 6):
            progress(done)  # three chunks of 2 digits, as a running total
        return pd.DataFrame({"index": range(6)})

    monkeypatch.setattr(diversity, "measure", fake_measure)
    real_bar = progress.progress_bar

    def recording_bar(description, total=None, **kwargs):
        bar = real_bar(description, total=total, **kwargs)
        update = bar.__enter__()

        class Wrapped:
            def __enter__(self):
                def record(done, *args, **kw):
                    seen.append(done)
                    return update(done, *args, **kw)

                return record

            def __exit__(self, *exc):
                return bar.__exit__(*exc)

        return Wrapped()

    monkeypatch.setattr(diversity, "progress_bar", recording_bar)
    table = diversity.measured(np.zeros((6, 28, 28), np.uint8), "measuring 6 samples")
    assert len(table) == 6
    assert seen == [2, 4, 6]

"""Reports looked at in headless Chromium, as a researcher sees them (repscope.report.browser).

(a) a hand-made bad page shows each problem the check looks for, and a page built with
:class:`repscope.report.Report` holding the widest tables of the studies passes; (b) reports written by
the studies' own code, on the cheapest real path of each, pass. Skipped only where Chromium or
playwright is not installed (``make test`` installs both where it can).
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
import sys
import zlib

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from repscope.cli import app, main
from repscope.report import Report
from repscope.report.browser import BrowserMissingError, check_report, check_reports, find_chromium


def _browser_missing() -> str | None:
    try:
        find_chromium()
    except BrowserMissingError as error:
        return str(error)
    try:
        import playwright.sync_api  # noqa: F401, PLC0415
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


MISSING = _browser_missing()
needs_browser = pytest.mark.skipif(MISSING is not None, reason=f"no headless browser: {MISSING}")
runner = CliRunner()


def _png(width: int = 3, height: int = 2) -> bytes:
    """A grey PNG of ``width`` x ``height`` px, written by hand (8-bit greyscale, no filter)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + bytes([128] * width) for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


GOOD_PNG = _png()

BAD_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>bad</title></head><body style="margin: 8px">
<h2>Intro</h2>
<p>Each model writes ``metrics.json`` (see :mod:`repscope.run_directory`),
files under softlabels/<architecture>.npz.</p>
<h2>Numbers</h2>
<div style="overflow-x: auto"><table style="width: 3000px"><tr><td>wide</td></tr></table></div>
<img src="data:image/png;base64,iVBORw0KGgo=" alt="traversal of model A">
<img src="data:image/png;base64,{good}" alt="fine">
<pre>``literal in a code block is fine``</pre>
</body></html>
"""

# the columns of the invariance study's 16 features (the widest table of the studies)
FEATURES = (
    "squared_value_mean mean std significant_variance sensitivity horizontal_gradient_mean horizontal_gradient_std "
    "horizontal_gradient_row_std vertical_gradient_mean vertical_gradient_std vertical_gradient_column_std "
    "diagonal_gradient_mean diagonal_gradient_std overall_gradient discontinuity asymmetry"
).split()


@needs_browser
def test_a_bad_page_shows_each_problem(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text(BAD_PAGE.replace("{good}", base64.b64encode(GOOD_PNG).decode()))
    problems = check_report(page)
    text = "\n".join(problems)
    # the table: 3000 px in the box of a 1280 px window less the body's 2 x 8 px margin
    assert 'table 1 of 1 (under "Numbers") is 3000 px wide in a 1264 px box' in text
    # the broken image is named by its alt text; the 2 x 3 px one loads
    assert [p for p in problems if "did not load" in p] == [
        'image 1 of 2 ("traversal of model A") did not load (an embedded image)'
    ]
    assert any("reStructuredText literal" in p and "``metrics.json``" in p for p in problems)
    assert any("reStructuredText role" in p and ":mod:`repscope.run_directory`" in p for p in problems)
    assert any("<architecture>" in p and "unescaped" in p for p in problems)
    assert len(problems) == 5, problems  # the ``...`` inside <pre> is not a leak


@needs_browser
def test_a_page_wider_than_the_window_and_a_clean_page(tmp_path):
    wide = tmp_path / "wide.html"
    wide.write_text('<!DOCTYPE html><html><body><div style="width: 1500px">x</div></body></html>')
    clean = tmp_path / "clean.html"
    clean.write_text("<!DOCTYPE html><html><body><p>3 &lt; 4 and <code>``x``</code></p></body></html>")
    results = check_reports([wide, clean])
    # 1500 px + the default 8 px body margin on the left
    assert results[wide] == ["the page is 1508 px wide, wider than the 1280 px window: the reader scrolls sideways"]
    assert results[clean] == []


@needs_browser
def test_a_report_with_the_widest_tables_and_docstring_prose_passes(tmp_path):
    rng = np.random.default_rng(3)
    features = pd.DataFrame(rng.random((5, 16)) * 10.0 ** rng.integers(-10, 3, (5, 16)), columns=FEATURES)
    features.insert(0, "modality", ["max@CONF", "max@CONV-1", "mean@CONV-1", "max@CONV-2", "mean@CONV-2"])
    mmd = pd.DataFrame(
        {
            "model": ["vae-16-d", "gan-2-d"],
            "name": ["VAE 16-d", "GAN 2-d"],
            "latent_dim": [16, 2],
            "mmd2": [-1.234e-5, 0.0123],
            "mmd2_std_error": [1.1e-6, 2.2e-3],
            "p_value": [0.43, 1e-9],
            "quadratic_mmd2": [1.2e-4, 0.3],
            "quadratic_p_value": [0.002, 0.5],
            "replica_groups": [0, 3],
            "fraction_in_replica_groups": [0.0, 0.0123],
            "valid_samples": [10000, 9999],
        }
    )
    report = Report("Widest tables", quick=True)
    report.add_paragraph(
        "Each model writes ``metrics.json`` (:mod:`repscope.run_directory`, :func:`~repscope.run_directory.a`)."
    )
    report.add_table(features, title="The 16 features", caption="A caption that runs on " * 30)
    report.add_table(mmd, title="MMD", labels=True)
    report.warning("judge accuracy 0.11 is at chance: ``cg`` is meaningless")
    report.add_figure(GOOD_PNG, caption="a figure")
    path = report.write(tmp_path / "report.html")
    assert check_report(path) == []


# -- (b) reports written by the studies' own code ------------------------------------------------------


def _cli(args: list[str]) -> None:
    try:
        main([str(a) for a in args])
    except SystemExit as exit_:
        assert not exit_.code, f"repscope {' '.join(map(str, args))} exited with {exit_.code}"


def _training(tmp_path):
    from repscope.config import shipped_config_path

    out = tmp_path / "bvae"
    config = shipped_config_path("train-beta-vae-dsprites")
    sets = ["data.params.train_size=256", "data.params.test_size=32", "batch_size=32", "trainer.max_epochs=1"]
    _cli(["train", config, "--out", out, *sum((["--set", s] for s in sets), [])])
    return out / "report.html"


def _invariance_test(tmp_path):
    import torch

    from repscope.models.invariance.simplenet import SimpleNet

    torch.manual_seed(0)
    weights = tmp_path / "cnn5.pt"
    torch.save(SimpleNet().state_dict(), weights)
    out = tmp_path / "test"
    args = ["invariance", "test", "--model", weights, "--arch", "cnn5", "--data", "digits"]
    _cli([*args, "--data-param", "test_size=60", "--n", 40, "--range", 4, "--steps", 5, "--out", out])
    return out / "report.html"


def _sprites_coherency(tmp_path):
    from repscope.data.multimodal.attributes import compose_captions

    truth = compose_captions(2, np.array([[0, 0], [1, 1], [2, 0], [0, 1]]))
    folder = tmp_path / "outputs" / "image_to_text"
    folder.mkdir(parents=True)
    (folder / "truth.txt").write_text("\n".join(truth) + "\n")
    (folder / "captions.txt").write_text("big square\nsmall elipse\nbig heart extra\nbig\n")
    result = runner.invoke(
        app, ["sprites", "evaluate", str(tmp_path / "outputs"), "--level", "2", "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 0, result.output
    return tmp_path / "run" / "report.html"


def _morpho_demo(tmp_path):
    from repscope.studies.morpho.demo import DemoConfig, run_demo

    config = DemoConfig(
        train_size=60, test_size=40, seed=1, diversity_epochs=1, diversity_samples=150, diversity_train=200
    )
    return run_demo(config, out=tmp_path / "demo")


def _zeroshot(tmp_path):
    tiny = {
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
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny))
    _cli(["zeroshot", "study", config, "--out", tmp_path / "run", "--workers", 1])
    return tmp_path / "run" / "report.html"


def _invariance_assess(tmp_path):
    from repscope.metrics.invariance.features import FEATURE_NAMES

    # a repository as `invariance repo build` writes it, 24 models, half of them trained invariant
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "repository.json").write_text(json.dumps({"config": {"transform": "rotation"}}))
    rng = np.random.default_rng(0)
    for k in range(24):
        invariant = k % 2 == 0
        model = repo / f"model-{k:03d}"
        model.mkdir()
        settings = {"model": f"{k:03d}", "augment": "covering" if invariant else "none", "anomaly": "none"}
        metadata = {"settings": settings, "accuracy": 0.95, "robust_accuracy": float(rng.uniform(0.5, 0.9))}
        (model / "metadata.json").write_text(json.dumps({**metadata, "curves": {"val_loss": [0.5, 0.4]}}))
        modalities = ["max@CONF", "max@CONV-1", "mean@CONV-1", "max@CONV-2", "mean@CONV-2"]
        features = {m: {f: float(rng.normal()) for f in FEATURE_NAMES} for m in modalities}
        features["max@CONF"]["mean"] = 0.05 if invariant else 0.1
        features["max@CONF"]["std"] = 0.01 if invariant else 0.2
        (model / "features.json").write_text(json.dumps(features))
    _cli(["invariance", "assess", "train", repo, "--out", tmp_path / "assess"])
    return tmp_path / "assess" / "report.html"


def _mmvae_leaderboard(tmp_path):
    from repscope.studies.multimodal.leaderboard import build_leaderboard

    keys = ("text_to_image_strict", "text_to_image_features", "image_to_text_strict", "image_to_text_features")
    keys += ("image_to_text_letters", "joint_strict", "joint_features")
    for folder, model, level, seed in (("a", "mopoe", 2, 0), ("b", "mvae", 1, 0), ("c", "mvae", 1, 1)):
        run = tmp_path / "sweep" / folder
        (run / "evaluation").mkdir(parents=True)
        config = {
            "model": {"name": model, "params": {"latent_dim": 16}},
            "data": {"name": "cdsprites", "params": {"level": level, "train_size": 100, "seed": 0}},
            "trainer": {"max_epochs": 1},
            "batch_size": 64,
            "seed": seed,
        }
        (run / "config.yaml").write_text(yaml.safe_dump(config))
        metrics = {"model": model, "level": level, "n": 100, "seed": 0}
        metrics.update({key: 0.5 + 0.1 * seed if "features" in key else 40.0 + seed for key in keys})
        (run / "evaluation" / "metrics.json").write_text(json.dumps(metrics))
    build_leaderboard([tmp_path / "sweep"], tmp_path / "board")
    return tmp_path / "board" / "leaderboard.html"


def _disentangle_study(tmp_path):
    from repscope.studies.candle.disentanglement import DisentangleStudyConfig, run_disentangle_study
    from repscope.studies.common import MemberModel

    config = DisentangleStudyConfig(
        data={"name": "dsprites", "params": {"train_size": 256, "test_size": 64}},
        models=[MemberModel(label="my beta-VAE", name="beta-vae", params={"latent_dim": 4})],
        evaluation_n=40,
        classifier_epochs=1,
    )
    config.training.trainer.max_epochs = 1
    return run_disentangle_study(config, out=tmp_path / "study")


TINY_MORPHO = {"data": {"source": "mnist-sample", "seed": 0, "train_size": 300, "test_size": 120}}
TINY_MORPHO["training"] = {"trainer": {"max_epochs": 1}, "batch_size": 32}


def _morpho_supervised(tmp_path):
    from repscope.studies.morpho.supervised import SupervisedConfig, run_supervised

    return run_supervised(SupervisedConfig(**TINY_MORPHO), out=tmp_path / "run")


def _morpho_disentangle(tmp_path):
    from repscope.studies.morpho.infogan import DisentangleConfig, run_disentangle

    config = DisentangleConfig(
        **TINY_MORPHO,
        settings=[{"label": "InfoGAN-A", "setting": "A"}],
        generated_samples=200,
        traversal_rows=2,
        traversal_steps=5,
    )
    run_disentangle(config, out=tmp_path / "run")
    return tmp_path / "run" / "report.html"


class _ShapeZeroClassifiers:
    """Stands in for the level-1 attribute CNNs: every image reads as shape 0 (square)."""

    accuracies = {"shape": 1.0}

    def predict_with_confidence(self, images):
        return np.zeros((len(images), 1), np.int64), np.ones((len(images), 1))

    def judge(self, images):
        from repscope.studies.multimodal.judges import Judgement  # noqa: PLC0415

        table, confidence = self.predict_with_confidence(images)
        return Judgement(table, confidence, np.ones(len(images), bool), np.zeros(len(images)))

    def familiarity(self, confidence):
        return {"mean_confidence": {"shape": 1.0}, "warning": None}


def _mmvae_evaluation(tmp_path):
    from repscope.studies.multimodal.evaluate import evaluate_run
    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    text = {"width": 16, "layers": 1, "hidden": 32}
    networks = {
        "image": {"field": "image", "network": "fc-image", "params": {"hidden": 32}, "likelihood": "gaussian"},
        "text": {"field": "text", "network": "text-transformer", "params": text, "likelihood": "categorical"},
    }
    networks["text"].update({"mask": "mask", "pad_class": 0})
    config = TrainConfig(
        model=Named(name="mopoe", params={"latent_dim": 4, "modalities": networks}),
        data=Named(name="cdsprites", params={"level": 1, "train_size": 128, "val_size": 32, "test_size": 32}),
        trainer=TrainerSection(max_epochs=1),
        batch_size=64,
    )
    fit(config, out=tmp_path / "run", report=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "repscope.studies.multimodal.coherency.load_judges",
            lambda level, trainer=None: _ShapeZeroClassifiers(),
        )
        evaluate_run(tmp_path / "run", n=24, seed=1, k=4, n_analysis=24)
    return tmp_path / "run" / "evaluation" / "report.html"


# the CANDLE study and Morpho-MNIST diversity reports are checked in their own end-to-end tests
# (tests/candle/test_candle_study.py, tests/morpho/test_studies.py), which already write a real one
STUDIES = [
    pytest.param(_sprites_coherency, id="sprites-coherency", marks=pytest.mark.slow),
    pytest.param(_invariance_test, id="invariance-test", marks=pytest.mark.slow),
    pytest.param(_training, id="training", marks=pytest.mark.slow),
    pytest.param(_morpho_demo, id="morpho-demo", marks=pytest.mark.slow),
    pytest.param(_zeroshot, id="zeroshot-study", marks=pytest.mark.slow),
    pytest.param(_invariance_assess, id="invariance-assess", marks=pytest.mark.slow),
    pytest.param(_mmvae_leaderboard, id="mmvae-leaderboard"),
    pytest.param(_disentangle_study, id="disentangle-study", marks=pytest.mark.slow),
    pytest.param(_morpho_supervised, id="morpho-supervised", marks=pytest.mark.slow),
    pytest.param(_morpho_disentangle, id="morpho-disentangle", marks=pytest.mark.slow),
    pytest.param(_mmvae_evaluation, id="mmvae-evaluation", marks=pytest.mark.slow),
]


@needs_browser
@pytest.mark.parametrize("build", STUDIES)
def test_a_study_report_passes_the_browser_check(build, tmp_path, monkeypatch):
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path / "home"))  # datasets a study builds stay in the test's folder
    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    path = build(tmp_path)
    assert path.is_file()
    problems = check_report(path)
    assert problems == [], "\n".join(problems)


# -- the command -----------------------------------------------------------------------------------------


@needs_browser
def test_report_check_command_prints_one_line_per_problem(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><p>**bold** text</p></body></html>")
    good = tmp_path / "run" / "report.html"  # a run directory stands for its report.html
    good.parent.mkdir()
    good.write_text("<!DOCTYPE html><html><body><p>fine</p></body></html>")
    result = runner.invoke(app, ["report", "check", str(bad), str(good.parent)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f'{bad}: markup leaks into the text: reStructuredText/Markdown bold (**): "**bold** text"'
    ]
    result = runner.invoke(app, ["report", "check", str(good)])
    assert result.exit_code == 0 and result.output == "1 report(s) checked in Chromium: no problems\n"


def test_report_check_without_a_browser_is_one_clear_line(tmp_path, monkeypatch, capsys):
    page = tmp_path / "r.html"
    page.write_text("<!DOCTYPE html><html><body></body></html>")
    monkeypatch.setenv("REPSCOPE_CHROMIUM", str(tmp_path / "no-chromium"))
    with pytest.raises(SystemExit) as exit_:
        main(["report", "check", str(page)])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and len(err.strip().splitlines()) == 1
    assert f"REPSCOPE_CHROMIUM={tmp_path / 'no-chromium'} is not an executable file" in err
    monkeypatch.delenv("REPSCOPE_CHROMIUM")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(BrowserMissingError, match="apt-get install chromium"):
        find_chromium()
    with pytest.raises(SystemExit):
        main(["report", "check", str(tmp_path / "absent.html")])
    assert "absent.html is not a file" in capsys.readouterr().err
    # a browser but no playwright: the one line says how to install it
    monkeypatch.setenv("REPSCOPE_CHROMIUM", sys.executable)
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # import fails
    with pytest.raises(SystemExit) as exit_:
        main(["report", "check", str(page)])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and len(err.strip().splitlines()) == 1 and "pip install playwright" in err


def test_metrics_read_from_json_get_readable_rows_with_the_key_as_tooltip(tmp_path):
    # json keys as a study writes them: the check reads the page, not metrics.json
    (tmp_path / "metrics.json").write_text(json.dumps({"dci_disentanglement": 0.5}))
    report = Report("r")
    report.add_metrics(json.loads((tmp_path / "metrics.json").read_text()), labels=True)
    assert '<th scope="row" title="dci_disentanglement">DCI disentanglement</th>' in report.render()

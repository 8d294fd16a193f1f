"""Every command that trains hands the Lightning flags to every training it runs (issue 27).

Each registered command that takes the flags (``trains`` in :mod:`repscope.studies.registry`), and each
plain command that trains classifiers, runs at its smallest with ``--accelerator gpu`` while
``lightning.pytorch.Trainer`` is a recorder: it notes the accelerator asked for, then builds the real
Trainer on the CPU (so this runs without a GPU). ``check_trainer``, which refuses "gpu" on a machine
without one before anything trains, is switched off. Every Trainer of a training must have asked for
"gpu" (issue 27: the factor classifiers of ``disentangle study`` trained on the CPU), and at least the
trainings the command runs must have happened, so a command that trains nothing cannot pass.

:func:`repscope.train.fitting.evaluate_task`'s Trainer (the validation pass over the test split after a
training) is counted too: it runs where the training ran. To keep the file short, steps that train
nothing are replaced: the zero-shot report's Isomap / t-SNE projections, and the CANDLE study's scoring
and traversals (the same code runs in the dSprites study here; tests/candle runs it on CANDLE).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import lightning.pytorch as pl
import numpy as np
import pytest
import yaml
from matplotlib.figure import Figure
from PIL import Image
from typer.testing import CliRunner

from repscope.cli import app
from repscope.studies.registry import COMMANDS

RealTrainer = pl.Trainer


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory):
    """One REPSCOPE_HOME for the module, so the tiny Morpho-MNIST build is made once."""
    return tmp_path_factory.mktemp("home")


@pytest.fixture
def trainers(monkeypatch, shared_home):
    """The accelerator every Trainer was asked for, with the function that built it: ``[(accelerator,
    caller), ...]``; each Trainer is built on the CPU."""
    records: list[tuple[str, str]] = []

    class RecordingTrainer(RealTrainer):
        def __init__(self, *args, accelerator="auto", **kwargs):
            records.append((str(accelerator), sys._getframe(1).f_code.co_name))
            super().__init__(*args, accelerator="cpu", **kwargs)

    # repscope.train.fitting builds every Trainer as pl.Trainer (lightning.pytorch's attribute)
    monkeypatch.setattr(pl, "Trainer", RecordingTrainer)
    monkeypatch.setattr("repscope.train.fitting.check_trainer", lambda config: None)
    monkeypatch.setenv("REPSCOPE_HOME", str(shared_home))
    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    # figures that train nothing and take seconds (t-SNE)
    monkeypatch.setattr("repscope.studies.zeroshot.report.projection_grid", lambda *args, **kwargs: Figure((1, 1)))
    return records


def _sets(*items: str) -> list[str]:
    return [word for item in items for word in ("--set", item)]


def _yaml(path: Path, data: dict) -> str:
    path.write_text(yaml.safe_dump(data))
    return str(path)


# --------------------------------------------------------------------------------------------
# inputs some commands need


def _candle_folder(root: Path) -> Path:
    """A CANDLE folder in the published layout (PNG + JSON per render), no Blender: each object in its two
    confounded colours, 2 sizes, 2 rotations, 2 lights; the object is a coloured box on a grey scene."""
    from repscope.data.candle.dataset import CONFOUNDED_COLORS

    rgb = {"red": (220, 30, 30), "blue": (30, 30, 220), "yellow": (230, 220, 40), "purple": (140, 40, 160)}
    rgb["orange"] = (240, 140, 30)
    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    k = 0
    for obj, colors in CONFOUNDED_COLORS.items():
        for color in colors:
            for size in (1, 3):
                for rotation in (0, 45):
                    for light in ("left", "right"):
                        x0, y0, side = int(rng.integers(0, 50)), int(rng.integers(0, 30)), 6 * size
                        image = np.full((60, 80, 3), 90, np.uint8)
                        image[y0 : y0 + side, x0 : x0 + side] = rgb[color]
                        Image.fromarray(image).save(root / f"{k:04d}.png")
                        record = {
                            "scene": "indoor",
                            "lights": light,
                            "objects": {
                                f"{obj.title()}_0": {
                                    "object_type": obj,
                                    "color": color,
                                    "size": size,
                                    "rotation": rotation,
                                    "bounds": [[x0, y0], [x0 + side, y0 + side]],
                                }
                            },
                        }
                        (root / f"{k:04d}.json").write_text(json.dumps(record))
                        k += 1
    return root


def _sprite_outputs(root: Path) -> Path:
    """A model's outputs at CdSprites+ level 1 (text -> image only): true captions and their images."""
    from repscope.data.multimodal.cdsprites import CdSpritesPlus

    images, captions, _ = CdSpritesPlus(1, size=8, seed=0, split="test").batch(np.arange(8))
    (root / "text_to_image").mkdir(parents=True)
    (root / "text_to_image" / "truth.txt").write_text("\n".join(captions) + "\n")
    np.save(root / "text_to_image" / "images.npy", np.asarray(images))
    return root


@pytest.fixture
def tiny_attribute_classifiers(monkeypatch, tmp_path):
    """No CdSprites+ attribute classifiers cached (a REPSCOPE_HOME of its own) nor packaged, so that they train
    on first use, with their defaults shrunk."""
    import repscope.studies.multimodal.judges as classifiers

    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path / "sprites-home"))
    monkeypatch.setattr(classifiers, "PACKAGED_DIR", tmp_path / "no-packaged-judges")  # nor those of the package
    for name, value in (("DEFAULT_TRAIN_SIZE", 64), ("DEFAULT_VAL_SIZE", 32), ("DEFAULT_EPOCHS", 1)):
        monkeypatch.setattr(classifiers, name, value)


# --------------------------------------------------------------------------------------------
# each registered command that trains, at its smallest: (its arguments, the trainings it runs at least)

TINY_DIGITS = {"source": "mnist-sample", "seed": 0, "train_size": 120, "test_size": 40}
TINY_MORPHO = _sets(*(f"data.{key}={value}" for key, value in TINY_DIGITS.items() if key != "source"))
MMVAE_TINY = _sets(
    "data.train_size=64",
    "data.val_size=32",
    "data.test_size=32",
    "batch_size=32",
    "latent_dim=4",
    "modalities.image.params.hidden=32",
    "modalities.text.params.width=16",
    "modalities.text.params.layers=1",
    "modalities.text.params.hidden=32",
)
# dSprites' three shapes: n + 1 = 4 trainings
ZEROSHOT_TINY = {
    "data": {"name": "dsprites", "params": {"train_size": 200, "test_size": 60, "target": "shape"}},
    "architectures": [{"label": "MLP", "name": "mlp"}],
    "training": {"trainer": {"max_epochs": 1}, "batch_size": 64},
    "soft_label_n": 4,
    "attack": {"n": 1, "thresholds": [1], "norms": ["l0"], "budget": 1},
    "projection_n": 5,
}
# the study's models train one step (its classifiers train as they always do)
ONE_STEP = "training.trainer={max_epochs: 1, limit_train_batches: 1}"
DSPRITES_MODEL = "models=[{label: b, name: beta-vae, params: {latent_dim: 4}}]"


def _train(tmp: Path) -> tuple[list[str], int]:
    config = {
        "model": {"name": "mlp"},
        "data": {"name": "digits", "params": TINY_DIGITS},
        "trainer": {"max_epochs": 1},
    }
    return [_yaml(tmp / "train.yaml", config), "-o", str(tmp / "out")], 1


def _mmvae_train(tmp: Path) -> tuple[list[str], int]:
    return ["--epochs", "1", "--no-evaluate", "-o", str(tmp / "out"), *MMVAE_TINY], 1


def _mmvae_sweep(tmp: Path) -> tuple[list[str], int]:
    settings = _sets("epochs=1", "evaluation.enabled=false")
    return ["--grid", "model=mvae", "-o", str(tmp / "out"), *settings, *MMVAE_TINY], 1


def _repo_build(tmp: Path) -> tuple[list[str], int]:
    data = "data={name: digits, params: {target: label, train_size: 200, test_size: 60}}"
    return ["-o", str(tmp / "repo"), *_sets("count=1", "epochs=[1]", "test_n=20", data)], 1


def _disentangle_study(tmp: Path) -> tuple[list[str], int]:
    settings = _sets(
        "data.params={train_size: 128, test_size: 32}",
        DSPRITES_MODEL,
        "classifier_epochs=1",
        "evaluation_n=10",
        "rho=[1]",
        ONE_STEP,
    )
    return ["-o", str(tmp / "out"), *settings], 1 + 5  # the model and a classifier per dSprites factor


def _candle_study(tmp: Path) -> tuple[list[str], int]:
    folder = _candle_folder(tmp / "candle")
    settings = _sets(
        f"render.data_dir={folder}",
        "data.params={subset: confounded, image_size: 64}",
        "data.factors=[object, color]",
        "models=[{label: b, name: beta-vae, params: {latent_dim: 4, box_weight: 10.0}}]",
        "classifier_epochs=1",
        ONE_STEP,
    )
    return ["-o", str(tmp / "out"), *settings], 1 + 2  # the model and a classifier per factor


def _morpho_diversity(tmp: Path) -> tuple[list[str], int]:
    models = "models=[{label: v, name: beta-vae, params: {latent_dim: 2}}]"
    settings = _sets(models, "samples=40", "permutations=10", ONE_STEP)
    return ["-o", str(tmp / "out"), *TINY_MORPHO, *settings], 1


def _morpho_disentangle(tmp: Path) -> tuple[list[str], int]:
    settings = _sets(
        "settings=[{label: A, setting: A}]",
        "generated_samples=20",
        "traversal_rows=1",
        "traversal_steps=2",
        ONE_STEP,
    )
    return ["-o", str(tmp / "out"), *TINY_MORPHO, *settings], 1


def _morpho_supervised(tmp: Path) -> tuple[list[str], int]:
    settings = _sets("models=[mlp]", "tasks=[recognition]", ONE_STEP)
    return ["-o", str(tmp / "out"), *TINY_MORPHO, *settings], 1


def _zeroshot_study(tmp: Path) -> tuple[list[str], int]:
    return [_yaml(tmp / "zeroshot.yaml", ZEROSHOT_TINY), "-o", str(tmp / "out")], 3 + 1


def _zeroshot_evaluate(tmp: Path) -> tuple[list[str], int]:
    return ["MLP", "--config", _yaml(tmp / "zeroshot.yaml", ZEROSHOT_TINY), "-o", str(tmp / "out")], 3 + 1


def _sprites_evaluate(tmp: Path) -> tuple[list[str], int]:
    # the level-1 classifier is not cached in the empty REPSCOPE_HOME: it trains first
    return [str(_sprite_outputs(tmp / "outputs")), "--level", "1", "-o", str(tmp / "out")], 1


CASES = {
    "train": _train,
    "mmvae train": _mmvae_train,
    "mmvae sweep": _mmvae_sweep,
    "invariance repo build": _repo_build,
    "disentangle study": _disentangle_study,
    "candle study": _candle_study,
    "morpho diversity": _morpho_diversity,
    "morpho disentangle": _morpho_disentangle,
    "morpho supervised": _morpho_supervised,
    "zeroshot study": _zeroshot_study,
    "zeroshot evaluate": _zeroshot_evaluate,
    "sprites evaluate": _sprites_evaluate,
}
# the slowest cases run in `make test-all` (the same flag path as the rest; each trains a whole study)
SLOW_TRAINING = {"morpho diversity", "morpho disentangle"}
TRAINING_WORDS = [" ".join(entry.words) for entry in COMMANDS if entry.trains]
TRAINING = [pytest.param(w, marks=pytest.mark.slow) if w in SLOW_TRAINING else w for w in TRAINING_WORDS]


def _no_scores(run_dir, classifiers, config):
    scores = {"irs": 0.5, "mig": 0.5, "dci_disentanglement": 0.5, "sap": 0.5}
    scores.update({f"{kind}_rho{r}": 0.5 for r in config.rho for kind in ("uc", "cg")})
    return scores, np.zeros((2, 4))


def _no_images(task, codes, steps, span):
    return np.zeros((codes.shape[1] * steps, 8, 8))


def _check(result, records: list[tuple[str, str]], expected: int) -> None:
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    # a sweep reports a failed point and goes on
    assert not re.search(r"failed: [1-9]|\b[1-9]\d* failed", result.output), result.output
    assert len([caller for _, caller in records if caller != "evaluate_task"]) >= expected, records
    assert [caller for accelerator, caller in records if accelerator != "gpu"] == [], records


def test_every_registered_command_that_trains_has_a_case():
    assert sorted(TRAINING_WORDS) == sorted(CASES)


@pytest.mark.parametrize("command", TRAINING)
def test_the_accelerator_reaches_every_training(command, trainers, tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)  # a default output (runs/...) stays in the test's folder
    if command == "sprites evaluate":
        request.getfixturevalue("tiny_attribute_classifiers")
    if command == "candle study":  # its scoring trains nothing (see the module docstring)
        monkeypatch.setattr("repscope.studies.candle.disentanglement.score_model", _no_scores)
        monkeypatch.setattr("repscope.studies.candle.disentanglement.traversal_images", _no_images)
    arguments, expected = CASES[command](tmp_path)
    result = CliRunner().invoke(app, [*command.split(), *arguments, "--accelerator", "gpu"])
    _check(result, trainers, expected)


# --------------------------------------------------------------------------------------------
# the plain commands that train classifiers


def test_disentangle_train_judges_takes_the_flags(trainers, tmp_path):
    arguments = ["--factor", "shape", "--factor", "scale", "--train-size", "128", "--test-size", "32"]
    result = CliRunner().invoke(
        app,
        ["disentangle", "train-judges", "-o", str(tmp_path / "c"), *arguments, "--epochs", "1", "--accelerator", "gpu"],
    )
    _check(result, trainers, 2)


def test_sprites_classifier_commands_take_the_flags(trainers, tmp_path, tiny_attribute_classifiers):
    from repscope.studies.multimodal.dataset_commands import generate_cdsprites

    trained = ["sprites", "train-judges", "--level", "1", "--train-size", "64", "--val-size", "32"]
    _check(CliRunner().invoke(app, [*trained, "--epochs", "1", "--accelerator", "gpu"]), trainers, 1)
    # classify trains the classifiers on first use, when they are not cached (a fresh REPSCOPE_HOME here)
    trainers.clear()
    dataset = generate_cdsprites(tmp_path / "set", 1, n=16, seed=0)
    cache = tmp_path / "sprites-home" / "classifiers"
    for folder in cache.iterdir():
        folder.rename(tmp_path / f"moved-{folder.name}")
    result = CliRunner().invoke(
        app, ["sprites", "classify", str(dataset), "-o", str(tmp_path / "c"), "--accelerator", "gpu"]
    )
    _check(result, trainers, 1)


def test_the_demo_trains_its_generators_on_the_flags():
    from repscope.studies.morpho.demo import DemoConfig, diversity_config

    config = DemoConfig(diversity_epochs=2, trainer={"accelerator": "gpu", "devices": 2, "precision": "bf16-mixed"})
    trainer = diversity_config(config).training.trainer
    assert (trainer.accelerator, trainer.devices, trainer.precision, trainer.max_epochs) == ("gpu", 2, "bf16-mixed", 2)

"""CdSprites+ attribute classifiers: training, the cache (atomic, reused, rebuilt when corrupt),
prediction and its input checks. Tiny sizes except the ``slow`` full-size accuracy test."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
import torch

from repscope.data.multimodal.attributes import ATTRIBUTE_VALUES, level_attributes
from repscope.data.multimodal.cdsprites import CdSpritesPlus
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError
from repscope.models.multimodal.judge_cnn import AttributeCNN
from repscope.studies.multimodal import judges as sc
from repscope.studies.multimodal.judges import (
    evaluate_judges,
    judges_dir,
    load_judges,
    train_judges,
)
from repscope.train.tasks import SupervisedTask

# tiny trainings fall short of the 98% target on purpose; the warning saying so is tested once
pytestmark = pytest.mark.filterwarnings("ignore:.*below.*0.98:RuntimeWarning")

TINY = {"train_size": 256, "val_size": 128, "epochs": 1, "progress": False}


@pytest.fixture(scope="module")
def level5_home(tmp_path_factory):
    """A REPSCOPE_HOME holding tiny level-5 classifiers (trained once for the module)."""
    home = tmp_path_factory.mktemp("repscope-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REPSCOPE_HOME", str(home))
        metadata = train_judges(5, **TINY)
    return home, metadata


@pytest.fixture
def level5(level5_home, monkeypatch):
    home, metadata = level5_home
    monkeypatch.setenv("REPSCOPE_HOME", str(home))
    return judges_dir(5), metadata


@pytest.fixture
def no_packaged(monkeypatch, tmp_path):
    """A package without its own classifiers: the cache is all there is (or what is trained)."""
    monkeypatch.setattr(sc, "PACKAGED_DIR", tmp_path / "no-packaged-judges")


@pytest.fixture
def no_training(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("trained although a complete cache was there")

    monkeypatch.setattr(sc, "_train_locked", fail)


def test_training_writes_every_attribute_of_the_level(level5):
    directory, metadata = level5
    assert directory == judges_dir(5) and directory.name == "cdsprites-level5"
    attributes = level_attributes(5)
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [f"{a}.ckpt" for a in attributes] + ["classifiers.json"]
    )
    stored = json.loads((directory / "classifiers.json").read_text())
    assert stored["level"] == 5 and list(stored["attributes"]) == list(attributes)
    assert metadata["directory"] == str(directory)
    # one texture family is kept out of training and measured alone
    assert stored["held_out_family"] == "fabric" and stored["recipe"] == "published"
    assert stored["train_families"] == ["noise", "stripes", "dots", "checks", "blotches"]
    assert stored["jitter"] == sc.DEFAULT_JITTER
    for attribute in attributes:
        entry = stored["attributes"][attribute]
        assert entry["classes"] == list(ATTRIBUTE_VALUES[attribute])
        assert (entry["n_train"], entry["n_val"], entry["n_held_out"], entry["epochs"], entry["seed"]) == (
            256,
            128,
            128,
            1,
            0,
        )
        assert entry["architecture"] == "AttributeCNN" and entry["repscope_version"] and entry["date"]
        assert 0.0 <= entry["val_accuracy"] <= 1.0 and 0.0 <= entry["held_out_accuracy"] <= 1.0
        chance = 1 / len(ATTRIBUTE_VALUES[attribute])
        assert chance <= entry["held_out_confidence"] <= 1.0  # the mean largest softmax probability
        worst = min(entry["val_accuracy"], entry["held_out_accuracy"])
        assert entry["meets_target"] == (worst >= sc.TARGET_ACCURACY)
        # plain tensors and values only: loadable without unpickling code
        checkpoint = torch.load(directory / f"{attribute}.ckpt", weights_only=True)
        assert (checkpoint["level"], checkpoint["attribute"]) == (5, attribute)
        assert checkpoint["hyper_parameters"] == {
            "network": "attribute-cnn",
            "kind": "classification",
            # the shape classifier has a fourth class, "no shape" (the reject option)
            "num_outputs": len(ATTRIBUTE_VALUES[attribute]) + (attribute == "shape"),
            "lr": sc.DEFAULT_LR,
            "image_shape": [3, 64, 64],
            "schedule": "cosine",
            "augment": "none",
            "augment_ranges": [],
            "optimizer": "adam",
            "network_params": {},
        }
    # no temporary folder left next to the cache
    assert [p.name for p in directory.parent.iterdir() if p.name.startswith(".tmp-")] == []


def test_load_reuses_the_cache_without_training(level5, no_training, capsys):
    directory, metadata = level5
    mtimes = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}
    classifiers = load_judges(5)
    assert {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} == mtimes
    assert capsys.readouterr().err == ""
    assert classifiers.attributes == level_attributes(5)
    assert classifiers.accuracies == {a: e["val_accuracy"] for a, e in metadata["attributes"].items()}
    assert all(not module.training for module in classifiers.modules.values())


def test_predict_gives_a_table_of_valid_classes_in_any_accepted_layout(level5):
    classifiers = load_judges(5, train_if_missing=False)
    images, _, table = CdSpritesPlus(5, size=40, seed=0, split="test").batch(np.arange(40))
    predicted = classifiers.predict(images, batch_size=16)
    assert predicted.shape == table.shape == (40, 5) and predicted.dtype == np.int64
    for k, attribute in enumerate(level_attributes(5)):
        assert 0 <= predicted[:, k].min() and predicted[:, k].max() < len(ATTRIBUTE_VALUES[attribute])
    as_float = images.astype(np.float32) / 255.0
    np.testing.assert_array_equal(classifiers.predict(as_float), predicted)
    np.testing.assert_array_equal(classifiers.predict(torch.from_numpy(as_float).permute(0, 3, 1, 2)), predicted)
    accuracies = evaluate_judges(classifiers, images, table)
    assert list(accuracies) == list(level_attributes(5))
    for k, attribute in enumerate(level_attributes(5)):
        assert accuracies[attribute] == pytest.approx(np.mean(predicted[:, k] == table[:, k]))


@pytest.mark.parametrize(
    "images, message",
    [
        (np.zeros((4, 64, 64), np.uint8), "shape"),
        (np.zeros((4, 32, 32, 3), np.uint8), "shape"),
        (np.zeros((64, 64, 3), np.uint8), "shape"),
        (np.zeros((0, 64, 64, 3), np.uint8), "got 0"),
        (np.zeros((4, 64, 64, 3), np.int32), "dtype"),
        (np.full((4, 64, 64, 3), 2.0, np.float32), "[0, 1]"),
        (np.full((4, 64, 64, 3), np.nan, np.float32), "NaN"),
    ],
)
def test_bad_images_are_a_clear_error_naming_images(level5, images, message):
    classifiers = load_judges(5, train_if_missing=False)
    with pytest.raises(InvalidArgumentError, match="images") as caught:
        classifiers.predict(images)
    assert message in str(caught.value)


def test_evaluate_checks_the_table(level5):
    classifiers = load_judges(5, train_if_missing=False)
    images, _, table = CdSpritesPlus(5, size=8, seed=0, split="test").batch(np.arange(8))
    with pytest.raises(InvalidArgumentError, match="table"):
        evaluate_judges(classifiers, images, table[:, :3])
    with pytest.raises(InvalidArgumentError, match="table"):
        evaluate_judges(classifiers, images, table[:5])


@pytest.mark.slow  # a learning claim; test_short_training_already_recognises_level_1_shapes runs the same path fast
def test_separable_attributes_are_learned_from_little_data(tmp_path, monkeypatch):
    """Position (quadrant) and background (dark / light) are easy: 1,024 samples, 2 epochs of batches
    of 32 suffice for > 90% on fresh test samples (measured: 100%), far above chance (25% and 50%)."""
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path))
    with pytest.warns(RuntimeWarning, match="below the target"):  # shape, size and colour need more
        train_judges(5, train_size=1024, val_size=256, epochs=2, batch_size=32, progress=False)
    with pytest.warns(RuntimeWarning, match="below"):
        classifiers = load_judges(5, train_if_missing=False)
    images, _, table = CdSpritesPlus(5, size=500, seed=0, split="test").batch(np.arange(500))
    accuracies = evaluate_judges(classifiers, images, table)
    assert accuracies["position"] > 0.9 and accuracies["background"] > 0.9


def test_held_out_accuracy_is_measured_on_the_held_out_family_alone(tmp_path, monkeypatch):
    """The recorded held-out accuracy is the classifier's accuracy on fresh samples of that family only."""
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path))
    metadata = train_judges(3, train_size=512, val_size=200, epochs=1, held_out_family="dots", progress=False)
    assert metadata["held_out_family"] == "dots" and "dots" not in metadata["train_families"]
    classifiers = load_judges(3, train_if_missing=False)
    # the held-out split as the training drew it: the test stream of seed 0, dots only
    held_out = CdSpritesPlus(3, size=200, seed=0, split="test", texture_families=["dots"])
    images, _, table = held_out.batch(np.arange(200))
    accuracies = evaluate_judges(classifiers, images, table)
    for attribute, entry in metadata["attributes"].items():
        assert entry["held_out_accuracy"] == pytest.approx(accuracies[attribute], abs=1e-6)
    with pytest.raises(InvalidArgumentError, match="held_out_family"):
        train_judges(3, held_out_family="velvet", progress=False)


def test_unfamiliar_images_lower_the_confidence_and_warn(level5):
    classifiers = load_judges(5, train_if_missing=False)
    reference = {a: e["held_out_confidence"] for a, e in classifiers.metadata["attributes"].items()}
    # as confident as on the held-out family: no warning
    same = np.tile([[reference[a] for a in classifiers.attributes]], (10, 1))
    assert classifiers.familiarity(same)["warning"] is None
    # much less confident on colour: a warning naming colour
    unsure = same.copy()
    unsure[:, 2] -= sc.CONFIDENCE_DROP + 0.05
    verdict = classifiers.familiarity(unsure)
    assert verdict["unfamiliar"] == ["colour"] and "colour" in verdict["warning"]
    # predict_with_confidence agrees with predict, and gives probabilities of the predicted class
    images = CdSpritesPlus(5, size=64, seed=1, split="test").batch(np.arange(64))[0]
    table, confidence = classifiers.predict_with_confidence(images)
    assert np.array_equal(table, classifiers.predict(images))
    assert confidence.shape == table.shape and np.all((confidence > 0) & (confidence <= 1))
    # grey noise is nothing like a sprite: the classifiers are less sure of it than of real sprites
    noise = np.random.default_rng(0).integers(0, 256, (64, 64, 64, 3), dtype=np.uint8)
    assert classifiers.predict_with_confidence(noise)[1].mean() < confidence.mean()


def test_a_cache_of_an_earlier_recipe_is_retrained(level5_home, tmp_path, monkeypatch, capsys, no_packaged):
    home, _ = level5_home
    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    monkeypatch.setenv("REPSCOPE_HOME", str(copy))
    metadata_file = judges_dir(5) / "classifiers.json"
    stored = json.loads(metadata_file.read_text())
    stored.pop("recipe")
    metadata_file.write_text(json.dumps({**stored, "format_version": 2}))
    with pytest.raises(DataFormatError, match="earlier recipe"):
        load_judges(5, train_if_missing=False)
    monkeypatch.setattr(sc, "DEFAULT_TRAIN_SIZE", 128)
    monkeypatch.setattr(sc, "DEFAULT_VAL_SIZE", 64)
    monkeypatch.setattr(sc, "DEFAULT_EPOCHS", 1)
    load_judges(5, progress=False)
    assert "earlier recipe" in capsys.readouterr().err
    assert json.loads(metadata_file.read_text())["recipe"] == "published"


def test_missing_cache_without_training_is_an_error(tmp_path, monkeypatch, no_training, no_packaged):
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path))
    with pytest.raises(SourceNotFoundError, match="classifiers.json"):
        load_judges(2, train_if_missing=False)


def test_missing_cache_is_trained_once_with_the_defaults(tmp_path, monkeypatch, capsys, no_packaged):
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path))
    monkeypatch.setattr(sc, "DEFAULT_TRAIN_SIZE", 128)
    monkeypatch.setattr(sc, "DEFAULT_VAL_SIZE", 64)
    monkeypatch.setattr(sc, "DEFAULT_EPOCHS", 1)
    classifiers = load_judges(1, progress=False)
    err = capsys.readouterr().err
    assert "training them once" in err and "min on 2 CPU cores" in err  # says so, and how long it takes
    assert classifiers.metadata["attributes"]["shape"]["n_train"] == 128
    assert (judges_dir(1) / "shape.ckpt").is_file()
    load_judges(1)
    assert capsys.readouterr().err == ""


def test_corrupt_checkpoint_is_named_then_retrained(level5_home, tmp_path, monkeypatch, capsys, no_packaged):
    """Choice: a corrupt cache is a DataFormatError naming the file when training is not allowed,
    and is rebuilt (with one line saying why) when it is."""
    home = tmp_path / "home"
    shutil.copytree(level5_home[0], home)
    monkeypatch.setenv("REPSCOPE_HOME", str(home))
    broken = judges_dir(5) / "colour.ckpt"
    broken.write_bytes(b"not a checkpoint")
    with pytest.raises(DataFormatError, match="colour.ckpt"):
        load_judges(5, train_if_missing=False)
    monkeypatch.setattr(sc, "DEFAULT_TRAIN_SIZE", 128)
    monkeypatch.setattr(sc, "DEFAULT_VAL_SIZE", 64)
    monkeypatch.setattr(sc, "DEFAULT_EPOCHS", 1)
    classifiers = load_judges(5, progress=False)
    assert "colour.ckpt" in capsys.readouterr().err
    assert torch.load(broken, weights_only=True)["attribute"] == "colour"
    assert classifiers.metadata["attributes"]["colour"]["n_train"] == 128


def test_a_checkpoint_of_another_attribute_is_rejected(level5_home, tmp_path, monkeypatch, no_packaged):
    home = tmp_path / "home"
    shutil.copytree(level5_home[0], home)
    monkeypatch.setenv("REPSCOPE_HOME", str(home))
    directory = judges_dir(5)
    shutil.copyfile(directory / "size.ckpt", directory / "background.ckpt")  # same class count, wrong attribute
    with pytest.raises(DataFormatError, match="background.ckpt"):
        load_judges(5, train_if_missing=False)


def test_a_crash_during_training_leaves_the_previous_cache_whole(level5_home, tmp_path, monkeypatch):
    home = tmp_path / "home"
    shutil.copytree(level5_home[0], home)
    monkeypatch.setenv("REPSCOPE_HOME", str(home))
    directory = judges_dir(5)
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    fit = sc._fit_attribute

    def crash_on_colour(level, attribute, *args, **kwargs):
        if attribute == "colour":
            raise KeyboardInterrupt
        return fit(level, attribute, *args, **kwargs)

    monkeypatch.setattr(sc, "_fit_attribute", crash_on_colour)
    with pytest.raises(KeyboardInterrupt):
        train_judges(5, train_size=64, val_size=32, epochs=1, progress=False)
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before
    assert [p.name for p in directory.parent.iterdir() if p.name.startswith(".tmp-")] == []
    # and with no previous cache, nothing that looks like one
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path / "empty"))
    with pytest.raises(KeyboardInterrupt):
        train_judges(5, train_size=64, val_size=32, epochs=1, progress=False)
    assert not judges_dir(5).exists()


def test_training_is_deterministic_in_the_seed(tmp_path):
    first = train_judges(1, train_size=128, val_size=64, epochs=1, seed=3, out=tmp_path / "a", progress=False)
    second = train_judges(1, train_size=128, val_size=64, epochs=1, seed=3, out=tmp_path / "b", progress=False)
    assert first["attributes"]["shape"]["val_accuracy"] == second["attributes"]["shape"]["val_accuracy"]
    a = torch.load(tmp_path / "a" / "shape.ckpt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b" / "shape.ckpt", weights_only=True)["state_dict"]
    assert all(torch.equal(a[key], b[key]) for key in a)
    assert load_judges(1, train_if_missing=False, directory=tmp_path / "a").metadata["attributes"]["shape"]["seed"] == 3


def test_bad_arguments_are_named():
    from repscope.data.multimodal.datasets import cdsprites_dataset

    with pytest.raises(InvalidArgumentError, match="target"):
        cdsprites_dataset(level=2, target="colour", train_size=8, val_size=8, test_size=8)
    with pytest.raises(InvalidArgumentError, match="num_outputs"):
        SupervisedTask("attribute-cnn", num_outputs=1, image_shape=(3, 64, 64))
    with pytest.raises(InvalidArgumentError, match="lr"):
        train_judges(1, lr=0.0)
    with pytest.raises(InvalidArgumentError, match="level"):
        train_judges(6, **TINY)
    with pytest.raises(InvalidArgumentError, match="train_size"):
        train_judges(1, train_size=0)
    with pytest.raises(InvalidArgumentError, match="num_classes"):
        AttributeCNN(1)


def test_attribute_cnn_maps_sprites_to_logits():
    network = AttributeCNN(4)
    assert network(torch.rand(2, 3, 64, 64)).shape == (2, 4)
    assert sum(p.numel() for p in network.parameters()) == 60_336 + 352 + 1088 * 4 + 4


def test_attribute_cnn_full_resolution_and_max_readout_options():
    convolutions_and_norms = 60_336 + 352
    # a full-resolution first block ends on 8x8 maps at 64 pixels: 64 x 64 flattened features + 64 maxima
    full = AttributeCNN(6, first_stride=1)
    assert full(torch.rand(2, 3, 64, 64)).shape == (2, 6)
    assert sum(p.numel() for p in full.parameters()) == convolutions_and_norms + (64 * 64 + 64) * 6 + 6
    assert full.features[0].stride == (1, 1) and full.features[3].stride == (2, 2)
    # the maximum alone: 64 features whatever the image size
    for side in (64, 128):
        only_max = AttributeCNN(6, image_shape=(3, side, side), readout="max")
        assert sum(p.numel() for p in only_max.parameters()) == convolutions_and_norms + 64 * 6 + 6
    with pytest.raises(InvalidArgumentError, match=r"^first_stride: expected 1 or 2, got 4"):
        AttributeCNN(6, first_stride=4)
    with pytest.raises(InvalidArgumentError, match=r"^readout: expected one of both, max, got 'mean'"):
        AttributeCNN(6, readout="mean")


def test_attribute_cnn_width_multiplies_every_block():
    # width 2: 32, 64, 128, 128 channels; convolution weights 3*32*9 + 32*64*9 + 64*128*9 + 128*128*9, batch
    # norm 2 * (32 + 64 + 128 + 128), the max read-out 128 features to 7 classes
    wide = AttributeCNN(7, first_stride=1, readout="max", width=2)
    convolutions = 3 * 32 * 9 + 32 * 64 * 9 + 64 * 128 * 9 + 128 * 128 * 9
    assert sum(p.numel() for p in wide.parameters()) == convolutions + 2 * 352 + 128 * 7 + 7
    assert [m.out_channels for m in wide.features if isinstance(m, torch.nn.Conv2d)] == [32, 64, 128, 128]
    assert wide(torch.rand(2, 3, 64, 64)).shape == (2, 7)
    # the flattened read-out grows with the last block's channels too: 128 x 4 x 4 + 128 features
    assert AttributeCNN(7, width=3).classifier.in_features == 192 * 16 + 192
    for bad in (0, 1.5, True):
        with pytest.raises(InvalidArgumentError, match=rf"^width: expected a positive integer, got {bad!r}$"):
            AttributeCNN(7, width=bad)


@pytest.mark.parametrize("first_stride", [2, 1])
def test_the_max_readout_does_not_see_where_an_object_is(first_stride):
    """Moved by a whole cell of the last maps (16 pixels, 8 at full resolution), an object on an empty
    image gives the same logits with readout max, and other logits with the flattened maps."""
    torch.manual_seed(0)
    image = torch.zeros(1, 3, 64, 64)
    image[:, 0, 20:27, 18:24] = 1.0  # a red block away from the borders
    image[:, 1, 22:25, 19:21] = 0.5
    step = 8 * first_stride
    moved = torch.roll(image, shifts=(step, step), dims=(2, 3))
    for readout, same in (("max", True), ("both", False)):
        network = AttributeCNN(5, first_stride=first_stride, readout=readout).eval()
        for norm in network.features[1::3]:  # trained-like statistics, so the background is not zero
            norm.running_mean.uniform_(-0.5, 0.5)
        with torch.no_grad():
            here, there = network(image), network(moved)
        assert torch.allclose(here, there, atol=1e-5) == same
        if readout == "max":  # the read-out of the largest value of each map over the whole grid
            with torch.no_grad():
                largest = network.features(image).flatten(2).max(dim=2).values
                assert torch.allclose(here, network.classifier(largest))


@pytest.mark.slow
def test_default_training_reaches_the_target_on_every_attribute(tmp_path, monkeypatch):
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path))
    metadata = train_judges(5, progress=False)
    assert {a: e["meets_target"] for a, e in metadata["attributes"].items()} == {a: True for a in level_attributes(5)}
    classifiers = load_judges(5, train_if_missing=False)
    images, _, table = CdSpritesPlus(5, size=2000, seed=0, split="test").batch(np.arange(2000))
    assert min(evaluate_judges(classifiers, images, table).values()) >= sc.TARGET_ACCURACY
    assert sorted(os.listdir(tmp_path / "classifiers")) == [".cdsprites-level5.lock", "cdsprites-level5"]

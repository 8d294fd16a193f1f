"""PolyMNIST: the modalities of a tuple share the class, not the digit; each image is its background's
crop with the digit drawn in the inverted colour; the set is reproducible from its seed; and multimodal
VAEs train on it (and on MNIST-sample's image + label) through the one training entry point."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from repscope.config import load_config, shipped_config_path
from repscope.data.multimodal.polymnist import PolyMNIST, polymnist_dataset, procedural_background
from repscope.data.registry import load_dataset
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError
from repscope.resources import THREADS_ENV
from repscope.train.config import TrainConfig
from repscope.train.fitting import fit

MODALITIES = ("m0", "m1", "m2", "m3", "m4")


@pytest.fixture(scope="module")
def poly():
    return polymnist_dataset(train_size=300, val_size=40, test_size=60, seed=3)


@pytest.fixture
def one_thread(monkeypatch):
    """Train with one torch thread (fast on a busy 2-core machine), and give the count back afterwards."""
    threads = torch.get_num_threads()
    monkeypatch.setenv(THREADS_ENV, "1")
    yield
    torch.set_num_threads(threads)


def expected_image(digit: np.ndarray, background: np.ndarray, top: int, left: int) -> np.ndarray:
    """The rule written out pixel by pixel: ``255 - crop`` where the digit is >= 128, else the crop."""
    crop = background[top : top + 28, left : left + 28].astype(np.int64)
    out = np.empty((3, 28, 28), dtype=np.int64)
    for row in range(28):
        for column in range(28):
            pixel = crop[row, column]
            out[:, row, column] = 255 - pixel if digit[row, column] >= 128 else pixel
    return out


def test_fields_splits_and_registry(poly):
    assert set(poly.splits) == {"train", "val", "test"}
    assert [len(poly.split(s)) for s in ("train", "val", "test")] == [300, 40, 60]
    batch = poly.batch("train", np.arange(7))
    for name in MODALITIES:
        assert poly.fields[name].kind == "image" and poly.fields[name].shape == (3, 28, 28)
        assert batch[name].dtype == np.uint8 and batch[name].shape == (7, 3, 28, 28)
    assert poly.fields["label"].kind == "categorical" and poly.fields["label"].classes == 10
    assert poly.image_shape == (3, 28, 28) and np.array_equal(batch["image"], batch["m0"])
    assert "PolyMNIST" in poly.description and "300 train" in poly.description
    loaded = load_dataset("polymnist", train_size=300, val_size=40, test_size=60, seed=3)
    assert np.array_equal(loaded.batch("test", [0, 59])["m3"], poly.batch("test", [0, 59])["m3"])
    # default sizes: one tuple per source digit (mnist-sample: 4,000 train and 1,000 test digits), no val
    default = polymnist_dataset(modalities=2)
    assert {s: len(p) for s, p in default.splits.items()} == {"train": 4000, "test": 1000}


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_the_modalities_share_the_class_and_show_different_digits(poly, split):
    data = poly.extras["training_set"]
    pool_labels = data.test_labels if split == "test" else data.train_labels
    batch = poly.batch(split, np.arange(len(poly.split(split))))
    digits = batch["digit"]
    assert digits.shape == (len(digits), 5)
    # every modality's digit is of the tuple's class ...
    assert np.array_equal(pool_labels[digits], np.repeat(batch["label"][:, None], 5, axis=1))
    # ... and the five are five different digit images
    assert all(len(set(row)) == 5 for row in digits.tolist())
    for row in range(len(digits)):
        shown = [data.train_images[d] if split != "test" else data.test_images[d] for d in digits[row]]
        assert len({image.tobytes() for image in shown}) == 5
    # all ten classes occur
    if split == "train":
        assert set(batch["label"].tolist()) == set(range(10))


def test_each_image_is_the_background_crop_with_the_digit_inverted(poly):
    generator = poly.split("train").generator
    indices = np.array([0, 1, 17, 150, 299])
    factors = generator.factors(indices)
    batch = poly.batch("train", indices)
    backgrounds = poly.extras["backgrounds"]
    digits = poly.extras["training_set"].train_images
    for row, index in enumerate(indices):
        for m, name in enumerate(MODALITIES):
            top, left = int(factors["top"][row, m]), int(factors["left"][row, m])
            assert 0 <= top <= backgrounds[m].shape[0] - 28 and 0 <= left <= backgrounds[m].shape[1] - 28
            digit = digits[factors["digit"][row, m]]
            image = batch[name][row].astype(np.int64)
            assert np.array_equal(image, expected_image(digit, backgrounds[m], top, left)), (index, name)
            # both kinds of pixel are there: the background shows, and the digit is drawn
            on = digit >= 128
            assert 20 < on.sum() < 28 * 28 - 200
            crop = backgrounds[m][top : top + 28, left : left + 28].transpose(2, 0, 1)
            assert np.array_equal(image[:, ~on], crop[:, ~on])
            assert np.array_equal(image[:, on], 255 - crop[:, on].astype(np.int64))
    # crops are drawn all over the background, not at one place
    assert len({(t, left) for t, left in zip(factors["top"].ravel(), factors["left"].ravel())}) > 20


def test_procedural_backgrounds_are_five_different_colour_textures(poly):
    backgrounds = poly.extras["backgrounds"]
    assert len(backgrounds) == 5
    for background in backgrounds:
        assert background.dtype == np.uint8 and background.shape == (256, 256, 3)
        assert background.std() > 10  # textured, not flat
        assert np.abs(background[..., 0].astype(int) - background[..., 2]).mean() > 5  # coloured, not grey
    means = np.array([b.reshape(-1, 3).mean(0) for b in backgrounds])
    for a in range(5):
        for b in range(a + 1, 5):
            assert not np.array_equal(backgrounds[a], backgrounds[b])
            assert np.abs(means[a] - means[b]).max() > 10 or abs(backgrounds[a].std() - backgrounds[b].std()) > 5
    assert np.array_equal(procedural_background(2, seed=3), backgrounds[2])


def test_same_seed_same_bytes_any_batch_order_and_another_seed_differs(poly):
    again = polymnist_dataset(train_size=300, val_size=40, test_size=60, seed=3)
    fields = [*MODALITIES, "label", "digit"]
    for split in ("train", "val", "test"):
        first, second = poly.arrays(split, fields), again.arrays(split, fields)
        for name in fields:
            assert first[name].tobytes() == second[name].tobytes(), (split, name)
    # a tuple is the same drawn alone, in another batch, in any order
    together = poly.batch("train", np.array([250, 3, 77]))
    alone = poly.batch("train", np.array([77]))
    assert np.array_equal(together["m2"][2], alone["m2"][0]) and together["label"][2] == alone["label"][0]
    # train and val are different streams of the same digits
    assert not np.array_equal(poly.batch("train", np.arange(40))["digit"], poly.batch("val", np.arange(40))["digit"])
    other = polymnist_dataset(train_size=300, val_size=40, test_size=60, seed=4)
    assert not np.array_equal(other.extras["backgrounds"][0], poly.extras["backgrounds"][0])
    changed = other.arrays("train", ["m0", "label"])
    assert not np.array_equal(changed["m0"], poly.arrays("train", ["m0"])["m0"])
    assert (changed["label"] != poly.arrays("train", ["label"])["label"]).mean() > 0.5


@pytest.mark.parametrize(
    "params, match",
    [
        ({"modalities": 1}, "modalities"),
        ({"modalities": True}, "modalities"),
        ({"train_size": 0}, "train_size"),
        ({"test_size": -3}, "test_size"),
        ({"val_size": 1.5}, "val_size"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_parameters_name_themselves(params, match):
    with pytest.raises(InvalidArgumentError, match=match):
        polymnist_dataset(**params)


def test_a_class_with_fewer_digits_than_modalities_is_refused():
    digits = np.zeros((4, 28, 28), dtype=np.uint8)
    backgrounds = [np.zeros((30, 30, 3), dtype=np.uint8)] * 3
    with pytest.raises(InvalidArgumentError, match="modalities: class 1 has 1 digits"):
        PolyMNIST(digits, np.array([0, 0, 0, 1]), backgrounds, size=5)
    with pytest.raises(InvalidArgumentError, match="size"):
        PolyMNIST(digits, np.array([0, 0, 0, 0]), backgrounds, size=0)
    with pytest.raises(InvalidArgumentError, match=r"backgrounds\[1\]"):
        PolyMNIST(digits, np.array([0, 0, 0, 0]), [backgrounds[0], np.zeros((27, 40, 3), np.uint8)], size=5)


def write_backgrounds(folder, count, size=(40, 33)):
    """``count`` PNG gradients of different colours, named so that sorting by name reverses their order."""
    folder.mkdir()
    images = []
    width, height = size
    for k in range(count):
        y, x = np.mgrid[0:height, 0:width]
        image = np.stack([(x * 6 + k * 40) % 256, (y * 7 + 3 * k) % 256, np.full_like(x, 20 * k)], -1)
        images.append(image.astype(np.uint8))
        Image.fromarray(images[-1]).save(folder / f"{chr(ord('z') - k)}-texture.png")
    return images[::-1]  # in name order


def test_a_user_background_folder_gives_the_backgrounds(tmp_path):
    images = write_backgrounds(tmp_path / "bg", 6)
    (tmp_path / "bg" / "notes.txt").write_text("not an image")
    data = polymnist_dataset(train_size=50, test_size=20, seed=1, background_dir=str(tmp_path / "bg"))
    assert len(data.extras["backgrounds"]) == 5
    for got, want in zip(data.extras["backgrounds"], images[:5]):
        assert np.array_equal(got, want)
    assert "backgrounds from" in data.description
    factors = data.split("test").generator.factors(np.arange(20))
    batch = data.batch("test", np.arange(20))
    digits = data.extras["training_set"].test_images
    assert factors["top"].max() <= 33 - 28 and factors["left"].max() <= 40 - 28
    for row in (0, 7, 19):
        for m, name in enumerate(MODALITIES):
            want = expected_image(
                digits[factors["digit"][row, m]], images[m], factors["top"][row, m], factors["left"][row, m]
            )
            assert np.array_equal(batch[name][row], want)


def test_bad_background_folders_name_the_problem(tmp_path):
    write_backgrounds(tmp_path / "three", 3)
    with pytest.raises(InvalidArgumentError, match=r"background_dir: .* holds 3 images .*; 5 modalities need 5"):
        polymnist_dataset(background_dir=str(tmp_path / "three"))
    assert polymnist_dataset(modalities=3, train_size=5, test_size=5, background_dir=str(tmp_path / "three"))
    broken = tmp_path / "broken"
    write_backgrounds(broken, 5)
    (broken / "a-broken.png").write_bytes(b"\x89PNG not really")
    with pytest.raises(DataFormatError, match="a-broken.png"):
        polymnist_dataset(background_dir=str(broken))
    small = tmp_path / "small"
    write_backgrounds(small, 5)
    Image.fromarray(np.zeros((20, 50, 3), np.uint8)).save(small / "a-small.png")
    with pytest.raises(InvalidArgumentError, match="a-small.png is 50x20 pixels"):
        polymnist_dataset(background_dir=str(small))
    with pytest.raises(SourceNotFoundError, match="background_dir"):
        polymnist_dataset(background_dir=str(tmp_path / "missing"))


def test_fashion_mnist_digits(fashion_mnist):
    data = polymnist_dataset(
        source="fashion-mnist", data_dir=str(fashion_mnist.directory), modalities=3, train_size=40, test_size=40
    )
    batch = data.batch("test", np.arange(40))
    labels = data.extras["training_set"].test_labels
    assert np.array_equal(labels[batch["digit"]], np.repeat(batch["label"][:, None], 3, axis=1))
    assert "fashion-mnist" in data.description


@pytest.mark.parametrize("name", ["train-mmvae-polymnist", "train-mmvae-mnist-label"])
def test_shipped_configs_validate(name):
    config = load_config(shipped_config_path(name), TrainConfig)
    config.check_params(name)


def small_config(model: str, data: dict, modalities: dict, epochs: int, **params) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "model": {"name": model, "params": {"latent_dim": 8, "modalities": modalities, **params}},
            "data": data,
            "trainer": {"accelerator": "cpu", "max_epochs": epochs, "logger": "csv"},
            "batch_size": 32,
            "seed": 0,
        }
    )


def test_mopoe_trains_on_polymnist_end_to_end(tmp_path, one_thread):
    modalities = {
        name: {"network": "fc-image", "params": {"hidden": 32}, "likelihood": "laplace"} for name in MODALITIES
    }
    data = {"name": "polymnist", "params": {"train_size": 192, "val_size": 32, "test_size": 64, "seed": 0}}
    outcome = fit(small_config("mopoe", data, modalities, epochs=2, lr=3e-3), out=tmp_path / "run")
    metrics = outcome.metrics
    assert metrics["n_train"] == 192 and metrics["n_val"] == 32 and metrics["epochs"] == 2
    assert all(np.isfinite(metrics[f"test_recon_{name}"]) for name in MODALITIES)
    curves = pd.read_csv(tmp_path / "run" / "tables" / "training_curves.csv")
    losses = curves["train_loss_epoch"].dropna().to_numpy()
    assert len(losses) == 2 and np.isfinite(losses).all() and losses[1] < losses[0]
    # cross-generation: every modality decoded from m0 alone
    shown = outcome.data.batch("test", np.arange(8))
    generated = outcome.task.generate({"m0": shown["m0"]})
    assert set(generated) == set(MODALITIES)
    assert all(generated[name].shape == (8, 3, 28, 28) for name in MODALITIES)
    assert (tmp_path / "run" / "report.html").is_file()


def test_mmvae_on_mnist_sample_image_and_label_infers_the_label_from_the_image(tmp_path, one_thread):
    """The label modality (network ``label``, categorical) with the digit image (``fc-image``): after four
    epochs (224 steps) the label decoded from the image alone is right far above chance (10%)."""
    modalities = {
        "image": {"field": "image", "network": "fc-image", "params": {"hidden": 64}, "likelihood": "gaussian"},
        "label": {"field": "label", "network": "label", "likelihood": "categorical", "weight": 20.0},
    }
    data = {"name": "digits", "params": {"source": "mnist-sample"}}
    config = small_config("mmvae", data, modalities, epochs=4, lr=2e-3).model_copy(update={"batch_size": 64})
    outcome = fit(config, out=tmp_path / "run", report=False)
    assert np.isfinite(outcome.metrics["test_loss"])
    test = outcome.data.arrays("test", ["image", "label"])
    logits = outcome.task.generate({"image": test["image"]})["label"]
    accuracy = float((logits.argmax(-1) == test["label"]).mean())
    assert accuracy > 0.5, accuracy

"""Attribute classifiers that judge any rendering: the seeded training augmentations, the second
(independent) renderer, and the reject option ("no shape")."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from repscope.data.multimodal.attributes import ATTRIBUTE_VALUES, COLOUR_RGB, level_attributes
from repscope.data.multimodal.augment import (
    NO_SHAPE_KINDS,
    NONE_CLASS,
    Augmentation,
    AugmentedCdSprites,
    augmented_images,
    blur,
    jittered_masks,
    no_shape_images,
)
from repscope.data.multimodal.cdsprites import CdSpritesPlus
from repscope.data.multimodal.second_renderer import coverage, second_rendering
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.studies.multimodal import judges as sc
from repscope.studies.multimodal.judges import AttributeJudges, read_judges, train_judges

pytestmark = pytest.mark.filterwarnings("ignore:.*below.*0.98:RuntimeWarning")

SHARP = Augmentation(blur_probability=0.0, noise_probability=0.0)


# ---------------------------------------------------------------------------------------------
# augmentation


def test_augmentation_is_seeded_per_sample():
    generator = CdSpritesPlus(5, size=64, seed=2)
    stream = AugmentedCdSprites(generator, seed=3, none_fraction=0.3)
    first = stream.sample(np.arange(16))
    again = AugmentedCdSprites(generator, seed=3, none_fraction=0.3).sample(np.arange(16))
    assert np.array_equal(first["image"], again["image"]) and np.array_equal(first["shape"], again["shape"])
    # sample i is the same bytes in any batch and order
    reordered = stream.sample(np.array([9, 3]))
    assert np.array_equal(reordered["image"][0], first["image"][9])
    assert np.array_equal(reordered["image"][1], first["image"][3])
    other = AugmentedCdSprites(generator, seed=4, none_fraction=0.3).sample(np.arange(16))
    assert not np.array_equal(other["image"], first["image"])
    # augmented, so not the published pixels
    assert not np.array_equal(first["image"], generator.sample(np.arange(16), ["image"])["image"])


def test_no_shape_samples_take_the_none_class_at_about_their_share():
    generator = CdSpritesPlus(1, size=600, seed=0)
    drawn = AugmentedCdSprites(generator, seed=1, none_fraction=0.25).sample(np.arange(600), ["shape", "attributes"])
    share = np.mean(drawn["shape"] == NONE_CLASS)
    assert 0.19 < share < 0.31  # binomial(600, 0.25): sd 0.018
    assert np.array_equal(drawn["attributes"][:, 0], drawn["shape"])
    plain = AugmentedCdSprites(generator, seed=1).sample(np.arange(600), ["shape"])["shape"]
    assert plain.max() < NONE_CLASS
    with pytest.raises(InvalidArgumentError, match="none_fraction"):
        AugmentedCdSprites(generator, none_fraction=1.0)


def test_jittered_masks_match_hand_counted_squares():
    # a square of half-size 4 centred on the pixel corner (32, 32), unrotated: pixel centres 28.5..35.5
    mask = jittered_masks([0], [4.0], [0.0], [32.0], [32.0], [1.0], [0.0])[0]
    rows, cols = np.nonzero(mask)
    assert mask.sum() == 64 and (rows.min(), rows.max(), cols.min(), cols.max()) == (28, 35, 28, 35)
    # aspect 4 along x: twice as wide, half as high, same area
    wide = jittered_masks([0], [4.0], [0.0], [32.0], [32.0], [4.0], [0.0])[0]
    rows, cols = np.nonzero(wide)
    assert wide.sum() == 64 and (cols.max() - cols.min() + 1, rows.max() - rows.min() + 1) == (16, 4)
    # the same stretch along y (axis pi/2): tall
    tall = jittered_masks([0], [4.0], [0.0], [32.0], [32.0], [4.0], [np.pi / 2])[0]
    rows, cols = np.nonzero(tall)
    assert (cols.max() - cols.min() + 1, rows.max() - rows.min() + 1) == (4, 16)
    # an ellipse of semi-axes 8 and 4 rotated by 90 degrees stands upright
    ellipse = jittered_masks([1], [8.0], [np.pi / 2], [32.0], [32.0], [1.0], [0.0])[0]
    rows, cols = np.nonzero(ellipse)
    assert rows.max() - rows.min() + 1 == 16 and cols.max() - cols.min() + 1 == 8


def test_geometry_jitter_keeps_small_and_big_apart():
    """Scale 0.85-1.15 and a 1-px stroke change never make a small shape's area reach a big one's
    (mean areas about 1:4, as the half-sizes 4.5 and 9)."""
    generator = CdSpritesPlus(2, size=360, seed=0)
    images, table = augmented_images(generator, np.arange(360), seed=5, augmentation=SHARP)
    area = (images[..., 0] > 127).sum(axis=(1, 2))
    for shape in range(3):
        of_shape = table[:, 0] == shape
        big, small = area[of_shape & (table[:, 1] == 0)], area[of_shape & (table[:, 1] == 1)]
        assert 2.8 < big.mean() / small.mean() < 5.5
    plain = generator.batch(np.arange(360))[0][..., 0] > 127
    spread = np.abs(area - plain.sum(axis=(1, 2))) / plain.sum(axis=(1, 2))
    assert spread.max() > 0.25 and np.median(spread) < 0.6  # jittered, not destroyed


def test_blur_is_a_normalised_gaussian():
    image = np.zeros((2, 64, 64, 3), np.float32)
    image[:, 32, 32, :] = 255.0
    blurred = blur(image, [0.0, 2.0])
    assert np.array_equal(blurred[0], image[0])
    # the mass is kept; the peak of a 2-D Gaussian of sigma 2 is 1 / (2 pi sigma^2) of it
    assert blurred[1, ..., 1].sum() == pytest.approx(255.0, rel=1e-4)
    assert blurred[1, 32, 32, 0] == pytest.approx(255.0 / (2 * np.pi * 4.0), rel=0.03)


def test_no_shape_images_are_seeded_and_of_every_kind():
    generator = CdSpritesPlus(5, size=200, seed=0, split="test")
    images, kinds = no_shape_images(generator, np.arange(60), seed=4)
    again, _ = no_shape_images(generator, np.arange(60), seed=4)
    assert np.array_equal(images, again) and images.dtype == np.uint8 and images.shape == (60, 64, 64, 3)
    assert set(kinds) == set(NO_SHAPE_KINDS)
    assert not np.array_equal(no_shape_images(generator, np.arange(60), seed=5)[0], images)


# ---------------------------------------------------------------------------------------------
# the second renderer


def test_second_renderer_covers_hand_computed_areas():
    # big square (half-side 9) unrotated: area 18^2 = 324 pixels; small: 81
    cover = coverage([0, 0, 1], [0, 1, 0], [0.0, 0.0, 0.0], [32.0, 32.0, 32.0], [32.0, 32.0, 32.0])
    assert cover[0].sum() == pytest.approx(324.0, abs=0.5) and cover[1].sum() == pytest.approx(81.0, abs=0.5)
    # ellipse of semi-axes 9 and 4.5: pi * 9 * 4.5 = 127.2 (a 96-gon, slightly less)
    assert cover[2].sum() == pytest.approx(np.pi * 9 * 4.5, rel=0.02)
    assert 0 < cover.min() + 1e-9 and cover.max() <= 1.0
    with pytest.raises(InvalidArgumentError, match="supersample"):
        coverage([0], [0], [0.0], [32.0], [32.0], supersample=0)


def test_second_renderer_draws_the_stated_attributes():
    drawn = second_rendering(5, 120, seed=3, texture_seed=0)  # the bank the other tests build
    images, table, cover = drawn["images"], drawn["table"], drawn["coverage"]
    assert images.shape == (120, 64, 64, 3) and table.shape == (120, 5) and images.dtype == np.uint8
    area = cover.sum(axis=(1, 2))
    for shape in range(3):
        big = area[(table[:, 0] == shape) & (table[:, 1] == 0)]
        small = area[(table[:, 0] == shape) & (table[:, 1] == 1)]
        assert small.max() < big.min() and big.mean() / small.mean() == pytest.approx(4.0, rel=0.1)
    # the shape's centre of mass lies in the stated quadrant (top left, top right, bottom left, bottom right)
    ys, xs = np.mgrid[0:64, 0:64] + 0.5
    cx = (cover * xs).sum(axis=(1, 2)) / area
    cy = (cover * ys).sum(axis=(1, 2)) / area
    bottom, right = np.divmod(table[:, 3], 2)
    assert np.array_equal(cx > 32, right == 1) and np.array_equal(cy > 32, bottom == 1)
    # the shape's colour: the order of the channels of the stated colour's RGB (pink: R = B > G)
    inside = cover > 0.99
    for k in range(120):
        mean = images[k][inside[k]].astype(float).mean(0)
        rgb = np.array(COLOUR_RGB[ATTRIBUTE_VALUES["colour"][table[k, 2]]], dtype=float)
        assert np.argmax(mean) == np.argmax(rgb) or np.isclose(rgb[0], rgb[2])
    # a dark background is darker than a light one, away from the shape
    outside = cover == 0
    ground = np.array([images[k][outside[k]].mean() for k in range(120)])
    assert ground[table[:, 4] == 0].mean() + 40 < ground[table[:, 4] == 1].mean()


def test_second_renderer_blur_and_levels():
    sharp = second_rendering(1, 20, seed=1)
    blurred = second_rendering(1, 20, seed=1, blur_sigma=2.0)
    assert np.array_equal(sharp["table"], blurred["table"])
    assert blurred["images"].max(axis=(1, 2, 3)).mean() < sharp["images"].max(axis=(1, 2, 3)).mean()
    # levels 1-2: a white shape on black; the image mass is the covered area (255 a pixel)
    mass = sharp["images"][..., 0].astype(float).sum(axis=(1, 2)) / 255.0
    assert np.allclose(mass, sharp["coverage"].sum(axis=(1, 2)), atol=0.6)
    # not the published pixels: edges are anti-aliased
    assert np.any((sharp["images"] > 0) & (sharp["images"] < 255))
    with pytest.raises(InvalidArgumentError, match="blur_sigma"):
        second_rendering(1, 4, blur_sigma=-1.0)


# ---------------------------------------------------------------------------------------------
# the reject option


class _Logits(torch.nn.Module):
    """A stand-in classifier: fixed logits per image, from the image's pixel spread (flat frames
    say "no shape")."""

    def __init__(self, sharp: list[float], flat: list[float]) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.sharp, self.flat = torch.tensor(sharp), torch.tensor(flat)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        images = images.float() / 255.0 if images.dtype == torch.uint8 else images
        is_flat = (images.flatten(1).std(1) < 0.05)[:, None]
        return torch.where(is_flat, self.flat, self.sharp).double()


def test_judge_rejects_by_the_no_shape_probability():
    shape = _Logits([2.0, 0.0, 1.0, -1.0], [0.0, 1.0, 0.5, 3.0])  # square, ellipse, heart, none
    size = _Logits([0.0, 1.0], [0.0, 1.0])
    classifiers = AttributeJudges(2, {"shape": shape, "size": size}, {"attributes": {}})
    images = np.zeros((3, 64, 64, 3), np.uint8)
    images[0, 20:40, 20:40] = 255  # a square: high spread
    images[2] = 128  # a grey frame: flat
    judgement = classifiers.judge(images)
    e = np.exp
    # sharp: P(none) = e^-1 / (e^2 + e^0 + e^1 + e^-1); shape square, confidence among the three shapes
    p_none = e(-1) / (e(2) + 1 + e(1) + e(-1))
    assert judgement.no_shape_probability[0] == pytest.approx(p_none)
    assert judgement.confidence[0, 0] == pytest.approx(e(2) / (e(2) + 1 + e(1)))
    # flat (the black and the grey frame): P(none) = e^3 / (1 + e + e^0.5 + e^3) > 0.5, rejected;
    # the shape read is still the best of the three (ellipse)
    assert judgement.no_shape_probability[1] == pytest.approx(e(3) / (1 + e(1) + e(0.5) + e(3)))
    assert judgement.recognised.tolist() == [True, False, False]
    assert judgement.table[:, 0].tolist() == [0, 1, 1] and judgement.table[:, 1].tolist() == [1, 1, 1]
    assert judgement.confidence[0, 1] == pytest.approx(e(1) / (1 + e(1)))
    table, recognised = classifiers.predict_recognised(images)
    assert np.array_equal(table, judgement.table) and np.array_equal(recognised, judgement.recognised)
    assert np.array_equal(classifiers.predict(images), judgement.table)


def _quick_run_blobs(generator: CdSpritesPlus, n: int, seed: int) -> np.ndarray:
    """Faint grey blobs like those of an untrained quick multimodal VAE: the mean of many sprites,
    blurred, at low contrast."""
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    images = generator.batch(np.arange(len(generator)))[0].astype(np.float32)
    out = []
    for _ in range(n):
        mean = images[rng.integers(0, len(images), int(rng.integers(40, 200)))].mean(0)
        mean = ndimage.gaussian_filter(mean, (s := rng.uniform(0.0, 3.0), s, 0.0))
        out.append(mean.mean() + rng.uniform(0.4, 1.2) * (mean - mean.mean()))
    return np.clip(np.rint(np.stack(out)), 0, 255).astype(np.uint8)


def _negatives(generator: CdSpritesPlus, seed: int) -> dict[str, np.ndarray]:
    """Images that hold no shape: quick-run blobs of ``generator``'s sprites, black and grey frames, noise."""
    return {
        "quick-run blobs": _quick_run_blobs(generator, 40, seed=seed),
        "black": np.zeros((10, 64, 64, 3), np.uint8),
        "grey": np.full((10, 64, 64, 3), 90, np.uint8),
        "noise": np.random.default_rng(seed).integers(0, 256, (20, 64, 64, 3)).astype(np.uint8),
    }


@pytest.mark.slow  # about 50 s on 2 busy cores; test_judge_rejects_by_the_no_shape_probability runs the rule fast
def test_a_short_training_rejects_blobs_empty_frames_and_noise(tmp_path):
    """Level 1, 3,000 augmented samples with 20% "no shape": clean renders are recognised and
    the constructed negatives (quick-run blobs, black and grey frames, noise) rejected."""
    metadata = train_judges(1, train_size=3000, val_size=300, epochs=1, out=tmp_path, progress=False)
    assert metadata["format_version"] == sc.FORMAT_VERSION == 4 and metadata["none_fraction"] == 0.2
    assert metadata["reject"]["no_shape"] > 0.8 and metadata["reject"]["clean"] < 0.1
    classifiers = read_judges(tmp_path, 1)
    test = CdSpritesPlus(1, size=300, seed=7, split="test")
    clean = test.batch(np.arange(300))[0]
    assert classifiers.judge(clean).recognised.mean() > 0.9
    for name, images in _negatives(test, seed=1).items():
        assert classifiers.judge(images).recognised.mean() < 0.2, name


def test_the_cache_version_changed_and_old_caches_are_refused(tmp_path):
    assert sc.FORMAT_VERSION == 4
    train_judges(1, train_size=64, val_size=32, epochs=1, out=tmp_path, progress=False)
    stored = json.loads((tmp_path / "classifiers.json").read_text())
    assert stored["format_version"] == 4 and stored["augmentation"] == Augmentation().to_dict()
    assert set(stored["reject"]) == {"no_shape", "clean", "blurred"}
    assert "blurred_accuracy" in stored["attributes"]["shape"]
    # the shape classifier holds the fourth, "no shape", class
    checkpoint = torch.load(tmp_path / "shape.ckpt", weights_only=True)
    assert checkpoint["hyper_parameters"]["num_outputs"] == len(ATTRIBUTE_VALUES["shape"]) + 1
    read_judges(tmp_path, 1)
    (tmp_path / "classifiers.json").write_text(json.dumps({**stored, "format_version": 3}))
    with pytest.raises(DataFormatError, match="format 3, trained the earlier way"):
        read_judges(tmp_path, 1)


# ---------------------------------------------------------------------------------------------
# the classifiers that come with the package


PACKAGED_LEVELS = (1, 2, 3, 4, 5)


@pytest.fixture(scope="module", params=PACKAGED_LEVELS)
def packaged(request):
    """The package's classifiers of a level, read as the loader reads them."""
    level = request.param
    return read_judges(sc.packaged_judges_dir(level), level)


def test_the_packaged_classifiers_judge_another_renderer_and_blur(packaged):
    """The issue's targets, on images the classifiers never saw: >= 98% per attribute on the second renderer
    and >= 95% on it blurred by sigma 2 px (another seed than the one recorded in classifiers.json)."""
    level = packaged.level
    for blur_sigma, target in ((0.0, 0.98), (2.0, 0.95)):
        drawn = second_rendering(level, 400, seed=23, blur_sigma=blur_sigma)
        judgement = packaged.judge(drawn["images"])
        right = (judgement.table == drawn["table"]) & judgement.recognised[:, None]
        for k, attribute in enumerate(level_attributes(level)):
            assert right[:, k].mean() >= target, (level, attribute, blur_sigma, right[:, k].mean())
    recorded = packaged.metadata["second_renderer"]
    assert recorded["meets_target"] and recorded["size"] == 2000
    assert min(recorded["accuracy"].values()) >= 0.98 and min(recorded["blurred_accuracy"].values()) >= 0.95


def test_the_packaged_classifiers_reject_what_holds_no_shape_and_keep_real_images(packaged):
    test = CdSpritesPlus(packaged.level, size=200, seed=29, split="test")
    clean = test.batch(np.arange(200))[0]
    judgement = packaged.judge(clean)
    assert judgement.recognised.mean() >= 0.99
    assert np.mean(np.all(judgement.table == test.batch(np.arange(200))[2], axis=1)) >= 0.97
    for name, images in _negatives(test, seed=3).items():
        assert packaged.judge(images).recognised.mean() <= 0.1, (packaged.level, name)


def test_without_a_cache_the_packaged_classifiers_are_loaded_untrained(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path / "home"))

    def fail(*args, **kwargs):
        raise AssertionError("trained although the package has its own classifiers")

    train = sc._train_locked
    monkeypatch.setattr(sc, "_train_locked", fail)
    loaded = sc.load_judges(2)
    assert loaded.directory == sc.packaged_judges_dir(2) and capsys.readouterr().err == ""
    assert not (tmp_path / "home").exists()  # nothing written
    monkeypatch.setattr(sc, "_train_locked", train)
    # a cache the user trained wins; an unusable one is named, and the package's are used
    mine = train_judges(2, train_size=64, val_size=32, epochs=1, progress=False)
    assert sc.load_judges(2).directory == sc.judges_dir(2) == tmp_path / "home/classifiers/cdsprites-level2"
    (sc.judges_dir(2) / "size.ckpt").write_bytes(b"broken")
    assert sc.load_judges(2).directory == sc.packaged_judges_dir(2)
    err = capsys.readouterr().err
    assert "size.ckpt" in err and "using those that come with repscope" in err
    assert mine["attributes"]["size"]["n_train"] == 64

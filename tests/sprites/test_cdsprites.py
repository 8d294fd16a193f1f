"""CdSprites+ generator: determinism, balance, captions, and what each level's images must show."""

import numpy as np
import pytest
import torch
from PIL import Image

from repscope.data.multimodal.attributes import (
    ATTRIBUTE_VALUES,
    COLOUR_RGB,
    combination_count,
    compose_caption,
    parse_caption,
)
from repscope.data.multimodal.cdsprites import (
    CdSpritesPlus,
    counter_uniforms,
    default_size,
    jitter_images,
    paste_background,
    stream_key,
)
from repscope.data.multimodal.textures import TEXTURE_FAMILIES, brighten, darken, resize, stretch
from repscope.errors import DataFormatError, InvalidArgumentError, SourceNotFoundError


def test_default_sizes_follow_the_paper():
    assert [default_size(level, "train") for level in range(1, 6)] == [67_500, 108_000, 270_000, 540_000, 864_000]
    assert [default_size(level, "val") for level in range(1, 6)] == [7_500, 12_000, 30_000, 60_000, 96_000]
    assert len(CdSpritesPlus(5)) == 864_000  # nothing is generated up front


@pytest.mark.parametrize("level", [1, 3, 5])
def test_sample_is_the_same_bytes_alone_in_a_batch_or_shuffled(level):
    gen = CdSpritesPlus(level, size=500, seed=3)
    indices = np.array([7, 499, 0, 250, 7])
    images, captions, table = gen.batch(indices)
    for k, i in enumerate(indices):
        image, caption, row = gen[int(i)]
        assert np.array_equal(image, images[k]) and caption == captions[k] and np.array_equal(row, table[k])
    again = CdSpritesPlus(level, size=500, seed=3).batch(indices[::-1])
    assert np.array_equal(again[0], images[::-1])


def test_seed_and_split_give_independent_streams():
    base = CdSpritesPlus(5, size=64, seed=0).batch(np.arange(64))[0]
    other_seed = CdSpritesPlus(5, size=64, seed=1).batch(np.arange(64))[0]
    other_split = CdSpritesPlus(5, size=64, seed=0, split="val").batch(np.arange(64))[0]
    assert not np.array_equal(base, other_seed) and not np.array_equal(base, other_split)


def test_counter_uniforms_are_uniform_and_order_free():
    key = stream_key(1, 2, 3)
    u = counter_uniforms(key, np.arange(20_000), 3)
    assert u.min() >= 0 and u.max() < 1
    assert np.allclose(u.mean(0), 0.5, atol=0.01) and np.allclose(np.histogram(u[:, 0], 10)[0], 2000, rtol=0.08)
    assert np.array_equal(counter_uniforms(key, np.array([19_999, 5]), 3), u[[19_999, 5]])


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_every_block_holds_each_combination_once(level):
    k = combination_count(level)
    gen = CdSpritesPlus(level, size=4 * k, seed=5)
    table = gen.attribute_table(np.arange(4 * k))
    sizes = [len(ATTRIBUTE_VALUES[name]) for name in gen.attributes]
    combos = np.ravel_multi_index(tuple(table.T), sizes)
    for block in range(4):
        assert sorted(combos[block * k : (block + 1) * k]) == list(range(k))
    assert not np.array_equal(combos[:k], combos[k : 2 * k])  # blocks are shuffled differently


def test_captions_are_the_attribute_words_in_order():
    images, captions, table = CdSpritesPlus(5, size=300, seed=0).batch(np.arange(300))
    assert captions == [compose_caption(5, row) for row in table.tolist()]
    assert all(np.array_equal(parse_caption(5, c), row) for c, row in zip(captions, table))
    words = captions[0].split()
    assert len(words) == 8 and words[3] == "at" and words[6] == "on"
    assert sorted(CdSpritesPlus(1, size=3).batch([0, 1, 2])[1]) == ["ellipse", "heart", "square"]


def test_levels_1_2_are_white_shapes_on_black_that_fit_whole():
    images, _, table = CdSpritesPlus(2, size=600, seed=1).batch(np.arange(600))
    assert set(np.unique(images)) == {0, 255}
    assert np.all(images[..., 0] == images[..., 2])
    on = images[..., 0] > 0
    # the whole shape fits: no pixel on the border, every image has one
    assert on.sum((1, 2)).min() > 0
    assert not on[:, 0].any() and not on[:, -1].any() and not on[:, :, 0].any() and not on[:, :, -1].any()
    area = on.sum((1, 2))
    big, small = area[table[:, 1] == 0], area[table[:, 1] == 1]
    # small is half the size: a quarter of the area (pixelation allowed)
    assert 0.2 < small.mean() / big.mean() < 0.3
    square_big = area[(table[:, 0] == 0) & (table[:, 1] == 0)]
    assert abs(square_big.mean() - 18 * 18) < 12  # half-side 9 px


# the reference generator's word -> dSprites class mappings (data_proc/cdSprites.py), written out here
LEFT_OR_TOP = {1, 2, 3, 5, 6, 7, 8, 9}
RIGHT_OR_BOTTOM = {26, 27, 28, 29, 30, 31}


def test_position_words_pick_the_reference_position_classes():
    gen = CdSpritesPlus(4, size=4800, seed=2)
    factors = gen.factors(np.arange(4800))
    for position, word in enumerate(ATTRIBUTE_VALUES["position"]):
        rows = factors["position"] == position
        vertical, horizontal = word.split()
        expected_x = LEFT_OR_TOP if horizontal == "left" else RIGHT_OR_BOTTOM
        expected_y = LEFT_OR_TOP if vertical == "top" else RIGHT_OR_BOTTOM
        # every allowed class is used, and no other
        assert set(factors["posX_class"][rows].tolist()) == expected_x, word
        assert set(factors["posY_class"][rows].tolist()) == expected_y, word
    # without a position word (levels 1-3) the centre is any class 5-29 on each axis
    middle = CdSpritesPlus(3, size=3000, seed=2).factors(np.arange(3000))
    assert set(middle["posX_class"].tolist()) == set(range(5, 30)) == set(middle["posY_class"].tolist())


def test_the_shape_is_drawn_where_its_position_classes_put_it():
    gen = CdSpritesPlus(4, size=240, seed=3)
    images, _, table = gen.batch(np.arange(240))
    factors = gen.factors(np.arange(240))
    on = images.max(-1) > 0
    for k in range(240):
        rows, cols = np.nonzero(on[k])
        # the shape's centre of mass is its centre (pixel centres at +0.5), for every shape and angle
        assert abs(cols.mean() + 0.5 - factors["centre_x"][k]) < 2.0
        assert abs(rows.mean() + 0.5 - factors["centre_y"][k]) < 2.5  # the heart's mass sits low
        vertical, horizontal = divmod(int(table[k, 3]), 2)
        assert (factors["centre_x"][k] > 32) == bool(horizontal) and (factors["centre_y"][k] > 32) == bool(vertical)
        assert rows.min() > 0 and cols.min() > 0 and rows.max() < 63 and cols.max() < 63  # whole shapes


def test_sizes_are_the_reference_scale_classes_and_level_1_is_big():
    factors = CdSpritesPlus(2, size=600, seed=1).factors(np.arange(600))
    assert set(factors["scale_class"][factors["size"] == 0].tolist()) == {5}  # big: dSprites scale 1.0
    assert set(factors["scale_class"][factors["size"] == 1].tolist()) == {0}  # small: scale 0.5
    assert set(CdSpritesPlus(1, size=300).factors(np.arange(300))["scale_class"].tolist()) == {5}


def test_every_orientation_class_is_drawn_uniformly():
    factors = CdSpritesPlus(5, size=8000, seed=4).factors(np.arange(8000))
    counts = np.bincount(factors["orientation_class"], minlength=40)
    assert len(counts) == 40 and counts.min() > 0.6 * 200 and counts.max() < 1.4 * 200
    assert np.allclose(factors["orientation"], np.linspace(0, 2 * np.pi, 40)[factors["orientation_class"]])


def test_brightness_rules_by_hand():
    values = np.array([0, 5, 100, 130, 131, 200, 201, 255], dtype=np.uint8)
    # shapes and light backgrounds: v > 130 -> 255, else v + 125
    assert brighten(values).tolist() == [125, 130, 225, 255, 255, 255, 255, 255]
    # dark backgrounds: v < 200 -> 0, then v <= 200 -> v - 200 in uint8 (0 wraps to 56)
    assert darken(values).tolist() == [56, 56, 56, 56, 56, 0, 201, 255]


def test_min_max_stretch_and_resize_by_hand():
    assert stretch(np.array([[3, 5], [7, 11]])).tolist() == [[0, 64], [128, 255]]  # 63.75, 127.5 round up
    assert stretch(np.full((2, 2), 9.0)).tolist() == [[0, 0], [0, 0]]
    row = np.array([[0.0, 10.0, 20.0, 30.0]] * 4)
    # shrinking samples at (i + 0.5) * 2 - 0.5 = 0.5 and 2.5: between pixels, not their average of four
    assert np.allclose(resize(row, 2), [[5.0, 25.0]] * 2)
    # enlarging clamps at the borders: positions -0.25 (-> 0), 0.25, 0.75, 1.25 (-> 1)
    assert np.allclose(resize(np.array([[0.0, 10.0]] * 2), 4)[0], [0.0, 2.5, 7.5, 10.0])


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_every_image_is_stretched_to_the_full_range(level):
    images = CdSpritesPlus(level, size=120, seed=level).batch(np.arange(120))[0]
    flat = images.reshape(120, -1)
    assert np.all(flat.min(1) == 0) and np.all(flat.max(1) == 255)


def test_shapes_are_the_colour_times_a_brightened_texture_on_black():
    images, _, table = CdSpritesPlus(3, size=300, seed=4).batch(np.arange(300))
    on = images.max(-1) > 0
    for image, mask, colour in zip(images, on, table[:, 2]):
        rgb = np.array(COLOUR_RGB[ATTRIBUTE_VALUES["colour"][colour]], dtype=float)
        pixels = image[mask].astype(float)
        # every shape pixel is one grey level times the colour: channel ratios are the colour's
        main = int(rgb.argmax())
        scale = pixels[:, main] / 255.0
        assert np.abs(pixels - scale[:, None] * rgb * 255.0 / rgb[main]).max() <= 1.0
        # the brightened texture spans 125-255 before the stretch: the dimmest shape pixel is >= 125/255
        assert scale.min() >= 125 / 255 - 0.01 and scale.max() == 1.0
        assert not image[~mask].any()  # black around the shape (levels 3-4)


def test_level_5_backgrounds_follow_the_light_and_dark_rules():
    gen = CdSpritesPlus(5, size=480, seed=6)
    images, _, table = gen.batch(np.arange(480))
    background = images.max(-1) == images.min(-1)  # background pixels are grey; the shape's are coloured
    dark_modes, light_medians = [], []
    for image, grey, is_dark in zip(images[..., 0], background, table[:, 4] == 0):
        levels, counts = np.unique(image[grey], return_counts=True)
        if is_dark:  # everything below 200 became one level (56, or 0 when it is the image's minimum)
            dark_modes.append((levels[counts.argmax()], counts.max() / grey.sum()))
        else:
            light_medians.append(np.median(image[grey]))
    dark_modes = np.array(dark_modes)
    assert dark_modes[:, 0].max() <= 56 and dark_modes[:, 1].min() > 0.5
    # light: brightened to 125-255 (the final stretch lowers it when the shape's dimmest channel is
    # the image's minimum, as the reference's does)
    assert np.median(light_medians) > 200 and np.percentile(light_medians, 5) > 128


def test_paste_background_by_hand():
    shapes = np.zeros((1, 2, 2, 3), dtype=np.uint8)
    shapes[0, 0, 0] = (200, 100, 0)  # a shape pixel; the other three are black, so background
    backgrounds = np.array([[[0, 150], [100, 100]]], dtype=np.uint8)
    out = paste_background(shapes, backgrounds)
    # before the stretch: min 0, max 200 -> x * 255 / 200
    assert out[0, 0, 0].tolist() == [255, 128, 0]  # 127.5 rounds to even: 128
    assert out[0, 0, 1].tolist() == [191, 191, 191] and out[0, 1, 1].tolist() == [128, 128, 128]


def test_texture_families_can_be_chosen():
    bank_families = CdSpritesPlus(5, size=10).textures.family_names
    assert bank_families == TEXTURE_FAMILIES
    some = CdSpritesPlus(5, size=600, seed=1, texture_families=["stripes", "dots"])
    factors = some.factors(np.arange(600))
    used = {TEXTURE_FAMILIES[i] for i in factors["texture_family"]} | {
        TEXTURE_FAMILIES[i] for i in factors["background_family"]
    }
    assert used == {"stripes", "dots"}
    every = CdSpritesPlus(5, size=600, seed=1).factors(np.arange(600))
    assert set(every["texture_family"].tolist()) == set(range(len(TEXTURE_FAMILIES)))
    assert set(CdSpritesPlus(2, size=30).factors(np.arange(30))["texture"].tolist()) == {-1}  # untextured
    with pytest.raises(InvalidArgumentError, match="texture_families"):
        CdSpritesPlus(5, texture_families=["velvet"])


def test_jitter_changes_brightness_and_contrast_only():
    plain = CdSpritesPlus(5, size=60, seed=2)
    jittered = CdSpritesPlus(5, size=60, seed=2, jitter=0.3)
    factors = jittered.factors(np.arange(60))
    assert np.all(np.abs(factors["contrast"] - 1) <= 0.3) and np.all(np.abs(factors["brightness"]) <= 0.3 * 64)
    assert np.array_equal(plain.batch(np.arange(60))[2], jittered.batch(np.arange(60))[2])
    expected = jitter_images(plain.batch(np.arange(60))[0], factors["contrast"], factors["brightness"])
    assert np.array_equal(jittered.batch(np.arange(60))[0], expected)
    # by hand: contrast 2 around mid-grey, +10 brightness, clipped
    image = np.array([[[[0, 100, 200]]]], dtype=np.uint8)
    assert jitter_images(image, np.array([2.0]), np.array([10.0])).ravel().tolist() == [
        0,
        82,
        255,
    ]  # 82.5 rounds to even
    with pytest.raises(InvalidArgumentError, match="jitter"):
        CdSpritesPlus(5, jitter=1.5)


def test_texture_dir_photographs_go_through_the_same_steps(tmp_path):
    step = np.zeros((90, 120), dtype=np.uint8)
    step[:, 60:] = 255  # dark left half, bright right half
    Image.fromarray(step).save(tmp_path / "step.png")
    (tmp_path / "notes.txt").write_text("ignored")
    gen = CdSpritesPlus(5, size=240, seed=3, texture_dir=tmp_path)
    assert gen.textures.family_names == ("photo",) and len(gen.textures) == 1
    images = gen.batch(np.arange(240))[0]
    background = images.max(-1) == images.min(-1)  # grey pixels; the coloured ones are the shape
    for image, grey in zip(images[..., 0].astype(int), background):
        # the left column sits on the photograph's black half: one level (0 became 125 light, 56 dark),
        # the right column on its white half (255 either way), the image's maximum
        left, right = image[:, 0][grey[:, 0]], image[:, -1][grey[:, -1]]
        assert len(set(left.tolist())) == 1 and left.max() < 255 and set(right.tolist()) == {255}


def test_bad_texture_dirs_are_clear_errors(tmp_path):
    with pytest.raises(SourceNotFoundError, match="texture_dir"):
        CdSpritesPlus(5, size=2, texture_dir=tmp_path / "missing").batch([0])
    with pytest.raises(DataFormatError, match="no images"):
        CdSpritesPlus(5, size=2, texture_dir=tmp_path).batch([0])
    (tmp_path / "broken.png").write_bytes(b"not a png")
    with pytest.raises(DataFormatError, match="broken.png"):
        CdSpritesPlus(3, size=2, seed=9, texture_dir=tmp_path).batch([0])
    with pytest.raises(InvalidArgumentError, match="texture_families"):
        CdSpritesPlus(3, size=2, texture_dir=tmp_path, texture_families=["noise"])


def test_bad_arguments_are_clear_errors():
    with pytest.raises(InvalidArgumentError, match="level"):
        CdSpritesPlus(6)
    with pytest.raises(InvalidArgumentError, match="split"):
        CdSpritesPlus(1, split="training")
    with pytest.raises(InvalidArgumentError, match="size"):
        CdSpritesPlus(1, size=0)
    with pytest.raises(InvalidArgumentError, match="indices"):
        CdSpritesPlus(1, size=5).batch([5])


def _training_view(level: int, size: int, seed: int, texture_seed: int = 0):
    from repscope.data.registry import load_dataset
    from repscope.train.datamodule import SplitView

    dataset = load_dataset(
        "cdsprites", level=level, train_size=size, val_size=1, test_size=0, seed=seed, texture_seed=texture_seed
    )
    return dataset, SplitView(dataset, "train", ("image", "text", "mask", "attributes"))


def test_training_loader_serves_the_generated_samples_in_a_seeded_order():
    from repscope.train.datamodule import loader

    dataset, view = _training_view(4, 70, seed=8)
    first = view[3]
    assert first["image"].shape == (3, 64, 64) and first["image"].dtype == torch.float32
    assert float(first["image"].max()) <= 1.0
    assert int(first["mask"].sum()) == int(first["text"].sum())  # one one-hot character per masked row

    def order(seed: int) -> np.ndarray:
        rows = [b["attributes"].numpy() for b in loader(view, batch_size=16, shuffle=True, seed=seed)]
        return np.concatenate(rows)

    plain = np.concatenate([b["attributes"].numpy() for b in loader(view, batch_size=16)])
    shuffled, again = order(1), order(1)
    assert len(shuffled) == 70 and np.array_equal(shuffled, again)
    assert sorted(map(tuple, shuffled.tolist())) == sorted(map(tuple, plain.tolist()))
    assert not np.array_equal(shuffled, plain)


# each colour word judged by its hue alone, from the pixels of generated images: a rule written
# here, not read from the generator's colour table (a swapped entry there must fail)
HUE_RULES = {
    "red": lambda r, g, b: r > g + 60 and r > b + 60,
    "green": lambda r, g, b: g > r + 40 and g > b + 20,
    "blue": lambda r, g, b: b > g + 30 and b > r + 60,
    "yellow": lambda r, g, b: r > 160 and g > 160 and b < min(r, g) - 60,
    "pink": lambda r, g, b: r > 160 and b > 160 and g < 90,
}


def test_colour_words_name_the_hue_of_the_shape():
    images, captions, _ = CdSpritesPlus(3, size=300, seed=9).batch(np.arange(300))
    on = images.max(-1) > 0
    seen = set()
    for image, mask, caption in zip(images, on, captions):
        (colour,) = [word for word in caption.split() if word in HUE_RULES]
        r, g, b = image[mask].astype(float).mean(0)
        assert HUE_RULES[colour](r, g, b), f"{caption!r}: mean RGB ({r:.0f}, {g:.0f}, {b:.0f})"
        seen.add(colour)
    assert seen == set(HUE_RULES)


def test_loader_gives_the_same_bytes_with_zero_or_two_workers():
    # a texture seed no other test uses, and the workers first: each worker builds its own texture
    # bank before this process does, so a bank that is not a function of its seed shows
    from repscope.train.datamodule import loader

    _, view = _training_view(5, 96, seed=12, texture_seed=12)

    def batches(workers: int) -> list[dict]:
        return list(loader(view, batch_size=16, shuffle=True, seed=4, num_workers=workers))

    workers = batches(2)
    alone = batches(0)
    assert len(alone) == len(workers) == 6
    for first, second in zip(alone, workers):
        assert set(first) == set(second)
        for key in first:
            assert first[key].dtype == second[key].dtype
            assert first[key].numpy().tobytes() == second[key].numpy().tobytes(), key

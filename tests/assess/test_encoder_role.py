"""The encoder role of ``repscope assess``: codes that are a known function of the factors score near 1 and
their chance levels near 0, noise scores at chance, more noise scores lower; the data it reads (npz round
trip and its error lines, a registered dataset, a dataset folder); CG and traversals with a decoder on
dSprites images, judged by the packaged judges."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from repscope.data import dsprites
from repscope.data.store import write_dataset
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.studies.assess.encoder import assess_encoder
from repscope.studies.assess.factor_data import load_factor_data

N = 200
CLASSES = (2, 3, 4)
FAST_METRICS = ["irs", "uc", "mig", "sap"]


def _factor_images(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """8x8 images whose first row holds the factor classes and whose second row holds noise pixels."""
    rng = np.random.default_rng(seed)
    factors = np.stack([rng.integers(0, c, N) for c in CLASSES], axis=1)
    images = rng.integers(0, 256, (N, 8, 8)).astype(np.uint8)
    images[:, 0, : len(CLASSES)] = factors
    return images, factors


class FactorReader:
    """Codes = the factors read off the first pixel row, latents in a permuted order, plus ``noise`` times
    uniform noise read off the second row (a deterministic function of the image)."""

    def __init__(self, noise: float) -> None:
        self.noise = noise

    def encode(self, images: np.ndarray) -> np.ndarray:
        images = np.asarray(images)
        factors = images[:, 0, : len(CLASSES)].astype(np.float64)
        jitter = images[:, 1, : len(CLASSES)] / 255.0 - 0.5
        return (factors + self.noise * jitter)[:, [2, 0, 1]]


class NoiseReader:
    """Codes from pixels that carry no factor (rows 2-4)."""

    def encode(self, images: np.ndarray) -> np.ndarray:
        return np.asarray(images)[:, 2:5, 0].astype(np.float64)


@pytest.fixture(scope="module")
def data():
    images, factors = _factor_images()
    return load_factor_data({"images": images, "factors": factors, "factor_names": np.array(["a", "b", "c"])})


@pytest.fixture(scope="module")
def clean(data):
    return assess_encoder(FactorReader(0.05), data, metrics=FAST_METRICS, bootstrap=3, seed=1)


def _values(assessment) -> dict[str, tuple[float, float]]:
    frame = assessment.to_frame()
    return {row.metric: (row.value, row.chance) for row in frame.itertuples()}


def test_codes_that_are_the_factors_score_near_one_and_their_chance_near_zero(clean):
    values = _values(clean)
    assert values["irs"][0] > 0.95 and values["mig"][0] > 0.8
    # SAP is the gap between the best and second-best single-latent classifier: at most 1 - chance accuracy
    assert values["sap"][0] > 0.3
    for key in ("irs", "mig", "sap"):
        assert abs(values[key][1]) < 0.1, key
    assert clean.metrics["disentanglement"]["chance"]["mig"] == pytest.approx(values["mig"][1])


def test_the_assessment_holds_tables_arrays_settings_and_intervals(clean, data):
    irs = clean.tables["irs_matrix"]
    assert list(irs.columns) == ["a", "b", "c"] and list(irs.index) == ["z0", "z1", "z2"]
    # latent 0 holds factor c, latent 1 factor a, latent 2 factor b (the reader's permutation)
    assert [irs.loc[f"z{k}"].idxmax() for k in range(3)] == ["c", "a", "b"]
    assert list(clean.tables["per_factor"]["latents_rho1"]) == ["z1", "z2", "z0"]
    np.testing.assert_array_equal(clean.arrays["factors"], data.factors)
    assert clean.arrays["codes"].shape == (N, 3)
    assert clean.settings["n"] == N and clean.settings["seed"] == 1
    frame = clean.to_frame().set_index("metric")
    assert (frame["ci_low"] <= frame["ci_high"]).all()
    # no paper or repscope value for a user's own data
    assert frame["paper"].isna().all() and frame["repscope"].isna().all()
    assert any("no decoder" in note for note in clean.notes)


def test_noise_codes_score_at_chance(data):
    values = _values(assess_encoder(NoiseReader(), data, metrics=FAST_METRICS))
    for key in ("irs", "mig", "sap"):
        assert abs(values[key][0] - values[key][1]) < 0.1, key
    assert values["mig"][0] < 0.05


def test_more_noise_gives_lower_mig(data):
    migs = [_values(assess_encoder(FactorReader(s), data, metrics=["mig"]))["mig"][0] for s in (0.2, 1.5, 6.0)]
    assert migs[0] > migs[1] > migs[2]


def test_compat_both_gives_each_mode_of_irs(data):
    frame = assess_encoder(FactorReader(0.3), data, metrics=["irs"], compat="both").to_frame().set_index("metric")
    assert list(frame.index) == ["irs", "irs_reference"]
    # the factors have at most 4 classes: the reference mode's 20 bins leave them as they are
    assert frame.loc["irs", "value"] == pytest.approx(frame.loc["irs_reference", "value"])


def test_a_bad_compat_or_codes_of_the_wrong_shape_are_refused(data):
    with pytest.raises(InvalidArgumentError, match="--compat"):
        assess_encoder(FactorReader(0.1), data, compat="published")

    class Flat:
        def encode(self, images):
            return np.zeros(len(images))

    with pytest.raises(InvalidArgumentError, match=r"--model: encode of \d+ images gave"):
        assess_encoder(Flat(), data, metrics=["mig"])


# --------------------------------------------------------------------------------------------------
# the data


def test_npz_round_trip(tmp_path):
    images, factors = _factor_images(3)
    path = tmp_path / "data.npz"
    np.savez(path, images=images, factors=factors, factor_names=np.array(["x", "y", "z"]))
    data = load_factor_data(str(path))
    np.testing.assert_array_equal(data.images, images)
    np.testing.assert_array_equal(data.factors, factors)
    assert data.names == ("x", "y", "z") and data.sizes == (2, 3, 4) and data.dataset is None


def test_float_images_become_uint8_and_a_continuous_factor_is_binned(tmp_path):
    rng = np.random.default_rng(4)
    images = np.full((N, 4, 4), 0.5)
    heights = rng.uniform(0.0, 3.0, N)  # continuous: binned into 20 equal-width bins of width 0.15
    data = load_factor_data((images, np.stack([heights, np.zeros(N)], axis=1)))
    assert data.images.dtype == np.uint8 and set(np.unique(data.images)) == {128}
    expected = np.minimum(((heights - heights.min()) / ((heights.max() - heights.min()) / 20)).astype(int), 19)
    np.testing.assert_array_equal(data.factors[:, 0], expected)
    assert data.names == ("factor0",) and data.sizes == (20,)
    assert any("binned into 20" in note for note in data.notes)
    assert any("constant factors dropped" in note and "factor1" in note for note in data.notes)


def test_npz_errors_name_data_and_what_is_wrong(tmp_path):
    images, factors = _factor_images()
    missing = tmp_path / "missing.npz"
    np.savez(missing, images=images)
    with pytest.raises(DataFormatError, match=r"^--data .*missing\.npz: no 'factors' array"):
        load_factor_data(missing)
    short = tmp_path / "short.npz"
    np.savez(short, images=images, factors=factors[:50])
    with pytest.raises(DataFormatError, match=r"^--data .*'images' has 200 rows and 'factors' 50"):
        load_factor_data(short)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, images=images, factors=np.array([{"a": 1}] * N, dtype=object))
    with pytest.raises(DataFormatError, match=r"^--data .*'factors' holds object arrays"):
        load_factor_data(pickled)
    with pytest.raises(InvalidArgumentError, match=r"^--data: 'nothing-here' is neither a registered dataset"):
        load_factor_data("nothing-here")
    with pytest.raises(InvalidArgumentError, match=r"^--data candle: needs the parameter 'data_dir'"):
        load_factor_data("candle")


def test_a_registered_dataset_draws_seeded_rows_without_its_constant_factor():
    first = load_factor_data("dsprites", params={"test_size": 400}, n=250, seed=2)
    again = load_factor_data("dsprites", params={"test_size": 400}, n=250, seed=2)
    other = load_factor_data("dsprites", params={"test_size": 400}, n=250, seed=3)
    assert first.names == ("shape", "scale", "orientation", "posX", "posY")
    assert first.sizes == (3, 6, 40, 32, 32) and first.dataset == "dsprites"
    assert first.images.shape == (250, 64, 64) and set(np.unique(first.images)) == {0, 255}
    np.testing.assert_array_equal(first.factors, again.factors)
    assert not np.array_equal(first.factors, other.factors)
    # each image is the grid's rendering of its factors (colour, the dropped constant, is class 0)
    classes = np.concatenate([np.zeros((250, 1), np.int64), first.factors], axis=1)
    np.testing.assert_array_equal(first.images[:5] // 255, dsprites.render(classes[:5]))
    with pytest.raises(InvalidArgumentError, match=r"^--data dsprites .*rows per class.*raise --n"):
        load_factor_data("dsprites", params={"test_size": 400}, n=60)


def test_a_dsprites_folder_of_masks_reads_as_images(tmp_path):
    rng = np.random.default_rng(5)
    classes = np.stack([np.zeros(40, np.int64), *(rng.integers(0, s, 40) for s in (3, 6))], axis=1)
    classes = np.concatenate([classes, np.zeros((40, 3), np.int64)], axis=1)
    masks = dsprites.render(classes)
    table = pd.DataFrame(classes, columns=list(dsprites.FACTOR_NAMES))
    folder = tmp_path / "set"
    write_dataset(
        folder, [(masks, None, table)], 40, generator="dsprites", level=None, seed=0, params={}, image_shape=(64, 64)
    )
    data = load_factor_data(folder, n=40)
    assert data.names == ("shape", "scale") and data.dataset == "dsprites"
    order = np.random.default_rng(0).permutation(40)
    np.testing.assert_array_equal(data.factors, classes[order][:, 1:3])
    np.testing.assert_array_equal(data.images, masks[order] * 255)


# --------------------------------------------------------------------------------------------------
# a decoder: CG judged by the packaged dSprites judges, and traversals


def _render(shape_scale: np.ndarray) -> np.ndarray:
    """dSprites images (0/255) of shape and scale classes, orientation 0, centred."""
    classes = np.zeros((len(shape_scale), 6), np.int64)
    classes[:, 1:3] = shape_scale
    classes[:, 4:6] = 16
    return dsprites.render(classes) * np.uint8(255)


class SpriteAutoencoder:
    """A perfect two-latent model of centred sprites: its codes are the shape and scale classes (looked up
    by image), its decoder renders the rounded classes."""

    def __init__(self, images: np.ndarray, classes: np.ndarray) -> None:
        self.table = {image.tobytes(): row for image, row in zip(images, classes)}

    def encode(self, images: np.ndarray) -> np.ndarray:
        return np.array([self.table[image.tobytes()] for image in np.asarray(images)], dtype=np.float64)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        codes = np.rint(np.asarray(codes))
        return _render(np.stack([np.clip(codes[:, 0], 0, 2), np.clip(codes[:, 1], 0, 5)], axis=1).astype(np.int64))


@pytest.fixture(scope="module")
def sprites():
    rng = np.random.default_rng(6)
    classes = np.stack([rng.integers(0, 3, 30), rng.integers(0, 6, 30)], axis=1)
    images = _render(classes)
    data = load_factor_data({"images": images, "factors": classes, "factor_names": np.array(["shape", "scale"])})
    return dataclasses.replace(data, dataset="dsprites"), SpriteAutoencoder(images, classes)


def test_a_perfect_decoder_has_cg_near_one_beside_the_papers_beta_vae(sprites):
    data, model = sprites
    result = assess_encoder(model, data, decoder=model, metrics=["irs", "mig"])
    frame = result.to_frame().set_index("metric")
    # IRS beside the paper's beta-VAE (0.40) and repscope's own beta-VAE on dSprites (0.59, README)
    assert frame.loc["irs", "paper"] == 0.40 and frame.loc["irs", "repscope"] == 0.59
    assert pd.isna(frame.loc["mig", "paper"]) and frame.loc["mig", "repscope"] == 0.056
    cg = frame.loc[["cg_rho1", "cg_rho2"]]
    assert (cg["value"] > 0.95).all()
    assert (cg["chance"] < cg["value"] - 0.3).all()
    # the CANDLE paper's Table 2, beta-VAE on dSprites: CG 0.12 at rho 1, 0.10 at rho 2
    assert list(cg["paper"]) == [0.12, 0.10]
    assert result.metrics["cg"]["judge_ok"] and result.metrics["cg"]["judges"] == "the packaged dsprites judges"
    assert list(result.tables["per_factor"].columns) == ["mig", "cg_rho1", "cg_rho2"]
    assert result.tables["per_factor"].loc["shape", "cg_rho1"] > 0.95
    # one row per latent, seven steps: 64-pixel cells 2 pixels apart
    traversals = result.figures["traversals"]
    assert traversals.dtype == np.uint8 and traversals.shape == (2 * 66 - 2, 7 * 66 - 2)
    # row 0 traverses shape: its first and last cells differ; scale stays as the mean code says
    assert not np.array_equal(traversals[:64, :64], traversals[:64, -64:])


def test_cg_is_skipped_with_a_note_without_judges_for_the_data(sprites):
    data, model = sprites
    result = assess_encoder(model, dataclasses.replace(data, dataset=None), decoder=model, metrics=["mig"])
    assert "cg" not in result.metrics and "traversals" in result.figures
    assert any(note.startswith("CG skipped: no judges") for note in result.notes)

"""The shared array / image rules of repscope.validation."""

import importlib
import re

import numpy as np
import pytest

from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.validation import check_image, check_images, check_pixel_values, to_float01, to_uint8


class FakeTensor:
    """What the duck typing relies on: .detach().cpu().numpy()."""

    def __init__(self, array):
        self.array = array

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.array


# --------------------------------------------------------------------------------------------
# pixel values


def test_pixel_values_accepts_uint8_float_bool_without_copy():
    for array in (np.zeros((2, 3), np.uint8), np.full((2, 3), 0.5, np.float32), np.ones((2, 3), bool)):
        assert check_pixel_values(array, "x") is array


@pytest.mark.parametrize(
    "array, fragment",
    [
        (np.zeros((2, 2), np.int64), "dtype int64"),
        (np.zeros((2, 2), np.uint16), "dtype uint16"),
        (np.array([["a", "b"]]), "dtype <U1"),
        (np.array([[None, 1]], dtype=object), "dtype object"),
        (np.array([[0.5, np.nan]]), "NaN or infinite"),
        (np.array([[0.5, np.inf]]), "NaN or infinite"),
        (np.array([[0.5, 1.5]]), "[0, 1]"),
        (np.array([[-0.1, 0.5]]), "[0, 1]"),
    ],
)
def test_pixel_values_refused_with_the_name(array, fragment):
    with pytest.raises(InvalidArgumentError, match="digits") as info:
        check_pixel_values(array, "digits")
    assert fragment in str(info.value)


def test_pixel_values_error_class_is_the_callers():
    with pytest.raises(DataFormatError, match="file.npy"):
        check_pixel_values(np.array([2.0]), "file.npy", error=DataFormatError)


def test_pixel_values_of_an_empty_float_array_pass():
    assert check_pixel_values(np.zeros((0, 28, 28)), "x").shape == (0, 28, 28)


# --------------------------------------------------------------------------------------------
# batches


def test_check_images_grey_shapes():
    images = np.zeros((4, 28, 28), np.uint8)
    assert check_images(images, image_shape=(28, 28)) is images
    dropped = check_images(np.zeros((4, 1, 28, 28), np.uint8), image_shape=(28, 28))
    assert dropped.shape == (4, 28, 28)
    assert check_images(
        np.zeros((2, 5, 7)),
    ).shape == (2, 5, 7)  # any size by default


def test_check_images_refuses_a_trailing_channel_axis_clearly():
    with pytest.raises(InvalidArgumentError, match=r"digits: .*channel axis.*pass \(N, 28, 28\)"):
        check_images(np.zeros((4, 28, 28, 1), np.uint8), "digits", image_shape=(28, 28))
    # without a fixed size, one (28, 28, 1) image must not read as 28 images of 28 x 1
    with pytest.raises(InvalidArgumentError, match="channel axis"):
        check_images(np.zeros((28, 28, 1), np.uint8), "digits")
    with pytest.raises(InvalidArgumentError, match="channel axis"):
        check_images(np.zeros((28, 28, 3), np.uint8), "digits")


def test_check_images_colour_channels_first_is_transposed():
    images = np.random.default_rng(0).random((2, 3, 8, 8))
    out = check_images(images, image_shape=(8, 8, 3))
    assert out.shape == (2, 8, 8, 3)
    np.testing.assert_array_equal(out[1, :, :, 2], images[1, 2])
    assert check_images(FakeTensor(images), image_shape=(8, 8, 3)).shape == (2, 8, 8, 3)


@pytest.mark.parametrize("shape", [(0, 28, 28), (3, 0, 28), (3, 28, 0)])
def test_check_images_refuses_empty_batches_and_zero_size_images(shape):
    with pytest.raises(InvalidArgumentError, match="batch"):
        check_images(np.zeros(shape, np.uint8), "batch")


def test_check_images_min_count_zero_allows_an_empty_batch():
    assert len(check_images(np.zeros((0, 28, 28), np.uint8), min_count=0)) == 0
    with pytest.raises(InvalidArgumentError, match="at least 3 images"):
        check_images(np.zeros((2, 28, 28), np.uint8), min_count=3)


@pytest.mark.parametrize(
    "images",
    [
        np.zeros((4, 28, 27), np.uint8),
        np.zeros((28, 28), np.uint8),
        np.zeros((2, 2, 28, 28), np.uint8),
    ],
)
def test_check_images_wrong_shapes_name_the_expected_shape(images):
    with pytest.raises(InvalidArgumentError, match=r"expected images of shape \(N, 28, 28\)"):
        check_images(images, image_shape=(28, 28))


def test_check_images_refuses_ragged_lists_and_strings():
    with pytest.raises(InvalidArgumentError, match="images"):
        check_images([np.zeros((2, 2)), np.zeros((3, 3))])
    with pytest.raises(InvalidArgumentError, match="dtype"):
        check_images(np.full((2, 4, 4), "x"))


# --------------------------------------------------------------------------------------------
# one image


def test_check_image_rules():
    image = np.zeros((28, 28), np.uint8)
    assert check_image(image) is image
    with pytest.raises(InvalidArgumentError, match=r"image: .*channel axis.*pass \(28, 28\)"):
        check_image(np.zeros((28, 28, 1), np.uint8))
    with pytest.raises(InvalidArgumentError, match="zero-size"):
        check_image(np.zeros((0, 28), np.uint8))
    with pytest.raises(InvalidArgumentError, match="dtype object"):
        check_image(np.zeros((28, 28), dtype=object))
    with pytest.raises(InvalidArgumentError, match="dtype <U"):
        check_image(np.full((28, 28), "a"))
    with pytest.raises(InvalidArgumentError, match="NaN"):
        check_image(np.full((28, 28), np.nan))
    with pytest.raises(InvalidArgumentError, match="NaN"):
        check_image(np.full((28, 28), -np.inf))
    assert check_image(np.zeros((8, 8, 3)), ndim=3).shape == (8, 8, 3)


# --------------------------------------------------------------------------------------------
# conversion


def test_conversions_round_trip_every_uint8_value():
    values = np.arange(256, dtype=np.uint8)
    floats = to_float01(values)
    assert floats.dtype == np.float32
    assert floats[0] == 0 and floats[-1] == 1
    np.testing.assert_array_equal(to_uint8(floats), values)
    assert to_float01(values, dtype=np.float64)[128] == 128 / 255


def test_to_uint8_rounds_and_clips():
    np.testing.assert_array_equal(to_uint8(np.array([-0.5, 0.0, 0.5, 1.0, 2.0, np.nan])), [0, 0, 128, 255, 255, 0])
    np.testing.assert_array_equal(to_uint8(np.array([True, False])), [255, 0])
    uint8 = np.array([3, 7], np.uint8)
    assert to_uint8(uint8) is uint8


def test_conversions_refuse_other_dtypes():
    with pytest.raises(InvalidArgumentError, match="dtype int64"):
        to_float01(np.array([1, 2]))
    with pytest.raises(InvalidArgumentError, match="dtype object"):
        to_uint8(np.array([None]))


# --------------------------------------------------------------------------------------------
# counts: one rule and one wording wherever a Python function takes one


def _sample() -> np.ndarray:
    return np.arange(16.0).reshape(8, 2)


# (function, its arguments around the count, the name the message must give)
COUNTS = {
    "mmd-permutations": (
        "repscope.metrics.mmd:mmd_quadratic_test",
        lambda v: ((_sample(), _sample() + 1), {"permutations": v}),
        "permutations",
    ),
    "subsets": ("repscope.models.multimodal.experts:subsets", lambda v: ((v,), {}), "n_modalities"),
    "traversal-latent-dim": (
        "repscope.studies.multimodal.analysis:joint_traversal_latents",
        lambda v: ((v, 3), {}),
        "latent_dim",
    ),
    "traversal-steps": (
        "repscope.studies.multimodal.analysis:joint_traversal_latents",
        lambda v: ((2, v), {}),
        "steps",
    ),
    "evaluation-n-key": (
        "repscope.studies.multimodal.evaluate:check_evaluation_settings",
        lambda v: ((), {"n": v, "k": 1, "analysis": False, "n_analysis": 0, "names": {"n": "evaluation.n"}}),
        "evaluation.n",
    ),
    "evaluation-batch-size": (
        "repscope.studies.multimodal.evaluate:check_evaluation_settings",
        lambda v: ((), {"n": 1, "k": 1, "analysis": False, "n_analysis": 0, "batch_size": v}),
        "--batch-size",
    ),
    "measure-limit": (
        "repscope.studies.morpho.measure:measure_digits",
        lambda v: (("mnist-sample",), {"limit": v}),
        "--limit",
    ),
    "infogan-generator": ("repscope.models.morpho.infogan:Generator", lambda v: ((v,), {}), "input_dim"),
    "lenet5": ("repscope.models.morpho.baselines:LeNet5", lambda v: ((v,), {}), "num_outputs"),
    "attribute-cnn": ("repscope.models.multimodal.judge_cnn:AttributeCNN", lambda v: ((7,), {"width": v}), "width"),
    "upscale": (
        "repscope.data.morpho.resample:upscale",
        lambda v: ((np.zeros((1, 4, 4), np.uint8),), {"factor": v}),
        "factor",
    ),
    "pipeline-scale": ("repscope.data.morpho.pipeline:PipelineConfig", lambda v: ((), {"scale": v}), "scale"),
    "coverage": (
        "repscope.data.multimodal.second_renderer:coverage",
        lambda v: (([0], [0], [0.0], [32.0], [32.0]), {"supersample": v}),
        "supersample",
    ),
    "cdsprites-size": ("repscope.data.multimodal.cdsprites:CdSpritesPlus", lambda v: ((1,), {"size": v}), "size"),
}


@pytest.mark.parametrize("bad", [0, 2.5])
@pytest.mark.parametrize("case", sorted(COUNTS))
def test_a_count_given_to_a_function_is_refused_in_one_wording(case, bad):
    target, arguments, name = COUNTS[case]
    module, _, attribute = target.partition(":")
    function = getattr(importlib.import_module(module), attribute)
    args, kwargs = arguments(bad)
    expected = rf"^{re.escape(name)}: expected a positive integer, got {re.escape(repr(bad))}$"
    with pytest.raises(InvalidArgumentError, match=expected):
        function(*args, **kwargs)

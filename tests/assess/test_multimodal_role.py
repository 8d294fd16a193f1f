"""The multimodal role of ``repscope assess``: CdSprites+ coherency of image-caption models defined here (an
oracle, a random model, one built from per-modality encoders and decoders), judged by the packaged judges."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.data.multimodal.attributes import ATTRIBUTE_VALUES, compose_caption, level_attributes
from repscope.data.multimodal.cdsprites import CdSpritesPlus
from repscope.errors import InvalidArgumentError
from repscope.studies.assess.multimodal import SharedLatentModel, assess_multimodal
from repscope.studies.multimodal.generation import evaluation_test_set
from repscope.studies.multimodal.judges import packaged_judges_dir, read_judges

LEVEL = 2  # shape and size: 6 combinations, so a random caption or image is Strict-right 1 time in 6
N = 60
SEED = 3
SIZES = [len(ATTRIBUTE_VALUES[a]) for a in level_attributes(LEVEL)]


def _caption(classes) -> str:
    return compose_caption(LEVEL, [int(c) for c in classes])


def _classes(caption: str) -> list[int]:
    """The attribute classes a caption names, read word by word ("big square": size, then shape)."""
    words = caption.split()
    return [ATTRIBUTE_VALUES["shape"].index(words[1]), ATTRIBUTE_VALUES["size"].index(words[0])]


class Renderer:
    """Images of given attribute classes, drawn from a CdSprites+ stream (other factors vary)."""

    def __init__(self) -> None:
        self.bank = CdSpritesPlus(LEVEL, size=600, seed=11, split="val")
        self.table = self.bank.attribute_table(np.arange(600))

    def render(self, classes: np.ndarray) -> np.ndarray:
        rows = [np.flatnonzero((self.table == c).all(1))[k % 50] for k, c in enumerate(np.asarray(classes))]
        return self.bank.batch(np.asarray(rows))[0]


class Oracle:
    """Knows the test images' captions, draws exactly the attributes a caption names, samples true pairs."""

    def __init__(self, renderer: Renderer, test: dict[str, np.ndarray]) -> None:
        self.renderer = renderer
        self.captions = {image.tobytes(): _caption(row) for image, row in zip(test["image"], test["attributes"])}

    def image_to_text(self, images: np.ndarray) -> list[str]:
        assert images.shape[1:] == (64, 64, 3) and images.dtype == np.uint8  # the contract's layout
        return [self.captions[np.transpose(image, (2, 0, 1)).tobytes()] for image in images]

    def text_to_image(self, captions: list[str]) -> np.ndarray:
        return self.renderer.render(np.array([_classes(c) for c in captions]))

    def sample(self, n: int, seed: int):
        images, captions, _ = CdSpritesPlus(LEVEL, size=n, seed=seed, split="train").batch(np.arange(n))
        return images, captions


class Random:
    """Ignores its input: random attributes every time."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.rng = np.random.default_rng(0)

    def _classes(self, n: int) -> np.ndarray:
        return np.stack([self.rng.integers(0, size, n) for size in SIZES], axis=1)

    def image_to_text(self, images):
        return [_caption(row) for row in self._classes(len(images))]

    def text_to_image(self, captions):
        return self.renderer.render(self._classes(len(captions))).astype(np.float32) / 255.0  # float accepted

    def sample(self, n, seed):
        return self.renderer.render(self._classes(n)), [_caption(row) for row in self._classes(n)]


@pytest.fixture(scope="module")
def judges():
    return read_judges(packaged_judges_dir(LEVEL), LEVEL)


@pytest.fixture(scope="module")
def renderer():
    return Renderer()


@pytest.fixture(scope="module")
def oracle(judges, renderer):
    model = Oracle(renderer, evaluation_test_set(LEVEL, N, SEED))
    return assess_multimodal(model, level=LEVEL, n=N, seed=SEED, judges=judges, resamples=30, reference_model="mvae")


@pytest.fixture(scope="module")
def random_model(judges, renderer):
    return assess_multimodal(Random(renderer), level=LEVEL, n=N, seed=SEED, judges=judges, resamples=30)


def _row(assessment, metric):
    return next(row for row in assessment.headline if row.metric == metric)


@pytest.mark.parametrize("direction", ["text_to_image", "image_to_text", "joint"])
def test_an_oracle_is_strictly_coherent_and_a_random_model_scores_chance(oracle, random_model, direction):
    for rules in ("", "_toolkit"):
        assert _row(oracle, f"{direction}_strict{rules}").value >= 97.0
        assert _row(oracle, f"{direction}_features{rules}").value >= 1.95
    found = _row(random_model, f"{direction}_strict")
    assert abs(found.value - 100 / 6) < 12  # 1 in 6 combinations, 60 samples
    assert abs(found.chance - 100 / 6) < 12
    assert abs(found.value - found.chance) < 15
    # the oracle's chance: its own outputs paired with other rows, near 1 in 6 too (the test set is balanced)
    assert _row(oracle, f"{direction}_strict").chance < 40
    # bootstrap intervals hold the value; the random model's is wider than the oracle's
    assert found.ci_low <= found.value <= found.ci_high
    top = _row(oracle, f"{direction}_strict")
    assert top.ci_high - top.ci_low < found.ci_high - found.ci_low


def test_letters_of_exact_captions_are_100_and_the_paper_value_is_the_named_models(oracle, random_model):
    assert _row(oracle, "image_to_text_letters").value == 100.0
    assert _row(random_model, "image_to_text_letters").value < 90.0
    # Table 4, level 2, MVAE (toolkit's rules): text -> image Strict 16, image -> text Letters 91
    assert _row(oracle, "text_to_image_strict_toolkit").paper == 16.0
    assert _row(oracle, "image_to_text_letters_toolkit").paper == 91.0
    assert _row(oracle, "text_to_image_strict").paper is None  # set beside the toolkit's rows only
    assert "MVAE" in _row(oracle, "text_to_image_strict").repscope_source.upper()
    # no model named: the best of the four printed at level 2 (text -> image Strict: MMVAE's 18)
    assert _row(random_model, "text_to_image_strict_toolkit").paper == 18.0
    assert _row(random_model, "text_to_image_strict").repscope is None


def test_the_assessment_holds_tables_figures_and_judged_arrays(oracle):
    assert oracle.role == "multimodal"
    assert set(oracle.tables["coherency"]["direction"]) == {"text to image", "image to text", "joint"}
    assert oracle.metrics["coherency"]["counts"] == {"text_to_image": N, "image_to_text": N, "joint": N}
    assert oracle.figures["text_to_image"].shape == (2 * 64 + 2, 8 * 64 + 7 * 2, 3)
    assert oracle.arrays["text_to_image_judged"].shape == (N, LEVEL)
    examples = oracle.tables["examples"]
    rows = examples[examples["direction"] == "image to text"]
    assert (rows["truth"] == rows["caption"]).all()


def test_a_model_from_per_modality_encoders_and_decoders(judges, renderer):
    """Latents carry the classes (class c at c / 10 + 0.05); the decoders read them back, so the model is
    exact in every direction, and joint pairs from N(0, 1) latents agree by construction."""
    test = evaluation_test_set(LEVEL, 30, SEED)
    lookup = {image.tobytes(): row for image, row in zip(test["image"], test["attributes"])}

    def decode_classes(z):
        return np.stack([np.floor(np.abs(z[:, a]) * 10).astype(int) % size for a, size in enumerate(SIZES)], 1)

    model = SharedLatentModel(
        encode_image=lambda images: (
            np.array([lookup[np.transpose(i, (2, 0, 1)).tobytes()] for i in images]) / 10 + 0.05
        ),
        encode_text=lambda captions: np.array([_classes(c) for c in captions]) / 10 + 0.05,
        decode_image=lambda z: renderer.render(decode_classes(z)),
        decode_text=lambda z: [_caption(row) for row in decode_classes(z)],
        latent_dim=2,
    )
    found = assess_multimodal(model, level=LEVEL, n=30, seed=SEED, judges=judges, resamples=0, rules="repscope")
    for direction in ("text_to_image", "image_to_text", "joint"):
        assert _row(found, f"{direction}_strict").value >= 96.0
        assert _row(found, f"{direction}_strict").ci_low is None  # no bootstrap asked
    assert not any(row.metric.endswith("_toolkit") for row in found.headline)
    # without decode_text there is no caption direction and no joint sampling
    partial = SharedLatentModel(encode_text=model.encode_text, decode_image=model.decode_image)
    found = assess_multimodal(partial, level=LEVEL, n=12, seed=SEED, judges=judges, resamples=0)
    assert found.metrics["coherency"]["counts"] == {"text_to_image": 12}
    assert any("not assessed: image -> text, joint" in note for note in found.notes)


class Short:
    def image_to_text(self, images):
        return ["big square"] * (len(images) - 1)


class BadImages:
    def text_to_image(self, captions):
        return np.zeros((len(captions), 32, 32, 3), np.uint8)


class OneString:
    def image_to_text(self, images):
        return "big square"


@pytest.mark.parametrize(
    ("model", "kwargs", "named"),
    [
        (object(), {}, "model: object has none of image_to_text"),
        (Short(), {}, "model.image_to_text: expected 10 captions, got 9"),
        (OneString(), {}, "model.image_to_text: expected a list of 10 caption strings"),
        (BadImages(), {}, "model.text_to_image"),
        (Short(), {"rules": ("ours",)}, "rules: expected one or both of repscope, toolkit"),
        (Short(), {"level": 6}, "level"),
        (Short(), {"resamples": 1}, "resamples"),
        (Short(), {"judges": 3}, "judges"),
    ],
)
def test_bad_models_and_arguments_are_named(judges, model, kwargs, named):
    arguments = {"level": LEVEL, "n": 10, "judges": judges, **kwargs}
    with pytest.raises(InvalidArgumentError, match=named):
        assess_multimodal(model, **arguments)


@pytest.mark.slow
def test_a_repscope_task_is_generated_as_mmvae_evaluate_generates_it(judges):
    """An untrained MVAE draws no shape: every image rejected, Strict 0 by our rules; its own Table 4 row
    and README run are set beside."""
    import torch  # noqa: PLC0415 -- only this test builds a network

    from repscope.train.registry import task_class  # noqa: PLC0415

    specs = {
        "image": {"shape": [3, 64, 64], "classes": None, "kind": "image"},
        "text": {"shape": [45, 27], "classes": None, "kind": "text"},
        "mask": {"shape": [45], "classes": None, "kind": "mask"},
    }
    torch.manual_seed(0)
    task = task_class("mvae")(latent_dim=4, field_specs=specs)
    found = assess_multimodal(task, level=LEVEL, n=12, seed=SEED, judges=judges, resamples=0)
    assert found.settings["model_kind"] == "task" and found.settings["reference_model"] == "mvae"
    assert found.metrics["coherency"]["counts"] == {"text_to_image": 12, "image_to_text": 12, "joint": 12}
    assert _row(found, "text_to_image_strict").value == 0.0
    assert found.metrics["coherency"]["text_to_image_rejected"] == 100.0
    assert _row(found, "image_to_text_strict_toolkit").paper == 55.0  # Table 4, level 2, MVAE
    assert _row(found, "text_to_image_strict").repscope == 17.0  # README, --quick level 2

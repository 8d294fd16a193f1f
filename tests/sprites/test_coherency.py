"""CdSprites+ coherency (Strict / Features / Letters): perfect pairs, hand-computed corruptions,
unreadable captions, joint agreement and argument validation."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.data.multimodal.attributes import (
    ATTRIBUTES,
    combination_count,
    combinations_to_table,
    compose_captions,
)
from repscope.errors import InvalidArgumentError
from repscope.metrics.multimodal.coherency import coherency_report, format_features, image_to_text, joint, text_to_image

# Level 5 column order: shape, size, colour, position, background.
PINK_HEART = [2, 1, 4, 2, 0]  # 'small pink heart at bottom left on dark' (39 characters)
YELLOW_ELLIPSE = [1, 1, 3, 3, 1]  # 'small yellow ellipse at bottom right on light' (45 characters)
RED_SQUARE_LIGHT = [0, 0, 0, 0, 1]  # 'big red square at top left on light'


def test_hand_written_captions_match_composed_ones():
    assert compose_captions(5, [PINK_HEART, YELLOW_ELLIPSE, RED_SQUARE_LIGHT]) == [
        "small pink heart at bottom left on dark",
        "small yellow ellipse at bottom right on light",
        "big red square at top left on light",
    ]


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_ground_truth_scores_perfectly_at_every_level(level):
    truth = combinations_to_table(level, np.arange(combination_count(level)))
    captions = compose_captions(level, truth)
    perfect = {name: 100.0 for name in ATTRIBUTES[:level]}

    t2i = text_to_image(level, truth, truth.copy())
    i2t = image_to_text(level, truth, captions)
    both = joint(level, captions, truth.copy())
    for result in (t2i, i2t, both):
        assert result["strict"] == 100.0
        assert result["features"] == float(level)
        assert result["per_attribute"] == perfect
        assert result["level"] == level
        assert result["samples"] == combination_count(level)
    assert i2t["letters"] == 100.0
    assert format_features(i2t["features"], level) == f"{level}.0/{level}"


def _one(level, truth_row, caption):
    return image_to_text(level, [truth_row], [caption])


def test_misspelt_shape_costs_only_that_attribute():
    # 'haert' vs 'heart': h=h, a/e, e/a, r=r, t=t -> 2 of the 39 characters differ.
    result = _one(5, PINK_HEART, "small pink haert at bottom left on dark")
    assert result["strict"] == 0.0
    assert result["features"] == 4.0
    assert result["letters"] == pytest.approx(37 / 39 * 100)
    assert result["per_attribute"] == {
        "shape": 0.0,
        "size": 100.0,
        "colour": 100.0,
        "position": 100.0,
        "background": 100.0,
    }


def test_misspelt_longest_caption_letters_43_of_45():
    # 'ellipes' vs 'ellipse': e,l,l,i,p equal; e/s, s/e differ -> 43 of 45 characters right.
    result = _one(5, YELLOW_ELLIPSE, "small yellow ellipes at bottom right on light")
    assert result["strict"] == 0.0
    assert result["features"] == 4.0
    assert result["letters"] == pytest.approx(43 / 45 * 100)


def test_missing_first_word_shifts_every_slot():
    # Words 'pink heart at bottom left on dark' fill the slots size, colour, shape, (at), position x2,
    # (on), background as: size='pink', colour='heart', shape='at', [at-slot 'bottom'],
    # position='left on', [on-slot 'dark'], background=missing -> no attribute is right.
    # Letters: the caption is shifted by 6 characters; position by position against
    # 'small pink heart at bottom left on dark' only index 10 (' ' vs ' ') agrees -> 1 of 39.
    result = _one(5, PINK_HEART, "pink heart at bottom left on dark")
    assert result["strict"] == 0.0
    assert result["features"] == 0.0
    assert result["letters"] == pytest.approx(1 / 39 * 100)
    assert set(result["per_attribute"].values()) == {0.0}


def test_missing_middle_word_spoils_only_what_follows():
    # 'small pink at bottom left on dark': size, colour right; shape='at', position='left on',
    # background missing -> 2 of 5. Letters: 'small pink ' (11 characters) agree, then the shift;
    # after index 10 the two strings are
    #   true: 'heart at bottom left on dark'   gen: 'at bottom left on dark'
    # and agree nowhere (checked character by character below, 0 further matches).
    true, gen = "heart at bottom left on dark", "at bottom left on dark"
    assert sum(a == b for a, b in zip(gen, true)) == 0
    result = _one(5, PINK_HEART, "small pink at bottom left on dark")
    assert result["features"] == 2.0
    assert result["per_attribute"]["size"] == 100.0 and result["per_attribute"]["colour"] == 100.0
    assert result["per_attribute"]["shape"] == 0.0 and result["per_attribute"]["background"] == 0.0
    assert result["letters"] == pytest.approx(11 / 39 * 100)


def test_short_caption_scores_letters_over_matched_positions_only():
    # Level 3 truth 'big red square' (14 characters); 'big red' reproduces its first 7.
    result = _one(3, [0, 0, 0], "big red")
    assert result["strict"] == 0.0
    assert result["features"] == 2.0
    assert result["per_attribute"] == {"shape": 0.0, "size": 100.0, "colour": 100.0}
    assert result["letters"] == pytest.approx(50.0)


def test_extra_trailing_words_keep_features_but_not_strict():
    result = _one(5, PINK_HEART, "small pink heart at bottom left on dark tonight")
    assert result["strict"] == 0.0
    assert result["features"] == 5.0
    assert result["letters"] == 100.0  # characters beyond the true caption's length are not scored


def test_whitespace_is_strict_wrong_but_features_read_words():
    result = _one(5, PINK_HEART, " small pink heart at bottom left on dark")
    assert result["strict"] == 0.0
    assert result["features"] == 5.0


@pytest.mark.parametrize("caption", ["", "xyz", None, b"small pink heart at bottom left on dark", 42])
def test_unreadable_captions_are_wrong_and_never_crash(caption):
    result = _one(5, PINK_HEART, caption)
    assert result["strict"] == 0.0
    assert result["features"] == 0.0
    assert result["letters"] == 0.0
    both = joint(5, [caption], [PINK_HEART])
    assert both["strict"] == 0.0 and both["features"] == 0.0


def test_image_to_text_averages_over_captions():
    truth = [PINK_HEART, YELLOW_ELLIPSE, RED_SQUARE_LIGHT, PINK_HEART]
    captions = [
        "small pink heart at bottom left on dark",  # right: 5 features, 39/39 letters
        "small yellow ellipes at bottom right on light",  # 4 features, 43/45 letters
        None,  # 0 features, 0 letters
        "big pink heart at bottom left on dark",  # size wrong: 4 features, 0/39 letters
    ]
    # 'big pink heart at bottom left on dark' against 'small pink heart at bottom left on dark',
    # index by index: b/s i/m g/a ' '/l p/l i/' ' n/p k/i ' '/n h/k e/' ' a/h r/e t/a ' '/r a/t
    # t/' ' ' '/a b/t o/' ' t/b t/o o/t m/t ' '/o l/m e/' ' f/l t/e ' '/f o/t n/' ' ' '/o d/n
    # a/' ' r/d k/a -> no position agrees (the 2-character shift misaligns every character).
    fourth = 0
    assert sum(a == b for a, b in zip(captions[3], "small pink heart at bottom left on dark")) == fourth
    result = image_to_text(5, truth, captions)
    assert result["strict"] == 25.0
    assert result["features"] == pytest.approx((5 + 4 + 0 + 4) / 4)
    assert result["per_attribute"] == {
        "shape": 50.0,
        "size": 50.0,
        "colour": 75.0,
        "position": 75.0,
        "background": 75.0,
    }
    assert result["letters"] == pytest.approx((1 + 43 / 45 + 0 + fourth / 39) / 4 * 100)


def test_swapped_images_give_hand_computed_scores():
    # Level 3 columns shape, size, colour. Rows 0<->1 and 2<->3 swapped, row 4 in place.
    truth = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 4], [2, 1, 4], [2, 0, 3]])
    predicted = truth[[1, 0, 3, 2, 4]]
    # row 0: shape 0=0, size 1!=0, colour 0=0 -> 2      row 1: 0=0, 0!=1, 0=0 -> 2
    # row 2: shape 2!=1, size 1!=0, colour 4=4 -> 1     row 3: 1!=2, 0!=1, 4=4 -> 1
    # row 4: all right -> 3
    result = text_to_image(3, truth, predicted)
    assert result["strict"] == 20.0
    assert result["features"] == pytest.approx(9 / 5)
    assert result["per_attribute"] == {"shape": 60.0, "size": 20.0, "colour": 100.0}
    assert format_features(result["features"], 3) == "1.8/3"


def test_joint_rewards_agreement_not_ground_truth():
    # None of these captions need be the test set's: only caption/image agreement counts.
    captions = [
        "big red square at top left on light",  # image agrees -> right, 5 features
        "big red sqare at top left on light",  # misspelt: strict wrong, other 4 attributes agree
        "big red square at top left on light",  # image shows a heart: strict wrong, 4 features
        "big red square at top left  on light",  # double space: not a caption of the level (strict
    ]  # wrong) but every word slot agrees -> 5 features
    predicted = [RED_SQUARE_LIGHT, RED_SQUARE_LIGHT, [2, 0, 0, 0, 1], RED_SQUARE_LIGHT]
    result = joint(5, captions, predicted)
    assert result["strict"] == 25.0
    assert result["features"] == pytest.approx((5 + 4 + 4 + 5) / 4)
    assert result["per_attribute"] == {
        "shape": 50.0,
        "size": 100.0,
        "colour": 100.0,
        "position": 100.0,
        "background": 100.0,
    }


def test_an_unrecognised_image_is_wrong_on_every_attribute_by_hand():
    # the swapped case above with rows 0 and 4 rejected by the judge: row 0 drops its 2 right attributes,
    # row 4 its 3 (and its Strict); the other rows are scored as before
    truth = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 4], [2, 1, 4], [2, 0, 3]])
    predicted = truth[[1, 0, 3, 2, 4]]
    recognised = np.array([False, True, True, True, False])
    result = text_to_image(3, truth, predicted, recognised)
    assert result["strict"] == 0.0
    assert result["features"] == pytest.approx((0 + 2 + 1 + 1 + 0) / 5)
    assert result["per_attribute"] == {"shape": 20.0, "size": 0.0, "colour": 60.0}
    assert result["rejected"] == 40.0
    assert "rejected" not in text_to_image(3, truth, predicted)  # no judge's verdict, nothing to report
    # joint: the agreeing pair (row 0) rejected loses Strict and all 5 features; row 2 keeps its 4
    captions = ["big red square at top left on light", "big red square at top left on light"]
    pairs = joint(5, captions, [RED_SQUARE_LIGHT, [2, 0, 0, 0, 1]], np.array([False, True]))
    assert pairs["strict"] == 0.0 and pairs["features"] == pytest.approx((0 + 4) / 2) and pairs["rejected"] == 50.0
    with pytest.raises(InvalidArgumentError, match="recognised"):
        text_to_image(3, truth, predicted, [1, 1, 1, 1, 1])  # ints, not the judge's booleans


def test_coherency_report_runs_what_applies():
    truth = [PINK_HEART, YELLOW_ELLIPSE]
    captions = compose_captions(5, truth)
    report = coherency_report(5, truth=truth, image_predictions_from_text=truth, captions_from_images=captions)
    assert set(report) == {"text_to_image", "image_to_text"}
    assert report["image_to_text"]["letters"] == 100.0
    report = coherency_report(5, joint_captions=captions, joint_image_predictions=truth)
    assert set(report) == {"joint"}
    assert report["joint"]["strict"] == 100.0


@pytest.mark.parametrize(
    "kwargs, named",
    [
        ({}, "nothing to compute"),
        ({"truth": [PINK_HEART]}, "nothing to compute"),
        ({"captions_from_images": ["small pink heart at bottom left on dark"]}, "truth"),
        ({"image_predictions_from_text": [PINK_HEART]}, "truth"),
        ({"joint_captions": ["small pink heart at bottom left on dark"]}, "joint_image_predictions"),
        ({"joint_image_predictions": [PINK_HEART]}, "joint_captions"),
    ],
)
def test_coherency_report_errors(kwargs, named):
    with pytest.raises(InvalidArgumentError, match=named):
        coherency_report(5, **kwargs)


@pytest.mark.parametrize(
    "call, named",
    [
        (lambda: text_to_image(3, np.zeros((2, 2), int), np.zeros((2, 3), int)), "truth"),
        (lambda: text_to_image(3, np.zeros((2, 3), int), np.zeros((2, 3, 1), int)), "predicted"),
        (lambda: text_to_image(3, [[0, 0, 5]], [[0, 0, 0]]), "truth: column colour"),
        (lambda: text_to_image(3, [[0, 0, 0]], [[3, 0, 0]]), "predicted: column shape"),
        (lambda: text_to_image(3, [[0.0, 0.0, 0.0]], [[0, 0, 0]]), "truth: expected integer"),
        (lambda: text_to_image(3, np.zeros((3, 3), int), np.zeros((2, 3), int)), "truth and predicted"),
        (lambda: text_to_image(3, np.zeros((0, 3), int), np.zeros((0, 3), int)), "truth: is empty"),
        (lambda: text_to_image(6, [[0] * 6], [[0] * 6]), "level"),
        (lambda: image_to_text(2, [[0, 0]], ["big square", "big square"]), "truth and captions"),
        (lambda: image_to_text(2, [[0, 0]], "big square"), "captions"),
        (lambda: image_to_text(2, [[0, 0]], []), "captions: is empty"),
        (lambda: image_to_text(0, [[0, 0]], ["big square"]), "level"),
        (lambda: joint(2, ["big square"], [[0, 0], [0, 0]]), "captions and predicted"),
        (lambda: joint(2, ["big square"], [[0, 2]]), "predicted: column size"),
        (lambda: format_features(float("nan"), 5), "value"),
        (lambda: format_features(6.0, 5), "value"),
        (lambda: format_features(2.0, 6), "level"),
    ],
)
def test_validation_names_the_argument(call, named):
    with pytest.raises(InvalidArgumentError, match=named):
        call()


def test_format_features_rounds_like_the_paper():
    assert format_features(2.4, 5) == "2.4/5"
    assert format_features(1.75, 5, digits=2) == "1.75/5"
    assert format_features(np.float64(0.04), 2) == "0.0/2"

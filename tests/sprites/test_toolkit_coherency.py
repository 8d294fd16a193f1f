"""Coherency by the authors' toolkit's rules (multimodal_compare/eval/eval_cdsprites.py), beside ours.

Every expected value below is worked out by hand from the toolkit's rules: a caption is split on single
spaces; size is read from token 0, colour from token 1, shape from token 0/1/2 (level 1/2/3-5), position
from tokens 3-6 joined, background from the last two tokens joined; a word counts when it occurs in that
text as a substring (case ignored), the first of the toolkit's list winning; a missing token reads nothing.
Image -> text: an attribute is right when the word read occurs in the true caption; Letters compares
position by position over the shorter string, divided by the true caption's length; Strict is Letters == 1.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from repscope.errors import InvalidArgumentError
from repscope.metrics.multimodal import coherency as ours
from repscope.studies.multimodal.coherency import (
    coherency_table,
    evaluate_outputs,
    read_captions,
    toolkit_caption_scores,
    toolkit_coherency,
    toolkit_image_scores,
    toolkit_joint_scores,
    toolkit_read_caption,
)

TRUTH5 = "small pink heart at bottom left on dark"  # 39 characters

# (caption, strict, features, right characters at the same position) against TRUTH5, worked out by hand
LEVEL5_CASES = [
    # exact: every token where the toolkit looks
    (TRUTH5, True, 5, 39),
    # trailing extra text: starts with the truth, so Strict; the last two tokens are "dark xyz": no background
    (TRUTH5 + " xyz", True, 4, 39),
    # the decoder's end mark (two spaces): the last two tokens are empty, no background
    (TRUTH5 + "  ", True, 4, 39),
    # colour missing: token 1 "heart" holds no colour, token 2 "at" no shape, tokens 3-6
    # "bottom left on dark" no position; size and background right
    ("small heart at bottom left on dark", False, 2, None),
    # size and colour swapped: token 0 "pink" no size, token 1 "small" no colour; shape, position, background
    ("pink small heart at bottom left on dark", False, 3, None),
    # empty: one empty token, nothing read, nothing matches
    ("", False, 0, 0),
    # a doubled space shifts the tokens: size right, token 1 empty, token 2 "pink" no shape; tokens 3-6
    # "heart at bottom left" hold the position; background right. Letters: "small " (6), then shifted
    ("small  pink heart at bottom left on dark", False, 3, None),
    # words with extra letters: every word is read as a substring of its token
    ("smallish pinkk hearts at bottom left on dark", False, 5, None),
    # a prefix of the truth: 34 of 39 letters; the last two tokens "left on" hold no background
    ("small pink heart at bottom left on", False, 4, 34),
    # capitals: words are found whatever their case, letters are compared as they are
    ("SMALL pink heart at bottom left on dark", False, 5, 34),
]


@pytest.mark.parametrize(("caption", "strict", "features", "letters"), LEVEL5_CASES)
def test_level5_captions_are_scored_as_the_toolkit_scores_them(caption, strict, features, letters):
    scores = toolkit_caption_scores(5, TRUTH5, caption)
    assert scores["strict"] is strict
    assert scores["features"] == features
    # letters: an independent count where the table gives none
    same = letters if letters is not None else sum(a == b for a, b in zip(caption, TRUTH5))
    assert scores["letters"] == pytest.approx(same / 39)


def test_what_the_toolkit_reads_from_a_caption_token_by_token():
    read = toolkit_read_caption(5, "small  pink heart at bottom left on dark")
    assert read == {
        "shape": None,
        "size": "small",
        "colour": None,
        "position": "at bottom left",
        "background": "on dark",
    }
    # the first word of the toolkit's list wins: "heartsquare" reads as heart, "smallbig" as small
    read = toolkit_read_caption(3, "smallbig whitered heartsquare")
    assert read == {"shape": "heart", "size": "small", "colour": "white"}
    assert toolkit_read_caption(2, "big") == {"shape": None, "size": "big"}  # no token 1
    assert toolkit_read_caption(1, None) == {"shape": None}  # not a string: nothing read


def test_level4_position_needs_a_seventh_token():
    truth = "big red square at top left"
    exact = toolkit_caption_scores(4, truth, truth)
    # six tokens: token 6 does not exist, the toolkit catches the IndexError and reads no position
    assert exact["strict"] is True and exact["features"] == 3 and not exact["per_attribute"]["position"]
    with_end_mark = toolkit_caption_scores(4, truth, truth + "  ")
    assert with_end_mark["features"] == 4 and with_end_mark["strict"] is True


@pytest.mark.parametrize(
    ("level", "truth", "caption", "strict", "features", "letters"),
    [
        (2, "small ellipse", "small ellipse extra", True, 2, 13),
        # token 0 "ellipse" holds no size, token 1 "small" no shape; only position 6 ("e") lines up
        (2, "small ellipse", "ellipse small", False, 0, 1),
        (2, "small ellipse", "big ellipse", False, 1, 0),  # "big" is not in the truth; letters: b/s, i/m, ...
        (1, "heart", "hearts", True, 1, 5),
        (1, "heart", "heat", False, 0, 3),  # h, e, a right; "heat" holds no shape
        (3, "big blue square", "big blue", False, 2, 8),  # no token 2: no shape
    ],
)
def test_other_levels_by_hand(level, truth, caption, strict, features, letters):
    scores = toolkit_caption_scores(level, truth, caption)
    assert (scores["strict"], scores["features"]) == (strict, features)
    assert scores["letters"] == pytest.approx(letters / len(truth))


def test_the_same_captions_by_our_rules_differ_where_the_issue_says():
    table = np.array([[2, 1, 4, 2, 0]])  # heart, small, pink, bottom left, dark
    assert ours.image_to_text(5, table, [TRUTH5])["strict"] == 100.0
    # trailing text: ours Strict-wrong, the toolkit's Strict-right
    assert ours.image_to_text(5, table, [TRUTH5 + " xyz"])["strict"] == 0.0
    assert toolkit_coherency(5, "image_to_text", truth=[TRUTH5], captions=[TRUTH5 + " xyz"])["strict"] == 100.0


def test_joint_pairs_by_hand():
    image = [2, 1, 4]  # level 3, our column order: heart, small, pink
    cases = [
        ("small pink heart", True, 3),
        ("small pink heart  zzz", True, 3),  # trailing text after the end mark changes nothing read
        ("pink small heart", False, 1),  # size and colour unread ("Unknown"); shape right
        ("", False, 0),
        ("small white heart", False, 2),  # the toolkit knows white; the image is pink
        ("smallpink  heart", False, 2),  # token 0 holds "small", token 1 is empty, token 2 "heart"
        ("big pink heart", False, 2),
    ]
    for caption, strict, features in cases:
        scores = toolkit_joint_scores(3, caption, image)
        assert (scores["strict"], scores["features"]) == (strict, features), caption
    # ours needs a well-formed caption for Strict and reads whole words only
    result = ours.joint(3, ["small pink heart  zzz", "smallpink  heart"], np.array([image, image]))
    assert result["strict"] == 0.0 and result["features"] == pytest.approx((3 + 0) / 2)


def test_text_to_image_reads_the_true_caption_and_matches_the_classifiers_words():
    # level 5: position and background are compared with their connectives, as the toolkit names classes
    truth = "big red square at top right on light"
    assert toolkit_image_scores(5, truth, [0, 0, 0, 1, 1])["strict"] is True
    wrong = toolkit_image_scores(5, truth, [1, 0, 0, 2, 1])  # ellipse, bottom left
    assert wrong["features"] == 3 and not wrong["per_attribute"]["shape"] and not wrong["per_attribute"]["position"]
    # on well-formed true captions the toolkit's text -> image is ours, number for number
    rng = np.random.default_rng(7)
    from repscope.data.multimodal.attributes import compose_captions

    table = np.stack([rng.integers(0, k, 60) for k in (3, 2, 5, 4, 2)], axis=1)
    predicted = np.where(rng.random(table.shape) < 0.2, (table + 1) % [3, 2, 5, 4, 2], table)
    theirs = toolkit_coherency(5, "text_to_image", truth=compose_captions(5, table), predicted=predicted)
    mine = ours.text_to_image(5, table, predicted)
    assert theirs["strict"] == pytest.approx(mine["strict"]) and theirs["features"] == pytest.approx(mine["features"])
    assert theirs["per_attribute"] == pytest.approx(mine["per_attribute"])


def test_aggregates_are_means_over_samples():
    captions = [TRUTH5, TRUTH5 + " xyz", "", "pink small heart at bottom left on dark"]
    result = toolkit_coherency(5, "image_to_text", truth=[TRUTH5] * 4, captions=captions)
    assert result["strict"] == pytest.approx(50.0)  # two of four start with the truth
    assert result["features"] == pytest.approx((5 + 4 + 0 + 3) / 4)
    assert result["per_attribute"]["background"] == pytest.approx(50.0)  # the exact and the swapped caption
    letters = [39, 39, 0, sum(a == b for a, b in zip(captions[3], TRUTH5))]
    assert result["letters"] == pytest.approx(100 * np.mean(letters) / 39)
    assert result["rules"] == "toolkit" and result["samples"] == 4


def test_bad_input_is_named():
    with pytest.raises(InvalidArgumentError, match="direction"):
        toolkit_coherency(2, "sideways", truth=["big square"], captions=["big square"])
    with pytest.raises(InvalidArgumentError, match="captions"):
        toolkit_coherency(2, "image_to_text", truth=["big square"], captions=[])
    with pytest.raises(InvalidArgumentError, match="truth and captions"):
        toolkit_coherency(2, "image_to_text", truth=["big square"], captions=["a", "b"])
    with pytest.raises(InvalidArgumentError, match="predicted"):
        toolkit_image_scores(2, "big square", [0, 7])
    with pytest.raises(InvalidArgumentError, match="true_caption"):
        toolkit_caption_scores(2, "", "big square")
    with pytest.raises(InvalidArgumentError, match="level"):
        toolkit_read_caption(6, "big square")


def test_captions_are_read_exactly_as_written(tmp_path):
    path = tmp_path / "captions.txt"
    path.write_bytes(b"big square\n\n  small heart  \nbig  ellipse")
    assert read_captions(path) == ["big square", "", "  small heart  ", "big  ellipse"]
    path.write_bytes(b"\n")
    assert read_captions(path) == [""]  # one empty caption


class Level2Judges:
    """Stands in for the level-2 classifiers: every image reads as a big square."""

    accuracies = {"shape": 1.0, "size": 1.0}

    def predict_with_confidence(self, images):
        return np.zeros((len(images), 2), np.int64), np.ones((len(images), 2))

    def judge(self, images):
        from repscope.studies.multimodal.judges import Judgement  # noqa: PLC0415

        table, confidence = self.predict_with_confidence(images)
        return Judgement(table, confidence, np.ones(len(images), bool), np.zeros(len(images)))

    def familiarity(self, confidence):
        return {"mean_confidence": {"shape": 1.0, "size": 1.0}, "warning": None}


class BlankRejectingJudges(Level2Judges):
    """Level2Judges that, like the real judge's reject option, recognise no shape in a blank image."""

    def judge(self, images):
        from repscope.studies.multimodal.judges import Judgement  # noqa: PLC0415

        table, confidence = self.predict_with_confidence(images)
        blank = np.asarray(images).reshape(len(images), -1).max(axis=1) == 0
        return Judgement(table, confidence, ~blank, blank.astype(float))


def test_images_the_judge_rejects_count_wrong_by_our_rules_and_are_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(
        "repscope.studies.multimodal.coherency.load_judges", lambda level, trainer=None: BlankRejectingJudges()
    )
    folder = tmp_path / "outputs"
    (folder / "text_to_image").mkdir(parents=True)
    (folder / "text_to_image" / "truth.txt").write_text("big square\nbig square\nbig square\nbig square\n")
    images = np.zeros((4, 64, 64, 3), np.uint8)
    images[:3, 20:40, 20:40] = 255  # three drawn, one blank frame
    np.save(folder / "text_to_image" / "images.npy", images)
    results = evaluate_outputs(folder, 2)
    # every image reads as a big square, but the blank one is rejected: ours 3 of 4, the toolkit's 4 of 4
    assert results["text_to_image"]["strict"] == 75.0 and results["text_to_image"]["rejected"] == 25.0
    assert results["toolkit"]["text_to_image"]["strict"] == 100.0
    assert results["rejected"] == {"text_to_image": 25.0}
    assert any("recognises no shape in 25.0%" in w for w in results["warnings"])
    table = coherency_table(results).set_index("rules")
    assert table.loc["ours", "rejected_percent"] == 25.0 and pd.isna(table.loc["toolkit", "rejected_percent"])


def test_a_folder_is_scored_both_ways_and_the_toolkit_reads_the_raw_captions(tmp_path, monkeypatch):
    monkeypatch.setattr("repscope.studies.multimodal.coherency.load_judges", lambda level, trainer=None: Level2Judges())
    folder = tmp_path / "outputs"
    (folder / "image_to_text").mkdir(parents=True)
    (folder / "joint").mkdir()
    (folder / "image_to_text" / "truth.txt").write_text("big square\nsmall heart\n")
    (folder / "image_to_text" / "captions.txt").write_text("big square\nsmall heart\n")
    (folder / "image_to_text" / "captions_raw.txt").write_text("big square  xq\nsmall hearr  \n")
    np.save(folder / "joint" / "images.npy", np.zeros((3, 64, 64, 3), np.uint8))
    (folder / "joint" / "captions.txt").write_text("big square zz\n\nbig  square\n")
    both = evaluate_outputs(folder, 2)
    assert both["compat"] == "both"
    assert both["image_to_text"]["strict"] == 100.0  # ours reads captions.txt
    toolkit = both["toolkit"]["image_to_text"]
    # raw: the first starts with the truth; "small hearr" does not (10 of 11 letters), its shape is unread
    assert toolkit["strict"] == 50.0 and toolkit["features"] == pytest.approx((2 + 1) / 2)
    assert toolkit["letters"] == pytest.approx(100 * (1 + 10 / 11) / 2)
    assert toolkit["captions_file"] == "captions_raw.txt"
    # joint against big squares: ours needs a well-formed caption; the toolkit reads tokens 0 and 1
    assert both["joint"]["strict"] == 0.0
    assert both["toolkit"]["joint"]["strict"] == pytest.approx(100 / 3)
    assert both["toolkit"]["joint"]["features"] == pytest.approx((2 + 0 + 1) / 3)
    assert both["toolkit"]["joint"]["captions_file"] == "captions.txt"
    only = evaluate_outputs(folder, 2, compat="toolkit")
    assert "image_to_text" not in only and only["toolkit"]["image_to_text"] == toolkit
    assert "toolkit" not in evaluate_outputs(folder, 2, compat="ours")
    with pytest.raises(InvalidArgumentError, match="--compat"):
        evaluate_outputs(folder, 2, compat="paper")
    json.dumps(both)  # metrics.json holds it as it is

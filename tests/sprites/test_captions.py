"""The CdSprites+ caption codec and caption noise."""

from __future__ import annotations

import numpy as np
import pytest

from repscope.data.multimodal.captions import (
    MAX_CAPTION_LENGTH,
    corrupt_caption,
    decode_captions,
    encode_captions,
)
from repscope.errors import InvalidArgumentError

CAPTIONS = ["heart", "small pink heart at bottom left on dark", "big yellow ellipse at top right on light"]


def test_encode_one_hot_layout_by_hand():
    onehot, mask = encode_captions(["ab c"])
    assert onehot.shape == (1, MAX_CAPTION_LENGTH, 27) and mask.shape == (1, MAX_CAPTION_LENGTH)
    assert onehot[0, :4].argmax(-1).tolist() == [1, 2, 0, 3]  # space is character 0
    assert onehot[0, :4].sum() == 4 and onehot[0, 4:].sum() == 0
    assert mask[0].tolist() == [True] * 4 + [False] * (MAX_CAPTION_LENGTH - 4)


def test_round_trip_with_and_without_mask():
    onehot, mask = encode_captions(CAPTIONS)
    assert decode_captions(onehot, mask) == CAPTIONS
    assert decode_captions(onehot) == CAPTIONS
    # logits decode by arg-max
    noisy = onehot * 5 + np.random.default_rng(0).normal(0, 0.1, onehot.shape)
    assert decode_captions(noisy, mask) == CAPTIONS


def test_longest_level_five_caption_fits():
    longest = "small yellow ellipse at bottom right on light"
    assert len(longest) <= MAX_CAPTION_LENGTH
    assert decode_captions(*encode_captions([longest])) == [longest]


@pytest.mark.parametrize(
    "caption, message", [("Heart", "'H'"), ("red-heart", "'-'"), ("a" * 46, "more than max_length")]
)
def test_bad_captions_are_clear_errors(caption, message):
    with pytest.raises(InvalidArgumentError, match=message):
        encode_captions(["ok", caption])


def test_noise_is_seeded_keeps_words_in_place_and_edits_what_it_says():
    caption = "small pink heart at bottom left on dark"
    assert corrupt_caption(caption, 3) == corrupt_caption(caption, 3)
    outputs = {corrupt_caption(caption, seed) for seed in range(50)}
    assert len(outputs) > 20 and caption not in outputs
    for seed in range(50):
        noisy = corrupt_caption(caption, seed, kinds=("swap",))
        assert sorted(noisy) == sorted(caption) and len(noisy.split()) == 8
        assert len(corrupt_caption(caption, seed, kinds=("drop",))) == len(caption) - 1
        assert len(corrupt_caption(caption, seed, kinds=("repeat",))) == len(caption) + 1
        changed = corrupt_caption(caption, seed, kinds=("substitute",))
        assert sum(a != b for a, b in zip(changed, caption)) == 1
    assert corrupt_caption(caption, 0, edits=0) == caption
    with pytest.raises(InvalidArgumentError, match="kinds"):
        corrupt_caption(caption, 0, kinds=("shout",))

"""The cached Morpho-MNIST builds the studies and ``repscope train`` read: copies and the plain render
rule reach the build, and a cache of other settings is never reused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from repscope.config import load_config, shipped_config_path
from repscope.data.morpho.build import FORMAT_VERSION
from repscope.data.morpho.training_sets import ensure_morpho_dataset, load_morpho_mnist, morpho_cache_dir
from repscope.data.registry import load_dataset
from repscope.errors import InvalidArgumentError, RepscopeError
from repscope.studies.morpho.supervised import SupervisedConfig, quick

TINY = dict(source="mnist-sample", seed=0, train_size=20, test_size=10)


def test_cache_folder_names_every_setting_that_changes_the_bytes():
    base = morpho_cache_dir("mnist-sample", None, 0, 0.2, 20, 10)
    assert morpho_cache_dir("mnist-sample", None, 0, 0.2, 20, 10, 1, 1, "rendered") == base
    others = {
        morpho_cache_dir("mnist-sample", None, 0, 0.2, 20, 10, copies=2),
        morpho_cache_dir("mnist-sample", None, 0, 0.2, 20, 10, test_copies=2),
        morpho_cache_dir("mnist-sample", None, 0, 0.2, 20, 10, plain_render="source-bytes"),
    }
    assert len(others) == 3 and base not in others


def test_copies_and_plain_render_reach_the_cached_build(isolated_home):
    one = load_morpho_mnist(set="swel", target="label", **TINY)
    two = load_morpho_mnist(set="swel", target="label", copies=2, test_copies=3, **TINY)
    assert len(two.train_images) == 40 and len(two.test_images) == 30
    assert np.array_equal(two.train_labels, np.tile(one.train_labels, 2))
    # copy 0 is the digit of the build without copies; copy 1 is perturbed anew
    assert np.array_equal(two.train_images[:20], one.train_images)
    assert not np.array_equal(two.train_images[20:], one.train_images)
    rendered = load_morpho_mnist(set="plain", **TINY)
    kept = load_morpho_mnist(set="plain", plain_render="source-bytes", **TINY)
    assert not np.array_equal(rendered.train_images, kept.train_images)
    assert np.array_equal(
        kept.train_images, load_morpho_mnist(set="plain", plain_render="source-bytes", **TINY).train_images
    )
    # the registry that `repscope train` reads takes the same parameters
    dataset = load_dataset("morpho-mnist", set="local", target="abnormal", copies=2, **TINY)
    assert len(dataset.extras["training_set"].train_images) == 40
    assert len(list((isolated_home / "morpho-mnist").glob("*/dataset.json"))) == 4  # one build per setting


def test_a_cache_of_other_settings_is_refused_not_reused(isolated_home):
    built = ensure_morpho_dataset(**TINY)
    manifest = json.loads((built / "dataset.json").read_text())
    assert manifest["format_version"] == FORMAT_VERSION and manifest["config"]["copies"] == 1
    # a folder carrying the name of a copies=2 build but holding the copies=1 build
    target = morpho_cache_dir("mnist-sample", None, 0, 0.2, 20, 10, copies=2)
    shutil.copytree(built, target)
    with pytest.raises(RepscopeError, match="copies"):
        ensure_morpho_dataset(copies=2, **TINY)
    # a build of the previous format under the current name
    manifest["format_version"] = FORMAT_VERSION - 1
    (Path(built) / "dataset.json").write_text(json.dumps(manifest))
    with pytest.raises(RepscopeError, match="format_version"):
        ensure_morpho_dataset(**TINY)


def test_bad_plain_render_or_copies_name_the_option(isolated_home):
    with pytest.raises(InvalidArgumentError, match="plain_render"):
        ensure_morpho_dataset(plain_render="pixels", **TINY)
    with pytest.raises(InvalidArgumentError, match="copies"):
        ensure_morpho_dataset(copies=0, **TINY)


def test_supervised_study_uses_nine_copies_of_the_sample_and_quick_uses_one():
    shipped = shipped_config_path("morpho-supervised")
    config = load_config(shipped, SupervisedConfig)
    assert config.data.source == "mnist-sample" and config.data.copies == 9
    assert "copies: 1" in shipped.read_text()  # the comment saying what full MNIST takes
    assert quick(config).data.copies == 1 and config.data.copies == 9  # quick works on a copy
    params = config.data.params()
    assert params["copies"] == 9 and params["plain_render"] == "rendered"

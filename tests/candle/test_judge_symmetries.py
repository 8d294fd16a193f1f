"""Judges (factor classifiers) are held to what the images show: symmetric values count as right, invisible ones
are left out (repscope.data.symmetries, repscope.studies.candle.cg)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from repscope.data import dsprites
from repscope.data.symmetries import identifiable_hits
from repscope.errors import InvalidArgumentError
from repscope.studies.candle.cg import judge_accuracies, judge_record, judge_records
from repscope.train.reader import open_run


def _dsprites_rows(shapes, orientations):
    rows = np.zeros((len(shapes), 6), dtype=np.int64)
    rows[:, 1], rows[:, 3] = shapes, orientations
    return rows


def test_a_turned_square_is_the_same_image_and_the_rule_accepts_exactly_those():
    # 0 square, 1 ellipse, 2 heart; class c is c * 360 / 39 degrees (9.23 degrees a step)
    rows = _dsprites_rows([0, 0, 0, 1, 1, 2, 2, 2], [0, 0, 3, 5, 5, 10, 0, 10])
    # square 0 -> 10 is 92.3 deg (2.3 from 90: same image within half a step); 0 -> 5 is 46 deg; 3 -> 13 is
    # 92.3 deg; ellipse 5 -> 25 is 184.6 deg (4.6 from 180, inside half a step of 4.615); 5 -> 24 is 175.4
    # (4.6 from 180 the other way, inside too), heart 10 -> 10, heart 0 -> 39 (0 and 360 deg), heart
    # 10 -> 29 (175 deg: a heart has no symmetry)
    predicted = np.array([10, 5, 13, 25, 24, 10, 39, 29])
    hits, counted = identifiable_hits("dsprites", "orientation", rows, predicted)
    assert hits.tolist() == [True, False, True, True, True, True, True, False]
    assert counted.all()
    # the images agree with the rule: square at 0 and at 90 degrees (the lattice has no 90, so compare the
    # rendered grid angle 92.3 with 0: at most a few boundary pixels differ), square at 46 differs a lot
    base = np.array([[0, 0, 5, 0, 16, 16]])
    turned, half = base.copy(), base.copy()
    turned[0, 3], half[0, 3] = 10, 5
    images = dsprites.render(np.concatenate([base, turned, half]))
    assert np.sum(images[0] != images[1]) < np.sum(images[0] != images[2]) / 3


def test_candle_rotation_counts_only_objects_that_show_it():
    # objects: 0 cube (90-degree symmetry), 1 sphere, 2 cylinder, 3 cone (none shows rotation), 4 torus
    # (180); rotation classes (0, 15, 30, 45, 60, 90) degrees
    rows = np.zeros((6, 6), dtype=np.int64)
    rows[:, 0] = [0, 0, 4, 4, 1, 3]
    rows[:, 3] = [0, 5, 5, 0, 2, 1]
    predicted = np.array([5, 0, 0, 0, 2, 1])
    hits, counted = identifiable_hits("candle", "rotation", rows, predicted)
    # cube 0 vs 90: same; cube 90 vs 0: same; torus 90 vs 0: different; torus 0 vs 0: right; sphere, cone
    # not counted (even where the class is right)
    assert counted.tolist() == [True, True, True, True, False, False]
    assert hits.tolist() == [True, True, False, True, False, False]


def test_factors_without_a_rule_are_scored_by_equal_classes_and_bad_shapes_are_refused():
    rows = np.zeros((3, 6), dtype=np.int64)
    rows[:, 4] = [1, 2, 3]
    hits, counted = identifiable_hits("dsprites", "posX", rows, np.array([1, 3, 3]))
    assert hits.tolist() == [True, False, True] and counted.all()
    with pytest.raises(InvalidArgumentError, match="factors"):
        identifiable_hits("dsprites", "orientation", rows[:, :2], np.array([1, 3, 3]))
    with pytest.raises(InvalidArgumentError, match="posZ"):
        identifiable_hits("dsprites", "posZ", rows, np.array([1, 3, 3]))
    with pytest.raises(InvalidArgumentError, match="orientation classes must be in 0..39"):
        identifiable_hits("dsprites", "orientation", rows, np.array([1, 40, 3]))


def test_a_judge_record_holds_raw_and_identifiable_accuracy(tmp_path):
    rows = np.zeros((4, 6), dtype=np.int64)
    rows[:, 0] = [0, 1, 4, 0]  # cube, sphere, torus, cube
    rows[:, 3] = [0, 3, 2, 5]
    truth = rows[:, 3]
    predicted = np.array([5, 0, 2, 4])  # cube 0 -> 90 (same image), sphere wrong (invisible), torus right, cube wrong
    record = judge_record("candle", "rotation", rows, truth, predicted)
    assert record["accuracy"] == pytest.approx(1 / 4)
    assert record["identifiable_accuracy"] == pytest.approx(2 / 3)
    assert (record["counted"], record["n"]) == (3, 4)
    plain = judge_record("candle", "size", rows, np.array([0, 1, 2, 2]), np.array([0, 1, 1, 2]))
    assert plain["accuracy"] == plain["identifiable_accuracy"] == pytest.approx(3 / 4)
    # a folder of judges: judge.json where written, the raw test accuracy of an older run
    (tmp_path / "rotation").mkdir()
    (tmp_path / "rotation" / "judge.json").write_text(json.dumps(record))
    (tmp_path / "size").mkdir()
    (tmp_path / "size" / "metrics.json").write_text(json.dumps({"test_accuracy": 0.5}))
    assert judge_accuracies(tmp_path) == pytest.approx({"rotation": 2 / 3, "size": 0.5})
    assert judge_records(tmp_path)["size"]["rule"].startswith("raw test accuracy")


def test_the_train_judges_command_trains_candle_judges_and_prints_both_accuracies(tmp_path):
    from test_candle_dataset import write_render
    from typer.testing import CliRunner

    from repscope.cli import app

    folder = tmp_path / "renders"
    folder.mkdir()
    rng = np.random.default_rng(3)
    objects, rotations = ("cube", "sphere", "torus"), (0, 15, 90)
    for k in range(24):
        x0, y0 = (int(v) for v in rng.integers(5, 40, 2))
        bounds = [[x0, y0], [x0 + 12 + k % 3 * 4, y0 + 10]]
        write_render(
            folder, f"{k:03d}", objects[k % 3], "red", "small", rotations[k // 3 % 3], "indoor", "left", bounds
        )
    runner = CliRunner()
    out = tmp_path / "judges"
    arguments = ["disentangle", "train-judges", "--out", str(out), "--data", "candle", "--factor", "rotation"]
    # the rotation judge's network: full resolution in the first block, the maximum alone read out, wider
    network = ["--network-param", "first_stride=1", "--network-param", "readout=max", "--network-param", "width=2"]
    network += ["--model-param", "augment=shift", "--model-param", "augment_ranges=[[-2, 2]]"]
    result = runner.invoke(
        app,
        [*arguments, "--data-param", f"data_dir={folder}", "--epochs", "1", "--data-param", "image_size=16", *network],
    )
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((out / "rotation" / "config.yaml").read_text())
    assert config["model"]["params"] == {
        "network_params": {"first_stride": 1, "readout": "max", "width": 2},
        "augment": "shift",
        "augment_ranges": [[-2, 2]],
    }
    judge = open_run(out / "rotation").task().network
    assert judge.readout == "max" and judge.classifier.in_features == 128  # the last block's 64 x 2 maxima
    record = json.loads((out / "rotation" / "judge.json").read_text())
    # the sphere's rotations are not counted: at most the cube's and the torus's test images are
    assert record["counted"] < record["n"] and record["rule"].startswith("cube and torus only")
    assert f"identifiable {record['identifiable_accuracy']:.3f}" in result.stdout
    # a dataset without known factors needs them named; a model that is not a classifier is refused
    refused = runner.invoke(app, ["disentangle", "train-judges", "--out", str(tmp_path / "x"), "--data", "digits"])
    assert isinstance(refused.exception, InvalidArgumentError) and "--factor" in str(refused.exception)
    refused = runner.invoke(app, [*arguments[:3], str(tmp_path / "y"), "--model", "beta-vae"])
    assert "--model: 'beta-vae' is not a registered classifier" in str(refused.exception)
    refused = runner.invoke(app, [*arguments[:3], str(tmp_path / "z"), "--network-param", "readout=mean"])
    assert "readout: expected one of both, max, got 'mean'" in str(refused.exception)
    refused = runner.invoke(app, [*arguments[:3], str(tmp_path / "v"), "--network-param", "width=0"])
    assert "width: expected a positive integer, got 0" in str(refused.exception)
    refused = runner.invoke(app, [*arguments[:3], str(tmp_path / "w"), "--model-param", "wings=2"])
    assert str(refused.exception) == "--model-param: unknown key model.params.wings"
    assert not any((tmp_path / name).exists() for name in ("v", "w", "x", "y", "z"))


def test_the_factor_cnn_reads_where_a_pixel_is_and_checks_its_parameters():
    import torch

    from repscope.models.candle.judge_cnn import FactorCNN
    from repscope.models.networks import build_classifier, network_parameters

    torch.manual_seed(0)
    net = FactorCNN(7, (1, 64, 64), width=4, hidden=8).eval()
    assert net(torch.zeros(3, 1, 64, 64)).shape == (3, 7)
    # the coordinate channels: the same dot at two places gives different logits even through the global
    # maximum, and a blank image gives non-zero features (the coordinates alone)
    left, right = torch.zeros(1, 1, 64, 64), torch.zeros(1, 1, 64, 64)
    left[..., 30:34, 4:8], right[..., 30:34, 56:60] = 1.0, 1.0
    with torch.no_grad():
        assert not torch.allclose(net(left), net(right))
        assert net.features(torch.cat([torch.zeros(1, 1, 64, 64), net.coordinates], 1)).abs().sum() > 0
    assert {"width", "hidden", "dropout"} <= set(network_parameters("factor-cnn"))
    assert build_classifier("factor-cnn", (3, 32, 32), 4, {"width": 2}).num_classes == 4
    for kwargs, key in (
        ({"width": 0}, "width"),
        ({"dropout": 1.0}, "dropout"),
        ({"image_shape": (1, 60, 60)}, "image_shape"),
    ):
        with pytest.raises(InvalidArgumentError, match=key):
            FactorCNN(3, **kwargs)
    with pytest.raises(InvalidArgumentError, match="num_classes"):
        FactorCNN(1)

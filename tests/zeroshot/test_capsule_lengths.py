"""CapsNet's raw capsule lengths through the Raw Zero-Shot metrics: the ``kind`` of a soft-label archive,
the metrics on raw lengths against hand-computed values (the rules of the authors' code path:
RepresentationMetrics ``Model.analyse_raw_zero_shot`` stores ``model.predict``, the Keras ``Length``
output, and Eq. 3 / Eq. 4 read it as it is, only ``e'`` normalised), the study's ``soft_labels`` key and
the metrics command."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import yaml

from repscope.data.zeroshot.softlabels import check_soft_labels, read_soft_labels, write_soft_labels
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.metrics.zeroshot import amalgam_metric, raw_zero_shot_dbi, zero_shot_scores

# raw lengths of 3 classes, 2 / 3 / 1 images: no row sums to one, every class differs
LOO = [
    np.array([[0.9, 0.2], [0.5, 0.4]]),
    np.array([[0.1, 0.7], [0.3, 0.3], [0.2, 0.5]]),
    np.array([[0.6, 0.05]]),
]
FULL = [
    np.array([[0.3, 0.6, 0.1], [0.2, 0.2, 0.4]]),
    np.array([[0.5, 0.1, 0.3], [0.4, 0.2, 0.4], [0.1, 0.3, 0.6]]),
    np.array([[0.2, 0.6, 0.8]]),
]

# Eq. 3 by hand. Class 0: centroid (0.7, 0.3), both squared distances 0.2^2 + 0.1^2 = 0.05 -> sqrt(0.05).
# Class 1: centroid (0.2, 0.5), squared distances 0.05, 0.05, 0 -> sqrt(0.1 / 3). Class 2: one image -> 0.
DBI_TERMS = [math.sqrt(0.05), math.sqrt(0.1 / 3), 0.0]
# Eq. 4 by hand: e' = the full row without class i, divided by its sum; e summed as it is.
# Class 0: e' = (6/7, 1/7), (1/3, 2/3) -> h' = (25/21, 17/21); h = (1.4, 0.6); |h' - h|_1 = 8.8/21; / 2.
# Class 1: e' = (5/8, 3/8), (1/2, 1/2), (1/7, 6/7) -> h' = (71/56, 97/56); h = (0.6, 1.5); |.|_1 = 0.9; / 2.
# Class 2: e' = (1/4, 3/4); h = (0.6, 0.05); |.|_1 = 0.35 + 0.7 = 1.05; / 2.
AM_TERMS = [4.4 / 21, 0.45, 0.525]
IMAGES = [2, 3, 1]


def _npz(path, arrays):
    np.savez(path, **arrays)
    return path


def _arrays(loo, full):
    return {f"loo_{i}": a for i, a in enumerate(loo)} | {f"full_{i}": a for i, a in enumerate(full)}


# -- the archive


def test_a_raw_length_archive_round_trips_with_its_kind(tmp_path):
    path = write_soft_labels(tmp_path / "caps.npz", LOO, FULL, ["plane", "car", "bird"], kind="capsule_lengths")
    data = read_soft_labels(path)
    assert data.kind == "capsule_lengths" and data.class_names == ("plane", "car", "bird")
    for got, want in zip(data.loo + data.full, LOO + FULL):
        np.testing.assert_allclose(got, want, atol=1e-7)  # float32 storage, nothing renormalised
    with np.load(path, allow_pickle=False) as archive:
        assert str(archive["kind"]) == "capsule_lengths"
    # a probability archive says so too
    probabilities = [a / a.sum(axis=1, keepdims=True) for a in LOO], [a / a.sum(axis=1, keepdims=True) for a in FULL]
    assert read_soft_labels(write_soft_labels(tmp_path / "p.npz", *probabilities)).kind == "probabilities"


def test_an_archive_without_kind_reads_as_probabilities(tmp_path):
    normalised = [a / a.sum(axis=1, keepdims=True) for a in LOO], [a / a.sum(axis=1, keepdims=True) for a in FULL]
    assert read_soft_labels(_npz(tmp_path / "old.npz", _arrays(*normalised))).kind == "probabilities"
    # raw lengths in an older file (no kind) are read as probabilities, and refused as such
    with pytest.raises(DataFormatError, match=r"old_raw.npz: loo_0 row 0 sums to 1.1, not 1.*capsule_lengths"):
        read_soft_labels(_npz(tmp_path / "old_raw.npz", _arrays(LOO, FULL)))


def test_the_row_sum_check_still_refuses_unnormalised_probabilities():
    with pytest.raises(InvalidArgumentError, match="loo_0 row 0 sums to 1.1, not 1"):
        check_soft_labels(LOO, FULL)
    with pytest.raises(InvalidArgumentError, match="loo_0 row 0 sums to 1.1"):
        zero_shot_scores(LOO, FULL)
    assert check_soft_labels(LOO, FULL, kind="capsule_lengths").kind == "capsule_lengths"


def test_lengths_outside_zero_one_are_refused(tmp_path):
    too_long = [LOO[0], np.array([[0.1, 0.7], [0.3, 0.3], [1.2, 0.5]]), LOO[2]]
    with pytest.raises(InvalidArgumentError, match=r"loo_1 row 2 holds the length 1.2 \(column 0\), above 1"):
        check_soft_labels(too_long, FULL, kind="capsule_lengths")
    negative = [FULL[0], FULL[1], np.array([[0.2, -0.1, 0.8]])]
    with pytest.raises(InvalidArgumentError, match="full_2 holds negative or non-finite values; expected capsule"):
        check_soft_labels(LOO, negative, kind="capsule_lengths")
    with pytest.raises(InvalidArgumentError, match="full_1 holds negative or non-finite"):
        check_soft_labels(LOO, [FULL[0], np.full((3, 3), np.nan), FULL[2]], kind="capsule_lengths")
    # a unit capsule through the Keras Length layer: sqrt(1 + 1e-7), within the tolerance
    keras_unit = [np.array([[math.sqrt(1 + 1e-7), 0.2], [0.5, 0.4]]), LOO[1], LOO[2]]
    assert check_soft_labels(keras_unit, FULL, kind="capsule_lengths").loo[0][0, 0] > 1
    archive = _npz(tmp_path / "long.npz", _arrays(too_long, FULL) | {"kind": np.asarray("capsule_lengths")})
    with pytest.raises(DataFormatError, match="long.npz: loo_1 row 2 holds the length 1.2"):
        read_soft_labels(archive)


def test_a_bad_kind_is_an_error_naming_the_file_and_the_key(tmp_path, run_cli):
    arrays = _arrays(LOO, FULL)
    for name, kind, shown in (
        ("a.npz", np.asarray("logits"), "'logits'"),
        ("b.npz", np.asarray(["capsule_lengths", "probabilities"]), "shape"),
        ("c.npz", np.asarray(1.0), "float64"),
    ):
        with pytest.raises(DataFormatError, match=rf"{name}: kind: expected probabilities or capsule_lengths.*{shown}"):
            read_soft_labels(_npz(tmp_path / name, arrays | {"kind": kind}))
    with pytest.raises(InvalidArgumentError, match="kind: expected probabilities or capsule_lengths, got 'raw'"):
        check_soft_labels(LOO, FULL, kind="raw")
    with pytest.raises(InvalidArgumentError, match="kind"):
        write_soft_labels(tmp_path / "d.npz", LOO, FULL, kind="lengths")
    assert not (tmp_path / "d.npz").exists()
    code, _, err = run_cli(["zeroshot", "metrics", str(tmp_path / "a.npz")])
    assert code == 1 and err.count("\n") == 1 and "a.npz: kind:" in err


# -- the metrics on raw lengths


def _davies_bouldin_by_hand(loo):
    """Davies-Bouldin of the clusters with a zero at the excluded class, from its definition."""
    clusters = [np.insert(e, i, 0.0, axis=1) for i, e in enumerate(loo)]
    centroids = [c.mean(axis=0) for c in clusters]
    scatter = [np.mean([math.dist(row, centre) for row in c]) for c, centre in zip(clusters, centroids)]
    worst = []
    for i in range(len(clusters)):
        ratios = [
            (scatter[i] + scatter[k]) / math.dist(centroids[i], centroids[k]) for k in range(len(clusters)) if k != i
        ]
        worst.append(max(ratios))
    return sum(worst) / len(worst)


def test_the_metrics_on_raw_lengths_equal_the_hand_computed_values():
    scores = zero_shot_scores(LOO, FULL, "capsule_lengths")
    assert scores["soft_label_kind"] == "capsule_lengths"
    assert scores["dbi"] == pytest.approx(sum(DBI_TERMS) / 3, rel=1e-12)
    assert scores["dbi_per_class"] == pytest.approx(DBI_TERMS, rel=1e-12)
    assert scores["am"] == pytest.approx(sum(AM_TERMS) / 3, rel=1e-12)
    assert scores["am_per_class"] == pytest.approx(AM_TERMS, rel=1e-12)
    per_image = [t / m for t, m in zip(AM_TERMS, IMAGES)]
    assert scores["am_per_image"] == pytest.approx(sum(per_image) / 3, rel=1e-12)
    assert scores["davies_bouldin"] == pytest.approx(_davies_bouldin_by_hand(LOO), rel=1e-9)
    assert raw_zero_shot_dbi(LOO, kind="capsule_lengths")["params"]["soft_label_kind"] == "capsule_lengths"
    am = amalgam_metric(LOO, FULL, kind="capsule_lengths")
    assert am["params"] == {"classes": 3, "images": IMAGES, "soft_label_kind": "capsule_lengths"}
    # normalising the lengths first (the paper's mode) gives other values: the kind matters
    normalised = zero_shot_scores(
        [a / a.sum(axis=1, keepdims=True) for a in LOO], [a / a.sum(axis=1, keepdims=True) for a in FULL]
    )
    assert normalised["soft_label_kind"] == "probabilities"
    assert normalised["am"] != pytest.approx(scores["am"], rel=1e-3)


def test_the_metrics_command_reads_raw_lengths_and_says_which(tmp_path, run_cli):
    path = write_soft_labels(tmp_path / "caps.npz", LOO, FULL, kind="capsule_lengths")
    code, out, err = run_cli(["zeroshot", "metrics", str(path)])
    assert code == 0, err
    printed = json.loads(out)
    assert printed["soft_label_kind"] == "capsule_lengths"
    # float32 storage: the hand values to 1e-7
    assert printed["am"] == pytest.approx(sum(AM_TERMS) / 3, abs=1e-6)
    assert printed["dbi"] == pytest.approx(sum(DBI_TERMS) / 3, abs=1e-6)
    code, out, _ = run_cli(["zeroshot", "metrics", str(path), "--out", str(tmp_path / "m.json")])
    assert code == 0 and "on capsule_lengths" in out
    old = _npz(
        tmp_path / "old.npz",
        _arrays([a / a.sum(1, keepdims=True) for a in LOO], [a / a.sum(1, keepdims=True) for a in FULL]),
    )
    code, out, _ = run_cli(["zeroshot", "metrics", str(old), "--out", str(tmp_path / "o.json")])
    assert code == 0 and "on probabilities" in out


# -- the study


def _tiny_capsnet(outputs: int, seed: int):
    from repscope.train.tasks import CapsNetTask

    torch.manual_seed(seed)
    network = {"conv_channels": 8, "primary_types": 2, "class_dim": 4}
    return CapsNetTask(num_outputs=outputs, network_params=network).eval()


def _keras_lengths(task, images, epsilon=1e-7):
    """The authors' Length layer by hand: sqrt(sum(v ** 2) + 1e-7) of each class capsule, not normalised
    (``epsilon=1e-8``: ours, which the paper's mode normalises)."""
    with torch.no_grad():
        capsules = task.network.capsules(torch.from_numpy(images[:, None].astype(np.float32) / 255.0))
    return np.sqrt((capsules.double().numpy() ** 2).sum(-1) + epsilon)


def test_the_study_key_picks_each_architectures_soft_labels():
    from repscope.studies.zeroshot.study import (
        Architecture,
        ZeroShotConfig,
        architecture_soft_labels,
        soft_label_kind,
    )

    assert ZeroShotConfig().soft_labels == "normalised"
    with pytest.raises(ValueError, match="soft_labels"):
        ZeroShotConfig(soft_labels="raw")
    reference = ZeroShotConfig(soft_labels="reference")
    kinds = {a.label: soft_label_kind(reference, a) for a in reference.architectures}
    assert kinds == {
        "CapsNet": "capsule_lengths",
        "AllConv": "probabilities",
        "ResNet": "probabilities",
        "NIN": "probabilities",
        "LeNet": "probabilities",
    }
    assert {soft_label_kind(ZeroShotConfig(), a) for a in ZeroShotConfig().architectures} == {"probabilities"}
    assert soft_label_kind(reference, Architecture(label="caps", name="capsnet")) == "capsule_lengths"

    task = _tiny_capsnet(3, seed=2)
    images = np.random.default_rng(5).integers(0, 256, (4, 28, 28), dtype=np.uint8)
    raw = architecture_soft_labels(task, images, "capsule_lengths")
    np.testing.assert_allclose(raw, _keras_lengths(task, images), rtol=1e-6)
    assert not np.allclose(raw.sum(1), 1.0)
    normalised = architecture_soft_labels(task, images)
    np.testing.assert_allclose(normalised.sum(1), 1.0, rtol=1e-12)
    with pytest.raises(InvalidArgumentError, match="capsule_lengths needs a CapsNet"):
        architecture_soft_labels(SimpleNamespace(soft_labels=lambda x: x), images, "capsule_lengths")


def test_soft_labels_reference_reaches_the_capsnet_of_a_training_point(tmp_path, monkeypatch):
    """train_point with soft_labels reference keeps CapsNet's raw lengths (fit replaced by a tiny CapsNet)."""
    import repscope.train.fitting
    from repscope.studies.zeroshot.study import train_point

    rng = np.random.default_rng(6)
    images = rng.integers(0, 256, (9, 28, 28), dtype=np.uint8)
    targets = np.array([0, 1, 2, 1, 0, 2, 1, 1, 0])
    task = _tiny_capsnet(2, seed=3)  # the model without class 1: 2 outputs
    base = SimpleNamespace(arrays=lambda split, fields: {"image": images, "target": targets})
    outcome = SimpleNamespace(
        data=SimpleNamespace(extras={"base_dataset": base, "base_classes": 3}),
        task=task,
        metrics={"test_accuracy": 0.5, "fit_seconds": 0.1, "n_train": 9},
    )
    monkeypatch.setattr(repscope.train.fitting, "fit", lambda *args, **kwargs: outcome)
    config = {"architectures": [{"label": "CapsNet", "name": "capsnet"}], "soft_label_n": None}
    class_1 = images[targets == 1]
    for setting, folder in (("reference", "raw"), ("normalised", "paper")):
        train_point(["arch=CapsNet", "excluded=1"], tmp_path / folder, False, config={**config, "soft_labels": setting})
    raw = np.load(tmp_path / "raw" / "softlabels.npy")
    np.testing.assert_allclose(raw, _keras_lengths(task, class_1), rtol=1e-6)
    paper = np.load(tmp_path / "paper" / "softlabels.npy")
    lengths = _keras_lengths(task, class_1, epsilon=1e-8)
    assert raw.shape == paper.shape == (4, 2)
    np.testing.assert_allclose(paper.sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(paper, lengths / lengths.sum(1, keepdims=True), rtol=1e-6)


def test_the_representation_row_says_which_kind_it_was_computed_on(tmp_path):
    from repscope.run_directory import RunDirectory
    from repscope.studies.zeroshot.results import compute_zeroshot, write_zeroshot
    from repscope.studies.zeroshot.study import ZeroShotConfig, _point_dir, gather_soft_labels, point_overrides

    config = ZeroShotConfig(architectures=[{"label": "CapsNet", "name": "capsnet"}], soft_labels="reference")
    run = RunDirectory.create("zeroshot-study", out=tmp_path / "run")
    models = run.path("models")
    for excluded, soft in [(0, LOO[0]), (1, LOO[1]), (2, LOO[2]), (None, np.concatenate(FULL))]:
        folder = _point_dir(models, *point_overrides("CapsNet", excluded))
        folder.mkdir(parents=True)
        np.save(folder / "softlabels.npy", soft.astype(np.float32))
    architecture = config.architectures[0]
    soft_labels = gather_soft_labels(models, config, architecture, IMAGES, ["a", "b", "c"])
    result = compute_zeroshot(
        {"CapsNet": soft_labels},
        {"CapsNet": 0.5},
        {"CapsNet": 0.5},
        {},
        norms=[],
        thresholds=[],
        attack_images=0,
        attack_candidates=0,
        soft_label_setting="reference",
    )
    write_zeroshot(result, run)
    row = result.representation.iloc[0]
    assert soft_labels.kind == row["soft_label_kind"] == "capsule_lengths"
    assert read_soft_labels(run.path("softlabels", "capsnet.npz")).kind == "capsule_lengths"
    assert row["am"] == pytest.approx(sum(AM_TERMS) / 3, abs=1e-6)
    assert result.representation["soft_label_kind"].tolist() == ["capsule_lengths"]
    # the same files under the default setting are probabilities, and raw lengths are refused as such
    with pytest.raises(InvalidArgumentError, match="sums to"):
        gather_soft_labels(
            models, ZeroShotConfig(architectures=config.architectures), architecture, IMAGES, ["a", "b", "c"]
        )


def test_resume_of_a_run_made_before_the_key_existed(tmp_path):
    from repscope.studies.zeroshot.study import ZeroShotConfig, _open_run

    config = ZeroShotConfig(architectures=[{"label": "LeNet", "name": "lenet5"}])
    out = tmp_path / "run"
    _open_run(config, out, tmp_path, resume=False)
    stored = yaml.safe_load((out / "config.yaml").read_text())
    assert stored.pop("soft_labels") == "normalised"
    (out / "config.yaml").write_text(yaml.safe_dump(stored))
    _open_run(config, out, tmp_path, resume=True)  # the stored config takes the default: the same run
    assert yaml.safe_load((out / "config.yaml").read_text())["soft_labels"] == "normalised"
    (out / "config.yaml").write_text(yaml.safe_dump(stored))
    with pytest.raises(InvalidArgumentError, match=r"with soft_labels 'normalised', now 'reference' \("):
        _open_run(config.model_copy(update={"soft_labels": "reference"}), out, tmp_path, resume=True)

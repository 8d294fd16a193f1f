"""Raw Zero-Shot metrics on soft-labels: hand-computed DBI, Davies-Bouldin and Amalgam values, the
softlabels.npz reader, the leave-class-out dataset and the metrics CLI."""

from __future__ import annotations

import io
import json
import math
import zipfile

import numpy as np
import pytest

from repscope.data.zeroshot.softlabels import read_soft_labels, write_soft_labels
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.metrics.zeroshot import (
    amalgam_histograms,
    amalgam_metric,
    davies_bouldin_soft_labels,
    rank_correlation,
    raw_zero_shot_dbi,
    zero_shot_scores,
)

# three classes; each model without class i saw m_i of class i's images
LOO = [
    np.array([[1.0, 0.0], [0.0, 1.0]]),  # centroid (.5, .5), each point sqrt(.5) away
    np.array([[0.5, 0.5]] * 3),  # no scatter
    np.array([[0.2, 0.8]]),  # one image
]
FULL = [
    np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]]),  # without entry 0: (.5, .5) and (1, 0) -> h' = (1.5, .5)
    np.array([[0.3, 0.4, 0.3]] * 3),  # without entry 1: (.5, .5) three times -> h' = (1.5, 1.5)
    np.array([[0.1, 0.1, 0.8]]),  # without entry 2: (.5, .5)
]


def test_dbi_is_the_mean_within_class_scatter():
    result = raw_zero_shot_dbi(LOO)
    scatter = [math.sqrt(0.5), 0.0, 0.0]
    assert result["per_class"] == pytest.approx(scatter)
    assert result["dbi"] == pytest.approx(math.sqrt(0.5) / 3)
    assert result["dbi_std"] == pytest.approx(float(np.std(scatter)))
    assert result["dbi_std"] == pytest.approx(1 / 3)  # sqrt(mean(x^2) - mean^2) = sqrt(1/6 - 1/18)


def test_dbi_is_zero_for_identical_soft_labels_and_grows_with_spread():
    tight = [np.tile([[0.7, 0.2, 0.1]], (5, 1)) for _ in range(4)]
    assert raw_zero_shot_dbi(tight)["dbi"] == 0.0
    rng = np.random.default_rng(0)
    spreads = []
    for mix in (0.1, 0.5, 0.9):
        noisy = [(1 - mix) * np.full((40, 3), 1 / 3) + mix * rng.dirichlet(np.ones(3), 40) for _ in range(4)]
        spreads.append(raw_zero_shot_dbi(noisy)["dbi"])
    assert spreads[0] < spreads[1] < spreads[2]


def test_davies_bouldin_by_hand_on_the_embedded_clusters():
    # clusters in R^3 with a 0 at the excluded class: c0 = (0, .5, .5), c1 = (.5, 0, .5), c2 = (.2, .8, 0)
    s0 = math.sqrt(0.5)  # mean distance of (0,1,0), (0,0,1) to c0
    d01, d02, d12 = math.sqrt(0.5), math.sqrt(0.38), math.sqrt(0.98)
    expected = (max(s0 / d01, s0 / d02) + max(s0 / d01, 0 / d12) + max(s0 / d02, 0 / d12)) / 3
    assert davies_bouldin_soft_labels(LOO)["davies_bouldin"] == pytest.approx(expected)


def test_amalgam_histograms_and_metric_by_hand():
    h_prime, h = amalgam_histograms(LOO, FULL)
    assert h_prime == pytest.approx(np.array([[1.5, 0.5], [1.5, 1.5], [0.5, 0.5]]))
    assert h == pytest.approx(np.array([[1.0, 1.0], [1.5, 1.5], [0.2, 0.8]]))
    result = amalgam_metric(LOO, FULL)
    # ||h' - h||_1 / (n - 1): (0.5 + 0.5) / 2, 0, (0.3 + 0.3) / 2
    assert result["per_class"] == pytest.approx([0.5, 0.0, 0.3])
    assert result["am"] == pytest.approx(0.8 / 3)
    assert result["am_std"] == pytest.approx(float(np.std([0.5, 0.0, 0.3])))
    # per image: divided by m_i = 2, 3, 1
    assert result["per_class_per_image"] == pytest.approx([0.25, 0.0, 0.3])
    assert result["am_per_image"] == pytest.approx(0.55 / 3)


def test_amalgam_sum_grows_with_images_and_per_image_does_not():
    rng = np.random.default_rng(1)
    loo = [rng.dirichlet(np.ones(4), 20) for _ in range(5)]
    full = [rng.dirichlet(np.ones(5), 20) for _ in range(5)]
    once, twice = (
        amalgam_metric(loo, full),
        amalgam_metric([np.vstack([a, a]) for a in loo], [np.vstack([a, a]) for a in full]),
    )
    assert twice["am"] == pytest.approx(2 * once["am"])
    assert twice["am_per_image"] == pytest.approx(once["am_per_image"])


def test_amalgam_is_zero_when_the_loo_model_reproduces_the_amalgam_proportion():
    rng = np.random.default_rng(2)
    full = [rng.dirichlet(np.ones(4), 10) for _ in range(4)]
    loo = []
    for i, reference in enumerate(full):
        rest = np.delete(reference, i, axis=1)
        loo.append(rest / rest.sum(axis=1, keepdims=True))
    assert amalgam_metric(loo, full)["am"] == pytest.approx(0.0, abs=1e-12)
    # a full model certain of the unknown class leaves a uniform proportion, not a division by zero
    certain = [np.eye(3)[[i, i]] for i in range(3)]
    h_prime, _ = amalgam_histograms([np.full((2, 2), 0.5)] * 3, certain)
    assert h_prime == pytest.approx(np.ones((3, 2)))


def test_zero_shot_scores_gather_every_metric():
    scores = zero_shot_scores(LOO, FULL)
    assert scores["dbi"] == pytest.approx(raw_zero_shot_dbi(LOO)["dbi"])
    assert scores["am"] == pytest.approx(amalgam_metric(LOO, FULL)["am"])
    assert scores["params"]["images"] == [2, 3, 1]


@pytest.mark.parametrize(
    "loo, full, message",
    [
        (LOO[:2], FULL[:2], "at least 3 classes"),
        (LOO, FULL[:2], "full_<i>"),
        ([LOO[0], np.ones((3, 3)) / 3, LOO[2]], FULL, r"loo_1 has shape \(3, 3\)"),
        ([LOO[0], LOO[1], np.array([[2.0, -1.0]])], FULL, "loo_2 holds negative"),
        ([LOO[0], np.array([[0.6, 0.6]] * 3), LOO[2]], FULL, "loo_1 row 0 sums to 1.2"),
        ([LOO[0], LOO[1], np.array([[0.2, 0.8]] * 2)], FULL, "full_2 has 1 rows but loo_2 has 2"),
        ([LOO[0], LOO[1], np.zeros((0, 2))], FULL, "loo_2 has no rows"),
    ],
)
def test_bad_soft_labels_are_clear_errors(loo, full, message):
    with pytest.raises(InvalidArgumentError, match=message):
        zero_shot_scores(loo, full)


def test_rank_correlation():
    assert rank_correlation([0.2, 0.5, 0.6, 0.7], [10, 20, 30, 40])["rho"] == pytest.approx(1.0)
    # exact with 4 models: 2 of the 24 orderings are as extreme as a perfect order
    assert rank_correlation([0.2, 0.5, 0.6, 0.7], [10, 20, 30, 40])["p_value"] == pytest.approx(2 / 24)
    assert rank_correlation([0.2, 0.5, 0.6], [30, 20, 10])["rho"] == pytest.approx(-1.0)
    assert math.isnan(rank_correlation([1, 1, 1], [1, 2, 3])["rho"])
    with pytest.raises(InvalidArgumentError, match="at least 3 models"):
        rank_correlation([1, 2], [2, 1])


# -- the file


def test_soft_label_file_round_trip(tmp_path):
    path = write_soft_labels(tmp_path / "s.npz", LOO, FULL, ["a", "b", "c"])
    data = read_soft_labels(path)
    assert data.class_names == ("a", "b", "c")
    for got, want in zip(data.loo + data.full, LOO + FULL):
        assert got == pytest.approx(want, abs=1e-7)
    with np.load(path) as archive:
        assert sorted(archive.files) == sorted(
            [f"{k}_{i}" for k in ("loo", "full") for i in range(3)] + ["class_names", "kind"]
        )


def _npz(path, arrays):
    np.savez(path, **arrays)
    return path


def test_soft_label_file_errors_name_the_key(tmp_path):
    arrays = {f"loo_{i}": a for i, a in enumerate(LOO)} | {f"full_{i}": a for i, a in enumerate(FULL)}
    missing = {k: v for k, v in arrays.items() if k != "full_1"}
    with pytest.raises(DataFormatError, match="missing key full_1"):
        read_soft_labels(_npz(tmp_path / "a.npz", missing))
    with pytest.raises(DataFormatError, match="unknown key 'logits'"):
        read_soft_labels(_npz(tmp_path / "b.npz", {**arrays, "logits": np.zeros(3)}))
    logits = {**arrays, "loo_0": np.array([[3.0, -1.0], [0.5, 2.0]])}
    with pytest.raises(DataFormatError, match=r"b?c?.npz: loo_0 holds negative"):
        read_soft_labels(_npz(tmp_path / "c.npz", logits))
    not_summing = {**arrays, "full_2": np.array([[0.1, 0.1, 0.1]])}
    with pytest.raises(DataFormatError, match="full_2 row 0 sums to 0.3"):
        read_soft_labels(_npz(tmp_path / "d.npz", not_summing))
    np.save(tmp_path / "e.npy", np.zeros(3))
    with pytest.raises(DataFormatError, match="not an .npz archive"):
        read_soft_labels(tmp_path / "e.npy")
    (tmp_path / "f.npz").write_bytes(b"not a zip")
    with pytest.raises(DataFormatError, match="f.npz: not an npz archive"):
        read_soft_labels(tmp_path / "f.npz")
    with pytest.raises(InvalidArgumentError, match="no such file"):
        read_soft_labels(tmp_path / "missing.npz")


def test_soft_label_file_refuses_pickled_arrays(tmp_path):
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(tmp_path / "p.npz", "w") as archive:
        for i in range(3):
            archive.writestr(f"full_{i}.npy", buffer.getvalue())
    with pytest.raises(DataFormatError):
        read_soft_labels(tmp_path / "p.npz")


def test_metrics_cli(tmp_path, run_cli):
    path = write_soft_labels(tmp_path / "softlabels.npz", LOO, FULL)
    code, out, _ = run_cli(["zeroshot", "metrics", str(path)])
    assert code == 0
    printed = json.loads(out)
    assert printed["dbi"] == pytest.approx(math.sqrt(0.5) / 3, abs=1e-6)
    assert printed["am"] == pytest.approx(0.8 / 3, abs=1e-6)
    code, out, _ = run_cli(["zeroshot", "metrics", str(path), "--out", str(tmp_path / "m.json")])
    assert code == 0 and "written" in out
    assert json.loads((tmp_path / "m.json").read_text())["am_per_image"] == pytest.approx(0.55 / 3, abs=1e-6)
    code, _, err = run_cli(["zeroshot", "metrics", str(path), "--out", str(tmp_path / "m.json")])
    assert code == 1 and "--overwrite" in err
    bad = _npz(tmp_path / "bad.npz", {"loo_0": LOO[0]})
    code, _, err = run_cli(["zeroshot", "metrics", str(bad)])
    assert code == 1 and err.count("\n") == 1 and "missing key full_0" in err


# -- the dataset


def test_leave_class_out_dataset_removes_and_remaps_one_class():
    from repscope.data.registry import load_dataset

    base = load_dataset("digits", source="mnist-sample", train_size=600, test_size=200)
    out = load_dataset(
        "leave-class-out",
        base="digits",
        base_params={"source": "mnist-sample", "train_size": 600, "test_size": 200},
        excluded=3,
    )
    assert out.num_classes == 9
    for split in ("train", "test"):
        original = base.arrays(split, ["image", "target"])
        kept = out.arrays(split, ["image", "target"])
        keep = original["target"] != 3
        assert len(kept["target"]) == keep.sum()
        assert (kept["image"] == original["image"][keep]).all()
        # 0, 1, 2 stay; 4..9 move down to 3..8
        assert (
            kept["target"]
            == np.where(original["target"][keep] > 3, original["target"][keep] - 1, original["target"][keep])
        ).all()
    assert out.extras["kept_classes"] == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    full = load_dataset(
        "leave-class-out",
        base="digits",
        base_params={"source": "mnist-sample", "train_size": 600, "test_size": 200},
        excluded=None,
    )
    assert full.num_classes == 10 and len(full.split("train")) == 600
    with pytest.raises(InvalidArgumentError, match="excluded: expected a class in 0..9"):
        load_dataset("leave-class-out", base="digits", base_params={"train_size": 100, "test_size": 50}, excluded=10)


def test_paper_findings_grade_each_finding_from_the_tables():
    import pandas as pd

    from repscope.studies.zeroshot.report import paper_findings
    from repscope.studies.zeroshot.study import correlation_table

    names = ["CapsNet", "AllConv", "ResNet", "NIN", "LeNet"]
    # DBI ranks the architectures exactly as their attack successes (rho = 1, exact p = 2 / 120), AM nearly
    # so (0.9: exact p = 10 / 120, not significant with 5 architectures), and LeNet is the most attacked
    # while NIN has a higher AM
    representation = pd.DataFrame(
        {
            "architecture": names,
            "accuracy": [0.8, 0.8, 0.9, 0.8, 0.8],
            "dbi": [0.2, 0.3, 0.4, 0.5, 0.6],
            "davies_bouldin": [1.0, 1.1, 1.2, 1.3, 1.4],
            "am": [10.0, 20.0, 30.0, 40.0, 35.0],
            "am_per_image": [0.01, 0.02, 0.03, 0.04, 0.035],
        }
    )
    attacks = pd.DataFrame({"architecture": names, "l0_total": [1, 2, 3, 4, 5], "linf_total": [1, 2, 3, 4, 5]})
    attacks["total"] = attacks["l0_total"] + attacks["linf_total"]
    findings = paper_findings(representation, attacks, correlation_table(representation, attacks, ["l0", "linf"]))
    held = dict(zip(findings["finding"].str.split(" ").str[0], findings["held"]))
    assert held == {"CapsNet": "yes", "DBI": "yes", "AM": "in sign only (not significant)", "LeNet": "yes"}
    assert "p = 0.02" in findings["here"][1] and "p = 0.08" in findings["here"][2]
    assert "rho +1.00" in findings["here"][1] and "5 architectures" in findings["here"][1]
    assert findings["here"][2].endswith("without LeNet +1.00")  # AM without LeNet ranks 1 2 3 4 as attacks

    # CapsNet no longer the tightest, and NIN the most attacked: DBI ranks 2 1 3 4 5 against attack
    # ranks 1 2 3 5 4, rho = 1 - 6 * 4 / (5 * 24) = 0.8, positive but p > 0.05 with 5 architectures
    attacks[["l0_total", "linf_total", "total"]] = [[1, 1, 2], [2, 2, 4], [3, 3, 6], [5, 5, 10], [4, 4, 8]]
    representation.loc[0, "dbi"] = 0.35
    findings = paper_findings(representation, attacks, correlation_table(representation, attacks, ["l0", "linf"]))
    held = dict(zip(findings["finding"].str.split(" ").str[0], findings["held"]))
    assert held["CapsNet"] == "no" and "lowest: AllConv" in findings["here"][0]
    assert held["DBI"] == "in sign only (not significant)"
    assert held["LeNet"] == "no"  # NIN is the most attacked now

    # a negative rank correlation is "no"
    attacks[["l0_total", "linf_total", "total"]] = [[5, 5, 10], [4, 4, 8], [3, 3, 6], [2, 2, 4], [1, 1, 2]]
    findings = paper_findings(representation, attacks, correlation_table(representation, attacks, ["l0", "linf"]))
    assert findings["held"][1] == "no" and findings["held"][2] == "no"


def test_fashion_mnist_classes_keep_their_names_without_the_excluded_one(fashion_mnist):
    from repscope.data.registry import load_dataset

    params = {"source": "fashion-mnist", "data_dir": str(fashion_mnist.directory), "train_size": 100, "test_size": 50}
    names = load_dataset("digits", **params).field("label").names
    assert names[0] == "T-shirt/top" and names[9] == "Ankle boot" and len(names) == 10
    out = load_dataset("leave-class-out", base="digits", base_params=params, excluded=3)
    assert out.field(out.target).names == names[:3] + names[4:]  # "Dress" left out, the order kept
    assert out.extras["base_names"] == list(names)
    assert load_dataset("digits", source="mnist-sample", train_size=100).field("label").names == ()


def test_the_study_result_is_computed_from_arrays_without_a_run_directory(tmp_path, monkeypatch):
    from repscope.data.zeroshot.softlabels import check_soft_labels
    from repscope.run_directory import RunDirectory
    from repscope.studies.zeroshot.results import compute_zeroshot, write_zeroshot

    rng = np.random.default_rng(3)
    labels = ["A", "B", "C"]
    soft_labels = {
        label: check_soft_labels(
            [rng.dirichlet(np.ones(2), 4) for _ in range(3)], [rng.dirichlet(np.ones(3), 4) for _ in range(3)]
        )
        for label in labels
    }
    successes = {
        (label, norm, threshold): k + threshold
        for k, label in enumerate(labels)
        for norm in ("l0", "linf")
        for threshold in (1, 3)
    }
    monkeypatch.chdir(tmp_path)
    result = compute_zeroshot(
        soft_labels,
        {"A": 0.9, "B": 0.8, "C": 0.7},
        {"A": 0.85, "B": 0.75, "C": 0.65},
        successes,
        norms=["l0", "linf"],
        thresholds=[1, 3],
        attack_images=4,
        attack_candidates=9,
    )
    assert list(tmp_path.iterdir()) == []  # computing writes nothing
    assert result.representation["architecture"].tolist() == labels and result.classes == 3
    for label, row in result.representation.set_index("architecture").iterrows():
        scores = zero_shot_scores(soft_labels[label].loo, soft_labels[label].full)
        assert result.scores[label] == scores
        assert row["dbi"] == scores["dbi"] and row["am"] == scores["am"] and row["soft_label_kind"] == "probabilities"
    # A: 1 + 3 successes per norm, B: 2 + 4, C: 3 + 5
    assert result.attacks["l0_th3"].tolist() == [3, 4, 5] and result.attacks["l0_total"].tolist() == [4, 6, 8]
    assert result.attacks["total"].tolist() == [8, 12, 16]
    assert len(result.correlations) == 5 * 3 and set(result.correlations["attack_successes"]) == {
        "l0_total",
        "linf_total",
        "total",
    }
    assert result.correlations.set_index(["metric", "attack_successes"]).loc[("accuracy", "total"), "rho"] == -1.0
    run = RunDirectory.create("zeroshot-study", out=tmp_path / "run")
    write_zeroshot(result, run)
    np.testing.assert_allclose(
        read_soft_labels(run.path("softlabels", "b.npz")).loo[2], soft_labels["B"].loo[2], rtol=1e-6
    )
    metrics = json.loads(run.path("metrics.json").read_text())
    assert (
        metrics["attack_images"] == 4 and metrics["attack_candidates"] == 9 and metrics["soft_labels"] == "normalised"
    )
    assert metrics["architectures"]["C"]["total"] == 16 and metrics["architectures"]["C"]["accuracy"] == 0.7
    assert sorted(path.name for path in run.path("tables").iterdir()) == [
        "attacks.csv",
        "correlations.csv",
        "representation.csv",
    ]
    with pytest.raises(InvalidArgumentError, match="accuracy, loo_accuracy: no value for the architecture 'C'"):
        compute_zeroshot(
            soft_labels,
            {"A": 1, "B": 1},
            {"A": 1, "B": 1},
            successes,
            norms=["l0"],
            thresholds=[1],
            attack_images=1,
            attack_candidates=1,
        )

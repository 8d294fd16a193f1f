"""Raw Zero-Shot next to the authors' code: the DQA attack search (one CMA-ES generation of 400
candidates, shashankkotyan/DualQualityAssessment, code/attacks/our_attacks.py), CapsNet's raw capsule
lengths (compat="reference", the Keras Length layer of RepresentationMetrics / DQA capsnet.py), exact
Spearman p-values and what the paper's own Tables 1-3 say.

The expected values are computed here from the reference code's rules: cma driven directly with DQA's
options, DQA's encodings written as its loops, permutations enumerated with itertools."""

from __future__ import annotations

import itertools
import json
import math

import cma
import numpy as np
import pandas as pd
import pytest
import torch

from repscope.errors import InvalidArgumentError
from repscope.metrics.zeroshot import rank_correlation
from repscope.studies.zeroshot.attack_study import dqa_attack
from repscope.studies.zeroshot.attacks import attack_seed

# ---------------------------------------------------------------------------------------------------
# the DQA search, by hand


def recording(predict):
    """``predict`` that keeps a copy of every batch it is given and its output."""
    calls: list[tuple[np.ndarray, np.ndarray]] = []

    def wrapped(batch: np.ndarray) -> np.ndarray:
        output = np.asarray(predict(batch))
        calls.append((batch.copy(), output.copy()))
        return output

    return wrapped, calls


def corner_predict(batch: np.ndarray) -> np.ndarray:
    """Class 1 when channel 0 of pixel (0, 0) is above 128, else class 0, with a weak pull of pixel (0, 1)
    so that no two candidates tie."""
    values = batch.astype(np.float64)
    logit = (values[:, 0, 0, 0] - 128.0) / 4.0 + 0.001 * values[:, -1, 0, 1]
    bright = 1.0 / (1.0 + np.exp(-logit))
    return np.stack([1.0 - bright, bright], axis=1).astype(np.float32)


def mean_predict(batch: np.ndarray) -> np.ndarray:
    """Class 1 when the mean value is above 200: out of reach of any small change from a dark image."""
    logit = (batch.reshape(len(batch), -1).astype(np.float64).mean(axis=1) - 200.0) / 10.0
    bright = 1.0 / (1.0 + np.exp(-logit))
    return np.stack([1.0 - bright, bright], axis=1).astype(np.float32)


def dqa_candidates(image_hwc: np.ndarray, norm: str, threshold: int, seed: int) -> np.ndarray:
    """The 400 candidates of DQA's one generation: its get_bounds (start point, bounds), sigma0 = std / 4
    and cma options, asked of cma directly."""
    height, width, channels = image_hwc.shape
    if norm == "L0":
        initial: list = []
        for count, (i, j) in enumerate(itertools.product(range(height), range(width))):
            initial += [i, j] + [image_hwc[i, j, k] for k in range(channels)]
            if count == threshold - 1:
                break
        bounds = [[0, 0, *[0] * channels] * threshold, [height, width, *[255] * channels] * threshold]
        std = 63
    else:
        initial, lower, upper = [], [], []
        for i, j, k in itertools.product(range(height), range(width), range(channels)):
            value = float(image_hwc[i, j, k])
            initial.append(value)
            lower.append(min(max(value - threshold, 0), 255))
            upper.append(min(max(value + threshold, 0), 255))
        bounds = [lower, upper]
        std = threshold
    options = cma.CMAOptions()
    for key, value in (("verbose", -9), ("verb_disp", 40000), ("verb_log", 40000), ("verb_time", False)):
        options.set(key, value)
    options.set("popsize", 400)
    options.set("maxiter", 100)
    options.set("bounds", bounds)
    options.set("seed", seed)
    state = np.random.get_state()
    try:
        return np.array(cma.CMAEvolutionStrategy(initial, std / 4, options).ask())
    finally:
        np.random.set_state(state)


def dqa_perturb(image_hwc: np.ndarray, candidate: np.ndarray, norm: str) -> np.ndarray:
    """DQA's perturb_image for one candidate, as its loops write it."""
    height, width, channels = image_hwc.shape
    image = image_hwc.copy()
    genes = candidate.astype(int)
    if norm == "L0":
        for pixel in np.split(genes, len(genes) // (2 + channels)):
            row, col, *rgb = pixel
            image[row % height, col % width] = rgb
    else:
        for count, (i, j, k) in enumerate(itertools.product(range(height), range(width), range(channels))):
            image[i, j, k] = genes[count]
    return image


@pytest.mark.parametrize(
    ("norm", "threshold", "shape"),
    [("L0", 1, (1, 4, 5)), ("L0", 3, (3, 4, 5)), ("Linf", 3, (3, 4, 5)), ("Linf", 10, (1, 6, 3))],
)
def test_dqa_search_scores_one_generation_of_400_candidates_as_dqa_builds_them(norm, threshold, shape):
    images = np.random.default_rng(1).integers(0, 256, size=(2, *shape), dtype=np.uint8)
    images[:, 0, 0, 0] = [100, 118]  # dark corners: the model says class 0
    predict, calls = recording(corner_predict)
    result = dqa_attack(norm, predict, images, np.array([0, 0]), threshold, seed=5)
    # one call per image, of exactly 400 candidates (one CMA-ES generation), nothing else
    assert [len(batch) for batch, _ in calls] == [400, 400]
    assert result.queries.tolist() == [400, 400] and result.iterations.tolist() == [1, 1] and result.budget == 1
    for index, (batch, output) in enumerate(calls):
        image_hwc = images[index].astype(np.float32).transpose(1, 2, 0)
        candidates = dqa_candidates(image_hwc, norm, threshold, attack_seed(5, norm, threshold, index))
        expected = np.stack([dqa_perturb(image_hwc, c, norm) for c in candidates]).transpose(0, 3, 1, 2)
        np.testing.assert_array_equal(batch, expected)
        # the bounds: integers in 0-255, at most `threshold` pixels changed (L0) or each value within +-threshold
        assert (batch == np.round(batch)).all() and batch.min() >= 0 and batch.max() <= 255
        changed = batch != images[index][None].astype(np.float32)
        if norm == "L0":
            assert changed.any(axis=1).sum(axis=(1, 2)).max() <= threshold
        else:
            assert np.abs(batch - images[index][None].astype(np.float32)).max() <= threshold
        # DQA's answer: xbest, the lowest soft-label of the true class; success when its class is not it
        best = int(np.argmin(output[:, 0]))
        assert result.predicted[index] == int(np.argmax(output[best]))
        assert result.success[index] == (int(np.argmax(output[best])) != 0)
        if result.success[index]:
            np.testing.assert_array_equal(result.adversarial[index], batch[best].astype(np.uint8))
        else:
            np.testing.assert_array_equal(result.adversarial[index], images[index])


def test_dqa_search_fools_the_corner_model_and_not_the_mean_model():
    dark = np.full((2, 1, 5, 4), 40, dtype=np.uint8)
    dark[:, 0, 0, 0] = [110, 120]  # 18 and 8 levels below the decision at 128; sigma0 = 63 / 4
    corner = dqa_attack("L0", corner_predict, dark, np.array([0, 0]), 1, seed=0)
    assert corner.success.tolist() == [True, True] and corner.predicted.tolist() == [1, 1]
    assert (corner.adversarial[:, 0, 0, 0] > 128).all()  # the one pixel DQA starts from, at (0, 0)
    # the mean of a dark image cannot reach 200 with 10 levels a value: every attack fails, image unchanged
    far = dqa_attack("Linf", mean_predict, dark, np.array([0, 0]), 10, seed=0)
    assert far.success.tolist() == [False, False] and far.predicted.tolist() == [0, 0]
    np.testing.assert_array_equal(far.adversarial, dark)
    # same seed, same answer; and numpy's global random state is left alone
    state = np.random.get_state()
    again = dqa_attack("L0", corner_predict, dark, np.array([0, 0]), 1, seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(state, np.random.get_state(), strict=True))
    np.testing.assert_array_equal(again.adversarial, corner.adversarial)


def test_dqa_search_refuses_bad_arguments():
    images = np.zeros((1, 1, 4, 4), dtype=np.uint8)
    with pytest.raises(InvalidArgumentError, match="norm"):
        dqa_attack("L2", corner_predict, images, np.array([0]), 1)
    with pytest.raises(InvalidArgumentError, match="threshold"):
        dqa_attack("L0", corner_predict, images, np.array([0]), 17)  # more pixels than the image has
    with pytest.raises(InvalidArgumentError, match="labels"):
        dqa_attack("L0", corner_predict, images, np.array([0, 1]), 1)


def test_the_attack_tables_say_which_search_made_them():
    from repscope.studies.zeroshot.attack_study import check_search, run_attacks
    from repscope.train.tasks import SupervisedTask

    torch.manual_seed(0)
    task = SupervisedTask("mlp", num_outputs=3)
    images = np.random.default_rng(0).integers(0, 256, (2, 1, 28, 28), dtype=np.uint8)
    labels = task.predict(images[:, 0])
    table = run_attacks(task, images, labels, "l0", 2, budget=5, seed=0, rows=np.array([7, 9]), search="dqa")
    assert table["search"].tolist() == ["dqa", "dqa"] and table["queries"].tolist() == [400, 400]
    assert table["image"].tolist() == [7, 9] and (table["iterations"] == 1).all()
    art = run_attacks(task, images, labels, "l0", 2, budget=2, seed=0)
    assert art["search"].tolist() == ["art", "art"] and (art["iterations"] <= 2).all()
    with pytest.raises(InvalidArgumentError, match="--search"):
        check_search("cmaes")


def test_the_attack_command_computes_from_a_task_then_writes(tmp_path, monkeypatch):
    from repscope.studies.zeroshot.attack_study import compute_classifier_attacks, run_attacks, write_classifier_attacks
    from repscope.train.tasks import SupervisedTask

    torch.manual_seed(0)
    task = SupervisedTask("mlp", num_outputs=3)
    images = np.random.default_rng(1).integers(0, 256, (2, 1, 28, 28), dtype=np.uint8)
    labels = task.predict(images[:, 0])
    monkeypatch.chdir(tmp_path)
    result = compute_classifier_attacks(task, images, labels, ["l0", "linf"], [1, 2], 2, 0, rows=np.array([4, 8]))
    assert list(tmp_path.iterdir()) == []  # computing writes nothing
    assert list(zip(result.counts["norm"], result.counts["threshold"])) == [
        ("l0", 1),
        ("l0", 2),
        ("linf", 1),
        ("linf", 2),
    ]
    assert (result.counts["images"] == 2).all() and len(result.per_image) == 8
    one = run_attacks(task, images, labels, "linf", 2, budget=2, seed=0, rows=np.array([4, 8]))
    pd.testing.assert_frame_equal(result.per_image.iloc[6:].reset_index(drop=True), one)
    write_classifier_attacks(result, tmp_path, {"model": "m", "data": "d", "data_params": {}})
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert list(metrics)[:5] == ["model", "data", "data_params", "images", "search"] and metrics["budget"] == 2
    assert metrics["totals"] == result.totals and metrics["totals"]["total"] == int(result.counts["successes"].sum())
    assert pd.read_csv(tmp_path / "counts.csv")["successes"].tolist() == result.counts["successes"].tolist()


def test_attack_command_refuses_an_unknown_search(tmp_path, run_cli):
    code, _, err = run_cli(
        ["zeroshot", "attack", "--model", str(tmp_path), "--search", "ga", "--out", str(tmp_path / "a")]
    )
    assert code == 1 and "--search" in err and err.count("\n") == 1 and not (tmp_path / "a").exists()


def test_the_study_config_takes_the_dqa_search():
    from repscope.studies.zeroshot.study import ZeroShotConfig

    assert ZeroShotConfig().attack.search == "art"
    assert ZeroShotConfig(attack={"search": "dqa"}).attack.search == "dqa"
    with pytest.raises(ValueError, match="search"):
        ZeroShotConfig(attack={"search": "de"})


# ---------------------------------------------------------------------------------------------------
# CapsNet outputs


def test_capsnet_reference_soft_labels_are_the_raw_keras_lengths():
    from repscope.train.tasks import CapsNetTask

    torch.manual_seed(0)
    task = CapsNetTask(num_outputs=4, network_params={"conv_channels": 8, "primary_types": 2, "class_dim": 4})
    images = np.random.default_rng(3).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    with torch.no_grad():
        capsules = task.eval().network.capsules(torch.from_numpy(images[:, None].astype(np.float32) / 255.0))
    # the authors' Length layer: sqrt(sum(v ** 2) + K.epsilon()), K.epsilon() = 1e-7, not normalised
    keras = np.sqrt((capsules.double().numpy() ** 2).sum(-1) + 1e-7)
    raw = task.soft_labels(images, compat="reference")
    np.testing.assert_allclose(raw, keras, rtol=1e-6)
    assert raw.shape == (5, 4) and not np.allclose(raw.sum(1), 1.0)
    # the paper's mode: our lengths (1e-8 inside the root), normalised; the epsilons differ visibly here
    ours = np.sqrt((capsules.double().numpy() ** 2).sum(-1) + 1e-8)
    paper = task.soft_labels(images)
    np.testing.assert_allclose(paper, ours / ours.sum(1, keepdims=True), rtol=1e-6)
    assert not np.allclose(paper, keras / keras.sum(1, keepdims=True), rtol=1e-5)
    with pytest.raises(InvalidArgumentError, match="compat"):
        task.soft_labels(images, compat="keras")


def test_the_dqa_search_reads_capsnet_raw_lengths():
    from repscope.studies.zeroshot.attack_study import predictor
    from repscope.train.tasks import CapsNetTask

    torch.manual_seed(1)
    task = CapsNetTask(num_outputs=3, network_params={"conv_channels": 8, "primary_types": 2, "class_dim": 4})
    images = np.random.default_rng(4).integers(0, 256, (2, 1, 28, 28)).astype(np.float32)
    raw = predictor(task, "reference")(images)
    np.testing.assert_allclose(raw, task.soft_labels(images[:, 0] / 255.0, compat="reference"), rtol=1e-12)
    assert not np.allclose(raw.sum(1), 1.0)  # raw lengths, as DQA's fitness reads them
    paper = predictor(task)(images)
    np.testing.assert_allclose(paper, task.soft_labels(images[:, 0] / 255.0), rtol=1e-12)
    np.testing.assert_allclose(paper.sum(1), 1.0, rtol=1e-12)
    with pytest.raises(InvalidArgumentError, match="compat"):
        predictor(task, "keras")


# ---------------------------------------------------------------------------------------------------
# exact Spearman p-values and the paper's own tables


def spearman_by_hand(x, y) -> float:
    """Spearman's rho of distinct values: 1 - 6 sum d^2 / (n (n^2 - 1))."""
    rank_x = {v: r for r, v in enumerate(sorted(x))}
    rank_y = {v: r for r, v in enumerate(sorted(y))}
    n = len(x)
    d2 = sum((rank_x[a] - rank_y[b]) ** 2 for a, b in zip(x, y))
    return 1 - 6 * d2 / (n * (n * n - 1))


def exact_p_by_hand(x, y) -> float:
    observed = abs(spearman_by_hand(x, y))
    pairings = list(itertools.permutations(y))
    extreme = sum(abs(spearman_by_hand(x, list(p))) >= observed - 1e-12 for p in pairings)
    return extreme / len(pairings)


def test_exact_p_value_at_five_models():
    x, y = [1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0, 5.0, 4.0]  # one swap: sum d^2 = 2, rho = 0.9
    assert spearman_by_hand(x, y) == pytest.approx(0.9)
    hand = exact_p_by_hand(x, y)
    assert hand == pytest.approx(10 / 120)  # 120 orderings, 5 with rho >= 0.9 and 5 with rho <= -0.9
    result = rank_correlation(x, y)
    assert result["rho"] == pytest.approx(0.9) and result["p_value"] == pytest.approx(hand, abs=1e-15)
    assert result["p_method"] == "exact permutation" and round(result["p_value"], 3) == 0.083
    # a perfect order: only 2 of 120 orderings are as extreme
    assert rank_correlation([3, 1, 2, 5, 4], [30, 10, 20, 50, 40])["p_value"] == pytest.approx(2 / 120)


def test_exact_p_value_with_ties_counts_every_pairing():
    x, y = [1.0, 1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 2.0, 3.0, 5.0]

    def rho(a, b):  # Pearson's r of average ranks, by hand
        def ranks(v):
            return [sum(w < u for w in v) + (sum(w == u for w in v) + 1) / 2 for u in v]

        ra, rb = ranks(a), ranks(b)
        ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
        cov = sum((p - ma) * (q - mb) for p, q in zip(ra, rb))
        return cov / math.sqrt(sum((p - ma) ** 2 for p in ra) * sum((q - mb) ** 2 for q in rb))

    observed = abs(rho(x, y))
    pairings = list(itertools.permutations(y))
    hand = sum(abs(rho(x, list(p))) >= observed - 1e-12 for p in pairings) / len(pairings)
    result = rank_correlation(x, y)
    assert result["rho"] == pytest.approx(rho(x, y)) and result["p_value"] == pytest.approx(hand)


def test_large_n_keeps_the_t_approximation():
    from scipy.stats import spearmanr

    x = list(range(12))
    y = [0, 2, 1, 3, 5, 4, 6, 8, 7, 11, 9, 10]
    result = rank_correlation(x, y)
    assert result["p_method"] == "t approximation"
    assert result["p_value"] == pytest.approx(float(spearmanr(x, y).pvalue))


def test_the_papers_own_tables_give_rho_0_for_dbi_and_0_5_for_am():
    from repscope.studies.zeroshot.report import paper_findings, paper_rank_correlations
    from repscope.studies.zeroshot.study import correlation_table

    # Tables 1-3: total successes, DBI, AM (CapsNet, AllConv, ResNet, NIN, LeNet)
    total = [383, 403, 485, 528, 677]
    dbi = [0.2301, 0.6432, 0.6307, 0.6258, 0.5161]
    am = [124.4882, 101.1299, 281.2960, 203.1542, 144.1068]
    assert spearman_by_hand(dbi, total) == pytest.approx(0.0)  # d = 0, 3, 1, -1, -3: sum d^2 = 20
    assert spearman_by_hand(am, total) == pytest.approx(0.5)  # d = 1, -1, 2, 0, -2: sum d^2 = 10
    printed = paper_rank_correlations()
    assert printed["dbi"]["rho"] == pytest.approx(0.0) and printed["am"]["rho"] == pytest.approx(0.5)
    assert printed["dbi"]["p_value"] == pytest.approx(exact_p_by_hand(dbi, total))
    assert printed["am"]["p_value"] == pytest.approx(exact_p_by_hand(am, total))
    assert printed["dbi"]["rho_without_lenet"] == pytest.approx(spearman_by_hand(dbi[:4], total[:4]))
    assert printed["am"]["rho_without_lenet"] == pytest.approx(spearman_by_hand(am[:4], total[:4]))

    names = ["CapsNet", "AllConv", "ResNet", "NIN", "LeNet"]
    representation = pd.DataFrame(
        {
            "architecture": names,
            "accuracy": [0.9] * 5,
            "dbi": dbi,
            "davies_bouldin": [1.0, 1.2, 1.1, 1.3, 1.4],
            "am": am,
            "am_per_image": [v / 1000 for v in am],
        }
    )
    attacks = pd.DataFrame({"architecture": names, "l0_total": [164, 176, 222, 251, 337], "linf_total": total})
    attacks["linf_total"] = attacks["linf_total"] - attacks["l0_total"]
    attacks["total"] = total
    findings = paper_findings(representation, attacks, correlation_table(representation, attacks, ["l0", "linf"]))
    dbi_row, am_row = findings.iloc[1], findings.iloc[2]
    assert "except" not in dbi_row["paper"] and "but for LeNet" not in am_row["paper"]
    assert "rho +0.00" in dbi_row["paper"] and "rho +0.50" in am_row["paper"]
    assert dbi_row["held"] == "no" and am_row["held"] == "in sign only (not significant)"
    assert "rho +0.50 (p = 0.45" in am_row["here"]
    assert json.loads(json.dumps(printed))  # plain floats, ready for metrics.json

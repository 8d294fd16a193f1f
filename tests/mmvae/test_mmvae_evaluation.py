"""``repscope mmvae evaluate``: the dataset-independent analysis (log-likelihoods, linear factorisation, t-SNE,
traversals) on arrays and stub tasks, and the whole evaluation of a tiny trained model."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from repscope.data.multimodal.captions import encode_captions
from repscope.errors import InvalidArgumentError, OutputExistsError
from repscope.models.multimodal.likelihoods import log_prior
from repscope.studies.multimodal.analysis import (
    latent_traversals,
    linear_factorisation,
    log_likelihoods,
    summarise_log_likelihoods,
    traversal_latents,
    tsne_embedding,
)

# --------------------------------------------------------------------------------------------
# linear factorisation


def test_a_code_that_is_a_linear_function_of_the_attributes_is_read_perfectly():
    rng = np.random.default_rng(0)
    attributes = np.stack([rng.integers(0, 3, 600), rng.integers(0, 5, 600)], axis=1)
    one_hot = np.concatenate([np.eye(3)[attributes[:, 0]], np.eye(5)[attributes[:, 1]]], axis=1)
    mixing = rng.normal(size=(8, 10))  # a full-rank linear map to 10 latent dimensions
    latents = one_hot @ mixing + 0.01 * rng.normal(size=(600, 10))
    result = linear_factorisation(latents, attributes, ["shape", "colour"], seed=3)
    assert result["accuracy"] == {"shape": 1.0, "colour": 1.0}
    assert result["classes"] == {"shape": 3, "colour": 5}
    assert result["n_test"] == 150 and result["n_train"] == 450 and result["seed"] == 3
    # chance: the commonest class of the fitted part, scored on the held-out part (about 1/3 and 1/5 here)
    assert 0.2 < result["chance"]["shape"] < 0.5 and 0.1 < result["chance"]["colour"] < 0.35
    # standardised latents: an affine change of each dimension changes nothing
    moved = linear_factorisation(latents * np.arange(1, 11) - 7.0, attributes, ["shape", "colour"], seed=3)
    assert moved["accuracy"] == result["accuracy"] and moved["chance"] == result["chance"]


def test_a_code_unrelated_to_the_attributes_is_read_at_chance():
    rng = np.random.default_rng(1)
    attributes = rng.integers(0, 3, 2000)
    result = linear_factorisation(rng.normal(size=(2000, 8)), attributes, ["shape"], seed=0)
    assert abs(result["accuracy"]["shape"] - result["chance"]["shape"]) < 0.06
    assert abs(result["chance"]["shape"] - 1 / 3) < 0.06


def test_one_class_is_answered_without_a_classifier_and_bad_input_is_named():
    latents = np.random.default_rng(0).normal(size=(20, 2))
    result = linear_factorisation(latents, np.zeros(20, dtype=int))
    assert result["accuracy"] == {"attribute_0": 1.0} and result["chance"] == {"attribute_0": 1.0}
    broken = latents.copy()
    broken[3, 1] = np.nan
    with pytest.raises(InvalidArgumentError, match="latents"):
        linear_factorisation(broken, np.zeros(20, dtype=int))
    with pytest.raises(InvalidArgumentError, match="attributes"):
        linear_factorisation(latents, np.zeros(19, dtype=int))
    with pytest.raises(InvalidArgumentError, match="names"):
        linear_factorisation(latents, np.zeros((20, 2), dtype=int), ["shape"])
    with pytest.raises(InvalidArgumentError, match="attributes"):
        linear_factorisation(latents, np.zeros(20))  # float classes


def test_tsne_keeps_separated_clusters_apart_and_is_seeded():
    rng = np.random.default_rng(2)
    centres = 20.0 * np.eye(3, 8)
    labels = np.repeat(np.arange(3), 15)
    latents = centres[labels] + rng.normal(size=(45, 8))
    embedding = tsne_embedding(latents, seed=0)
    assert embedding.shape == (45, 2)
    distances = np.linalg.norm(embedding[:, None] - embedding[None], axis=-1)
    np.fill_diagonal(distances, np.inf)
    assert np.all(labels[distances.argmin(axis=1)] == labels)  # every nearest neighbour is of its own cluster
    assert np.array_equal(embedding, tsne_embedding(latents, seed=0))
    assert tsne_embedding(latents[:6], seed=0).shape == (6, 2)  # perplexity lowered for few points


# --------------------------------------------------------------------------------------------
# traversals


class RecordingDecoder:
    """Decodes z into an image whose grey level is sigmoid(z0) and the caption "square" when z1 > 0, else
    "heart"; records what it was given."""

    def __init__(self) -> None:
        self.given: list[np.ndarray] = []
        self.square, _ = encode_captions(["square"])
        self.heart, _ = encode_captions(["heart"])

    def decode(self, z):
        z = np.asarray(z)
        self.given.append(z.copy())
        grey = 1.0 / (1.0 + np.exp(-z[:, 0]))
        images = np.broadcast_to(grey[:, None, None, None], (len(z), 3, 4, 4)).astype(np.float32)
        text = np.where(z[:, 1, None, None] > 0, self.square, self.heart).astype(np.float32)
        text[np.all(text == 0, axis=-1)] = np.eye(text.shape[-1])[0]  # padding decoded as spaces
        return {"image": images, "text": text}


def test_a_traversal_changes_only_its_dimension_and_decodes_one_row_per_dimension():
    from repscope.report.multimodal_report import traversal_figure

    base = np.array([0.5, -0.25, 1.0, 2.0])
    values = [-3.0, -1.5, 0.0, 1.5, 3.0]
    decoder = RecordingDecoder()
    traversal = latent_traversals(decoder, base, values)
    (given,) = decoder.given
    assert given.shape == (4 * 5, 4)
    grid = given.reshape(4, 5, 4)
    for row in range(4):
        others = np.delete(grid[row], row, axis=1)
        assert np.allclose(others, np.delete(base, row)[None])  # the other dimensions stay at the base
        assert np.allclose(grid[row, :, row], values)  # the traversed one takes every value
    assert traversal["images"].shape == (4, 5, 4, 4, 3) and traversal["images"].dtype == np.uint8
    # only row 0 changes the image (grey = sigmoid(z0)), rising along the row
    grey = traversal["images"][..., 0, 0, 0].astype(int)
    assert np.all(np.diff(grey[0]) > 0) and np.all(grey[1:] == grey[1:, :1])
    # only row 1 changes the caption: heart below 0, square above; the others keep the base's (z1 < 0)
    assert traversal["captions"][1] == ["heart", "heart", "heart", "square", "square"]
    assert all(row == ["heart"] * 5 for r, row in enumerate(traversal["captions"]) if r != 1)
    fig = traversal_figure(traversal["images"], values, traversal["dims"])
    assert len(fig.axes) == 4 * 5
    assert [fig.axes[5 * r].get_ylabel() for r in range(4)] == ["z0", "z1", "z2", "z3"]
    assert fig._suptitle.get_text().startswith("Latent traversals")
    titled = traversal_figure(traversal["images"], values, traversal["dims"], model="mopoe (level 2)")
    assert titled._suptitle.get_text().startswith("mopoe (level 2): latent traversals")


def test_joint_traversal_latents_walk_each_dimension_in_turn_from_zero():
    from repscope.studies.multimodal.analysis import joint_traversal_latents

    z = joint_traversal_latents(3, 5, (-2.0, 2.0))
    assert z.shape == (15, 3) and z.dtype == np.float32
    # rows 0-4 move dimension 0 through -2, -1, 0, 1, 2; rows 5-9 dimension 1; rows 10-14 dimension 2
    assert np.array_equal(z[5:10], [[0, -2, 0], [0, -1, 0], [0, 0, 0], [0, 1, 0], [0, 2, 0]])
    assert np.array_equal(z[:5, 0], [-2, -1, 0, 1, 2]) and not z[:5, 1:].any() and not z[10:, :2].any()
    assert np.array_equal(joint_traversal_latents(2, 3)[:3, 0], [-1.0, 0.0, 1.0])  # the toolkit's range
    for bad, named in (((0, 5), "latent_dim"), ((3, 0), "steps"), ((3, 5, (1.0, -1.0)), "value_range")):
        with pytest.raises(InvalidArgumentError, match=named):
            joint_traversal_latents(*bad)


def test_traversal_latents_of_chosen_dimensions_and_bad_input():
    grid = traversal_latents(np.zeros(3), [-1.0, 1.0], dims=[2])
    assert grid.shape == (1, 2, 3) and np.array_equal(grid[0, :, 2], [-1.0, 1.0]) and not grid[0, :, :2].any()
    with pytest.raises(InvalidArgumentError, match="dims"):
        traversal_latents(np.zeros(3), dims=[3])
    with pytest.raises(InvalidArgumentError, match="base"):
        traversal_latents(np.array([0.0, np.inf]))


# --------------------------------------------------------------------------------------------
# log-likelihoods


class RecordingLikelihood:
    """Returns -(10 * number of scored modalities) - row index; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[str, ...], tuple[str, ...], int, int]] = []

    def log_likelihood(self, given, scored=None, k=100, seed=0, batch_size=64):
        self.calls.append((tuple(given), tuple(scored), k, seed))
        rows = len(next(iter(given.values())))
        return -10.0 * len(scored) - np.arange(rows)


def test_log_likelihoods_estimate_the_joint_and_each_modality_from_itself():
    task = RecordingLikelihood()
    given = {"image": np.zeros((4, 3, 2, 2), np.uint8), "text": np.zeros((4, 5, 27), np.float32)}
    names = []
    values = log_likelihoods(task, given, k=7, seed=3, step=names.append)
    assert task.calls == [
        (("image", "text"), ("image", "text"), 7, 3),
        (("image",), ("image",), 7, 3),
        (("text",), ("text",), 7, 3),
    ]
    assert names == ["joint", "image", "text"]
    assert np.array_equal(values["joint"], [-20, -21, -22, -23]) and np.array_equal(
        values["text"], [-10, -11, -12, -13]
    )
    table = summarise_log_likelihoods(values, k=7)
    assert list(table["estimate"]) == ["joint", "image", "text"]
    joint = table.iloc[0]
    # values -20..-23: mean -21.5, sample std sqrt(5/3), standard error std / 2
    assert joint["mean_nats"] == pytest.approx(-21.5)
    assert joint["std_nats"] == pytest.approx(np.sqrt(5 / 3))
    assert joint["sem_nats"] == pytest.approx(np.sqrt(5 / 3) / 2)
    assert joint["n"] == 4 and joint["k"] == 7
    with pytest.raises(InvalidArgumentError, match="k"):
        log_likelihoods(task, given, k=0)
    with pytest.raises(InvalidArgumentError, match="image"):
        summarise_log_likelihoods({"image": [1.0, np.nan]})


def test_the_loss_terms_figure_needs_the_per_modality_columns():
    from repscope.report.multimodal_report import loss_term_columns, loss_terms_figure

    curves = pd.DataFrame(
        {
            "epoch": [0, 1, 2],
            "val_loss": [3.0, 2.0, 1.0],
            "val_recon_image": [9000.0, 8000.0, 7000.0],
            "val_recon_text": [30.0, 20.0, 10.0],
            "val_kl_image": [1.0, 2.0, 3.0],
            "val_kl_text": [0.5, 1.0, 1.5],
        }
    )
    assert loss_term_columns(curves) == {
        "reconstruction": {"image": "val_recon_image", "text": "val_recon_text"},
        "kl": {"image": "val_kl_image", "text": "val_kl_text"},
    }
    fig = loss_terms_figure(curves)
    assert [len(ax.get_lines()) for ax in fig.axes] == [2, 2]
    assert fig.axes[0].get_yscale() == "log"  # thousands of nats beside tens
    assert loss_terms_figure(curves[["epoch", "val_loss"]]) is None


# --------------------------------------------------------------------------------------------
# the whole evaluation of a tiny trained model


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A MoPoE trained one epoch on 128 level-1 samples; torch on one thread while the module's tests use it
    (two threads stall at every barrier when other processes keep the cores busy, see repscope.resources)."""
    import torch

    from repscope.train.config import Named, TrainConfig, TrainerSection
    from repscope.train.fitting import fit

    root = tmp_path_factory.mktemp("mmvae-evaluate")
    networks = {
        "image": {"field": "image", "network": "fc-image", "params": {"hidden": 32}, "likelihood": "gaussian"},
        "text": {
            "field": "text",
            "network": "text-transformer",
            "params": {"width": 16, "layers": 1, "hidden": 32},
            "likelihood": "categorical",
            "mask": "mask",
            "pad_class": 0,
        },
    }
    config = TrainConfig(
        model=Named(name="mopoe", params={"latent_dim": 4, "modalities": networks}),
        data=Named(name="cdsprites", params={"level": 1, "train_size": 128, "val_size": 32, "test_size": 32}),
        trainer=TrainerSection(max_epochs=1),
        batch_size=64,
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("REPSCOPE_PROGRESS", "off")
            outcome = fit(config, out=root / "run", report=False)
        yield root, outcome
    finally:
        torch.set_num_threads(threads)


class ShapeZeroClassifiers:
    """Stands in for the level-1 attribute CNNs (tested elsewhere): every image reads as shape 0 (square)."""

    accuracies = {"shape": 1.0}

    def predict_with_confidence(self, images):
        return np.zeros((len(images), 1), np.int64), np.ones((len(images), 1))

    def judge(self, images):
        from repscope.studies.multimodal.judges import Judgement  # noqa: PLC0415

        table, confidence = self.predict_with_confidence(images)
        return Judgement(table, confidence, np.ones(len(images), bool), np.zeros(len(images)))

    def familiarity(self, confidence):
        return {"mean_confidence": {"shape": 1.0}, "warning": None}


@pytest.fixture
def evaluation_env(monkeypatch):
    """Progress off and the stand-in classifiers; gives the trainers they were asked to train on."""
    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    trainers = []

    def load_judges(level, trainer=None):
        trainers.append(trainer)
        return ShapeZeroClassifiers()

    monkeypatch.setattr("repscope.studies.multimodal.coherency.load_judges", load_judges)
    return trainers


def test_evaluate_writes_every_part_and_its_numbers_agree_with_the_task(trained_run, evaluation_env):
    from repscope.studies.multimodal.evaluate import evaluate_run, evaluation_test_set

    root, outcome = trained_run
    run = root / "run"
    metrics = evaluate_run(run, n=24, seed=1, k=4, n_analysis=24)
    folder = run / "evaluation"
    assert json.loads((folder / "metrics.json").read_text()) == metrics
    for name in ("report.html", "coherency.json", "config.yaml", "outputs/joint/images.npy"):
        assert (folder / name).is_file(), name
    for name in ("text_to_image", "image_to_text", "joint_samples", "tsne", "traversals", "loss_terms"):
        assert (folder / "figures" / f"{name}.png").is_file(), name
    expected = {"model": "mopoe", "level": 1, "latent_dim": 4, "dims": 4, "n": 24, "k": 4, "n_analysis": 24}
    assert {key: metrics[key] for key in expected} == expected
    for key in ("text_to_image_strict", "image_to_text_letters", "joint_features", "linear_shape_chance"):
        assert np.isfinite(metrics[key]), key
    assert 0.0 <= metrics["linear_shape"] <= 1.0 and 0.0 <= metrics["linear_shape_text"] <= 1.0
    test = evaluation_test_set(1, 24, seed=1)
    # every generated image reads as a square: text -> image is right exactly on the square captions
    assert metrics["text_to_image_strict"] == pytest.approx(100 * np.mean(test["attributes"][:, 0] == 0))
    # the toolkit's rules on the same outputs: its text -> image is ours on well-formed true captions
    assert metrics["text_to_image_strict_toolkit"] == pytest.approx(metrics["text_to_image_strict"])
    outputs = folder / "outputs"
    raw = (outputs / "image_to_text" / "captions_raw.txt").read_text().split("\n")[:-1]
    trimmed = (outputs / "image_to_text" / "captions.txt").read_text().split("\n")[:-1]
    assert len(raw) == len(trimmed) == 24 and all(len(caption) == 45 for caption in raw)  # the whole decoder output
    truth = (outputs / "image_to_text" / "truth.txt").read_text().split("\n")[:-1]
    # the toolkit: Strict when the raw caption starts with the truth
    assert metrics["image_to_text_strict_toolkit"] == pytest.approx(
        100 * np.mean([c[: len(t)] == t for c, t in zip(raw, truth)])
    )
    assert metrics["image_to_text_strict"] == pytest.approx(100 * np.mean([c == t for c, t in zip(trimmed, truth)]))
    # joint by traversals: 24 values (min(n, 1000)) of each of the 4 dimensions, scored both ways; against
    # images read as squares the toolkit's pair is right when token 0 of the raw caption names a square first
    assert (metrics["joint_traversal_steps"], metrics["joint_traversal_range"]) == (24, [-1.0, 1.0])
    traversal_raw = (outputs / "joint_traversal" / "captions_raw.txt").read_text().split("\n")[:-1]
    assert len(traversal_raw) == 4 * 24 and np.load(outputs / "joint_traversal" / "images.npy").shape == (96, 64, 64, 3)

    def reads_square(caption):
        token = caption.split(" ")[0].lower()
        return next((w for w in ("heart", "ellipse", "square") if w in token), None) == "square"

    expected = 100 * np.mean([reads_square(c) for c in traversal_raw])
    assert metrics["joint_traversal_strict_toolkit"] == pytest.approx(expected)
    assert metrics["joint_traversal_features_toolkit"] == pytest.approx(expected / 100)
    traversal = (outputs / "joint_traversal" / "captions.txt").read_text().split("\n")[:-1]
    assert metrics["joint_traversal_strict"] == pytest.approx(100 * np.mean([c == "square" for c in traversal]))
    for key in ("image_to_text_letters_toolkit", "joint_strict_toolkit", "joint_features_toolkit"):
        assert np.isfinite(metrics[key]), key
    table = pd.read_csv(folder / "tables" / "coherency.csv")
    assert set(zip(table["direction"], table["rules"])) == {
        (d, r) for d in ("text to image", "image to text", "joint", "joint traversal") for r in ("ours", "toolkit")
    }
    # the headline log-likelihoods are the task's own estimates on the first n_analysis test samples
    task = outcome.task
    joint = task.log_likelihood({"image": test["image"], "text": test["text"]}, k=4, seed=1)
    text = task.log_likelihood({"text": test["text"]}, k=4, seed=1)
    assert metrics["log_likelihood_joint"] == pytest.approx(joint.mean())
    assert metrics["log_likelihood_text"] == pytest.approx(text.mean())
    # an importance-sampled estimate tightens with K: on average it is above the one-sample ELBO
    elbo = task.log_likelihood({"text": test["text"]}, k=1, seed=1)
    many = task.log_likelihood({"text": test["text"]}, k=32, seed=1)
    assert many.mean() > elbo.mean()
    table = pd.read_csv(folder / "tables" / "linear_factorisation.csv")
    assert list(table["posterior"]) == ["joint", "image", "text"] and set(table["attribute"]) == {"shape"}
    captions = pd.read_csv(folder / "tables" / "traversal_captions.csv", index_col=0, keep_default_na=False)
    assert list(captions.index) == ["z0", "z1", "z2", "z3"] and captions.shape[1] == 7
    page = (folder / "report.html").read_text()
    for heading in ("Test log-likelihood", "Latent factorisation", "t-SNE", "Latent traversals", "KL divergence"):
        assert heading in page, heading

    # the output rule: refused without --overwrite, replaced with it
    with pytest.raises(OutputExistsError, match="--overwrite"):
        evaluate_run(run, n=24, seed=1, k=4, n_analysis=24)


def test_evaluate_command_without_the_analysis_and_its_refusals(trained_run, evaluation_env, tmp_path, capsys):
    from typer.testing import CliRunner

    from repscope.cli import app, main

    root, _ = trained_run
    out = tmp_path / "evaluation"
    args = [
        "mmvae",
        "evaluate",
        str(root / "run"),
        "--n",
        "5",
        "--no-analysis",
        "--out",
        str(out),
    ]  # n < examples shown
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "text_to_image: strict" in result.output and "log-likelihood" not in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n"] == 5 and not any(key.startswith(("log_likelihood", "linear_")) for key in metrics)
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 1
    assert capsys.readouterr().err.strip() == f"repscope: error: --out {out}: exists; pass --overwrite to replace it"
    again = CliRunner().invoke(app, [*args, "--overwrite", "--seed", "2"])
    assert again.exit_code == 0, again.output
    assert json.loads((out / "metrics.json").read_text())["seed"] == 2
    with pytest.raises(SystemExit):
        main(["mmvae", "evaluate", str(root / "run"), "--n-analysis", "5", "-o", str(tmp_path / "x")])
    assert "--n-analysis" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_the_command_line_defaults_are_the_studys():
    from repscope.cli import mmvae as cli
    from repscope.studies.multimodal import evaluate as study

    assert (cli.EVALUATE_DEFAULT_N, cli.EVALUATE_DEFAULT_K, cli.EVALUATE_DEFAULT_N_ANALYSIS) == (
        study.DEFAULT_N,
        study.DEFAULT_K,
        study.DEFAULT_N_ANALYSIS,
    )
    assert cli.EVALUATE_ACCELERATOR_BATCH_SIZE == study.ACCELERATOR_BATCH_SIZE
    assert cli.EVALUATE_CPU_BATCH_SIZES == study.CPU_BATCH_SIZES


# --------------------------------------------------------------------------------------------
# the evaluation on a device: the same numbers on the CPU as the per-batch host loops it replaced


def previous_inputs(task, rows):
    """The task's encoder inputs, likelihood targets and feature masks as the host loop built them (caption end
    marks written by boolean-mask assignment)."""
    inputs, masks, targets = {}, {}, {}
    for name, value in rows.items():
        spec = task.modalities[name]
        inputs[name] = value
        if spec.get("mask"):
            characters = value.abs().sum(-1) > 0
            rank = torch.cumsum(~characters, dim=-1)
            scored = characters | ((rank >= 1) & (rank <= 2) & ~characters)
            padded = value.clone()
            marks = scored & ~characters
            padded[marks] = 0.0
            padded[..., int(spec["pad_class"])][marks] = 1.0
            targets[name], masks[name] = padded, scored
    return inputs, masks, targets


def previous_log_likelihood(task, given, k, seed, batch_size=64):
    """The importance-sampled estimate as it was computed before the evaluation moved to a device: per batch,
    the mixture's components drawn by torch.multinomial on the host, the noise on the host, each batch's
    estimate copied to the host (MMVAE / MoPoE / MVAE models)."""
    net = task.net
    generator = torch.Generator().manual_seed(seed)
    tensors = {name: torch.as_tensor(np.asarray(value)) for name, value in given.items()}
    tensors = {name: t.float() / 255.0 if t.dtype == torch.uint8 else t.float() for name, t in tensors.items()}
    n, estimates = len(next(iter(tensors.values()))), []
    for start in range(0, n, batch_size):
        inputs, masks, targets = previous_inputs(task, {m: t[start : start + batch_size] for m, t in tensors.items()})
        scored = {name: targets.get(name, inputs[name]) for name in inputs}
        c_mu, c_logvar, available = net.posterior(inputs)
        component = torch.multinomial(available.T.to(torch.float64), k, replacement=True, generator=generator).T
        batch = torch.arange(c_mu.shape[1])
        mu, logvar = c_mu[component, batch], c_logvar[component, batch]
        z = mu + torch.exp(0.5 * logvar) * torch.randn(mu.shape, generator=generator, dtype=mu.dtype)
        log_q = net._log_mixture_density(z, c_mu, c_logvar, available, False)
        everywhere = torch.ones(len(net.modalities), z.shape[1], dtype=torch.bool)
        log_px = net._log_likelihoods(net.decode(z), scored, everywhere, masks, weighted=False)
        weights = log_px + log_prior(net.prior, z) - log_q
        estimates.append((torch.logsumexp(weights.double(), 0) - math.log(k)).numpy())
    return np.concatenate(estimates)


def previous_cross_generation(task, given, seed, batch_size=256):
    """Decoded posterior means, one mixture component per example drawn by torch.multinomial, per batch."""
    generator = torch.Generator().manual_seed(seed)
    tensors = {name: torch.as_tensor(np.asarray(value)).float() for name, value in given.items()}
    tensors = {name: t / 255.0 if name == "image" else t for name, t in tensors.items()}
    chunks = {name: [] for name in task.modalities}
    for start in range(0, len(next(iter(tensors.values()))), batch_size):
        c_mu, _, available = task.net.posterior({m: t[start : start + batch_size] for m, t in tensors.items()})
        component = torch.multinomial(available.T.to(torch.float64), 1, generator=generator).squeeze(1)
        for name, out in task.net.decode(c_mu[component, torch.arange(c_mu.shape[1])]).items():
            chunks[name].append(out.numpy())
    return {name: np.concatenate(parts) for name, parts in chunks.items()}


def test_on_the_cpu_the_evaluation_gives_the_numbers_of_the_host_loops_it_replaced(trained_run):
    from repscope.studies.multimodal.evaluate import evaluation_test_set

    _, outcome = trained_run
    task = outcome.task
    test = evaluation_test_set(1, 150, seed=4)  # 150 rows: three batches of 64, the last one short
    given = {"image": test["image"], "text": test["text"]}
    with torch.no_grad():
        for part in (given, {"text": test["text"]}, {"image": test["image"]}):
            assert np.array_equal(task.log_likelihood(part, k=5, seed=2), previous_log_likelihood(task, part, 5, 2))
        for name in ("image", "text"):
            new = task.generate({name: test[name]}, seed=3, batch_size=64)
            old = previous_cross_generation(task, {name: test[name]}, 3, batch_size=64)
            assert all(np.array_equal(new[m], old[m]) for m in task.modalities), name
        z = torch.randn((40, 4), generator=torch.Generator().manual_seed(6))
        joint = task.sample(40, seed=6)
        assert all(np.array_equal(joint[m], out.numpy()) for m, out in task.net.decode(z).items())
    # another batch size draws other random numbers: another estimate of the same quantity
    one_pass = task.log_likelihood(given, k=5, seed=2, batch_size=150)
    assert not np.array_equal(one_pass, task.log_likelihood(given, k=5, seed=2))
    assert abs(one_pass.mean() - task.log_likelihood(given, k=5, seed=2).mean()) < 0.05 * abs(one_pass.mean())


def test_evaluate_records_where_and_in_what_batches_it_ran(trained_run, evaluation_env, tmp_path):
    from repscope.studies.multimodal.evaluate import evaluate_run, evaluation_device, evaluation_test_set

    root, outcome = trained_run
    metrics = evaluate_run(root / "run", n=24, seed=1, k=3, n_analysis=30, out=tmp_path / "default")
    assert (metrics["accelerator"], metrics["device"]) == ("cpu", "cpu")
    assert (metrics["batch_size"], metrics["batch_size_log_likelihood"]) == (256, 64)  # the task's defaults
    batched = evaluate_run(
        root / "run", n=24, seed=1, k=3, n_analysis=30, out=tmp_path / "b", batch_size=7, joint_traversal_steps=0
    )
    assert (batched["batch_size"], batched["batch_size_log_likelihood"]) == (7, 7)
    # no traversals asked: none decoded, none scored
    assert "joint_traversal_strict" not in batched and "joint_traversal_strict" in metrics
    assert not (tmp_path / "b" / "outputs" / "joint_traversal").exists()
    test = evaluation_test_set(1, 30, seed=1)
    text = outcome.task.log_likelihood({"text": test["text"]}, k=3, seed=1, batch_size=7)
    assert batched["log_likelihood_text"] == pytest.approx(text.mean(), rel=1e-12)
    # cross-generation decodes posterior means and joint samples come from one draw: no batch changes them
    for key in ("text_to_image_strict", "joint_features"):
        assert batched[key] == pytest.approx(metrics[key]), key
    with pytest.raises(InvalidArgumentError, match="--batch-size"):
        evaluate_run(root / "run", n=24, out=tmp_path / "c", batch_size=0)
    with pytest.raises(InvalidArgumentError, match="--accelerator"):
        evaluation_device("tpu")
    assert str(evaluation_device("cpu")) == "cpu"
    if not torch.cuda.is_available() and not torch.backends.mps.is_available():
        assert str(evaluation_device("auto")) == "cpu"
        with pytest.raises(InvalidArgumentError, match="--accelerator gpu: torch sees no such GPU"):
            evaluate_run(root / "run", n=24, out=tmp_path / "d", accelerator="gpu")
        assert not (tmp_path / "d").exists()


def test_the_command_places_the_model_and_hands_the_trainer_flags_to_the_classifiers(
    trained_run, evaluation_env, tmp_path
):
    from typer.testing import CliRunner

    from repscope.cli import app

    root, _ = trained_run
    base = ["mmvae", "evaluate", str(root / "run"), "--n", "5", "--no-analysis"]
    result = CliRunner().invoke(app, [*base, "--accelerator", "cpu", "--batch-size", "3", "-o", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert (metrics["accelerator"], metrics["device"], metrics["batch_size"]) == ("cpu", "cpu", 3)
    assert evaluation_env[-1].accelerator == "cpu" and "on cpu" in result.output
    # no flag: the model on the CPU (the numbers of earlier evaluations), the classifiers on their default
    result = CliRunner().invoke(app, [*base, "-o", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "b" / "metrics.json").read_text())["device"] == "cpu"
    assert evaluation_env[-1].accelerator == "auto"
    help_text = CliRunner().invoke(app, ["mmvae", "evaluate", "--help"]).output
    assert "--accelerator" in help_text and "--batch-size" in help_text

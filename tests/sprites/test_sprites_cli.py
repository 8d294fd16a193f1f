"""`repscope sprites`: generate, show, h5 round trip, evaluate — end to end through the CLI."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from repscope.cli import app
from repscope.data import dsprites
from repscope.data.multimodal.attributes import compose_captions
from repscope.data.multimodal.cdsprites import CdSpritesPlus
from repscope.data.store import read_dataset

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_generate_writes_the_generator_samples(tmp_path):
    out = tmp_path / "l3"
    result = invoke("sprites", "generate", "--level", 3, "--n", 45, "--seed", 2, "--split", "val", "--out", out)
    assert result.exit_code == 0, result.output
    data = read_dataset(out, verify=True)
    images, captions, table = CdSpritesPlus(3, size=45, seed=2, split="val").batch(np.arange(45))
    assert np.array_equal(np.asarray(data.images), images)
    assert data.captions == captions and np.array_equal(data.attribute_table(), table)
    assert data.meta["params"]["split"] == "val" and data.level == 3
    assert {"orientation", "centre_x", "centre_y", "texture"} <= set(data.factors.columns)


def test_generate_can_misspell_captions_and_keep_true_attributes(tmp_path):
    clean = tmp_path / "clean"
    noisy = tmp_path / "noisy"
    invoke("sprites", "generate", "--level", 5, "--n", 30, "--out", clean)
    assert invoke("sprites", "generate", "--level", 5, "--n", 30, "--out", noisy, "--caption-edits", 2).exit_code == 0
    a, b = read_dataset(clean), read_dataset(noisy)
    assert np.array_equal(np.asarray(a.images), np.asarray(b.images))
    assert np.array_equal(a.attribute_table(), b.attribute_table())
    changed = sum(x != y for x, y in zip(a.captions, b.captions))
    assert changed >= 25  # two edits rarely cancel out
    # the words stay in place: spaces are never edited
    assert all(x.count(" ") == y.count(" ") for x, y in zip(a.captions, b.captions))


def test_generate_refuses_an_existing_folder_and_leaves_it(tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    result = invoke("sprites", "generate", "--level", 1, "--n", 5, "--out", out)
    assert result.exit_code == 1 and (out / "mine.txt").read_text() == "keep"
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    bad = invoke("sprites", "generate", "--level", 7, "--n", 5, "--out", tmp_path / "x")
    assert bad.exit_code == 1 and not (tmp_path / "x").exists()


def test_dsprites_folder_and_npz(tmp_path):
    result = invoke("sprites", "generate", "--dataset", "dsprites", "--n", 30, "--seed", 4, "--out", tmp_path / "ds")
    assert result.exit_code == 0, result.output
    data = read_dataset(tmp_path / "ds")
    indices = data.factors["index"].to_numpy()
    assert len(set(indices)) == 30
    assert np.array_equal(np.asarray(data.images), dsprites.DSprites().images(indices))
    assert (
        invoke(
            "sprites", "generate", "--dataset", "dsprites", "--n", 30, "--seed", 4, "--out", tmp_path / "ds.npz"
        ).exit_code
        == 0
    )
    archive = dsprites.read_npz(tmp_path / "ds.npz")
    assert np.array_equal(archive["imgs"], np.asarray(data.images))


def test_show_writes_a_png(tmp_path):
    invoke("sprites", "generate", "--level", 5, "--n", 20, "--out", tmp_path / "d")
    result = invoke("sprites", "show", tmp_path / "d", "--count", 6, "--ncols", 3)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "d" / "samples.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = invoke("sprites", "show", tmp_path / "d")
    assert again.exit_code == 1  # never overwrites


def test_h5_export_import_round_trip_through_the_cli(tmp_path):
    invoke("sprites", "generate", "--level", 4, "--n", 25, "--out", tmp_path / "d")
    assert invoke("sprites", "export-h5", tmp_path / "d", tmp_path / "traindata.h5").exit_code == 0
    with h5py.File(tmp_path / "traindata.h5") as handle:
        original = read_dataset(tmp_path / "d")
        assert np.array_equal(handle["image"][:][..., ::-1], np.asarray(original.images))  # stored BGR
        assert handle["text"][3] == original.captions[3].encode()
    result = invoke("sprites", "import-h5", tmp_path / "traindata.h5", "--level", 4, "--out", tmp_path / "back")
    assert result.exit_code == 0, result.output
    back = read_dataset(tmp_path / "back")
    assert np.array_equal(np.asarray(back.images), np.asarray(original.images))
    assert back.captions == original.captions and np.array_equal(back.attribute_table(), original.attribute_table())
    wrong_level = invoke("sprites", "import-h5", tmp_path / "traindata.h5", "--level", 5, "--out", tmp_path / "w")
    assert wrong_level.exit_code == 1 and not (tmp_path / "w").exists()


def test_evaluate_scores_generated_captions_exactly(tmp_path):
    """image -> text needs no classifier: the scores are known by hand."""
    truth = compose_captions(
        2, np.array([[0, 0], [1, 1], [2, 0], [0, 1]])
    )  # big square, small ellipse, big heart, small square
    generated = ["big square", "small elipse", "big heart extra", "big"]
    folder = tmp_path / "outputs" / "image_to_text"
    folder.mkdir(parents=True)
    (folder / "truth.txt").write_text("\n".join(truth) + "\n")
    (folder / "captions.txt").write_text("\n".join(generated) + "\n")
    result = invoke("sprites", "evaluate", tmp_path / "outputs", "--level", 2, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())["image_to_text"]
    assert metrics["strict"] == pytest.approx(25.0)  # only the first caption is exact
    # features: 2 + 1 (size) + 2 (extra word ignored) + 0 (big != small; shape missing) = 5 of 4 captions
    assert metrics["features"] == pytest.approx(5 / 4)
    # letters: position by position over each true caption's length
    expected = np.mean([sum(a == b for a, b in zip(g, t)) / len(t) for g, t in zip(generated, truth)]) * 100
    assert metrics["letters"] == pytest.approx(expected)
    assert (tmp_path / "run" / "report.html").exists()


def test_evaluate_reports_our_rules_and_the_toolkits_side_by_side(tmp_path):
    """Captions with trailing text: Strict-wrong by our rules, Strict-right by the toolkit's (its
    eval_cdsprites.py compares the first len(truth) characters)."""
    folder = tmp_path / "outputs" / "image_to_text"
    folder.mkdir(parents=True)
    (folder / "truth.txt").write_text("big square\nsmall ellipse\nbig heart\n")
    # an empty line is an empty caption; trailing spaces are kept
    (folder / "captions.txt").write_text("big square  qq\n\nbig heart\n")
    result = invoke("sprites", "evaluate", tmp_path / "outputs", "--level", 2, "--out", tmp_path / "both")
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "both" / "metrics.json").read_text())
    assert metrics["compat"] == "both"
    assert metrics["image_to_text"]["strict"] == pytest.approx(100 / 3)  # only "big heart" is exact
    toolkit = metrics["toolkit"]["image_to_text"]
    assert toolkit["strict"] == pytest.approx(200 / 3)  # "big square  qq" starts with the truth
    assert toolkit["features"] == pytest.approx((2 + 0 + 2) / 3)
    table = (tmp_path / "both" / "tables" / "coherency.csv").read_text().splitlines()
    assert table[0].startswith("direction,rules,samples,strict_percent")
    assert [row.split(",")[1] for row in table[1:]] == ["ours", "toolkit"]
    only = invoke(
        "sprites", "evaluate", tmp_path / "outputs", "--level", 2, "--compat", "toolkit", "-o", tmp_path / "tk"
    )
    assert only.exit_code == 0, only.output
    metrics = json.loads((tmp_path / "tk" / "metrics.json").read_text())
    assert "image_to_text" not in metrics and metrics["toolkit"]["image_to_text"]["strict"] == pytest.approx(200 / 3)
    bad = invoke(
        "sprites", "evaluate", tmp_path / "outputs", "--level", 2, "--set", "compat=paper", "-o", tmp_path / "x"
    )
    assert bad.exit_code != 0 and not (tmp_path / "x").exists()


def test_evaluate_rejects_bad_folders(tmp_path):
    (tmp_path / "empty").mkdir()
    assert invoke("sprites", "evaluate", tmp_path / "empty", "--level", 1).exit_code == 1
    # an evaluated MMVAE's run directory: the outputs are named where they are
    (tmp_path / "run" / "evaluation" / "outputs" / "joint").mkdir(parents=True)
    result = invoke("sprites", "evaluate", tmp_path / "run", "--level", 1)
    assert result.exit_code == 1
    message = f"{tmp_path / 'run'}: a run directory, not a folder of outputs; its evaluation's outputs are in "
    assert str(result.exception) == message + str(tmp_path / "run" / "evaluation" / "outputs")
    folder = tmp_path / "o" / "image_to_text"
    folder.mkdir(parents=True)
    (folder / "truth.txt").write_text("square\nheart\n")
    (folder / "captions.txt").write_text("square\n")
    result = invoke("sprites", "evaluate", tmp_path / "o", "--level", 1, "--out", tmp_path / "r")
    assert result.exit_code == 1 and not (tmp_path / "r").exists()
    (folder / "captions.txt").write_text("square\nheart\n")
    (folder / "truth.txt").write_text("square\nbig heart\n")  # a level-2 caption at level 1
    assert invoke("sprites", "evaluate", tmp_path / "o", "--level", 1, "--out", tmp_path / "r").exit_code == 1


def test_output_images_are_read_as_uint8_rgb_or_refused_naming_the_file(tmp_path):
    from repscope.errors import DataFormatError
    from repscope.studies.multimodal.coherency import read_output_images

    values = np.zeros((2, 3, 64, 64), np.float32)  # channels first, as a torch decoder returns them
    values[1, 0, 5, 7] = 1.0
    values[0, 2, 0, 0] = 0.5
    np.save(tmp_path / "float.npy", values)
    images = read_output_images(tmp_path / "float.npy")
    assert images.dtype == np.uint8 and images.shape == (2, 64, 64, 3)
    assert images[1, 5, 7, 0] == 255 and images[0, 0, 0, 2] == 128 and int(images.sum()) == 255 + 128
    for bad, why in [
        (values * 2, "lie in \\[0, 1\\]"),
        (np.full((1, 64, 64, 3), np.nan, np.float32), "NaN"),
        (np.zeros((1, 64, 64, 3), np.int32), "dtype"),
    ]:
        np.save(tmp_path / "bad.npy", bad)
        with pytest.raises(DataFormatError, match=f"bad.npy.*{why}"):
            read_output_images(tmp_path / "bad.npy")


@pytest.mark.filterwarnings("ignore:.*below.*0.98:RuntimeWarning")  # tiny classifiers, on purpose
def test_classify_and_evaluate_judge_images_with_the_cached_classifiers(tmp_path, monkeypatch):
    """Tiny classifiers (trained here into a private cache) judge a generated set; evaluate's
    text -> image and joint scores must agree with classify's per-image verdicts."""
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path / "home"))
    trained = invoke("sprites", "train-judges", "--level", 2, "--train-size", 192, "--val-size", 64, "--epochs", 1)
    assert trained.exit_code == 0, trained.output
    assert (tmp_path / "home" / "classifiers" / "cdsprites-level2" / "classifiers.json").exists()
    invoke("sprites", "generate", "--level", 2, "--n", 48, "--split", "test", "--out", tmp_path / "d")
    result = invoke("sprites", "classify", tmp_path / "d", "--out", tmp_path / "c")
    assert result.exit_code == 0, result.output
    verdict = json.loads((tmp_path / "c" / "classification.json").read_text())
    predictions = np.loadtxt(tmp_path / "c" / "predictions.csv", delimiter=",", skiprows=1, dtype=np.int64)
    truth = read_dataset(tmp_path / "d").attribute_table()
    recognised = predictions[:, -1] == 1  # the last column: the judge recognises a shape
    assert verdict["rejected"] == pytest.approx(1 - recognised.mean())
    assert verdict["accuracy"]["shape"] == pytest.approx(((predictions[:, 1] == truth[:, 0]) & recognised).mean())
    right = (predictions[:, 1:-1] == truth).all(1) & recognised
    assert verdict["all_attributes_right"] == pytest.approx(right.mean())
    # the results exist: refused without --overwrite (nothing touched), replaced whole with it, and no
    # scratch folder is left beside them
    (tmp_path / "c" / "predictions.csv").write_text("earlier\n")
    refused = invoke("sprites", "classify", tmp_path / "d", "--out", tmp_path / "c")
    assert refused.exit_code == 1 and (tmp_path / "c" / "predictions.csv").read_text() == "earlier\n"
    replaced = invoke("sprites", "classify", tmp_path / "d", "--out", tmp_path / "c", "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    again = np.loadtxt(tmp_path / "c" / "predictions.csv", delimiter=",", skiprows=1, dtype=np.int64)
    assert np.array_equal(again, predictions)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]

    outputs = tmp_path / "outputs"
    data = read_dataset(tmp_path / "d")
    for part, caption_file in (("text_to_image", "truth.txt"), ("joint", "captions.txt")):
        (outputs / part).mkdir(parents=True)
        np.save(outputs / part / "images.npy", np.asarray(data.images))
        (outputs / part / caption_file).write_text("\n".join(data.captions) + "\n")
    evaluated = invoke("sprites", "evaluate", outputs, "--level", 2, "--out", tmp_path / "run")
    assert evaluated.exit_code == 0, evaluated.output
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["text_to_image"]["strict"] == pytest.approx(100 * verdict["all_attributes_right"])
    # joint pairs are the true captions with their images: the same verdicts
    assert metrics["joint"]["strict"] == pytest.approx(metrics["text_to_image"]["strict"])
    assert metrics["joint"]["features"] == pytest.approx(metrics["text_to_image"]["features"])
    assert set(metrics["classifier_confidence"]) == {"text_to_image", "joint"}

    # classifiers that were sure of their held-out family and are unsure here: evaluate says so, on
    # stderr, in metrics.json and at the top of the report
    cache = tmp_path / "home" / "classifiers" / "cdsprites-level2" / "classifiers.json"
    stored = json.loads(cache.read_text())
    for entry in stored["attributes"].values():
        entry["held_out_confidence"] = 1.0
    cache.write_text(json.dumps(stored))
    warned = runner.invoke(app, ["sprites", "evaluate", str(outputs), "--level", "2", "--out", str(tmp_path / "r2")])
    assert warned.exit_code == 0, warned.output
    metrics = json.loads((tmp_path / "r2" / "metrics.json").read_text())
    assert any("unsure" in w and w.startswith("joint images") for w in metrics["warnings"])
    assert "unsure" in (tmp_path / "r2" / "report.html").read_text()


def test_generate_help_names_every_texture_family():
    from repscope.cli.sprites import FAMILIES_HELP
    from repscope.data.multimodal.textures import TEXTURE_FAMILIES

    assert FAMILIES_HELP.split(", ") == list(TEXTURE_FAMILIES)


def test_generate_with_chosen_texture_families(tmp_path):
    from repscope.data.multimodal.textures import TEXTURE_FAMILIES

    result = invoke(
        "sprites", "generate", "--level", 5, "--n", 240, "--texture-families", "dots,fabric", "--out", tmp_path / "d"
    )
    assert result.exit_code == 0, result.output
    data = read_dataset(tmp_path / "d")
    used = {TEXTURE_FAMILIES[i] for i in data.factors["texture_family"]}
    assert used == {"dots", "fabric"} and data.meta["params"]["texture_families"] == ["dots", "fabric"]
    assert data.meta["params"]["recipe"] == "published"

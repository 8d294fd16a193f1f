"""The Morpho-MNIST dataset builder: layout, contents, determinism, resume, errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from repscope.data import idx
from repscope.data.morpho import MORPHOMETRICS, measure, resample
from repscope.data.morpho.build import (
    SETS,
    BuildConfig,
    build_dataset,
    limit_indices,
    split_single,
    verify_dataset,
)
from repscope.data.sources import load_source
from repscope.errors import InvalidArgumentError, OutputExistsError

SMALL = dict(train_size=60, test_size=30, chunk_size=25)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("morpho") / "set"
    manifest = build_dataset(out, BuildConfig(seed=3, **SMALL))
    return out, manifest


def read(out, set_name, split, what):
    path = out / set_name / f"{split}-{what}"
    return pd.read_csv(path) if what.endswith(".csv") else idx.read_idx(path)


def test_layout_and_counts(built):
    out, manifest = built
    for set_name in SETS:
        names = {p.name for p in (out / set_name).iterdir()}
        for split in ("train", "t10k"):
            assert {f"{split}-images-idx3-ubyte.gz", f"{split}-labels-idx1-ubyte.gz", f"{split}-morpho.csv"} <= names
            assert (f"{split}-pert-idx1-ubyte.gz" in names) == (set_name in ("global", "local"))
            assert (f"{split}-pert-params.csv" in names) == (set_name != "plain")
        assert manifest["counts"][set_name] == {"train": 60, "t10k": 30}
    assert not (out / ".build").exists()
    assert verify_dataset(out) == []
    recorded = json.loads((out / "dataset.json").read_text())
    assert recorded["seed"] == 3 and recorded["source"] == "mnist-sample"


def _chosen_source_digits(name: str, limit: int, seed: int = 3):
    source = load_source("mnist-sample")
    within = split_single(source.labels, len(source.images), 0.2, seed=seed)[name]
    chosen = within[limit_indices(source.labels[within], limit, seed, name)]
    return source, chosen


def test_plain_set_holds_the_source_digits_of_each_split_rendered(built):
    out, manifest = built
    for name, limit in (("train", 60), ("t10k", 30)):
        source, chosen = _chosen_source_digits(name, limit)
        # mnist-sample is sorted by class: a limited build must still hold every class equally
        assert np.array_equal(np.bincount(source.labels[chosen], minlength=10), np.full(10, limit // 10))
        # the published recipe: downscale(binarise(upscale(digit))), rounded to uint8
        binary = resample.upscale(source.images[chosen]) >= 0.5
        expected = resample.to_uint8(resample.downscale(binary.astype(np.float64)))
        written = read(out, "plain", name, "images-idx3-ubyte.gz")
        assert np.array_equal(written, expected)
        assert not np.array_equal(written, source.images[chosen])  # really re-rendered
        assert np.array_equal(read(out, "plain", name, "labels-idx1-ubyte.gz"), source.labels[chosen])
        # morpho.csv describes the images written, not the source digits
        table, measured = read(out, "plain", name, "morpho.csv"), measure(written)
        for column in MORPHOMETRICS:
            np.testing.assert_allclose(table[column], measured[column], rtol=1e-6, atol=1e-9)
        assert np.abs(table["area"] - measure(source.images[chosen])["area"]).max() > 0
    assert manifest["plain_render"]["choice"] == "rendered"


def test_plain_and_perturbed_digits_share_the_render_path(monkeypatch, tmp_path):
    # a perturbation that changes nothing must give the plain digit's bytes exactly: then plain and
    # perturbed digits differ only by the perturbation, never by how they were rendered
    from repscope.data.morpho import perturb as perturb_module

    def identity(self, morph, rng):
        return perturb_module.PerturbationResult(morph.binary_image.astype(np.float64), {"identity": True})

    monkeypatch.setattr(perturb_module.Thickening, "__call__", identity)
    build_dataset(tmp_path / "b", BuildConfig(seed=1, sets=("plain", "thic"), train_size=20, test_size=10))
    for split in ("train", "t10k"):
        plain = read(tmp_path / "b", "plain", split, "images-idx3-ubyte.gz")
        assert np.array_equal(plain, read(tmp_path / "b", "thic", split, "images-idx3-ubyte.gz"))


def test_source_bytes_option_keeps_the_plain_digits_as_they_were(tmp_path):
    manifest = build_dataset(
        tmp_path / "s", BuildConfig(seed=3, sets=("plain",), plain_render="source-bytes", train_size=20, test_size=10)
    )
    source, chosen = _chosen_source_digits("train", 20)
    assert np.array_equal(read(tmp_path / "s", "plain", "train", "images-idx3-ubyte.gz"), source.images[chosen])
    assert manifest["plain_render"]["choice"] == "source-bytes"
    assert json.loads((tmp_path / "s" / "dataset.json").read_text())["config"]["plain_render"] == "source-bytes"


def test_copies_draw_each_digit_k_times_with_its_own_perturbation(tmp_path):
    small = dict(seed=2, sets=("plain", "swel", "local"), train_size=20, test_size=10, chunk_size=15)
    build_dataset(tmp_path / "one", BuildConfig(**small), jobs=1)
    three = build_dataset(tmp_path / "three", BuildConfig(copies=3, **small), jobs=2)
    assert three["counts"]["swel"] == {"train": 60, "t10k": 10}
    assert three["copies"]["train"] == 3 and three["copies"]["t10k"] == 1
    ids = read(tmp_path / "three", "swel", "train", "ids.csv")
    assert ids["index"].tolist() == list(range(60))
    assert ids["source_index"].tolist() == list(range(20)) * 3  # copy-major
    assert ids["copy"].tolist() == [0] * 20 + [1] * 20 + [2] * 20
    labels = read(tmp_path / "three", "swel", "train", "labels-idx1-ubyte.gz")
    assert np.array_equal(labels, np.tile(read(tmp_path / "one", "swel", "train", "labels-idx1-ubyte.gz"), 3))
    swollen = read(tmp_path / "three", "swel", "train", "images-idx3-ubyte.gz")
    params = read(tmp_path / "three", "swel", "train", "pert-params.csv")["params"]
    # copy 0 keeps the perturbations of a build without copies; the other copies are perturbed anew
    assert np.array_equal(swollen[:20], read(tmp_path / "one", "swel", "train", "images-idx3-ubyte.gz"))
    assert params[:20].tolist() == read(tmp_path / "one", "swel", "train", "pert-params.csv")["params"].tolist()
    for copy in (1, 2):
        assert all(params[20 * copy + k] != params[k] for k in range(20))
    plain = read(tmp_path / "three", "plain", "train", "images-idx3-ubyte.gz")
    assert np.array_equal(plain[:20], plain[40:])  # plain copies are identical
    # each copy has its own place in the mixed set: the assignment is over all 60
    codes = read(tmp_path / "three", "local", "train", "pert-idx1-ubyte.gz")
    assert np.bincount(codes)[[0, 3, 4]].tolist() == [20, 20, 20]
    assert not np.array_equal(codes[:20], codes[20:40])
    # deterministic whatever the jobs
    again = build_dataset(tmp_path / "again", BuildConfig(copies=3, **small), jobs=1)
    assert again["files"] == three["files"]


@pytest.mark.parametrize("field", ["copies", "test_copies"])
def test_bad_copies_is_an_error_naming_the_option(tmp_path, field):
    with pytest.raises(InvalidArgumentError, match=field):
        build_dataset(tmp_path / "c", BuildConfig(sets=("plain",), **{field: 0}))
    assert not (tmp_path / "c").exists()


def test_build_measures_in_the_published_mode_when_asked(tmp_path):
    manifest = build_dataset(
        tmp_path / "p", BuildConfig(seed=3, sets=("thin",), compat="published", train_size=20, test_size=10)
    )
    images = read(tmp_path / "p", "thin", "t10k", "images-idx3-ubyte.gz")
    table = read(tmp_path / "p", "thin", "t10k", "morpho.csv")
    published = measure(images, compat="published")
    assert manifest["measurement"]["compat"] == "published"
    np.testing.assert_allclose(table["length"], published["length"], rtol=1e-7)
    assert np.abs(table["length"] - measure(images)["length"]).max() > 1e-3  # not the default mode


def test_split_rule_is_stratified_and_disjoint():
    labels = np.repeat(np.arange(10), 50)
    parts = split_single(labels, 500, 0.2, seed=0)
    assert np.intersect1d(parts["train"], parts["t10k"]).size == 0
    assert len(parts["train"]) + len(parts["t10k"]) == 500
    assert np.array_equal(np.bincount(labels[parts["t10k"]]), np.full(10, 10))
    assert not np.array_equal(parts["t10k"], split_single(labels, 500, 0.2, seed=1)["t10k"])


def test_limit_is_stratified_seeded_and_in_source_order():
    labels = np.repeat(np.arange(4), [40, 20, 20, 20])
    keep = limit_indices(labels, 50, seed=0, split="train")
    assert len(keep) == 50 and np.all(np.diff(keep) > 0)
    assert np.array_equal(np.bincount(labels[keep]), [20, 10, 10, 10])
    assert np.array_equal(keep, limit_indices(labels, 50, seed=0, split="train"))
    assert not np.array_equal(keep, limit_indices(labels, 50, seed=1, split="train"))
    assert np.array_equal(limit_indices(labels, 500, seed=0, split="train"), np.arange(100))


def test_morphometrics_are_measured_after_perturbation(built):
    out, _ = built
    plain = read(out, "plain", "t10k", "morpho.csv")
    thick = read(out, "thic", "t10k", "morpho.csv")
    thin = read(out, "thin", "t10k", "morpho.csv")
    assert np.median(thick["thickness"] / plain["thickness"]) >= 1.6
    assert np.median(thin["thickness"] / plain["thickness"]) <= 0.75
    images = read(out, "swel", "t10k", "images-idx3-ubyte.gz")
    remeasured = measure(images)
    for name in MORPHOMETRICS:
        np.testing.assert_allclose(read(out, "swel", "t10k", "morpho.csv")[name], remeasured[name], rtol=1e-6)


def test_mixed_sets_take_each_digit_from_its_perturbed_set(built):
    out, _ = built
    for set_name, members in (
        ("global", {0: "plain", 1: "thin", 2: "thic"}),
        ("local", {0: "plain", 3: "swel", 4: "frac"}),
    ):
        codes = read(out, set_name, "train", "pert-idx1-ubyte.gz")
        assert sorted(np.unique(codes)) == sorted(members)
        assert np.bincount(codes)[list(members)].tolist() == [20, 20, 20]  # equal shares of 60
        mixed = read(out, set_name, "train", "images-idx3-ubyte.gz")
        mixed_morpho = read(out, set_name, "train", "morpho.csv")
        for code, source_set in members.items():
            chosen = codes == code
            assert np.array_equal(mixed[chosen], read(out, source_set, "train", "images-idx3-ubyte.gz")[chosen])
            np.testing.assert_allclose(
                mixed_morpho.loc[chosen, "thickness"],
                read(out, source_set, "train", "morpho.csv").loc[chosen, "thickness"],
            )
        params = read(out, set_name, "train", "pert-params.csv")
        assert (params["code"].to_numpy() == codes).all()


def test_perturbation_parameters_give_ground_truth_locations(built):
    out, _ = built
    swel = read(out, "swel", "t10k", "pert-params.csv")
    frac = read(out, "frac", "t10k", "pert-params.csv")
    for text in swel["params"]:
        params = json.loads(text)
        assert params["perturbation"] == "swel"
        row, col = params["centre"]
        assert 0 <= row < 28 and 0 <= col < 28
    drawn = [len(json.loads(text)["fractures"]) for text in frac["params"]]
    assert max(drawn) == 3 and np.mean(drawn) > 2


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path, built):
    _, manifest = built
    again = build_dataset(tmp_path / "again", BuildConfig(seed=3, **SMALL), jobs=2)
    assert again["files"] == manifest["files"]
    other = build_dataset(
        tmp_path / "other",
        BuildConfig(seed=4, **SMALL),
    )
    assert other["files"]["swel/t10k-images-idx3-ubyte.gz"] != manifest["files"]["swel/t10k-images-idx3-ubyte.gz"]


def test_interrupted_build_resumes_to_the_same_bytes(tmp_path, built):
    _, manifest = built
    out = tmp_path / "interrupted"
    partial = build_dataset(out, BuildConfig(seed=3, **SMALL), stop_after_chunks=2)
    assert partial == {"complete": False}
    assert not (out / "dataset.json").exists()
    with pytest.raises(OutputExistsError, match="--resume"):
        build_dataset(out, BuildConfig(seed=3, **SMALL))
    with pytest.raises(InvalidArgumentError, match="seed"):
        build_dataset(out, BuildConfig(seed=5, **SMALL), resume=True)
    resumed = build_dataset(out, BuildConfig(seed=3, **SMALL), resume=True)
    assert resumed["files"] == manifest["files"]
    assert verify_dataset(out) == []


def test_existing_output_is_never_overwritten(tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match="not empty"):
        build_dataset(out, BuildConfig(**SMALL))
    assert (out / "notes.txt").read_text() == "mine"
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_bad_configuration_names_the_key(tmp_path):
    with pytest.raises(InvalidArgumentError, match="sets"):
        build_dataset(tmp_path / "a", BuildConfig(sets=("plain", "blurry"), **SMALL))
    with pytest.raises(InvalidArgumentError, match="test_fraction"):
        build_dataset(tmp_path / "b", BuildConfig(test_fraction=1.5, **SMALL))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_verify_detects_a_changed_file(tmp_path):
    out = tmp_path / "v"
    build_dataset(out, BuildConfig(sets=("plain",), train_size=20, test_size=10))
    target = out / "plain" / "t10k-morpho.csv"
    target.write_text(target.read_text().replace("1", "2", 1))
    assert verify_dataset(out) == ["plain/t10k-morpho.csv"]


def test_cli_build_then_measure_the_built_set(tmp_path):
    from typer.testing import CliRunner

    from repscope.cli import app

    runner = CliRunner()
    out = tmp_path / "cli"
    result = runner.invoke(
        app,
        [
            "morpho",
            "build",
            "--out",
            str(out),
            "--sets",
            "plain,thic",
            "--train-size",
            "20",
            "--test-size",
            "10",
            "--seed",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "plain: 20+10" in result.output
    csv = tmp_path / "thic.csv"
    result = runner.invoke(app, ["morpho", "measure", str(out / "thic"), "-o", str(csv), "--split", "t10k"])
    assert result.exit_code == 0, result.output
    measured = pd.read_csv(csv)
    stored = read(out, "thic", "t10k", "morpho.csv")
    np.testing.assert_allclose(measured["thickness"], stored["thickness"], rtol=1e-6)
    assert (measured["label"].to_numpy() == read(out, "thic", "t10k", "labels-idx1-ubyte.gz")).all()


def test_cli_errors_are_one_line_and_exit_non_zero(tmp_path, capsys):
    from repscope.cli import main

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("keep")
    with pytest.raises(SystemExit) as exit_info:
        main(["morpho", "build", "--out", str(taken), "--train-size", "5", "--test-size", "5"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("repscope: error:") and "\n" not in err and str(taken) in err
    with pytest.raises(SystemExit) as exit_info:
        main(["morpho", "measure", "no-such-source", "-o", str(tmp_path / "m.csv")])
    assert exit_info.value.code == 1
    assert not (tmp_path / "m.csv").exists()


def test_bad_source_leaves_nothing_that_blocks_the_corrected_command(tmp_path, capsys):
    from repscope.cli import main

    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "morpho",
                "build",
                "--source",
                "no-such-source",
                "--out",
                str(out),
                "--sets",
                "plain",
                "--train-size",
                "10",
                "--test-size",
                "5",
            ]
        )
    assert exit_info.value.code == 1
    assert "no-such-source" in capsys.readouterr().err
    assert not out.exists()
    # an existing empty directory stays, and stays empty
    out.mkdir()
    with pytest.raises(Exception, match="no-such-source"):
        build_dataset(out, BuildConfig(source="no-such-source", sets=("plain",)))
    assert list(out.iterdir()) == []
    manifest = build_dataset(out, BuildConfig(sets=("plain",), train_size=10, test_size=5))
    assert manifest["counts"]["plain"] == {"train": 10, "t10k": 5}


def test_failure_before_the_first_chunk_removes_the_build_state(tmp_path, monkeypatch):
    from repscope.data.morpho import build as build_module

    def broken(*args, **kwargs):
        raise InvalidArgumentError("images: broken on purpose")

    monkeypatch.setattr(build_module, "process_chunk", broken)
    out = tmp_path / "out"
    with pytest.raises(InvalidArgumentError, match="on purpose"):
        build_dataset(out, BuildConfig(sets=("plain",), train_size=10, test_size=5))
    assert not out.exists()


def test_interrupt_keeps_a_resumable_state(tmp_path, built, monkeypatch):
    from repscope.data.morpho import build as build_module

    _, manifest = built
    out = tmp_path / "interrupted"
    original = build_module.process_chunk
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(build_module, "process_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_dataset(out, BuildConfig(seed=3, **SMALL))
    assert (out / ".build" / "config.json").exists()
    assert len(list((out / ".build").glob("*.npz"))) == 2
    monkeypatch.setattr(build_module, "process_chunk", original)
    resumed = build_dataset(out, BuildConfig(seed=3, **SMALL), resume=True)
    assert resumed["files"] == manifest["files"]


def test_unwritable_output_is_one_error_naming_the_path(tmp_path):
    from repscope.errors import RepscopeError

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    out = blocker / "set"
    with pytest.raises(RepscopeError, match=str(blocker)):
        build_dataset(out, BuildConfig(sets=("plain",), train_size=10, test_size=5))
    assert blocker.read_text() == "not a directory"


def test_read_only_output_directory(tmp_path, capsys):
    import os

    from repscope.cli import main

    if os.geteuid() == 0:
        pytest.skip("running as root: a read-only directory is writable to root")
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        with pytest.raises(SystemExit) as exit_info:
            main(
                [
                    "morpho",
                    "build",
                    "--out",
                    str(parent / "set"),
                    "--sets",
                    "plain",
                    "--train-size",
                    "10",
                    "--test-size",
                    "5",
                ]
            )
        assert exit_info.value.code == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("repscope: error:") and str(parent / "set") in err and "\n" not in err
    finally:
        parent.chmod(0o755)


@pytest.mark.parametrize("spelling", ["thick", "thic", "Thickening"])
def test_sets_and_perturbations_accept_either_name(spelling):
    config = BuildConfig(sets=("plain", spelling), perturbations={spelling: {"amount": 0.5}}, **SMALL)
    config.check()
    assert config.sets == ("plain", "thic")  # the published set name is what is written
    assert config.perturbations == {"thick": {"amount": 0.5}}
    assert config.make_perturbations()["thick"].amount == 0.5


def test_one_perturbation_named_twice_is_refused():
    with pytest.raises(
        InvalidArgumentError, match="key perturbations: .*'thic' names the perturbation 'thick' given already"
    ):
        BuildConfig(perturbations={"thick": {}, "thic": {}})


def _marker_task(path):
    import time
    from pathlib import Path

    time.sleep(0.3)
    Path(path).write_text("done")
    return path


def test_ctrl_c_in_the_loop_cancels_pending_tasks_and_stops_the_workers(tmp_path):
    import multiprocessing
    import time

    from repscope.pools import ordered_map

    tasks = [str(tmp_path / f"task-{k}") for k in range(12)]
    with pytest.raises(KeyboardInterrupt):
        with ordered_map(_marker_task, tasks, jobs=2) as results:
            for _task, _ in zip(tasks, results):
                raise KeyboardInterrupt  # as Ctrl-C during a progress update
    assert multiprocessing.active_children() == []
    time.sleep(0.7)  # what a surviving worker would need to finish more tasks
    assert len(list(tmp_path.iterdir())) < len(tasks)


def test_pool_results_are_in_order_with_any_jobs(tmp_path):
    from repscope.pools import ordered_map

    tasks = [str(tmp_path / f"t{k}") for k in range(4)]
    for jobs in (1, 2):
        with ordered_map(_marker_task, tasks, jobs) as results:
            assert list(results) == tasks


def test_cli_copies_render_and_compat_options_reach_the_build(tmp_path, capsys):
    from typer.testing import CliRunner

    from repscope.cli import app, main

    out = tmp_path / "cli-copies"
    args = ["morpho", "build", "--out", str(out), "--sets", "plain,frac", "--train-size", "10", "--test-size", "5"]
    extra = ["--copies", "2", "--test-copies", "3", "--plain-render", "source-bytes", "--compat", "published"]
    result = CliRunner().invoke(app, args + extra)
    assert result.exit_code == 0, result.output
    assert "frac: 20+15" in result.output
    manifest = json.loads((out / "dataset.json").read_text())
    assert manifest["config"]["copies"] == 2 and manifest["config"]["test_copies"] == 3
    assert manifest["plain_render"]["choice"] == "source-bytes" and manifest["measurement"]["compat"] == "published"
    assert read(out, "frac", "t10k", "ids.csv")["copy"].tolist() == [0] * 5 + [1] * 5 + [2] * 5
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "morpho",
                "build",
                "--out",
                str(tmp_path / "bad"),
                "--copies",
                "0",
                "--train-size",
                "5",
                "--test-size",
                "5",
            ]
        )
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert "copies" in err and "\n" not in err
    assert not (tmp_path / "bad").exists()

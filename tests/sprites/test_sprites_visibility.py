"""What a user of `repscope sprites` and `mmvae evaluate` sees: progress of the long steps, a start-up that
loads only what the command uses, the texture bank cached on disk, help that lists only real options."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
from typer.testing import CliRunner

from repscope.cli import app
from repscope.data import dsprites
from repscope.data.multimodal import textures
from repscope.data.multimodal.textures import (
    BANK_ARRAYS,
    TextureBank,
    bank_cache_path,
    cached_procedural_bank,
    read_bank_cache,
)
from repscope.studies.multimodal.evaluate import StepProgress

PER_FAMILY = 2  # 12 textures: a bank of the real recipe, drawn in a fraction of a second


@pytest.fixture
def lines_mode(monkeypatch):
    monkeypatch.setenv("REPSCOPE_PROGRESS", "lines")
    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0")


def counted(lines, prefix):
    """The ``n`` of each ``prefix: n/m ...`` line that is not the final ``done`` one."""
    return [
        int(line[len(prefix) + 2 :].split("/")[0]) for line in lines if line.startswith(prefix) and "done" not in line
    ]


# --------------------------------------------------------------------------------------------
# the texture bank's disk cache


def same_bank(a, b):
    return all(np.array_equal(getattr(a, name), getattr(b, name)) for name in BANK_ARRAYS) and (
        a.family_names == b.family_names
    )


def test_a_second_build_reads_the_cache_and_gives_the_same_textures(tmp_path, monkeypatch):
    drawn = TextureBank(3, PER_FAMILY)
    first = cached_procedural_bank(3, PER_FAMILY, home=tmp_path)
    path = bank_cache_path(3, PER_FAMILY, home=tmp_path)
    assert path == tmp_path / "textures" / f"procedural-v{textures.BANK_CACHE_VERSION}-seed3-per{PER_FAMILY}.npz"
    assert path.is_file() and same_bank(first, drawn)
    stamp = path.stat().st_mtime_ns

    def no_drawing(*args, **kwargs):
        raise AssertionError("the bank was drawn again instead of read from its cache")

    monkeypatch.setattr(textures, "procedural_photo", no_drawing)
    second = cached_procedural_bank(3, PER_FAMILY, home=tmp_path)
    assert same_bank(second, drawn) and second.shape.dtype == np.float32 and len(second) == 6 * PER_FAMILY
    assert path.stat().st_mtime_ns == stamp  # read, not written again
    # another seed is another file, drawn (and differing) rather than served from the first one's
    monkeypatch.undo()
    other = cached_procedural_bank(4, PER_FAMILY, home=tmp_path)
    assert not np.array_equal(other.shape, drawn.shape) and bank_cache_path(4, PER_FAMILY, home=tmp_path).is_file()


def test_the_process_wide_bank_comes_from_the_disk_cache_under_repscope_home(tmp_path, monkeypatch):
    monkeypatch.setenv("REPSCOPE_HOME", str(tmp_path))
    textures.texture_bank.cache_clear()
    try:
        bank = textures.texture_bank(7, PER_FAMILY)
        assert bank_cache_path(7, PER_FAMILY).is_file() and str(bank_cache_path(7, PER_FAMILY)).startswith(
            str(tmp_path)
        )
        assert same_bank(bank, TextureBank(7, PER_FAMILY))
    finally:
        textures.texture_bank.cache_clear()


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "not a zip", "other key", "altered textures"])
def test_a_damaged_cache_file_is_drawn_again_not_trusted(tmp_path, damage):
    drawn = TextureBank(1, PER_FAMILY)
    cached_procedural_bank(1, PER_FAMILY, home=tmp_path)
    path = bank_cache_path(1, PER_FAMILY, home=tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped byte":
        # a byte inside the stored `dark` textures (its CRC or the stored digest no longer matches)
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("dark.npy")
        data[info.header_offset + 200 + 30 + len(info.filename)] ^= 0xFF
    elif damage == "not a zip":
        data = bytearray(b"not a texture bank")
    else:  # a well-formed file: of another version, or with textures that are not the ones its digest names
        with np.load(path) as archive:
            meta = json.loads(bytes(archive["meta"]).decode())
        arrays = {name: getattr(drawn, name).copy() for name in BANK_ARRAYS}
        if damage == "other key":
            meta["key"]["version"] = textures.BANK_CACHE_VERSION + 1
        else:
            arrays["dark"][3, 10, 10] ^= 0xFF
        with open(path, "wb") as handle:
            np.savez(handle, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
        data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data))
    assert read_bank_cache(path, 1, PER_FAMILY) is None
    rebuilt = cached_procedural_bank(1, PER_FAMILY, home=tmp_path)
    assert same_bank(rebuilt, drawn)
    # and the file was replaced by a good one
    assert read_bank_cache(path, 1, PER_FAMILY) is not None


def test_a_bank_of_the_wrong_size_in_a_cache_file_is_refused(tmp_path):
    small = TextureBank(0, 1)
    textures.write_bank_cache(tmp_path / "bank.npz", small)
    assert read_bank_cache(tmp_path / "bank.npz", 0, 1) is not None
    assert read_bank_cache(tmp_path / "bank.npz", 0, 2) is None  # a key of per_family 1 is not per_family 2


# --------------------------------------------------------------------------------------------
# dSprites in the original .npz layout: both long steps are counted


def test_writing_the_npz_layout_counts_drawing_then_compressing(tmp_path, lines_mode, capsys):
    index = np.random.default_rng(2).choice(dsprites.TOTAL, size=50, replace=False)
    path = dsprites.write_npz(tmp_path / "small.npz", index, batch_size=16, progress=True)
    lines = capsys.readouterr().err.splitlines()
    drawing = "drawing 50 dSprites images"
    assert counted(lines, drawing) == [16, 32, 48]  # n of m as each batch lands, never 0/50
    assert f"{drawing}: 50/50 done in" in "\n".join(lines)
    compressing = "compressing 50 dSprites images into small.npz"
    assert any(line.startswith(f"{compressing}: 50/50 done in") for line in lines)
    assert lines.index(next(line for line in lines if line.startswith(compressing))) > lines.index(
        next(line for line in lines if line.startswith(drawing))
    )
    # the file np.savez_compressed would write: the same members, deflated, read back by numpy
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == sorted(
            ["imgs.npy", "latents_values.npy", "latents_classes.npy", "metadata.npy"]
        )
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}
    stored = dsprites.read_npz(path)
    classes = dsprites.index_to_classes(index)
    assert np.array_equal(stored["latents_classes"], classes)
    assert np.array_equal(stored["imgs"], dsprites.render(classes))
    with np.load(path, allow_pickle=True) as archive:
        assert archive["metadata"].item()["latents_names"] == dsprites.FACTOR_NAMES


def test_the_npz_layout_is_silent_unless_asked(tmp_path, lines_mode, capsys):
    dsprites.write_npz(tmp_path / "quiet.npz", np.arange(5))
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------------------------
# start-up: `sprites generate` loads neither torch, Lightning nor matplotlib


def test_generating_sprites_imports_neither_torch_nor_lightning_nor_matplotlib(tmp_path):
    script = (
        "import sys\n"
        "from repscope.cli.sprites import app\n"
        "from repscope.studies.multimodal.dataset_commands import generate_cdsprites, generate_dsprites\n"
        f"generate_cdsprites({str(tmp_path / 'c')!r}, 1, 4)\n"
        f"generate_dsprites({str(tmp_path / 'd.npz')!r}, 4)\n"
        "print(sorted(m for m in ('torch', 'lightning', 'matplotlib', 'sklearn') if m in sys.modules))\n"
    )
    env = {"REPSCOPE_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "c" / "dataset.json").is_file() and (tmp_path / "d.npz").is_file()


# --------------------------------------------------------------------------------------------
# help lists only real options


def test_sprites_evaluate_help_names_no_quick_option_and_refuses_one(tmp_path):
    runner = CliRunner()
    shown = runner.invoke(app, ["sprites", "evaluate", "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "--level" in shown.output
    assert "--quick" not in shown.output and "quick" not in shown.output.lower()
    refused = runner.invoke(app, ["sprites", "evaluate", str(tmp_path), "--level", "1", "--quick"])
    assert refused.exit_code != 0


# --------------------------------------------------------------------------------------------
# mmvae evaluate: a long step without a count of its own still shows progress lines


def test_a_long_evaluation_step_keeps_reporting_while_it_runs(monkeypatch, capsys):
    from repscope.progress import progress_bar

    monkeypatch.setenv("REPSCOPE_PROGRESS", "lines")
    monkeypatch.setenv("REPSCOPE_PROGRESS_SECONDS", "0.1")
    with progress_bar("evaluating mmvae on level 1", total=2) as update:
        steps = StepProgress(update, "evaluating mmvae", 2)
        steps.start("tsne", "t-SNE of 10000 latents")
        time.sleep(0.65)  # a step that calls nothing back (sklearn's t-SNE)
        steps.finish()
        steps.start("report", "writing the report")
        steps.finish()
    lines = capsys.readouterr().err.splitlines()
    during = [line for line in lines if line.startswith("evaluating mmvae: t-SNE of 10000 latents (step 1 of 2): 0/2")]
    assert len(during) >= 3  # repeated while the step ran, each with its elapsed time
    elapsed = [float(line.split(", ")[1].split(" s")[0]) for line in during]
    assert elapsed == sorted(elapsed) and elapsed[-1] > elapsed[0]
    assert lines[-1].startswith("evaluating mmvae: writing the report (step 2 of 2): 2/2 done in")
    assert set(steps.seconds) == {"tsne", "report"} and steps.seconds["tsne"] >= 0.6


def test_the_evaluation_page_labels_its_headline_numbers_and_keeps_the_settings_apart():
    import pandas as pd

    from repscope.report.multimodal_report import evaluation_report

    summary = {
        "model": "mmvae",
        "level": 2,
        "run": "runs/x",
        "n": 10,
        "seed": 3,
        "k": 4,
        "seconds": 12.5,
        "text_to_image_strict": 12.5,
        "joint_features_toolkit": 1.25,
        "linear_size_text": 0.75,
        "linear_size_chance": 0.5,
        "log_likelihood_joint": -101.0,
    }
    table = pd.DataFrame({"direction": ["joint"], "rules": ["ours"], "strict_percent": [12.5], "size_percent": [50.0]})
    page = evaluation_report(summary, {"coherency": table}, {}).render()
    headline = page[page.index("Headline numbers") : page.index(">Settings<")]
    settings = page[page.index(">Settings<") : page.index("Cross- and joint-coherency")]
    for label in (
        "Text \u2192 image coherency, Strict (%)",
        "Joint coherency, Features (right attributes), toolkit",
        "Linear probe accuracy, size (posterior of text)",
        "Linear probe chance, size",
        "Log-likelihood, joint (nats per example)",
    ):
        assert label in headline, label
    for raw in ("text_to_image_strict", "joint_features_toolkit", "linear_size_text", "log_likelihood_joint"):
        assert raw not in page, raw
    assert "importance samples K" in settings and "test samples per direction" in settings
    assert "importance samples K" not in headline and "seconds" not in headline
    coherency = page[page.index("Cross- and joint-coherency") :]
    assert "Strict (%)" in coherency and "size (%)" in coherency and "strict_percent" not in coherency


def test_a_bank_drawn_by_an_edited_recipe_is_not_read(tmp_path, monkeypatch):
    cached_procedural_bank(2, PER_FAMILY, home=tmp_path)
    path = bank_cache_path(2, PER_FAMILY, home=tmp_path)
    assert read_bank_cache(path, 2, PER_FAMILY) is not None
    monkeypatch.setattr(textures, "_source_digest", lambda: "0" * 64)  # textures.py changed since
    assert read_bank_cache(path, 2, PER_FAMILY) is None

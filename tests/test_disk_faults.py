"""Full disks, read-only destinations and names too long: one ``repscope: error:`` line naming the path
and what is wrong (with the space the output needs where it is known), exit status 1, nothing half-written
left behind and an existing output kept byte for byte.

The tests run as root, for whom a read-only folder stays writable, and on disks with room: each fault is
raised where the system would raise it (``os.posix_fallocate``, ``tempfile.mkstemp``, a checkpoint save,
``shutil.disk_usage``) by monkeypatching.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from repscope import fileio
from repscope.outputs import output_target

NO_SPACE = "No space left on device"


def one_error_line(code: int, err: str) -> str:
    """The single line a refused command prints (asserted: status 1, one line, no traceback)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1, err
    assert len(lines) == 1 and lines[0].startswith("repscope: error: "), err
    return lines[0]


def names_in(folder: Path) -> list[str]:
    """Every name in ``folder``, hidden ones included (a ``.partial`` or ``.tmp-`` folder left behind)."""
    return sorted(path.name for path in folder.iterdir())


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def old_dataset(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """A complete 4-image CdSprites+ set written by the CLI, and its bytes (copied by the tests that need it)."""
    from repscope.cli import main

    folder = tmp_path_factory.mktemp("old") / "set"
    with pytest.raises(SystemExit) as done:
        main(["sprites", "generate", "--level", "2", "--n", "4", "--out", str(folder)])
    assert done.value.code in (0, None)
    return folder, tree_bytes(folder)


def no_fallocate_space(monkeypatch) -> list[int]:
    """``os.posix_fallocate`` refusing as a full disk does; returns the sizes it was asked for."""
    asked: list[int] = []

    def refuse(fd, offset, length):
        asked.append(length)
        raise OSError(errno.ENOSPC, NO_SPACE)

    monkeypatch.setattr(os, "posix_fallocate", refuse, raising=False)
    return asked


# --------------------------------------------------------------------------------------------
# sprites generate


def test_a_set_larger_than_the_disk_is_refused_before_any_sample(run_cli, tmp_path):
    code, _, err = run_cli(["sprites", "generate", "--n", "1000000000000", "--out", str(tmp_path / "big")])
    line = one_error_line(code, err)
    # 10**12 images of 64x64x3 bytes: the images alone, and the free space of the disk at --out
    assert "a dataset of 1,000,000,000,000 images of 64x64x3 needs 12,288,000,000,000,000 bytes (12.3 PB)" in line
    assert re.search(rf"the disk at {re.escape(str(tmp_path))} has [\d,]+ bytes \([\d.]+ [kMGTP]?B\) free$", line)
    assert names_in(tmp_path) == []


def test_a_full_disk_while_generating_is_one_line_and_leaves_nothing(run_cli, tmp_path, monkeypatch):
    asked = no_fallocate_space(monkeypatch)
    out = tmp_path / "set"
    code, _, err = run_cli(["sprites", "generate", "--level", "2", "--n", "5", "--out", str(out)])
    line = one_error_line(code, err)
    # the images' blocks are taken before the memory map is written (no SIGBUS): 5 x 12,288 bytes + the header
    assert asked == [5 * 64 * 64 * 3 + 128]
    assert line.startswith(f"repscope: error: {out}: cannot write ({NO_SPACE}; the output needs 61.4 kB, ")
    assert names_in(tmp_path) == []  # no hidden .set.partial-<pid> folder keeps the disk full


def test_a_full_disk_with_overwrite_keeps_the_old_set_byte_for_byte(run_cli, tmp_path, monkeypatch, old_dataset):
    source, old_bytes = old_dataset
    out = tmp_path / "set"
    shutil.copytree(source, out)
    no_fallocate_space(monkeypatch)
    code, _, err = run_cli(["sprites", "generate", "--level", "2", "--n", "5", "--out", str(out), "--overwrite"])
    assert NO_SPACE in one_error_line(code, err)
    assert names_in(tmp_path) == ["set"]  # no .tmp-set.* replacement left beside it
    assert tree_bytes(out) == old_bytes


def test_a_full_disk_after_the_images_removes_the_partial_folder(run_cli, tmp_path, monkeypatch):
    """The factors or dataset.json are written after the images' blocks were taken: the disk can still fill."""
    from repscope.data import store

    def no_room(path, obj):
        raise OSError(errno.ENOSPC, NO_SPACE, str(path))

    monkeypatch.setattr(store, "write_json_atomic", no_room)
    out = tmp_path / "set"
    code, _, err = run_cli(["sprites", "generate", "--level", "2", "--n", "5", "--out", str(out)])
    line = one_error_line(code, err)
    assert line.startswith(f"repscope: error: {out}: cannot write ({NO_SPACE}; the output needs 61.4 kB, ")
    assert names_in(tmp_path) == []


def test_without_fallocate_the_free_space_decides_and_a_sparse_file_counts_as_empty(tmp_path, monkeypatch):
    """Where the file system cannot allocate ahead, the blocks a sparse file lacks are checked against the
    free space (its apparent size is all holes)."""
    sparse = tmp_path / "images.npy"
    with open(sparse, "wb") as handle:
        handle.truncate(10_000_000)

    def unsupported(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "posix_fallocate", unsupported, raising=False)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: SimpleNamespace(total=10**9, used=0, free=1_000_000))
    with pytest.raises(fileio.OutputWriteError) as refused:
        fileio.reserve_space(sparse, 10_000_000, name=tmp_path / "set")
    needed = 10_000_000 - sparse.stat().st_blocks * 512
    assert str(refused.value) == (
        f"{tmp_path / 'set'}: needs {needed:,} bytes ({fileio.format_bytes(needed)}); "
        f"the disk at {tmp_path} has 1,000,000 bytes (1.0 MB) free"
    )
    fileio.reserve_space(sparse, 900_000)  # fits: nothing raised


# --------------------------------------------------------------------------------------------
# read-only destinations and names too long


def read_only_below(monkeypatch, folder: Path) -> None:
    """``tempfile.mkstemp`` and ``mkdir`` refusing in ``folder`` as a read-only file system does."""
    make_temp, make_dir = tempfile.mkstemp, os.mkdir

    def mkstemp(*args, **kwargs):
        if Path(kwargs.get("dir") or ".").resolve().is_relative_to(folder):
            raise OSError(errno.EROFS, "Read-only file system", kwargs.get("dir"))
        return make_temp(*args, **kwargs)

    def mkdir(path, *args, **kwargs):
        if Path(os.path.abspath(path)).is_relative_to(folder):
            raise OSError(errno.EROFS, "Read-only file system", os.fspath(path))
        return make_dir(path, *args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "mkdir", mkdir)


def test_a_read_only_out_is_refused_before_any_work(run_cli, tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    read_only_below(monkeypatch, folder)
    out = folder / "set"
    code, _, err = run_cli(["sprites", "generate", "--level", "2", "--n", "5", "--out", str(out)])
    assert one_error_line(code, err) == f"repscope: error: --out {out}: cannot write ({folder}: Read-only file system)"
    assert names_in(folder) == []


def test_a_read_only_out_of_train_is_refused_before_the_data_is_read(run_cli, tmp_path, monkeypatch):
    from repscope.train import fitting as train_run

    config = tmp_path / "train.yaml"
    config.write_text(yaml.safe_dump(TINY_TRAIN))
    folder = tmp_path / "ro"
    folder.mkdir()
    read_only_below(monkeypatch, folder)

    def never(*args, **kwargs):
        raise AssertionError("the data were loaded before the output was checked")

    monkeypatch.setattr(train_run, "load_data", never)
    code, _, err = run_cli(["train", str(config), "--out", str(folder / "run")])
    assert one_error_line(code, err) == (
        f"repscope: error: --out {folder / 'run'}: cannot write ({folder}: Read-only file system)"
    )
    assert names_in(folder) == []


def test_a_name_longer_than_the_file_system_allows_is_one_line(run_cli, tmp_path):
    out = tmp_path / ("x" * 300)
    code, _, err = run_cli(["sprites", "generate", "--level", "2", "--n", "5", "--out", str(out)])
    line = one_error_line(code, err)
    assert re.fullmatch(
        rf"repscope: error: --out {re.escape(str(out))}: cannot write \(File name too long: a name of 300 bytes, "
        r"the file system allows \d+\)",
        line,
    )
    assert names_in(tmp_path) == []


def test_a_refusal_no_writer_named_is_still_one_line(run_cli, tmp_path, monkeypatch):
    """The CLI's last resort: a full disk raised where no writer caught it."""
    from repscope.studies.multimodal import dataset_commands as commands

    culprit = tmp_path / "set" / "images.npy"

    def fills_the_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, NO_SPACE, str(culprit))

    monkeypatch.setattr(commands, "generate_cdsprites", fills_the_disk)
    code, _, err = run_cli(["sprites", "generate", "--level", "2", "--n", "5", "--out", str(tmp_path / "set")])
    line = one_error_line(code, err)
    assert line.startswith(f"repscope: error: {culprit}: {NO_SPACE}; ")
    assert re.search(r"[\d.]+ [kMGTP]?B free at ", line)


# --------------------------------------------------------------------------------------------
# writers


def test_atomic_write_names_the_file_when_the_disk_fills_while_writing(tmp_path):
    target = tmp_path / "table.csv"
    target.write_text("old")
    with pytest.raises(fileio.OutputWriteError, match=rf"^{re.escape(str(target))}: cannot write \({NO_SPACE}; "):
        with fileio.atomic_write(target, "w") as handle:
            handle.write("new")
            raise OSError(errno.ENOSPC, NO_SPACE)
    assert target.read_text() == "old"
    assert names_in(tmp_path) == ["table.csv"]


def test_a_full_disk_in_a_new_output_removes_it_but_never_a_resumed_one(tmp_path):
    new = tmp_path / "new"
    with pytest.raises(fileio.OutputWriteError) as refused:
        with output_target(new, kind="directory") as target:
            (target / "checkpoints").mkdir(parents=True)
            (target / "checkpoints" / "last.ckpt").write_bytes(b"epoch 1")
            raise fileio.output_error(target / "checkpoints" / "last.ckpt", OSError(errno.ENOSPC, NO_SPACE))
    assert str(refused.value).endswith(f"; --out {new}: the incomplete output was removed")
    assert not new.exists()

    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    (resumed / "checkpoints" / "last.ckpt").write_bytes(b"epoch 3")
    before = tree_bytes(resumed)
    with pytest.raises(fileio.OutputWriteError) as refused:
        with output_target(resumed, resume=True, kind="directory") as target:
            raise fileio.output_error(target / "checkpoints" / "last.ckpt", OSError(errno.ENOSPC, NO_SPACE))
    assert "removed" not in str(refused.value)
    assert tree_bytes(resumed) == before  # the epochs already trained stay for --resume


class _FullDiskTrainer:
    """What save_checkpoint_atomically uses; the save fails as Lightning's does on a full disk (the copy from
    its temporary file to the checkpoint's temporary name)."""

    is_global_zero = True
    strategy = SimpleNamespace(barrier=lambda: None)

    def save_checkpoint(self, path, weights_only=False):
        Path(path).write_bytes(b"PK\x03\x04 half")
        raise OSError(errno.ENOSPC, NO_SPACE, "/tmp/tmpabc", str(path))


def test_a_checkpoint_save_on_a_full_disk_names_the_checkpoint(tmp_path):
    from repscope.train.fitting import save_checkpoint_atomically

    last = tmp_path / "checkpoints" / "last.ckpt"
    last.parent.mkdir()
    last.write_bytes(b"epoch 4 complete")
    with pytest.raises(fileio.OutputWriteError) as refused:
        save_checkpoint_atomically(_FullDiskTrainer(), last)
    assert str(refused.value).startswith(f"{last}: cannot write ({NO_SPACE}; ")
    assert last.read_bytes() == b"epoch 4 complete"
    assert names_in(last.parent) == ["last.ckpt"]


TINY_TRAIN = {
    "model": {"name": "lenet5", "params": {"lr": 1e-3}},
    "data": {
        "name": "digits",
        "params": {"source": "mnist-sample", "train_size": 60, "test_size": 20, "target": "label"},
    },
    "trainer": {"max_epochs": 1},
    "batch_size": 30,
    "seed": 0,
}


@pytest.mark.parametrize("existing", [False, True], ids=["new-run", "overwrite"])
def test_a_full_disk_during_training_leaves_no_half_run_and_keeps_an_old_one(run_cli, tmp_path, monkeypatch, existing):
    import lightning.pytorch as pl

    def full_disk(self, path, weights_only=False):
        raise OSError(errno.ENOSPC, NO_SPACE, "/tmp/tmpabc", str(path))

    monkeypatch.setattr(pl.Trainer, "save_checkpoint", full_disk)
    config = tmp_path / "train.yaml"
    config.write_text(yaml.safe_dump(TINY_TRAIN))
    runs = tmp_path / "runs"
    out = runs / "run"
    if existing:
        (out / "checkpoints").mkdir(parents=True)
        (out / "config.yaml").write_text("seed: 7\n")
        (out / "checkpoints" / "final.ckpt").write_bytes(b"the old weights")
    before = tree_bytes(out) if existing else None
    code, _, err = run_cli(["train", str(config), "--out", str(out)] + (["--overwrite"] if existing else []))
    line = one_error_line(code, err)
    assert f"last.ckpt: cannot write ({NO_SPACE}; " in line
    if existing:
        assert tree_bytes(out) == before and names_in(runs) == ["run"]
    else:
        assert line.endswith(f"; --out {out}: the incomplete output was removed")
        assert names_in(runs) == []


# --------------------------------------------------------------------------------------------
# size options against the memory and the disk


def test_a_morpho_build_of_too_many_copies_is_refused_before_any_digit(run_cli, tmp_path):
    out = tmp_path / "build"
    code, _, err = run_cli(["morpho", "build", "--out", str(out), "--sets", "plain", "--copies", "1000000000"])
    line = one_error_line(code, err)
    # the shipped sample's 4,000 training digits a billion times over, and its 1,000 test digits once, 28x28
    digits = 4000 * 10**9 + 1000
    assert line.startswith(
        f"repscope: error: --copies 1000000000 --test-copies 1: a build of {digits:,} digits needs at least "
        f"{digits * 784:,} bytes ("
    )
    assert re.search(r"in memory; [\d,]+ bytes \([\d.]+ [kMGTP]?B\) are available$", line)
    assert names_in(tmp_path) == []


def test_candle_pairs_beyond_the_memory_are_refused_before_the_folder_is_read(run_cli, tmp_path):
    folder = tmp_path / "candle"
    folder.mkdir()
    out = tmp_path / "pairs.csv"
    code, _, err = run_cli(["candle", "pairs", str(folder), "--differ", "color", "--n", str(10**12), "--out", str(out)])
    line = one_error_line(code, err)
    # 14 columns of references per pair (two files, two names per factor): 112 bytes at the least
    assert line.startswith("repscope: error: --n: 1,000,000,000,000 pairs needs at least 112,000,000,000,000 bytes")
    assert names_in(tmp_path) == ["candle"]


def test_a_generated_split_beyond_the_memory_is_refused_naming_its_rows(run_cli, tmp_path):
    # CdSprites+ draws its images on demand: only the splits' row numbers would be held, 16 bytes a row
    out = tmp_path / "mmvae"
    code, _, err = run_cli(["mmvae", "train", "--set", "data.train_size=1000000000000", "--out", str(out)])
    line = one_error_line(code, err)
    rows = 10**12 + 1000 + 1000  # the shipped config's 1,000 validation and 1,000 test rows besides
    assert line.startswith(
        "repscope: error: data: cdsprites (train 1,000,000,000,000, val 1,000, test 1,000 rows) needs at least "
        f"{16 * rows:,} bytes ("
    )
    assert line.endswith("are available")
    assert names_in(tmp_path) == []


def test_invariance_steps_whose_variance_matrix_exceeds_the_memory_are_refused_before_listing_them():
    from repscope.data.invariance.transforms import rotation_family
    from repscope.errors import InvalidArgumentError

    steps = 10**9 + 1  # a billion transformations: 8 * steps**2 bytes for each position's matrix
    with pytest.raises(InvalidArgumentError) as info:
        rotation_family(15.0, steps)
    assert str(info.value).startswith(
        "steps: 1,000,000,001 transformations (a variance matrix of 1,000,000,001^2) needs at least "
        f"{8 * steps**2:,} bytes"
    )
    assert len(rotation_family(15.0, 5).values) == 5  # a count that fits is listed as before

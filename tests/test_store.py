"""Sprite dataset directories and the reference toolkit's traindata.h5 layout: round trips and refusals."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pandas as pd
import pytest

from repscope.data import store
from repscope.data.dsprites import FACTOR_NAMES, FACTOR_SIZES
from repscope.data.multimodal import h5
from repscope.data.multimodal.attributes import ATTRIBUTES, compose_captions
from repscope.errors import (
    ChecksumError,
    DataFormatError,
    InvalidArgumentError,
    OutputExistsError,
    SourceNotFoundError,
)

N = 12
LEVEL = 5


def make_cdsprites(n: int = N, level: int = LEVEL, seed: int = 0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 64, 64, 3), dtype=np.uint8)
    sizes = [3, 2, 5, 4, 2][:level]
    table = np.stack([rng.integers(0, s, size=n) for s in sizes], axis=1).astype(np.int64)
    captions = compose_captions(level, table)
    factors = pd.DataFrame(table, columns=list(ATTRIBUTES[:level]))
    factors["rotation"] = rng.uniform(0, 360, size=n).round(6)  # a nuisance factor
    return images, captions, table, factors


def chunks(images, captions, factors, size: int = 5):
    for start in range(0, len(images), size):
        stop = start + size
        yield images[start:stop], None if captions is None else captions[start:stop], factors.iloc[start:stop]


def write_cd(out, images, captions, factors, **kwargs):
    options = dict(
        generator="cdsprites",
        level=LEVEL,
        seed=7,
        params={"count": len(images), "note": "tiny"},
        image_shape=(64, 64, 3),
    )
    options.update(kwargs)
    return store.write_dataset(out, chunks(images, captions, factors), len(images), **options)


@pytest.fixture
def cd_data():
    return make_cdsprites()


@pytest.fixture
def cd_dir(tmp_path, cd_data):
    images, captions, _, factors = cd_data
    return write_cd(tmp_path / "cd", images, captions, factors)


def leftovers(directory):
    return [p.name for p in directory.iterdir() if p.name.startswith(".")]


def test_write_read_round_trip(tmp_path, cd_data):
    images, captions, table, factors = cd_data
    done = []
    out = write_cd(tmp_path / "cd", images, captions, factors, progress=done.append)
    assert out == tmp_path / "cd"
    assert done == [5, 10, 12]
    assert sorted(p.name for p in out.iterdir()) == ["captions.txt", "dataset.json", "factors.csv", "images.npy"]
    assert leftovers(tmp_path) == []

    data = store.read_dataset(out, verify=True)
    assert len(data) == N
    np.testing.assert_array_equal(data.images, images)
    assert data.captions == captions
    table_read = data.attribute_table()
    assert table_read.dtype == np.int64
    np.testing.assert_array_equal(table_read, table)
    assert list(data.factors.columns) == list(ATTRIBUTES) + ["rotation"]
    np.testing.assert_allclose(data.factors["rotation"].to_numpy(), factors["rotation"].to_numpy())
    assert data.generator == "cdsprites" and data.level == LEVEL

    meta = json.loads((out / "dataset.json").read_text())
    assert meta == data.meta
    assert meta["format_version"] == store.FORMAT_VERSION == 1
    assert meta["generator"] == "cdsprites" and meta["level"] == LEVEL
    assert meta["count"] == N and meta["image_shape"] == [64, 64, 3] and meta["seed"] == 7
    assert meta["params"] == {"count": N, "note": "tiny"}
    assert set(meta["files"]) == {"images.npy", "captions.txt", "factors.csv"}
    assert all(len(digest) == 64 for digest in meta["files"].values())
    assert meta["created_by"].startswith("repscope ")
    lines = (out / "captions.txt").read_text(encoding="utf-8").split("\n")
    assert lines[:-1] == captions and lines[-1] == ""


def test_images_are_memory_mapped_read_only(cd_dir):
    data = store.read_dataset(cd_dir)
    assert isinstance(data.images, np.memmap)
    assert data.images.dtype == np.uint8 and data.images.shape == (N, 64, 64, 3)
    with pytest.raises(ValueError):
        data.images[0, 0, 0, 0] = 1


def test_refuses_existing_output_and_leaves_it_untouched(tmp_path, cd_data):
    images, captions, _, factors = cd_data
    out = tmp_path / "cd"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    consumed = []

    def watched():
        for batch in chunks(images, captions, factors):
            consumed.append(1)
            yield batch

    with pytest.raises(OutputExistsError, match="cd"):
        store.write_dataset(
            out, watched(), N, generator="cdsprites", level=LEVEL, seed=0, params={}, image_shape=(64, 64, 3)
        )
    assert consumed == []  # refused before generating anything
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "precious"
    assert leftovers(tmp_path) == []

    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(OutputExistsError):
        write_cd(a_file, images, captions, factors)
    assert a_file.read_text() == "x"


def test_empty_existing_directory_is_accepted(tmp_path, cd_data):
    images, captions, _, factors = cd_data
    out = tmp_path / "empty"
    out.mkdir()
    write_cd(out, images, captions, factors)
    assert len(store.read_dataset(out)) == N


def test_interrupted_write_leaves_nothing(tmp_path, cd_data):
    images, captions, _, factors = cd_data

    def failing():
        yield images[:5], captions[:5], factors.iloc[:5]
        raise KeyboardInterrupt  # as a user pressing ctrl-c midway

    out = tmp_path / "cd"
    with pytest.raises(KeyboardInterrupt):
        store.write_dataset(
            out, failing(), N, generator="cdsprites", level=LEVEL, seed=0, params={}, image_shape=(64, 64, 3)
        )
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_short_batches_leave_nothing(tmp_path, cd_data):
    images, captions, _, factors = cd_data
    with pytest.raises(InvalidArgumentError, match="count=13"):
        store.write_dataset(
            tmp_path / "cd",
            chunks(images, captions, factors),
            N + 1,
            generator="cdsprites",
            level=LEVEL,
            seed=0,
            params={},
            image_shape=(64, 64, 3),
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "break_chunk, message",
    [
        (lambda im, cap, fac: (im.astype(np.float32), cap, fac), "uint8"),
        (lambda im, cap, fac: (im[:, :32], cap, fac), "shape"),
        (lambda im, cap, fac: (im, cap[:-1], fac), "4 captions for 5 images"),
        (lambda im, cap, fac: (im, None, fac), "captions"),
        (lambda im, cap, fac: (im, cap, fac.iloc[:-1]), "4 rows for 5 images"),
        (lambda im, cap, fac: (im, cap, fac.drop(columns="colour")), "colour"),
        (lambda im, cap, fac: (im, cap, fac.assign(shape=7)), "column shape must hold classes 0-2"),
    ],
)
def test_bad_chunks_are_clear_errors(tmp_path, cd_data, break_chunk, message):
    images, captions, _, factors = cd_data
    batches = [
        (images[:5], captions[:5], factors.iloc[:5]),
        break_chunk(images[5:10], captions[5:10], factors.iloc[5:10]),
    ]
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        store.write_dataset(
            tmp_path / "cd", batches, 10, generator="cdsprites", level=LEVEL, seed=0, params={}, image_shape=(64, 64, 3)
        )
    assert "batches[1]" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments_fail_before_writing(tmp_path, cd_data):
    images, captions, _, factors = cd_data
    with pytest.raises(InvalidArgumentError, match="params"):
        write_cd(tmp_path / "cd", images, captions, factors, params={"f": object()})
    with pytest.raises(InvalidArgumentError, match="level"):
        write_cd(tmp_path / "cd", images, captions, factors, level=7)
    with pytest.raises(InvalidArgumentError, match="generator"):
        write_cd(tmp_path / "cd", images, captions, factors, generator="mnist")
    assert list(tmp_path.iterdir()) == []


def test_checksum_verification_catches_flipped_byte(cd_dir):
    images_file = cd_dir / "images.npy"
    raw = bytearray(images_file.read_bytes())
    raw[-100] ^= 0xFF
    images_file.write_bytes(bytes(raw))
    store.read_dataset(cd_dir, verify=False)  # shapes still agree: only verification notices
    with pytest.raises(ChecksumError, match="images.npy"):
        store.read_dataset(cd_dir, verify=True)


def test_truncated_images_is_a_format_error(cd_dir):
    images_file = cd_dir / "images.npy"
    raw = images_file.read_bytes()
    images_file.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataFormatError, match="images.npy"):
        store.read_dataset(cd_dir)


def test_missing_directory_or_meta(tmp_path, cd_dir):
    with pytest.raises(SourceNotFoundError):
        store.read_dataset(tmp_path / "nowhere")
    (cd_dir / "dataset.json").unlink()
    with pytest.raises(SourceNotFoundError, match="dataset.json"):
        store.read_dataset(cd_dir)


def test_bad_meta_and_disagreeing_files(cd_dir):
    meta_file = cd_dir / "dataset.json"
    meta = json.loads(meta_file.read_text())

    meta_file.write_text("{not json")
    with pytest.raises(DataFormatError, match="dataset.json.*JSON"):
        store.read_dataset(cd_dir)

    meta_file.write_text(json.dumps({**meta, "format_version": 99}))
    with pytest.raises(DataFormatError, match="format_version 99"):
        store.read_dataset(cd_dir)

    meta_file.write_text(json.dumps({**meta, "image_shape": [32, 32, 3]}))
    with pytest.raises(DataFormatError, match="images.npy"):
        store.read_dataset(cd_dir)

    meta_file.write_text(json.dumps(meta))
    captions_file = cd_dir / "captions.txt"
    lines = captions_file.read_text().split("\n")
    captions_file.write_text("\n".join(lines[:-2]) + "\n")
    with pytest.raises(DataFormatError, match="captions.txt: 11 captions"):
        store.read_dataset(cd_dir)
    captions_file.write_text("\n".join(lines))

    factors_file = cd_dir / "factors.csv"
    factors = pd.read_csv(factors_file)
    factors.iloc[:-1].to_csv(factors_file, index=False)
    with pytest.raises(DataFormatError, match="factors.csv: 11 rows"):
        store.read_dataset(cd_dir)
    factors.drop(columns="position").to_csv(factors_file, index=False)
    with pytest.raises(DataFormatError, match="factors.csv.*position"):
        store.read_dataset(cd_dir)
    factors.assign(colour=9).to_csv(factors_file, index=False)
    with pytest.raises(DataFormatError, match="factors.csv.*colour"):
        store.read_dataset(cd_dir)
    factors.to_csv(factors_file, index=False)
    assert len(store.read_dataset(cd_dir)) == N


def test_export_h5_layout(tmp_path, cd_dir, cd_data):
    images, captions, _, _ = cd_data
    done = []
    out_h5 = h5.export_h5(cd_dir, tmp_path / "traindata.h5", chunk=5, progress=done.append)
    assert done == [5, 10, 12]
    assert leftovers(tmp_path) == []
    with h5py.File(out_h5, "r") as handle:
        image = handle["image"][:]
        assert image.dtype == np.uint8 and image.shape == (N, 64, 64, 3)
        np.testing.assert_array_equal(image[..., ::-1], images)  # stored BGR
        np.testing.assert_array_equal(image[..., 0], images[..., 2])
        assert len(handle["text"]) == N
        for i, caption in enumerate(captions):
            value = handle["text"][i]
            assert isinstance(value, bytes)
            assert value == caption.encode("ascii")


def test_export_h5_refuses_existing_file(tmp_path, cd_dir):
    target = tmp_path / "traindata.h5"
    target.write_bytes(b"old results")
    with pytest.raises(OutputExistsError, match="traindata.h5"):
        h5.export_h5(cd_dir, target)
    assert target.read_bytes() == b"old results"
    assert leftovers(tmp_path) == []


def test_export_import_round_trip(tmp_path, cd_dir, cd_data):
    images, captions, table, _ = cd_data
    h5_file = h5.export_h5(cd_dir, tmp_path / "traindata.h5", chunk=5)
    done = []
    out = h5.import_h5(h5_file, LEVEL, tmp_path / "imported", chunk=7, progress=done.append)
    assert done == [7, 12]
    data = store.read_dataset(out, verify=True)
    np.testing.assert_array_equal(data.images, images)
    assert data.captions == captions
    np.testing.assert_array_equal(data.attribute_table(), table)
    assert data.meta["seed"] is None
    assert data.meta["params"] == {"imported_from": str(h5_file)}
    # the image bytes are identical to the original directory's
    assert data.meta["files"]["images.npy"] == store.read_dataset(cd_dir).meta["files"]["images.npy"]


@pytest.mark.parametrize("text_dtype", ["S", "vlen-str"])
def test_import_accepts_fixed_bytes_and_str_text(tmp_path, text_dtype):
    images, captions, table, _ = make_cdsprites(n=6, level=3, seed=1)
    h5_file = tmp_path / "in.h5"
    with h5py.File(h5_file, "w") as handle:
        handle["image"] = images[..., ::-1]
        if text_dtype == "S":
            handle["text"] = np.array([c.encode() for c in captions], dtype="S")
        else:
            handle.create_dataset("text", data=captions, dtype=h5py.string_dtype(encoding="utf-8"))
    data = store.read_dataset(h5.import_h5(h5_file, 3, tmp_path / "out"))
    np.testing.assert_array_equal(data.images, images)
    assert data.captions == captions
    np.testing.assert_array_equal(data.attribute_table(), table)


def write_h5(path, images_bgr, captions):
    with h5py.File(path, "w") as handle:
        handle["image"] = images_bgr
        handle.create_dataset("text", data=[c.encode() for c in captions], dtype=h5py.string_dtype(encoding="ascii"))
    return path


@pytest.mark.parametrize("bad_caption", ["big red square at top left", "purple square wobbles"])
def test_import_bad_caption_names_row(tmp_path, bad_caption):
    images, captions, _, _ = make_cdsprites(n=N, level=2, seed=2)
    captions = list(captions)
    captions[9] = bad_caption  # a level-4 caption, then garbage, in a level-2 file
    h5_file = write_h5(tmp_path / "in.h5", images[..., ::-1], captions)
    with pytest.raises(DataFormatError) as caught:
        h5.import_h5(h5_file, 2, tmp_path / "out", chunk=4)
    message = str(caught.value)
    assert "in.h5" in message and "row 9" in message and bad_caption in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.h5"]


def test_import_bad_layout(tmp_path):
    images, captions, _, _ = make_cdsprites(n=4, level=1)
    missing = tmp_path / "missing.h5"
    with h5py.File(missing, "w") as handle:
        handle["image"] = images
    with pytest.raises(DataFormatError, match="missing.h5.*'text'"):
        h5.import_h5(missing, 1, tmp_path / "out1")

    wrong_shape = write_h5(tmp_path / "shape.h5", images[:, :32], captions)
    with pytest.raises(DataFormatError, match="shape.h5.*'image'"):
        h5.import_h5(wrong_shape, 1, tmp_path / "out2")

    wrong_dtype = write_h5(tmp_path / "dtype.h5", images.astype(np.float32), captions)
    with pytest.raises(DataFormatError, match="dtype.h5.*float32"):
        h5.import_h5(wrong_dtype, 1, tmp_path / "out3")

    not_h5 = tmp_path / "not.h5"
    not_h5.write_bytes(b"plain text")
    with pytest.raises(DataFormatError, match="not.h5"):
        h5.import_h5(not_h5, 1, tmp_path / "out4")

    with pytest.raises(SourceNotFoundError):
        h5.import_h5(tmp_path / "nowhere.h5", 1, tmp_path / "out5")
    assert not any(p.name.startswith("out") or p.name.startswith(".out") for p in tmp_path.iterdir())


def test_import_refuses_existing_output(tmp_path, cd_dir):
    h5_file = h5.export_h5(cd_dir, tmp_path / "traindata.h5")
    with pytest.raises(OutputExistsError):
        h5.import_h5(h5_file, LEVEL, cd_dir)
    assert len(store.read_dataset(cd_dir, verify=True)) == N


def test_dsprites_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    images = (rng.random((N, 64, 64)) < 0.3).astype(np.uint8)
    classes = np.stack([rng.integers(0, size, size=N) for size in FACTOR_SIZES], axis=1)
    factors = pd.DataFrame(classes, columns=list(FACTOR_NAMES))
    out = store.write_dataset(
        tmp_path / "ds",
        chunks(images, None, factors, size=4),
        N,
        generator="dsprites",
        level=None,
        seed=11,
        params={"subset": "random"},
        image_shape=(64, 64),
    )
    assert not (out / "captions.txt").exists()
    data = store.read_dataset(out, verify=True)
    assert isinstance(data.images, np.memmap)
    np.testing.assert_array_equal(data.images, images)
    assert data.captions is None and data.level is None and data.generator == "dsprites"
    assert list(data.factors.columns) == list(FACTOR_NAMES)
    np.testing.assert_array_equal(data.factors.to_numpy(), classes)
    assert data.meta["image_shape"] == [64, 64] and set(data.meta["files"]) == {"images.npy", "factors.csv"}
    with pytest.raises(InvalidArgumentError, match="cdsprites"):
        data.attribute_table()
    with pytest.raises(InvalidArgumentError, match="dsprites"):
        h5.export_h5(out, tmp_path / "ds.h5")
    assert not (tmp_path / "ds.h5").exists()


def test_dsprites_rejects_captions(tmp_path):
    images = np.zeros((3, 64, 64), dtype=np.uint8)
    factors = pd.DataFrame(np.zeros((3, 6), dtype=np.int64), columns=list(FACTOR_NAMES))
    with pytest.raises(InvalidArgumentError, match="no captions"):
        store.write_dataset(
            tmp_path / "ds",
            [(images, ["a", "b", "c"], factors)],
            3,
            generator="dsprites",
            level=None,
            seed=0,
            params={},
            image_shape=(64, 64),
        )
    assert list(tmp_path.iterdir()) == []


def test_a_changed_image_is_caught_by_default(cd_dir):
    images_file = cd_dir / "images.npy"
    raw = bytearray(images_file.read_bytes())
    raw[-100] ^= 0xFF  # the same size and shape: only the checksum can tell
    images_file.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match=r"images\.npy: sha256 .* does not match"):
        store.read_dataset(cd_dir)
    assert len(store.read_dataset(cd_dir, verify=False)) == N


def test_a_changed_caption_or_factor_file_is_caught_by_default(cd_dir):
    captions = cd_dir / "captions.txt"
    lines = captions.read_text().split("\n")
    lines[0], lines[1] = lines[1], lines[0]
    captions.write_text("\n".join(lines))
    with pytest.raises(ChecksumError, match="captions.txt"):
        store.read_dataset(cd_dir)


def test_large_images_are_checked_by_sampled_blocks(cd_dir, monkeypatch):
    monkeypatch.setattr(store, "VERIFY_FULL_BYTES", 0)  # every images.npy counts as large
    full_hashes = []
    original = store.sha256_file
    monkeypatch.setattr(store, "sha256_file", lambda f: full_hashes.append(f.name) or original(f))
    store.read_dataset(cd_dir)
    assert "images.npy" not in full_hashes and "factors.csv" in full_hashes
    images_file = cd_dir / "images.npy"
    raw = bytearray(images_file.read_bytes())
    raw[-1] ^= 0xFF  # the last block is always sampled
    images_file.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match="images.npy: sampled blocks"):
        store.read_dataset(cd_dir)
    with pytest.raises(ChecksumError, match="images.npy: sha256"):
        store.read_dataset(cd_dir, verify=True)


def test_appended_bytes_are_a_format_error(cd_dir):
    with open(cd_dir / "images.npy", "ab") as handle:
        handle.write(b"\0" * 10)
    with pytest.raises(DataFormatError, match="images.npy: .* bytes"):
        store.read_dataset(cd_dir, verify=False)


def test_verify_takes_auto_true_or_false(cd_dir):
    with pytest.raises(InvalidArgumentError, match="verify"):
        store.read_dataset(cd_dir, verify="yes")


def test_export_h5_file_has_the_umask_mode(tmp_path, cd_dir):
    import os

    old = os.umask(0o022)
    try:
        out_h5 = h5.export_h5(cd_dir, tmp_path / "traindata.h5", chunk=5)
        plain = tmp_path / "plain.txt"
        plain.write_text("x")
    finally:
        os.umask(old)
    assert oct(out_h5.stat().st_mode & 0o777) == oct(plain.stat().st_mode & 0o777) == oct(0o644)


def test_writing_under_a_file_is_one_error_naming_the_path(tmp_path, cd_dir, cd_data):
    from repscope.errors import RepscopeError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    images, captions, _, factors = cd_data
    with pytest.raises(RepscopeError, match=str(blocker)):
        write_cd(blocker / "cd", images, captions, factors)
    with pytest.raises(RepscopeError, match=str(blocker)):
        h5.export_h5(cd_dir, blocker / "traindata.h5")
    assert blocker.read_text() == "x"

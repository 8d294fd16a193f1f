"""Array headers are checked against the file and the memory before numpy allocates anything: a few bytes
declaring a terabyte array are refused in one line naming the file (and the member), the shape and the
bytes, never a ``MemoryError``."""

from __future__ import annotations

import io
import re
import zipfile

import numpy as np
import pytest

from repscope import validation
from repscope.data.npzfile import check_array_file, load_array_file, read_npz_arrays
from repscope.errors import DataFormatError

TERABYTES_SHAPE = (2**20, 2**20)  # float64: 8,796,093,022,208 bytes
TERABYTES = "8,796,093,022,208 bytes (8.8 TB)"


def npy_bytes(
    shape: tuple[int, ...], descr: str = "<f8", data: bytes = b"", version: tuple[int, int] = (1, 0)
) -> bytes:
    """A .npy file's bytes: a header declaring ``shape`` and ``descr``, followed by ``data``."""
    buffer = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    if version == (1, 0):
        np.lib.format.write_array_header_1_0(buffer, header)
    else:
        np.lib.format.write_array_header_2_0(buffer, header)
    return buffer.getvalue() + data


def npz_with(path, members: dict[str, bytes], compression: int = zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, content in members.items():
            archive.writestr(f"{name}.npy", content)
    return path


@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_a_npy_declaring_terabytes_is_truncated_not_a_memory_error(tmp_path, version):
    path = tmp_path / "codes.npy"
    path.write_bytes(npy_bytes(TERABYTES_SHAPE, version=version, data=b"\0" * 64))
    expected = (
        f"{path}: truncated or corrupt: its header declares a float64 array of shape (1048576, 1048576): "
        f"{TERABYTES}, but it holds 64 bytes of data"
    )
    for read in (load_array_file, check_array_file, lambda p: load_array_file(p, mmap_mode="r")):
        with pytest.raises(DataFormatError) as refused:
            read(path)
        assert str(refused.value) == expected


def test_an_npz_member_declaring_terabytes_names_the_member(tmp_path):
    path = npz_with(
        tmp_path / "scores.npz",
        {"factors": npy_bytes((3,), "<i8", b"\0" * 24), "codes": npy_bytes(TERABYTES_SHAPE, data=b"\0" * 8)},
    )
    with pytest.raises(DataFormatError) as refused:
        read_npz_arrays(path, "factors and codes")
    assert str(refused.value) == (
        f"{path}: member 'codes': truncated or corrupt: its header declares a float64 array of shape "
        f"(1048576, 1048576): {TERABYTES}, but it holds 8 bytes of data"
    )


def error_line(code: int, err: str) -> str:
    """The one error line of a refused command (a slow start may add a progress line before it)."""
    errors = [line for line in err.splitlines() if line.startswith("repscope: error: ")]
    assert code == 1 and len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def test_the_commands_refuse_such_files_in_one_line(run_cli, tmp_path):
    npz = npz_with(
        tmp_path / "scores.npz",
        {"factors": npy_bytes((4, 1), "<i8", b"\0" * 32), "codes": npy_bytes(TERABYTES_SHAPE)},
    )
    code, _, err = run_cli(["disentangle", "score", str(npz)])
    line = error_line(code, err)
    assert line.startswith(f"repscope: error: {npz}: member 'codes': truncated or corrupt: ") and TERABYTES in line

    npy = tmp_path / "matrix.npy"
    npy.write_bytes(npy_bytes(TERABYTES_SHAPE))
    code, _, err = run_cli(["invariance", "features", str(npy)])
    line = error_line(code, err)
    assert line.startswith(f"repscope: error: {npy}: truncated or corrupt: ") and TERABYTES in line


def test_arrays_beyond_the_memory_budget_are_refused_one_by_one_and_together(tmp_path, monkeypatch):
    monkeypatch.setattr(validation, "memory_budget", lambda: 1000)
    pair = tmp_path / "pair.npz"
    np.savez(pair, a=np.zeros(100), b=np.zeros(100))  # 800 bytes each: each fits, the two do not
    with pytest.raises(DataFormatError) as refused:
        read_npz_arrays(pair, "a and b")
    assert str(refused.value) == (
        f"{pair}: its members take 1,600 bytes (1.6 kB) once read, more than the 1,000 bytes (1.0 kB) of memory "
        "available; refused before reading"
    )
    one = tmp_path / "one.npy"
    np.save(one, np.zeros((3, 50)))
    with pytest.raises(DataFormatError) as refused:
        load_array_file(one)
    assert str(refused.value) == (
        f"{one}: its header declares a float64 array of shape (3, 50): 1,200 bytes (1.2 kB), more than the "
        "1,000 bytes (1.0 kB) of memory available; refused before reading"
    )
    assert load_array_file(one, mmap_mode="r").shape == (3, 50)  # a memory map is held to the file's size only


def test_a_zip_member_that_is_not_an_array_is_bounded_by_its_declared_size(tmp_path, monkeypatch):
    monkeypatch.setattr(validation, "memory_budget", lambda: 1000)
    path = tmp_path / "raw.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("notes.txt", b"a" * 5000)  # deflates to a few bytes, reads back as 5,000
    with pytest.raises(DataFormatError, match=re.escape(f"{path}: member 'notes.txt': its header declares a uint8")):
        read_npz_arrays(path, "arrays")


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed], ids=["stored", "deflated"])
def test_well_formed_files_read_as_before(tmp_path, save):
    """The member's uncompressed size is what counts: a compressed member holds fewer bytes on disk than its
    array, and is whole."""
    codes = np.linspace(0, 1, 600).reshape(100, 6)
    factors = np.zeros((100, 2), dtype=np.int64)  # compresses to almost nothing
    path = tmp_path / "scores.npz"
    save(path, codes=codes, factors=factors)
    arrays = read_npz_arrays(path, "codes and factors")
    assert np.array_equal(arrays["codes"], codes) and np.array_equal(arrays["factors"], factors)
    with load_array_file(path) as archive:
        assert np.array_equal(archive["factors"], factors)
    single = tmp_path / "codes.npy"
    np.save(single, codes)
    assert np.array_equal(load_array_file(single), codes)


def test_a_dataset_whose_images_header_was_grown_is_refused_before_mapping(tmp_path):
    from repscope.data.store import IMAGES_FILE, read_dataset, write_dataset

    images = np.zeros((4, 8, 8), dtype=np.uint8)
    factors = __import__("pandas").DataFrame({name: [0, 1, 0, 1] for name in _DSPRITES_COLUMNS})
    out = write_dataset(
        tmp_path / "set",
        [(images, None, factors)],
        4,
        generator="dsprites",
        level=None,
        seed=0,
        params={},
        image_shape=(8, 8),
    )
    path = out / IMAGES_FILE
    data = path.read_bytes()[128:]
    path.write_bytes(npy_bytes((4000, 8, 8), "|u1", data))  # the header now claims 1,000 times the rows
    with pytest.raises(DataFormatError) as refused:
        read_dataset(out)
    assert str(refused.value) == (
        f"{path}: truncated or corrupt: its header declares a uint8 array of shape (4000, 8, 8): "
        "256,000 bytes (256.0 kB), but it holds 256 bytes of data"
    )


_DSPRITES_COLUMNS = ("color", "shape", "scale", "orientation", "posX", "posY")


def test_the_memory_budget_is_what_the_machine_and_its_cgroup_have(tmp_path, monkeypatch):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    2048 kB\n")
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "memory.max").write_text("max\n")
    monkeypatch.setattr(validation, "MEMINFO", meminfo)
    monkeypatch.setattr(validation, "CGROUP_DIR", cgroup)
    assert validation.memory_budget() == 2048 * 1024
    (cgroup / "memory.max").write_text("1000000\n")
    (cgroup / "memory.current").write_text("400000\n")
    assert validation.memory_budget() == 600_000  # the container's room is the smaller

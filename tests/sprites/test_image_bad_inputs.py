"""Bad image and h5 files: a PNG header declaring gigapixels, truncated or corrupt PNGs, a corrupt gzip
chunk in an h5. Each is one line naming the file (and the h5 dataset), refused before the pixels are
decoded, with nothing left in the output location."""

from __future__ import annotations

import io
import struct
import zlib

import h5py
import numpy as np
import pytest
from PIL import Image

from repscope.cli import main
from repscope.data import imagefile
from repscope.data.imagefile import read_image
from repscope.data.multimodal.polymnist import load_backgrounds
from repscope.data.multimodal.textures import MAX_PHOTO_PIXELS, load_photos
from repscope.errors import DataFormatError, InvalidArgumentError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def png_bytes(width: int = 48, height: int = 40) -> bytes:
    """A valid RGB PNG whose pixels differ everywhere (a gradient), width != height."""
    pixels = (np.arange(width * height * 3) % 251).astype(np.uint8).reshape(height, width, 3)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def declaring(width: int, height: int) -> bytes:
    """A small valid PNG whose IHDR is patched to declare ``width x height`` (CRC recomputed)."""
    data = bytearray(png_bytes())
    assert data[12:16] == b"IHDR"  # signature (8), length (4), type (4), then width, height
    data[16:20] = struct.pack(">I", width)
    data[20:24] = struct.pack(">I", height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))  # CRC over type + 13 data bytes
    return bytes(data)


def corrupt_idat(data: bytes) -> bytes:
    start = data.index(b"IDAT") + 4  # first bytes of the zlib stream, CRC left as it was
    return data[: start + 2] + b"\xff" * 16 + data[start + 18 :]


def one_line_error(capsys, argv):
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    assert info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("repscope: error:") and "\n" not in err and "Traceback" not in err
    return err


def test_the_patched_header_is_what_pillow_reads(tmp_path):
    path = tmp_path / "p.png"
    path.write_bytes(declaring(6000, 5000))
    with Image.open(path) as image:
        assert image.size == (6000, 5000)


def test_a_gigapixel_header_is_refused_before_decoding(tmp_path, monkeypatch):
    path = tmp_path / "bomb.png"
    path.write_bytes(declaring(60000, 60000))
    with pytest.raises(DataFormatError, match="bomb.png"):  # Pillow's own DecompressionBombError, translated
        read_image(path, "RGB", 10**12)

    # below Pillow's limits: our own limit decides, from the header, and nothing is decoded
    def no_decoding(*args, **kwargs):
        raise AssertionError("pixels decoded")

    monkeypatch.setattr(Image.Image, "convert", no_decoding)
    path.write_bytes(declaring(4097, 4096))
    with pytest.raises(DataFormatError, match=r"bomb.png: declares 4097x4096 pixels; .* at most 16,777,216"):
        read_image(path, "L", MAX_PHOTO_PIXELS, "texture_dir: ")


def test_the_limit_is_inclusive_and_the_pixels_are_read(tmp_path):
    path = tmp_path / "ok.png"
    path.write_bytes(png_bytes(48, 40))
    pixels = read_image(path, "RGB", 48 * 40)
    expected = (np.arange(48 * 40 * 3) % 251).astype(np.uint8).reshape(40, 48, 3)
    np.testing.assert_array_equal(pixels, expected)
    with pytest.raises(DataFormatError, match="declares 48x40 pixels"):
        read_image(path, "RGB", 48 * 40 - 1)
    with pytest.raises(InvalidArgumentError, match="max_pixels"):
        read_image(path, "RGB", 0)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        corrupt_idat,  # broken zlib stream
        lambda data: b"",  # empty
        lambda data: b"not an image at all",
    ],
    ids=["truncated", "corrupt-idat", "empty", "text"],
)
def test_a_damaged_png_is_one_error_naming_the_file(tmp_path, damage):
    path = tmp_path / "damaged.png"
    path.write_bytes(damage(png_bytes()))
    with pytest.raises(DataFormatError, match=r"^background_dir: .*damaged.png: not a readable image"):
        read_image(path, "RGB", 10**6, "background_dir: ")


def test_every_image_error_is_one_of_the_translated_kinds():
    # a Pillow error outside these would escape as a traceback
    for kind in (OSError, SyntaxError, ValueError, EOFError, zlib.error, Image.DecompressionBombError):
        assert issubclass(kind, imagefile._PILLOW_READ_ERRORS)


def test_texture_dir_refuses_a_bomb_and_a_truncated_photo(tmp_path):
    folder = tmp_path / "textures"
    folder.mkdir()
    (folder / "a.png").write_bytes(png_bytes())
    (folder / "b.png").write_bytes(declaring(5000, 4000))  # 20 M pixels: below Pillow's limit, above ours
    with pytest.raises(DataFormatError, match=r"^texture_dir: .*b.png: declares 5000x4000 pixels"):
        load_photos(folder)
    (folder / "b.png").write_bytes(png_bytes()[:-30])
    with pytest.raises(DataFormatError, match=r"^texture_dir: .*b.png: not a readable image"):
        load_photos(folder)


def test_polymnist_backgrounds_refuse_a_bomb(tmp_path):
    folder = tmp_path / "backgrounds"
    folder.mkdir()
    (folder / "0.png").write_bytes(png_bytes())
    (folder / "1.png").write_bytes(declaring(60000, 60000))
    with pytest.raises(DataFormatError, match=r"^background_dir: .*1.png: too many pixels"):
        load_backgrounds(folder, modalities=2)
    (folder / "1.png").write_bytes(corrupt_idat(png_bytes()))
    with pytest.raises(DataFormatError, match=r"^background_dir: .*1.png: not a readable image"):
        load_backgrounds(folder, modalities=2)


def test_generate_with_a_bomb_texture_is_one_line_and_writes_nothing(tmp_path, capsys):
    folder = tmp_path / "textures"
    folder.mkdir()
    (folder / "bomb.png").write_bytes(declaring(60000, 60000))
    out = tmp_path / "sprites"
    err = one_line_error(capsys, ["sprites", "generate", "--level", 5, "--n", 4, "-o", out, "--texture-dir", folder])
    assert "bomb.png" in err and "pixels" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["textures"]


# --------------------------------------------------------------------------------------------
# h5


def write_h5_with_corrupt_chunk(path, n=6):
    """A toolkit-layout h5 (gzip chunks of 2 images) whose second image chunk is overwritten with junk."""
    rng = np.random.default_rng(3)
    with h5py.File(path, "w") as handle:
        pixels = rng.integers(0, 256, (n, 64, 64, 3), dtype=np.uint8)
        image = handle.create_dataset("image", data=pixels, chunks=(2, 64, 64, 3), compression="gzip")
        handle.create_dataset("text", data=np.array([b"square"] * n, dtype=object), dtype=h5py.string_dtype())
        info = image.id.get_chunk_info(1)
        offset, size = info.byte_offset, info.size
    data = bytearray(path.read_bytes())
    data[offset + 8 : offset + size - 8] = bytes(size - 16)  # zeros: an invalid deflate stream
    path.write_bytes(bytes(data))


def test_the_fixture_chunk_is_really_unreadable(tmp_path):
    path = tmp_path / "traindata.h5"
    write_h5_with_corrupt_chunk(path)
    with h5py.File(path, "r") as handle:
        assert handle["image"][0:2].shape == (2, 64, 64, 3)  # the first chunk is intact
        with pytest.raises(OSError):
            handle["image"][2:4]


def test_import_h5_with_a_corrupt_gzip_chunk_is_one_line_naming_file_and_dataset(tmp_path, capsys):
    path = tmp_path / "traindata.h5"
    write_h5_with_corrupt_chunk(path)
    out = tmp_path / "imported"
    err = one_line_error(capsys, ["sprites", "import-h5", path, "--level", 1, "-o", out])
    assert f"{path}: dataset 'image' rows 0-5 cannot be read" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traindata.h5"]  # no output, no temporary left


def test_import_h5_names_the_rows_of_the_bad_chunk(tmp_path):
    from repscope.data.multimodal.h5 import import_h5

    path = tmp_path / "traindata.h5"
    write_h5_with_corrupt_chunk(path)
    with pytest.raises(DataFormatError, match=r"traindata.h5: dataset 'image' rows 2-3 cannot be read"):
        import_h5(path, 1, tmp_path / "imported", chunk=2)
    assert not (tmp_path / "imported").exists()

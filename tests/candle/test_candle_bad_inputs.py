"""Bad CANDLE folders: NaN / Infinity in the JSON annotations, inverted bounds or bounds outside the image,
a PNG declaring gigapixels, a truncated PNG. Each is one error naming the file (and the key); what our
renderer writes is accepted."""

from __future__ import annotations

import io
import json
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from repscope.cli import main
from repscope.data.candle.dataset import MAX_IMAGE_PIXELS, candle_dataset, folder_records, read_folder, read_record
from repscope.errors import DataFormatError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

WIDTH, HEIGHT = 40, 30


def png_bytes(width: int = WIDTH, height: int = HEIGHT) -> bytes:
    pixels = np.full((height, width, 3), 90, np.uint8)
    pixels[5:20, 8:30] = (220, 30, 30)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def declaring(width: int, height: int) -> bytes:
    data = bytearray(png_bytes())
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    return bytes(data)


def record_text(bounds="[[8.0, 5.0], [30.0, 20.0]]", rotation="60", extra=""):
    # written by hand, not by json.dumps: the bad cases are the bare tokens Python's json reads
    return (
        '{"scene": "indoor", "lights": "left", '
        f'"objects": {{"Cube_0": {{"object_type": "cube", "color": "red", "size": "small", '
        f'"rotation": {rotation}, "bounds": {bounds}}}}}{extra}}}'
    )


def write_pair(folder, name, text, image=None):
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(text)
    (folder / f"{name}.png").write_bytes(png_bytes() if image is None else image)


@pytest.mark.parametrize(
    ("field", "key"),
    [
        ({"rotation": "NaN"}, "objects.Cube_0.rotation"),
        ({"rotation": "-Infinity"}, "objects.Cube_0.rotation"),
        ({"bounds": "[[8.0, 5.0], [Infinity, 20.0]]"}, r"objects.Cube_0.bounds\[1\]\[0\]"),
        ({"bounds": "[[8.0, 5.0], [1e400, 20.0]]"}, r"objects.Cube_0.bounds\[1\]\[0\]"),  # overflows to inf
        ({"extra": ', "confounder": {"scene_light": NaN}'}, "confounder.scene_light"),
    ],
)
def test_non_finite_numbers_are_refused_naming_file_and_key(tmp_path, field, key):
    path = tmp_path / "img.json"
    path.write_text(record_text(**field))
    with pytest.raises(DataFormatError, match=rf"img.json: {key}: NaN or infinite number"):
        read_record(path)


@pytest.mark.parametrize(
    "bounds", ["[[30.0, 5.0], [8.0, 20.0]]", "[[8.0, 25.0], [30.0, 12.0]]"], ids=["x1<x0", "y1<y0"]
)
def test_inverted_bounds_are_refused(tmp_path, bounds):
    path = tmp_path / "img.json"
    path.write_text(record_text(bounds=bounds))
    with pytest.raises(DataFormatError, match=r"img.json: bounds .* is inverted"):
        read_record(path)


def test_a_record_as_our_renderer_writes_it_is_read(tmp_path):
    # the renderer's record: bounds rounded to 2 decimals, a margin inside the frame, plus its own keys
    path = tmp_path / "000000.json"
    record = {
        "scene": "playground",
        "lights": "right",
        "objects": {
            "Torus_0": {
                "object_type": "torus",
                "color": "orange",
                "size": "large",
                "rotation": 45,
                "bounds": [[4.5, 3.25], [36.0, 27.75]],
            }
        },
        "index": 0,
        "seed": 17,
        "confounder": {"scene_light": 0.731},
        "camera": {"distance": 9.1},
        "position": [0.5, -1.25],
    }
    path.write_text(json.dumps(record))
    out = read_record(path)
    assert (out["object"], out["rotation"], out["scene"], out["light"]) == ("torus", 45, "playground", "right")
    np.testing.assert_array_equal(out["bounds"], [4.5, 3.25, 36.0, 27.75])


@pytest.mark.parametrize(
    "bounds",
    ["[[40.0, 5.0], [60.0, 20.0]]", "[[8.0, 30.0], [30.0, 45.0]]", "[[-20.0, 5.0], [0.0, 20.0]]"],
    ids=["right-of", "below", "left-of"],
)
def test_bounds_entirely_outside_the_image_are_refused(tmp_path, bounds):
    write_pair(tmp_path / "d", "a", record_text(bounds=bounds))
    with pytest.raises(DataFormatError, match=r"a.json: bounds .* lie outside its 40x30 image a.png"):
        read_folder(tmp_path / "d", image_size=8)


def test_bounds_partly_outside_are_served_as_stored_and_scaled(tmp_path):
    write_pair(tmp_path / "d", "a", record_text(bounds="[[-4.0, 3.0], [30.0, 33.0]]"))
    data = read_folder(tmp_path / "d", image_size=8)
    # scaled by 8/40 across and 8/30 down, by hand
    np.testing.assert_allclose(data["box"][0], [-0.8, 0.8, 6.0, 8.8], rtol=1e-6)


def test_a_gigapixel_png_is_refused_naming_it(tmp_path):
    write_pair(tmp_path / "d", "a", record_text())
    write_pair(tmp_path / "d", "b", record_text(), image=declaring(60000, 60000))
    with pytest.raises(DataFormatError, match=r"b.png: too many pixels"):
        read_folder(tmp_path / "d", image_size=8)


def test_a_header_over_our_limit_is_refused_before_decoding(tmp_path, monkeypatch):
    side = int(MAX_IMAGE_PIXELS**0.5)
    assert side * side == MAX_IMAGE_PIXELS == 8192 * 8192

    def no_decoding(*args, **kwargs):
        raise AssertionError("pixels decoded")

    monkeypatch.setattr(Image.Image, "convert", no_decoding)
    write_pair(tmp_path / "d", "a", record_text(), image=declaring(side + 1, side))  # below Pillow's limits
    with pytest.raises(DataFormatError, match=r"a.png: declares 8193x8192 pixels; .* at most 67,108,864"):
        read_folder(tmp_path / "d", image_size=8)


def test_a_truncated_png_is_refused_through_the_dataset(tmp_path):
    write_pair(tmp_path / "d", "a", record_text())
    write_pair(tmp_path / "d", "b", record_text(), image=png_bytes()[:-40])
    with pytest.raises(DataFormatError, match=r"b.png: not a readable image"):
        candle_dataset(str(tmp_path / "d"), image_size=8)


def test_folder_records_refuses_nan_before_any_image_is_read(tmp_path):
    write_pair(tmp_path / "d", "a", record_text(rotation="NaN"), image=b"never read")
    with pytest.raises(DataFormatError, match="a.json: objects.Cube_0.rotation: NaN"):
        folder_records(tmp_path / "d")


def one_line_error(capsys, argv):
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    assert info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("repscope: error:") and "\n" not in err and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (record_text(rotation="Infinity"), "objects.Cube_0.rotation: NaN or infinite number"),
        (record_text(bounds="[[30.0, 5.0], [8.0, 20.0]]"), "is inverted"),
    ],
)
def test_candle_pairs_is_one_line_and_writes_nothing(tmp_path, capsys, text, expected):
    write_pair(tmp_path / "d", "a", record_text())
    write_pair(tmp_path / "d", "b", text)
    out = tmp_path / "pairs.csv"
    err = one_line_error(capsys, ["candle", "pairs", tmp_path / "d", "--differ", "color", "--n", 2, "-o", out])
    assert "b.json" in err and expected in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]

"""Inputs found by fuzzing: each is refused with one RepscopeError naming what is wrong, or gives a
bounded, clearly labelled result; none may crash with a raw traceback or exhaust memory."""

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from repscope.data.morpho import interventions, measure
from repscope.data.morpho.interventions import set_slant, set_thickness, set_width
from repscope.data.morpho.perturb import perturb
from repscope.data.sources import load_source
from repscope.errors import InvalidArgumentError

MORPHO_FUNCTIONS = [
    ("measure fast", lambda x: measure(x)),
    ("measure reference", lambda x: measure(x, method="reference")),
    ("perturb thin", lambda x: perturb(x, "thin", rng=0)),
    ("perturb swel", lambda x: perturb(x, "swel", rng=0)),
    ("set_thickness", lambda x: set_thickness(x, 2.0)),
    ("set_slant", lambda x: set_slant(x, 0.1)),
    ("set_width", lambda x: set_width(x, 8.0)),
]


@pytest.fixture(scope="module")
def digits():
    return load_source("mnist-sample").images


@pytest.mark.parametrize("label, function", MORPHO_FUNCTIONS, ids=[m[0] for m in MORPHO_FUNCTIONS])
@pytest.mark.parametrize(
    "bad, fragment",
    [
        (np.zeros((0, 28), np.uint8), "zero-size"),
        (np.zeros((28, 0), np.uint8), "zero-size"),
        (np.zeros((28, 28), dtype=object), "dtype object"),
        (np.full((28, 28), "7"), "dtype <U1"),
        (np.full((28, 28), np.nan), "NaN"),
        (np.full((28, 28), np.inf), "NaN or infinite"),
        (np.full((28, 28), 300, dtype=np.int64), "dtype int64"),  # would overflow uint8
        (np.full((28, 28), 2.0), "[0, 1]"),
        (np.zeros((28, 28, 1), np.uint8), "channel axis"),
    ],
)
def test_every_morpho_function_refuses_bad_images_in_one_line(label, function, bad, fragment):
    with pytest.raises(InvalidArgumentError) as info:
        function(bad)
    message = str(info.value)
    assert fragment in message and "\n" not in message
    assert message.startswith(("image", "images"))


def test_measure_refuses_a_channel_axis_rather_than_reading_28_images(digits):
    with pytest.raises(InvalidArgumentError, match=r"channel axis"):
        measure(digits[0][:, :, None])
    with pytest.raises(InvalidArgumentError, match=r"channel axis.*pass \(N, 28, 28\)"):
        measure(digits[:3, :, :, None])
    assert len(measure(digits[:3, None])) == 3  # (N, 1, 28, 28) is unambiguous


def test_reference_method_refuses_what_the_fast_one_refuses(digits):
    batch = digits[:2].astype(np.float64) / 255
    batch[1, 3, 3] = np.nan
    for method in ("fast", "reference"):
        with pytest.raises(InvalidArgumentError, match="NaN"):
            measure(batch, method=method)
        with pytest.raises(InvalidArgumentError, match="int16"):
            measure(digits[:2].astype(np.int16) * 300, method=method)


def test_set_width_far_target_stays_within_the_image(digits, monkeypatch):
    """The fuzzed case: width 20.78 of digit 966 used to grow the thickness radius to ~65,000
    hi-res pixels (a 15.7 GiB array). Every offset must now stay within the image diagonal."""
    radii = []
    original = interventions.offset_boundary

    def spy(binary, radius_hires):
        radii.append(radius_hires)
        return original(binary, radius_hires)

    monkeypatch.setattr(interventions, "offset_boundary", spy)
    out, params = set_width(digits[966], 20.78)
    assert out.shape == (28, 28) and out.dtype == np.uint8
    assert max(abs(r) for r in radii) <= interventions.max_dilation((112, 112))
    assert math.isfinite(params["achieved"]) and params["iterations"] <= interventions.MAX_CORRECTIONS + 1
    assert params["reached"] == (abs(params["achieved"] - 20.78) <= 0.01 * 20.78)


def test_interventions_run_under_a_4_gib_address_space_limit():
    script = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        from repscope.data.morpho.interventions import offset_boundary, set_width
        from repscope.data.sources import load_source
        import numpy as np
        digit = load_source("mnist-sample").images[966]
        print(set_width(digit, 20.78)[1]["reached"])
        binary = np.zeros((112, 112), bool); binary[50:60, 50:60] = True
        print(offset_boundary(binary, 1e9)[0].min())  # a huge dilation fills the image, cheaply
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "1.0"]


@pytest.mark.parametrize("target", [1e6, 28.5, 40.0])
def test_set_thickness_beyond_the_frame_is_refused_before_any_work(digits, target):
    with pytest.raises(InvalidArgumentError, match=r"target: must be at most 28 .*28x28"):
        set_thickness(digits[0], target)


def test_set_thickness_unreachable_target_says_so(digits):
    out, params = set_thickness(digits[0], 27.0)  # a 28x28 frame cannot hold such strokes
    assert params["reached"] is False and math.isfinite(params["achieved"])
    assert params["achieved"] < 27.0
    assert abs(params["radius"]) <= interventions.max_dilation((112, 112)) / 4


@pytest.mark.parametrize("target", [0.1, 0.5])
def test_set_thickness_of_a_one_pixel_digit_is_finite_and_flagged(target):
    digit = np.zeros((28, 28), np.uint8)
    digit[14, 14] = 255
    out, params = set_thickness(digit, target)
    assert math.isfinite(params["achieved"])
    assert params["reached"] is False
    # nothing measurable could be made thinner: the digit comes back as it was
    np.testing.assert_array_equal(out, digit)
    assert params["radius"] == 0.0 and params["achieved"] == params["original"]


def test_set_slant_reports_whether_it_reached_the_target(digits):
    _, params = set_slant(digits[0], 0.2)
    assert params["reached"] == (abs(params["achieved"] - 0.2) < interventions.SLANT_TOLERANCE)


# --------------------------------------------------------------------------------------------
# files: never unpickled, corrupt archives and non-UTF-8 configs are one DataFormatError


def _npz_with_bad_crc(path):
    images = np.zeros((3, 28, 28), np.uint8)
    images[:, 8:20, 8:20] = 200
    np.savez(path, images=images)
    raw = bytearray(path.read_bytes())
    raw[200] ^= 0xFF  # inside images.npy's data: the zip member's CRC no longer matches
    path.write_bytes(bytes(raw))
    return path


def _npz_with_a_pickle(path):
    np.savez(path, images=np.array([{"payload": 1}], dtype=object))
    return path


@pytest.mark.parametrize("make, fragment", [(_npz_with_bad_crc, "CRC"), (_npz_with_a_pickle, "Object arrays")])
def test_corrupt_or_pickled_npz_is_a_format_error_naming_the_file(tmp_path, make, fragment):
    from repscope.data.sources import load_source
    from repscope.errors import DataFormatError

    path = make(tmp_path / "digits.npz")
    with pytest.raises(DataFormatError, match=str(path)) as info:
        load_source(str(path))
    assert fragment in str(info.value)


@pytest.mark.parametrize("make", [_npz_with_bad_crc, _npz_with_a_pickle])
@pytest.mark.parametrize("command", [["data", "info"], ["morpho", "measure"]])
def test_cli_reads_of_bad_npz_end_in_one_line(tmp_path, capsys, make, command):
    from repscope.cli import main

    path = make(tmp_path / "digits.npz")
    extra = ["-o", str(tmp_path / "out.csv")] if command[0] == "morpho" else []
    with pytest.raises(SystemExit) as exit_info:
        main([*command, str(path), *extra])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("repscope: error:") and str(path) in err and "\n" not in err
    assert not (tmp_path / "out.csv").exists()


def test_pickled_dsprites_npz_is_never_unpickled(tmp_path):
    from repscope.data.dsprites import read_npz
    from repscope.errors import DataFormatError

    path = tmp_path / "dsprites.npz"
    np.savez(
        path,
        imgs=np.array([object()], dtype=object),
        latents_values=np.zeros((1, 6)),
        latents_classes=np.zeros((1, 6), np.int64),
    )
    with pytest.raises(DataFormatError, match=str(path)):
        read_npz(path)
    _npz_with_bad_crc(path)
    with pytest.raises(DataFormatError, match=str(path)):
        read_npz(path)


def test_a_npy_holding_one_image_with_a_channel_axis_is_refused(tmp_path):
    from repscope.data.sources import load_source

    path = tmp_path / "one.npy"
    np.save(path, np.zeros((28, 28, 1), np.uint8))
    with pytest.raises(InvalidArgumentError, match=rf"{path}: shape \(28, 28, 1\) .*channel axis"):
        load_source(str(path))


def test_non_utf8_yaml_config_is_a_format_error_naming_the_file(tmp_path):
    from repscope.config import read_yaml_mapping
    from repscope.errors import DataFormatError

    path = tmp_path / "config.yaml"
    path.write_bytes("seed: 1\nname: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(DataFormatError, match=rf"{path}: not UTF-8 .*0xe9"):
        read_yaml_mapping(path)
    path.write_bytes("\ufeffseed: 1\n".encode("utf-8"))  # a byte-order mark is fine
    assert read_yaml_mapping(path) == {"seed": 1}


# --------------------------------------------------------------------------------------------
# outputs that cannot be written: one line naming the path, nothing left behind


def _blocked(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("keep")
    return blocker


@pytest.mark.parametrize(
    "command",
    [
        ["morpho", "build", "--sets", "plain", "--train-size", "10", "--test-size", "5", "--out", "{out}"],
        ["morpho", "measure", "{digits}", "-o", "{out}/m.csv"],
        ["sprites", "generate", "--level", "1", "--n", "6", "--out", "{out}"],
        ["sprites", "generate", "--dataset", "dsprites", "--out", "{out}/d.npz"],  # the whole grid: must fail first
    ],
)
def test_cli_writes_under_a_file_end_in_one_line_naming_the_path(tmp_path, capsys, monkeypatch, command):
    from repscope.cli import main

    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    np.save(inputs / "digits.npy", load_source("mnist-sample").images[:20])
    blocker = _blocked(tmp_path)
    out = blocker / "sub"
    argv = [part.replace("{out}", str(out)).replace("{digits}", str(inputs / "digits.npy")) for part in command]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("repscope: error:") and str(blocker) in err and "\n" not in err
    assert blocker.read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "inputs"]


def test_read_only_directory_is_one_error_naming_the_path(tmp_path, monkeypatch):
    """As root a chmod 0555 directory stays writable, so the refusal is simulated where the
    system would raise it (mkstemp in the destination directory)."""
    import tempfile

    from repscope import fileio

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", kwargs.get("dir"))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(fileio.OutputWriteError, match=rf"{tmp_path / 'x.csv'}: cannot write .*Permission denied"):
        fileio.write_bytes_atomic(tmp_path / "x.csv", b"1")
    assert list(tmp_path.iterdir()) == []

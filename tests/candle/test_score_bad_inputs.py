"""`repscope disentangle score`: bad npz files, factors with too many classes and a bad --bootstrap are refused
with one line before any work; a bootstrap says how long it will take."""

from __future__ import annotations

import json
import pickle
import zipfile

import numpy as np
import pytest

from repscope.cli import main
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.metrics.disentanglement.bootstrap import bootstrap_interval, bootstrap_intervals
from repscope.studies.candle.score_arrays import (
    check_bootstrap,
    check_factor_classes,
    many_class_warnings,
    read_codes_npz,
    score_arrays,
)


class _Payload:
    """Unpickling it creates the file ``marker`` (it must never run)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _good(rows=40, seed=0):
    rng = np.random.default_rng(seed)
    factors = np.stack([np.arange(rows) % 4, (np.arange(rows) // 3) % 5], axis=1)
    codes = rng.normal(size=(rows, 3)) + factors[:, [0, 1, 0]]
    return factors, codes


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _npy_bytes(array):
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _cli_error(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("repscope: error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_a_member_that_is_a_raw_pickle_is_one_line_naming_the_file_and_member_and_never_runs(tmp_path, capsys):
    marker = tmp_path / "payload-ran"
    factors, codes = _good()
    path = _zip(tmp_path / "p.npz", {"factors.npy": pickle.dumps(_Payload(marker)), "codes.npy": _npy_bytes(codes)})
    out = tmp_path / "out.json"
    err = _cli_error(["disentangle", "score", str(path), "--out", str(out)], capsys)
    assert f"{path}: member 'factors' is not a .npy array" in err
    assert not marker.exists() and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz"]


def test_a_text_member_and_an_object_member_are_named(tmp_path):
    factors, codes = _good()
    text = _zip(tmp_path / "t.npz", {"factors.npy": _npy_bytes(factors), "codes.npy": b"0.1,0.2\n0.3,0.4\n"})
    with pytest.raises(DataFormatError, match=r"t\.npz: member 'codes' is not a \.npy array"):
        read_codes_npz(text)
    objects = tmp_path / "o.npz"
    np.savez(objects, factors=factors, codes=codes, factor_sizes=np.array([4, "x"], dtype=object))
    with pytest.raises(DataFormatError, match=r"o\.npz: member 'factor_sizes' holds object arrays"):
        read_codes_npz(objects)


def test_a_text_file_given_as_npz_is_not_an_npz_archive_not_object_arrays(tmp_path, capsys):
    path = tmp_path / "codes.npz"
    path.write_text("factors,codes\n0,0.5\n1,0.25\n")
    err = _cli_error(["disentangle", "score", str(path)], capsys)
    assert f"{path}: not an npz archive" in err and "object arrays" not in err


def test_a_single_npy_is_told_what_the_npz_must_hold(tmp_path):
    path = tmp_path / "codes.npy"
    np.save(path, np.zeros((4, 2)))
    with pytest.raises(DataFormatError) as info:
        read_codes_npz(path)
    message = str(info.value)
    assert message.startswith(f"{path}: a single .npy array, not an .npz")
    assert "'factors' (N, K)" in message and "'codes' (N, L)" in message and "numpy.savez" in message


def test_factor_sizes_as_strings_are_refused_naming_the_member(tmp_path):
    factors, codes = _good()
    path = tmp_path / "s.npz"
    np.savez(path, factors=factors, codes=codes, factor_sizes=np.array(["4", "5"]))
    with pytest.raises(DataFormatError, match=r"s\.npz: 'factor_sizes' must hold whole numbers .* dtype <U1"):
        read_codes_npz(path)
    # whole-number floats are sizes too; fractional ones are not
    np.savez(path, factors=factors, codes=codes, factor_sizes=np.array([4.0, 5.0]))
    assert read_codes_npz(path)[2].tolist() == [4, 5]
    np.savez(path, factors=factors, codes=codes, factor_sizes=np.array([4.0, 5.5]))
    with pytest.raises(DataFormatError, match="'factor_sizes' must hold whole numbers"):
        read_codes_npz(path)


def test_a_factor_with_one_class_per_row_is_refused_naming_the_column(tmp_path, capsys):
    rows = 15  # column 0: 3 classes of 5 rows, as many as the rows-per-class rule asks
    factors = np.stack([np.arange(rows) % 3, np.arange(rows)[::-1]], axis=1)  # column 1: every row its own class
    codes = np.random.default_rng(1).normal(size=(rows, 2))
    path = tmp_path / "ids.npz"
    np.savez(path, factors=factors, codes=codes)
    out = tmp_path / "scores.json"
    err = _cli_error(["disentangle", "score", str(path), "--out", str(out)], capsys)
    assert "'factors' column 1 has 15 classes over 15 rows, each class a single row" in err
    assert not out.exists()


def test_fewer_than_five_rows_per_class_on_average_is_refused_and_five_are_accepted():
    # 7 classes over 10 rows: 1.43 rows per class (three classes of two rows, four of one)
    factors = np.array([[0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [1, 5], [1, 6], [1, 0], [1, 1], [1, 2]])
    with pytest.raises(InvalidArgumentError, match=r"f\.npz: 'factors' column 1 has 7 classes over 10 rows \(1\.43"):
        check_factor_classes(factors, where="f.npz")
    # two rows per class, where pure-noise codes scored IRS 0.85: refused, naming the minimum
    pairs = np.stack([np.arange(20) % 2, np.arange(20) // 2], axis=1)
    with pytest.raises(
        InvalidArgumentError,
        match=r"^f\.npz: 'factors' column 1 has 10 classes over 20 rows \(2\.00 rows per class\); at least 5 rows",
    ):
        check_factor_classes(pairs, where="f.npz")
    # 4.5 rows per class refused, exactly 5 accepted
    with pytest.raises(InvalidArgumentError, match=r"column 0 has 2 classes over 9 rows \(4\.50"):
        check_factor_classes(np.arange(9)[:, None] % 2)
    check_factor_classes(np.stack([np.arange(10) % 2, np.arange(10) // 5], axis=1))
    with pytest.raises(InvalidArgumentError, match="'factors' has no rows"):
        check_factor_classes(np.zeros((0, 2), dtype=np.int64))


def test_a_factor_with_more_than_256_classes_gets_one_warning_line():
    rows = 600
    factors = np.stack([np.arange(rows) % 257, np.arange(rows) % 256], axis=1)
    lines = many_class_warnings(factors)
    assert len(lines) == 1 and lines[0].startswith("warning: factors: column 0 has 257 classes (over 256)")
    notes = []
    codes = np.random.default_rng(2).normal(size=(rows, 2))
    score_arrays(factors, codes, metrics=["mig"], notify=notes.append)
    assert notes == lines


@pytest.mark.parametrize("value", [-1, 1])
def test_a_bootstrap_below_two_is_refused_before_the_file_is_read(tmp_path, capsys, value):
    out = tmp_path / "out.json"
    # the file does not exist: the option is checked first
    err = _cli_error(
        ["disentangle", "score", str(tmp_path / "none.npz"), "--bootstrap", str(value), "-o", str(out)], capsys
    )
    assert err == (
        "repscope: error: --bootstrap: must be 0 (no interval) or at least 2 resamples (a few hundred for a stable "
        f"interval), got {value}"
    )
    assert not out.exists()
    assert check_bootstrap(0) == 0 and check_bootstrap(2) == 2
    for bad in (True, 2.0, "3"):
        with pytest.raises(InvalidArgumentError, match="--bootstrap: must be a whole number"):
            check_bootstrap(bad)
    with pytest.raises(InvalidArgumentError, match="--bootstrap"):
        score_arrays(*_good(), metrics=["mig"], bootstrap=-5)


def test_the_bootstrap_estimate_comes_after_the_first_resample_and_before_the_second():
    calls = []

    def first(factors, codes):
        calls.append("first")
        return {"a": float(codes[:, 0].mean())}

    def second(factors, codes, shift):
        calls.append("second")
        return {"b": float(codes[:, 1].max() + shift)}

    factors, codes = _good(rows=30, seed=4)
    timed = []

    def on_first(seconds):
        calls.append("estimate")
        timed.append(seconds)

    both = bootstrap_intervals(
        {"one": (first, {}), "two": (second, {"shift": 0.5})}, factors, codes, 3, seed=7, on_first=on_first
    )
    assert calls == ["first", "second", "estimate", "first", "second", "first", "second"]
    assert len(timed) == 1 and timed[0] >= 0.0
    # the same rows as each metric bootstrapped alone
    assert both["one"] == bootstrap_interval(first, factors, codes, 3, seed=7)
    assert both["two"] == bootstrap_interval(second, factors, codes, 3, seed=7, shift=0.5)
    # by hand: resample b's rows are default_rng(7).integers(0, 30, 30), drawn one after the other
    rng = np.random.default_rng(7)
    means = [codes[rng.integers(0, 30, size=30), 0].mean() for _ in range(3)]
    assert both["one"]["a"]["mean"] == pytest.approx(np.mean(means))
    assert both["one"]["a"]["low"] == pytest.approx(np.percentile(means, 2.5))


def test_score_bootstrap_prints_the_estimate_line_on_stderr(tmp_path, capsys):
    factors, codes = _good(rows=60, seed=5)
    path = tmp_path / "good.npz"
    np.savez(path, factors=factors, codes=codes)
    out = tmp_path / "scores.json"
    with pytest.raises(SystemExit) as info:
        main(["disentangle", "score", str(path), "--metric", "mig", "--bootstrap", "2", "-o", str(out)])
    assert info.value.code in (0, None)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("bootstrap:")]
    assert len(lines) == 1 and lines[0].startswith("bootstrap: the first of 2 resamples of 60 rows took ")
    assert lines[0].endswith(" more for the rest")
    written = json.loads(out.read_text())
    assert written["metrics"]["mig"]["bootstrap"]["mig"]["resamples"] == 2

"""`repscope zeroshot metrics`: npz members that are pickles or text, a text file given as npz and classes of
one image each are refused with one line naming the file and member, before any metric runs."""

from __future__ import annotations

import io
import json
import pickle
import zipfile

import numpy as np
import pytest

from repscope.cli import main
from repscope.data.zeroshot.softlabels import read_soft_labels
from repscope.errors import DataFormatError, InvalidArgumentError
from repscope.metrics.zeroshot import davies_bouldin_soft_labels, raw_zero_shot_dbi

# three classes: loo_i (m_i, 2) and full_i (m_i, 3), rows summing to one; class 0 has two images
LOO = [np.array([[0.7, 0.3], [0.4, 0.6]]), np.array([[0.9, 0.1]]), np.array([[0.2, 0.8]])]
FULL = [np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]]), np.array([[0.1, 0.8, 0.1]]), np.array([[0.1, 0.2, 0.7]])]


class _Payload:
    """Unpickling it creates the file ``marker`` (it must never run)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _members(loo=LOO, full=FULL):
    return {f"loo_{i}.npy": _npy_bytes(a) for i, a in enumerate(loo)} | {
        f"full_{i}.npy": _npy_bytes(a) for i, a in enumerate(full)
    }


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _cli_error(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("repscope: error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_a_member_that_is_a_raw_pickle_is_one_line_and_never_runs(tmp_path, capsys):
    marker = tmp_path / "payload-ran"
    members = _members() | {"full_1.npy": pickle.dumps(_Payload(marker))}
    path = _zip(tmp_path / "soft.npz", members)
    out = tmp_path / "metrics.json"
    err = _cli_error(["zeroshot", "metrics", str(path), "--out", str(out)], capsys)
    assert f"{path}: member 'full_1' is not a .npy array" in err
    assert not marker.exists() and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["soft.npz"]


def test_a_text_member_is_named(tmp_path):
    path = _zip(tmp_path / "t.npz", _members() | {"loo_2.npy": b"0.2 0.8\n"})
    with pytest.raises(DataFormatError, match=r"t\.npz: member 'loo_2' is not a \.npy array"):
        read_soft_labels(path)


def test_a_text_file_given_as_npz_is_not_an_npz_archive(tmp_path, capsys):
    path = tmp_path / "softlabels.npz"
    path.write_text("class,p0,p1\n0,0.7,0.3\n")
    err = _cli_error(["zeroshot", "metrics", str(path)], capsys)
    assert (
        err == f"repscope: error: {path}: not an npz archive (it does not start with a zip header: text or a pickle?)"
    )


def test_one_image_per_class_says_how_many_a_class_needs(tmp_path, capsys):
    single = [LOO[0][:1], LOO[1], LOO[2]]
    path = _zip(tmp_path / "one.npz", _members(single, [FULL[0][:1], FULL[1], FULL[2]]))
    out = tmp_path / "metrics.json"
    err = _cli_error(["zeroshot", "metrics", str(path), "-o", str(out)], capsys)
    assert err == (
        f"repscope: error: {path}: every class has a single test image (3 images for 3 classes); at least one class "
        "needs 2 or more (the Davies-Bouldin index needs more images than classes; one image has no scatter)"
    )
    assert not out.exists()
    with pytest.raises(InvalidArgumentError, match="at least one class needs 2 or more"):
        davies_bouldin_soft_labels(single)
    with pytest.raises(InvalidArgumentError, match="every class has a single test image"):
        raw_zero_shot_dbi(single)


def test_one_class_with_two_images_is_enough_and_scores_as_by_hand(tmp_path, capsys):
    # by hand: cluster i is loo_i with a 0 inserted at column i
    c0 = np.array([[0.0, 0.7, 0.3], [0.0, 0.4, 0.6]])
    c1 = np.array([[0.9, 0.0, 0.1]])
    c2 = np.array([[0.2, 0.8, 0.0]])
    centroids = [c.mean(axis=0) for c in (c0, c1, c2)]
    scatter = [np.mean(np.linalg.norm(c - m, axis=1)) for c, m in zip((c0, c1, c2), centroids)]
    ratios = [
        max((scatter[i] + scatter[k]) / np.linalg.norm(centroids[i] - centroids[k]) for k in range(3) if k != i)
        for i in range(3)
    ]
    path = _zip(tmp_path / "ok.npz", _members())
    out = tmp_path / "metrics.json"
    with pytest.raises(SystemExit) as info:
        main(["zeroshot", "metrics", str(path), "-o", str(out)])
    assert info.value.code in (0, None)
    assert json.loads(out.read_text())["davies_bouldin"] == pytest.approx(np.mean(ratios))
    # the paper's DBI: class 0's root mean squared distance to its centroid, 0 for the single images
    spread = np.sqrt(np.mean(np.sum((LOO[0] - LOO[0].mean(axis=0)) ** 2, axis=1)))
    assert raw_zero_shot_dbi(LOO)["dbi"] == pytest.approx(spread / 3)

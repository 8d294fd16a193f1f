"""Download datasets over HTTP(S), verified by checksum, written atomically.

:func:`download_file` tries each mirror in order, streams the body to a temporary file next to
the destination while hashing it, and renames it into place only when the checksum matches. A
destination that already has the right checksum is not fetched again. :data:`DATASETS` lists the
datasets that ``repscope data download NAME`` knows; they land in ``$REPSCOPE_HOME/datasets/NAME``
where the sources ``mnist`` and ``fashion-mnist`` find them.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from repscope.data.idx import read_mnist_pair
from repscope.data.sources import datasets_dir
from repscope.errors import ChecksumError, InvalidArgumentError, SourceNotFoundError, shown
from repscope.fileio import atomic_write
from repscope.progress import progress_bar

CHUNK_SIZE = 1 << 16
TIMEOUT_S = 60.0
USER_AGENT = "repscope-data-download"


@dataclass(frozen=True)
class DownloadableDataset:
    """A dataset of files fetched from ``base_url + file name``, tried mirror by mirror.

    Parameters
    ----------
    name : str
        The name ``repscope data download NAME`` takes and the folder under ``$REPSCOPE_HOME/datasets``.
    description : str
        One line for listings.
    base_urls : tuple of str
        Mirrors, tried in order; each is joined with the file names.
    md5 : Mapping of str to str
        Each file name mapped to its md5 hex digest.
    """

    name: str
    description: str
    base_urls: tuple[str, ...]
    md5: Mapping[str, str]


DATASETS: dict[str, DownloadableDataset] = {
    "mnist": DownloadableDataset(
        "mnist",
        "MNIST handwritten digits, 60,000 train + 10,000 t10k",
        ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"),
        {
            "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
            "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
            "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
            "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
        },
    ),
    "fashion-mnist": DownloadableDataset(
        "fashion-mnist",
        "Fashion-MNIST clothing images, 60,000 train + 10,000 t10k",
        ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
        {
            "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
            "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
            "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
        },
    ),
}


class _ChecksumMismatch(Exception):
    def __init__(self, algorithm: str, expected: str, actual: str) -> None:
        super().__init__(f"{algorithm} {actual}, expected {expected}")
        self.algorithm, self.expected, self.actual = algorithm, expected, actual


def _expected_digests(md5: str | None, sha256: str | None) -> dict[str, str]:
    expected = {}
    if md5 is not None:
        expected["md5"] = md5.lower()
    if sha256 is not None:
        expected["sha256"] = sha256.lower()
    return expected


def file_digests(path: str | os.PathLike, algorithms: Sequence[str]) -> dict[str, str]:
    """Hex digests of a file, ``{algorithm: digest}``, in one pass.

    Parameters
    ----------
    path : str or os.PathLike
        The file to hash.
    algorithms : sequence of str
        :mod:`hashlib` names, e.g. ``["md5", "sha256"]``.

    Returns
    -------
    dict of str to str
        Lower-case hex digest by algorithm name.
    """
    hashers = {name: hashlib.new(name) for name in algorithms}
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            for hasher in hashers.values():
                hasher.update(chunk)
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


def _fetch(url: str, dest: Path, expected: dict[str, str], progress: bool) -> None:
    """Stream ``url`` to ``dest`` atomically; raise _ChecksumMismatch (leaving dest as it was)."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    hashers = {name: hashlib.new(name) for name in expected}
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        length = response.headers.get("Content-Length")
        total = int(length) if length and length.isdigit() else None
        with atomic_write(dest) as handle, progress_bar(f"{dest.name}", total=total, enabled=progress) as update:
            done = 0
            for chunk in iter(lambda: response.read(CHUNK_SIZE), b""):
                handle.write(chunk)
                for hasher in hashers.values():
                    hasher.update(chunk)
                done += len(chunk)
                update(done)
            if total is not None and done != total:
                raise OSError(f"connection closed after {done} of {total} bytes")
            for name, hasher in hashers.items():
                if hasher.hexdigest() != expected[name]:
                    # raised inside atomic_write: the temporary file is removed, dest untouched
                    raise _ChecksumMismatch(name, expected[name], hasher.hexdigest())


def download_file(
    urls: Sequence[str],
    dest: str | os.PathLike,
    md5: str | None = None,
    sha256: str | None = None,
    progress: bool = False,
) -> Path:
    """Fetch ``dest`` from the first of ``urls`` that answers with the right checksum.

    An existing ``dest`` whose checksum(s) match is kept without any request; with no checksum
    given, an existing ``dest`` is kept as it is. A mirror that fails (HTTP error, no connection,
    wrong checksum) is followed by the next one. The body is streamed to a temporary file beside
    ``dest`` and renamed into place only when complete and matching, so on failure ``dest`` is left
    as it was.

    Parameters
    ----------
    urls : sequence of str or str
        Mirrors of the file, tried in order; a single URL may be passed as a string.
    dest : str or os.PathLike
        Destination file.
    md5, sha256 : str, optional
        Expected hex digests (any case); every one given must match.
    progress : bool, default=False
        Show a progress bar (bytes received).

    Returns
    -------
    pathlib.Path
        ``dest``.

    Raises
    ------
    InvalidArgumentError
        When ``urls`` is empty.
    ChecksumError
        When every mirror failed and at least one served wrong bytes (the message names each URL
        with expected and actual digest).
    SourceNotFoundError
        When no mirror could be reached or each answered with an error.
    """
    dest = Path(dest)
    if isinstance(urls, str):
        urls = [urls]
    if not urls:
        raise InvalidArgumentError("urls: at least one URL is needed")
    expected = _expected_digests(md5, sha256)
    if dest.is_file():
        if not expected or file_digests(dest, list(expected)) == expected:
            return dest
    failures: list[str] = []
    mismatches: list[str] = []
    for url in urls:
        try:
            _fetch(url, dest, expected, progress)
            return dest
        except _ChecksumMismatch as exc:
            mismatches.append(f"{url}: {exc.algorithm} expected {exc.expected}, got {exc.actual}")
        except urllib.error.HTTPError as exc:
            failures.append(f"{url}: HTTP {exc.code} {exc.reason}")
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            failures.append(f"{url}: {reason}")
    if mismatches:
        raise ChecksumError(f"{dest.name}: checksum mismatch: " + "; ".join(mismatches + failures))
    raise SourceNotFoundError(f"{dest.name}: could not be downloaded from any mirror: " + "; ".join(failures))


def download_dataset(
    name: str,
    dest_dir: str | os.PathLike | None = None,
    base_urls: Sequence[str] | None = None,
    progress: bool = False,
) -> Path:
    """Download every file of ``DATASETS[name]`` into ``dest_dir`` and check they parse as MNIST.

    Files already present with the right md5 are not fetched again.

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS` (``"mnist"`` or ``"fashion-mnist"``).
    dest_dir : str or os.PathLike, optional
        Target directory; default ``$REPSCOPE_HOME/datasets/NAME``.
    base_urls : sequence of str, optional
        Replaces the dataset's mirrors (each is joined with the file names).
    progress : bool, default=False
        Show a progress bar per file.

    Returns
    -------
    pathlib.Path
        The directory holding the files.

    Raises
    ------
    InvalidArgumentError
        When ``name`` is unknown or ``base_urls`` is empty.
    ChecksumError, SourceNotFoundError
        When a file cannot be fetched with the right checksum (see :func:`download_file`).
    DataFormatError
        When a downloaded images/labels pair does not read as MNIST (uint8 ``(N, H, W)`` and ``(N,)``).
    """
    if name not in DATASETS:
        raise InvalidArgumentError(f"name: unknown dataset {shown(name)}; downloadable: {', '.join(DATASETS)}")
    dataset = DATASETS[name]
    directory = Path(dest_dir).expanduser() if dest_dir is not None else datasets_dir(name)
    mirrors = tuple(base_urls) if base_urls is not None else dataset.base_urls
    if not mirrors:
        raise InvalidArgumentError("base_urls: at least one base URL is needed")
    mirrors = tuple(url if url.endswith("/") else url + "/" for url in mirrors)
    for file_name, md5 in dataset.md5.items():
        download_file([base + file_name for base in mirrors], directory / file_name, md5=md5, progress=progress)
    for split in ("train", "t10k"):
        images = directory / f"{split}-images-idx3-ubyte.gz"
        labels = directory / f"{split}-labels-idx1-ubyte.gz"
        if images.exists() and labels.exists():
            read_mnist_pair(images, labels)
    return directory

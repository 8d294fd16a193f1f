"""CdSprites+ in the reference multimodal-VAE toolkit's ``.h5`` layout.

The **reference toolkit layout** is the ``traindata.h5`` of the multimodal-VAE comparison toolkit
(CdSprites+): dataset ``image``, ``N x 64 x 64 x 3`` ``uint8`` in BGR channel order (it was written
from OpenCV images), and dataset ``text``, the captions as byte strings. :func:`export_h5` and
:func:`import_h5` convert between the two, chunk by chunk.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from repscope.data.multimodal import attributes as attrs
from repscope.data.store import (
    CAPTIONS_FILE,
    DatasetDir,
    Progress,
    _check_output_free,
    read_dataset,
    write_dataset,
)
from repscope.errors import DataFormatError, InvalidArgumentError, OutputExistsError, SourceNotFoundError
from repscope.fileio import atomic_path
from repscope.validation import check_positive_int

H5_IMAGE = "image"
H5_TEXT = "text"


def export_h5(
    dataset_dir: str | os.PathLike | DatasetDir,
    out_h5: str | os.PathLike,
    chunk: int = 4096,
    progress: Progress | None = None,
) -> Path:
    """Write a CdSprites+ dataset directory as the reference toolkit's ``traindata.h5``.

    ``image`` is ``N x 64 x 64 x 3`` ``uint8`` in BGR order, ``text`` the captions as ASCII byte
    strings (``h5py.File(p)['text'][i]`` is ``bytes``). Copies ``chunk`` samples at a time, writes
    to a temporary file renamed to ``out_h5`` at the end, and never overwrites an existing
    ``out_h5`` (:class:`~repscope.errors.OutputExistsError`).

    Parameters
    ----------
    dataset_dir : str, os.PathLike or DatasetDir
        A CdSprites+ dataset directory (opened with :func:`read_dataset`), or one already open.
    out_h5 : str or os.PathLike
        The ``.h5`` file to create; its folder is created if needed.
    chunk : int, default=4096
        Samples copied at a time (>= 1).
    progress : callable, optional
        ``progress(n_done)``, called after each chunk.

    Returns
    -------
    pathlib.Path
        ``out_h5``.

    Raises
    ------
    InvalidArgumentError
        When ``chunk`` is not a positive integer, or the dataset is not a captioned RGB CdSprites+ one.
    OutputExistsError
        When ``out_h5`` exists (before or after copying).
    DataFormatError
        When a caption is not ASCII (and the errors of :func:`read_dataset`).
    OutputWriteError
        When the output folder or file cannot be written.
    """
    out_h5 = Path(out_h5)
    chunk = _check_chunk(chunk)
    if out_h5.exists() or out_h5.is_symlink():
        raise OutputExistsError(f"{out_h5}: already exists; choose another output file or remove it first")
    dataset = dataset_dir if isinstance(dataset_dir, DatasetDir) else read_dataset(dataset_dir)
    if dataset.generator != "cdsprites" or dataset.images.ndim != 4 or dataset.images.shape[-1] != 3:
        raise InvalidArgumentError(
            f"dataset_dir: {dataset.path} is a {dataset.generator} dataset of images "
            f"{dataset.images.shape}; the .h5 layout holds captioned RGB CdSprites+ images"
        )
    captions = dataset.captions or []
    for i, caption in enumerate(captions):
        if not caption.isascii():
            raise DataFormatError(f"{dataset.path / CAPTIONS_FILE}: row {i}: caption {caption!r} is not ASCII")
    n = len(dataset)
    with atomic_path(out_h5) as temporary:
        with h5py.File(temporary, "w") as handle:
            image = handle.create_dataset(
                H5_IMAGE, shape=dataset.images.shape, dtype=np.uint8, chunks=(min(n, 256), *dataset.images.shape[1:])
            )
            text = handle.create_dataset(H5_TEXT, shape=(n,), dtype=h5py.string_dtype(encoding="ascii"))
            for start in range(0, n, chunk):
                stop = min(start + chunk, n)
                image[start:stop] = np.ascontiguousarray(dataset.images[start:stop, ..., ::-1])
                text[start:stop] = np.array([c.encode("ascii") for c in captions[start:stop]], dtype=object)
                if progress is not None:
                    progress(stop)
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        if out_h5.exists() or out_h5.is_symlink():  # appeared while we copied: keep it
            raise OutputExistsError(f"{out_h5}: already exists; choose another output file or remove it first")
    return out_h5


def import_h5(
    in_h5: str | os.PathLike, level: int, out: str | os.PathLike, chunk: int = 4096, progress: Progress | None = None
) -> Path:
    """Convert the reference toolkit's ``traindata.h5`` of CdSprites+ ``level`` into a dataset directory.

    Images are turned from BGR to RGB; the attribute table is recovered by parsing every caption
    with :func:`~repscope.data.multimodal.attributes.parse_caption`. A caption that is not exactly a
    caption of ``level`` is a :class:`~repscope.errors.DataFormatError` naming the file, the row and
    the caption. ``text`` may hold bytes or str.

    Parameters
    ----------
    in_h5 : str or os.PathLike
        The toolkit's ``.h5``: dataset ``image`` uint8 ``(N, 64, 64, 3)`` BGR and ``text`` ``(N,)`` captions.
    level : int
        CdSprites+ level 1-5 the captions belong to.
    out : str or os.PathLike
        The dataset directory to create; it must not exist or be an empty directory.
    chunk : int, default=4096
        Samples converted at a time (>= 1).
    progress : callable, optional
        ``progress(n_done)``, called after each chunk.

    Returns
    -------
    pathlib.Path
        ``out``, a complete dataset directory (``generator`` ``cdsprites``, ``seed`` None, ``params``
        ``{"imported_from": in_h5}``) of RGB images, the captions and their attribute table.

    Raises
    ------
    InvalidArgumentError
        When ``level`` is not 1-5 or ``chunk`` is not a positive integer.
    SourceNotFoundError
        When ``in_h5`` is not a file.
    OutputExistsError
        When ``out`` exists and is not an empty directory.
    DataFormatError
        When ``in_h5`` is not readable HDF5, lacks ``image`` or ``text`` of the shapes above, holds no
        images, a chunk of ``image`` or ``text`` cannot be read (a corrupt gzip chunk or a truncated
        file: the file, dataset and rows named; ``out`` is then not created), or a caption is not text or
        not a caption of ``level``.
    OutputWriteError
        When ``out`` cannot be written.
    """
    in_h5, out = Path(in_h5), Path(out)
    level = attrs.check_level(level)
    chunk = _check_chunk(chunk)
    if not in_h5.is_file():
        raise SourceNotFoundError(f"{in_h5}: no such file")
    _check_output_free(out)
    try:
        handle = h5py.File(in_h5, "r")
    except OSError as error:
        raise DataFormatError(f"{in_h5}: not a readable HDF5 file ({error})") from None
    with handle:
        image, text = _check_h5_layout(handle, in_h5)
        n = int(image.shape[0])
        if n == 0:
            raise DataFormatError(f"{in_h5}: dataset '{H5_IMAGE}' holds no images")
        columns = list(attrs.level_attributes(level))

        def batches() -> Iterator[tuple[np.ndarray, list[str], pd.DataFrame]]:
            for start in range(0, n, chunk):
                stop = min(start + chunk, n)
                rgb = np.ascontiguousarray(_read_rows(image, start, stop, in_h5)[..., ::-1])
                rows = _read_rows(text, start, stop, in_h5)
                captions = [_decode_caption(value, in_h5, start + i) for i, value in enumerate(rows)]
                table = np.empty((stop - start, len(columns)), dtype=np.int64)
                for i, caption in enumerate(captions):
                    classes = attrs.parse_caption(level, caption)
                    if classes is None:
                        raise DataFormatError(
                            f"{in_h5}: row {start + i}: caption {caption!r} is not a level-{level} CdSprites+ caption"
                        )
                    table[i] = classes
                yield rgb, captions, pd.DataFrame(table, columns=columns)

        return write_dataset(
            out,
            batches(),
            n,
            generator="cdsprites",
            level=level,
            seed=None,
            params={"imported_from": str(in_h5)},
            image_shape=image.shape[1:],
            progress=progress,
        )


def _check_h5_layout(handle: Any, in_h5: Path) -> tuple[Any, Any]:
    found = []
    for name in (H5_IMAGE, H5_TEXT):
        node = handle.get(name)
        if not isinstance(node, h5py.Dataset):
            raise DataFormatError(
                f"{in_h5}: no dataset '{name}' (found: {', '.join(sorted(handle.keys())) or 'nothing'}); "
                "expected the toolkit's 'image' and 'text'"
            )
        found.append(node)
    image, text = found
    if image.dtype != np.uint8 or image.ndim != 4 or image.shape[1:] != (64, 64, 3):
        raise DataFormatError(
            f"{in_h5}: dataset '{H5_IMAGE}' holds {image.dtype} {image.shape}; expected uint8 N x 64 x 64 x 3 (BGR)"
        )
    if text.ndim != 1 or text.shape[0] != image.shape[0]:
        raise DataFormatError(
            f"{in_h5}: dataset '{H5_TEXT}' has shape {text.shape}; expected ({image.shape[0]},), one caption per image"
        )
    if text.dtype.kind not in "SUO":
        raise DataFormatError(f"{in_h5}: dataset '{H5_TEXT}' holds {text.dtype}; expected strings")
    return image, text


def _read_rows(node: Any, start: int, stop: int, in_h5: Path) -> np.ndarray:
    # a corrupt compressed chunk (gzip, szip, a filter missing here) or a truncated file fails only when
    # its rows are read: HDF5 reports it as an OSError ("Can't read data (...)"), named here by file and dataset
    try:
        return node[start:stop]
    except (OSError, RuntimeError, ValueError) as error:
        raise DataFormatError(
            f"{in_h5}: dataset '{node.name.lstrip('/')}' rows {start}-{stop - 1} cannot be read "
            f"(corrupt or truncated data: {error})"
        ) from None


def _decode_caption(value: Any, in_h5: Path, row: int) -> str:
    if isinstance(value, bytes):  # also numpy.bytes_
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise DataFormatError(f"{in_h5}: row {row}: caption {value!r} is not utf-8 text") from None
    if isinstance(value, str):
        return str(value)
    raise DataFormatError(f"{in_h5}: row {row}: caption {value!r} is not a string")


def _check_chunk(chunk: Any) -> int:
    return check_positive_int(chunk, "chunk")

"""Generated datasets on disk: repscope's dataset directories, for any generator with a layout here.

A **dataset directory** (format :data:`FORMAT_VERSION`) holds

- ``dataset.json`` — ``format_version``, ``generator`` (a name of :data:`LAYOUTS`), ``level``
  (1-5, ``null`` for dSprites), ``count``, ``image_shape`` (one image's shape), ``seed``, ``params``
  (whatever the generator was called with), ``files`` (``{name: sha256}``) and ``created_by``;
- ``images.npy`` — ``uint8``, ``(N, 64, 64, 3)`` RGB for CdSprites+, ``(N, 64, 64)`` of 0/1 for
  dSprites; written and read memory-mapped, so a 960,000-image set (11.8 GB) never sits in memory;
- ``captions.txt`` — CdSprites+ only, one caption a line (utf-8, ``\\n``);
- ``factors.csv`` — one row per sample: the class columns (``ATTRIBUTES[:level]`` for CdSprites+,
  :data:`~repscope.data.dsprites.FACTOR_NAMES` for dSprites) first, then any extra columns
  (nuisance factors) the generator gave.

:func:`write_dataset` builds the directory under a temporary sibling name and renames it into place
only when complete, so an interrupted run leaves nothing that looks whole.

The reference multimodal-VAE toolkit's ``.h5`` files are read and written by
:mod:`repscope.data.multimodal.h5`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repscope import version_stamp
from repscope.data.dsprites import FACTOR_NAMES
from repscope.data.multimodal import attributes as attrs
from repscope.data.npzfile import check_npy_file
from repscope.errors import (
    ChecksumError,
    DataFormatError,
    InvalidArgumentError,
    OutputExistsError,
    SourceNotFoundError,
)
from repscope.fileio import (
    _json_default,
    atomic_path,
    check_free_space,
    current_umask,
    make_output_dir,
    output_error,
    reserve_space,
    sha256_file,
    write_json_atomic,
)
from repscope.validation import check_positive_int

FORMAT_VERSION = 1
META_FILE = "dataset.json"
IMAGES_FILE = "images.npy"
CAPTIONS_FILE = "captions.txt"
FACTORS_FILE = "factors.csv"

# Checksums on read (see read_dataset): sha256 runs at ~700-800 MB/s on the 2-core development
# machine (256 MiB: 0.33 s from the page cache), so a whole images.npy up to this size is hashed
# on every read (under 3 s); a larger one (a 960,000-image set is 11.8 GB, ~17 s) is checked by
# size and by the digest of SAMPLE_BLOCKS blocks spread over the file, recorded at write time.
VERIFY_FULL_BYTES = 2 << 30
SAMPLE_BLOCKS = 64
SAMPLE_BLOCK_BYTES = 1 << 16

Progress = Callable[[int], None]


@dataclass(frozen=True)
class GeneratorLayout:
    """What a generator's dataset directory holds: a new generator is one line in :data:`LAYOUTS`.

    ``class_columns(level)`` names the factor columns every row must hold (integer classes),
    ``check_classes(level, table, name)`` checks their values (None: any integers), ``captions``
    whether ``captions.txt`` is written, ``levels`` whether the generator has levels (1-5).
    """

    class_columns: Callable[[int | None], tuple[str, ...]]
    captions: bool = False
    levels: bool = False
    check_classes: Callable[..., Any] | None = None


LAYOUTS: dict[str, GeneratorLayout] = {
    "cdsprites": GeneratorLayout(attrs.level_attributes, captions=True, levels=True, check_classes=attrs.check_table),
    "dsprites": GeneratorLayout(lambda level: FACTOR_NAMES),
}


def layout(generator: str) -> GeneratorLayout:
    """The dataset-directory layout of a generator.

    Parameters
    ----------
    generator : str
        A key of :data:`LAYOUTS`: ``"cdsprites"`` or ``"dsprites"``.

    Returns
    -------
    GeneratorLayout
        Its class columns, whether it writes captions and whether it has levels.

    Raises
    ------
    InvalidArgumentError
        When ``generator`` is not in :data:`LAYOUTS`.
    """
    if generator not in LAYOUTS:
        raise InvalidArgumentError(f"generator: must be one of {', '.join(LAYOUTS)}, got {generator!r}")
    return LAYOUTS[generator]


def class_columns(generator: str, level: int | None) -> tuple[str, ...]:
    """The class columns ``factors.csv`` must hold for ``generator`` (and ``level``).

    Parameters
    ----------
    generator : str
        ``"cdsprites"`` or ``"dsprites"``.
    level : int or None
        CdSprites+ level 1-5; ignored for ``dsprites``.

    Returns
    -------
    tuple of str
        ``ATTRIBUTES[:level]`` (e.g. ``("shape", "size")`` at level 2) for ``cdsprites``;
        :data:`~repscope.data.dsprites.FACTOR_NAMES` (``color, shape, scale, orientation, posX,
        posY``) for ``dsprites``.

    Raises
    ------
    InvalidArgumentError
        When ``generator`` is unknown, or ``level`` is not 1-5 for ``cdsprites``.
    """
    return layout(generator).class_columns(level)


def _check_generator(generator: Any, level: Any) -> int | None:
    if layout(generator).levels:
        return attrs.check_level(level)
    if level is not None:
        raise InvalidArgumentError(f"level: must be None for generator {generator!r}, got {level!r}")
    return None


def _check_output_free(out: Path) -> None:
    """Refuse ``out`` unless it is absent or an empty directory (nothing written is overwritten)."""
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise OutputExistsError(
            f"{out}: already exists and is not an empty directory; choose another --out or remove it first"
        )


# --------------------------------------------------------------------------------------------
# writing


def write_dataset(
    out: str | os.PathLike,
    batches: Iterable[tuple[np.ndarray, Sequence[str] | None, pd.DataFrame]],
    count: int,
    *,
    generator: str,
    level: int | None,
    seed: int | None,
    params: dict[str, Any],
    image_shape: Sequence[int],
    progress: Progress | None = None,
) -> Path:
    """Write a dataset directory from chunks of ``(images, captions or None, factors)``.

    Parameters
    ----------
    out : path
        The dataset directory to create; it must not exist or be an empty directory (checked before
        ``batches`` is consumed, so nothing is generated in vain).
    batches : iterable
        Chunks in sample order, ``count`` rows in all: ``images`` ``uint8`` ``(n, *image_shape)``,
        ``captions`` a sequence of ``n`` strings (CdSprites+) or None (dSprites), ``factors`` a
        DataFrame of ``n`` rows holding at least the class columns (see :func:`class_columns`).
    count : int
        Total number of samples.
    generator, level, seed, params
        Recorded in ``dataset.json``; ``level`` is 1-5 for ``cdsprites`` and None for ``dsprites``.
    image_shape : sequence of int
        Shape of one image, e.g. ``(64, 64, 3)``.
    progress : callable, optional
        ``progress(n_done)``, called after each chunk.

    Returns
    -------
    Path of the complete directory. On any error (or interrupt) the temporary directory is removed
    and ``out`` is left as it was.
    """
    out = Path(out)
    level = _check_generator(generator, level)
    count = check_positive_int(count, "count")
    try:
        image_shape = tuple(int(s) for s in image_shape)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"image_shape: must be a sequence of integers, got {image_shape!r}") from None
    if not image_shape or any(s < 1 for s in image_shape):
        raise InvalidArgumentError(f"image_shape: must hold positive sizes, got {image_shape}")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidArgumentError(f"params: must be a dict, got {type(params).__name__}")
    try:  # fail now, not after an hour of generation
        params = json.loads(json.dumps(params, default=_json_default))
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(f"params: cannot be written to JSON ({error})") from None
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise InvalidArgumentError(f"seed: must be an integer or None, got {seed!r}")

    _check_output_free(out)
    make_output_dir(out.parent)
    # the images alone, before a sample is drawn: the factors and captions add a few percent
    images_bytes = count * math.prod(image_shape)
    check_free_space(out.parent, images_bytes, f"a dataset of {count:,} images of {'x'.join(map(str, image_shape))}")
    try:
        with atomic_path(out, directory=True) as partial:
            # the temporary folder is made private; the dataset gets the mode a plain mkdir would give
            partial.chmod(0o777 & ~current_umask())
            _write_files_and_meta(partial, out, batches, count, generator, level, seed, params, image_shape, progress)
    except OSError as error:  # a full disk while writing the factors, captions or dataset.json
        if error.errno is None:  # ours (the output taken meanwhile), with its own message
            raise
        refusal = OSError(error.errno, os.strerror(error.errno))
        raise output_error(out, refusal, needed=images_bytes) from None
    return out


def _write_files_and_meta(
    partial: Path,
    out: Path,
    batches: Iterable[Any],
    count: int,
    generator: str,
    level: int | None,
    seed: int | None,
    params: dict[str, Any],
    image_shape: tuple[int, ...],
    progress: Progress | None,
) -> None:
    """Write the dataset's files and ``dataset.json`` into ``partial``, the folder that becomes ``out``."""
    files = _write_files(partial, batches, count, generator, level, image_shape, progress, out)
    meta = {
        "format_version": FORMAT_VERSION,
        "generator": generator,
        "level": level,
        "count": count,
        "image_shape": list(image_shape),
        "seed": None if seed is None else int(seed),
        "params": params,
        "files": {name: sha256_file(partial / name) for name in files},
        "images_sample": {
            "blocks": SAMPLE_BLOCKS,
            "block_bytes": SAMPLE_BLOCK_BYTES,
            "sha256": sample_digest(partial / IMAGES_FILE),
        },
        "created_by": version_stamp(),
    }
    write_json_atomic(partial / META_FILE, meta)
    _check_output_free(out)  # someone may have written there while we generated


def _write_files(
    directory: Path,
    batches: Iterable[Any],
    count: int,
    generator: str,
    level: int | None,
    image_shape: tuple[int, ...],
    progress: Progress | None,
    out: Path,
) -> list[str]:
    required = class_columns(generator, level)
    with_captions = layout(generator).captions
    images_file = directory / IMAGES_FILE
    try:
        images_out = np.lib.format.open_memmap(images_file, mode="w+", dtype=np.uint8, shape=(count, *image_shape))
    except OSError as error:
        raise output_error(out, error, needed=count * math.prod(image_shape)) from None
    columns: list[str] | None = None
    done = 0
    try:
        # the map is sparse: a page the disk cannot back would end the process with SIGBUS, so take the blocks now
        reserve_space(images_file, images_out.offset + images_out.nbytes, name=out)
        with contextlib.ExitStack() as stack:
            factors_file = stack.enter_context(open(directory / FACTORS_FILE, "w", encoding="utf-8", newline=""))
            captions_file = (
                stack.enter_context(open(directory / CAPTIONS_FILE, "w", encoding="utf-8", newline=""))
                if with_captions
                else None
            )
            for k, batch in enumerate(batches):
                where = f"batches[{k}] (rows {done}..)"
                try:
                    images, captions, factors = batch
                except (TypeError, ValueError):
                    raise InvalidArgumentError(f"{where}: must be a tuple (images, captions, factors)") from None
                n = _check_images(images, image_shape, where)
                if done + n > count:
                    raise InvalidArgumentError(f"{where}: batches hold more than count={count} rows")
                lines = _check_captions(captions, n, with_captions, where)
                factors, columns = _check_factors(factors, n, required, columns, generator, level, where)
                images_out[done : done + n] = images
                if captions_file is not None:
                    captions_file.write("".join(line + "\n" for line in lines))
                factors.to_csv(factors_file, header=(done == 0), index=False, lineterminator="\n")
                done += n
                if progress is not None:
                    progress(done)
            if done != count:
                raise InvalidArgumentError(f"batches: yielded {done} rows in all, but count={count}")
            for handle in (factors_file, captions_file):
                if handle is not None:
                    handle.flush()
                    os.fsync(handle.fileno())
        images_out.flush()
    finally:
        del images_out
    return [IMAGES_FILE] + ([CAPTIONS_FILE] if with_captions else []) + [FACTORS_FILE]


def _check_images(images: Any, image_shape: tuple[int, ...], where: str) -> int:
    if not isinstance(images, np.ndarray):
        raise InvalidArgumentError(f"{where}: images must be a numpy array, got {type(images).__name__}")
    if images.dtype != np.uint8:
        raise InvalidArgumentError(f"{where}: images must have dtype uint8, got {images.dtype}")
    if images.ndim != len(image_shape) + 1 or images.shape[1:] != image_shape:
        raise InvalidArgumentError(
            f"{where}: images must have shape (n, {', '.join(map(str, image_shape))}), got {images.shape}"
        )
    return int(images.shape[0])


def _check_captions(captions: Any, n: int, with_captions: bool, where: str) -> list[str]:
    if not with_captions:
        if captions is not None:
            raise InvalidArgumentError(f"{where}: dsprites datasets have no captions; pass None")
        return []
    if captions is None or isinstance(captions, (str, bytes)):
        raise InvalidArgumentError(f"{where}: cdsprites chunks need a sequence of {n} captions, got {captions!r:.60}")
    lines = list(captions)
    if len(lines) != n:
        raise InvalidArgumentError(f"{where}: {len(lines)} captions for {n} images")
    for i, line in enumerate(lines):
        if not isinstance(line, str):
            raise InvalidArgumentError(f"{where}: caption {i} must be a str, got {type(line).__name__}")
        if "\n" in line or "\r" in line:
            raise InvalidArgumentError(f"{where}: caption {i} holds a line break: {line!r}")
    return lines


def _check_factors(
    factors: Any,
    n: int,
    required: tuple[str, ...],
    columns: list[str] | None,
    generator: str,
    level: int | None,
    where: str,
) -> tuple[pd.DataFrame, list[str]]:
    if not isinstance(factors, pd.DataFrame):
        raise InvalidArgumentError(f"{where}: factors must be a pandas DataFrame, got {type(factors).__name__}")
    if len(factors) != n:
        raise InvalidArgumentError(f"{where}: factors have {len(factors)} rows for {n} images")
    missing = [name for name in required if name not in factors.columns]
    if missing:
        raise InvalidArgumentError(
            f"{where}: factors lack the class columns {', '.join(missing)} (needed: {', '.join(required)})"
        )
    factors = factors.rename(columns=str)
    if factors.columns.duplicated().any():
        raise InvalidArgumentError(f"{where}: factors have duplicated column names")
    order = list(required) + [c for c in factors.columns if c not in required]
    if columns is not None and sorted(order) != sorted(columns):
        raise InvalidArgumentError(f"{where}: factors columns {order} differ from the first chunk's {columns}")
    columns = columns if columns is not None else order
    classes = factors[list(required)].to_numpy()
    check = layout(generator).check_classes
    if check is not None:
        check(level, classes, name=f"{where}: factors")
    elif classes.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{where}: factors class columns must be integers, got dtype {classes.dtype}")
    return factors[columns], columns


# --------------------------------------------------------------------------------------------
# reading


class DatasetDir:
    """A dataset directory opened by :func:`read_dataset`.

    Attributes
    ----------
    path : Path
    meta : dict — the contents of ``dataset.json``
    images : numpy.memmap — read-only, ``(N, *image_shape)`` ``uint8``
    captions : list of str, or None for dSprites
    factors : pandas.DataFrame — one row per sample
    generator : str
    level : int or None
    """

    def __init__(
        self, path: Path, meta: dict[str, Any], images: np.ndarray, captions: list[str] | None, factors: pd.DataFrame
    ) -> None:
        self.path = path
        self.meta = meta
        self.images = images
        self.captions = captions
        self.factors = factors
        self.generator: str = meta["generator"]
        self.level: int | None = meta["level"]

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def __repr__(self) -> str:
        level = "" if self.level is None else f", level={self.level}"
        return f"DatasetDir({str(self.path)!r}, generator={self.generator!r}{level}, count={len(self)})"

    def attribute_table(self) -> np.ndarray:
        """``(N, L)`` int64 attribute table (columns ``ATTRIBUTES[:level]``) of a CdSprites+ dataset.

        Returns
        -------
        numpy.ndarray
            int64 ``(N, L)`` attribute classes, ``L = level``, read from ``factors.csv``.

        Raises
        ------
        InvalidArgumentError
            When the dataset is not a ``cdsprites`` one.
        DataFormatError
            When the class columns of ``factors.csv`` are not integers or a class is out of its attribute's
            range.
        """
        if self.generator != "cdsprites":
            raise InvalidArgumentError(
                f"{self.path}: attribute tables belong to cdsprites datasets; this one is {self.generator} "
                f"(its classes are factors[{list(FACTOR_NAMES)}])"
            )
        return _attribute_table(self.path / FACTORS_FILE, self.factors, self.level)  # type: ignore[arg-type]


def _attribute_table(file: Path, factors: pd.DataFrame, level: int) -> np.ndarray:
    try:
        return attrs.check_table(level, factors[list(attrs.level_attributes(level))].to_numpy())
    except InvalidArgumentError as error:
        raise DataFormatError(f"{file}: {error}") from None


def sample_digest(file: Path, blocks: int = SAMPLE_BLOCKS, block_bytes: int = SAMPLE_BLOCK_BYTES) -> str:
    """sha256 of a file's size and of ``blocks`` blocks of ``block_bytes`` spread evenly over it
    (first and last included): a check of a large file that reads a few MiB of it.

    Parameters
    ----------
    file : pathlib.Path
        The file to digest (e.g. ``images.npy``).
    blocks : int, default=64
        Number of blocks; blocks that start at the same offset (a file shorter than that) are read once.
    block_bytes : int, default=65536
        Bytes per block (64 KiB).

    Returns
    -------
    str
        64 hex digits: the sha256 of the file size (decimal text) followed by the blocks' bytes.
    """
    size = file.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(file, "rb") as handle:
        last = max(size - block_bytes, 0)
        for offset in sorted({round(k * last / max(blocks - 1, 1)) for k in range(blocks)}):
            handle.seek(offset)
            digest.update(handle.read(block_bytes))
    return digest.hexdigest()


def read_dataset(path: str | os.PathLike, verify: bool | str = "auto") -> DatasetDir:
    """Open a dataset directory written by :func:`write_dataset`.

    ``images`` is memory-mapped read-only. The files are checked against the sha256 digests
    recorded in ``dataset.json`` first (:class:`~repscope.errors.ChecksumError` naming the file on
    a mismatch):

    * ``verify="auto"`` (default): ``captions.txt`` and ``factors.csv`` always; ``images.npy``
      fully when it is at most :data:`VERIFY_FULL_BYTES` (2 GiB, under 3 s at the ~750 MB/s
      sha256 runs at here), otherwise by its size and the digest of 64 blocks of 64 KiB spread
      over it (recorded at write time; a change between the blocks goes unnoticed: pass
      ``verify=True`` when every byte matters). Why not always in full: an 11.8 GB set takes
      ~17 s to hash, on every open, even to look at one sample.
    * ``verify=True``: every file in full, whatever its size.
    * ``verify=False``: no checksums (the shapes and formats are still checked).

    Parameters
    ----------
    path : str or os.PathLike
        The dataset directory.
    verify : {"auto", True, False}, default="auto"
        How much of the files to check against their recorded sha256 (see above).

    Returns
    -------
    DatasetDir
        ``images`` read-only memmap uint8 ``(N, *image_shape)`` (``(N, 64, 64, 3)`` RGB for CdSprites+,
        ``(N, 64, 64)`` of 0/1 for dSprites), ``captions`` (list of ``N`` str, None for dSprites),
        ``factors`` (DataFrame of ``N`` rows, class columns first) and ``meta`` (``dataset.json``).

    Raises
    ------
    InvalidArgumentError
        When ``verify`` is not ``"auto"``, True or False.
    SourceNotFoundError
        When the directory or its ``dataset.json`` is missing.
    DataFormatError
        Naming the file, when a file is missing, corrupt, truncated or disagrees with the others.
    ChecksumError
        Naming the file, when it does not match the digest recorded in ``dataset.json``.
    """
    if not (verify is True or verify is False or verify == "auto"):
        raise InvalidArgumentError(f"verify: must be 'auto', True or False, got {verify!r}")
    path = Path(path)
    if not path.is_dir():
        raise SourceNotFoundError(f"{path}: no such dataset directory")
    meta_file = path / META_FILE
    if not meta_file.is_file():
        raise SourceNotFoundError(f"{meta_file}: missing; {path} is not a repscope sprite dataset directory")
    meta = _read_meta(meta_file)
    generator, level, count = meta["generator"], meta["level"], meta["count"]
    image_shape = tuple(meta["image_shape"])
    expected = [IMAGES_FILE] + ([CAPTIONS_FILE] if layout(generator).captions else []) + [FACTORS_FILE]
    for name in expected:
        if not (path / name).is_file():
            raise DataFormatError(f"{path / name}: missing from the dataset directory")

    images = _read_images(path / IMAGES_FILE, count, image_shape)
    captions = _read_captions(path / CAPTIONS_FILE, count) if layout(generator).captions else None
    factors = _read_factors(path / FACTORS_FILE, count, generator, level)
    # checksums last: a truncated or malformed file is reported as such (DataFormatError) first
    if verify is not False:
        _verify_files(path, meta, expected, full=verify is True)
    return DatasetDir(path, meta, images, captions, factors)


def _read_images(images_file: Path, count: int, image_shape: tuple[int, ...]) -> np.ndarray:
    """``images.npy`` memory-mapped read-only, checked against the count and shape of ``dataset.json``."""
    check_npy_file(images_file, in_memory=False)  # a header declaring more than the file holds: refused here
    try:
        images = np.load(images_file, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise DataFormatError(f"{images_file}: not a readable .npy array, truncated or corrupt ({error})") from None
    if images.dtype != np.uint8 or images.shape != (count, *image_shape):
        raise DataFormatError(
            f"{images_file}: holds {images.dtype} {images.shape}, but {META_FILE} says uint8 {(count, *image_shape)}"
        )
    size = images_file.stat().st_size
    if size != images.offset + images.nbytes:
        raise DataFormatError(
            f"{images_file}: {size} bytes, but a {images.shape} uint8 array takes "
            f"{images.offset + images.nbytes}; the file was changed after writing"
        )
    return images


def _read_captions(captions_file: Path, count: int) -> list[str]:
    """The ``count`` lines of ``captions.txt`` (utf-8, each ended by a line end)."""
    try:
        text = captions_file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataFormatError(f"{captions_file}: not utf-8 text ({error})") from None
    if text and not text.endswith("\n"):
        raise DataFormatError(f"{captions_file}: truncated (the last line has no line end)")
    captions = text.split("\n")[:-1]
    if len(captions) != count:
        raise DataFormatError(f"{captions_file}: {len(captions)} captions, but {META_FILE} says {count} samples")
    return captions


def _read_factors(factors_file: Path, count: int, generator: str, level: int | None) -> pd.DataFrame:
    """``factors.csv``: ``count`` rows holding the generator's class columns, with classes in range."""
    try:
        factors = pd.read_csv(factors_file)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise DataFormatError(f"{factors_file}: not a readable CSV table ({error})") from None
    if len(factors) != count:
        raise DataFormatError(f"{factors_file}: {len(factors)} rows, but {META_FILE} says {count} samples")
    required = class_columns(generator, level)
    missing = [name for name in required if name not in factors.columns]
    if missing:
        raise DataFormatError(
            f"{factors_file}: missing the class columns {', '.join(missing)} (needed: {', '.join(required)})"
        )
    if layout(generator).check_classes is not None:
        try:
            layout(generator).check_classes(level, factors[list(required)].to_numpy(), name="class columns")
        except InvalidArgumentError as error:
            raise DataFormatError(f"{factors_file}: {error}") from None
    elif factors[list(required)].to_numpy().dtype.kind not in "iu":
        raise DataFormatError(f"{factors_file}: class columns {', '.join(required)} must hold integers")
    return factors


def _verify_files(path: Path, meta: dict[str, Any], expected: list[str], full: bool) -> None:
    meta_file = path / META_FILE
    for name in expected:
        if name not in meta["files"]:
            raise DataFormatError(f"{meta_file}: 'files' has no checksum for {name}")
    changed = "the file is corrupt or was changed after writing; write the dataset again (or restore the file)"
    for name, digest in meta["files"].items():
        file = path / name
        if not isinstance(name, str) or Path(name).name != name or not file.is_file():
            raise DataFormatError(f"{file}: listed in {META_FILE} but missing")
        if not full and name == IMAGES_FILE and file.stat().st_size > VERIFY_FULL_BYTES:
            sample = meta.get("images_sample")
            if isinstance(sample, dict) and isinstance(sample.get("sha256"), str):
                try:
                    actual = sample_digest(file, int(sample["blocks"]), int(sample["block_bytes"]))
                except (KeyError, TypeError, ValueError):
                    raise DataFormatError(f"{meta_file}: images_sample is malformed") from None
                if actual != sample["sha256"]:
                    raise ChecksumError(
                        f"{file}: sampled blocks do not match the digest recorded in {META_FILE}; {changed}"
                    )
            continue
        try:
            actual = sha256_file(file)
        except OSError as error:
            raise DataFormatError(f"{file}: cannot be read ({error.strerror or error})") from None
        if actual != digest:
            raise ChecksumError(f"{file}: sha256 {actual} does not match {digest} recorded in {META_FILE}; {changed}")


def _read_meta(meta_file: Path) -> dict[str, Any]:
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise DataFormatError(f"{meta_file}: not valid JSON ({error})") from None
    if not isinstance(meta, dict):
        raise DataFormatError(f"{meta_file}: must hold a JSON object, got {type(meta).__name__}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise DataFormatError(
            f"{meta_file}: format_version {meta.get('format_version')!r} is not supported "
            f"(this repscope reads version {FORMAT_VERSION})"
        )
    missing = [key for key in ("generator", "level", "count", "image_shape", "files") if key not in meta]
    if missing:
        raise DataFormatError(f"{meta_file}: missing keys {', '.join(missing)}")
    try:
        _check_generator(meta["generator"], meta["level"])
    except InvalidArgumentError as error:
        raise DataFormatError(f"{meta_file}: {error}") from None
    count, shape = meta["count"], meta["image_shape"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise DataFormatError(f"{meta_file}: count must be a positive integer, got {count!r}")
    if not isinstance(shape, list) or not shape or not all(isinstance(s, int) and s > 0 for s in shape):
        raise DataFormatError(f"{meta_file}: image_shape must be a list of positive integers, got {shape!r}")
    if not isinstance(meta["files"], dict):
        raise DataFormatError(f"{meta_file}: files must map file names to sha256 digests")
    return meta

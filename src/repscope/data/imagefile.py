"""Reading one image file with Pillow, with the size checked before any pixel is decoded.

``PIL.Image.open`` reads only the file's header, so a file declaring more pixels than a dataset can
use (a "decompression bomb": a few kilobytes that decode to gigabytes) is refused from the header's
width and height alone. Every reader of image files in :mod:`repscope.data` goes through
:func:`read_image`, each with the pixel limit its dataset needs; a truncated or corrupt file (bad
chunk, broken compressed stream, not an image at all) is a :class:`~repscope.errors.DataFormatError`
naming the file, never a Pillow traceback.
"""

from __future__ import annotations

import warnings
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

from repscope.errors import DataFormatError
from repscope.validation import check_positive_int

# the errors Pillow raises on a truncated or corrupt file: OSError (UnidentifiedImageError, "image file is
# truncated", "broken data stream"), SyntaxError ("broken PNG file"), and from some decoders ValueError,
# EOFError or zlib.error
_PILLOW_READ_ERRORS = (OSError, SyntaxError, ValueError, EOFError, zlib.error, Image.DecompressionBombError)


def read_image(path: str | Path, mode: str, max_pixels: int, label: str = "") -> np.ndarray:
    """The pixels of one image file in Pillow ``mode``, refused before decoding when it is too large.

    Parameters
    ----------
    path : str or Path
        The image file (any format Pillow reads).
    mode : str
        Pillow mode the image is converted to (``"RGB"``, ``"L"``, ...).
    max_pixels : int
        Most pixels (width times height, as the header declares them) accepted; the caller's dataset
        decides it.
    label : str, default ""
        Prefix of error messages (e.g. the option that named the folder, ``"texture_dir: "``).

    Returns
    -------
    numpy.ndarray
        uint8 ``(H, W)`` for one-band modes, ``(H, W, C)`` otherwise.

    Raises
    ------
    DataFormatError
        Naming the file: it declares more than ``max_pixels`` pixels (or zero), or it is not a readable
        image (unknown format, truncated, corrupt data).
    InvalidArgumentError
        When ``max_pixels`` is not a positive integer.
    """
    max_pixels = check_positive_int(max_pixels, "max_pixels")
    path = Path(path)
    try:
        with warnings.catch_warnings():
            # Pillow warns from 89 M pixels; our own limit below decides, with a message naming the file
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                width, height = image.size
                if width * height > max_pixels or width * height == 0:
                    raise DataFormatError(
                        f"{label}{path}: declares {width}x{height} pixels; images here hold at most "
                        f"{int(max_pixels):,} pixels (a corrupt file or a decompression bomb)"
                    )
                return np.asarray(image.convert(mode), dtype=np.uint8)
    except DataFormatError:
        raise
    except Image.DecompressionBombError as error:  # before _PILLOW_READ_ERRORS: it says why
        raise DataFormatError(f"{label}{path}: too many pixels to decode ({error})") from None
    except _PILLOW_READ_ERRORS as error:
        raise DataFormatError(f"{label}{path}: not a readable image ({type(error).__name__}: {error})") from None


__all__ = ["read_image"]

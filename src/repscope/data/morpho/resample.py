"""Up- and downscaling of digit batches, with the numbers of scikit-image's image pyramids.

The Morpho-MNIST pipeline (Castro et al., "Morpho-MNIST", section 2.1 and footnote 1) upscales
each 28x28 digit by a factor ``f`` with bicubic interpolation followed by Gaussian smoothing of
bandwidth ``sigma = 2 f / 6`` (scikit-image's ``pyramid_expand``), and downscales a perturbed
high-resolution digit with the same smoothing followed by bilinear resampling (``pyramid_reduce``).

Both are linear along each axis, except one clip: ``resize`` clips its output to the input's
range before the smoothing. So a whole batch is upscaled with two matrix products (one per axis),
a per-image clip and a separable Gaussian filter; the matrices are read off scikit-image's own
``resize`` once per (size, factor, order), which keeps the numbers identical to the per-image
procedure (tested to 1e-12) whatever version of scikit-image is installed.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import ndimage
from skimage.transform import resize

from repscope import validation
from repscope.errors import InvalidArgumentError
from repscope.validation import as_array, check_pixel_values, check_positive_int, to_float01


def default_sigma(factor: int) -> float:
    """Gaussian bandwidth of scikit-image's pyramids: 2 f / 6 covers > 99% of the kernel.

    Parameters
    ----------
    factor : int
        Scaling factor f.

    Returns
    -------
    float
        ``2 f / 6``, in pixels of the high-resolution image.
    """
    return 2.0 * factor / 6.0


@functools.lru_cache(maxsize=16)
def _resize_matrix(n_in: int, n_out: int, order: int) -> np.ndarray:
    """Matrix ``M`` (n_out x n_in) such that resizing along one axis is ``M @ x``.

    Read off ``skimage.transform.resize`` applied to images constant along the other axis:
    resizing is separable, and a constant is mapped to the same constant, so column ``k`` of ``M``
    is the resized image of the indicator of row ``k``.
    """
    columns = np.empty((n_out, n_in))
    for k in range(n_in):
        indicator = np.zeros((n_in, 2))
        indicator[k, :] = 1.0
        resized = resize(indicator, (n_out, 2), order=order, mode="reflect", anti_aliasing=False, clip=False)
        columns[:, k] = resized[:, 0]
    columns.setflags(write=False)
    return columns


def _as_float_batch(images: np.ndarray, name: str = "images") -> np.ndarray:
    """A batch (N, H, W) (one (H, W) image is a batch of one) as float64 in [0, 1]: the pixel
    rule of :mod:`repscope.validation`, uint8 read as intensity / 255."""
    images = as_array(images, name)
    if images.ndim == 2:
        images = images[None]
    if images.ndim != 3:
        raise InvalidArgumentError(f"{name}: expected an (N, H, W) array, got shape {images.shape}")
    return to_float01(check_pixel_values(images, name), dtype=np.float64)


def upscale(images: np.ndarray, factor: int = 4, order: int = 3, sigma: float | None = None) -> np.ndarray:
    """Upscale a batch ``(N, H, W)`` to ``(N, f H, f W)`` floats, as ``pyramid_expand`` per image.

    uint8 input is read as intensity / 255. Equivalent, image by image, to
    ``skimage.transform.pyramid_expand(image, factor, sigma, order)``.

    Parameters
    ----------
    images : array-like of shape (N, H, W) or (H, W)
        uint8 (0-255), or float / bool in [0, 1] without NaN or infinity.
    factor : int, default=4
        Upscaling factor f (>= 1); 1 returns a float64 copy.
    order : int, default=3
        Spline order of the interpolation (3: bicubic).
    sigma : float, optional
        Gaussian bandwidth after interpolation, in high-resolution pixels; default ``2 f / 6``;
        0 for none.

    Returns
    -------
    numpy.ndarray
        float64 ``(N, f H, f W)``, within each image's input range (so in [0, 1]).

    Raises
    ------
    InvalidArgumentError
        When ``images`` is not such a batch or ``factor < 1``.
    """
    batch = _as_float_batch(images)
    n, height, width = batch.shape
    factor = check_positive_int(factor, "factor")
    if factor == 1:
        return batch.copy()
    sigma = default_sigma(factor) if sigma is None else float(sigma)
    rows = _resize_matrix(height, factor * height, order)
    cols = _resize_matrix(width, factor * width, order)
    resized = np.matmul(np.matmul(rows, batch), cols.T)
    # resize() clips to the range of its input (bicubic interpolation overshoots at edges)
    low = batch.min(axis=(1, 2))[:, None, None]
    high = batch.max(axis=(1, 2))[:, None, None]
    np.clip(resized, low, high, out=resized)
    if sigma > 0:
        resized = ndimage.gaussian_filter(resized, sigma=(0, sigma, sigma), mode="reflect")
    return resized


def downscale(images: np.ndarray, factor: int = 4, order: int = 1, sigma: float | None = None) -> np.ndarray:
    """Downscale a batch ``(N, H, W)`` of floats in [0, 1], as ``pyramid_reduce`` per image.

    Gaussian smoothing (``sigma = 2 f / 6``) then resampling of order ``order`` (bilinear).
    Linear interpolation never leaves the input's range, so no clip is needed.

    Parameters
    ----------
    images : array-like of shape (N, H, W) or (H, W)
        Floats (or bool) in [0, 1], or uint8 read as intensity / 255; ``H`` and ``W`` multiples of f.
    factor : int, default=4
        Downscaling factor f; 1 returns a float64 copy.
    order : int, default=1
        Spline order of the resampling (1: bilinear; above 1 the output is clipped to the smoothed
        input's range).
    sigma : float, optional
        Gaussian bandwidth before resampling, in pixels of the input; default ``2 f / 6``; 0 for none.

    Returns
    -------
    numpy.ndarray
        float64 ``(N, H / f, W / f)``.

    Raises
    ------
    InvalidArgumentError
        When ``images`` is not such a batch or its size is not a multiple of ``factor``.
    """
    batch = _as_float_batch(images)
    n, height, width = batch.shape
    if factor == 1:
        return batch.copy()
    if height % factor or width % factor:
        raise InvalidArgumentError(f"images: size {height}x{width} is not a multiple of the factor {factor}")
    sigma = default_sigma(factor) if sigma is None else float(sigma)
    smoothed = batch
    if sigma > 0:
        smoothed = ndimage.gaussian_filter(batch, sigma=(0, sigma, sigma), mode="reflect")
    rows = _resize_matrix(height, height // factor, order)
    cols = _resize_matrix(width, width // factor, order)
    out = np.matmul(np.matmul(rows, smoothed), cols.T)
    if order > 1:
        np.clip(out, smoothed.min(axis=(1, 2))[:, None, None], smoothed.max(axis=(1, 2))[:, None, None], out=out)
    return out


def to_uint8(images: np.ndarray) -> np.ndarray:
    """Floats in [0, 1] to uint8 intensities, rounding to nearest (:func:`repscope.validation.to_uint8`).

    Parameters
    ----------
    images : array-like
        Floats, any shape; values outside [0, 1] are clipped, NaN gives 0.

    Returns
    -------
    numpy.ndarray
        uint8 of the same shape, ``round(255 x)``.
    """
    return validation.to_uint8(images)

"""The outputs a multimodal VAE is judged on (Sejnova et al., Sec. 3.3 and A.2.3), generated in memory and
written in the layout of ``repscope sprites evaluate``
(:data:`~repscope.studies.multimodal.coherency.OUTPUT_LAYOUT`).

:func:`generate_cdsprites_outputs` and :func:`decode_joint_traversal` run the model and return arrays and
captions (:class:`GeneratedOutputs`); :func:`write_generated_outputs` writes them; :meth:`GeneratedOutputs.parts`
hands them to :func:`~repscope.studies.multimodal.coherency.compute_coherency` without a folder.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from repscope.data.multimodal.captions import decode_captions
from repscope.data.multimodal.datasets import cdsprites_dataset
from repscope.errors import InvalidArgumentError
from repscope.fileio import atomic_path, write_bytes_atomic
from repscope.studies.multimodal import analysis as mmvae_analysis
from repscope.studies.multimodal.coherency import OutputPart

EVALUATION_SEED_OFFSET = 1_000_003  # test samples of the evaluation never share a seed with training's
TRAVERSAL_CHUNK = 4096  # latents decoded at a time (32,000 float images would take 1.5 GB)


@dataclass(frozen=True)
class CaptionedImages:
    """Images and captions decoded together, pair by pair (joint samples, joint traversals).

    Attributes
    ----------
    images : numpy.ndarray
        uint8 ``(N, 64, 64, 3)``.
    captions : list of str
        Each caption up to its end mark (``captions.txt``).
    captions_raw : list of str
        The decoder's whole caption (``captions_raw.txt``, what the toolkit's rules read).
    """

    images: np.ndarray
    captions: list[str]
    captions_raw: list[str]


@dataclass(frozen=True)
class GeneratedOutputs:
    """What a model generated from ``n`` test samples, in every coherency direction.

    Attributes
    ----------
    truth : list of str
        The test samples' captions (given to the model for text -> image, the truth of image -> text).
    text_to_image : numpy.ndarray
        uint8 ``(N, 64, 64, 3)``: the images generated from ``truth``.
    image_to_text : list of str
        The captions generated from the test images, up to their end mark.
    image_to_text_raw : list of str
        The same, the decoder's whole caption.
    joint : CaptionedImages
        Image and caption pairs decoded from prior samples.
    joint_traversal : CaptionedImages, optional
        Pairs decoded from the latents of joint coherency by traversals (:func:`decode_joint_traversal`).
    """

    truth: list[str]
    text_to_image: np.ndarray
    image_to_text: list[str]
    image_to_text_raw: list[str]
    joint: CaptionedImages
    joint_traversal: CaptionedImages | None = None

    def with_traversal(self, traversal: CaptionedImages | None) -> GeneratedOutputs:
        """The same outputs with joint traversals."""
        return dataclasses.replace(self, joint_traversal=traversal)

    def parts(self, where: Path = Path("outputs")) -> dict[str, OutputPart]:
        """The outputs as :func:`~repscope.studies.multimodal.coherency.compute_coherency` scores them.

        Parameters
        ----------
        where : pathlib.Path, default=Path("outputs")
            The folder the messages name (the outputs' folder once written).

        Returns
        -------
        dict of str to OutputPart
        """
        parts = {
            "text_to_image": OutputPart(where / "text_to_image", truth=self.truth, images=self.text_to_image),
            "image_to_text": OutputPart(
                where / "image_to_text",
                truth=self.truth,
                captions=self.image_to_text,
                raw_captions=self.image_to_text_raw,
            ),
        }
        for name, pairs in (("joint", self.joint), ("joint_traversal", self.joint_traversal)):
            if pairs is not None:
                parts[name] = OutputPart(
                    where / name, images=pairs.images, captions=pairs.captions, raw_captions=pairs.captions_raw
                )
        return parts


def evaluation_test_set(level: int, n: int, seed: int) -> dict[str, np.ndarray]:
    """The first ``n`` samples of the evaluation's test stream (seed ``seed + EVALUATION_SEED_OFFSET``):
    ``image``, ``text``, ``mask`` and ``attributes`` rows. Sample ``i`` does not depend on ``n``."""
    data = cdsprites_dataset(level=level, train_size=1, val_size=1, test_size=n, seed=seed + EVALUATION_SEED_OFFSET)
    return data.batch("test", np.arange(n), ["image", "text", "mask", "attributes"])


def generate_cdsprites_outputs(
    task: Any,
    level: int,
    n: int,
    seed: int,
    test: dict[str, np.ndarray] | None = None,
    sample: bool = False,
    batch_size: int | None = None,
) -> GeneratedOutputs:
    """Generate text -> image, image -> text and joint outputs on ``n`` fresh test samples; nothing is written.

    Parameters
    ----------
    task : MultimodalVAETask
        A trained task with modalities ``image`` and ``text``.
    level : int
        CdSprites+ level of the test samples.
    n : int
        Samples per direction.
    seed : int
        Seed of the test samples (offset from the training seeds) and of the generation.
    test : dict of str to numpy.ndarray, optional
        The test samples' ``image``, ``text`` and ``mask`` rows (at least ``n``); default: drawn here as
        :func:`evaluation_test_set` draws them.
    sample : bool, default=False
        Cross-generate from a sample of the posterior instead of its mean (``task.generate(sample=True)``).
    batch_size : int, optional
        Examples per forward pass of ``task.generate`` (default: its own).

    Returns
    -------
    GeneratedOutputs
        Without joint traversals.
    """
    if set(getattr(task, "modalities", {})) != {"image", "text"}:
        raise InvalidArgumentError("evaluate: needs a model with the modalities 'image' and 'text' (CdSprites+)")
    test = evaluation_test_set(level, n, seed) if test is None else test
    test = {name: test[name][:n] for name in ("image", "text", "mask")}
    passes = {} if batch_size is None else {"batch_size": int(batch_size)}
    from_text = task.generate({"text": test["text"]}, seed=seed, sample=sample, **passes)
    from_image = task.generate({"image": test["image"]}, seed=seed, sample=sample, **passes)
    joint = task.sample(n, seed=seed)
    return GeneratedOutputs(
        truth=decode_captions(test["text"], test["mask"]),
        text_to_image=_images(from_text["image"]),
        image_to_text=mmvae_analysis.captions_of_logits(from_image["text"]),
        image_to_text_raw=decode_captions(from_image["text"]),
        joint=CaptionedImages(
            _images(joint["image"]), mmvae_analysis.captions_of_logits(joint["text"]), decode_captions(joint["text"])
        ),
    )


def _images(means: np.ndarray) -> np.ndarray:
    # C order, as the arrays read back from images.npy are
    return np.ascontiguousarray(mmvae_analysis.images_of_means(means))


def decode_joint_traversal(
    task: Any,
    latent_dim: int,
    steps: int,
    value_range: tuple[float, float] = mmvae_analysis.JOINT_TRAVERSAL_RANGE,
    batch_size: int | None = None,
) -> CaptionedImages:
    """Decode the latents of joint coherency by traversals
    (:func:`~repscope.studies.multimodal.analysis.joint_traversal_latents`) into images and captions.

    Parameters
    ----------
    task : MultimodalVAETask
        A trained task with ``decode(z (M, latent_dim)[, batch_size=])`` giving ``image`` means and ``text``
        logits.
    latent_dim : int
        Size of the shared latent.
    steps : int
        Samples per dimension (Sejnova et al., A.2.3: 1,000).
    value_range : (float, float), default=(-1.0, 1.0)
        Range of the traversed dimension.
    batch_size : int, optional
        Latents per forward pass of ``task.decode`` (default: its own).

    Returns
    -------
    CaptionedImages
        ``latent_dim * steps`` pairs; the images are filled :data:`TRAVERSAL_CHUNK` latents at a time, so the
        whole set never sits in memory as floats.
    """
    latents = mmvae_analysis.joint_traversal_latents(latent_dim, steps, value_range)
    passes = {} if batch_size is None else {"batch_size": int(batch_size)}
    images = None
    captions: list[str] = []
    raw: list[str] = []
    for start in range(0, len(latents), TRAVERSAL_CHUNK):
        decoded = task.decode(latents[start : start + TRAVERSAL_CHUNK], **passes)
        chunk = mmvae_analysis.images_of_means(decoded["image"])
        if images is None:
            images = np.empty((len(latents), *chunk.shape[1:]), dtype=np.uint8)
        images[start : start + len(chunk)] = chunk
        captions += mmvae_analysis.captions_of_logits(decoded["text"])
        raw += decode_captions(decoded["text"])
    return CaptionedImages(images, captions, raw)


def write_generated_outputs(outputs: GeneratedOutputs, folder: Path) -> Path:
    """Write ``outputs`` into ``folder`` in the layout of
    :data:`~repscope.studies.multimodal.coherency.OUTPUT_LAYOUT` (``joint_traversal/`` where there are
    traversals), each file through a temporary name.

    Parameters
    ----------
    outputs : GeneratedOutputs
        What :func:`generate_cdsprites_outputs` (and :func:`decode_joint_traversal`) made.
    folder : pathlib.Path
        Where they go.

    Returns
    -------
    pathlib.Path
        ``folder``.
    """
    truth = _lines(outputs.truth)
    texts = {
        "text_to_image/truth.txt": truth,
        "image_to_text/truth.txt": truth,
        "image_to_text/captions.txt": _lines(outputs.image_to_text),
        "image_to_text/captions_raw.txt": _lines(outputs.image_to_text_raw),
    }
    for name, data_bytes in texts.items():
        write_bytes_atomic(folder / name, data_bytes)
    _write_pairs(outputs.joint, folder / "joint")
    _save_images(folder / "text_to_image" / "images.npy", outputs.text_to_image)
    if outputs.joint_traversal is not None:
        _write_pairs(outputs.joint_traversal, folder / "joint_traversal")
    return folder


def _write_pairs(pairs: CaptionedImages, folder: Path) -> None:
    write_bytes_atomic(folder / "captions.txt", _lines(pairs.captions))
    write_bytes_atomic(folder / "captions_raw.txt", _lines(pairs.captions_raw))
    _save_images(folder / "images.npy", pairs.images)


def _save_images(path: Path, images: np.ndarray) -> None:
    # straight to the file: a copy in memory first (fileio.save_npy_atomic) would double the traversals' size
    with atomic_path(path) as temporary:
        np.save(temporary, images, allow_pickle=False)


def _lines(captions: list[str]) -> bytes:
    return ("\n".join(captions) + "\n").encode()


def write_cdsprites_outputs(
    task: Any,
    level: int,
    n: int,
    seed: int,
    folder: Path,
    test: dict[str, np.ndarray] | None = None,
    sample: bool = False,
    batch_size: int | None = None,
) -> Path:
    """Generate text -> image, image -> text and joint outputs on ``n`` fresh test samples into ``folder``:
    :func:`generate_cdsprites_outputs`, then :func:`write_generated_outputs`.

    Parameters
    ----------
    task, level, n, seed, test, sample, batch_size
        As :func:`generate_cdsprites_outputs`.
    folder : pathlib.Path
        Where the outputs go (layout :data:`~repscope.studies.multimodal.coherency.OUTPUT_LAYOUT`).

    Returns
    -------
    pathlib.Path
        ``folder``.
    """
    outputs = generate_cdsprites_outputs(task, level, n, seed, test=test, sample=sample, batch_size=batch_size)
    return write_generated_outputs(outputs, folder)


def write_joint_traversal_outputs(
    task: Any,
    latent_dim: int,
    steps: int,
    folder: Path,
    value_range: tuple[float, float] = mmvae_analysis.JOINT_TRAVERSAL_RANGE,
    batch_size: int | None = None,
) -> Path:
    """Decode the latents of joint coherency by traversals into ``folder`` (``images.npy``, ``captions.txt``
    up to each caption's end mark, ``captions_raw.txt`` the decoder's whole caption):
    :func:`decode_joint_traversal`, then written.

    Parameters
    ----------
    task, latent_dim, steps, value_range, batch_size
        As :func:`decode_joint_traversal`.
    folder : pathlib.Path
        Where the outputs go (the ``joint`` layout of
        :data:`~repscope.studies.multimodal.coherency.OUTPUT_LAYOUT`).

    Returns
    -------
    pathlib.Path
        ``folder``.
    """
    _write_pairs(decode_joint_traversal(task, latent_dim, steps, value_range, batch_size=batch_size), folder)
    return folder


__all__ = [
    "EVALUATION_SEED_OFFSET",
    "CaptionedImages",
    "GeneratedOutputs",
    "decode_joint_traversal",
    "evaluation_test_set",
    "generate_cdsprites_outputs",
    "write_cdsprites_outputs",
    "write_generated_outputs",
    "write_joint_traversal_outputs",
]

"""Check a loaded model before any work: one probe batch through it, and a one-line error for each way
it can fail to fit its role (it refuses the input, returns NaN, returns the wrong number of classes or
images of the wrong size), so that an assessment never fails half-way through with a torch traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from repscope.errors import InvalidArgumentError
from repscope.models.external.adapters import TASK_NETWORKS
from repscope.models.external.loading import LoadedModel, load_model
from repscope.models.external.roles import ROLES, run_task
from repscope.models.external.tensors import (
    are_logits,
    are_probabilities,
    check_finite,
    checked_images,
    code_tensor,
    guess_image_shape,
    image_tensor,
    image_tensors,
    logit_tensor,
)

PROBE_SIZE = 4
PROBE_SEED = 0
# the role a run directory's training family plays (the train registry's families)
FAMILY_ROLES = {"vae": "encoder", "supervised": "classifier", "gan": "generator", "multimodal": "multimodal"}


@dataclass(frozen=True)
class ProbeReport:
    """What the probe batch showed.

    Attributes
    ----------
    role : str
        The role checked.
    input_shape : tuple of int
        The probe's shape: ``(4, C, H, W)`` images or ``(4, latent_dim)`` codes.
    output_shape : tuple of int
        The model's output (after taking the codes / logits / images out of a container).
    image_shape : tuple of int or None
        ``(C, H, W)`` of the images read or made.
    outputs_are_logits : bool or None
        A decoder's or generator's outputs: True when some value lies outside [0, 1] (the sigmoid is
        applied), False for intensities; None for other roles.
    outputs_are_probabilities : bool or None
        A classifier's outputs: True for non-negative rows summing to 1 (used as they are), False for
        logits (softmax); None for other roles.
    num_classes : int or None
        A classifier's outputs per image.
    code_dim : int or None
        An encoder's code columns.
    """

    role: str
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    image_shape: tuple[int, ...] | None = None
    outputs_are_logits: bool | None = None
    outputs_are_probabilities: bool | None = None
    num_classes: int | None = None
    code_dim: int | None = None


def _probe_images(loaded: LoadedModel, images: Any) -> torch.Tensor:
    shape = loaded.contract.image_shape
    if images is not None:
        array = checked_images(images, shape)
        return next(image_tensors(array[:PROBE_SIZE], PROBE_SIZE, "cpu"))
    if shape is None:
        raise InvalidArgumentError(
            "--input-size: the model's input shape is unknown; give --input-size C,H,W (or --channels) or the data"
        )
    generator = torch.Generator().manual_seed(PROBE_SEED)
    return torch.rand((PROBE_SIZE, *shape), generator=generator)


def _network(loaded: LoadedModel, role: str) -> torch.nn.Module:
    if loaded.module is not None:
        return loaded.module
    network = getattr(loaded.task, TASK_NETWORKS[role], None)
    if network is None:
        raise InvalidArgumentError(f"--role {role}: the run {loaded.source} has no {role} network")
    return network


def _forward(module: torch.nn.Module, inputs: torch.Tensor, what: str) -> Any:
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            return module(inputs)
    except Exception as exc:  # the user's model: any failure on the probe is reported in one line
        text = str(exc).strip()
        first = f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
        raise InvalidArgumentError(
            f"--input-size/--channels: {what} refused an input of shape {tuple(inputs.shape)} ({first})"
        ) from None
    finally:
        module.train(was_training)


def _check_images_role(loaded: LoadedModel, role: str, images: Any, num_classes: Any, code_dim: Any) -> ProbeReport:
    probe = _probe_images(loaded, images)
    what = f"the {role} {loaded.source}"
    output = _forward(_network(loaded, role), loaded.contract.prepare(probe), what)
    if role == "encoder":
        codes = check_finite(code_tensor(output, what), what)
        if code_dim is not None and codes.shape[1] != int(code_dim):
            raise InvalidArgumentError(f"--model: expected {int(code_dim)} code columns, got {codes.shape[1]}")
        return ProbeReport(
            role, tuple(probe.shape), tuple(codes.shape), tuple(probe.shape[1:]), code_dim=codes.shape[1]
        )
    logits = check_finite(logit_tensor(output, what), what)
    if num_classes is not None and logits.shape[1] != int(num_classes):
        raise InvalidArgumentError(f"--model: expected {int(num_classes)} logits, got {logits.shape[1]}")
    return ProbeReport(
        role,
        tuple(probe.shape),
        tuple(logits.shape),
        tuple(probe.shape[1:]),
        outputs_are_probabilities=are_probabilities(logits),
        num_classes=logits.shape[1],
    )


def _check_generator(loaded: LoadedModel, role: str, images: Any, latent_dim: Any, codes: Any) -> ProbeReport:
    if codes is not None:
        codes = torch.as_tensor(np.asarray(codes, dtype=np.float32))[:PROBE_SIZE]
        if codes.ndim != 2:
            raise InvalidArgumentError(f"codes: expected shape (N, L), got {tuple(codes.shape)}")
    elif latent_dim is None:
        raise InvalidArgumentError(f"--latent-dim: required for a {role} (the number of columns of its codes)")
    else:
        codes = torch.randn((PROBE_SIZE, int(latent_dim)), generator=torch.Generator().manual_seed(PROBE_SEED))
    image_shape = loaded.contract.image_shape
    if image_shape is None and images is not None:
        image_shape = guess_image_shape(images)
    what = f"the {role} {loaded.source}"
    output = _forward(_network(loaded, "decoder"), codes, what)
    made = check_finite(image_tensor(output, image_shape, what), what)
    return ProbeReport(
        role, tuple(codes.shape), tuple(made.shape), tuple(made.shape[1:]), outputs_are_logits=are_logits(made)
    )


def _check_run(loaded: LoadedModel, role: str, images: Any) -> ProbeReport:
    task = run_task(loaded, role)
    what = f"the {role} run {loaded.source}"
    if role in ("encoder", "classifier") and (images is not None or loaded.contract.image_shape is not None):
        probe = _probe_images(loaded, images).numpy()  # (N, C, H, W): the tasks take channels first too
        array = task.encode(probe) if role == "encoder" else task.soft_labels(probe)
        outputs = check_finite(torch.as_tensor(np.asarray(array, dtype=np.float64)), what)
        return ProbeReport(
            role,
            tuple(probe.shape),
            tuple(outputs.shape),
            loaded.contract.image_shape,
            outputs_are_probabilities=True if role == "classifier" else None,
            num_classes=outputs.shape[1] if role == "classifier" else None,
            code_dim=outputs.shape[1] if role == "encoder" else None,
        )
    # a generator's or a multimodal VAE's prior samples (a dict by modality for the latter)
    made = task.sample(2, seed=PROBE_SEED)
    shape = (2,) if isinstance(made, dict) else tuple(np.shape(made))
    return ProbeReport(role, (2,), shape, loaded.contract.image_shape)


def check_model(
    loaded: Any,
    role: str,
    *,
    images: Any = None,
    latent_dim: int | None = None,
    num_classes: int | None = None,
    code_dim: int | None = None,
    codes: Any = None,
) -> ProbeReport:
    """Run a probe batch through the model and check that it fits ``role``.

    Images: 4 of the data (``images``) or, without data, 4 seeded uniform ones of the contract's shape;
    codes: 4 seeded standard normal rows of ``latent_dim`` columns.

    Parameters
    ----------
    loaded : LoadedModel or a source of :func:`~repscope.models.external.loading.load_model`
        The model.
    role : {"encoder", "classifier", "generator", "decoder", "multimodal"}
        What it is assessed as (a decoder: codes to images, as a generator, beside an encoder).
    images : array-like, optional
        The data's images (their first 4 are the probe; their size is what a generator must make).
    latent_dim : int, optional
        A generator's code columns (required for one that is not a repscope run).
    num_classes : int, optional
        A classifier's classes, when the data knows them.
    code_dim : int, optional
        An encoder's expected code columns, when known.
    codes : array-like, optional
        A decoder's or generator's probe codes ``(N, L)`` (their first 4), e.g. an encoder's codes of
        the data; else ``latent_dim`` seeded normal ones.

    Returns
    -------
    ProbeReport

    Raises
    ------
    InvalidArgumentError
        One line: the model refuses the input (naming ``--input-size/--channels``, the shape tried and
        the exception's first line); non-floating or NaN / infinite outputs; ``expected 10 logits, got
        7``; code columns other than ``code_dim``; a generator's images not ``(B, C, H, W)`` or
        ``(B, H, W)`` of the data's size; an unknown role.
    """
    loaded = load_model(loaded)
    if role not in (*ROLES, "decoder"):
        raise InvalidArgumentError(f"--role: expected one of {', '.join(ROLES)}, got {role!r}")
    if loaded.kind == "run":
        return _check_run(loaded, role, images)
    if role == "multimodal":
        raise InvalidArgumentError(
            "--role multimodal: only a repscope run directory of a multimodal VAE can be assessed as one"
        )
    if role in ("generator", "decoder"):
        return _check_generator(loaded, role, images, latent_dim, codes)
    return _check_images_role(loaded, role, images, num_classes, code_dim)


def detect_role(loaded: Any, probe_outputs: Any = None) -> str | None:
    """The role of a model where it is unambiguous, else None (the caller asks for ``--role``).

    Only a repscope run directory says what its model is: its training family (VAE family -> encoder,
    supervised classification -> classifier, GAN / InfoGAN -> generator, multimodal VAE -> multimodal).
    A network from outside is ambiguous (a ``(B, K)`` output may be codes or logits; an image-to-image
    network may be an autoencoder of either), so its role is not guessed.

    Parameters
    ----------
    loaded : LoadedModel or a source of :func:`~repscope.models.external.loading.load_model`
        The model.
    probe_outputs : object, optional
        What a probe batch returned (:class:`ProbeReport` or raw outputs); unused for the decision
        today, accepted so that callers pass what they have.

    Returns
    -------
    str or None
        ``encoder``, ``classifier``, ``generator``, ``multimodal`` or None.
    """
    loaded = load_model(loaded)
    if loaded.kind != "run":
        return None
    family = loaded.metadata.get("family")
    if family == "supervised" and getattr(loaded.task, "hparams", {}).get("kind", "classification") != "classification":
        return None  # a regression has no classes to assess
    return FAMILY_ROLES.get(family)


__all__ = ["FAMILY_ROLES", "ProbeReport", "check_model", "detect_role"]

"""``repscope.assess``: put a model trained anywhere through every repscope assessment that fits its role.

One call loads the model (:func:`repscope.models.external.load_model`: an ``nn.Module``, an import path
``pkg.module:factory``, a TorchScript / ``torch.export`` / ONNX file or a repscope run directory), checks
it on a probe batch before any work, settles its role (the run's own family, else ``role``), loads the
data of that role and runs the role's compute step. Nothing is written; :meth:`Assessment.write` writes
the run directory and its report.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from repscope.errors import InvalidArgumentError
from repscope.studies.assess.assessment import Assessment, chance_notes

__all__ = ["DEFAULT_DATA", "ROLES", "assess", "settle_role"]

# role -> what it assesses (the CLI's --role help is written from it)
ROLES: dict[str, str] = {
    "encoder": "images -> codes: IRS, UC, MIG, DCI, SAP, modularity (with --decoder: CG, traversals)",
    "classifier": "images -> logits: ML4ML invariance test, L0 / L-inf attacks, Raw Zero-Shot DBI and Amalgam",
    "generator": "codes -> 28x28 digits: morphometrics, MMD diversity, code-morphometric correlations",
    "multimodal": "image <-> caption: CdSprites+ cross- and joint-coherency (our rules and the toolkit's)",
}

# the data each role is assessed on when none is named
DEFAULT_DATA: dict[str, str] = {
    "encoder": "dsprites",
    "classifier": "digits",
    "generator": "digits",
    "multimodal": "cdsprites",
}


def settle_role(loaded: Any, role: str | None) -> str:
    """The role to assess ``loaded`` in: ``role`` when given, else the one its outputs or its run make
    unambiguous; refused in one line when neither.

    Parameters
    ----------
    loaded : repscope.models.external.LoadedModel
        The loaded model.
    role : str, optional
        The role asked for (``--role``).

    Returns
    -------
    str
        A key of :data:`ROLES`.
    """
    from repscope.models.external import detect_role  # noqa: PLC0415

    if role is not None:
        if role not in ROLES:
            raise InvalidArgumentError(f"--role: must be one of {', '.join(ROLES)}, got {role!r}")
        return role
    detected = detect_role(loaded)
    if detected is None:
        raise InvalidArgumentError(
            f"--role: cannot tell what {loaded.source} is from its outputs; give --role {'|'.join(ROLES)}"
        )
    return detected


def assess(
    model: Any,
    role: str | None = None,
    data: Any = None,
    *,
    decoder: Any = None,
    model_args: dict[str, Any] | None = None,
    weights: str | Path | None = None,
    contract: Any = None,
    data_params: dict[str, Any] | None = None,
    n: int | None = None,
    seed: int = 0,
    device: str = "cpu",
    batch_size: int = 256,
    progress: Any = None,
    **options: Any,
) -> Assessment:
    """Assess ``model`` in its role on ``data``; writes nothing.

    Parameters
    ----------
    model : torch.nn.Module, str, pathlib.Path or object
        A module, ``"pkg.module:factory"``, a ``.pt`` / ``.pt2`` (TorchScript, ``torch.export``) or ``.onnx``
        file, a repscope run directory, or (``multimodal``) an object with the role's methods.
    role : {"encoder", "classifier", "generator", "multimodal"}, optional
        What the model is; default: detected where unambiguous (a repscope run's family).
    data : str, pathlib.Path, tuple or None
        A registered dataset name, a dataset folder, an ``.npz`` (``images`` with ``factors`` or
        ``labels``) or in-memory arrays; default :data:`DEFAULT_DATA` of the role.
    decoder : optional
        An encoder's decoder (codes -> images), in any form ``model`` takes: adds CG and traversals.
    model_args : dict, optional
        Keyword arguments of a factory.
    weights : str or pathlib.Path, optional
        A ``state_dict`` file for a factory's module (read with ``weights_only=True``).
    contract : repscope.models.external.InputContract, optional
        The model's input (shape, range, mean / std); default: from the file's metadata, else the data's
        shape in [0, 1].
    data_params : dict, optional
        The registered dataset's parameters.
    n : int, optional
        Examples to assess on (each role has its default).
    seed : int, default=0
        Seed of every draw.
    device : str, default="cpu"
        Where the model runs (``"cuda"``, ``"mps"``; ONNX models run on the CPU).
    batch_size : int, default=256
        Images per forward pass.
    progress : bool, optional
        False: no progress bars.
    **options
        The role's own options (``metrics``, ``compat``, ``judges``, ``families``, ``attacks``,
        ``zeroshot``, ``codes``, ``level``, ...): see the role's compute function.

    Returns
    -------
    Assessment
    """
    from repscope.studies.assess import roles  # noqa: PLC0415

    result = _assess(roles, model, role, data, decoder, model_args, weights, contract, data_params, n, seed,
                     device, batch_size, progress, options)  # fmt: skip
    return replace(result, notes=(*result.notes, *chance_notes(result.headline)))


def _assess(
    roles: Any,
    model: Any,
    role: str | None,
    data: Any,
    decoder: Any,
    model_args: dict[str, Any] | None,
    weights: Any,
    contract: Any,
    data_params: dict[str, Any] | None,
    n: int | None,
    seed: int,
    device: str,
    batch_size: int,
    progress: Any,
    options: dict[str, Any],
) -> Assessment:
    if role == "multimodal" or (role is None and roles.is_multimodal_object(model)):
        target = roles.multimodal_model(model, model_args)
        return roles.run_multimodal(target, data, n=n, seed=seed, progress=progress, **options)
    loaded = roles.load(model, model_args=model_args, weights=weights, contract=contract, option="--model")
    role = settle_role(loaded, role)
    if role == "multimodal":
        return roles.run_multimodal(loaded, data, n=n, seed=seed, progress=progress, **options)
    common = {"n": n, "seed": seed, "device": device, "batch_size": batch_size, "progress": progress}
    spec = DEFAULT_DATA[role] if data is None else data
    if role == "encoder":
        return roles.run_encoder(loaded, spec, data_params, decoder=decoder, **common, **options)
    if role == "classifier":
        return roles.run_classifier(loaded, spec, data_params, model_args=model_args, **common, **options)
    return roles.run_generator(loaded, spec, data_params, **common, **options)

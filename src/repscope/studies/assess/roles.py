"""The glue of :func:`repscope.studies.assess.api.assess`: each role's data loaded, its model wrapped and
checked on a probe batch of that data, then its compute step run.

``progress`` is the caller's bool (False: no bars; None or True: the process's mode) and goes to the
compute steps, which draw the bars (one per step, naming the model); the adapters draw none of their own.

The order matters to a user: everything that can be refused (the model's file, the data, the input
contract, the outputs on a probe batch) is refused before the first long step.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from repscope.errors import InvalidArgumentError
from repscope.studies.assess.assessment import Assessment

__all__ = [
    "is_multimodal_object",
    "load",
    "run_classifier",
    "run_encoder",
    "run_generator",
    "run_multimodal",
    "torch_device",
]

DEFAULT_N = {"encoder": 2000, "classifier": 500, "generator": 1000, "multimodal": 500}


def torch_device(accelerator: str) -> Any:
    """The torch device of ``--accelerator`` (``cpu``, ``gpu``, ``cuda``, ``mps``, ``auto``)."""
    from repscope.studies.multimodal.evaluate import evaluation_device  # noqa: PLC0415

    return evaluation_device(accelerator)


def load(model: Any, *, model_args: Any, weights: Any, contract: Any, option: str) -> Any:
    """:func:`repscope.models.external.load_model` of ``model``."""
    from repscope.models.external import load_model  # noqa: PLC0415

    return load_model(model, model_args=model_args, weights=weights, contract=contract, option=option)


def is_multimodal_object(model: Any) -> bool:
    """Whether ``model`` is a Python object with the multimodal contract's methods (not a module or path)."""
    return any(hasattr(model, name) for name in ("image_to_text", "text_to_image")) or (
        hasattr(model, "sample")
        and not hasattr(model, "forward")
        and not isinstance(model, (str, Path))
        and not hasattr(model, "kind")
    )


def _described(loaded: Any) -> str:
    return str(loaded.source)


def _contract_settings(loaded: Any) -> dict[str, Any]:
    contract = loaded.contract
    return {
        "model_kind": loaded.kind,
        "input_contract": contract.describe() if hasattr(contract, "describe") else str(contract),
    }


def run_encoder(
    loaded: Any,
    spec: Any,
    data_params: dict[str, Any] | None,
    *,
    decoder: Any = None,
    n: int | None,
    seed: int,
    device: Any,
    batch_size: int,
    progress: Any,
    **options: Any,
) -> Assessment:
    """Encoder role: factor-labelled data, the encoder (and decoder) checked on a probe batch, then
    :func:`repscope.studies.assess.encoder.assess_encoder`."""
    from repscope.models.external import check_model, fitted_to_data, role_model  # noqa: PLC0415
    from repscope.studies.assess.encoder import assess_encoder  # noqa: PLC0415
    from repscope.studies.assess.factor_data import load_factor_data  # noqa: PLC0415

    data = load_factor_data(spec, params=data_params, n=n or DEFAULT_N["encoder"], seed=seed)
    images = data.images
    loaded = fitted_to_data(loaded, (images.shape[3] if images.ndim == 4 else 1, *images.shape[1:3]), spec)
    check_model(loaded, "encoder", images=data.images[:4])
    encoder = role_model(loaded, "encoder", device=device, batch_size=batch_size, progress=False)
    decoding = None
    if decoder is not None:
        decoder_loaded = load(decoder, model_args=None, weights=None, contract=None, option="--decoder")
        codes = encoder.encode(data.images[:4])
        check_model(decoder_loaded, "decoder", codes=codes, images=data.images[:4])
        decoding = role_model(decoder_loaded, "decoder", device=device, batch_size=batch_size, progress=False)
    elif loaded.kind == "run" and hasattr(loaded.task, "decode"):
        decoding = loaded.task  # a repscope VAE decodes its own codes
    result = assess_encoder(
        encoder, data, decoder=decoding, seed=seed, batch_size=batch_size, progress=progress,
        model_label=_described(loaded), **options,
    )  # fmt: skip
    return _with_model(result, loaded)


def _with_model(result: Assessment, loaded: Any) -> Assessment:
    """``result`` with the model's source and its input contract recorded."""
    return replace(result, model=_described(loaded), settings={**_contract_settings(loaded), **result.settings})


def run_classifier(
    loaded: Any,
    spec: Any,
    data_params: dict[str, Any] | None,
    *,
    n: int | None,
    seed: int,
    device: Any,
    batch_size: int,
    progress: Any,
    zeroshot: Any = None,
    zeroshot_epochs: int = 3,
    workers: int | None = None,
    backend: str = "local",
    zeroshot_out: Path | None = None,
    model_args: dict[str, Any] | None = None,
    trainer: dict[str, Any] | None = None,
    **options: Any,
) -> Assessment:
    """Classifier role: labelled data, the classifier checked on a probe batch (its logits must number the
    data's classes), then :func:`repscope.studies.assess.classifier.assess_classifier`."""
    from repscope.models.external import check_model, fitted_to_data, role_model  # noqa: PLC0415
    from repscope.studies.assess.classifier import assess_classifier  # noqa: PLC0415
    from repscope.studies.assess.label_data import load_label_data  # noqa: PLC0415

    data = load_label_data(spec, params=data_params, n=n or DEFAULT_N["classifier"], seed=seed)
    loaded = fitted_to_data(loaded, tuple(data.images.shape[1:]), spec)
    check_model(loaded, "classifier", images=data.images[:4], num_classes=data.num_classes)
    classifier = role_model(loaded, "classifier", device=device, batch_size=batch_size, progress=False)
    source = None
    if zeroshot is not None:
        # the model's own factory arguments go with it to the zero-shot trainings (the class count excepted,
        # which each training sets)
        same = str(zeroshot) == str(loaded.source)
        args = {k: v for k, v in (model_args or {}).items() if k not in ("num_classes", "num_outputs")} if same else {}
        source = _zeroshot_source(zeroshot, spec, data_params, zeroshot_epochs, workers, backend, zeroshot_out, args)
        if trainer and hasattr(source, "trainer"):
            source = replace(source, trainer=dict(trainer))
    result = assess_classifier(classifier, data, zeroshot=source, seed=seed, progress=progress, **options)
    return _with_model(result, loaded)


def _zeroshot_source(
    zeroshot: Any,
    spec: Any,
    data_params: dict[str, Any] | None,
    epochs: int,
    workers: int | None,
    backend: str,
    out: Path | None,
    model_args: dict[str, Any] | None = None,
) -> Any:
    """What the Raw Zero-Shot step needs: a factory to train the n+1 models with, or their folder."""
    from repscope.studies.assess.zeroshot import ZeroShotFactory, ZeroShotFolder  # noqa: PLC0415

    if not isinstance(spec, str):
        raise InvalidArgumentError("--zeroshot: needs --data to name a registered classification dataset")
    if isinstance(zeroshot, (ZeroShotFactory, ZeroShotFolder)):
        return zeroshot
    if Path(str(zeroshot)).is_dir():
        return ZeroShotFolder(Path(str(zeroshot)), data_name=spec, data_params=dict(data_params or {}))
    return ZeroShotFactory(
        factory=str(zeroshot), data_name=spec, data_params=dict(data_params or {}), epochs=epochs,
        workers=workers, backend=backend, out=out, model_args=dict(model_args or {}),
    )  # fmt: skip


def run_generator(
    loaded: Any,
    spec: Any,
    data_params: dict[str, Any] | None,
    *,
    n: int | None,
    seed: int,
    device: Any,
    batch_size: int,
    progress: Any,
    latent_dim: int | None = None,
    codes: Any = None,
    **options: Any,
) -> Assessment:
    """Generator role: the generator checked on a probe batch of codes (28x28 digits out), then
    :func:`repscope.studies.assess.generator.assess_generator` against test digits."""
    from repscope.models.external import check_model, role_model  # noqa: PLC0415
    from repscope.studies.assess.generator import assess_generator  # noqa: PLC0415
    from repscope.studies.assess.label_data import load_label_data  # noqa: PLC0415

    test_images = None  # the embedded MNIST sample's test digits
    if spec != "digits" or data_params:
        test = load_label_data(spec, params=data_params, n=n or DEFAULT_N["generator"], seed=seed + 1)
        test_images = test.images
    if loaded.kind == "run":
        generator = loaded.task
    else:
        if latent_dim is None:
            raise InvalidArgumentError("--latent-dim: the generator's input size is needed (codes -> digits)")
        check_model(loaded, "generator", latent_dim=latent_dim)
        generator = role_model(loaded, "generator", latent_dim=latent_dim, device=device, batch_size=batch_size)
    dims = _code_dims(codes)
    result = assess_generator(
        generator, test_images=test_images, n=n or DEFAULT_N["generator"], codes=dims, seed=seed,
        progress=progress, latent_dim=latent_dim, name=_described(loaded), **options,
    )  # fmt: skip
    return _with_model(result, loaded)


def _code_dims(codes: Any) -> list[int] | None:
    if codes is None or isinstance(codes, (list, tuple)):
        return None if codes is None else [int(code) for code in codes]
    try:
        return [int(part) for part in str(codes).split(",") if part.strip()]
    except ValueError:
        raise InvalidArgumentError(
            f"--codes: expected comma-separated code dimensions such as 0,1, got {codes!r}"
        ) from None


def multimodal_model(model: Any, model_args: dict[str, Any] | None) -> Any:
    """What the multimodal role assesses: an object with the contract as given, the object a
    ``pkg.module:factory`` returns (called with ``model_args``), or a repscope run directory, loaded."""
    if is_multimodal_object(model):
        return model
    text = str(model)
    if isinstance(model, (str, Path)) and ":" in text and not Path(text).exists():
        from repscope.models.external.loading import import_factory  # noqa: PLC0415

        factory = import_factory(text, "--model")
        try:
            made = factory(**(model_args or {}))
        except Exception as exc:  # the user's factory: its failure in one line
            raise InvalidArgumentError(f"--model {text}: the factory raised {type(exc).__name__}: {exc}") from None
        if not is_multimodal_object(made):
            raise InvalidArgumentError(
                f"--model {text}: returned a {type(made).__name__}, not an object with image_to_text, "
                "text_to_image or sample (the multimodal contract)"
            )
        return made
    return load(model, model_args=model_args, weights=None, contract=None, option="--model")


def run_multimodal(model: Any, data: Any, *, n: int | None, seed: int, progress: Any, **options: Any) -> Assessment:
    """Multimodal role: :func:`repscope.studies.assess.multimodal.assess_multimodal` of a repscope run's
    task or a user object with the multimodal contract."""
    from repscope.studies.assess.multimodal import assess_multimodal  # noqa: PLC0415

    target = model.task if getattr(model, "kind", None) == "run" else model
    if getattr(model, "kind", None) is not None and getattr(model, "kind", None) != "run":
        raise InvalidArgumentError(
            "--role multimodal: takes a repscope multimodal run directory or a Python object with "
            "image_to_text / text_to_image (see the docs' multimodal example)"
        )
    options.pop("device", None), options.pop("batch_size", None)
    level = options.pop("level", None)
    if getattr(model, "kind", None) == "run":
        from repscope.train.reader import open_run  # noqa: PLC0415

        run_level = open_run(model.run_dir).data_params.get("level")
        if level is not None and run_level is not None and int(level) != int(run_level):
            raise InvalidArgumentError(f"--level {level}: the run {model.run_dir} was trained at level {run_level}")
        level = run_level if run_level is not None else level
    if level is None:
        raise InvalidArgumentError("--level: say which CdSprites+ level (1-5) the model was trained on")
    name = str(model.source) if getattr(model, "kind", None) == "run" else type(model).__name__
    return assess_multimodal(
        target, level=int(level), n=n or DEFAULT_N["multimodal"], seed=seed, progress=progress, name=name, **options
    )

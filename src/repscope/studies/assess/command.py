"""``repscope assess``: the command's options read into :func:`repscope.studies.assess.api.assess`, the run
directory written under the one output rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repscope.errors import InvalidArgumentError
from repscope.studies.assess.assessment import Assessment

__all__ = ["contract_from_options", "parse_input_size", "parse_numbers", "run_assess_command"]


def parse_input_size(text: str | None) -> tuple[int, int] | None:
    """``"28"`` -> ``(28, 28)``, ``"64x48"`` -> ``(64, 48)`` (height x width); None stays None."""
    if text is None:
        return None
    parts = text.lower().replace("×", "x").split("x")
    try:
        sizes = [int(part) for part in parts]
    except ValueError:
        sizes = []
    if len(sizes) not in (1, 2) or min(sizes) < 1:
        raise InvalidArgumentError(f"--input-size: expected a size such as 28 or 64x64, got {text!r}")
    return (sizes[0], sizes[-1])


def parse_numbers(text: str | None, option: str) -> tuple[float, ...] | None:
    """``"0.5,0.5,0.5"`` -> ``(0.5, 0.5, 0.5)``; None stays None."""
    if text is None:
        return None
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise InvalidArgumentError(f"{option}: expected comma-separated numbers, got {text!r}") from None


def contract_from_options(options: dict[str, Any]) -> Any:
    """The input contract the options state (None when they state nothing: the file's metadata, else the
    data's shape in [0, 1])."""
    from repscope.models.external import InputContract  # noqa: PLC0415

    size = parse_input_size(options["input_size"])
    mean, std = parse_numbers(options["mean"], "--mean"), parse_numbers(options["std"], "--std")
    channels, input_range = options["channels"], options["input_range"]
    if size is None and channels is None and input_range is None and mean is None and std is None:
        return None
    return InputContract.from_options(size=size, channels=channels, input_range=input_range, mean=mean, std=std)


def _inputs(options: dict[str, Any]) -> list[Any]:
    """What the command reads, so that ``--out`` onto one of them is refused before any work."""
    from repscope.outputs import CommandInput  # noqa: PLC0415

    found = []
    for key, option in (("model", "MODEL"), ("weights", "--weights"), ("decoder", "--decoder"),
                        ("data", "--data"), ("judges", "--judges"), ("assessor", "--assessor"),
                        ("zeroshot", "--zeroshot")):  # fmt: skip
        value = options.get(key)
        if value is not None and ":" not in str(value) and Path(str(value)).exists():
            found.append(CommandInput(Path(str(value)), option, "an input"))
    return found


# option -> (its default, the roles it applies to): a role option given to another role is refused, not ignored
ROLE_OPTIONS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "decoder": (None, ("encoder",)),
    "metric": ([], ("encoder",)),
    "judges": (None, ("encoder",)),
    "bootstrap": (0, ("encoder",)),
    "compat": ("paper", ("encoder", "classifier")),
    "transform": ([], ("classifier",)),
    "assessor": (None, ("classifier",)),
    "attacks": (True, ("classifier",)),
    "attack_n": (None, ("classifier",)),
    "budget": (100, ("classifier",)),
    "search": ("art", ("classifier",)),
    "zeroshot": (None, ("classifier",)),
    "zeroshot_epochs": (3, ("classifier",)),
    "workers": (None, ("classifier",)),
    "backend": ("local", ("classifier",)),
    "latent_dim": (None, ("generator",)),
    "codes": (None, ("generator",)),
    "level": (None, ("multimodal",)),
}


def check_role_options(options: dict[str, Any], role: str) -> None:
    """Refuse an option of another role (``--metric`` with ``--role classifier``) in one line."""
    for name, (default, applies) in ROLE_OPTIONS.items():
        if role not in applies and options.get(name, default) != default:
            flag = "--" + name.replace("_", "-")
            if name == "attacks":
                flag = "--no-attacks"
            raise InvalidArgumentError(f"{flag}: applies to --role {' or '.join(applies)}, not to {role}")


def _role_options(options: dict[str, Any], role: str, target: Path) -> dict[str, Any]:
    """The options of ``role``, as its compute step takes them."""
    if role == "encoder":
        return {"metrics": options["metric"] or None, "compat": options["compat"], "judges": options["judges"],
                "bootstrap": options["bootstrap"]}  # fmt: skip
    if role == "classifier":
        return {"families": options["transform"] or None, "compat": options["compat"],
                "assessor": options["assessor"], "attacks": options["attacks"], "attack_n": options["attack_n"],
                "search": options["search"], "budget": options["budget"], "zeroshot": options["zeroshot"],
                "zeroshot_epochs": options["zeroshot_epochs"], "workers": options["workers"],
                "backend": options["backend"], "zeroshot_out": target / "zeroshot",
                "trainer": {key: value for key, value in (options.get("trainer_flags") or {}).items()
                            if value is not None and key != "max_epochs"}}  # fmt: skip
    if role == "generator":
        return {"latent_dim": options["latent_dim"], "codes": options["codes"]}
    return {"level": options["level"]}


def _settled(options: dict[str, Any], model_args: dict[str, Any], contract: Any) -> tuple[Any, str]:
    """The model (loaded, where its role must be read from it) and its role, before any work."""
    from repscope.studies.assess import roles  # noqa: PLC0415
    from repscope.studies.assess.api import settle_role  # noqa: PLC0415

    if options["role"] == "multimodal":
        return options["model"], "multimodal"
    loaded = roles.load(
        options["model"], model_args=model_args, weights=options["weights"], contract=contract, option="MODEL"
    )
    return loaded, settle_role(loaded, options["role"])


def run_assess_command(options: dict[str, Any]) -> tuple[Assessment, Path]:
    """Run ``repscope assess`` from its parsed options: assess, then write the run directory.

    Parameters
    ----------
    options : dict
        The command's parameters by name (:func:`repscope.cli.assess.assess_command`).

    Returns
    -------
    (Assessment, pathlib.Path)
        The assessment and its report.
    """
    from repscope.config import parse_assignments  # noqa: PLC0415
    from repscope.outputs import output_target, prepare_output  # noqa: PLC0415
    from repscope.studies.assess.api import assess  # noqa: PLC0415
    from repscope.studies.assess.roles import torch_device  # noqa: PLC0415
    from repscope.studies.assess.writing import write_assessment  # noqa: PLC0415

    model_args = parse_assignments(options["model_arg"], "--model-arg")
    data_params = parse_assignments(options["data_param"], "--data-param")
    contract = contract_from_options(options)
    flags = {key: value for key, value in (options.get("trainer_flags") or {}).items() if value is not None}
    device = torch_device(flags.get("accelerator") or "cpu")
    resumable = options["zeroshot"] is not None
    resume = options["resume"] if resumable else None
    if options["resume"] and not resumable:
        raise InvalidArgumentError("--resume: only an assessment that trains zero-shot models can be continued")
    if options["role"] is not None:  # refused before the model loads
        check_role_options(options, options["role"])
    prepare_output(  # an --out the rule refuses is refused before the model loads, too
        options["out"], overwrite=options["overwrite"], resume=resume, kind="directory", inputs=_inputs(options)
    )
    model, role = _settled(options, model_args, contract)
    check_role_options(options, role)
    out = options["out"]
    with output_target(
        out, overwrite=options["overwrite"], resume=resume, kind="directory", inputs=_inputs(options)
    ) as target:
        assessment = assess(
            model, role, options["data"], decoder=options["decoder"], data_params=data_params, n=options["n"],
            seed=options["seed"], device=device, batch_size=options["batch_size"],
            **_role_options(options, role, Path(target)),
        )  # fmt: skip
        write_assessment(assessment, Path(target), checked=True)
    return assessment, Path(out) / "report.html"

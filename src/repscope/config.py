"""YAML configs validated by pydantic: unknown keys and wrong types are errors naming key and file.

Every study and training run reads its config through :func:`load_config`::

    config = load_config(path, TrainConfig, overrides=["model.params.latent_dim=2"])

``overrides`` are ``key=value`` strings (``--set`` on the command line); the key is a dotted path
into the YAML mapping and the value is parsed as YAML (``2`` is an int, ``[1, 2]`` a list, ``a``
a string).
"""

from __future__ import annotations

import contextvars
import copy
import inspect
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from repscope.errors import DataFormatError, InvalidArgumentError

Schema = TypeVar("Schema", bound=BaseModel)


class Section(BaseModel):
    """The base of every config schema (training, studies, dataset builds): unknown keys are errors,
    and building one from Python with a bad value raises :class:`InvalidArgumentError` naming the key
    (a config file goes through :func:`validate_config`, whose message also names the file)."""

    model_config = ConfigDict(extra="forbid")

    def __init__(self, **data: Any) -> None:
        # pydantic calls a custom __init__ for nested sections too: only the outermost call turns
        # the validation error (which then names every nested key) into a repscope error
        if _VALIDATING.get():
            super().__init__(**data)
            return
        token = _VALIDATING.set(True)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidArgumentError(format_validation_error(exc, type(self).__name__)) from None
        finally:
            _VALIDATING.reset(token)


_VALIDATING: contextvars.ContextVar[bool] = contextvars.ContextVar("repscope_validating", default=False)


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """The top-level mapping of a UTF-8 YAML file; a missing, unreadable, non-UTF-8, unparsable or
    non-mapping file is an error naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InvalidArgumentError(f"config {path}: no such file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataFormatError(f"config {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        # YAML configs are UTF-8 whatever the locale (a BOM is allowed)
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"config {path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save the file as UTF-8"
        ) from None
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise DataFormatError(f"config {path}: nested too deeply to be a config") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise DataFormatError(f"config {path}: not valid YAML{line}: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise DataFormatError(f"config {path}: must hold a mapping of keys, found {type(data).__name__}")
    return data


def _section_default(schema: Any, key: str) -> tuple[Any, Any]:
    """The default of field ``key`` of ``schema`` dumped as plain data (None when it has none or is not a
    mapping), and the field's own schema when it is a pydantic model (else None)."""
    if not (inspect.isclass(schema) and issubclass(schema, BaseModel)) or key not in schema.model_fields:
        return None, None
    info = schema.model_fields[key]
    annotation = info.annotation
    nested = annotation if inspect.isclass(annotation) and issubclass(annotation, BaseModel) else None
    if info.is_required():
        return None, nested
    value = info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return (copy.deepcopy(value) if isinstance(value, dict) else None), nested


def apply_overrides(data: Mapping[str, Any], overrides: Iterable[str], schema: Any = None) -> dict[str, Any]:
    """A copy of ``data`` with each ``dotted.key=value`` set (value parsed as YAML).

    With ``schema`` (the config's pydantic model), a key into a section the data leaves out starts
    from that section's default, so ``--set data.params.source=fashion-mnist`` keeps the default
    ``data.name``; without it the section starts empty.
    """
    out = copy.deepcopy(dict(data))
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise InvalidArgumentError(f"--set {item!r}: expected key=value, e.g. trainer.max_epochs=5")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node, section = out, schema
        parts = key.split(".")
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            default, section = _section_default(section, part)
            if child is None:
                child = node[part] = default if default is not None else {}
            if not isinstance(child, dict):
                prefix = ".".join(parts[: depth + 1])
                raise InvalidArgumentError(f"--set {item!r}: {prefix} is not a mapping")
            node = child
        node[parts[-1]] = value
    return out


def parse_assignments(items: Iterable[str], option: str) -> dict[str, Any]:
    """``["key=value", ...]`` (a repeated option such as ``--data-param``) as a dict, values parsed as YAML.

    Raises
    ------
    InvalidArgumentError
        Naming ``option`` and the item without ``=`` or without a key.
    """
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidArgumentError(f"{option} {item!r}: expected key=value")
        try:
            params[key] = yaml.safe_load(value)
        except yaml.YAMLError:
            params[key] = value
    return params


# keys renamed so that one concept has one name in every dataset and config: an old config gets
# the new name in its error instead of a bare "unknown key"
RENAMED_KEYS = {"max_train": "train_size", "max_test": "test_size", "root": "data_dir"}


def format_validation_error(exc: ValidationError, source: str, prefix: str = "") -> str:
    """One line naming every bad key (dotted, after ``prefix``) and what is wrong with it."""
    problems = []
    for error in exc.errors():
        key = ".".join([prefix] * bool(prefix) + [str(part) for part in error["loc"]]) or "(top level)"
        if error["type"] == "extra_forbidden":
            last = str(error["loc"][-1]) if error["loc"] else ""
            renamed = f" (renamed {RENAMED_KEYS[last]})" if last in RENAMED_KEYS else ""
            problems.append(f"unknown key {key}{renamed}")
        elif error["type"] == "missing":
            problems.append(f"missing key {key}")
        else:
            problems.append(f"key {key}: {error['msg']} (got {error.get('input')!r})")
    return f"{source}: " + "; ".join(problems)


def validate_config(data: Mapping[str, Any], schema: type[Schema], source: str) -> Schema:
    """``data`` validated against ``schema``; an error names every bad key and ``source``."""
    token = _VALIDATING.set(True)
    try:
        return schema.model_validate(dict(data))
    except ValidationError as exc:
        raise InvalidArgumentError(format_validation_error(exc, source)) from None
    finally:
        _VALIDATING.reset(token)


def load_config(
    path: str | Path | None,
    schema: type[Schema],
    overrides: Iterable[str] = (),
    default: Mapping[str, Any] | None = None,
) -> Schema:
    """Read ``path`` (or start from ``default`` when ``path`` is None), apply overrides, validate."""
    if path is None:
        data = dict(default or {})
        source = "default config"
    else:
        data = read_yaml_mapping(path)
        source = f"config {path}"
    overrides = list(overrides)
    if overrides:
        data = apply_overrides(data, overrides, schema)
        source += " with --set " + " ".join(overrides)
    return validate_config(data, schema, source)


SHIPPED_DIR = Path(__file__).parent / "configs"


def shipped_config_names() -> list[str]:
    """The names of the configs shipped inside the package (``repscope/configs/<name>.yaml``), sorted."""
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.yaml"))


def _close_names(name: str) -> str:
    """`` (close: a, b)`` naming the shipped configs spelt like ``name``, or ``""`` when none is."""
    import difflib  # noqa: PLC0415

    names = shipped_config_names()
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    close += [n for n in names if name and name in n and n not in close][: 3 - len(close)]
    return f"; close: {', '.join(close)}" if close else ""


def shipped_config_path(name: str) -> Path:
    """Path of a config shipped inside the package (``repscope/configs/<name>.yaml``).

    Parameters
    ----------
    name : str
        The config's name, with or without ``.yaml``.

    Returns
    -------
    pathlib.Path
        The shipped file.

    Raises
    ------
    InvalidArgumentError
        No shipped config of that name; the one-line message names the close ones.
    """
    stem = name.removesuffix(".yaml")
    path = SHIPPED_DIR / f"{stem}.yaml"
    if not stem or "/" in stem or "\\" in stem or not path.is_file():
        raise InvalidArgumentError(
            f"config {name!r}: no shipped config of that name{_close_names(stem)} (repscope configs lists them)"
        )
    return path


def resolve_config_path(path: str | Path) -> Path:
    """CONFIG as a command reads it: a YAML file (relative to the working directory), else the name of a
    shipped config (``train-cnn5`` or ``train-cnn5.yaml``: ``repscope configs`` lists them).

    Parameters
    ----------
    path : str or pathlib.Path
        What the command line gave.

    Returns
    -------
    pathlib.Path
        The file to read: ``path`` when it is a file, else the shipped config of that name.

    Raises
    ------
    InvalidArgumentError
        Neither a file nor a shipped name: one line naming the close shipped names (and, for a path whose
        file name is a shipped config's, that name).
    """
    given = Path(path)
    if given.is_file():
        return given
    stem = given.name.removesuffix(".yaml")
    shipped = SHIPPED_DIR / f"{stem}.yaml"
    if str(given.parent) in ("", ".") and given.name and shipped.is_file():
        return shipped
    if given.is_dir():
        raise InvalidArgumentError(f"config {path}: a folder, not a YAML file")
    if shipped.is_file():  # a path from another working directory (the README's src/repscope/configs/...)
        raise InvalidArgumentError(
            f"config {path}: no such file (from {Path.cwd()}); for the shipped config of that file name give its "
            f"name, {stem}"
        )
    raise InvalidArgumentError(
        f"config {path}: no such file (from {Path.cwd()}) and no shipped config of that name{_close_names(stem)} "
        "(repscope configs lists them)"
    )


def config_description(path: str | Path) -> str:
    """What a config file says it is: the first sentence of its leading ``#`` comment, one line (without a
    leading ``repscope <command>:``), cut to 100 characters; ``""`` when it starts with no comment.

    Parameters
    ----------
    path : str or pathlib.Path
        A YAML config.

    Returns
    -------
    str
        The description.
    """
    import re  # noqa: PLC0415

    lines = []
    for line in Path(path).read_text(encoding="utf-8-sig").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(line for line in lines if line)
    text = re.sub(r"^repscope [a-z -]+?: ", "", text)
    # a full stop ends the sentence before a capital or the end, not after "et al" or "e.g"
    sentence = re.split(r"(?<!\bal)(?<!e\.g)(?<!i\.e)\.(?=\s+[A-Z]|\s*$)", text, maxsplit=1)[0]
    if len(sentence) > 100:
        sentence = sentence[:97].rsplit(" ", 1)[0] + "..."
    return sentence[:1].upper() + sentence[1:]


def reapply_after_quick(config: Schema, overrides: Iterable[str], values: Mapping[str, Any], source: str) -> Schema:
    """``config`` (shrunk by a ``--quick``) with the ``--set`` ``overrides`` and the command-line config
    ``values`` set again, so that what the command line names wins over what ``--quick`` chose.

    Parameters
    ----------
    config : pydantic.BaseModel
        The shrunk config.
    overrides : iterable of str
        ``key=value`` strings, as :func:`apply_overrides` reads them.
    values : mapping
        Top-level config keys given as options, applied last.
    source : str
        Where the config came from, for error messages.

    Returns
    -------
    pydantic.BaseModel
        The config, of the same schema, validated again; ``config`` itself when nothing is to be set.
    """
    overrides = list(overrides)
    if not overrides and not values:
        return config
    schema = type(config)
    data = apply_overrides(config.model_dump(mode="json"), overrides, schema)
    data.update(values)
    return validate_config(data, schema, source)


def signature_schema(function: Any, name: str, skip: Iterable[str] = ()) -> type[BaseModel]:
    """A pydantic model of a callable's keyword parameters (types from its annotations, defaults
    from its signature, unknown keys forbidden), so ``params:`` mappings in configs are checked
    against the very function or class they configure."""
    target = function.__init__ if inspect.isclass(function) else function
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # unresolvable annotation: fall back to no type checking for it
        hints = {}
    skip = set(skip) | {"self"}
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(target).parameters.values():
        if parameter.name in skip or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (hints.get(parameter.name, Any), default)
    return create_model(name, __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True), **fields)


def validate_params(
    function: Any, params: Mapping[str, Any], source: str, prefix: str, skip: Iterable[str] = ()
) -> dict[str, Any]:
    """``params`` checked against ``function``'s signature; errors name ``prefix.<key>`` in ``source``."""
    schema = signature_schema(function, "Params", skip)
    try:
        validated = schema.model_validate(dict(params))
    except ValidationError as exc:
        raise InvalidArgumentError(format_validation_error(exc, source, prefix)) from None
    return {key: getattr(validated, key) for key in params}

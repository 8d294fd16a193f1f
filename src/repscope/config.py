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

from repscope.errors import ECHO_LIMIT, DataFormatError, InvalidArgumentError, RepscopeError, shown

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


# most values that expanding a document's aliases may add: a config repeats a section a few times, while
# nine nested aliases of nine items each ("billion laughs") make a billion values out of a kilobyte
MAX_ALIAS_VALUES = 10_000
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _CheckedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a mapping key given twice (PyYAML keeps the last one silently) and
    records whether the document holds an alias, for :func:`_check_alias_expansion`."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicate: tuple[int, Any] | None = None
        self.holds_alias = False

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.holds_alias = True
        return super().compose_node(parent, index)

    def compose_mapping_node(self, anchor: Any) -> Any:
        # checked on the nodes as written: after construction a merge (<<) may rightly repeat a key
        node = super().compose_mapping_node(anchor)
        seen = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = (key_node.tag, key_node.value)
            if key in seen and self.duplicate is None:
                self.duplicate = (key_node.start_mark.line + 1, key_node.value)
            seen.add(key)
        return node


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_alias_expansion(root: Any, source: str, error: type[RepscopeError]) -> None:
    """Refuse a document whose aliases, expanded, would add more than :data:`MAX_ALIAS_VALUES` values, or
    that holds itself; counted on the node graph (each node once), so a bomb is refused without expanding it."""
    expanded: dict[int, int] = {}  # node id -> values in its expansion
    open_nodes: set[int] = set()  # the path from the root to the node being counted
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:  # iterative depth-first count: a deep document must not exhaust Python's stack
        node, children_counted = stack.pop()
        if children_counted:
            open_nodes.discard(id(node))
            expanded[id(node)] = 1 + sum(expanded[id(child)] for child in _children(node))
            continue
        if id(node) in expanded:
            continue
        if id(node) in open_nodes:
            raise error(f"{source}: an alias refers to a value that holds it (a recursive value)")
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in expanded)
    if expanded[id(root)] - len(expanded) > MAX_ALIAS_VALUES:
        raise error(f"{source}: aliases expand past {MAX_ALIAS_VALUES} values (an alias bomb?)")


def load_yaml(text: str, source: str, error: type[RepscopeError] = DataFormatError) -> Any:
    """The value of one YAML document, as ``yaml.safe_load`` reads it, with two refusals.

    * A mapping key given twice is refused (``safe_load`` keeps the last value silently, so an edit
      lower in a file would win unseen); a merge key (``<<: *base``) may still be overridden.
    * Aliases are expanded under a limit: the values the aliases add (each alias counts the values of
      what it names) may not exceed :data:`MAX_ALIAS_VALUES`, and a value may not hold itself. The
      count is made on the parsed nodes before anything is built, so an alias bomb ("billion laughs")
      is refused in milliseconds instead of expanding inside validation.

    Every YAML the package reads from a user goes through this function: config files, ``--set`` and
    ``key=value`` values, a run's ``config.yaml`` read back.

    Parameters
    ----------
    text : str
        The document.
    source : str
        Where it came from (``config runs/a/config.yaml``, ``--set 'seed=1'``), named in the messages.
    error : type, default=DataFormatError
        The :class:`RepscopeError` subclass raised on a refusal.

    Returns
    -------
    Any
        The document's value (None for an empty document).

    Raises
    ------
    RepscopeError
        Of type ``error``: ``<source> line 7: key 'beta' given twice``, ``<source>: aliases expand past
        10000 values (an alias bomb?)``, or a recursive alias.
    yaml.YAMLError
        When the text is not YAML (the caller names the file and the line).
    """
    loader = _CheckedLoader(text)
    try:
        root = loader.get_single_node()
        if loader.duplicate is not None:
            line, key = loader.duplicate
            raise error(f"{source} line {line}: key {shown(key)} given twice")
        if root is None:
            return None
        if loader.holds_alias:
            _check_alias_expansion(root, source, error)
        return loader.construct_document(root)
    finally:
        loader.dispose()


# a config is a few kilobytes; a larger file (or an endless device) is not one
MAX_CONFIG_BYTES = 64 * 2**20
# the mappings of configs that are not regular files (a named pipe, a shell's <(...) as /dev/fd/N): such a
# file can be read once, and a command that needs its config again (a sweep's points) gets this copy
_READ_ONCE: dict[str, dict[str, Any]] = {}


def _config_bytes(path: Path) -> bytes:
    """The bytes of config ``path``, whatever kind of file it is, read once; refused past MAX_CONFIG_BYTES."""
    if not path.exists():
        raise InvalidArgumentError(f"config {path}: no such file")
    if path.is_dir():
        raise InvalidArgumentError(f"config {path}: a folder, not a YAML file")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise DataFormatError(f"config {path}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise DataFormatError(f"config {path}: larger than {MAX_CONFIG_BYTES // 2**20} MiB, too large to be a config")
    return raw


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """The top-level mapping of a UTF-8 YAML file (:func:`load_yaml`: no key twice, aliases under a limit).

    Any kind of file is read, once: a regular file, a named pipe or a shell's process substitution
    (``<(...)``, a ``/dev/fd/N`` path); the mapping of a file that is not regular is kept, so that a
    second call for the same path returns a copy instead of reading an empty pipe.

    Parameters
    ----------
    path : str or pathlib.Path
        The file.

    Returns
    -------
    dict
        The mapping (empty for an empty file).

    Raises
    ------
    InvalidArgumentError
        When the file does not exist or is a folder.
    DataFormatError
        When it cannot be read, is larger than :data:`MAX_CONFIG_BYTES`, is not UTF-8, not YAML, not a
        mapping, repeats a key or holds an alias bomb (each naming the file).
    """
    path = Path(path)
    if str(path) in _READ_ONCE:
        return copy.deepcopy(_READ_ONCE[str(path)])
    regular = path.is_file()
    raw = _config_bytes(path)
    try:
        # YAML configs are UTF-8 whatever the locale (a BOM is allowed)
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"config {path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save the file as UTF-8"
        ) from None
    try:
        data = load_yaml(text, f"config {path}")
    except RecursionError:
        raise DataFormatError(f"config {path}: nested too deeply to be a config") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise DataFormatError(f"config {path}: not valid YAML{line}: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DataFormatError(f"config {path}: must hold a mapping of keys, found {type(data).__name__}")
    if not regular:
        _READ_ONCE[str(path)] = copy.deepcopy(data)
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
            raise InvalidArgumentError(f"--set {shown(item)}: expected key=value, e.g. trainer.max_epochs=5")
        try:
            value = load_yaml(raw, f"--set {shown(item)}", InvalidArgumentError) if raw.strip() else ""
        except (yaml.YAMLError, RecursionError):
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
                raise InvalidArgumentError(f"--set {shown(item)}: {shown_key(prefix)} is not a mapping")
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
            raise InvalidArgumentError(f"{option} {shown(item)}: expected key=value")
        try:
            params[key] = load_yaml(value, f"{option} {shown(item)}", InvalidArgumentError)
        except (yaml.YAMLError, RecursionError):
            params[key] = value
    return params


def shown_key(text: str) -> str:
    """A key, dotted path or ``--set`` item as given when short, else cut as :func:`repscope.errors.shown` cuts
    a value (a key can be as long as a YAML line)."""
    return text if len(text) <= ECHO_LIMIT else shown(text)


# keys renamed so that one concept has one name in every dataset and config: an old config gets
# the new name in its error instead of a bare "unknown key"
RENAMED_KEYS = {
    "max_train": "train_size",
    "max_test": "test_size",
    "root": "data_dir",
    "classifiers_dir": "judges_dir",
}


def format_validation_error(exc: ValidationError, source: str, prefix: str = "") -> str:
    """One line naming every bad key (dotted, after ``prefix``) and what is wrong with it."""
    problems = []
    for error in exc.errors():
        key = shown_key(".".join([prefix] * bool(prefix) + [str(part) for part in error["loc"]])) or "(top level)"
        if error["type"] == "extra_forbidden":
            last = str(error["loc"][-1]) if error["loc"] else ""
            renamed = f" (renamed {RENAMED_KEYS[last]})" if last in RENAMED_KEYS else ""
            problems.append(f"unknown key {key}{renamed}")
        elif error["type"] == "missing":
            problems.append(f"missing key {key}")
        else:
            problems.append(f"key {key}: {error['msg']} (got {shown(error.get('input'))})")
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
        source += " with --set " + " ".join(map(shown_key, overrides))
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
            f"config {shown(name)}: no shipped config of that name{_close_names(stem)} (repscope configs lists them)"
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
    if given.exists() and not given.is_dir():  # a regular file, a named pipe, a shell's <(...)
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
        annotation = hints.get(parameter.name, Any)
        if annotation is int and (parameter.name == "seed" or parameter.name.endswith("_seed")):
            from repscope.validation import Seed  # noqa: PLC0415 -- numpy stays out of the CLI's start-up

            annotation = Seed  # one seed rule for every params: mapping too
        fields[parameter.name] = (annotation, default)
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

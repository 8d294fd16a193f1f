"""Seeds are checked once, for every command, against the range the libraries accept: [0, 2**32 - 1]
(Lightning's seed_everything silently replaces a seed outside it by 0; numpy's SeedSequence refuses
negative ones). One rule (repscope.validation.check_seed) behind every ``--seed`` option, every ``seed``
config key and every ``--set seed=...``."""

from __future__ import annotations

import inspect
from typing import Annotated

import pytest
import typer.main
import yaml
from pydantic import TypeAdapter, ValidationError

from repscope.cli import app
from repscope.config import Section, signature_schema
from repscope.errors import InvalidArgumentError
from repscope.validation import SEED_MAX, check_seed

RANGE = "expected an integer in [0, 4294967295]"


def error_line(code: int, err: str) -> str:
    """The one error line of a refused command (a slow start may print a progress line before it)."""
    errors = [line for line in err.splitlines() if line.startswith("repscope: error: ")]
    assert code == 1 and len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


@pytest.mark.parametrize("seed", [0, 7, SEED_MAX])
def test_the_range_holds_its_ends(seed):
    assert SEED_MAX == 4294967295 and check_seed(seed) == seed


@pytest.mark.parametrize("seed", [-1, 2**32, 2**64 + 1, True, 1.5, "3", None])
def test_anything_else_is_refused_naming_the_key(seed):
    with pytest.raises(InvalidArgumentError) as refused:
        check_seed(seed, "data.seed")
    assert str(refused.value) == f"data.seed: {RANGE}, got {seed!r}"


# --------------------------------------------------------------------------------------------
# every --seed option


def seed_options() -> list[tuple[tuple[str, ...], object]]:
    """(command words, option) for every option of the CLI whose name ends in ``seed`` (duck-typed: typer
    may build its commands with its own copy of click)."""
    found = []

    def walk(command, words: tuple[str, ...]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, (*words, name))
            return
        found.extend((words, p) for p in command.params if p.param_type_name == "option" and p.name.endswith("seed"))

    walk(typer.main.get_command(app), ())
    return found


SEED_OPTIONS = seed_options()


def test_the_seed_options_are_found():
    commands = {" ".join(words) for words, _ in SEED_OPTIONS}
    # one command of each area that takes a seed on the command line
    assert {"sprites generate", "morpho build", "disentangle score", "candle pairs", "zeroshot attack"} <= commands
    assert len(SEED_OPTIONS) >= 14


@pytest.mark.parametrize("words, option", SEED_OPTIONS, ids=[f"{' '.join(w)} {o.opts[-1]}" for w, o in SEED_OPTIONS])
def test_every_seed_option_is_refused_out_of_range_before_the_command_starts(run_cli, words, option):
    flag = max(option.opts, key=len)
    for value, shown in (("-1", "-1"), (str(2**32), "4294967296")):
        code, out, err = run_cli([*words, flag, value])
        assert error_line(code, err) == f"repscope: error: {flag}: {RANGE}, got {shown}"
        assert out == ""


def test_disentangle_score_with_a_bootstrap_refuses_a_negative_seed(run_cli, tmp_path):
    scores = tmp_path / "scores.npz"
    __import__("numpy").savez(scores, factors=[[0], [1], [0], [1]], codes=[[0.1], [0.9], [0.2], [0.8]])
    code, out, err = run_cli(["disentangle", "score", str(scores), "--bootstrap", "5", "--seed", "-1"])
    assert error_line(code, err) == f"repscope: error: --seed: {RANGE}, got -1"
    assert out == ""


# --------------------------------------------------------------------------------------------
# every seed key of a config, --set seed=... included

TINY_TRAIN = {
    "model": {"name": "lenet5", "params": {"lr": 1e-3}},
    "data": {"name": "digits", "params": {"source": "mnist-sample", "train_size": 60, "test_size": 20}},
    "trainer": {"max_epochs": 1},
    "seed": 0,
}


@pytest.mark.parametrize(
    "in_file, overrides, shown",
    [(-1, [], "-1"), (0, ["--set", f"seed={2**64 + 1}"], "18446744073709551617"), (0, ["--set", "seed=true"], "True")],
    ids=["file", "set-2**64+1", "set-true"],
)
def test_a_train_config_seed_out_of_range_is_refused_naming_the_key(run_cli, tmp_path, in_file, overrides, shown):
    config = tmp_path / "train.yaml"
    config.write_text(yaml.safe_dump({**TINY_TRAIN, "seed": in_file}))
    out = tmp_path / "run"
    code, _, err = run_cli(["train", str(config), *overrides, "--out", str(out)])
    line = error_line(code, err)
    assert line.startswith(f"repscope: error: config {config}")
    assert line.endswith(f": key seed: {RANGE} (got {shown})")
    assert not out.exists()


def test_the_largest_seed_is_kept_as_given(run_cli, tmp_path):
    config = tmp_path / "train.yaml"
    config.write_text(yaml.safe_dump(TINY_TRAIN))
    code, out, err = run_cli(["train", str(config), "--set", f"seed={SEED_MAX}", "--print-config"])
    assert code == 0, err
    assert yaml.safe_load(out)["seed"] == SEED_MAX


def test_a_study_set_seed_is_refused_naming_the_nested_key(run_cli):
    code, _, err = run_cli(["zeroshot", "study", "--set", "attack.seed=-1", "--print-config"])
    assert error_line(code, err).endswith(f"with --set attack.seed=-1: key attack.seed: {RANGE} (got -1)")


def test_a_params_mapping_seed_follows_the_same_rule():
    def loader(source: str = "x", seed: int = 0, texture_seed: int = 0, count: int = 1) -> None:
        """A data loader's signature: its seeds get the rule, its other integers do not."""

    schema = signature_schema(loader, "params")
    assert schema(seed=SEED_MAX, texture_seed=0, count=-5).count == -5
    for key in ("seed", "texture_seed"):
        with pytest.raises(ValidationError, match=r"expected an integer in \[0, 4294967295\]"):
            schema(**{key: -1})


def sections() -> list[type[Section]]:
    """Every config schema of the package (the study and data modules imported first)."""
    import repscope.data.morpho.build  # noqa: F401
    from repscope.studies.registry import COMMANDS

    for entry in COMMANDS:
        entry.load()  # imports the module holding the entry's schema
    found, todo = [], [Section]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def test_every_seed_key_of_every_config_schema_has_the_rule():
    checked = []
    for schema in sections():
        for name, field in schema.model_fields.items():
            if not name.endswith("seed") or schema.__module__.startswith("test"):
                continue
            if inspect.isclass(field.annotation) and issubclass(field.annotation, Section):
                continue
            adapter = TypeAdapter(Annotated[(field.annotation, *field.metadata)])
            with pytest.raises(ValidationError, match=r"expected an integer in \[0, 4294967295\]"):
                adapter.validate_python(-1)
            assert adapter.validate_python(SEED_MAX) == SEED_MAX
            checked.append(f"{schema.__name__}.{name}")
    # the schemas of training, of each area's studies and of the Morpho-MNIST build
    for expected in ("TrainConfig.seed", "BuildConfig.seed", "MultimodalConfig.seed", "ZeroShotConfig.seed"):
        assert expected in checked

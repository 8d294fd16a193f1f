"""The README's config-taking commands run from an empty directory against an installed copy of the package
(not the repository): shipped configs are found by name, ``repscope configs`` lists them from the package.

The package is installed once per session with ``pip install --no-deps --no-build-isolation --target`` into a
temporary folder (about 10 s); nothing trains (``--print-config``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(site folder holding the installed package, an empty working directory)."""
    base = tmp_path_factory.mktemp("installed")
    project = base / "project"
    (project / "src").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, project / name)
    shutil.copytree(
        ROOT / "src" / "repscope",
        project / "src" / "repscope",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    target = base / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--target", str(target), str(project)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    shutil.rmtree(project)  # only the installed copy is left
    empty = base / "cwd"
    empty.mkdir()
    return target, empty


def _environment(target):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(PYTHONPATH=str(target), OMP_NUM_THREADS="1", REPSCOPE_PROGRESS="off")
    return env


def test_configs_lists_the_installed_package_s_configs(installed):
    target, empty = installed
    result = subprocess.run(
        [sys.executable, "-m", "repscope", "configs"],
        cwd=empty,
        env=_environment(target),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    names = {line.split()[0] for line in lines[1:-1]}
    assert names == {path.stem for path in (target / "repscope" / "configs").glob("*.yaml")}
    assert {"train-cnn5", "mmvae-cdsprites-paper", "zeroshot-fashion", "morpho-supervised"} <= names
    assert Path(lines[-1].removeprefix("files: ")).resolve() == (target / "repscope" / "configs").resolve()


# the commands, as the README gives them, with --print-config: each prints its config and nothing runs
COMMANDS = [
    ["train", "train-cnn5"],
    ["mmvae", "train", "mmvae-cdsprites-paper"],
    ["mmvae", "sweep", "mmvae-cdsprites"],
    ["invariance", "repo", "build", "--out", "repo", "--quick"],
    ["disentangle", "study", "--quick"],
    ["candle", "study", "--quick"],
    ["morpho", "diversity"],
    ["morpho", "disentangle", "morpho-disentangle"],
    ["morpho", "supervised", "--quick"],
    ["sprites", "evaluate", "outputs", "--level", "5"],
    ["zeroshot", "study", "zeroshot-fashion"],
    ["zeroshot", "evaluate", "LeNet"],
]

DRIVER = textwrap.dedent(
    """
    import contextlib, io, json, sys
    import repscope
    from repscope.cli import main

    results = {"package": repscope.__file__, "runs": []}
    for argv in json.loads(sys.argv[1]):
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as exc:
                code = exc.code or 0
        results["runs"].append({"argv": argv, "code": code, "out": out.getvalue(), "err": err.getvalue()})
    print(json.dumps(results))
    """
)


def test_readme_config_commands_run_from_an_empty_directory(installed, tmp_path):
    target, empty = installed
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    argvs = [[*argv, "--print-config"] for argv in COMMANDS]
    # the README's path form works from the repository root only; elsewhere one line names the shipped name
    argvs.append(["train", "src/repscope/configs/train-cnn5.yaml", "--print-config"])
    result = subprocess.run(
        [sys.executable, str(driver), json.dumps(argvs)],
        cwd=empty,
        env=_environment(target),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    results = json.loads(result.stdout.splitlines()[-1])
    assert Path(results["package"]).resolve().is_relative_to(target.resolve())  # not the repository's copy
    *runs, readme_path = results["runs"]
    for run in runs:
        assert run["code"] == 0, (run["argv"], run["err"])
        assert isinstance(yaml.safe_load(run["out"]), dict), run["argv"]
    by_command = {" ".join(run["argv"][:2]): yaml.safe_load(run["out"]) for run in runs}
    # the shipped files' values, read from the installed package
    assert by_command["train train-cnn5"]["model"]["name"] == "cnn5"
    assert by_command["train train-cnn5"]["trainer"]["max_epochs"] == 3
    assert by_command["mmvae train"]["data"]["name"] == "cdsprites"
    assert by_command["morpho supervised"]["data"]["copies"] == 1  # --quick
    assert readme_path["code"] == 1
    err = readme_path["err"]
    assert err.count("\n") == 1 and err.startswith("repscope: error: config src/repscope/configs/train-cnn5.yaml")
    assert "give its name, train-cnn5" in err
    assert sorted(os.listdir(empty)) == []  # --print-config wrote nothing


def _last_json_line(target, cwd, script, home):
    """What the last line ``script`` printed says, run by the installed copy with ``home`` as
    ``$REPSCOPE_HOME``; the script must succeed."""
    env = {**_environment(target), "REPSCOPE_HOME": str(home)}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_the_installed_package_carries_its_attribute_classifiers(installed, tmp_path):
    """The CdSprites+ judges are package data: an installed copy loads them from itself, with an empty
    $REPSCOPE_HOME and nothing trained, at every level."""
    target, empty = installed
    script = (
        "import json; from repscope.studies.multimodal import classifiers as c\n"
        "c._train_locked = None  # training would fail: the package's own must be found\n"
        "print(json.dumps([str(c.load_judges(level).directory) for level in (1, 2, 3, 4, 5)]))\n"
    )
    folders = [Path(folder) for folder in _last_json_line(target, empty, script, tmp_path / "home")]
    assert [folder.name for folder in folders] == [f"cdsprites-level{level}" for level in (1, 2, 3, 4, 5)]
    assert all(folder.resolve().is_relative_to((target / "repscope" / "judges").resolve()) for folder in folders)
    assert not (tmp_path / "home").exists()


def test_the_installed_package_carries_its_dsprites_judges(installed, tmp_path):
    """The dSprites CG judges are package data too: ``packaged`` finds them in the installed copy, and each
    loads its weights from there."""
    target, empty = installed
    script = (
        "import json; from repscope.studies.candle.cg import judges_folder, trained_judges\n"
        "from repscope.train.reader import open_run\n"
        "folder = judges_folder('packaged', 'dsprites')\n"
        "names = ['shape', 'scale', 'orientation', 'posX', 'posY']\n"
        "accuracies = trained_judges(folder, names, 'dsprites')\n"
        "tasks = [open_run(folder / name).task() for name in names]\n"
        "print(json.dumps({'folder': str(folder), 'accuracies': accuracies}))\n"
    )
    found = _last_json_line(target, empty, script, tmp_path / "home")
    assert Path(found["folder"]).resolve().is_relative_to((target / "repscope" / "judges" / "dsprites").resolve())
    assert min(found["accuracies"].values()) >= 0.98

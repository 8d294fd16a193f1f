"""The docs' examples run as written (slow: each trains or assesses a model for up to a few minutes).

Every ``python`` block of ``docs/assess-your-own-model.md`` runs in order in one namespace (a later block
uses an earlier block's class), in an empty working directory; then every ``repscope ...`` line of its
command blocks runs there, with ``mynets.py`` holding the page's classes, as the page tells the reader to
save them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "assess-your-own-model.md"
REPSCOPE = Path(sys.executable).with_name("repscope")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced block, in order (language "" for a plain fence)."""
    blocks, language, lines = [], None, []
    for line in text.splitlines():
        if line.startswith("```"):
            if language is None:
                language, lines = line[3:].strip(), []
            else:
                blocks.append((language, "\n".join(lines) + "\n"))
                language = None
        elif language is not None:
            lines.append(line)
    return blocks


def python_blocks(text: str) -> list[str]:
    return [code for language, code in fenced_blocks(text) if language == "python"]


def command_lines(text: str) -> list[str]:
    """The runnable commands of the plain blocks (the synopsis, with its placeholders, is not one)."""
    return [
        line
        for language, code in fenced_blocks(text)
        if language == ""
        for line in code.splitlines()
        if line.startswith(("repscope assess ", "repscope mmvae ")) and "MODEL" not in line
    ]


def class_sources(text: str) -> str:
    """The page's classes, as a reader saves them to ``mynets.py``."""
    classes = re.findall(r"^(class \w+\(nn\.Module\):\n(?:(?:    .*|)\n)+)", text, re.M)
    return "import torch\nfrom torch import nn\n\n\n" + "\n\n".join(block.rstrip() + "\n" for block in classes)


def test_the_page_has_examples_of_every_role():
    text = PAGE.read_text()
    code = "\n".join(python_blocks(text))
    for role in ("encoder", "classifier", "generator"):
        assert f'role="{role}"' in code
    assert any("--role multimodal" in line for line in command_lines(text))
    assert "class Centroid(nn.Module)" in class_sources(text) and "class SmallCNN(nn.Module)" in class_sources(text)


@pytest.mark.slow
def test_the_assess_page_runs_as_written(tmp_path, monkeypatch):
    text = PAGE.read_text()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    namespace: dict = {"__name__": "__docs__"}
    for block in python_blocks(text):
        exec(compile(block, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own examples
    assert (tmp_path / "runs" / "centroid" / "report.html").is_file()
    assert (tmp_path / "small-cnn.pt").is_file()
    (tmp_path / "mynets.py").write_text(class_sources(text))
    env = {**os.environ, "REPSCOPE_PROGRESS": "off", "PYTHONPATH": str(tmp_path)}
    for line in command_lines(text):
        args = shlex.split(line)
        result = subprocess.run([str(REPSCOPE), *args[1:]], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert result.returncode == 0, f"{line}\n{result.stderr[-2000:]}"
    metrics = json.loads((tmp_path / "runs" / "centroid-cli" / "metrics.json").read_text())
    # the centroid's codes carry position: MIG well above its chance level
    headline = {row["metric"]: row for row in metrics["headline"]}
    assert headline["mig"]["value"] > headline["mig"]["chance"] + 0.2
    assert (tmp_path / "runs" / "small-cnn-cli" / "zeroshot").is_dir()
    assert (tmp_path / "runs" / "mvae-assess" / "report.html").is_file()

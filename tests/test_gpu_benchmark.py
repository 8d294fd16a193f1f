"""The GPU throughput benchmark runs end to end on the CPU (``--tiny``): every code path it times."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_throughput.py"
# one torch thread in the benchmark's process, as in each test worker (conftest.py): its default of two
# waits at OpenMP's barrier for a thread the other worker has descheduled (measured: 40 s instead of 13 s
# for the run below beside busy processes); the code paths it runs are the same with one thread
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}


@pytest.mark.slow  # ~11 s: the script end to end on the CPU; make test-all
def test_the_gpu_benchmark_runs_tiny_on_the_cpu_and_prints_a_row_per_case():
    models = ["lenet5", "mvae"]  # one field in memory; several fields drawn on demand
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--models", ",".join(models), "--steps", "2", "--warmup", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=ONE_THREAD,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line.split() for line in result.stdout.splitlines() if line and not line.startswith(("#", "case"))]
    assert len(rows) == len(models), result.stdout
    for row in rows:
        device, loader, speed_up = float(row[-4]), float(row[-3]), float(row[-2].rstrip("x"))
        assert device > 0 and loader > 0
        # the speed-up is device / loader (the rates are printed rounded to integers)
        assert (device - 0.5) / (loader + 0.5) - 0.005 <= speed_up <= (device + 0.5) / max(loader - 0.5, 0.1) + 0.005
        assert row[-1] == "-"  # no GPU utilisation on a CPU


@pytest.mark.slow  # two spawned processes each import torch and train: about 20 s on 2 cores
def test_the_benchmark_shares_the_device_between_runs():
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--models", "lenet5", "--share", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    shared = [line for line in result.stdout.splitlines() if "2 at once, each" in line]
    assert len(shared) == 1 and shared[0].rstrip().endswith("of its rate alone"), result.stdout
    assert float(shared[0].split()[5]) > 0 and shared[0].split()[6].endswith("%")


def test_an_unknown_model_is_one_line(monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_throughput", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gpu_throughput", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--tiny", "--models", "lenet5,nope"])
    with pytest.raises(SystemExit, match="^--models: no case for nope$"):
        module.main()
    # the names it checks against are those of its cases
    assert [case.model for case in module.cases(tiny=True)] == list(module.CASE_MODELS)

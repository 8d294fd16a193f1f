"""Ctrl-C always stops a study: an interrupt that lands in a finalizer (where Python drops it with
"Exception ignored ...") is raised again at the next progress update."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from repscope.progress import progress_bar

REPSCOPE = Path(sys.executable).with_name("repscope")


class _InterruptedWhileCollected:
    """Sends SIGINT to this process from its ``__del__``: the handler runs inside the finalizer."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        total = 0
        for step in range(10_000):  # the pending signal is handled at one of these bytecodes
            total += step


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler for the test, whatever an earlier test in this worker left (SIG_IGN)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("python_sigint_handler")
def test_an_interrupt_dropped_in_a_finalizer_stops_the_loop_at_the_next_update(monkeypatch):
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: dropped.append(unraisable.exc_type))
    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with progress_bar("finalizer test", total=5) as update:
            for step in range(5):
                steps.append(step)
                if step == 1:
                    obj = _InterruptedWhileCollected()
                    del obj  # Python runs __del__ here and drops its KeyboardInterrupt
                update(step + 1)
    assert dropped == [KeyboardInterrupt]  # the interrupt really was swallowed by the finalizer ...
    assert steps == [0, 1]  # ... and the loop still stopped at the update that followed it
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is restored


@pytest.mark.usefixtures("python_sigint_handler")
def test_a_delivered_interrupt_is_not_raised_twice(monkeypatch):
    monkeypatch.setenv("REPSCOPE_PROGRESS", "off")
    with pytest.raises(KeyboardInterrupt):
        with progress_bar("outer", total=2):
            with progress_bar("inner", total=2):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)  # the KeyboardInterrupt comes out here, through both bars
    # a later loop is not stopped by the interrupt that was already delivered
    with progress_bar("after", total=3) as update:
        for step in range(3):
            update(step + 1)


@pytest.mark.slow
def test_ctrl_c_stops_the_quick_disentangle_study_every_time(tmp_path):
    """SIGINT to the whole process group (what a terminal sends) at three seeded moments of the study."""
    delays = np.random.default_rng(30).uniform(2, 30, size=3)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "REPSCOPE_PROGRESS": "lines"}
    for index, delay in enumerate(delays):
        out = tmp_path / f"study-{index}"
        process = subprocess.Popen(
            [str(REPSCOPE), "disentangle", "study", "--quick", "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        time.sleep(delay)
        os.killpg(process.pid, signal.SIGINT)
        sent = time.monotonic()
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            pytest.fail(f"SIGINT after {delay:.1f} s: the study ran on")
        waited = time.monotonic() - sent
        assert process.returncode == 130, (delay, stderr[-2000:])
        assert waited < 20, (delay, waited)
        assert "Exception ignored" not in stderr and "Traceback" not in stderr, stderr[-2000:]
        last = stderr.strip().splitlines()[-1]
        assert last.startswith("repscope: interrupted"), last

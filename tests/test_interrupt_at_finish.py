"""Ctrl-C while a command finishes (its summary, its last lines, the interpreter's exit) ends with the one
"repscope: interrupted" line and status 130, never a traceback or a silent death by the signal."""

from __future__ import annotations

import signal
import subprocess
import sys

import repscope.config


def test_an_interrupt_swallowed_while_the_command_finishes_still_gets_its_line_and_130(monkeypatch, run_cli):
    validate = repscope.config.validate_config

    def validate_then_ctrl_c(*args, **kwargs):
        # the user's Ctrl-C lands in a clean-up callback that swallows the KeyboardInterrupt (as torch's
        # weakref finalizers do while a repository build writes its summary); the command goes on to its end
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass
        return validate(*args, **kwargs)

    monkeypatch.setattr(repscope.config, "validate_config", validate_then_ctrl_c)
    code, out, err = run_cli(["train", "train-cnn5", "--print-config"])
    assert "name: cnn5" in out  # the command did finish
    assert code == 130
    assert err.splitlines()[-1] == "repscope: interrupted as the command finished; its output is complete"


def _console_script(after_main: str, before_main: str = "") -> subprocess.CompletedProcess:
    """The console script's path (``main()`` with no arguments) on ``repscope configs``, then ``after_main``."""
    script = "\n".join(
        [
            "import atexit, os, signal, sys, time",
            before_main,
            'sys.argv = ["repscope", "configs"]',
            "from repscope.cli import main",
            "try:",
            "    main()",
            "except SystemExit:",
            "    pass",
            after_main,
        ]
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def test_ctrl_c_after_the_command_ended_gets_its_line_and_130():
    # the signal arrives while the interpreter exits (seconds of clean-up after a training)
    done = _console_script("os.kill(os.getpid(), signal.SIGINT); time.sleep(60)")
    assert done.returncode == 130
    assert done.stderr == "repscope: interrupted while exiting, after the command had ended\n"
    assert "train-cnn5" in done.stdout  # the command's own output came out whole


def test_ctrl_c_in_the_last_clean_up_is_ignored_instead_of_killing_silently():
    # an exit callback registered before main runs after main's own: the last Python code before the native
    # clean-up, after which no handler could run; the interrupt is ignored and the command's status kept
    done = _console_script("", before_main="atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr

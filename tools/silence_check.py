"""Run commands as a user would, piped or on a terminal, and report the longest silence of each: the
longest time between two pieces of output (stdout and stderr together), from its start to its end.

    .venv/bin/python tools/silence_check.py --limit 10 -- "repscope morpho supervised --quick --out /tmp/x"
    .venv/bin/python tools/silence_check.py --file commands.txt      # one command per line, # comments
    .venv/bin/python tools/silence_check.py --terminal --file commands.txt   # under a pseudo-terminal

Piped, a piece of output is a line (what a log file or a batch job shows); on a terminal
(``--terminal``, a pseudo-terminal of 120 columns) it is any write that changes the screen, so a
progress bar that redraws counts and a frozen one does not. A line of the file may start with a watch
window, ``[90] repscope mmvae train ...``: the command gets Ctrl-C after 90 s, as a user stopping a
full-size run would, and an exit by that interrupt counts as a success (its last line is shown, to see
what it says when stopped).

A command whose longest silence exceeds ``--limit`` seconds is listed with the output before the gap
(what it was doing); the exit status is 1 when any command exceeded it or failed.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# A watch window at the start of a command line: "[90] repscope ...".
WATCH_PATTERN = re.compile(r"^\[(\d+(?:\.\d+)?)\]\s+(.*)$")
# Terminal control sequences, removed before deciding whether a write showed anything.
ANSI_PATTERN = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Za-z0-9]")


@dataclass
class Silence:
    """What one run showed: its longest gap between outputs, the output before the gap, how it ended."""

    longest: float
    before: str
    status: int
    total: float
    last: str
    interrupted: bool


class _GapClock:
    """Track the longest gap between pieces of output, and the text just before it."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.last_time = self.started
        self.before = "(start)"
        self.longest = 0.0
        self.longest_before = self.before

    def saw(self, text: str) -> None:
        now = time.monotonic()
        if now - self.last_time > self.longest:
            self.longest, self.longest_before = now - self.last_time, self.before
        self.last_time, self.before = now, text[-160:]

    def finish(self) -> float:
        now = time.monotonic()
        if now - self.last_time > self.longest:
            self.longest, self.longest_before = now - self.last_time, self.before
        return now - self.started


def _interrupt(process: subprocess.Popen) -> None:
    """Ctrl-C as a terminal sends it: SIGINT to the command's whole process group."""
    try:
        os.killpg(process.pid, signal.SIGINT)
    except ProcessLookupError:
        pass


def run_piped(command: str, timeout: float, watch: float | None, env: dict[str, str]) -> Silence:
    """Run ``command`` in a shell with its output piped; gaps are measured between lines."""
    clock = _GapClock()
    process = subprocess.Popen(
        command,
        shell=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
        bufsize=1,
        start_new_session=True,
    )
    assert process.stdout is not None
    interrupted = False
    if watch is not None:
        import threading  # noqa: PLC0415 - only watched commands need the timer

        def stop() -> None:
            nonlocal interrupted
            interrupted = True
            _interrupt(process)

        timer = threading.Timer(watch, stop)
        timer.daemon = True
        timer.start()
    last_line = ""
    for line in process.stdout:
        clock.saw(line.rstrip())
        last_line = line.rstrip() or last_line
        if time.monotonic() - clock.started > timeout:
            process.kill()
            break
    status = process.wait()
    if watch is not None:
        timer.cancel()
    total = clock.finish()
    return Silence(clock.longest, clock.longest_before, status, total, last_line[-160:], interrupted)


def run_on_terminal(command: str, timeout: float, watch: float | None, env: dict[str, str]) -> Silence:
    """Run ``command`` under a pseudo-terminal; gaps are measured between writes that show text."""
    import fcntl  # noqa: PLC0415 - POSIX only, and only this mode needs it
    import pty  # noqa: PLC0415
    import select  # noqa: PLC0415
    import struct  # noqa: PLC0415
    import termios  # noqa: PLC0415

    clock = _GapClock()
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        command,
        shell=True,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**env, "TERM": env.get("TERM", "xterm-256color")},
        start_new_session=True,
    )
    os.close(follower)
    interrupted = False
    screen = ""
    shown = ""
    while True:
        elapsed = time.monotonic() - clock.started
        if watch is not None and not interrupted and elapsed > watch:
            interrupted = True
            _interrupt(process)
        if elapsed > timeout:
            process.kill()
            break
        ready, _, _ = select.select([leader], [], [], 0.2)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        text = ANSI_PATTERN.sub("", chunk.decode("utf-8", "replace"))
        screen = (screen + text)[-4000:]
        visible = " ".join(text.replace("\r", "\n").split())
        if visible and visible != shown:  # a redraw that changes nothing on screen is not news
            clock.saw(visible)
            shown = visible
    status = process.wait()
    os.close(leader)
    total = clock.finish()
    lines = [line.strip() for line in screen.replace("\r", "\n").splitlines() if line.strip()]
    return Silence(clock.longest, clock.longest_before, status, total, (lines[-1] if lines else "")[-160:], interrupted)


def parse_commands(lines: list[str]) -> list[tuple[float | None, str]]:
    """Commands with their optional watch window, from the lines of a commands file or the arguments."""
    commands = []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = WATCH_PATTERN.match(line)
        commands.append((float(match.group(1)), match.group(2)) if match else (None, line))
    return commands


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("commands", nargs="*", help="shell commands (quote each)")
    parser.add_argument("--file", type=Path, help="a file of commands, one per line")
    parser.add_argument("--limit", type=float, default=10.0, help="longest silence allowed (s)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per command")
    parser.add_argument("--terminal", action="store_true", help="run each command under a pseudo-terminal")
    args = parser.parse_args()
    texts = list(args.commands)
    if args.file:
        texts += args.file.read_text(encoding="utf-8").splitlines()
    commands = parse_commands(texts)
    if not commands:
        parser.error("give commands or --file")
    env = dict(os.environ)
    run = run_on_terminal if args.terminal else run_piped
    bad = 0
    for watch, command in commands:
        result = run(command, args.timeout, watch, env)
        stopped = result.interrupted and result.status in (130, -signal.SIGINT, 1)
        if result.status != 0 and not stopped:
            verdict = f"EXIT {result.status}"
        else:
            verdict = "ok" if result.longest <= args.limit else "SILENT"
        bad += verdict != "ok"
        how = f", Ctrl-C at {watch:.0f} s" if result.interrupted else ""
        print(
            f"{verdict:<7} longest silence {result.longest:6.1f} s of {result.total:7.1f} s{how}  {command}",
            flush=True,
        )
        if result.longest > args.limit:
            print(f"        after: {result.before}", flush=True)
        if result.interrupted or verdict.startswith("EXIT"):
            print(f"        last: {result.last}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Run commands as a user would, piped, and report the longest silence of each: the longest time
between two lines it printed (stdout and stderr together), from its start to its end.

    .venv/bin/python tools/silence_check.py --limit 10 -- "repscope morpho supervised --quick --out /tmp/x"
    .venv/bin/python tools/silence_check.py --file commands.txt      # one command per line, # comments

A command whose longest silence exceeds ``--limit`` seconds is listed with the line printed before the
gap (what it was doing); the exit status is 1 when any command exceeded it or failed.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path


def longest_silence(command: str, timeout: float, env: dict[str, str]) -> tuple[float, str, int, float]:
    """Run ``command`` in a shell with its output piped; return the longest gap between output lines
    (seconds), the line before it, the exit status and the total time."""
    started = time.monotonic()
    last = started
    before = "(start)"
    longest, longest_before = 0.0, before
    process = subprocess.Popen(
        command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, bufsize=1
    )
    assert process.stdout is not None
    for line in process.stdout:
        now = time.monotonic()
        if now - last > longest:
            longest, longest_before = now - last, before
        last, before = now, line.rstrip()[:160]
        if now - started > timeout:
            process.kill()
            break
    status = process.wait()
    now = time.monotonic()
    if now - last > longest:
        longest, longest_before = now - last, before
    return longest, longest_before, status, now - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("commands", nargs="*", help="shell commands (quote each)")
    parser.add_argument("--file", type=Path, help="a file of commands, one per line")
    parser.add_argument("--limit", type=float, default=10.0, help="longest silence allowed (s)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per command")
    args = parser.parse_args()
    commands = list(args.commands)
    if args.file:
        lines = args.file.read_text(encoding="utf-8").splitlines()
        commands += [c.strip() for c in lines if c.strip() and not c.lstrip().startswith("#")]
    if not commands:
        parser.error("give commands or --file")
    env = dict(os.environ)  # piped: the progress lines a batch job would get
    bad = 0
    for command in commands:
        gap, before, status, total = longest_silence(command, args.timeout, env)
        verdict = "ok" if gap <= args.limit and status == 0 else "SILENT" if status == 0 else f"EXIT {status}"
        bad += verdict != "ok"
        print(f"{verdict:<7} longest silence {gap:6.1f} s of {total:7.1f} s  {shlex.split(command)[:4]}", flush=True)
        if gap > args.limit:
            print(f"        after: {before}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

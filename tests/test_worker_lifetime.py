"""Worker processes end with their parent: a pool's parent killed with SIGKILL (a job scheduler, a closed
ssh session, a timeout) takes its workers with it, for ``repscope.pools.ordered_map`` (fork) and the
sweep runner's local workers (spawn).

Each test starts a small parent script with ``subprocess.Popen``; its workers write their pid to a
file and sleep; the test kills the parent and polls ``/proc`` until the workers are gone. A worker
still alive at the end is killed by its pid, so a failing test leaves nothing behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repscope.errors import InvalidArgumentError
from repscope.pools import unordered_map
from repscope.resources import ORPHAN_EXIT_STATUS, die_with_parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

GONE_WITHIN = 8.0  # seconds after the parent's death

# a task of ordered_map: writes its pid (atomically), then sleeps for a minute; with "graceful" it
# turns SIGTERM into an early, normal return (as Lightning's trainer stops after the running batch)
POOL_PARENT = """
import os, signal, sys, time
from pathlib import Path
from repscope.pools import ordered_map

def task(path):
    stop = []
    if path.endswith("graceful.pid"):
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    Path(path + ".tmp").write_text(str(os.getpid()))
    os.replace(path + ".tmp", path)
    for _ in range(600):
        if stop:
            return path
        time.sleep(0.1)
    return path

if __name__ == "__main__":
    folder, names = Path(sys.argv[1]), sys.argv[2:]
    tasks = [str(folder / name) for name in names]
    with ordered_map(task, tasks, 2) as results:
        list(results)
"""

# a sweep target (imported by name in the spawned workers) and a driver running two points on two workers
SWEEP_TARGET = """
import os, signal, time
from pathlib import Path

def sleepy_point(overrides, run_dir, resume, *, folder, graceful):
    stop = []
    if graceful and run_dir.name == "seed-0":  # as Lightning's trainer: stop after the batch, raise SystemExit
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    path = Path(folder) / (run_dir.name + ".pid")
    Path(str(path) + ".tmp").write_text(str(os.getpid()))
    os.replace(str(path) + ".tmp", path)
    for _ in range(600):
        if stop:
            raise SystemExit(1)
        time.sleep(0.1)
    return {"slept": 60}
"""
SWEEP_PARENT = """
import sys
from repscope.sweeps import expand_grid, run_sweep

if __name__ == "__main__":  # the spawned workers import this module again
    folder, graceful = sys.argv[1], sys.argv[2] == "graceful"
    points = expand_grid(["seed=0,1"])
    common = {"folder": folder, "graceful": graceful}
    run_sweep(points, "lifetime_target:sleepy_point", folder + "/sweep", common=common, workers=2, progress=False)
"""


def _state(pid: int) -> str | None:
    """The process's state letter from /proc (R, S, Z, ...), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    # a zombie (ended, not yet reaped by whoever adopted it) runs nothing
    return _state(pid) not in (None, "Z", "X")


def _wait_for_pids(paths: list[Path], parent: subprocess.Popen, timeout: float = 60.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while not all(path.exists() for path in paths):
        if parent.poll() is not None:
            raise AssertionError(f"the parent ended early with status {parent.returncode}: {parent.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError("the workers did not start")
        time.sleep(0.05)
    return [int(path.read_text()) for path in paths]


def _kill_parent_and_watch(parent: subprocess.Popen, pids: list[int]) -> list[int]:
    """SIGKILL the parent; return the pids still alive GONE_WITHIN seconds later (none, if they die with it)."""
    parent.kill()
    parent.wait(timeout=10)
    deadline = time.monotonic() + GONE_WITHIN
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


def _run_parent(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-B", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )


def _cleanup(parent: subprocess.Popen, pids: list[int]) -> None:
    if parent.poll() is None:
        parent.kill()
        parent.wait()
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_pool_workers_end_when_their_parent_is_killed(tmp_path):
    script = tmp_path / "pool_parent.py"
    script.write_text(POOL_PARENT)
    names = ["first.pid", "second.pid"]
    parent = _run_parent([str(script), str(tmp_path), *names])
    pids: list[int] = []
    try:
        pids = _wait_for_pids([tmp_path / name for name in names], parent)
        assert len(set(pids)) == 2 and parent.pid not in pids
        # two live workers of this parent: the pool ran in processes of its own
        assert all(_alive(pid) and _parent_of(pid) == parent.pid for pid in pids)
        assert _kill_parent_and_watch(parent, pids) == []
    finally:
        _cleanup(parent, pids)


def test_a_worker_whose_task_handles_sigterm_exits_after_the_task(tmp_path):
    """The task turns SIGTERM into a normal return; the worker must not then wait for a next task."""
    script = tmp_path / "pool_parent.py"
    script.write_text(POOL_PARENT)
    names = ["graceful.pid", "plain.pid"]
    parent = _run_parent([str(script), str(tmp_path), *names])
    pids: list[int] = []
    try:
        pids = _wait_for_pids([tmp_path / name for name in names], parent)
        assert _kill_parent_and_watch(parent, pids) == []
    finally:
        _cleanup(parent, pids)


@pytest.mark.parametrize("mode", ["plain", "graceful"])
def test_sweep_workers_end_when_the_driver_is_killed(tmp_path, mode):
    """With "graceful", one point turns SIGTERM into SystemExit, as Lightning's trainer does in a training."""
    (tmp_path / "lifetime_target.py").write_text(SWEEP_TARGET)
    script = tmp_path / "sweep_parent.py"
    script.write_text(SWEEP_PARENT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    parent = _run_parent([str(script), str(tmp_path), mode], env=env)
    pids: list[int] = []
    try:
        pids = _wait_for_pids([tmp_path / "seed-0.pid", tmp_path / "seed-1.pid"], parent)
        assert len(set(pids)) == 2
        assert all(_alive(pid) and _parent_of(pid) == parent.pid for pid in pids)
        assert _kill_parent_and_watch(parent, pids) == []
        # the killed points left no marker: a restarted sweep runs them again
        assert not list((tmp_path / "sweep").glob("*/sweep-done.json"))
    finally:
        _cleanup(parent, pids)


# -- die_with_parent and start_worker, in a child process each (the setting stays with the process) --

PDEATHSIG_PROBE = """
import ctypes, signal, sys
from repscope.resources import die_with_parent

libc = ctypes.CDLL(None, use_errno=True)
value = ctypes.c_int(-1)
libc.prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
before = value.value
result = die_with_parent(*[int(arg) for arg in sys.argv[1:]])
libc.prctl(2, ctypes.byref(value), 0, 0, 0)
print(before, result, value.value)
"""


@pytest.mark.parametrize(("args", "expected"), [([], "0 True 15"), ([str(int(signal.SIGUSR1))], "0 True 10")])
def test_die_with_parent_sets_the_kernel_parent_death_signal(args, expected):
    # read back with PR_GET_PDEATHSIG: 0 (none) before, SIGTERM (15) or the signal asked for after
    done = subprocess.run(
        [sys.executable, "-B", "-c", PDEATHSIG_PROBE, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected.split()


def test_die_with_parent_is_a_no_op_elsewhere(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert die_with_parent() is False


@pytest.mark.parametrize("signum", [0, -15, signal.NSIG, True, 15.0, "SIGTERM"])
def test_die_with_parent_rejects_what_is_not_a_signal(signum):
    with pytest.raises(InvalidArgumentError, match="signum"):
        die_with_parent(signum)


START_PROBE = """
import os, sys
from repscope.resources import start_worker

start_worker(os.getppid() if sys.argv[1] == "parent" else os.getpid())
print("started")
"""


def test_start_worker_exits_at_once_when_the_parent_is_not_the_one_given():
    """The race: a parent that died before the worker's call is not signalled; the pid check ends it."""
    wrong = subprocess.run([sys.executable, "-B", "-c", START_PROBE, "self"], capture_output=True, text=True)
    assert wrong.returncode == 128 + 15 == ORPHAN_EXIT_STATUS and wrong.stdout == ""
    right = subprocess.run([sys.executable, "-B", "-c", START_PROBE, "parent"], capture_output=True, text=True)
    assert right.returncode == 0 and right.stdout == "started\n", right.stderr


def _square_or_exit(task: int) -> tuple[int, int]:
    """A task of unordered_map: task 2 ends its worker with sys.exit, the others give (pid, square)."""
    if task == 2:
        sys.exit(3)
    return os.getpid(), task * task


def _set_marker(value: str) -> None:
    os.environ["REPSCOPE_TEST_POOL_SETUP"] = value


def _marker_and_square(task: int) -> tuple[str, int]:
    return os.environ.get("REPSCOPE_TEST_POOL_SETUP", ""), task * task


def test_unordered_map_gives_each_task_its_result_and_a_failed_worker_task_as_its_failure():
    """The pool the local sweeps run on: every task once, with its result; a worker's sys.exit turned into a
    result by on_worker_failure, the other tasks still done; each worker set up as it starts."""
    with unordered_map(_square_or_exit, [1, 2, 3, 4], 2, on_worker_failure=lambda error: type(error).__name__) as done:
        results = dict(done)
    assert sorted(results) == [1, 2, 3, 4] and results[2] == "SystemExit"
    assert [results[task][1] for task in (1, 3, 4)] == [1, 9, 16]
    assert os.getpid() not in {results[task][0] for task in (1, 3, 4)}  # computed in worker processes
    with unordered_map(_marker_and_square, [1, 2, 3], 2, setup=_set_marker, setup_args=("set up",)) as done:
        assert sorted(done) == [(1, ("set up", 1)), (2, ("set up", 4)), (3, ("set up", 9))]
    # one job computes here, in order, without the setup (which is for worker processes)
    with unordered_map(_marker_and_square, [2, 1], 1, setup=_set_marker, setup_args=("set up",)) as done:
        assert list(done) == [(2, ("", 4)), (1, ("", 1))]

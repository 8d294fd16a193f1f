"""CPU resources: how many worker processes (``--workers``) and torch threads to use, and workers that
leave Ctrl-C to their parent and end with it.

Why torch threads are chosen with care: torch runs its operators on an OpenMP pool of
``torch.get_num_threads()`` threads (all cores by default) that meet at a barrier after every
parallel operator. When another process keeps one of the cores busy, the thread that shares that
core is descheduled for whole time slices while its partner waits at the barrier, and OpenMP's
busy-waiting makes the waiting thread compete for CPU as well. Measured on a 2-core machine with a
``while True: pass`` process beside a small CNN training (:class:`~repscope.models.multimodal.judge_cnn.AttributeCNN`,
batches of 64, seconds per 2,048 images): alone, 2 threads 0.78 s, 1 thread 1.14-1.4 s; beside the
busy process, 2 threads 10.7-17.4 s (mean over epochs; best epoch 2.9-3.8 s), 2 threads with
``OMP_WAIT_POLICY=PASSIVE`` 2.0-2.5 s, 1 thread 1.3-1.5 s. The thread count changes the last bits of
a training's results, so the CLI keeps torch's count (every usable core: the same seed gives the
same bytes whatever the load) and, when cores are busy as it starts, makes OpenMP wait passively
(:func:`wait_passively_when_busy`; it costs about 40% on a quiet machine, so only then).
:func:`configure_torch_threads` sets a count explicitly (``REPSCOPE_TORCH_THREADS``, or the cores
free right now for a user who prefers speed to identical bytes).
"""

from __future__ import annotations

import ctypes
import os
import signal
import statistics
import sys
import time

from repscope.errors import InvalidArgumentError

THREADS_ENV = "REPSCOPE_TORCH_THREADS"


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def resolve_jobs(jobs: int, name: str = "--workers") -> int:
    """The number of worker processes that ``jobs`` asks for (scikit-learn's convention).

    ``jobs >= 1`` is that many workers; ``-1`` means every usable core, ``-2`` all but one, and
    ``-k`` all but ``k - 1`` (at least 1). ``0`` (and anything that is not an integer) is an error
    naming ``name``.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        try:
            if isinstance(jobs, bool) or int(jobs) != jobs:
                raise ValueError
            jobs = int(jobs)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"{name}: expected an integer, got {jobs!r}") from None
    if jobs == 0:
        raise InvalidArgumentError(
            f"{name}: must be a positive number of workers, or -1 for all cores (-2 all but one), got 0"
        )
    if jobs > 0:
        return jobs
    return max(1, usable_cores() + 1 + jobs)


def _runnable_elsewhere() -> float | None:
    """Runnable threads of other processes right now (Linux ``/proc``), or None where unknown.

    ``/proc/loadavg``'s fourth field counts the runnable threads of the whole system at this
    instant; our own runnable threads are subtracted. The median of a few samples smooths the noise.
    """
    try:
        samples = []
        for attempt in range(5):
            if attempt:
                time.sleep(0.01)
            with open("/proc/loadavg") as handle:
                running = int(handle.read().split()[3].split("/")[0])
            ours = 0
            for task in os.listdir("/proc/self/task"):
                try:
                    with open(f"/proc/self/task/{task}/stat") as handle:
                        state = handle.read().rsplit(")", 1)[1].split()[0]
                except (OSError, IndexError):
                    continue
                ours += state == "R"
            samples.append(max(0, running - max(ours, 1)))
        return float(statistics.median(samples))
    except (OSError, ValueError, IndexError):
        return None


def busy_cores() -> int:
    """Cores kept busy by other processes: runnable threads elsewhere now (Linux), else the 1-minute
    load average minus this process; never more than the usable cores."""
    elsewhere = _runnable_elsewhere()
    if elsewhere is None:
        try:
            elsewhere = max(0.0, os.getloadavg()[0] - 1.0)
        except (AttributeError, OSError):
            return 0
    return min(usable_cores(), int(round(elsewhere)))


def free_cores() -> int:
    """Usable cores not kept busy by other processes (at least 1)."""
    return max(1, usable_cores() - busy_cores())


def configure_torch_threads(requested: int | None = None) -> int:
    """Set torch's intra-op thread count to a number that cannot oversubscribe the CPU; return it.

    Parameters
    ----------
    requested
        A thread count (``-1`` = every usable core, ``-2`` all but one, as :func:`resolve_jobs`), or
        None: the ``REPSCOPE_TORCH_THREADS`` environment variable when set, else the cores free
        right now (:func:`free_cores`), capped by ``OMP_NUM_THREADS`` when the user set it.

    Call it where training starts (and again at any time: torch applies a new count to the
    following operators). Threads above the usable cores are never chosen.
    """
    import torch  # noqa: PLC0415 -- CLI start-up; torch loads after passive_wait

    if requested is None and os.environ.get(THREADS_ENV, "").strip():
        text = os.environ[THREADS_ENV].strip()
        try:
            requested = int(text)
        except ValueError:
            raise InvalidArgumentError(f"{THREADS_ENV}: expected an integer, got {text!r}") from None
        name = THREADS_ENV
    else:
        name = "requested"
    if requested is not None:
        threads = min(resolve_jobs(requested, name), usable_cores())
    else:
        threads = free_cores()
        ceiling = os.environ.get("OMP_NUM_THREADS", "").strip()
        if ceiling.isdigit() and int(ceiling) >= 1:
            threads = min(threads, int(ceiling))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


def passive_wait() -> bool:
    """Ask OpenMP to put idle threads to sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``).

    Takes effect only when called before torch (and its OpenMP runtime) is loaded; returns whether
    it can still act. A value the user set is kept.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return "torch" not in sys.modules


def wait_passively_when_busy() -> bool:
    """Before torch loads: when other processes keep cores busy, let OpenMP's idle threads sleep
    (``OMP_WAIT_POLICY=PASSIVE``) instead of spinning against them; return whether it did.

    The thread count itself is left alone: it changes the last bits of a training's results (a
    LeNet-5 trained with 1 and with 2 threads ends with different weights), so choosing it by the
    machine's load would make the same seed give different bytes from run to run. The wait policy
    changes only the speed: beside a busy process, 2 threads took 2.0-2.5 s instead of 10.7-17.4 s.
    A value the user set is kept; ``REPSCOPE_TORCH_THREADS`` sets the thread count explicitly.
    """
    if "torch" in sys.modules or "OMP_WAIT_POLICY" in os.environ or busy_cores() < 1:
        return False
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True


def ignore_interrupts() -> None:
    """Make this process ignore SIGINT: the initializer of worker processes.

    Ctrl-C on a terminal reaches every process of the foreground group; workers that ignore it
    leave the parent to stop the pool and report one interrupt, instead of each printing a
    traceback. Use ``ProcessPoolExecutor(..., initializer=ignore_interrupts)``.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# prctl option of <linux/prctl.h>: the signal the kernel sends a process when its parent dies
PR_SET_PDEATHSIG = 1
# exit status of a worker that finds its parent gone: as if SIGTERM had ended it
ORPHAN_EXIT_STATUS = 128 + int(signal.SIGTERM)
# the pid of the process that started this worker (set by start_worker); None outside pool workers
_worker_parent: int | None = None


def die_with_parent(signum: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send this process ``signum`` when its parent dies (Linux ``PR_SET_PDEATHSIG``).

    A worker process killed with its parent is the point: a parent ended by SIGTERM or SIGKILL (a
    job scheduler, a closed ssh session, a timeout) runs no cleanup, and its workers, re-parented
    to init, would go on computing for minutes. Called through ``ctypes`` on libc's ``prctl``; the
    setting is not inherited by the worker's own children (a nested pool sets its own), and SIGTERM
    at its default action ends the worker at once, even inside a long C call (a Blender render).

    The kernel sends the signal when the *thread* that created this process ends, not the
    process: the project's pools are created from the main thread of the CLI (whose end is the
    process's end); a pool created from a short-lived thread would lose its workers with that
    thread. A parent that died before this call is not signalled: :func:`start_worker` checks
    that case.

    Parameters
    ----------
    signum : int, default=signal.SIGTERM
        The signal to receive, 1 to ``signal.NSIG - 1``.

    Returns
    -------
    bool
        True when the setting was made; False where it cannot be (not Linux, no libc or no
        ``prctl``, or the call failed), leaving the process as it was.

    Raises
    ------
    InvalidArgumentError
        When ``signum`` is not a signal number.
    """
    if isinstance(signum, bool) or not isinstance(signum, int) or not 1 <= signum < signal.NSIG:
        raise InvalidArgumentError(f"signum: expected a signal number from 1 to {signal.NSIG - 1}, got {signum!r}")
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # the process's own symbols include libc's
    except (OSError, AttributeError):
        return False
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0


def start_worker(parent_pid: int) -> None:
    """The lifetime part of a pool worker's initializer: end with the parent, or now if it is gone.

    Sets :func:`die_with_parent` (SIGTERM), then closes the race it leaves open: a parent that
    died between starting this worker and the call sends no signal, and the worker, re-parented,
    sees another parent pid; it exits at once with status 143 (128 + SIGTERM). Also records
    ``parent_pid`` for :func:`exit_if_orphaned`. For workers started by the ``fork`` or ``spawn``
    methods (whose parent is the process that created the pool), not ``forkserver``.

    Parameters
    ----------
    parent_pid : int
        ``os.getpid()`` of the process that created the pool, passed through ``initargs``.
    """
    global _worker_parent
    die_with_parent()
    if _parent_gone(parent_pid):
        os._exit(ORPHAN_EXIT_STATUS)
    _worker_parent = parent_pid


def exit_if_orphaned() -> None:
    """In a worker set up by :func:`start_worker`: exit at once (status 143) when its parent is gone.

    Called after each task. A library may turn the SIGTERM of :func:`die_with_parent` into a
    graceful stop (Lightning's trainer, in the main thread, ends the training after the running
    batch and raises); the worker would then wait forever for its next task from a dead parent.
    Elsewhere (outside such a worker) it does nothing.
    """
    if _worker_parent is not None and _parent_gone(_worker_parent):
        os._exit(ORPHAN_EXIT_STATUS)


def _parent_gone(parent_pid: int) -> bool:
    """Whether the process that started this worker has died or is dying.

    Another parent pid means it died (this process was re-parented). A killed parent's threads do
    not die at once: when the main thread (the one that started the worker) ends first, the
    kernel sends the parent-death signal and hands the worker to one of the parent's remaining
    threads, so ``os.getppid()`` still gives the parent's pid; its main thread then shows as a
    zombie (state ``Z``) in ``/proc/<pid>/stat``, which no running process's main thread does.
    """
    if os.getppid() != parent_pid:
        return True
    try:
        with open(f"/proc/{parent_pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False  # no /proc (not Linux): the parent pid alone tells
    return state in (b"Z", b"X")


__all__ = [
    "busy_cores",
    "configure_torch_threads",
    "die_with_parent",
    "exit_if_orphaned",
    "free_cores",
    "ignore_interrupts",
    "passive_wait",
    "resolve_jobs",
    "start_worker",
    "usable_cores",
]

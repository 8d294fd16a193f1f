"""The ``repscope`` command: ``repscope <area> <verb>``.

Each area lives in its own module with a ``typer.Typer`` named ``app``; heavy imports happen
inside the commands so that ``repscope --help`` stays fast. A :class:`RepscopeError` raised by
any command is printed as one line on stderr and the process exits with status 1; Ctrl-C prints
``repscope: interrupted`` and exits with status 130, without a traceback.

Conventions every verb follows (see ``repscope.outputs``): outputs are written with ``--out/-o``,
an existing output is refused unless ``--overwrite`` (or ``--resume`` where the verb can resume)
is given, choice options list their values in ``--help``, ``--workers -1`` means all cores, ``--epochs``
sets the epochs of what a command trains, CONFIG is a YAML file or a shipped config's name (``repscope
configs``) and ``--set`` wins over ``--quick``.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import warnings
from pathlib import Path
from typing import Optional

import typer

from repscope.cli.renamed_options import RenamedOptionsGroup
from repscope.errors import RepscopeError, one_line

app = typer.Typer(
    name="repscope",
    cls=RenamedOptionsGroup,  # a renamed option (--jobs) is refused naming its new name (--workers)
    help="Quantitative assessment of learned representations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from repscope import version_stamp

        typer.echo(version_stamp())
        raise typer.Exit()


@app.callback()
def _root(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Quantitative assessment of learned representations."""


def _register_areas() -> None:
    from repscope.cli import assess as assess_cli
    from repscope.cli import candle as candle_cli
    from repscope.cli import data as data_cli
    from repscope.cli import demo as demo_cli
    from repscope.cli import disentangle as disentangle_cli
    from repscope.cli import invariance as invariance_cli
    from repscope.cli import mmvae as mmvae_cli
    from repscope.cli import mmvae_runs as mmvae_runs_cli
    from repscope.cli import morpho as morpho_cli
    from repscope.cli import sprites as sprites_cli
    from repscope.cli import train as train_cli
    from repscope.cli import zeroshot as zeroshot_cli
    from repscope.cli.studies import configs_command
    from repscope.metrics.registry import metric_names
    from repscope.train.registry import MODELS

    multimodal_names = [name for name, entry in MODELS.items() if entry.family == "multimodal"]

    app.add_typer(data_cli.app, name="data", help="Data sources: inspect, download.")
    app.add_typer(morpho_cli.app, name="morpho", help="Morpho-MNIST: measure, perturb, build datasets.")
    app.add_typer(
        sprites_cli.app,
        name="sprites",
        help="dSprites and CdSprites+: generate, show, convert (h5), classify, evaluate coherency.",
    )
    mmvae_cli.app.command(name="train")(mmvae_runs_cli.train_command)
    mmvae_cli.app.command(name="sweep")(mmvae_runs_cli.sweep_command)
    app.add_typer(
        mmvae_cli.app,
        name="mmvae",
        help=f"Multimodal VAEs ({', '.join(multimodal_names)}): train, sweep, evaluate, leaderboard.",
    )
    app.add_typer(
        disentangle_cli.app,
        name="disentangle",
        help=f"Disentanglement: metrics ({', '.join(metric_names())}), CG judges, the dSprites study.",
    )
    app.add_typer(
        candle_cli.app,
        name="candle",
        help="CANDLE: render the causal scene grid (Blender), the disentanglement study on it.",
    )
    app.add_typer(
        invariance_cli.app,
        name="invariance",
        help="Invariance testing (ML4ML): variance matrices of a model, their 16 features.",
    )
    app.add_typer(
        zeroshot_cli.app,
        name="zeroshot",
        help="Raw Zero-Shot: leave-one-class-out soft-label metrics (DBI, Amalgam), black-box attacks, the study.",
    )
    app.command(name="train", help=train_cli.train_command.__doc__)(train_cli.train_command)
    app.command(name="demo", help=demo_cli.demo.__doc__)(demo_cli.demo)
    app.command(name="assess", help=assess_cli.assess_command.__doc__)(assess_cli.assess_command)
    app.command(name="configs", help=configs_command.__doc__)(configs_command)
    app.add_typer(report_app, name="report", help="Reports: check a report.html in headless Chromium.")


report_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)


@report_app.command(name="check")
def _report_check(
    reports: list[str] = typer.Argument(
        ..., metavar="REPORT.html...", help="Report pages to check, or run directories (their report.html)."
    ),
) -> None:
    """Open each report in headless Chromium (1280 px wide) as a reader would, and print one line per
    problem: the page or a table wider than the window, an image that did not load, markup showing as
    text. Exit status 1 when there is any. Needs Chromium (Debian: apt-get install chromium) and
    playwright (the dev extra)."""
    from repscope.report.browser import check_reports

    results = check_reports(reports)
    problems = [f"{path}: {problem}" for path, found in results.items() for problem in found]
    for line in problems:
        typer.echo(line)
    if problems:
        raise typer.Exit(1)
    typer.echo(f"{len(results)} report(s) checked in Chromium: no problems")


_register_areas()


# --------------------------------------------------------------------------------------------
# Ctrl-C

_main_pid: int | None = None
_interrupted = False


def _on_interrupt(signum: int, frame: object) -> None:
    """SIGINT in the command's process raises KeyboardInterrupt; in a process forked from it (worker
    pools, DataLoader workers inherit this handler) it is ignored, so that the parent alone stops
    the work and reports the interrupt once."""
    global _interrupted
    if os.getpid() != _main_pid:
        return
    _interrupted = True
    raise KeyboardInterrupt


def _on_interrupt_at_exit(signum: int, frame: object) -> None:
    """SIGINT once the command has ended, while the interpreter shuts down (torch and worker pools clean up
    for seconds): the one line and status 130 of every Ctrl-C, instead of a traceback from a clean-up
    function or a silent death by the signal."""
    if os.getpid() != _main_pid:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os.write(2, b"repscope: interrupted while exiting, after the command had ended\n")
    os._exit(130)


def _ignore_interrupt_in_teardown() -> None:
    """The console script's last exit callback: after it Python runs no signal handler, and a Ctrl-C during the
    seconds of native clean-up that follow (torch's) would kill the process by the signal without a word. The
    command has ended by then, so the interrupt is ignored and the process ends with the command's status."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:
        pass


def _caused_by_interrupt(exc: BaseException) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _interrupted_exit(finished: bool = False) -> SystemExit:
    # a second Ctrl-C while the line is printed must not add a traceback
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:
        pass
    from repscope.outputs import incomplete_outputs, untouched_outputs

    message = "repscope: interrupted"
    incomplete = incomplete_outputs()[-1:]
    sweeps = sys.modules.get("repscope.sweeps")  # loaded only if a sweep ran: no import at exit
    stopped = sweeps.interrupted_sweeps()[-1:] if sweeps is not None else []
    # with --overwrite the sweep ran in a temporary folder, removed on the interrupt: nothing to resume
    sweep = stopped[0] if stopped and stopped[0].out.is_dir() else None
    for path, option, can_resume in incomplete:
        # what the run wrote so far stays; the next run must resume or replace it explicitly
        how = "--resume to go on or --overwrite to replace it" if can_resume else "--overwrite to replace it"
        train_run = sys.modules.get("repscope.train.fitting")  # loaded only if a training ran: no import at exit
        epoch = train_run.resume_epoch(path) if can_resume and train_run is not None else None
        if epoch is not None:
            how = f"--resume to go on from epoch {epoch} or --overwrite to replace it"
        counts = ""
        within = os.path.abspath(path)
        if sweep is not None and can_resume and within in (str(sweep.out), *map(str, sweep.out.parents)):
            counts = f": {sweep.counts_text()}"
            how = f"--resume with the same {option} to go on or --overwrite to replace it"
        message += f"; {option} {path} holds an incomplete output{counts} (pass {how})"
    if not incomplete and sweep is not None:
        # no --out given: name the folder the command made (a run directory holding the sweep, or the sweep's)
        folder = sweep.out.parent if (sweep.out.parent / "config.yaml").is_file() else sweep.out
        message += f"; {sweep.counts_text()} in {folder} (pass --resume --out {folder} to go on)"
    if not incomplete and sweep is None:
        # an output written only once complete: say that nothing half-done is left to look for
        for path, option, kept in untouched_outputs()[-1:]:
            message += f"; {option} {path}: " + ("the old output is kept as it was" if kept else "nothing written")
    if finished:  # the interrupt was swallowed on the way (in a clean-up callback) and the command went on:
        # nothing of it is incomplete (what the lists hold comes from earlier commands of this process)
        message = "repscope: interrupted as the command finished; its output is complete"
    print(message, file=sys.stderr, flush=True)
    return SystemExit(130)


def _command_words(argv: list[str]) -> str:
    """``repscope zeroshot study`` from the command line: its leading words, up to the first option or
    argument that is not a plain word (a path, a number)."""
    words = []
    for arg in argv[:3]:
        if not arg.replace("-", "").isalpha() or arg.startswith("-"):
            break
        words.append(arg)
    return " ".join(["repscope", *words])


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """Our own warnings as one line, ``warning: <message>``, on the terminal of a command (not a file and line
    of our source with the line of code that warned); those of other libraries as Python shows them."""
    stream = file if file is not None else sys.stderr
    if "repscope" in Path(str(filename)).parts:
        stream.write("warning: " + " ".join(str(message).split()) + "\n")
    else:
        stream.write(warnings.formatwarning(message, category, filename, lineno, line))
    stream.flush()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script."""
    global _main_pid, _interrupted
    _main_pid, _interrupted = os.getpid(), False
    shown_before, warnings.showwarning = warnings.showwarning, _show_warning
    try:
        previous = signal.signal(signal.SIGINT, _on_interrupt)
    except ValueError:  # not the main thread (embedded use): leave signals alone
        previous = None
    if argv is None and previous is not None:  # registered first, so that it runs last
        atexit.register(_ignore_interrupt_in_teardown)
    from repscope.resources import wait_passively_when_busy

    wait_passively_when_busy()  # before torch loads (a training beside busy cores stays fast)
    from repscope.progress import command_progress

    try:
        # bounds the silence of the whole command, not only of each bar
        with command_progress(_command_words(sys.argv[1:] if argv is None else argv)):
            app(args=argv, prog_name="repscope")
    except RepscopeError as exc:
        if _interrupted:
            raise _interrupted_exit() from None
        message = one_line(str(exc))  # one line, whatever the message holds (a value echoed whole is cut)
        print(f"repscope: error: {message}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise _interrupted_exit() from None
    except SystemExit as exc:
        # typer turns KeyboardInterrupt into exit status 130 without a word; Lightning into status 1
        if exc.code == 130 or (exc.code not in (0, None) and (_interrupted or _caused_by_interrupt(exc))):
            raise _interrupted_exit() from None
        if _interrupted:  # a Ctrl-C that a callback swallowed (torch's weakref finalizers) while the command ended
            raise _interrupted_exit(finished=True) from None
        raise
    except Exception as exc:
        if _interrupted:  # an error while tearing down after Ctrl-C (a display, a pool)
            raise _interrupted_exit() from None
        from repscope.fileio import is_write_refusal, os_error_line

        if is_write_refusal(exc):  # a full disk, a read-only or too long destination no writer named
            print(f"repscope: error: {' '.join(os_error_line(exc).split())}", file=sys.stderr)
            raise SystemExit(1) from None
        raise
    finally:
        warnings.showwarning = shown_before
        if previous is not None:
            try:
                # the console script's interpreter shuts down next, for seconds: a Ctrl-C there still gets its line
                # (after an interrupt's line, a second Ctrl-C adds none)
                at_exit = signal.SIG_IGN if _interrupted else _on_interrupt_at_exit
                signal.signal(signal.SIGINT, at_exit if argv is None else previous)
            except ValueError:
                pass

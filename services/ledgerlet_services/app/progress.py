"""Progress for the post-mortem commands that take a while (``replay``, ``whatif``,
``report``): on standard error, so that standard output holds only the answer, and only
on a terminal unless ``--progress`` asks for it (``--no-progress`` never shows it). On a
terminal it is a bar that goes away when done; asked for elsewhere (a CI log, a file), it
is a line per step, or per tenth of the run's virtual time."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ledgerlet_core.model.duration import format_duration
from ledgerlet_services.app.report_console import virtual_time_progress


def add_progress_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress on standard error (default: when standard error is a terminal)",
    )


def wanted(args: argparse.Namespace) -> bool:
    chosen: bool | None = args.progress
    return sys.stderr.isatty() if chosen is None else chosen


def _stderr() -> Console:
    return Console(stderr=True)


def _line(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


@contextmanager
def virtual_time(args: argparse.Namespace, what: str, duration: int) -> Iterator[Callable[[int], None] | None]:
    """The callback a re-derivation calls with the virtual time it has reached."""
    if not wanted(args):
        yield None
        return
    if sys.stderr.isatty():
        with virtual_time_progress(_stderr(), duration, enabled=True) as update:
            yield update
        return
    shown = [-1]

    def tenths(now: int) -> None:
        tenth = min(10, now * 10 // max(duration, 1))
        if tenth > shown[0]:
            shown[0] = tenth
            _line(f"{what}: virtual time {format_duration(now)} of {format_duration(duration)}")

    yield tenths


@contextmanager
def steps(args: argparse.Namespace, what: str) -> Iterator[Callable[[str, int, int], None] | None]:
    """The callback a report calls with ``(what it is doing, steps done, steps in all)``."""
    if not wanted(args):
        yield None
        return
    if not sys.stderr.isatty():
        yield lambda label, done, total: _line(f"{what}: {label} ({done + 1}/{total})")
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_stderr(),
        transient=True,
    )
    task = bar.add_task("reading the run", total=None)

    def update(label: str, done: int, total: int) -> None:
        bar.update(task, description=label, completed=done, total=total)

    with bar:
        yield update

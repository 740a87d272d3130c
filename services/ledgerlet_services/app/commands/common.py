"""What several subcommands share: exit codes, argument types and options, the scenario
read or refused, the decision log written, and SIGINT/SIGTERM handled during a run."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import math
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from rich.console import Console

from ledgerlet_core.contracts.decision_log import encode_records, to_records
from ledgerlet_core.contracts.order import ORDER_BY_NODE
from ledgerlet_core.model.duration import SECOND, DurationError, format_duration, parse_duration
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.bounds import MAX_DURATION, check_duration
from ledgerlet_core.scenario.load import Scenario, load_scenario
from ledgerlet_services.app.collector import collector_paused
from ledgerlet_services.app.inputs import read_bounded
from ledgerlet_services.app.messages import error
from ledgerlet_services.app.outputs import Output, OutputFailed, OutputRefused, check_output, store_files, write_output
from ledgerlet_services.app.report_console import rate, summary_tables
from ledgerlet_services.runtime.embedded import RunResult
from ledgerlet_services.runtime.topic_specs import DEFAULT_PARTITIONS
from ledgerlet_store.run_ids import BadRunId, check_run_id

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def positive_seconds(text: str) -> float:
    """A positive, finite number of seconds (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def positive_duration(text: str) -> int:
    """A Go duration such as 8760h, in nanoseconds (an argparse type)."""
    try:
        value = parse_duration(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive duration, got {text!r}")
    return value


def max_duration_option(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--max-duration",
        type=positive_duration,
        default=format_duration(MAX_DURATION),
        metavar="DURATION",
        help=f"refuse a scenario longer than this in virtual time (default {format_duration(MAX_DURATION)}, a "
        "year: a longer run may never end while the store fills up); give a longer one to run it anyway",
    )


def order_by_node_option(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--order-by-node",
        action="store_true",
        help="number the eviction manager's events per node (the ids a split eviction manager gives; "
        "the same decisions, other ids)",
    )


def ordered(args: argparse.Namespace, scenario: Scenario | None) -> Scenario | None:
    """The scenario ordered by node if ``--order-by-node`` says so (contracts/order.py)."""
    if scenario is None or not args.order_by_node:
        return scenario
    return dataclasses.replace(scenario, order_scheme=ORDER_BY_NODE)


def bus_and_store_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bus",
        default=os.environ.get("LEDGERLET_BUS"),
        help="kafka://HOST:PORT[,HOST:PORT][?namespace=NAME] (env LEDGERLET_BUS)",
    )
    p.add_argument(
        "--store",
        default=os.environ.get("LEDGERLET_STORE"),
        help="event store DSN, postgresql://USER@HOST:PORT/DB (env LEDGERLET_STORE)",
    )
    p.add_argument(
        "--partitions",
        type=int,
        default=int(os.environ.get("LEDGERLET_PARTITIONS", DEFAULT_PARTITIONS)),
        help=f"partitions of the keyed topics when they are created (default {DEFAULT_PARTITIONS})",
    )


def load_or_report(path: Path, console: Console, max_duration: int = MAX_DURATION) -> Scenario | None:
    """The scenario, or None once the error is said (exit 2): one that loads but whose
    run is longer than ``max_duration`` is refused too."""
    try:
        data = read_bounded(path, str(path))  # (a device or a FIFO too: up to the limit)
        with collector_paused():  # (a fleet's millions of objects, none garbage)
            scenario = load_scenario(data, str(path))  # (its bytes: checked as text there, read as JSON)
        check_duration(scenario.duration, max_duration, str(path))
        return scenario
    except OSError as exc:
        error(f"{path}: {exc.strerror or exc}")
        return None
    except InputError as exc:  # (its text is the input's, never markup)
        error(str(exc))
        return None


def run_id_error(run: str | None, option: str = "--run-id") -> bool:
    """Say what is wrong with a run id the user gave (True), before anything runs."""
    if run is None:
        return False
    try:
        check_run_id(run, option)
    except BadRunId as exc:
        error(str(exc))
        return True
    return False


#: how long closing the store may take once a run has stopped (a store cut off mid-write
#: could otherwise keep the process alive)
STORE_CLOSE_TIMEOUT = 10.0


#: the signals that stop a command cleanly (128 + the signal's number)
STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


class _Stopping:
    """The signals received while a run was under way (the first one stops it)."""

    def __init__(self) -> None:
        self.signals: list[signal.Signals] = []


@contextlib.contextmanager
def stopped_by_signals(*, cancel: bool = True) -> Iterator[_Stopping]:
    """SIGINT (Ctrl-C) and SIGTERM stop the run cleanly: the current task is cancelled, so
    every service stops and the store is closed; a second Ctrl-C while that happens gets
    Python's own handling (an immediate KeyboardInterrupt). With ``cancel=False`` the
    signal is only noted, for steps that must not be cut in half (opening the store: its
    driver's thread would answer a loop already gone)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    stopping = _Stopping()
    # (the loop's removal of a handler leaves the signal's default, which for SIGTERM
    # kills the process: the command's own handlers are put back instead)
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}

    def restore() -> None:
        for s in STOP_SIGNALS:
            loop.remove_signal_handler(s)
            if before[s] is not None:
                signal.signal(s, before[s])

    def stop(sig: signal.Signals) -> None:
        stopping.signals.append(sig)
        restore()
        if task is not None and cancel:
            task.cancel()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop, sig)
    try:
        yield stopping
    finally:
        restore()
        if stopping.signals and task is not None and cancel:
            task.uncancel()


def decisions_output(args: argparse.Namespace) -> Output | None:
    """``--decisions``, checked before anything runs: never a device, a FIFO, a
    directory, the store's own file or the scenario (:mod:`outputs`)."""
    reads = [("the scenario", args.scenario), *(("the store's own file", f) for f in store_files(args.store))]
    try:
        return check_output(args.decisions, "--decisions", reads=reads)
    except OutputRefused as exc:
        error(str(exc))
        return None


def write_decisions(
    args: argparse.Namespace, console: Console, scenario: Scenario, result: RunResult, where: str, out: Output
) -> int:
    """Write the decision log; print what was decided. A log that cannot be written
    (a full disk) fails the command, and says that the run itself is stored and how
    to write its log (the same scenario again under its run id: what is stored is kept)."""
    records = to_records([d.envelope for d in result.decisions], scenario.start)
    try:
        write_output(out, encode_records(records))
    except OutputFailed as exc:
        error(
            f"run {result.run} is stored in {where} ({len(records)} decisions), but its decision log was not "
            f"written: {exc}. Run the same scenario with --run-id {result.run} and another --decisions path "
            "to write it from the store.",
        )
        return EXIT_FAILED
    if not args.quiet:
        for table in summary_tables(result.decisions):
            console.print(table)
        console.print(
            f"{len(records)} decisions -> {args.decisions}; {result.events_stored} events stored in "
            f"{where} (run {result.run}); {result.driver.virtual_time / SECOND:g}s of virtual time in "
            f"{result.wall_seconds:.2f}s wall ({rate(result.driver.virtual_time, result.wall_seconds)})",
            highlight=False,
        )
    return EXIT_OK

"""``ledgerlet run``: a scenario through the control loops in one process, its events
stored and its decision log written."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any, Final

from rich.console import Console

from ledgerlet_core.contracts.internal import RUN_FAILED
from ledgerlet_core.scenario.load import Scenario
from ledgerlet_services.app.commands.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    STORE_CLOSE_TIMEOUT,
    decisions_output,
    load_or_report,
    max_duration_option,
    order_by_node_option,
    ordered,
    positive_seconds,
    run_id_error,
    stopped_by_signals,
    write_decisions,
)
from ledgerlet_services.app.commands.stored import address_error, open_failure, store_reason
from ledgerlet_services.app.messages import error, warning
from ledgerlet_services.app.report_console import virtual_time_progress
from ledgerlet_services.runtime.embedded import RunResult, ServiceFailed, new_run_id, record_outcome, run_embedded
from ledgerlet_services.runtime.recorder import DEFAULT_STORE_WAIT, StoreUnwritable
from ledgerlet_services.runtime.run_binding import RunMismatch, check_run_binding
from ledgerlet_services.runtime.telemetry import Telemetry
from ledgerlet_store.contract import StoreError
from ledgerlet_store.dsn import DEFAULT_DSN
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store


def add_parser(sub: Any) -> None:
    """``run``'s options."""
    run = sub.add_parser("run", help="run a scenario through the control loops (embedded: one process)")
    run.add_argument("scenario", type=Path, help="scenario file (ledgerlet/v1 Scenario YAML)")
    run.add_argument("--decisions", type=Path, required=True, help="where to write the decision log (JSON Lines)")
    run.add_argument(
        "--store",
        default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN),
        help=f"event store DSN (default {DEFAULT_DSN}; postgresql://... for PostgreSQL)",
    )
    run.add_argument("--run-id", help="use this run id (ids in the log are derived from it)")
    run.add_argument(
        "--store-wait",
        type=positive_seconds,
        default=os.environ.get("LEDGERLET_STORE_WAIT") or DEFAULT_STORE_WAIT,  # (a variable's text: converted by type=)
        metavar="SECONDS",
        help="how long the store may refuse every write (a database restarting, a full disk) before the run "
        f"stops with exit 1 (env LEDGERLET_STORE_WAIT; default {DEFAULT_STORE_WAIT:g}); a write under way is "
        "let finish",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    max_duration_option(run)
    order_by_node_option(run)
    run.add_argument(
        "--store-observations",
        choices=["node", "full"],
        default="node",
        help="store derived observations with node-level stats only (default; they can be derived "
        "again from the stored inputs) or in full, with every pod's stats",
    )


async def command(args: argparse.Namespace, console: Console) -> int:
    if address_error(args.store, existing=False) or run_id_error(args.run_id):
        return EXIT_BAD_INPUT
    scenario = ordered(args, load_or_report(args.scenario, console, args.max_duration))
    if scenario is None:
        return EXIT_BAD_INPUT
    decisions = decisions_output(args)
    if decisions is None:
        return EXIT_BAD_INPUT
    for w in scenario.warnings:
        warning(f"{scenario.source}: {w}")
    try:  # (the same OTEL_* variables as the distributed services read; all off by default)
        telemetry = Telemetry.from_env("embedded")
    except ValueError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    with stopped_by_signals(cancel=False) as opening:
        try:
            store = await open_store(args.store)
        except Exception as exc:  # a store we cannot open or migrate
            error(open_failure(args.store, exc))
            telemetry.shutdown()
            return EXIT_FAILED
    if opening.signals:
        telemetry.shutdown()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(store.close(), STORE_CLOSE_TIMEOUT)
        warning(
            f"interrupted by {opening.signals[0].name} before the run began; nothing of it was stored", label="stopped"
        )
        return 128 + int(opening.signals[0])
    run_id = args.run_id or new_run_id()
    refused = await _bound_to_its_run(args, store, run_id, scenario) if args.run_id else None
    if refused is not None:
        telemetry.shutdown()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(store.close(), STORE_CLOSE_TIMEOUT)
        return refused
    try:
        with (
            stopped_by_signals() as stopping,
            virtual_time_progress(console, scenario.duration, enabled=not args.quiet and console.is_terminal) as cb,
        ):
            result: RunResult | None = None
            try:
                result = await run_embedded(
                    scenario,
                    store,
                    run=run_id,
                    progress=cb,
                    full_observations=args.store_observations == "full",
                    telemetry=telemetry,
                    store_wait=args.store_wait,
                )
            except asyncio.CancelledError:
                if not stopping.signals:
                    raise
        if result is None:
            return await _interrupted(stopping.signals[0], store, run_id, scenario.duration, console)
    except ServiceFailed as exc:
        error(_failure(exc, store.describe(), run_id, args.store_wait))
        return EXIT_FAILED
    except STORE_ERRORS as exc:  # (storing how the run ended, or reading its decisions back)
        error(
            f"{store.describe()} failed at the end of run {run_id}: {store_reason(exc)}; the run is incomplete. "
            f"Run the same scenario with --run-id {run_id} to complete it."
        )
        return EXIT_FAILED
    finally:
        telemetry.shutdown()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(store.close(), STORE_CLOSE_TIMEOUT)
    return write_decisions(args, console, scenario, result, store.describe(), decisions)


#: what a store that fails raises
STORE_ERRORS: Final = (StoreError, OSError)


def _failure(exc: ServiceFailed, where: str, run: str, wait: float) -> str:
    """Why the run stopped; for a store that took nothing for ``--store-wait``, whether
    the run is stored as failed and how to complete it."""
    cause = exc.__cause__
    if not isinstance(cause, StoreUnwritable):
        return str(exc)
    stored = (
        "it is stored as failed"
        if exc.outcome_stored
        else "it could not be stored as failed either (the store shows it running, then abandoned)"
    )
    return (
        f"{where} could not be written: {cause} (--store-wait {wait:g}); run {run} stopped and {stored}. "
        f"Run the same scenario with --run-id {run} once the store takes writes again to complete it."
    )


async def _bound_to_its_run(args: argparse.Namespace, store: SqlEventStore, run: str, scenario: Scenario) -> int | None:
    """The exit code if ``--run-id`` names a stored run of another scenario or options
    (:mod:`~ledgerlet_services.runtime.run_binding`), or if that cannot be read."""
    full = args.store_observations == "full"
    with stopped_by_signals() as stopping:
        try:
            await check_run_binding(store, run, scenario, full_observations=full)
            return None
        except RunMismatch as exc:
            error(str(exc))
            return EXIT_BAD_INPUT
        except asyncio.CancelledError:
            if not stopping.signals:
                raise
        except Exception as exc:  # the store would not answer
            error(f"cannot read run {run} in {store.describe()}: {store_reason(exc)}")
            return EXIT_FAILED
    warning(f"interrupted by {stopping.signals[0].name} before the run began; nothing was stored", label="stopped")
    return 128 + int(stopping.signals[0])


async def _interrupted(sig: signal.Signals, store: SqlEventStore, run: str, t: int, console: Console) -> int:
    """Say where the run stopped and how to finish it; exit 128 + the signal's number."""
    reason = f"interrupted by {sig.name}"
    with contextlib.suppress(Exception):
        await asyncio.wait_for(record_outcome(store, run, t, RUN_FAILED, reason), STORE_CLOSE_TIMEOUT)
    warning(
        f"{reason}; run {run} is incomplete in {store.describe()}. "
        f"Run the same scenario with --run-id {run} to complete it.",
        label="stopped",
    )
    return 128 + int(sig)

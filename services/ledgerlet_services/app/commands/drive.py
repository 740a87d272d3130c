"""``ledgerlet drive``: a scenario on the distributed stack (the services on Kafka and a store)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from ledgerlet_bus.api import BusTimeout
from ledgerlet_services.app.commands.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    bus_and_store_options,
    decisions_output,
    load_or_report,
    max_duration_option,
    order_by_node_option,
    ordered,
    run_id_error,
    write_decisions,
)
from ledgerlet_services.app.commands.stored import address_error
from ledgerlet_services.app.messages import error, warning
from ledgerlet_services.app.report_console import virtual_time_progress
from ledgerlet_services.runtime.catalog import parse_members
from ledgerlet_services.runtime.run_binding import RunMismatch
from ledgerlet_services.runtime.run_completeness import RunShortfall
from ledgerlet_services.runtime.telemetry import Telemetry
from ledgerlet_store.dsn import describe


def add_parser(sub: Any) -> None:
    """``drive``'s options."""
    drive = sub.add_parser(
        "drive", help="run a scenario on the distributed stack (services running on Kafka + a store)"
    )
    drive.add_argument("scenario", type=Path, help="scenario file (ledgerlet/v1 Scenario YAML)")
    drive.add_argument("--decisions", type=Path, required=True, help="where to write the decision log (JSON Lines)")
    bus_and_store_options(drive)
    drive.add_argument("--run-id", help="use this run id (ids in the log are derived from it)")
    drive.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    max_duration_option(drive)
    order_by_node_option(drive)
    drive.add_argument(
        "--members",
        default=os.environ.get("LEDGERLET_MEMBERS", ""),
        help="services split between several members, NAME=N[,NAME=N] (env LEDGERLET_MEMBERS): the clock "
        "waits for each member (stats-collector and eviction-manager can be split; a split eviction-manager "
        "orders the run by node; see `service --member` and `--pool`)",
    )
    drive.add_argument(
        "--idle-timeout",
        type=float,
        default=float(os.environ.get("LEDGERLET_IDLE_TIMEOUT", "600")),
        help="seconds the services may go without handling anything while a step is under way "
        "before the run gives up (default 600)",
    )


async def command(args: argparse.Namespace, console: Console) -> int:
    scenario = ordered(args, load_or_report(args.scenario, console, args.max_duration))
    if scenario is None:
        return EXIT_BAD_INPUT
    if not args.bus or not args.store:
        error("drive needs --bus and --store (or LEDGERLET_BUS, LEDGERLET_STORE)")
        return EXIT_BAD_INPUT
    if address_error(args.store, existing=False) or run_id_error(args.run_id):
        return EXIT_BAD_INPUT
    decisions = decisions_output(args)
    if decisions is None:
        return EXIT_BAD_INPUT
    for w in scenario.warnings:
        warning(f"{scenario.source}: {w}")
    try:
        members = parse_members(args.members)
    except ValueError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    telemetry = Telemetry.from_env("driver")
    from ledgerlet_services.runtime.distributed import drive  # (Kafka's client: for drive and service alone)

    try:
        with virtual_time_progress(console, scenario.duration, enabled=not args.quiet and console.is_terminal) as cb:
            result = await drive(
                scenario,
                bus_url=args.bus,
                store_dsn=args.store,
                run=args.run_id,
                partitions=args.partitions,
                progress=cb,
                idle_timeout=args.idle_timeout,
                telemetry=telemetry,
                members=members,
            )
    except BusTimeout as exc:
        running = " (is every member of a split service running, as --members says?)" if members else ""
        error(f"{exc}{running}")
        return EXIT_FAILED
    except RunMismatch as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except RunShortfall as exc:
        error(f"{exc} (stored as failed)")
        return EXIT_FAILED
    finally:
        telemetry.shutdown()
    return write_decisions(args, console, scenario, result, describe(args.store), decisions)

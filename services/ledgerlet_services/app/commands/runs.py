"""``ledgerlet runs``: the runs in a store, newest first, with how each ended."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from ledgerlet_services.app.commands.stored import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    open_reading,
    output_option,
    print_data,
)
from ledgerlet_store.dsn import DEFAULT_DSN


def add_parser(sub: Any) -> None:
    """``runs``' options."""
    runs = sub.add_parser("runs", help="the runs in a store, newest first, with how each ended")
    runs.add_argument("--store", default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN), help="event store DSN")
    output_option(runs, ("table", "wide", "json", "yaml", "name"))


async def command(args: argparse.Namespace, console: Console) -> int:
    """Every run with its state: a run that did not complete is plain to see."""
    from rich.table import Table

    from ledgerlet_services.audit.queries import Audit

    store = await open_reading(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    try:
        runs = await Audit(store).runs()
    finally:
        await store.close()
    if args.output == "name":  # one id a line, as kubectl's -o name (shell completion reads it)
        sys.stdout.write("".join(f"{r.run}\n" for r in runs))
        return EXIT_OK
    if args.output in ("json", "yaml"):
        rows = [
            {
                "run": r.run,
                "name": r.name,
                "status": r.status,
                **({"statusReason": r.status_reason} if r.status_reason else {}),
                "recordedAt": r.recorded_at.isoformat(),
                "durationSeconds": r.duration_seconds,
            }
            for r in runs
        ]
        print_data(rows, args.output)
        return EXIT_OK
    wide = args.output == "wide"
    table = Table(title=f"Runs in {store.describe()}")
    table.add_column("run", no_wrap=True, min_width=32)  # ids are copied from here: never cut
    for name in ("scenario", "status", "recorded at", *(("virtual duration", "why it ended so") if wide else ())):
        table.add_column(name)
    colour = {"completed": "green", "failed": "red", "abandoned": "yellow", "running": "cyan"}
    for r in runs:
        status = f"[{colour.get(r.status, 'white')}]{r.status}[/]"
        row = [r.run, escape(r.name), status, r.recorded_at.strftime("%Y-%m-%d %H:%M:%S UTC")]
        if wide:
            row += [f"{r.duration_seconds:g}s", escape(r.status_reason)]
        elif r.status_reason:
            row[2] += f" ({escape(r.status_reason)})"
        table.add_row(*row)
    console.print(table)
    return EXIT_OK

"""``ledgerlet export``: a stored run in a format other tools read (``--openmetrics``:
Prometheus' backfill, then Grafana; audit/export_openmetrics.py)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from ledgerlet_services.app.commands.stored import EXIT_BAD_INPUT, EXIT_OK, open_reading
from ledgerlet_services.app.messages import error
from ledgerlet_store.dsn import DEFAULT_DSN


def add_parser(sub: Any) -> None:
    """``export``'s options."""
    export = sub.add_parser(
        "export",
        help="a stored run's signals, thresholds and decisions as OpenMetrics (for promtool and Grafana)",
        description="Writes OpenMetrics text that `promtool tsdb create-blocks-from openmetrics FILE DIR` "
        "turns into Prometheus blocks; deploy/grafana/ledgerlet-incident.json shows it.",
    )
    export.add_argument(
        "--store",
        default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN),
        help=f"event store DSN (default {DEFAULT_DSN}, or LEDGERLET_STORE)",
    )
    export.add_argument("--run", help="run id (default: the newest completed run in the store)")
    export.add_argument("--openmetrics", action="store_true", required=True, help="OpenMetrics text (the one format)")
    export.add_argument("--node", action="append", default=[], help="only this node's signals (repeatable)")
    export.add_argument("--out", type=Path, required=True, help="file to write (- for standard output)")


async def command(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.audit.export_openmetrics import export_openmetrics
    from ledgerlet_services.audit.queries import NotFound

    store = await open_reading(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    to_stdout = str(args.out) == "-"
    tmp = None if to_stdout else args.out.with_name(f".{args.out.name}.tmp")
    try:
        if tmp is None:
            run, done = await export_openmetrics(store, args.run, sys.stdout, nodes=args.node)
        else:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("w", encoding="utf-8") as sink:
                run, done = await export_openmetrics(store, args.run, sink, nodes=args.node)
            tmp.replace(args.out)  # whole or not at all
    except NotFound as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    finally:
        await store.close()
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    Console(stderr=True).print(
        f"{'-' if to_stdout else args.out}: run {run}, {done.samples:,} samples in {done.series:,} series "
        f"from {done.nodes:,} observed nodes; backfill: promtool tsdb create-blocks-from openmetrics FILE DIR",
        highlight=False,
    )
    return EXIT_OK

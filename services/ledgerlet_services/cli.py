"""``ledgerlet``: run scenarios, and (as the product grows) serve, replay and explain them."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from ledgerlet_core.contracts.decision_log import encode_records, to_records
from ledgerlet_core.duration import SECOND
from ledgerlet_core.errors import InputError
from ledgerlet_core.scenario import Scenario, load_scenario
from ledgerlet_services.embedded import ServiceFailed, run_embedded
from ledgerlet_services.report_console import rate, summary_tables, virtual_time_progress
from ledgerlet_store.dsn import DEFAULT_DSN
from ledgerlet_store.store import EventStore

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ledgerlet", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a scenario through the control loops (embedded: one process)")
    run.add_argument("scenario", type=Path, help="scenario file (ledgerlet/v1 Scenario YAML)")
    run.add_argument("--decisions", type=Path, required=True, help="where to write the decision log (JSON Lines)")
    run.add_argument(
        "--store",
        default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN),
        help=f"event store DSN (default {DEFAULT_DSN}; postgresql://... for PostgreSQL)",
    )
    run.add_argument("--run-id", help="use this run id (ids in the log are derived from it)")
    run.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    run.add_argument(
        "--store-observations",
        choices=["node", "full"],
        default="node",
        help="store derived observations with node-level stats only (default; they can be derived "
        "again from the stored inputs) or in full, with every pod's stats",
    )

    contracts = sub.add_parser("contracts", help="write or check the JSON Schemas in contracts/")
    contracts.add_argument("--dir", type=Path, default=Path("contracts"))
    contracts.add_argument("--check", action="store_true", help="fail if the committed schemas are stale")
    return p


def load_or_report(path: Path, console: Console) -> Scenario | None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        console.print(f"[red]error:[/red] {path}: {exc.strerror or exc}")
        return None
    try:
        return load_scenario(text, str(path))
    except InputError as exc:
        console.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        return None


async def _run(args: argparse.Namespace, console: Console) -> int:
    scenario = load_or_report(args.scenario, console)
    if scenario is None:
        return EXIT_BAD_INPUT
    for w in scenario.warnings:
        console.print(f"[yellow]warning:[/yellow] {scenario.source}: {w}", highlight=False)
    try:
        store = await EventStore.open(args.store)
    except Exception as exc:  # a store we cannot open or migrate
        console.print(f"[red]error:[/red] cannot open store {args.store}: {exc}", highlight=False)
        return EXIT_FAILED
    try:
        with virtual_time_progress(console, scenario.duration, enabled=not args.quiet and console.is_terminal) as cb:
            result = await run_embedded(
                scenario, store, run=args.run_id, progress=cb, full_observations=args.store_observations == "full"
            )
    except ServiceFailed as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return EXIT_FAILED
    finally:
        await store.close()
    records = to_records([d.envelope for d in result.decisions], scenario.start)
    _write_atomically(args.decisions, encode_records(records))
    if not args.quiet:
        for table in summary_tables(result.decisions):
            console.print(table)
        console.print(
            f"{len(records)} decisions -> {args.decisions}; {result.events_stored} events stored in "
            f"{store.describe()} (run {result.run}); {result.driver.virtual_time / SECOND:g}s of virtual time in "
            f"{result.wall_seconds:.2f}s wall ({rate(result.driver.virtual_time, result.wall_seconds)})",
            highlight=False,
        )
    return EXIT_OK


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _contracts(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.contracts_gen import check_or_write

    problems = check_or_write(args.dir, write=not args.check)
    for p in problems:
        console.print(f"[red]stale:[/red] {p}", highlight=False)
    if problems and args.check:
        console.print("run `ledgerlet contracts` to regenerate the schemas", highlight=False)
        return EXIT_FAILED
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console(stderr=False)
    if not console.is_terminal:
        console.width = max(console.width, 120)  # logs and pipes: do not squeeze the tables
    if args.command == "run":
        return asyncio.run(_run(args, console))
    if args.command == "contracts":
        return _contracts(args, console)
    return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())

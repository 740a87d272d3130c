"""The post-mortem commands: serve, kubeconfig, replay, whatif, explain, report, import.

One module each under ``commands/`` (``replay`` holds ``whatif`` too); this one adds
their parsers in the order ``ledgerlet --help`` lists them and dispatches to them."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from rich.console import Console

from ledgerlet_services.app.cli_export import add_parser as add_export_parser
from ledgerlet_services.app.cli_export import run_export
from ledgerlet_services.app.commands import collect, explain, importing, kubeconfig, replay, report, runs, serve
from ledgerlet_services.app.commands.stored import open_reading

COMMANDS = ("serve", "kubeconfig", "runs", "replay", "whatif", "explain", "report", "import", "collect", "export")


def add_parsers(sub: Any) -> None:
    for module in (serve, kubeconfig, runs, replay, explain, report, importing, collect):
        module.add_parser(sub)
    add_export_parser(sub)


def dispatch(args: argparse.Namespace, console: Console) -> int:
    if args.command == "serve":
        return serve.command(args, console)
    if args.command == "kubeconfig":
        return kubeconfig.command(args)
    if args.command == "import":
        return importing.command(args, console)
    if args.command == "collect":
        return collect.command(args, console)
    if args.command == "export":
        return asyncio.run(run_export(args, console, open_reading))
    runner = {
        "runs": runs.command,
        "replay": replay.replay,
        "whatif": replay.whatif,
        "explain": explain.command,
        "report": report.command,
    }[args.command]
    return asyncio.run(runner(args, console))

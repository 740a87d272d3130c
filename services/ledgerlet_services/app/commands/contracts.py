"""``ledgerlet contracts``: write or check the JSON Schemas in ``contracts/``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from ledgerlet_services.app.commands.common import (
    EXIT_FAILED,
    EXIT_OK,
)
from ledgerlet_services.app.messages import error


def add_parser(sub: Any) -> None:
    """``contracts``' options."""
    contracts = sub.add_parser("contracts", help="write or check the JSON Schemas in contracts/")
    contracts.add_argument("--dir", type=Path, default=Path("contracts"), help="where the schemas are")
    contracts.add_argument("--check", action="store_true", help="fail if the committed schemas are stale")


def command(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.app.contracts_gen import check_or_write

    problems = check_or_write(args.dir, write=not args.check)
    for p in problems:
        error(p, label="stale")
    if problems and args.check:
        console.print("run `ledgerlet contracts` to regenerate the schemas", highlight=False)
        return EXIT_FAILED
    return EXIT_OK

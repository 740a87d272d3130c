"""What the commands that read a stored run share: the store and output options, the store
opened read-only or the reason it could not be, an output file checked, data printed as JSON
or YAML, a warning for a run that did not complete."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from ledgerlet_services.app import messages
from ledgerlet_services.app.messages import error
from ledgerlet_services.app.outputs import Output, OutputRefused, check_output, store_files
from ledgerlet_store.dsn import DEFAULT_DSN, BadAddress, check_address, describe
from ledgerlet_store.read_only import read_only_url
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT = 0, 1, 2


def store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN),
        help=f"event store DSN (default {DEFAULT_DSN}, or LEDGERLET_STORE)",
    )
    p.add_argument("--run", help="run id (default: the newest completed run in the store)")


def output_option(p: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    """kubectl's ``-o``; ``--json`` stays as the short form of ``-o json``."""
    p.add_argument("-o", "--output", choices=formats, default=formats[0], help=f"default {formats[0]}")
    p.add_argument("--json", dest="output", action="store_const", const="json", help="-o json")


def print_data(data: Any, output: str, file: Any = None) -> None:
    """Objects as JSON or YAML on stdout (the answer, nothing else), or on ``file``."""
    if output == "yaml":
        print(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True), end="", file=file)
    else:
        print(json.dumps(data, indent=2), file=file)


def warn(warning: str | None) -> None:
    """On stderr, so that ``--json`` output stays JSON."""
    if warning is not None:
        messages.warning(warning)


async def warn_if_incomplete(store: SqlEventStore, run: str) -> None:
    from ledgerlet_services.app.replay import NoSuchRun, incomplete_warning, run_state

    with contextlib.suppress(NoSuchRun):
        warn(incomplete_warning(await run_state(store, run)))


def checked_output(path: Path, option: str, dsn: str) -> Output | bool:
    """An output path checked before the store is read (False: refused, said why)."""
    try:
        return check_output(path, option, reads=[("the store's own file", f) for f in store_files(dsn)])
    except OutputRefused as exc:
        error(str(exc))
        return False


def address_error(dsn: str, *, existing: bool) -> bool:
    """Say what is wrong with a store address (True), before anything is read or run."""
    try:
        check_address(dsn, existing=existing)
    except BadAddress as exc:
        error(str(exc))
        return True
    return False


def store_reason(exc: BaseException) -> str:
    """What a store's failure comes to, in a line: the database's own words (SQLAlchemy
    wraps them in a paragraph with a link)."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def open_failure(dsn: str, exc: BaseException) -> str:
    """The message for a store that would not open."""
    unwritable = " (it cannot be written: a read-only file or filesystem)" if read_only_url(dsn) else ""
    return f"cannot open store {describe(dsn)}: {store_reason(exc)}{unwritable}"


async def open_reading(args: argparse.Namespace, console: Console) -> SqlEventStore | None:
    """The store a read command reads: never created here (a mistyped path would
    otherwise become an empty store that has no runs)."""
    if address_error(args.store, existing=True):
        return None
    try:  # (only a what-if saved as a run writes)
        return await open_store(args.store, reading=not getattr(args, "save_as", None))
    except Exception as exc:  # a store we cannot open or migrate
        error(open_failure(args.store, exc))
        return None

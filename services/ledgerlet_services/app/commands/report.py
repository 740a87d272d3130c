"""``ledgerlet report``: a self-contained HTML post-mortem of a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ledgerlet_services.app import progress
from ledgerlet_services.app.commands.stored import (
    EXIT_BAD_INPUT,
    EXIT_MISMATCH,
    EXIT_OK,
    checked_output,
    open_reading,
    output_option,
    print_data,
    store_option,
    warn_if_incomplete,
)
from ledgerlet_services.app.messages import error
from ledgerlet_services.app.outputs import Output, OutputFailed, write_output
from ledgerlet_services.app.progress import add_progress_arg


def add_parser(sub: Any) -> None:
    """``report``'s options."""
    report = sub.add_parser("report", help="a self-contained HTML post-mortem of a run")
    store_option(report)
    report.add_argument("--out", type=Path, required=True, help="where to write the HTML (-: standard output)")
    report.add_argument("--compare", metavar="RUN", help="another run (a saved what-if): its pod endings beside these")
    output_option(report, ("text", "json", "yaml"))
    add_progress_arg(report)


async def command(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.audit.queries import NotFound
    from ledgerlet_services.audit.report import write_report

    out = checked_output(args.out, "--out", args.store)
    if out is False:
        return EXIT_BAD_INPUT
    assert isinstance(out, Output)
    store = await open_reading(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    try:
        with progress.steps(args, "report") as update:
            summary = await write_report(
                store,
                args.run,
                args.out,
                compare=args.compare,
                progress=update,
                write=lambda data: write_output(out, data),
            )
        if args.run not in (None, "", "latest"):
            await warn_if_incomplete(store, args.run)
    except NotFound as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except OutputFailed as exc:
        error(f"the report was not written: {exc}")
        return EXIT_MISMATCH
    finally:
        await store.close()
    to_stdout = str(args.out) == "-"  # the report is standard output: the summary goes to standard error
    if args.output != "text":
        print_data(summary.to_dict(), args.output, file=sys.stderr if to_stdout else None)
    else:
        (Console(stderr=True) if to_stdout else console).print(escape(summary.text()), highlight=False)
    return EXIT_OK

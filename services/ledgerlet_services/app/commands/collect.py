"""``ledgerlet collect``: a live cluster recorded for ``import``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from ledgerlet_core.model.errors import InputError
from ledgerlet_services.app.commands.stored import (
    EXIT_BAD_INPUT,
    EXIT_MISMATCH,
    EXIT_OK,
)
from ledgerlet_services.app.messages import error


def add_parser(sub: Any) -> None:
    """``collect``'s options."""
    collect = sub.add_parser(
        "collect",
        help="record a live cluster (objects, configz, /stats/summary per node) for import",
        description="Reads through the API server (kubectl's kubeconfig): the objects once, then each "
        "node's /stats/summary via the node proxy every --interval for --rounds rounds.",
    )
    collect.add_argument(
        "--kubeconfig",
        help="a file or a :-separated list, merged as kubectl does (default: $KUBECONFIG or ~/.kube/config)",
    )
    collect.add_argument("--context", help="default: the kubeconfig's current context")
    collect.add_argument("--token", help="a bearer token, instead of the kubeconfig user's credentials")
    collect.add_argument("--interval", default="10s", help="between rounds of summaries (default 10s)")
    collect.add_argument("--rounds", type=int, default=6, help="rounds of summaries (default 6)")
    collect.add_argument("--out", type=Path, required=True, help="directory to write (import reads it)")


def command(args: argparse.Namespace, console: Console) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ledgerlet_core.model.duration import DurationError, parse_duration
    from ledgerlet_services.app.collect import ApiError, Client, collect
    from ledgerlet_services.app.kubeconfig import load_kubeconfig

    try:
        interval = parse_duration(args.interval) / 1e9
        if interval < 0:
            raise InputError("must not be negative", field="--interval")
        if args.rounds < 1:
            raise InputError("at least one round", field="--rounds")
        api = load_kubeconfig(args.kubeconfig, args.context, token=args.token)
    except (InputError, DurationError) as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    columns = (TextColumn("summaries"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("collect", total=None)
        try:
            done = collect(
                Client(api),
                args.out,
                interval=interval,
                rounds=args.rounds,
                progress=lambda n, total: bar.update(task, completed=n, total=total),
            )
        except ApiError as exc:
            error(f"{api.server}: {exc}")
            return EXIT_MISMATCH  # (1: the cluster failed us, not the input)
    console.print(escape(done.text()), highlight=False)
    return EXIT_OK

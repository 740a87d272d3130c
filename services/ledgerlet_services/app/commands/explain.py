"""``ledgerlet explain``: why a pod was evicted, preempted, killed or rejected."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.markup import escape

from ledgerlet_services.app.commands.stored import (
    EXIT_BAD_INPUT,
    EXIT_MISMATCH,
    EXIT_OK,
    open_reading,
    output_option,
    print_data,
    store_option,
    warn_if_incomplete,
)
from ledgerlet_services.app.messages import error
from ledgerlet_store.sql_store import SqlEventStore


def add_parser(sub: Any) -> None:
    """``explain``'s options."""
    explain = sub.add_parser("explain", help="why a pod was evicted, preempted, killed or rejected")
    explain.add_argument("pod", help="NAME (any namespace, if only one has it), or NAMESPACE/NAME")
    explain.add_argument("-n", "--namespace", help="the pod's namespace")
    store_option(explain)
    output_option(explain, ("text", "json", "yaml"))
    explain.add_argument("--compare", metavar="RUN", help="the same pod in another run (a saved what-if), side by side")


async def _pod_key(store: SqlEventStore, run: str, pod: str, namespace: str | None) -> str:
    """``namespace/name`` for what the user typed: as given, with ``-n``, or a bare name
    that one namespace of the run has (a post-mortem starts from a pod's name)."""
    from ledgerlet_services.audit.queries import NotFound

    if "/" in pod:
        return pod
    if namespace:
        return f"{namespace}/{pod}"
    found = await store.pods_named(run, pod)
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFound(f"no pod named {pod!r} in run {run} (give -n NAMESPACE or NAMESPACE/NAME)")
    raise NotFound(f"pods named {pod!r} in {len(found)} namespaces of run {run}: {', '.join(found)}; give -n")


async def command(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.audit.pod_runs import hint, runs_holding
    from ledgerlet_services.audit.queries import Audit, NotFound

    if args.pod.count("/") > 1 or (args.namespace and "/" in args.pod) or args.pod.strip("/") != args.pod:
        error(f"expected NAME with -n NAMESPACE, or NAMESPACE/NAME, got {args.pod!r}")
        return EXIT_BAD_INPUT
    store = await open_reading(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    try:
        audit = Audit(store)
        try:
            run = await audit.resolve(args.run)
            try:
                pod = await _pod_key(store, run, args.pod, args.namespace)
                exp = await audit.explain(run, pod)
            except NotFound as exc:  # the pod is not in the chosen run: which runs hold it?
                wanted = f"{args.namespace}/{args.pod}" if args.namespace else args.pod
                holders = await runs_holding(audit, wanted, besides=run)
                raise NotFound(f"{exc}{hint(wanted, holders, 'explain')}") from None
            await warn_if_incomplete(store, run)
            other = await audit.explain(await audit.resolve(args.compare), pod) if args.compare else None
            sources = {r.run: r.source for r in await audit.runs()} if other is not None else {}
        except NotFound as exc:
            error(str(exc))
            return EXIT_BAD_INPUT
    finally:
        await store.close()
    if other is not None:
        if args.output == "text":
            console.print(_side_by_side(exp, other, sources))
        else:
            print_data({"runs": [exp.to_dict(), other.to_dict()]}, args.output)
        return EXIT_OK
    if args.output == "text":
        print(exp.render_text(), end="")
    else:
        print_data(exp.to_dict(), args.output)
    return EXIT_OK if exp.outcome is not None else EXIT_MISMATCH


def _side_by_side(a: Any, b: Any, sources: dict[str, str]) -> Any:
    """One pod in two runs, column by column: outcome, verdict, rank, grace."""
    from rich.table import Table

    def rank(exp: Any) -> str:
        place = next((r for r in exp.ranking if r.get("this")), None)
        return f"{place['position']} of {len(exp.ranking)}" if place else "-"

    def outcome(exp: Any) -> str:
        o = exp.outcome
        return f"{o['type']} at {o['time'][11:19]} UTC (+{o['t']:g}s)" if o else "not ended"

    table = Table(title=f"{a.pod}, side by side", show_lines=True)
    table.add_column("")
    for exp in (a, b):
        table.add_column(f"run {exp.run}" + (f"\n{sources[exp.run]}" if sources.get(exp.run) else ""), ratio=1)
    for label, value in (
        ("outcome", outcome),
        ("why", lambda e: e.verdict),
        ("rank", rank),
        ("grace", lambda e: e.grace),
    ):
        table.add_row(label, escape(value(a) or "-"), escape(value(b) or "-"))
    return table

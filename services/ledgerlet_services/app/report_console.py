"""What ``ledgerlet run`` shows on a terminal: progress in virtual time, then a summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import msgspec
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ledgerlet_core.model.duration import SECOND, format_duration
from ledgerlet_store.contract import StoredEvent


@contextmanager
def virtual_time_progress(console: Console, duration: int, *, enabled: bool) -> Iterator[Any]:
    """A progress bar over virtual time; yields the callback the driver calls."""
    if not enabled:
        yield None
        return
    progress = Progress(
        TextColumn("[bold]virtual time[/bold]"),
        BarColumn(),
        TextColumn("{task.fields[now]} / {task.fields[span]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = progress.add_task("run", total=max(duration, 1), now="0s", span=format_duration(duration))

    def update(now: int) -> None:
        progress.update(task, completed=now, now=format_duration(now))

    with progress:
        yield update


def summary_tables(decisions: Sequence[StoredEvent]) -> list[Table]:
    counts = Counter(d.envelope.type for d in decisions)
    by_type = Table(title="Decisions by type")
    by_type.add_column("type")
    by_type.add_column("count", justify="right")
    for name, n in sorted(counts.items()):
        by_type.add_row(name, str(n))
    evicted = Table(title="Pods evicted, and why")
    for col in ("t", "node", "pod", "threshold", "observed", "grace"):
        evicted.add_column(col, overflow="fold")
    for d in decisions:
        env = d.envelope
        if env.type != "PodEvicted":
            continue
        data = msgspec.json.decode(env.data)
        evicted.add_row(
            format_duration(env.t),
            env.node or "",
            env.pod or "",
            data["threshold"],
            _amount(data["signal"], data["observed"]),
            f"{data['gracePeriodSeconds']}s",
        )
    return [by_type, evicted] if evicted.row_count else [by_type]


def _amount(signal: str, value: int) -> str:
    if signal.endswith("inodesFree") or signal.startswith("pid"):
        return str(value)
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if abs(value) >= size:
            return f"{value / size:.2f}{unit}"
    return f"{value}B"


def rate(virtual_ns: int, wall_seconds: float) -> str:
    if wall_seconds <= 0:
        return "-"
    return f"{virtual_ns / SECOND / wall_seconds:,.0f} virtual s per wall s"


def whatif_table(report: Any) -> list[Table]:
    """``ledgerlet whatif``: decision counts side by side, then every pod whose outcome changed."""
    d = report.diff
    counts = Table(title=f"Decisions: recorded run {report.run} vs what-if")
    for col in ("type", "recorded", "what-if", "change"):
        counts.add_column(col, justify="left" if col == "type" else "right")
    for name, (a, b) in d.counts.items():
        counts.add_row(name, str(a), str(b), f"{b - a:+d}" if a != b else "")
    tables = [counts]
    if d.first_pressure:
        pressure = Table(title="First pressure condition, by node")
        for col in ("node", "condition", "recorded", "what-if"):
            pressure.add_column(col)
        for (node, cond), (a, b) in d.first_pressure.items():
            pressure.add_row(
                node,
                cond,
                format_duration(a) if a is not None else "never",
                format_duration(b) if b is not None else "never",
            )
        tables.append(pressure)
    if d.changes:
        changes = Table(title="Pods whose outcome changed")
        for col in ("change", "decision", "pod", "node", "recorded", "what-if", "detail"):
            changes.add_column(col, overflow="fold")
        for c in d.changes:
            changes.add_row(
                c.change,
                c.type,
                c.pod,
                c.node or "",
                format_duration(c.recorded_t) if c.recorded_t is not None else "-",
                format_duration(c.whatif_t) if c.whatif_t is not None else "-",
                c.detail,
            )
        tables.append(changes)
    return tables

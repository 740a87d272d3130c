"""Collects a run's report from the store and writes it (``ledgerlet report``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledgerlet_core.contracts.registry import DECISION, decode_data, node_stream
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.timefmt import format_rfc3339
from ledgerlet_core.postmortem.explain import ranking_rows, show, verdict
from ledgerlet_core.postmortem.signals_series import node_signal_series
from ledgerlet_services.audit.queries import Audit
from ledgerlet_services.audit.report_charts import MARKS, Band, Marker
from ledgerlet_services.audit.report_devices import Chart, one_chart_per_device
from ledgerlet_services.audit.report_html import (
    Compared,
    EvictionRow,
    NodeSection,
    Preemption,
    ReportData,
    Shutdown,
    Verdict,
    render_report,
)
from ledgerlet_services.audit.report_summary import NO_POOL, node_pool
from ledgerlet_store.runs import run_states
from ledgerlet_store.sql_store import SqlEventStore

#: nodes whose signals are drawn (a chart costs ~0.1 s): one of each group of evictions
#: (signal and pool) first, then those with the most; every node's detail is listed
MAX_PLOTTED_NODES = 12
_INTERESTING = {"PodEvicted", "OOMKilled", "PodPreempted", "NodeConditionChanged", "NodeReclaimed", "PodTerminated"}
_OTHER_ENDINGS = ("OOMKilled", "PodPreempted", "PodRejected", "PodForceDeleted", "PodTerminated")
#: what ends a pod, for the answer (a PodTerminated after an eviction or preemption is its sequel)
_ENDINGS = ("PodEvicted", *_OTHER_ENDINGS)
_SEQUELS = ("Evicted", "Preempted")


#: what the report tells as it goes: a step's label, steps done, steps in all
Progress = Callable[[str, int, int], None]


async def collect(store: SqlEventStore, run: str | None, progress: Progress | None = None) -> ReportData:
    audit = Audit(store)
    run = await audit.resolve(run)
    started, start = await audit.started(run)
    decisions = [e.envelope for e in await store.read_run(run, kind=DECISION)]
    data = {e.id: json.loads(bytes(e.data)) for e in decisions}
    counts: dict[str, int] = {}
    for e in decisions:
        counts[e.type] = counts.get(e.type, 0) + 1
    duration = started.duration / SECOND

    touched = {e.node for e in decisions if e.node and e.type in _INTERESTING}
    order = {n: i for i, n in enumerate(started.node_order)}
    pools, pool_label = await _pools(store, run, sorted(touched))
    evictions = []
    endings = []
    for e in decisions:
        d = data[e.id]
        if e.type == "PodEvicted":
            unit = "bytes" if d.get("resource") in ("memory", "ephemeral-storage") else "count"
            ranking = ranking_rows(d, e.pod or "")
            place = next((r for r in ranking if r.get("this")), {})
            evictions.append(
                EvictionRow(
                    t=e.t / SECOND,
                    time=format_rfc3339(start, e.t),
                    node=e.node or "",
                    pod=e.pod or "",
                    threshold=str(d.get("threshold", "")),
                    observed=show(d["observed"], unit) if isinstance(d.get("observed"), int | float) else "?",
                    grace=f"{d.get('gracePeriodSeconds')} s",
                    message=str(d.get("message", "")),
                    ranking=ranking,
                    signal=str(d.get("signal") or ""),
                    hard=bool(d.get("hard", True)),
                    observed_value=int(d["observed"]) if isinstance(d.get("observed"), int | float) else None,
                    capacity=int(d.get("capacity") or 0),
                    unit=unit,
                    usage=int(place["usage"]) if isinstance(place.get("usage"), int | float) else None,
                    pool=pools.get(e.node or "", NO_POOL),
                )
            )
        elif e.type in _OTHER_ENDINGS and not (e.type == "PodTerminated" and d.get("reason") == "Evicted"):
            endings.append(
                {
                    "t": e.t / SECOND,
                    "time": format_rfc3339(start, e.t),
                    "type": e.type,
                    "node": e.node,
                    "pod": e.pod,
                    "why": _why(e.type, d),
                }
            )
    verdicts = []
    rejected: dict[str, list[Any]] = {}  # admission refusals, told once per reason
    for e in decisions:
        d = data[e.id]
        if e.type not in _ENDINGS or not e.pod or (e.type == "PodTerminated" and d.get("reason") in _SEQUELS):
            continue
        if e.type == "PodRejected":
            rejected.setdefault(f"{d.get('reason')}: {d.get('message')}", []).append(e)
            continue
        cited = {c: data[c] for c in e.causes if c in data}
        text, grace = verdict(e.pod, e, d, lambda t: format_rfc3339(start, t), cited)
        verdicts.append(Verdict(e.t / SECOND, format_rfc3339(start, e.t), e.type, e.pod, e.node or "", text, grace))
    for why, refused in rejected.items():
        first, last = refused[0], refused[-1]
        span = format_rfc3339(start, first.t)[11:19] + (
            f" to {format_rfc3339(start, last.t)[11:19]} UTC" if last.t != first.t else " UTC"
        )
        pods = ", ".join(dict.fromkeys(e.pod for e in refused))
        text = f"{len(refused)} pod{'s' if len(refused) > 1 else ''} refused at admission ({span}): {why} Pods: {pods}."
        verdicts.append(
            Verdict(
                first.t / SECOND,
                format_rfc3339(start, first.t),
                "PodRejected",
                refused[0].pod or "",
                first.node or "",
                text,
                "",
            )
        )
    verdicts.sort(key=lambda v: v.t)
    nodes = _node_order(touched, evictions, order)
    plotted = set(_plotted(nodes, evictions))
    sections = []
    read = 0
    for node in nodes:
        mine = [e for e in decisions if e.node == node]
        triggering = list(dict.fromkeys(str(data[e.id].get("signal")) for e in mine if e.type == "PodEvicted"))
        charts: list[Chart] = []
        if node in plotted:
            if progress is not None:
                progress(f"reading node {node}", read, len(plotted) + 1)
            read += 1
            observations = [
                e.envelope for e in await store.read_stream_window(run, node_stream(node), types=["NodeObserved"])
            ]
            thresholds = await audit.node_thresholds(run, node, observations)
            series = [s for s in node_signal_series(observations, thresholds).values() if s.thresholds]
            series.sort(
                key=lambda s: (
                    s.signal not in triggering,
                    triggering.index(s.signal) if s.signal in triggering else 0,
                )
            )
            charts = one_chart_per_device(series)
        if not charts and "PodEvicted" not in {e.type for e in mine}:
            continue  # nothing to show of it (no observations, no eviction): no empty detail
        sections.append(
            NodeSection(
                node,
                charts,
                _bands(mine, data, duration) if charts else [],
                _markers(mine, data) if charts else [],
                triggering=triggering,
                pool=pools.get(node, NO_POOL),
                plotted=node in plotted,
            )
        )
    preemptions = [
        Preemption(
            t=e.t / SECOND,
            time=format_rfc3339(start, e.t),
            preemptor=e.pod or "",
            node=e.node or "",
            victims=list(data[e.id].get("victims") or []),
            why=str(data[e.id].get("decidedBy") or data[e.id].get("message") or ""),
        )
        for e in decisions
        if e.type == "PodNominated" and data[e.id].get("victims")
    ]
    shutdowns = [
        Shutdown(
            t=e.t / SECOND,
            time=format_rfc3339(start, e.t),
            node=e.node or "",
            graceful=bool(data[e.id].get("graceful")),
            groups=list(data[e.id].get("groups") or []),
        )
        for e in decisions
        if e.type == "NodeShutdownStarted"
    ]
    state = next((s for s in await run_states(store) if s.run == run), None)
    incomplete = None
    if state is not None and not state.completed:
        incomplete = (
            f"It is {state.status}{': ' + state.reason if state.reason else ''}; what follows is only part of it."
        )
    return ReportData(
        incomplete=incomplete,
        run=run,
        name=started.name,
        source=started.source,
        start=started.start,
        start_at=start,
        duration=duration,
        verdicts=verdicts,
        preemptions=preemptions,
        shutdowns=shutdowns,
        counts=counts,
        nodes=sections,
        evictions=evictions,
        endings=endings,
        pool_label=pool_label,
    )


def _bands(decisions: list[Any], data: dict[str, dict[str, Any]], duration: float) -> list[Band]:
    bands: list[Band] = []
    open_at: dict[str, float] = {}
    for e in decisions:
        if e.type != "NodeConditionChanged":
            continue
        d = data[e.id]
        cond, status = d.get("condition", ""), d.get("status")
        if cond == "Ready":
            status = "False" if status == "True" else "True"  # a band where the node is not ready
        if status == "True":
            open_at.setdefault(cond, e.t / SECOND)
        elif cond in open_at:
            bands.append(Band(cond, open_at.pop(cond), e.t / SECOND))
    bands.extend(Band(c, t, duration) for c, t in open_at.items())
    return bands


def _markers(decisions: list[Any], data: dict[str, dict[str, Any]]) -> list[Marker]:
    out = []
    for e in decisions:
        if e.type not in MARKS or (e.type == "PodTerminated" and data[e.id].get("reason") == "Evicted"):
            continue
        label = f"{e.t / SECOND:g}s {e.type} {e.pod or ''} {_why(e.type, data[e.id])}".strip()
        out.append(Marker(e.t / SECOND, e.type, label))
    return out


def _why(kind: str, d: dict[str, Any]) -> str:
    if kind == "PodEvicted":
        return str(d.get("threshold", ""))
    if kind == "OOMKilled":
        return (
            f"container {d.get('container')}, {d.get('scope') or 'memory'} limit, oom_score_adj {d.get('oomScoreAdj')}"
        )
    if kind == "PodPreempted":
        return f"for {d.get('preemptor')}, grace {d.get('gracePeriodSeconds')} s"
    if kind == "NodeReclaimed":
        return f"{d.get('action')} freed {show(d.get('bytesFreed', 0), 'bytes')}"
    if kind == "ImageGarbageCollected":
        return f"freed {show(d.get('bytesFreed', 0), 'bytes')}"
    if kind in ("PodRejected",):
        return f"{d.get('reason')}: {d.get('message')}"
    return str(d.get("reason", ""))


def _count(n: int, noun: str) -> str:
    """``1 eviction``, ``2 evictions``: the summary line reads as a sentence."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


@dataclass(frozen=True, slots=True)
class ReportSummary:
    """What ``ledgerlet report`` says it wrote (``-o json|yaml`` gives it as data)."""

    out: str
    run: str
    decisions: int
    evictions: int
    plots: int
    nodes: int

    def text(self) -> str:
        return (
            f"{self.out}: run {self.run}, {_count(self.decisions, 'decision')}, "
            f"{_count(self.evictions, 'eviction')}, {_count(self.plots, 'plot')} over "
            f"{_count(self.nodes, 'node')}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "run": self.run,
            "decisions": self.decisions,
            "evictions": self.evictions,
            "plots": self.plots,
            "nodes": self.nodes,
        }


async def write_report(
    store: SqlEventStore,
    run: str | None,
    out: Path,
    *,
    write: Callable[[bytes], None],
    compare: str | None = None,
    progress: Progress | None = None,
) -> ReportSummary:
    """Render a run's report and hand it to ``write`` (the command line's safe writer, for
    the path ``out``, or standard output for ``-``); what was written."""
    report = await collect(store, run, progress)
    if compare is not None:
        other = await collect(store, compare)
        report.compared = Compared(run=other.run, source=other.source, verdicts=other.verdicts)
    if progress is not None:
        progress("drawing the charts", len(report.nodes), len(report.nodes) + 1)
    write(render_report(report).encode())
    plots = sum(len(s.series) for s in report.nodes)
    return ReportSummary(
        str(out), report.run, sum(report.counts.values()), len(report.evictions), plots, len(report.nodes)
    )


async def _pools(store: SqlEventStore, run: str, nodes: list[str]) -> tuple[dict[str, str], str]:
    """Each node's pool (report_summary.POOL_LABELS), and the label most nodes were told by."""
    pools: dict[str, str] = {}
    labels: dict[str, int] = {}
    for e in await store.read_nodes(run, nodes, types=["ObjectApplied"]):
        obj = decode_data(e.envelope).object
        if obj.get("kind") != "Node":
            continue
        label, pool = node_pool((obj.get("metadata") or {}).get("labels"))
        pools[e.envelope.node or ""] = pool  # (the newest applied wins)
        if label:
            labels[label] = labels.get(label, 0) + 1
    return pools, max(labels, key=lambda k: labels[k]) if labels else ""


def _node_order(touched: set[str], evictions: list[EvictionRow], order: dict[str, int]) -> list[str]:
    """Nodes with the most evictions first, then the earliest, then the scenario's order."""
    count: dict[str, int] = {}
    first: dict[str, float] = {}
    for ev in evictions:
        count[ev.node] = count.get(ev.node, 0) + 1
        first.setdefault(ev.node, ev.t)
    return sorted(touched, key=lambda n: (-count.get(n, 0), first.get(n, float("inf")), order.get(n, len(order)), n))


def _plotted(nodes: list[str], evictions: list[EvictionRow]) -> list[str]:
    """MAX_PLOTTED_NODES nodes: the first of each (signal, pool) group, then in ``nodes`` order."""
    firsts: list[str] = []
    seen: set[tuple[str, str]] = set()
    for ev in sorted(evictions, key=lambda e: e.t):
        if (ev.signal, ev.pool) not in seen:
            seen.add((ev.signal, ev.pool))
            firsts.append(ev.node)
    chosen = list(dict.fromkeys([*firsts, *nodes]))[:MAX_PLOTTED_NODES]
    return [n for n in nodes if n in set(chosen)]

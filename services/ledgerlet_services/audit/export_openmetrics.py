"""``ledgerlet export --openmetrics``: a run's signals, thresholds and decisions as
OpenMetrics text, for ``promtool tsdb create-blocks-from openmetrics`` (Prometheus'
backfill) and then Grafana, where SREs already look (deploy/grafana/).

Every sample carries the clock time it stands for (the run's start plus its virtual
time), so a backfilled run sits at the hours of its incident. Families (all labelled
``run``):

* ``ledgerlet_signal_available_bytes`` / ``ledgerlet_signal_available`` (inodes, pids)
  and ``..._capacity...``: each eviction signal at each observation, as the kubelet's
  ``makeSignalObservations`` computed it (postmortem/signals_series.py), labels
  ``node``, ``signal``;
* ``ledgerlet_eviction_threshold_bytes`` / ``ledgerlet_eviction_threshold``: the level
  each threshold stood at then (a percentage follows capacity), labels ``node``,
  ``signal``, ``threshold`` (as written), ``hard``;
* ``ledgerlet_node_condition``: 1 while a node's condition is True, 0 otherwise, at each
  observation, labels ``node``, ``condition``;
* ``ledgerlet_decisions_total``: decisions so far, a counter per ``type``;
* ``ledgerlet_pod_evictions_total``: evictions so far per ``node``, ``namespace``,
  ``signal``; both sampled every 15 s over the run, as a scrape would have seen them.

Within a family every series' samples are in time order, and families are written one
after another (the format wants them unbroken); ``# EOF`` ends the text.
"""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Final

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import DECISION, node_stream
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.postmortem.signals_series import SignalSeries, node_signal_series
from ledgerlet_services.audit.queries import Audit
from ledgerlet_store.sql_store import SqlEventStore

CONDITIONS: Final = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
#: the most samples a counter series gets (grid_step)
GRID_POINTS: Final = 20_000
#: (name, type, unit, help) in the order they are written
FAMILIES: Final = (
    (
        "ledgerlet_signal_available_bytes",
        "gauge",
        "bytes",
        "eviction signal: what was available, as the kubelet saw it",
    ),
    ("ledgerlet_signal_available", "gauge", "", "eviction signal (inodes, pids): what was available"),
    ("ledgerlet_signal_capacity_bytes", "gauge", "bytes", "eviction signal: the capacity it is a share of"),
    ("ledgerlet_signal_capacity", "gauge", "", "eviction signal (inodes, pids): the capacity"),
    ("ledgerlet_eviction_threshold_bytes", "gauge", "bytes", "the level an eviction threshold stood at"),
    ("ledgerlet_eviction_threshold", "gauge", "", "the level an eviction threshold (inodes, pids) stood at"),
    ("ledgerlet_node_condition", "gauge", "", "1 while the node condition is True"),
    ("ledgerlet_decisions", "counter", "", "decisions made so far"),
    ("ledgerlet_pod_evictions", "counter", "", "pods evicted so far"),
)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass
class Exported:
    samples: int = 0
    series: int = 0
    nodes: int = 0


class _Writer:
    """Samples spooled per family (to disk past a few MB) and written family by family."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self.spools: dict[str, IO[str]] = {
            name: stack.enter_context(tempfile.SpooledTemporaryFile(max_size=8 << 20, mode="w+", encoding="utf-8"))  # noqa: SIM115 (closed by the stack)
            for name, *_ in FAMILIES
        }
        self.count = Exported()

    def series(self, family: str, labels: dict[str, str], points: Iterable[tuple[float, float]]) -> None:
        """One series' samples (clock seconds, value), in time order."""
        name = family + ("_total" if family in ("ledgerlet_decisions", "ledgerlet_pod_evictions") else "")
        head = name + _labels(labels)
        out = self.spools[family]
        wrote = 0
        last = None
        for ts, value in points:
            if last is not None and ts <= last:
                continue  # (one sample per instant and series, in time order)
            out.write(f"{head} {_number(value)} {_number(round(ts, 3))}\n")
            last = ts
            wrote += 1
        if wrote:
            self.count.series += 1
            self.count.samples += wrote

    def write(self, sink: IO[str]) -> None:
        for name, kind, unit, text in FAMILIES:
            sink.write(f"# TYPE {name} {kind}\n")
            if unit:
                sink.write(f"# UNIT {name} {unit}\n")
            sink.write(f"# HELP {name} {text}\n")
            spool = self.spools[name]
            spool.seek(0)
            while chunk := spool.read(1 << 20):
                sink.write(chunk)
        sink.write("# EOF\n")


async def export_openmetrics(
    store: SqlEventStore, run: str | None, sink: IO[str], *, nodes: Sequence[str] = ()
) -> tuple[str, Exported]:
    """Write the run (``nodes``: only these nodes' signals; all by default) to ``sink``."""
    audit = Audit(store)
    run = await audit.resolve(run)
    started, start = await audit.started(run)
    base = start.timestamp()
    with contextlib.ExitStack() as stack:
        w = _Writer(stack)
        await _collect(store, audit, run, started.node_order, nodes, w, lambda t: base + t / SECOND, started.duration)
        w.write(sink)
    return run, w.count


async def _collect(
    store: SqlEventStore,
    audit: Audit,
    run: str,
    node_order: Sequence[str],
    nodes: Sequence[str],
    w: _Writer,
    clock: Callable[[int], float],
    duration: int,
) -> None:
    decisions = [e.envelope for e in await store.read_run(run, kind=DECISION)]
    conditions: dict[str, list[tuple[int, str, bool]]] = defaultdict(list)
    for e in decisions:
        if e.type == "NodeConditionChanged" and e.node:
            d = json.loads(bytes(e.data))
            conditions[e.node].append((e.t, str(d.get("condition")), d.get("status") == "True"))

    wanted = list(dict.fromkeys(nodes)) if nodes else list(dict.fromkeys(node_order))
    for node in wanted:
        observations = [
            e.envelope for e in await store.read_stream_window(run, node_stream(node), types=["NodeObserved"])
        ]
        if not observations:
            continue
        w.count.nodes += 1
        thresholds = await audit.node_thresholds(run, node, observations)
        for series in node_signal_series(observations, thresholds).values():
            _signal(w, run, node, series, clock)
        times = sorted({e.t for e in observations})
        changes = conditions.get(node, [])
        for condition in CONDITIONS:
            state = condition == "Ready"  # (as a healthy kubelet posts it until a decision says otherwise)
            mine = [(t, on) for t, c, on in changes if c == condition]
            points = []
            i = 0
            for t in times:
                while i < len(mine) and mine[i][0] <= t:
                    state = mine[i][1]
                    i += 1
                points.append((clock(t), 1.0 if state else 0.0))
            w.series("ledgerlet_node_condition", {"run": run, "node": node, "condition": condition}, points)

    _counters(w, run, decisions, clock, duration)


def _signal(w: _Writer, run: str, node: str, series: SignalSeries, clock: Callable[[int], float]) -> None:
    suffix = "_bytes" if series.unit == "bytes" else ""
    labels = {"run": run, "node": node, "signal": series.signal}
    w.series(f"ledgerlet_signal_available{suffix}", labels, [(clock(t), a) for t, a, _ in series.points])
    w.series(f"ledgerlet_signal_capacity{suffix}", labels, [(clock(t), c) for t, _, c in series.points])
    for line in series.thresholds:
        if not line.points:
            continue
        points = []
        for t, _, _ in series.points:
            level = next((q for lt, q in reversed(line.points) if lt <= t), line.points[0][1])
            points.append((clock(t), float(level)))
        w.series(
            f"ledgerlet_eviction_threshold{suffix}",
            {**labels, "threshold": line.written, "hard": "true" if line.hard else "false"},
            points,
        )


def grid_step(duration_seconds: float) -> int:
    """Seconds between a counter's samples: Prometheus' usual 15 s scrape, wider for runs
    so long that 15 s would write more than GRID_POINTS samples a series."""
    return max(15, math.ceil(duration_seconds / GRID_POINTS))


def _counters(
    w: _Writer, run: str, decisions: Sequence[Envelope], clock: Callable[[int], float], duration: int
) -> None:
    """Counters sampled on a regular grid from the run's start to its end (as a scrape
    would see them), so that ``increase()`` and ``rate()`` work over any window; a
    decision counts from the first grid point at or after it."""
    by_type: dict[str, list[int]] = defaultdict(list)
    evicted: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for e in decisions:
        by_type[e.type].append(e.t)
        if e.type == "PodEvicted":
            signal = str(json.loads(bytes(e.data)).get("signal") or "")
            pod = e.pod or ""
            evicted[(e.node or "", pod.split("/", 1)[0] if "/" in pod else "", signal)].append(e.t)
    step = grid_step(duration / SECOND) * SECOND
    grid = list(range(0, duration + step, step))
    for kind, times in sorted(by_type.items()):
        w.series("ledgerlet_decisions", {"run": run, "type": kind}, _on_grid(times, grid, clock))
    for (node, namespace, signal), times in sorted(evicted.items()):
        labels = {"run": run, "node": node, "namespace": namespace, "signal": signal}
        w.series("ledgerlet_pod_evictions", labels, _on_grid(times, grid, clock))


def _on_grid(times: list[int], grid: list[int], clock: Callable[[int], float]) -> list[tuple[float, float]]:
    times = sorted(times)
    out = []
    i = 0
    for g in grid:
        while i < len(times) and times[i] <= g:
            i += 1
        out.append((clock(g), float(i)))
    return out

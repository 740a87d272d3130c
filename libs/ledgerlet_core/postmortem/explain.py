"""Why a pod ended: the chain of recorded facts behind the decision that ended it.

For an eviction: the signal against its threshold over time, the node's condition
changes, node-level reclaim and what it freed, the ranking at the decision and the
pod's place in it, and the grace period with its reason. For other endings (OOM
kill, preemption, shutdown, admission, deletion) the decision's own inputs.
Everything comes from stored events; nothing is re-computed but the signal values,
which :mod:`signals_series` derives from the stored observations as the kubelet does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Final

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts import internal
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import DECISION, decode_data
from ledgerlet_core.kubelet.eviction.manager import IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS
from ledgerlet_core.kubelet.eviction.thresholds import Threshold
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.timefmt import format_rfc3339
from ledgerlet_core.postmortem.signals_series import SignalSeries, node_signal_series

#: decisions that end a pod (or kill in it), most final first when several coincide
ENDINGS = ("PodEvicted", "PodPreempted", "PodForceDeleted", "PodRejected", "OOMKilled", "PodTerminated")
#: node decisions that belong in a pod's story
NODE_CONTEXT = ("NodeConditionChanged", "NodeReclaimed", "ImageGarbageCollected", "NodeTaintAdded", "NodeTaintRemoved")
#: node decisions an ending may cite (a shutdown's kill plan)
NODE_CAUSES = ("NodeShutdownStarted",)
#: how far back an eviction's story starts
LOOKBACK = 15 * 60 * SECOND


def human_bytes(n: float) -> str:
    """Binary-suffixed, three significant digits: ``5.67Gi``."""
    value = float(n)
    for suffix in ("", "Ki", "Mi", "Gi", "Ti", "Pi"):
        if abs(value) < 1024 or suffix == "Pi":
            if not suffix:
                return f"{int(value)}"
            # three significant digits, but never an exponent: 1000 to 1023 of a unit print
            # whole (%.3g made 1023Mi "1e+03Mi")
            return f"{value:.0f}{suffix}" if abs(value) >= 1000 else f"{value:.3g}{suffix}"
        value /= 1024
    return str(n)


def show(value: float, unit: str) -> str:
    return human_bytes(value) if unit == "bytes" else f"{int(value)}"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass
class Step:
    t: float
    time: str
    what: str
    text: str
    id: str | None = None


@dataclass
class Explanation:
    run: str
    pod: str
    node: str | None
    verdict: str
    outcome: dict[str, Any] | None
    steps: list[Step] = field(default_factory=list)
    ranking: list[dict[str, Any]] = field(default_factory=list)
    grace: str = ""
    signal: dict[str, Any] | None = None
    #: the recording's own events about the pod (``spec.observedEvents``), oldest first
    observed: list[dict[str, Any]] = field(default_factory=list)
    #: what the scenario holds that upstream decides by, ledgerlet does not model, and that
    #: touches this pod (``ScenarioStarted.unmodelled``)
    unmodelled: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def render_text(self) -> str:
        lines = [f"{self.pod} (run {self.run})", "", self.verdict, ""]
        if self.steps:
            lines.append("What happened:")
            width = max(len(f"{s.t:g}") for s in self.steps)
            for s in self.steps:
                lines.append(f"  {s.t:>{width}g}s  {s.time}  {s.what:<22} {s.text}")
            lines.append("")
        if self.ranking:
            lines.append("Ranking at the decision (first = evicted first):")
            for r in self.ranking:
                mark = "->" if r.get("this") else "  "
                usage = r.get("usageText", "-")
                flags = ", ".join(
                    x
                    for x, on in (
                        ("exceeds request", r.get("exceedsRequest")),
                        ("critical", r.get("critical")),
                        ("static", r.get("static")),
                        ("no stats", not r.get("statsFound", True)),
                    )
                    if on
                )
                lines.append(
                    f"  {mark} {r['position']:>3}. {r['pod']:<50} priority {r.get('priority', 0):>10}  usage {usage:>8}"
                    + (f"  ({flags})" if flags else "")
                )
            lines.append("")
        if self.grace:
            lines.append(f"Grace period: {self.grace}")
            lines.append("")
        if self.unmodelled:
            lines.append("Not modelled (upstream decides by these; this run did not, so its decisions may differ):")
            for u in self.unmodelled:
                lines.append(f"  {u['object']}: {u['field']} ({u['plugin']}): {u['message']}")
        lines += self._beside_the_recording()
        return "\n".join(lines).rstrip() + "\n"

    def _beside_the_recording(self) -> list[str]:
        """The cluster's own events about the pod, ledgerlet's decision under them: the
        real ``Evicted`` message beside the re-derived one."""
        if not self.observed:
            return []
        lines = ["Beside the recording (the cluster's own events about this pod):"]
        for e in self.observed:
            source = e.get("source") or {}
            by = " on ".join(x for x in (source.get("component"), source.get("host")) if x)
            times = f" x{e['count']}" if e.get("count", 1) > 1 else ""
            lines.append(
                f"  recorded   {e.get('time') or '(no time)'}  {e.get('type', '')} {e['reason']}{times}"
                + (f" ({by})" if by else "")
                + f": {e.get('message', '')}".rstrip(": ")
            )
        if self.outcome is not None:
            message = str(self.outcome["data"].get("message") or self.verdict)
            lines.append(f"  ledgerlet  {self.outcome['time']}  {self.outcome['type']}: {message.strip()}")
            real = [e for e in self.observed if e["reason"] == "Evicted"]
            if self.outcome["type"] == "PodEvicted" and real:
                same = any(
                    e.get("message", "").strip() == str(self.outcome["data"].get("message", "")).strip() for e in real
                )
                lines.append(
                    "  the same message as recorded"
                    if same
                    else "  the messages differ: the recording's is what the kubelet said then"
                )
        else:
            lines.append("  ledgerlet  did not end the pod in this run")
        return lines


def _data(env: Envelope) -> dict[str, Any]:
    value = json.loads(bytes(env.data))
    return value if isinstance(value, dict) else {}


def ending(pod_events: Sequence[Envelope]) -> Envelope | None:
    """The decision that ended the pod: the last ending decision, the most final one at that instant."""
    ends = [e for e in pod_events if e.kind == DECISION and e.type in ENDINGS]
    if not ends:
        return None
    # a PodTerminated follows the decision that told the pod to stop: explain that decision
    deciding = [e for e in ends if e.type != "PodTerminated"]
    return max(deciding or ends, key=lambda e: (e.t, -ENDINGS.index(e.type)))


def explain(
    *,
    run: str,
    pod: str,
    start: datetime,
    pod_events: Sequence[Envelope],
    node_events: Sequence[Envelope],
    observations: Sequence[Envelope],
    thresholds: Sequence[Threshold],
    observed: Sequence[dict[str, Any]] = (),
) -> Explanation:
    """``observed``: the recording's own events about the pod, set beside the decision."""

    def when(t: int) -> str:
        return format_rfc3339(start, t)

    end = ending(pod_events)
    node = next((e.node for e in reversed(pod_events) if e.node), None)
    exp = Explanation(run=run, pod=pod, node=node, verdict="", outcome=None, observed=list(observed))
    steps: list[Step] = []
    for e in pod_events:
        text = _pod_step(e)
        if text is not None:
            steps.append(Step(e.t / SECOND, when(e.t), e.type, text, e.id))
    if end is None:
        exp.verdict = (
            f"{pod} was not evicted, preempted, killed or rejected in this run."
            if pod_events
            else f"The run holds nothing about {pod}."
        )
        exp.steps = steps
        return exp
    data = _data(end)
    exp.node = end.node or node
    exp.outcome = {"type": end.type, "t": end.t / SECOND, "time": when(end.t), "id": end.id, "data": data}
    for e in node_events:
        if e.type in NODE_CONTEXT and e.t <= end.t:
            steps.append(Step(e.t / SECOND, when(e.t), e.type, _node_step(e), e.id))
    if end.type == "PodEvicted":
        series = node_signal_series(observations, thresholds).get(str(data.get("signal", "")))
        if series is not None:
            exp.signal = _series_dict(series)
            crossing = _first_crossing(series, str(data.get("threshold", "")))
            if crossing is not None:
                t, available, level = crossing
                steps.append(
                    Step(
                        t / SECOND,
                        when(t),
                        "ThresholdCrossed",
                        f"{series.signal} {show(available, series.unit)} < {show(level, series.unit)} "
                        f"({data.get('threshold')})",
                    )
                )
        exp.ranking = ranking_rows(data, pod)
    cited = {e.id: _data(e) for e in node_events if e.type in NODE_CAUSES and e.id in end.causes}
    exp.verdict, exp.grace = verdict(pod, end, data, when, cited)
    steps.sort(key=lambda s: (s.t, s.what != "ThresholdCrossed"))
    exp.steps = steps
    return exp


def verdict(
    pod: str, end: Envelope, data: dict[str, Any], when: Any, cited: dict[str, dict[str, Any]] | None = None
) -> tuple[str, str]:
    """The answer for a pod's ending (which pod, where, when, why) and its grace period:
    what ``explain`` opens with and the report's first section lists. ``cited`` holds the
    node decisions the ending follows from (a shutdown's plan)."""
    if end.type == "PodEvicted":
        return _eviction_verdict(pod, end, ranking_rows(data, pod), when)
    return _other_verdict(pod, end, data, when, cited)


def _series_dict(series: SignalSeries) -> dict[str, Any]:
    return {
        "signal": series.signal,
        "unit": series.unit,
        "points": [{"t": t / SECOND, "available": a, "capacity": c} for t, a, c in series.points],
        "thresholds": [
            {
                "threshold": line.written,
                "hard": line.hard,
                "gracePeriodSeconds": line.grace_period_seconds,
                "levels": [{"t": t / SECOND, "quantity": q} for t, q in line.points],
            }
            for line in series.thresholds
        ],
    }


def _first_crossing(series: SignalSeries, written: str) -> tuple[int, int, int] | None:
    """The first observation of the last run of observations below the threshold."""
    line = next((x for x in series.thresholds if x.written == written), None)
    if line is None or not line.points:
        return None
    below: tuple[int, int, int] | None = None
    for t, available, _ in series.points:
        level = next((q for lt, q in reversed(line.points) if lt <= t), line.points[0][1])
        below = (below or (t, available, level)) if available < level else None
    return below


def ranking_rows(data: dict[str, Any], pod: str) -> list[dict[str, Any]]:
    resource = data.get("resource", "")
    unit = "bytes" if resource in ("memory", "ephemeral-storage") else "count"
    out = []
    for i, row in enumerate(data.get("rankingDetails") or [], start=1):
        r = dict(row)
        r["position"] = i
        r["this"] = r.get("pod") == pod
        if "usage" in r:
            r["usageText"] = show(r["usage"], unit)
        out.append(r)
    if not out:
        out = [{"pod": p, "position": i, "this": p == pod} for i, p in enumerate(data.get("ranking") or [], start=1)]
    return out


def _eviction_verdict(pod: str, end: Envelope, ranking: list[dict[str, Any]], when: Any) -> tuple[str, str]:
    """Which threshold, how far the signal fell, where the pod ranked and why: read from the
    eviction's contract model (the ranking rows are the stored ones, as the API shows them)."""
    e = decode_data(end)
    if not isinstance(e, dec.PodEvicted):
        raise TypeError(f"{end.type} is not an eviction")
    unit = "bytes" if e.resource in ("memory", "ephemeral-storage") else "count"
    quantity = e.threshold_quantity or None  # (0 is never stored: no level to show)
    met = next((m for m in e.thresholds_met if m.threshold == e.threshold), None)
    hard = met.hard if met is not None else e.grace_period_seconds == IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS
    place = next((r for r in ranking if r.get("this")), None)
    why_first = ""
    if place is not None:
        reasons = []
        if "exceedsRequest" in place:
            reasons.append("its usage exceeds its request" if place["exceedsRequest"] else "within its request")
        reasons.append(f"priority {place.get('priority', 0)}")
        if "usageText" in place:
            reasons.append(f"usage {place['usageText']}")
        why_first = f" It ranked {ordinal(place['position'])} of {len(ranking)} ({', '.join(reasons)})."
        above = [r["pod"] for r in ranking[: place["position"] - 1]]
        skipped = set(e.skipped_critical)
        if above:
            critical = [p for p in above if p in skipped or any(r.get("critical") for r in ranking if r["pod"] == p)]
            why_first += (
                f" Ranked above it: {', '.join(above)}"
                + (
                    f" ({', '.join(critical)} critical: the kubelet does not evict critical pods, "
                    "pkg/kubelet/eviction/eviction_manager.go evictPod)"
                    if critical
                    else ""
                )
                + "."
            )
    level = f" ({show(quantity, unit)})" if quantity is not None else ""
    seen = f" fell to {show(e.observed, unit)},"
    verdict = (
        f"{pod} was evicted from {end.node} at {end.t / SECOND:g}s ({when(end.t)}): {e.signal}{seen} below the "
        f"{'hard' if hard else 'soft'} threshold {e.threshold}{level}.{why_first}"
    )
    grace_s = e.grace_period_seconds
    if hard:
        grace = (
            f"{grace_s} s: a hard threshold evicts at once, with the kubelet's immediate grace period "
            f"(immediateEvictionGracePeriodSeconds = {IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS}, "
            "pkg/kubelet/eviction/eviction_manager.go), whatever the pod's terminationGracePeriodSeconds."
        )
    else:
        grace = (
            f"{grace_s} s: a soft threshold, held for its grace period "
            f"({met.grace_period_seconds if met is not None else '?'} s), then evicted with the smaller of "
            "evictionMaxPodGracePeriod and the pod's terminationGracePeriodSeconds."
        )
    return verdict, grace


def _shutdown_kill(pod: str, plans: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The group and the kill of ``pod`` in the shutdown plan its termination cites."""
    for plan in plans.values():
        for group in plan.get("groups") or []:
            for kill in group.get("kills") or []:
                if kill.get("pod") == pod:
                    return group, kill
    return None


def _other_verdict(
    pod: str, end: Envelope, data: dict[str, Any], when: Any, cited: dict[str, dict[str, Any]] | None = None
) -> tuple[str, str]:
    """The verdict of every ending but an eviction, read from the ending's contract model."""
    at = f"at {end.t / SECOND:g}s ({when(end.t)})"
    match decode_data(end):
        case dec.OOMKilled() as o:
            sized = f" using {human_bytes(o.usage)} of {human_bytes(o.limit)}" if o.usage and o.limit else ""
            verdict = (
                f"Container {o.container} of {pod} was OOM-killed on {end.node} {at}{sized} "
                f"({o.scope or 'memory'} limit; oom_score {o.oom_score or '?'}, "  # (0 is never stored)
                f"oom_score_adj {o.oom_score_adj})."
            )
            if o.restart_at is not None:
                verdict += f" It restarts at {o.restart_at:g}s."
            return verdict, "none: the kernel kills with SIGKILL"
        case dec.PodPreempted() as p:
            return (
                f"{pod} was preempted on {end.node} {at} to make room for {p.preemptor}.",
                f"{p.grace_period_seconds} s",
            )
        case dec.PodRejected() as r:
            return f"{pod} was rejected {at}: {r.reason}: {r.message}", ""
        case dec.PodForceDeleted() as f:
            return f"{pod} was force-deleted {at}: {f.reason}.", "0 s (forced)"
        case dec.PodTerminated() as t:
            return _terminated_verdict(pod, end, t, at, cited)
    grace = f"{data['gracePeriodSeconds']} s" if "gracePeriodSeconds" in data else ""
    return f"{pod} was terminated on {end.node} {at} ({data.get('reason', '?')}).", grace


def _terminated_verdict(
    pod: str, end: Envelope, t: dec.PodTerminated, at: str, cited: dict[str, dict[str, Any]] | None
) -> tuple[str, str]:
    grace = f"{t.grace_period_seconds} s"
    verdict = f"{pod} was terminated on {end.node} {at} ({t.reason})."
    found = _shutdown_kill(pod, cited or {}) if t.reason == "NodeShutdown" else None
    if found is not None:
        group, kill = found
        verdict += f" The graceful shutdown killed it in the group of priority {group.get('priority')}"
        verdict += f" ({group.get('gracePeriodSeconds')} s) at {kill.get('at'):g}s."
        if kill.get("priorityFrom"):
            verdict += f" It is a {kill['priorityFrom']}."
        if kill.get("graceFrom"):
            grace += f": {kill['graceFrom']}"
    return verdict, grace


def _pod_step(e: Envelope) -> str | None:
    """One line of the pod's story, read from the event's contract model (``registry``):
    a field renamed in ``contracts/`` is a type error here, not a ``None`` in the text."""
    if e.type == "PodScheduled":
        return f"scheduled to {e.node}"
    if e.type in ("PodRejected", "PodForceDeleted", "PodPreempted", "PodNominated", "PodUnschedulable"):
        d = _data(e)  # (every field as stored, by its wire name)
        return ", ".join(f"{k} {v}" for k, v in d.items() if isinstance(v, str | int | float))[:200]
    if e.type not in _TYPED_POD_STEPS:
        return None
    match decode_data(e):
        case inp.ObjectApplied() as a:
            spec = (a.object or {}).get("spec") or {}
            where = f"on {spec['nodeName']}" if spec.get("nodeName") else "pending"
            return f"{'in the starting objects' if a.initial else 'applied'}, {where}"
        case internal.ObjectCreated() as c:
            return f"created by {c.owner or 'a controller'}"
        case dec.PodAdmitted() as a:
            return f"admitted: priority {a.priority}, QoS {a.qos_class}"
        case internal.PodStarted() as s:
            return f"started on {s.node}"
        case dec.PodEvicted() as v:
            return f"evicted for {v.signal} ({v.threshold}), grace {v.grace_period_seconds} s"
        case dec.PodTerminated() as t:
            grace = t.grace_period_seconds
            return f"exited ({t.reason}), told to stop at {t.killed_at}s with grace {grace} s"
        case dec.PodReplaced() as r:
            return f"replaced by {r.replacement} ({r.owner})"
        case dec.OOMKilled() as o:
            return f"container {o.container} OOM-killed (oom_score_adj {o.oom_score_adj})"
        case inp.ObjectDeleted() as deleted:
            return "deleted" + (" (force)" if deleted.force else "")
    return None


#: the pod events whose line is read from their model
_TYPED_POD_STEPS: Final = frozenset(
    {
        "ObjectApplied",
        "ObjectCreated",
        "PodAdmitted",
        "PodStarted",
        "PodEvicted",
        "PodTerminated",
        "PodReplaced",
        "OOMKilled",
        "ObjectDeleted",
    }
)


def _node_step(e: Envelope) -> str:
    """One line of the node's story (``NODE_CONTEXT``), read from the event's contract model."""
    match decode_data(e):
        case dec.NodeConditionChanged() as c:
            because = f" ({', '.join(c.thresholds)})" if c.thresholds else ""
            return f"{c.condition}={c.status}: {c.reason}{because}"
        case dec.NodeReclaimed() as r:
            return f"{r.action} for {r.signal}: freed {human_bytes(r.bytes_freed)}"
        case dec.ImageGarbageCollected() as g:
            return (
                f"image GC at {g.usage_percent}% used (high {g.high_threshold_percent}%, low "
                f"{g.low_threshold_percent}%): {human_bytes(g.bytes_to_free)} to free, "
                f"{human_bytes(g.bytes_freed)} freed"
            )
        case dec.NodeTaintAdded() | dec.NodeTaintRemoved() as taint:
            return f"{taint.key}:{taint.effect}"
    d = _data(e)
    return f"{d.get('key')}:{d.get('effect')}"

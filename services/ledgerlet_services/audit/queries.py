"""Read-only queries the audit API, ``ledgerlet explain`` and the report share.

Every query is bounded (a page, a pod, a node's window) and served by one of the
store's indexes; explanations read the pod's events, the node's decisions and
observations in the window before the decision, nothing else.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import DECISION, EVENT_TYPES, decode_data, node_stream
from ledgerlet_core.kubelet.eviction.observations import make_signal_observations
from ledgerlet_core.kubelet.eviction.thresholds import Threshold
from ledgerlet_core.model.codec import to_builtins
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.settings import suggestion
from ledgerlet_core.model.summary import Summary
from ledgerlet_core.model.timefmt import format_rfc3339, parse_rfc3339
from ledgerlet_core.postmortem.explain import LOOKBACK, NODE_CAUSES, NODE_CONTEXT, Explanation, ending, explain
from ledgerlet_core.postmortem.signals_series import has_image_fs, thresholds_for_node
from ledgerlet_core.scenario.observed_events import about_pod
from ledgerlet_core.scenario.unmodelled import pod_object, touching
from ledgerlet_store.batches import order_key
from ledgerlet_store.contract import StoredEvent
from ledgerlet_store.runs import UnknownRun, pick_run, run_states
from ledgerlet_store.sql_store import SqlEventStore

MAX_PAGE = 1000
DEFAULT_PAGE = 100


class NotFound(LookupError):
    pass


class BadCursor(ValueError):
    pass


class BadFilter(ValueError):
    """A filter value no decision can have (a misspelt type would otherwise answer an
    empty page, as if nothing had happened)."""


#: what ``type=`` may name
DECISION_TYPES = frozenset(name for name, et in EVENT_TYPES.items() if et.kind == DECISION)


def check_types(types: Sequence[str]) -> None:
    for name in types:
        if name not in DECISION_TYPES:
            hint = suggestion(name, DECISION_TYPES)
            raise BadFilter(f"type: {name!r} is no decision type{hint or '; see ' + ', '.join(sorted(DECISION_TYPES))}")


@dataclass(frozen=True)
class RunInfo:
    run: str
    name: str
    start: datetime
    duration_seconds: float
    recorded_at: datetime
    source: str
    #: completed, failed, running or abandoned (``ledgerlet_store.runs.RunState``)
    status: str = "completed"
    status_reason: str = ""


def encode_cursor(e: StoredEvent) -> str:
    raw = json.dumps([e.envelope.t, order_key(e.envelope.order), e.position]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _int64(value: object) -> bool:
    """An integer a database column holds (not a bool, which JSON's true also gives)."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def decode_cursor(text: str) -> tuple[int, str, int]:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        t, key, position = json.loads(raw)
        if not (_int64(t) and isinstance(key, str) and _int64(position) and position >= 0):
            raise ValueError
        if "\x00" in key or len(key) > 1000:
            raise ValueError
        return t, key, position
    except (ValueError, TypeError, json.JSONDecodeError):
        raise BadCursor(f"cursor {text!r} is not one this API gave out") from None


def record(e: StoredEvent | Envelope, start: datetime) -> dict[str, Any]:
    """An event as the decision log writes a record (spec §5), with its kind."""
    env = e.envelope if isinstance(e, StoredEvent) else e
    out: dict[str, Any] = {
        "id": env.id,
        "t": env.t / SECOND,
        "time": format_rfc3339(start, env.t),
        "type": env.type,
        "kind": env.kind,
    }
    if env.node is not None:
        out["node"] = env.node
    if env.pod is not None:
        out["pod"] = env.pod
    out["data"] = json.loads(bytes(env.data))
    out["causes"] = list(env.causes)
    return out


class Audit:
    def __init__(self, store: SqlEventStore) -> None:
        self.store = store
        self._started: dict[str, tuple[ev.ScenarioStarted, datetime]] = {}
        self._completed: set[str] = set()

    # -- runs ----------------------------------------------------------------------
    async def runs(self) -> list[RunInfo]:
        out = []
        for state in await run_states(self.store):
            started, start = await self.started(state.run)
            out.append(
                RunInfo(
                    state.run,
                    started.name,
                    start,
                    started.duration / SECOND,
                    state.started_at,
                    started.source,
                    state.status,
                    state.reason,
                )
            )
        return out

    async def status(self, run: str) -> str | None:
        """The run's lifecycle state (None: no such run); a completed run stays completed."""
        if run in self._completed:
            return "completed"
        state = next((s for s in await run_states(self.store) if s.run == run), None)
        if state is not None and state.completed:
            self._completed.add(run)
        return state.status if state is not None else None

    async def resolve(self, run: str | None) -> str:
        """``run`` (a full id, or a prefix naming one run); ``latest`` is the newest
        *completed* run."""
        try:
            return pick_run(await run_states(self.store), run).run
        except UnknownRun as exc:
            raise NotFound(str(exc)) from None

    async def started(self, run: str) -> tuple[ev.ScenarioStarted, datetime]:
        hit = self._started.get(run)
        if hit is None:
            found = await self.store.read_by_type(["ScenarioStarted"], run=run, limit=1)
            if not found:
                raise NotFound(f"no run {run!r}")
            data: ev.ScenarioStarted = decode_data(found[0].envelope)
            hit = self._started[run] = (data, parse_rfc3339(data.start))
        return hit

    # -- decisions -----------------------------------------------------------------
    async def decisions(
        self,
        run: str,
        *,
        types: Sequence[str] = (),
        node: str | None = None,
        pod: str | None = None,
        t_from: float | None = None,
        t_to: float | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_PAGE,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of decisions and the cursor of the next page (None at the end)."""
        check_types(types)
        _, start = await self.started(run)
        limit = max(1, min(limit, MAX_PAGE))
        rows = await self.store.list_decisions(
            run,
            types=types,
            node=node,
            pod=pod,
            t_from=None if t_from is None else round(t_from * SECOND),
            t_to=None if t_to is None else round(t_to * SECOND),
            after=decode_cursor(cursor) if cursor else None,
            limit=limit + 1,
        )
        page = rows[:limit]
        nxt = encode_cursor(page[-1]) if len(rows) > limit else None
        return [record(e, start) for e in page], nxt

    async def decision(self, run: str, event_id: str) -> dict[str, Any]:
        """One decision with the events it cites as causes (observations in full, with signals)."""
        _, start = await self.started(run)
        found = [e for e in await self.store.get_events([event_id]) if e.envelope.run == run]
        if not found or found[0].envelope.kind != "decision":
            raise NotFound(f"no decision {event_id!r} in run {run!r}")
        out = record(found[0], start)
        causes = await self.store.get_events(found[0].envelope.causes)
        out["inputs"] = [_with_signals(record(c, start)) for c in causes]
        return out

    async def pod_history(self, run: str, pod: str) -> list[dict[str, Any]]:
        _, start = await self.started(run)
        rows = await self.store.read_pod(run, pod)
        if not rows:
            raise NotFound(f"run {run!r} holds nothing about pod {pod!r}")
        return [record(e, start) for e in rows]

    async def node_timeline(
        self, run: str, node: str, *, t_from: float | None = None, t_to: float | None = None, limit: int = MAX_PAGE
    ) -> list[dict[str, Any]]:
        _, start = await self.started(run)
        rows = await self.store.read_node(
            run,
            node,
            t_from=None if t_from is None else round(t_from * SECOND),
            t_to=None if t_to is None else round(t_to * SECOND),
            limit=max(1, min(limit, MAX_PAGE)),
        )
        if not rows and t_from is None and t_to is None:
            raise NotFound(f"run {run!r} holds nothing about node {node!r}")
        return [record(e, start) for e in rows]

    # -- explanations --------------------------------------------------------------
    async def node_thresholds(self, run: str, node: str, observations: Sequence[Envelope]) -> list[Threshold]:
        started, _ = await self.started(run)
        applied = await self.store.read_node(run, node, types=["ObjectApplied", "UsageDeclared"])
        node_obj = next(
            (
                decode_data(e.envelope).object
                for e in reversed(applied)
                if e.envelope.type == "ObjectApplied" and decode_data(e.envelope).object.get("kind") == "Node"
            ),
            None,
        )
        usage = next((decode_data(e.envelope).usage for e in applied if e.envelope.type == "UsageDeclared"), None)
        return thresholds_for_node(started.kubelet_config, node_obj, has_image_fs=has_image_fs(observations, usage))

    async def explain(self, run: str, pod: str) -> Explanation:
        _, start = await self.started(run)
        pod_events = [e.envelope for e in await self.store.read_pod(run, pod)]
        if not pod_events:
            raise NotFound(f"no pod {pod!r} in run {run}")  # as its history answers
        end = ending(pod_events)
        node_events: list[Envelope] = []
        observations: list[Envelope] = []
        thresholds: list[Threshold] = []
        if end is not None and end.node:
            t_from = max(0, end.t - LOOKBACK)
            node_events = [
                e.envelope
                for e in await self.store.read_node(
                    run, end.node, t_from=t_from, t_to=end.t, types=(*NODE_CONTEXT, *NODE_CAUSES)
                )
            ]
            if end.type == "PodEvicted":
                observations = [
                    e.envelope
                    for e in await self.store.read_stream_window(
                        run, node_stream(end.node), types=["NodeObserved"], t_from=t_from, t_to=end.t
                    )
                ]
                thresholds = await self.node_thresholds(run, end.node, observations)
        started, _ = await self.started(run)
        exp = explain(
            run=run,
            pod=pod,
            start=start,
            pod_events=pod_events,
            node_events=node_events,
            observations=observations,
            thresholds=thresholds,
            observed=about_pod(started.observed_events, pod),
        )
        if started.unmodelled:
            found = touching(started.unmodelled, pod_object(pod_events), pod, exp.node)
            exp.unmodelled = [to_builtins(u) for u in found]
        return exp


def _with_signals(rec: dict[str, Any]) -> dict[str, Any]:
    """An observation with the eviction signals the kubelet computed from it."""
    if rec["type"] != "NodeObserved":
        return rec
    summary = msgspec.convert(rec["data"].get("summary", {}), Summary)
    rec["signals"] = {
        str(s): {"available": o.available.value(), "capacity": o.capacity.value()}
        for s, o in make_signal_observations(summary).items()
    }
    return rec

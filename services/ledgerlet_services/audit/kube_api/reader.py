"""Reading the store for the Kubernetes facade: one object, one page, one instant at a time.

Nothing here reads a whole run. A listing walks the run's objects in key order a chunk
at a time (pods through the pod index, nodes by the run's node order, events through
the decisions in decision order) and builds each from its own history up to the
instant; it stops at the page's limit or after a bounded number of chunks (a page may
then be short, with a ``continue`` token, as the API server's may). A watch merges the
decisions and inputs after its instant in decision order and rebuilds only the objects
each instant changed, before and after it.
"""

from __future__ import annotations

import base64
import heapq
import json
from collections import defaultdict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import node_stream
from ledgerlet_core.controllers.workloads import replica_set_for
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.objects import Workload
from ledgerlet_core.model.k8s.selection import Selector
from ledgerlet_core.scheduling.disruption import Controller, workload_controllers
from ledgerlet_services.audit.kube_api import events as ev
from ledgerlet_services.audit.kube_api.cluster_objects import (
    BUILT_IN_NAMESPACES,
    fold_simple,
    namespace_object,
    simple_object,
    system_classes,
    with_budget_status,
    with_quota_status,
)
from ledgerlet_services.audit.kube_api.meta import ApiError, Instant, bad_request, parse_at
from ledgerlet_services.audit.kube_api.metrics import get_metrics, scan_metrics
from ledgerlet_services.audit.kube_api.nodes import LEASE_NAMESPACE, NODE_TYPES, STATUS_TYPES, build_node, lease_object
from ledgerlet_services.audit.kube_api.pods import POD_TYPES, build_pod
from ledgerlet_services.audit.kube_api.resources import Resource
from ledgerlet_services.audit.kube_api.selectors import (
    FieldSelector,
    event_fields,
    namespace_fields,
    node_fields,
    pod_fields,
)
from ledgerlet_services.audit.kube_api.workloads import (
    WORKLOAD_KINDS,
    deployment_replica_set,
    replica_sets_of,
    with_workload_status,
)
from ledgerlet_services.audit.queries import Audit, NotFound
from ledgerlet_store.batches import order_key
from ledgerlet_store.contract import StoredEvent
from ledgerlet_store.kube_reads import KubeReads

METRICS_KINDS: Final = ("NodeMetrics", "PodMetrics")
#: the kinds read from their object streams that live in a namespace
NAMESPACED_SIMPLE: Final = ("PodDisruptionBudget", "ResourceQuota", *WORKLOAD_KINDS)

#: objects built per store read while listing, and the chunks a page may scan
CHUNK: Final = 200
MAX_CHUNKS: Final = 25
#: sorts after every order key (digits and dots) and position: "after this whole instant"
_LAST_KEY: Final = "~"
_LAST_POSITION: Final = 2**62

Cursor = tuple[int, str, int]


@dataclass(frozen=True, slots=True)
class Query:
    namespace: str | None
    labels: Selector
    fields: FieldSelector


@dataclass(frozen=True, slots=True)
class Change:
    """One watch event: ``ADDED``, ``MODIFIED`` or ``DELETED`` and the object, at ``t``."""

    type: str
    obj: dict[str, Any]
    t: int
    #: the object before the change (MODIFIED): a watch with selectors needs both
    old: dict[str, Any] | None = None


def cursor_of(e: StoredEvent) -> Cursor:
    return (e.envelope.t, order_key(e.envelope.order), e.position)


def encode_continue(instant: Instant, resource: str, after: Any) -> str:
    raw = json.dumps({"r": instant.run, "t": instant.t, "k": resource, "a": after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str, instant: Instant, resource: str) -> Any:
    """The position a ``continue`` token resumes after; it must be one this endpoint gave out."""
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if not isinstance(raw, dict):
            raise ValueError
        if (raw.get("r"), raw.get("t"), raw.get("k")) != (instant.run, instant.t, resource):
            raise ValueError
        return raw["a"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise bad_request(f"continue key is not valid: {token[:80]!r} was not given out by this list") from None


def _matches(obj: Mapping[str, Any], q: Query, fields: Mapping[str, str]) -> bool:
    return q.labels.matches(obj.get("metadata", {}).get("labels") or {}) and q.fields.matches(fields)


class KubeReader:
    def __init__(self, audit: Audit) -> None:
        self.audit = audit
        self.store = audit.store
        self.pages = KubeReads(audit.store)

    async def instant(self, run_text: str, at_text: str) -> Instant:
        try:
            run = await self.audit.resolve(run_text)
            started, start = await self.audit.started(run)
        except NotFound as exc:
            raise ApiError(404, "NotFound", str(exc)) from None
        return Instant(run, start, parse_at(at_text, start, started.duration), started.duration)

    # -- pods ---------------------------------------------------------------------------
    async def pod(self, i: Instant, namespace: str, name: str) -> dict[str, Any] | None:
        rows = await self.pages.read_pods(i.run, [f"{namespace}/{name}"], t_to=i.t)
        return build_pod([r.envelope for r in rows], i)

    async def _pods_of(self, i: Instant, keys: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        by_pod: dict[str, list[Envelope]] = defaultdict(list)
        for r in await self.pages.read_pods(i.run, keys, t_to=i.t):
            by_pod[r.envelope.pod or ""].append(r.envelope)
        return {k: build_pod(by_pod.get(k, []), i) for k in keys}

    async def _pod_key_chunks(
        self, i: Instant, q: Query, after: str | None, first: int = CHUNK
    ) -> AsyncIterator[list[str]]:
        prefix = f"{q.namespace}/" if q.namespace else None
        node = q.fields.wanted("spec.nodeName")
        if node is not None:  # describe node's listing: the node's pods, from the node index
            keys = sorted(
                k
                for k in await self.pages.pods_on_node(i.run, node)
                if (after is None or k > after) and (prefix is None or k.startswith(prefix))
            )
            for n in range(0, len(keys), CHUNK):
                yield keys[n : n + CHUNK]
            return
        size = first
        while True:
            keys = await self.pages.pod_keys(i.run, after=after, prefix=prefix, limit=size)
            if not keys:
                return
            yield keys
            after, size = keys[-1], CHUNK

    async def scan_pods(
        self, i: Instant, q: Query, after: str | None, first: int = CHUNK
    ) -> AsyncIterator[tuple[str, dict[str, Any] | None]]:
        """``first``: how many pods the first read takes (a page's limit and one to see past it)."""
        async for keys in self._pod_key_chunks(i, q, after, first):
            for key, obj in (await self._pods_of(i, keys)).items():
                yield key, obj if obj is not None and _matches(obj, q, pod_fields(obj)) else None

    # -- nodes --------------------------------------------------------------------------
    async def _node_names(self, i: Instant) -> list[str]:
        started, _ = await self.audit.started(i.run)
        return sorted(set(started.node_order))

    async def _nodes_of(self, i: Instant, names: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        rows = await self.store.read_nodes(i.run, names, types=NODE_TYPES, t_to=i.t)
        rows += await self.pages.read_streams(i.run, [node_stream(n) for n in names], types=STATUS_TYPES, t_to=i.t)
        rows.sort(key=cursor_of)
        by_node: dict[str, list[Envelope]] = defaultdict(list)
        for r in rows:
            if r.envelope.pod is None:  # (a pod applied with a nodeName carries the node too)
                by_node[r.envelope.node or ""].append(r.envelope)
        return {n: build_node(by_node.get(n, []), i) for n in names}

    async def node(self, i: Instant, name: str) -> dict[str, Any] | None:
        return (await self._nodes_of(i, [name]))[name]

    async def scan_nodes(
        self, i: Instant, q: Query, after: str | None
    ) -> AsyncIterator[tuple[str, dict[str, Any] | None]]:
        names = [n for n in await self._node_names(i) if after is None or n > after]
        wanted = q.fields.wanted("metadata.name")
        if wanted is not None:
            names = [n for n in names if n == wanted]
        for n in range(0, len(names), CHUNK):
            for key, obj in (await self._nodes_of(i, names[n : n + CHUNK])).items():
                yield key, obj if obj is not None and _matches(obj, q, node_fields(obj)) else None

    async def scan_leases(
        self, i: Instant, q: Query, after: str | None
    ) -> AsyncIterator[tuple[str, dict[str, Any] | None]]:
        if q.namespace not in (None, LEASE_NAMESPACE):
            return
        async for key, node in self.scan_nodes(i, Query(None, Selector(), FieldSelector()), after):
            lease = lease_object(node, i) if node is not None else None
            meta = lease.get("metadata", {}) if lease else {}
            fields = {"metadata.name": meta.get("name", ""), "metadata.namespace": LEASE_NAMESPACE}
            yield key, lease if lease is not None and _matches(lease, q, fields) else None

    # -- namespaces ---------------------------------------------------------------------
    async def _namespace_names(self, i: Instant) -> list[str]:
        names = set(BUILT_IN_NAMESPACES)
        for r in await self.pages.read_stream_range(i.run, "object/", types=["ObjectApplied"], t_to=i.t):
            parts = r.envelope.stream.split("/")
            if len(parts) == 4:
                names.add(parts[2])
        byte_ordered = await self.pages.byte_ordered()
        after: str | None = None
        while True:  # one index seek per namespace (byte order), else a walk over the pod keys
            keys = await self.pages.pod_keys(i.run, after=after, limit=1 if byte_ordered else CHUNK)
            if not keys:
                break
            for k in keys:
                names.add(k.split("/", 1)[0])
            after = keys[-1].split("/", 1)[0] + "/\U0010ffff" if byte_ordered else keys[-1]
        return sorted(names)

    async def scan_namespaces(
        self, i: Instant, q: Query, after: str | None
    ) -> AsyncIterator[tuple[str, dict[str, Any] | None]]:
        for name in await self._namespace_names(i):
            if after is not None and name <= after:
                continue
            obj = namespace_object(name, i)
            yield name, obj if _matches(obj, q, namespace_fields(obj)) else None

    async def namespace(self, i: Instant, name: str) -> dict[str, Any] | None:
        return namespace_object(name, i) if name in await self._namespace_names(i) else None

    # -- priority classes, runtime classes, budgets, quotas -----------------------------------
    async def _simple(self, i: Instant, kind: str) -> list[tuple[str, dict[str, Any]]]:
        rows = await self.pages.read_stream_range(
            i.run, f"object/{kind}/", types=["ObjectApplied", "ObjectDeleted"], t_to=i.t
        )
        rejected = {
            cause
            for r in await self.store.read_by_type(["ObjectRejected"], run=i.run, t_to=i.t)
            for cause in r.envelope.causes
        }
        found = list(fold_simple((r.envelope for r in rows), rejected, i.t).values())
        out: list[tuple[str, dict[str, Any]]] = []
        if kind == "PriorityClass":
            out += [(o["metadata"]["name"], o) for o in system_classes(i)]
        objects = [simple_object(s, i) for s in found]
        if kind == "ReplicaSet":  # and those the Deployments of the instant run
            objects += [deployment_replica_set(d, i) for _, d in await self._simple(i, "Deployment")]
        for obj in objects:
            meta = obj.get("metadata", {})
            namespaced = kind in NAMESPACED_SIMPLE
            key = f"{meta.get('namespace', 'default')}/{meta.get('name', '')}" if namespaced else meta.get("name", "")
            if namespaced:
                meta.setdefault("namespace", "default")
            out.append((key, obj))
        return sorted(out, key=lambda kv: kv[0])

    async def _namespace_pods(self, i: Instant, namespace: str) -> list[dict[str, Any]]:
        q = Query(namespace, Selector(), FieldSelector())
        return [obj async for _, obj in self.scan_pods(i, q, None) if obj is not None]

    async def _controllers(self, i: Instant) -> dict[tuple[str, str, str], Controller]:
        """The workload controllers at the instant, as the disruption controller finds them."""
        out: dict[tuple[str, str, str], Controller] = {}
        for kind in sorted(Workload.KINDS):
            for _, obj in await self._simple(i, kind):
                w = convert(obj, Workload)
                rs = replica_set_for(w).metadata.name if w.kind == "Deployment" else ""
                for c in workload_controllers(w, rs):
                    out[(c.namespace, c.kind, c.name)] = c
        return out

    async def scan_simple(
        self, i: Instant, kind: str, q: Query, after: str | None
    ) -> AsyncIterator[tuple[str, dict[str, Any] | None]]:
        pods_by_ns: dict[str, list[dict[str, Any]]] = {}
        nodes: list[dict[str, Any]] | None = None
        found = await self._simple(i, kind)
        replica_sets = [rs for _, rs in await self._simple(i, "ReplicaSet")] if kind == "Deployment" else []
        controllers = await self._controllers(i) if kind == "PodDisruptionBudget" else {}
        for key, obj in found:
            if after is not None and key <= after:
                continue
            ns = obj.get("metadata", {}).get("namespace")
            if q.namespace and ns != q.namespace:
                continue
            if kind in NAMESPACED_SIMPLE and ns and ns not in pods_by_ns:
                pods_by_ns[ns] = await self._namespace_pods(i, ns)
            if kind in ("PodDisruptionBudget", "ResourceQuota") and ns:
                if kind == "PodDisruptionBudget":
                    obj = with_budget_status(obj, pods_by_ns[ns], controllers)
                else:
                    obj = with_quota_status(obj, pods_by_ns[ns])
            elif kind in WORKLOAD_KINDS and ns:
                if kind == "DaemonSet" and nodes is None:
                    everything = Query(None, Selector(), FieldSelector())
                    nodes = [n async for _, n in self.scan_nodes(i, everything, None) if n is not None]
                owned_by = replica_sets_of(obj, replica_sets) if kind == "Deployment" else ()
                obj = with_workload_status(obj, pods_by_ns[ns], nodes or [], i, owned_by)
            meta = obj.get("metadata", {})
            fields = {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}
            yield key, obj if _matches(obj, q, fields) else None

    # -- events -------------------------------------------------------------------------
    async def _pod_specs(self, i: Instant, pods: Sequence[str], t_to: int) -> list[ev.EventSpec]:
        by_pod: dict[str, list[Envelope]] = defaultdict(list)
        for r in await self.pages.read_pods(i.run, pods, t_to=t_to):
            by_pod[r.envelope.pod or ""].append(r.envelope)
        preemptors = {
            json.loads(bytes(e.data)).get("preemptor", "")
            for history in by_pod.values()
            for e in history
            if e.type == "PodPreempted"
        }
        preemptor_history: dict[str, list[Envelope]] = defaultdict(list)
        if preemptors:
            for r in await self.pages.read_pods(i.run, sorted(preemptors), t_to=t_to):
                preemptor_history[r.envelope.pod or ""].append(r.envelope)
        # each preemptor as it was when it preempted (a name may be used again later)
        uids = ev.uid_at({k: ev.pod_uids(history) for k, history in preemptor_history.items()})
        return [s for p in pods for s in ev.pod_event_specs(p, by_pod.get(p, []), uids)]

    async def _node_specs(self, i: Instant, nodes: Sequence[str], t_to: int) -> list[ev.EventSpec]:
        started, _ = await self.audit.started(i.run)
        period = ev.image_gc_period(started.kubelet_config)
        rows = await self.store.read_nodes(i.run, nodes, types=ev.NODE_HISTORY_TYPES, t_to=t_to)
        by_node: dict[str, list[Envelope]] = defaultdict(list)
        for r in rows:
            if r.envelope.pod is None:
                by_node[r.envelope.node or ""].append(r.envelope)
        return [s for n in nodes for s in ev.node_event_specs(n, by_node.get(n, []), period)]

    async def _events_of(
        self, i: Instant, pods: Sequence[str], nodes: Sequence[str], t_to: int
    ) -> list[ev.Occurrences]:
        specs = await self._pod_specs(i, pods, t_to) if pods else []
        if nodes:
            specs += await self._node_specs(i, nodes, t_to)
        return ev.correlate(specs, t_to)

    async def _event_records(
        self, i: Instant, types: Sequence[str], after: Cursor | None
    ) -> AsyncIterator[list[StoredEvent]]:
        """Pages of the records events come from, in decision order, up to the instant."""
        sources = [("decisions", [t for t in types if t != "PodDeletionRequested"])]
        if "PodDeletionRequested" in types:
            sources.append(("pods", ["PodDeletionRequested"]))
        async for page in self._merged(i.run, sources, after, i.t):
            yield page

    async def scan_events(
        self, i: Instant, q: Query, after: Any, *, v1: bool
    ) -> AsyncIterator[tuple[Any, dict[str, Any] | None]]:
        """Events in the order of their first occurrence; the key is the record's cursor."""
        kind = q.fields.wanted("involvedObject.kind")
        name = q.fields.wanted("involvedObject.name")
        if kind in ("Pod", "Node") and name is not None:
            if after is not None and (not isinstance(after, int) or isinstance(after, bool)):
                raise _foreign_token()
            ns = q.fields.wanted("involvedObject.namespace") or q.namespace or "default"
            occurrences = await (
                self._events_of(i, [f"{ns}/{name}"], [], i.t) if kind == "Pod" else self._events_of(i, [], [name], i.t)
            )
            occurrences.sort(key=lambda o: (o.first.t, o.first.seen, o.first.source_id, o.first.sub))
            for n, occ in enumerate(occurrences):
                if after is not None and n <= int(after):
                    continue
                yield n, self._event_out(occ, i, q, v1)
            return
        reason = q.fields.wanted("reason")
        types = (
            ev.types_for_reason(reason) if reason is not None else (*ev.EVENT_DECISION_TYPES, "PodDeletionRequested")
        )
        cursor = _record_cursor(after)
        async for page in self._event_records(i, types, cursor):
            pods = sorted({r.envelope.pod for r in page if r.envelope.pod})
            nodes = sorted({r.envelope.node for r in page if not r.envelope.pod and r.envelope.node})
            firsts: dict[str, list[ev.Occurrences]] = defaultdict(list)
            for occ in await self._events_of(i, pods, nodes, i.t):
                firsts[occ.first.source_id].append(occ)
            for r in page:
                for occ in sorted(firsts.get(r.envelope.id, []), key=lambda o: o.first.sub):
                    yield list(cursor_of(r)), self._event_out(occ, i, q, v1)
                yield list(cursor_of(r)), None

    def _event_out(self, occ: ev.Occurrences, i: Instant, q: Query, v1: bool) -> dict[str, Any] | None:
        core = ev.core_event(occ, i)
        if q.namespace and core["metadata"]["namespace"] != q.namespace:
            return None
        if not _matches(core, q, event_fields(core)):
            return None
        return ev.events_v1(core) if v1 else core

    async def event(self, i: Instant, namespace: str, name: str, *, v1: bool) -> dict[str, Any] | None:
        """One event by name: its object's events, found through the name's object part."""
        base = name.rsplit(".", 1)[0]
        found = await self._events_of(i, [f"{namespace}/{base}"], [base] if namespace == "default" else [], i.t)
        for occ in found:
            core = ev.core_event(occ, i)
            if core["metadata"]["name"] == name and core["metadata"]["namespace"] == namespace:
                return ev.events_v1(core) if v1 else core
        return None

    # -- one dispatch for the routes ---------------------------------------------------------------
    async def get(self, resource: Resource, i: Instant, namespace: str, name: str) -> dict[str, Any] | None:
        if resource.kind == "Pod":
            return await self.pod(i, namespace, name)
        if resource.kind == "Node":
            return await self.node(i, name)
        if resource.kind == "Namespace":
            return await self.namespace(i, name)
        if resource.kind == "Event":
            return await self.event(i, namespace, name, v1=bool(resource.group))
        if resource.kind == "Lease":
            node = await self.node(i, name) if namespace == LEASE_NAMESPACE else None
            return lease_object(node, i) if node is not None else None
        if resource.kind in METRICS_KINDS:
            return await get_metrics(self, resource.kind, i, namespace, name)
        key = f"{namespace}/{name}" if resource.namespaced else name
        q = Query(namespace or None, Selector(), FieldSelector())
        async for k, obj in self.scan_simple(i, resource.kind, q, None):
            if k == key:
                return obj
        return None

    def scan(
        self, resource: Resource, i: Instant, q: Query, after: Any, limit: int | None = None
    ) -> AsyncIterator[tuple[Any, dict[str, Any] | None]]:
        if resource.kind != "Event":
            after = _key_after(after)
        if resource.kind == "Pod":
            return self.scan_pods(i, q, after, CHUNK if limit is None else min(CHUNK, limit + 1))
        if resource.kind == "Node":
            return self.scan_nodes(i, q, after)
        if resource.kind == "Namespace":
            return self.scan_namespaces(i, q, after)
        if resource.kind == "Event":
            return self.scan_events(i, q, after, v1=bool(resource.group))
        if resource.kind == "Lease":
            return self.scan_leases(i, q, after)
        if resource.kind in METRICS_KINDS:
            return scan_metrics(self, resource.kind, i, q, after, CHUNK if limit is None else min(CHUNK, limit + 1))
        return self.scan_simple(i, resource.kind, q, after)

    async def page(
        self, resource: Resource, i: Instant, q: Query, *, limit: int | None, token: str | None
    ) -> AsyncIterator[dict[str, Any] | str]:
        """The items of one page, then (last) its ``continue`` token or ``""``: at most
        ``limit`` items, or every item when there is no limit (streamed, never held)."""
        after = decode_continue(token, i, resource.name) if token else None
        scanned = 0
        count = 0
        last_key: Any = None
        async for key, obj in self.scan(resource, i, q, after, limit):
            if obj is not None:
                # items of one key (an event record's events) never straddle two pages
                if limit is not None and count >= limit and key != last_key:
                    yield encode_continue(i, resource.name, last_key)
                    return
                yield obj
                count += 1
            else:
                scanned += 1
            last_key = key
            if limit is not None and scanned >= CHUNK * MAX_CHUNKS and count < limit:
                yield encode_continue(i, resource.name, last_key)  # a short page: the rest is far
                return
        yield ""

    # -- watch --------------------------------------------------------------------------
    async def _merged(
        self, run: str, sources: Sequence[tuple[str, Sequence[str]]], after: Cursor | None, t_to: int | None
    ) -> AsyncIterator[list[StoredEvent]]:
        """Pages of several keyset-paged sources merged into one decision order."""
        cursors: list[Cursor | None] = [after for _ in sources]
        buffers: list[list[StoredEvent]] = [[] for _ in sources]
        done = [False for _ in sources]
        while True:
            for n, (scope, types) in enumerate(sources):
                if not buffers[n] and not done[n] and types:
                    rows = await self.pages.list_run_events(
                        run, types=types, after=cursors[n], t_to=t_to, scope=scope, limit=CHUNK
                    )
                    buffers[n] = rows
                    done[n] = len(rows) < CHUNK
                    if rows:
                        cursors[n] = cursor_of(rows[-1])
            live = [b for b in buffers if b]
            if not live:
                return
            # everything up to the smallest last cursor of a buffer still being filled is final
            bound = min((cursor_of(b[-1]) for n, b in enumerate(buffers) if b and not done[n]), default=None)
            merged = list(heapq.merge(*live, key=cursor_of))
            page = [r for r in merged if bound is None or cursor_of(r) <= bound]
            taken = {id(r) for r in page}
            for n, b in enumerate(buffers):
                buffers[n] = [r for r in b if id(r) not in taken]
            yield page

    async def changes(
        self, resource: Resource, i: Instant, after: Cursor
    ) -> AsyncIterator[tuple[Cursor, list[Change]]]:
        """What changed after ``after``, an instant at a time: the objects the instant's
        records touched, as they were before it and after it."""
        sources, key_of = _watch_sources(resource)
        pending: list[StoredEvent] = []
        async for page in self._merged(i.run, sources, after, None):
            for r in page:
                if pending and r.envelope.t != pending[0].envelope.t:
                    yield cursor_of(pending[-1]), await self._instant_changes(resource, i, pending, key_of)
                    pending = []
                if key_of(r.envelope) is not None:
                    pending.append(r)
        if pending:
            yield cursor_of(pending[-1]), await self._instant_changes(resource, i, pending, key_of)

    async def _instant_changes(
        self, resource: Resource, i: Instant, records: Sequence[StoredEvent], key_of: Any
    ) -> list[Change]:
        t = records[0].envelope.t
        now, before = replace(i, t=t), replace(i, t=t - 1)
        keys = list(dict.fromkeys(key_of(r.envelope) for r in records))
        out: list[Change] = []
        if resource.kind == "Event":
            v1 = bool(resource.group)
            ids = {r.envelope.id for r in records}
            pods = sorted({r.envelope.pod for r in records if r.envelope.pod})
            nodes = sorted({r.envelope.node for r in records if not r.envelope.pod and r.envelope.node})
            for occ in await self._events_of(now, pods, nodes, t):
                touched = [s for s in (occ.first, *occ.extra) if s.source_id in ids]
                if touched:
                    core = ev.core_event(occ, now)
                    kind = "ADDED" if occ.first.source_id in ids and occ.count == 1 else "MODIFIED"
                    out.append(Change(kind, ev.events_v1(core) if v1 else core, t))
            return out
        if resource.kind == "Pod":
            after_map, before_map = await self._pods_of(now, keys), await self._pods_of(before, keys)
        elif resource.kind in ("Node", "Lease"):
            after_map, before_map = await self._nodes_of(now, keys), await self._nodes_of(before, keys)
            if resource.kind == "Lease":
                after_map = {k: lease_object(o, now) if o else None for k, o in after_map.items()}
                before_map = {k: lease_object(o, before) if o else None for k, o in before_map.items()}
        else:
            q = Query(None, Selector(), FieldSelector())
            after_map = {
                k: o for k, o in [kv async for kv in self.scan_simple(now, resource.kind, q, None)] if k in keys
            }
            before_map = {
                k: o for k, o in [kv async for kv in self.scan_simple(before, resource.kind, q, None)] if k in keys
            }
        for k in keys:
            old, new = before_map.get(k), after_map.get(k)
            if new is not None and old is None:
                out.append(Change("ADDED", new, t))
            elif new is None and old is not None:
                out.append(Change("DELETED", old, t))
            elif new is not None and old is not None and _uid(new) != _uid(old):
                # the name holds another object now (a StatefulSet's pod created again): a
                # watch sees the old one deleted and the new one added, as the API server's
                out += [Change("DELETED", old, t), Change("ADDED", new, t)]
            elif new is not None and old is not None and new != old:
                out.append(Change("MODIFIED", new, t, old))
        return out


def _uid(obj: Mapping[str, Any]) -> Any:
    return obj.get("metadata", {}).get("uid")


def _foreign_token() -> ApiError:
    return bad_request("continue key is not valid: it was not given out by this list")


def _record_cursor(after: Any) -> Cursor | None:
    """A record's keyset cursor from a continue token (``[t, order key, position]``)."""
    if after is None:
        return None
    if (
        isinstance(after, list)
        and len(after) == 3
        and all(isinstance(x, int) and not isinstance(x, bool) for x in (after[0], after[2]))
        and isinstance(after[1], str)
        and len(after[1]) < 1000
        and "\x00" not in after[1]
        and abs(after[0]) < 2**63
        and 0 <= after[2] < 2**63
    ):
        return (after[0], after[1], after[2])
    raise _foreign_token()


def _key_after(after: Any) -> str | None:
    """An object key from a continue token."""
    if after is None or (isinstance(after, str) and "\x00" not in after and len(after) < 1000):
        return after
    raise _foreign_token()


def _watch_sources(resource: Resource) -> tuple[list[tuple[str, Sequence[str]]], Any]:
    """The records that can change objects of ``resource``, and the object key of each."""
    if resource.kind == "Pod":
        decisions = [
            t
            for t in POD_TYPES
            if t not in ("ObjectApplied", "ObjectCreated", "ObjectDeleted", "PodStarted", "PodDeletionRequested")
        ]
        sources: list[tuple[str, Sequence[str]]] = [
            ("decisions", decisions),
            ("inputs", ["ObjectApplied", "ObjectDeleted"]),
            ("pods", ["PodDeletionRequested"]),
        ]
        return sources, lambda e: e.pod
    if resource.kind in ("Node", "Lease"):
        decisions = ["NodeConditionChanged", "NodeTaintAdded", "NodeTaintRemoved"]
        inputs = ["ObjectApplied", "ObjectDeleted", "NodeTainted", "NodeUntainted", "NodePoweredOff", "NodePoweredOn"]
        return [("decisions", decisions), ("inputs", inputs)], lambda e: e.node if e.node and not e.pod else None
    if resource.kind == "Event":
        return [("decisions", list(ev.EVENT_DECISION_TYPES)), ("pods", ["PodDeletionRequested"])], lambda e: e.id
    prefix = f"object/{resource.kind}/"

    def simple_key(e: Envelope) -> str | None:
        if not e.stream.startswith(prefix):
            return None
        parts = e.stream[len(prefix) :].split("/")
        return "/".join(parts)

    return [("inputs", ["ObjectApplied", "ObjectDeleted"])], simple_key


def after_instant(t: int) -> Cursor:
    """The keyset cursor just past every record of instant ``t``."""
    return (t, _LAST_KEY, _LAST_POSITION)

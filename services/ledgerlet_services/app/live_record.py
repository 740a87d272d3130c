"""``ledgerlet record``: a live cluster recorded into the event store as the inputs of a
run, for as long as it runs (the live flight recorder's recording; the loops deciding
alongside it are not built yet).

Through the API server as ``collect`` reaches it: every kind a scenario models is listed,
then watched from the list's resourceVersion (a dropped watch resumes from the last
version seen; 410 Gone lists again and stores the difference). Every ``interval`` each
node's ``/stats/summary`` is scraped, ``concurrency`` at once, each within
``node_timeout``: a node that does not answer is a ``StatsMissed`` input, a gap, not an
error. What is stored is what ``import`` then ``run`` make of the same documents: objects
cleaned and defaulted as an ``apply`` event's (``ObjectApplied``/``ObjectDeleted``),
summaries as a ``stats`` event's (``StatsReported``), at ``t`` = wall-clock time since the
run's start. Only a change is stored: a node's heartbeat, which changes nothing a
scenario models, is not.

Core Events (``/api/v1/events``) are listed and watched the same way; those of a reason
that tells what the real cluster did (:data:`OBSERVED_REASONS`) are stored as
``ClusterEventObserved``, again only when an update changed them. Every ``configz_every``
intervals each kubelet's ``configz`` is read again: one whose modelled fields are not what
the run has for it is stored as ``KubeletConfigObserved``. Neither is read by the loops.

Started again with the same run id, the stored inputs are read back and the objects the
API server lists now are compared with them: only the difference is stored, after a
``RecordingResumed`` that marks the gap (a pod there before and now did not vanish and
come back), and an input is never stored twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import queue
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.order import INPUTS
from ledgerlet_core.contracts.registry import decode_data, make_envelope
from ledgerlet_core.model.codec import convert, object_builtins, to_builtins
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.k8s.decode import decode_object
from ledgerlet_core.model.summary import Summary
from ledgerlet_core.model.timefmt import parse_rfc3339
from ledgerlet_core.scenario.feed import routing
from ledgerlet_core.scenario.load import DELETABLE_KINDS
from ledgerlet_core.scenario.observed_events import observed_event
from ledgerlet_core.scenario.recording import as_kubelet_uids, clean_object, kubelet_config_from, kubelet_view
from ledgerlet_services.app.collect import REQUIRED, RESOURCES, ApiError, Client
from ledgerlet_store.sql_store import SqlEventStore

#: the kind of each listed resource (collect.RESOURCES), as its items omit it
KIND_OF: Final = {
    "nodes": "Node",
    "priorityclasses": "PriorityClass",
    "runtimeclasses": "RuntimeClass",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "resourcequotas": "ResourceQuota",
    "persistentvolumes": "PersistentVolume",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "replicasets": "ReplicaSet",
    "deployments": "Deployment",
    "statefulsets": "StatefulSet",
    "daemonsets": "DaemonSet",
    "jobs": "Job",
    "pods": "Pod",
    "events": "Event",
}
#: core Events, watched beside the kinds a scenario models
EVENTS_PATH: Final = "/api/v1/events"
#: the Event reasons that tell what the real kubelet, scheduler or taint manager did
#: (upstream's pkg/kubelet/events, the scheduler's preemption, the node problem
#: detector's OOMKilling, the taint manager): the others are not stored
OBSERVED_REASONS: Final = frozenset(
    {
        "Evicted",
        "Preempted",
        "OOMKilling",
        "SystemOOM",
        # a pressure condition set or cleared, as the kubelet names its events, and the
        # ``NodeHas<Condition>`` spellings of the same
        "NodeHasInsufficientMemory",
        "NodeHasSufficientMemory",
        "NodeHasMemoryPressure",
        "NodeHasNoMemoryPressure",
        "NodeHasDiskPressure",
        "NodeHasNoDiskPressure",
        "NodeHasInsufficientPID",
        "NodeHasSufficientPID",
        "NodeHasPIDPressure",
        "NodeHasNoPIDPressure",
        # the kubelet's shutdown manager: the node's event, a pod refused while shutting down
        "Shutdown",
        "NodeShutdown",
        "TaintManagerEviction",
    }
)
#: what a live run's ScenarioStarted.source begins with (a run id of another kind is refused)
SOURCE_PREFIX: Final = "live "
MS: Final = 1_000_000

Key = tuple[str, str, str]


def object_key(obj: dict[str, Any]) -> Key:
    """Kind, namespace ("" when cluster-scoped) and name of an object."""
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", "")))


@dataclass(frozen=True)
class Seen:
    """What a watcher hands the recorder: objects applied or deleted, a fresh list of a
    resource (after 410 Gone) or a note that its watch was resumed."""

    plural: str
    what: str  # "applied" | "deleted" | "listed" | "resumed"
    objects: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""


def event_key(raw: dict[str, Any]) -> str:
    """NAMESPACE/NAME of an Event object: the same for each of its updates."""
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def _with_kind(plural: str, obj: dict[str, Any]) -> dict[str, Any]:
    return obj if obj.get("kind") else {"kind": KIND_OF[plural], **obj}


def _listed(client: Client, plural: str, path: str) -> tuple[list[dict[str, Any]], str]:
    doc = client.get(path)
    if not isinstance(doc, dict):
        raise ApiError(path, None, "not a list")
    items = [_with_kind(plural, i) for i in doc.get("items") or [] if isinstance(i, dict)]
    return items, str((doc.get("metadata") or {}).get("resourceVersion") or "")


class Watcher(threading.Thread):
    """Watches one resource from a resourceVersion until ``stop`` is set, handing what it
    sees to ``out``: after a dropped watch it resumes from the last version seen; after
    410 Gone (the version is too old) it lists again."""

    def __init__(
        self,
        client: Client,
        plural: str,
        path: str,
        version: str,
        out: queue.Queue[Seen],
        stop: threading.Event,
        *,
        read_timeout: float,
        retry_wait: float,
    ) -> None:
        super().__init__(name=f"watch-{plural}", daemon=True)
        self.client, self.plural, self.path, self.version = client, plural, path, version
        self.out, self.stop, self.read_timeout, self.retry_wait = out, stop, read_timeout, retry_wait

    def run(self) -> None:
        relist = listed = False
        while not self.stop.is_set():
            try:
                if relist:
                    if listed:  # (410 Gone from the version just listed: not listed again at once)
                        self.stop.wait(self.retry_wait)
                    items, self.version = _listed(self.client, self.plural, self.path)
                    self.out.put(Seen(self.plural, "listed", items, note="410 Gone: listed again"))
                    relist, listed = False, True
                relist = self._watch()
                listed = listed and relist
            except ApiError as exc:
                if exc.status == 410:
                    relist = True
                    continue
                self.out.put(Seen(self.plural, "resumed", note=str(exc)))
                self.stop.wait(self.retry_wait)

    def _watch(self) -> bool:
        """One watch until the server ends it; True when it said 410 Gone."""
        query = urllib.parse.urlencode(
            {
                "watch": "1",
                "allowWatchBookmarks": "true",
                "resourceVersion": self.version,
                "timeoutSeconds": str(max(1, math.ceil(self.read_timeout * 5))),
            }
        )
        for event in self.client.watch(f"{self.path}?{query}", self.read_timeout):
            if self.stop.is_set():
                return False
            kind = event.get("type") if isinstance(event, dict) else None
            obj = event.get("object") if isinstance(event, dict) else None
            if not isinstance(obj, dict):
                continue
            if kind == "ERROR":
                if obj.get("code") == 410:
                    return True
                raise ApiError(self.path, obj.get("code"), str(obj.get("message") or "watch error"))
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if kind in ("ADDED", "MODIFIED"):
                self.out.put(Seen(self.plural, "applied", [_with_kind(self.plural, obj)]))
            elif kind == "DELETED":
                self.out.put(Seen(self.plural, "deleted", [_with_kind(self.plural, obj)]))
            if version:
                self.version = str(version)
        return False


@dataclass
class Tick:
    """What one interval stored: for the status line and the tests."""

    t: int
    nodes: int
    scraped: int
    gaps: list[str]
    changed: int
    notes: list[str]
    #: cluster events and kubelet configurations observed (ClusterEventObserved, KubeletConfigObserved)
    observed: int = 0

    def text(self) -> str:
        gaps = f" ({', '.join(self.gaps)})" if self.gaps else ""
        notes = f"; {'; '.join(self.notes)}" if self.notes else ""
        observed = f", {self.observed} observed (events, kubelet configurations)" if self.observed else ""
        return (
            f"t={self.t / 1e9:.1f}s: {self.scraped}/{self.nodes} nodes scraped, {len(self.gaps)} gaps{gaps}, "
            f"{self.changed} objects changed{observed}{notes}"
        )


@dataclass
class Recorded:
    """What a recording session stored, for the user."""

    run: str
    resumed: bool
    ticks: int = 0
    events: int = 0
    notes: list[str] = field(default_factory=list)


class LiveRecorder:
    """Records one cluster into one run (see the module's docstring)."""

    def __init__(
        self,
        store: SqlEventStore,
        client: Client,
        run: str,
        *,
        interval: float,
        concurrency: int = 16,
        node_timeout: float = 5.0,
        read_timeout: float = 60.0,
        name: str = "live",
        configz_every: int = 6,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.client, self.run = store, client, run
        self.interval, self.concurrency, self.node_timeout = interval, concurrency, node_timeout
        self.read_timeout, self.name, self.clock = read_timeout, name, clock
        self.configz_every = configz_every
        # (the request's own limit a little later than the interval's: the node's deadline
        # is the recorder's, and the thread that asked is let go soon after)
        self.stats_client = Client(client.api, timeout=node_timeout + 1.0)
        #: each object as stored (the last ObjectApplied's object), by key
        self.state: dict[Key, dict[str, Any]] = {}
        self.mirror_uids: dict[str, str] = {}
        #: each observed Event as last stored, by its NAMESPACE/NAME
        self.observed: dict[str, ev.ClusterEventObserved] = {}
        #: the run's kubelet configuration (ScenarioStarted's) and each node's as last observed
        self.kubelet_config: dict[str, Any] = {}
        self.node_configs: dict[str, dict[str, Any]] = {}
        self.start = 0.0
        self.last_t = -1
        self.notes: list[str] = []
        self._queue: queue.Queue[Seen] = queue.Queue()
        self._stop_watching = threading.Event()

    # -- what is stored -------------------------------------------------------------------
    def _stored_form(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """The object as an ``apply`` event of an imported recording carries it; None
        (and a note) for one ledgerlet cannot read."""
        obj = raw
        if raw.get("kind") == "Pod":
            obj, api_uid = kubelet_view(raw)
            if api_uid is not None:
                self.mirror_uids[api_uid] = obj["metadata"]["uid"]
        try:
            return object_builtins(decode_object(clean_object(obj)))
        except InputError as exc:
            self._note(f"{'/'.join(p for p in object_key(raw) if p)} not recorded: {exc}")
            return None

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _apply(self, raw: dict[str, Any], initial: bool = False) -> ev.ObjectApplied | None:
        obj = self._stored_form(raw)
        if obj is None:
            return None
        key = object_key(obj)
        if self.state.get(key) == obj:
            return None  # (a heartbeat, a resourceVersion: nothing a scenario models changed)
        self.state[key] = obj
        return ev.ObjectApplied(object=obj, initial=initial)

    def _delete(self, key: Key) -> ev.ObjectDeleted | None:
        if self.state.pop(key, None) is None:
            return None
        kind, namespace, name = key
        if kind not in DELETABLE_KINDS:
            self._note(f"deletions of {kind} are not modelled: not stored")
            return None
        return ev.ObjectDeleted(kind=kind, name=name, namespace=namespace)

    def _difference(self, plural: str, items: Sequence[dict[str, Any]]) -> list[msgspec.Struct]:
        """What turns the stored objects of a resource into those listed now."""
        kind = KIND_OF[plural]
        out: list[msgspec.Struct] = []
        listed: set[Key] = set()
        for raw in items:
            listed.add(object_key(raw))
            applied = self._apply(raw)
            if applied is not None:
                out.append(applied)
        for key in [k for k in self.state if k[0] == kind and k not in listed]:
            deleted = self._delete(key)
            if deleted is not None:
                out.append(deleted)
        return out

    def _observed(self, raw: dict[str, Any]) -> ev.ClusterEventObserved | None:
        """The Event as stored, if it is of a reason kept and changed since last stored."""
        if raw.get("reason") not in OBSERVED_REASONS:
            return None
        key = event_key(raw)
        try:
            seen = observed_event({**raw, "kind": "Event", "apiVersion": raw.get("apiVersion") or "v1"}, key)
        except InputError as exc:
            self._note(f"event {key} not recorded: {exc}")
            return None
        about, source = seen["object"], seen.get("source", {})
        data = ev.ClusterEventObserved(
            event=key,
            reason=seen["reason"],
            type=seen["type"],
            message=seen["message"],
            kind=about["kind"],
            namespace=about.get("namespace", ""),
            name=about["name"],
            uid=about.get("uid", ""),
            component=source.get("component", ""),
            host=source.get("host", ""),
            first_timestamp=seen.get("firstTime", seen["time"]),
            last_timestamp=seen["time"],
            count=seen["count"],
        )
        if self.observed.get(key) == data:
            return None  # (a new resourceVersion, nothing else)
        self.observed[key] = data
        return data

    def _events_seen(self, seen: Seen) -> list[msgspec.Struct]:
        """Events kept: those added or changed; one that expired (deleted, or gone from a
        new list) is forgotten, not stored: the cluster did nothing."""
        out: list[msgspec.Struct] = []
        if seen.what == "deleted":
            for raw in seen.objects:
                self.observed.pop(event_key(raw), None)
            return out
        for raw in seen.objects:
            data = self._observed(raw)
            if data is not None:
                out.append(data)
        if seen.what == "listed":
            listed = {event_key(r) for r in seen.objects}
            for key in [k for k in self.observed if k not in listed]:
                del self.observed[key]
        return out

    def _seen(self, seen: Seen) -> list[msgspec.Struct]:
        if seen.what == "resumed":
            self._note(f"{seen.plural} watch resumed ({seen.note})")
            return []
        if seen.plural == "events":
            if seen.what == "listed":
                self._note(f"{seen.plural}: {seen.note}")
            return self._events_seen(seen)
        if seen.what == "listed":
            self._note(f"{seen.plural}: {seen.note}")
            return self._difference(seen.plural, seen.objects)
        out: list[msgspec.Struct] = []
        for raw in seen.objects:
            change: msgspec.Struct | None
            change = self._apply(raw) if seen.what == "applied" else self._delete(object_key(raw))
            if change is not None:
                out.append(change)
        return out

    def _envelopes(self, t: int, data: Sequence[msgspec.Struct], first: int = 1) -> list[Envelope]:
        out = []
        for i, d in enumerate(data):
            stream, node, pod = routing(d)
            order = [INPUTS, first + i]
            out.append(make_envelope(d, run=self.run, t=t, order=order, stream=stream, node=node, pod=pod))
        return out

    def _now(self) -> int:
        """The instant of this interval: wall-clock since the start, in whole ms, always
        after the last stored (ids are made of it)."""
        t = max(int((self.clock() - self.start) * 1000) * MS, self.last_t + MS)
        self.last_t = t
        return t

    # -- resuming --------------------------------------------------------------------------
    async def _resume(self) -> bool:
        """Read the run's stored inputs back (True: there were some)."""
        started: ev.ScenarioStarted | None = None
        async for stored in self.store.iter_run(self.run, kinds=["input"]):
            env = stored.envelope
            self.last_t = max(self.last_t, env.t)
            if env.type == "ScenarioStarted":
                started = decode_data(env)
            elif env.type == "ObjectApplied":
                obj = decode_data(env).object
                self.state[object_key(obj)] = obj
            elif env.type == "ObjectDeleted":
                data = decode_data(env)
                self.state.pop((data.kind, data.namespace, data.name), None)
            elif env.type == "ClusterEventObserved":
                observed = decode_data(env)
                self.observed[observed.event] = observed
            elif env.type == "KubeletConfigObserved":
                changed = decode_data(env)
                self.node_configs[changed.node] = changed.config
        if started is None:
            if self.last_t >= 0:
                raise InputError(f"run {self.run} has inputs but no start: not a live recording", field="--run-id")
            return False
        if not started.source.startswith(SOURCE_PREFIX):
            raise InputError(
                f"run {self.run} is a run of {started.source or started.name!r}, not a live recording; "
                "give another --run-id",
                field="--run-id",
            )
        self.start = parse_rfc3339(started.start).timestamp()
        self.kubelet_config = started.kubelet_config
        return True

    # -- listing and scraping --------------------------------------------------------------
    def _list_all(self) -> dict[str, tuple[list[dict[str, Any]], str]]:
        out = {}
        for plural, path in RESOURCES:
            try:
                out[plural] = _listed(self.client, plural, path)
            except ApiError as exc:
                if plural in REQUIRED:
                    raise
                self._note(f"{plural} not recorded ({exc})")
        return out

    def _list_events(self) -> tuple[list[dict[str, Any]], str] | None:
        try:
            return _listed(self.client, "events", EVENTS_PATH)
        except ApiError as exc:
            self._note(f"events not recorded ({exc})")
            return None

    def _kubelet_config(self, nodes: Sequence[str]) -> dict[str, Any]:
        for node in nodes:
            try:
                doc = self.client.get(f"/api/v1/nodes/{urllib.parse.quote(node, safe='')}/proxy/configz")
            except ApiError as exc:
                self._note(f"no kubelet configuration from {node} ({exc})")
                continue
            if isinstance(doc, dict):
                return kubelet_config_from(doc)[0]
        return {}

    def _nodes(self) -> list[str]:
        return sorted(name for kind, _, name in self.state if kind == "Node")

    async def _scrape(self, pool: ThreadPoolExecutor, nodes: Sequence[str]) -> list[msgspec.Struct]:
        """Every node's summary, ``concurrency`` at once, each within ``node_timeout``."""
        loop = asyncio.get_running_loop()
        bound = asyncio.Semaphore(self.concurrency)

        async def one(node: str) -> msgspec.Struct:
            path = f"/api/v1/nodes/{urllib.parse.quote(node, safe='')}/proxy/stats/summary"
            async with bound:
                try:
                    doc = await asyncio.wait_for(
                        asyncio.wrap_future(pool.submit(self.stats_client.get, path), loop=loop), self.node_timeout
                    )
                except TimeoutError:
                    return ev.StatsMissed(node=node, reason=f"no answer within {self.node_timeout:g}s")
                except ApiError as exc:
                    return ev.StatsMissed(node=node, reason=str(exc))
            try:
                if not isinstance(doc, dict):
                    raise InputError("not a /stats/summary document")
                summary = convert(as_kubelet_uids(doc, self.mirror_uids), Summary, obj=f"node {node}", prefix="stats")
            except InputError as exc:
                return ev.StatsMissed(node=node, reason=f"unreadable summary: {exc}")
            return ev.StatsReported(node=summary.node.node_name, summary=to_builtins(summary))

        return list(await asyncio.gather(*(one(n) for n in nodes)))

    async def _configz(self, pool: ThreadPoolExecutor, nodes: Sequence[str]) -> list[msgspec.Struct]:
        """Every kubelet's configuration read again, as the scrapes are; a node whose
        modelled fields are not what the run has for it is stored. One that does not
        answer is a note: its configuration is as last known."""
        loop = asyncio.get_running_loop()
        bound = asyncio.Semaphore(self.concurrency)

        async def one(node: str) -> msgspec.Struct | None:
            path = f"/api/v1/nodes/{urllib.parse.quote(node, safe='')}/proxy/configz"
            async with bound:
                try:
                    doc = await asyncio.wait_for(
                        asyncio.wrap_future(pool.submit(self.stats_client.get, path), loop=loop), self.node_timeout
                    )
                except (TimeoutError, ApiError) as exc:
                    why = str(exc) or f"no answer within {self.node_timeout:g}s"
                    self._note(f"no kubelet configuration from {node} ({why})")
                    return None
            if not isinstance(doc, dict):
                self._note(f"no kubelet configuration from {node} (not a configz document)")
                return None
            config = kubelet_config_from(doc)[0]
            if config == self.node_configs.get(node, self.kubelet_config):
                return None
            self.node_configs[node] = config
            return ev.KubeletConfigObserved(node=node, config=config)

        return [c for c in await asyncio.gather(*(one(n) for n in nodes)) if c is not None]

    def _drain(self) -> list[msgspec.Struct]:
        out: list[msgspec.Struct] = []
        while True:
            try:
                seen = self._queue.get_nowait()
            except queue.Empty:
                return out
            out += self._seen(seen)

    # -- the recording ---------------------------------------------------------------------
    async def record(
        self,
        stop: asyncio.Event,
        *,
        duration: float | None = None,
        progress: Callable[[Tick], None] | None = None,
    ) -> Recorded:
        """Record until ``stop`` is set (or for ``duration`` seconds of wall-clock)."""
        resumed = await self._resume()
        result = Recorded(self.run, resumed)
        listed = await asyncio.to_thread(self._list_all)
        events = await asyncio.to_thread(self._list_events)
        if resumed:
            since = self.last_t
            changes: list[msgspec.Struct] = [ev.RecordingResumed(since=since, reason="recording started again")]
            for plural, (items, _) in listed.items():
                changes += self._difference(plural, items)
            if events is not None:
                changes += self._events_seen(Seen("events", "listed", events[0]))
            t = self._now()
            first = self._envelopes(t, changes)
        else:
            self.start = math.floor(self.clock())
            objects: list[msgspec.Struct] = []
            for items, _ in listed.values():
                for raw in items:
                    applied = self._apply(raw, initial=True)
                    if applied is not None:
                        objects.append(applied)
            nodes = self._nodes()
            config = await asyncio.to_thread(self._kubelet_config, nodes)
            self.kubelet_config = config
            if events is not None:  # (what the cluster did before: the evidence an incident needs)
                objects += self._events_seen(Seen("events", "applied", events[0]))
            started = ev.ScenarioStarted(
                name=self.name,
                start=datetime.fromtimestamp(self.start, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                duration=0,
                kubelet_config=config,
                node_order=nodes,
                source=f"{SOURCE_PREFIX}{self.client.api.server}",
            )
            self.last_t = 0
            first = self._envelopes(0, [started], first=0) + self._envelopes(0, objects)
        result.events += await self.store.append_batch(first)
        stop_watching = self._stop_watching
        watchers = [
            Watcher(
                self.client,
                plural,
                path,
                listed[plural][1] if plural in listed else events[1] if events is not None else "",
                self._queue,
                stop_watching,
                read_timeout=self.read_timeout,
                retry_wait=min(self.interval, 5.0),
            )
            for plural, path in [*RESOURCES, ("events", EVENTS_PATH)]
            if plural in listed or (plural == "events" and events is not None)
        ]
        for w in watchers:
            w.start()
        deadline = None if duration is None else time.monotonic() + duration
        pool = ThreadPoolExecutor(max_workers=self.concurrency * 2, thread_name_prefix="stats")
        try:
            while not stop.is_set():
                tick_began = time.monotonic()
                nodes = self._nodes()
                if result.ticks % self.configz_every == 0:
                    stats, configs = await asyncio.gather(self._scrape(pool, nodes), self._configz(pool, nodes))
                else:
                    stats, configs = await self._scrape(pool, nodes), []
                changes = self._drain() + configs
                t = self._now()
                result.events += await self.store.append_batch(self._envelopes(t, [*changes, *stats]))
                result.ticks += 1
                if progress is not None:
                    gaps = [s.node for s in stats if isinstance(s, ev.StatsMissed)]
                    seen = sum(isinstance(c, ev.ClusterEventObserved | ev.KubeletConfigObserved) for c in changes)
                    progress(Tick(t, len(nodes), len(nodes) - len(gaps), gaps, len(changes) - seen, self.notes, seen))
                result.notes += [n for n in self.notes if n not in result.notes]
                self.notes = []
                left = self.interval - (time.monotonic() - tick_began)
                if deadline is not None:
                    if time.monotonic() >= deadline:
                        break
                    left = min(left, deadline - time.monotonic())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), max(0.0, left))
        finally:
            stop_watching.set()
            pool.shutdown(wait=False, cancel_futures=True)
        return result

"""``metrics.k8s.io/v1beta1`` at an instant: what each node and pod used, as metrics-server
would have served it then, so that ``kubectl top nodes|pods`` reads the run.

metrics-server serves the kubelet's last scrape; here it is the node's last observation at
or before the instant (one housekeeping pass of its eviction manager, the Summary it read):

* a node's ``memory`` is that observation's node working set, as stored;
* a pod's ``memory`` is its containers' working sets in that observation. A recorded
  (``stats``) observation is stored whole and read as it is; a derived one (closed loop)
  stored with ``--store-observations full`` is read too (runs stored before a tick's
  observations travelled together told them as changes from the node's last whole one:
  folded forward). Otherwise a derived observation is stored
  without its pods; their stats are a pure function of the stored inputs, so they are
  worked out again here the way the stats collector worked them out
  (``node_sim/stats.plan_pod``: the pod's ``usage`` series, evaluated at the
  observation's instant), a container not running then (waiting to restart after an OOM
  kill, or terminated) holding none.

ledgerlet models no CPU use: ``usage`` carries ``memory`` only (kubectl then prints
``0m`` for CPU). Only running pods are listed, as metrics-server lists them;
``timestamp`` is the observation's instant and ``window`` the time since the node's
observation before it (its housekeeping interval).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import decode_data, node_stream
from ledgerlet_core.model.annotations import WORKLOAD_ANNOTATION
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND, format_duration
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.quantity import Format, Quantity
from ledgerlet_core.model.summary import PodStats
from ledgerlet_core.model.usage import PodUsage, parse_pod_usage
from ledgerlet_core.node_sim.stats import plan_pod
from ledgerlet_services.audit.kube_api.meta import Instant, rfc3339

if TYPE_CHECKING:
    from ledgerlet_services.audit.kube_api.reader import KubeReader, Query

#: how far back a node's last observation is looked for (a housekeeping interval is 10 s)
LOOKBACK: Final = 5 * 60 * SECOND
NANO: Final = 10**9


def _working_sets(pod: PodStats) -> dict[str, int]:
    return {c.name: (c.memory.working_set_bytes or 0) if c.memory else 0 for c in pod.containers}


class Observation:
    """A node's last observation at or before an instant, and its pods' working sets."""

    def __init__(self, env: Envelope, previous_t: int | None, pods: dict[str, dict[str, int]] | None) -> None:
        data = decode_data(env)
        self.t = env.t
        self.window = env.t - previous_t if previous_t is not None else 10 * SECOND
        self.node_memory = data.summary.node.memory.working_set_bytes if data.summary.node.memory else None
        #: pod key -> container name -> working set, when the run stored the observation's
        #: pods (None: stored without them, to be worked out again)
        self.pods = pods


def stored_pods(observations: Sequence[Envelope]) -> dict[str, dict[str, int]] | None:
    """The pods of the last of a node's ``observations`` (in order), as stored: whole, or
    as a change from the one before (``NodeObserved.podsDelta``), folded forward from the
    last one stored whole; None if it was stored without them (or no whole one precedes)."""
    decoded = [decode_data(e) for e in observations]
    if not decoded or decoded[-1].pods_omitted:
        return None
    whole = max((n for n, d in enumerate(decoded) if not d.pods_omitted and not d.pods_delta), default=None)
    if whole is None:
        return None
    pods = {p.key: _working_sets(p) for p in decoded[whole].summary.pods}
    for d in decoded[whole + 1 :]:
        if d.pods_omitted or not d.pods_delta:
            return None  # (a run stores all its observations one way)
        for key, changed in d.pods_changed.items():
            pods[key] = _working_sets(changed)
        for key in d.pods_gone:
            pods.pop(key, None)
    return pods


def _usage_for(pod: Pod, entries: Mapping[str, dict[str, Any]]) -> PodUsage | None:
    """The ``usage`` entry a pod's stats come from, as the stats collector picks it
    (``node_sim/machines._usage_for``): the pod's own, its owner's, then its Deployment's."""
    key = f"{pod.metadata.namespace}/{pod.metadata.name}"
    raw = entries.get(key)
    if raw is None:
        for ref in pod.metadata.owner_references:
            raw = entries.get(f"{pod.metadata.namespace}/{ref.kind}/{ref.name}")
            if raw is not None:
                key = f"{pod.metadata.namespace}/{ref.kind}/{ref.name}"
                break
    if raw is None:
        workload = pod.metadata.annotations.get(WORKLOAD_ANNOTATION)
        if workload:
            key = f"{pod.metadata.namespace}/{workload}"
            raw = entries.get(key)
    return parse_pod_usage(raw, f"usage.{key}") if raw is not None else None


def _running_containers(pod: Mapping[str, Any]) -> set[str]:
    return {
        str(c.get("name", ""))
        for c in pod.get("status", {}).get("containerStatuses") or []
        if "running" in (c.get("state") or {})
    }


class MetricsReader:
    """Observations and usage entries read once per request, for every object it answers."""

    def __init__(self, reader: KubeReader, i: Instant) -> None:
        self.reader = reader
        self.i = i
        self._observations: dict[str, Observation | None] = {}
        self._usage: dict[str, dict[str, Any]] | None = None

    async def observation(self, node: str) -> Observation | None:
        if node not in self._observations:
            self._observations[node] = await self._observation(node)
        return self._observations[node]

    async def _observation(self, node: str) -> Observation | None:
        async def read(t_from: int) -> list[Envelope]:
            rows = await self.reader.store.read_stream_window(
                self.i.run, node_stream(node), types=["NodeObserved"], t_from=t_from, t_to=self.i.t
            )
            return [r.envelope for r in rows]

        found = await read(max(0, self.i.t - LOOKBACK))
        if not found:
            return None
        pods = stored_pods(found)
        if pods is None and not decode_data(found[-1]).pods_omitted and found[0].t > 0:
            found = await read(0)  # told as changes since a whole one older than the window
            pods = stored_pods(found)
        before = found[-2].t if len(found) > 1 else None
        return Observation(found[-1], before, pods)

    async def usage(self) -> Mapping[str, dict[str, Any]]:
        if self._usage is None:
            rows = await self.reader.store.read_by_type(["UsageDeclared"], run=self.i.run, t_to=self.i.t)
            self._usage = {}
            for r in rows:  # a later entry for the same key replaces the earlier one
                data = json.loads(bytes(r.envelope.data))
                self._usage[str(data["key"])] = data["usage"]
        return self._usage

    async def node_metrics(self, node: Mapping[str, Any]) -> dict[str, Any] | None:
        name = str(node.get("metadata", {}).get("name", ""))
        seen = await self.observation(name)
        if seen is None or seen.node_memory is None:
            return None
        return self._object("NodeMetrics", node, seen, {"usage": {"memory": _ki(seen.node_memory)}})

    async def pod_metrics(self, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        if pod.get("status", {}).get("phase") != "Running":
            return None
        node = str(pod.get("spec", {}).get("nodeName", ""))
        seen = await self.observation(node) if node else None
        if seen is None:
            return None
        key = f"{pod.get('metadata', {}).get('namespace', '')}/{pod.get('metadata', {}).get('name', '')}"
        if seen.pods is not None:
            by_container = seen.pods.get(key)
            if by_container is None:
                return None  # not in that observation: started after it
        else:
            model = convert(pod, Pod)
            plan = plan_pod(model, _usage_for(model, await self.usage()))
            running = _running_containers(pod)
            by_container = {
                name: memory.at(seen.t) if memory is not None and name in running else 0
                for name, memory, _, _ in plan.containers
            }
        containers = [{"name": n, "usage": {"memory": _ki(m)}} for n, m in by_container.items()]
        return self._object("PodMetrics", pod, seen, {"containers": containers})

    def _object(self, kind: str, source: Mapping[str, Any], seen: Observation, body: dict[str, Any]) -> dict[str, Any]:
        meta = source.get("metadata", {})
        out_meta: dict[str, Any] = {"name": meta.get("name", ""), "creationTimestamp": rfc3339(self.i.start, self.i.t)}
        if meta.get("namespace"):
            out_meta["namespace"] = meta["namespace"]
        if meta.get("labels"):
            out_meta["labels"] = dict(meta["labels"])
        return {
            "kind": kind,
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": out_meta,
            "timestamp": rfc3339(self.i.start, seen.t),
            "window": format_duration(seen.window),
            **body,
        }


def _ki(value: int) -> str:
    """A byte count as metrics-server writes memory (``resource.NewQuantity(v, BinarySI)``)."""
    return str(Quantity(value * NANO, Format.BINARY_SI))


async def scan_metrics(
    reader: KubeReader, kind: str, i: Instant, q: Query, after: str | None, chunk: int
) -> AsyncIterator[tuple[str, dict[str, Any] | None]]:
    """The metrics of the nodes or running pods ``q`` selects, in key order after ``after``."""
    metrics = MetricsReader(reader, i)
    if kind == "NodeMetrics":
        async for key, node in reader.scan_nodes(i, q, after):
            yield key, await metrics.node_metrics(node) if node is not None else None
        return
    async for key, pod in reader.scan_pods(i, q, after, chunk):
        yield key, await metrics.pod_metrics(pod) if pod is not None else None


async def get_metrics(reader: KubeReader, kind: str, i: Instant, namespace: str, name: str) -> dict[str, Any] | None:
    metrics = MetricsReader(reader, i)
    if kind == "NodeMetrics":
        node = await reader.node(i, name)
        return await metrics.node_metrics(node) if node is not None else None
    pod = await reader.pod(i, namespace, name)
    return await metrics.pod_metrics(pod) if pod is not None else None

"""Scheduler loop: the API server's admission (the one authority on what exists), then
kube-scheduler's queue, filters, scores and DefaultPreemption. The deciding is
:mod:`ledgerlet_core.apiserver.server` and :mod:`ledgerlet_core.scheduling.scheduler`.

At a clock tick (once the instant's inputs are in) it admits what was applied or
created, in event order, and runs one scheduling cycle per ready pod.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ledgerlet_core.apiserver.admission import admitted_record
from ledgerlet_core.apiserver.priority_admission import AdmissionError
from ledgerlet_core.apiserver.server import ApiServer, not_found
from ledgerlet_core.cluster.view import ClusterView
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import PHASE_TIMERS, ClockTick, NodeStatusUpdated, ObjectCreated, PodStarted
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
from ledgerlet_core.controllers.workloads import replica_set_for
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import (
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ResourceQuota,
    RuntimeClass,
    Taint,
    Workload,
)
from ledgerlet_core.model.timefmt import parse_rfc3339
from ledgerlet_core.scheduling.config import SchedulerConfig
from ledgerlet_core.scheduling.disruption import workload_controllers
from ledgerlet_core.scheduling.scheduler import KubeScheduler
from ledgerlet_services.loops.base import Loop, for_node, on

SortKey = tuple[int, tuple[int, ...]]


@dataclass(slots=True)
class _Submitted:
    """An object applied or created after the start (or a class deleted): admitted at the
    next tick, in event order."""

    when: SortKey
    cause: str
    object: dict[str, Any] | None
    deleted: inp.ObjectDeleted | None = None


class Scheduler(Loop):
    name = "scheduler"
    topics = (INPUTS, CLOCK, DECISIONS)

    def __init__(self, cluster: ClusterView | None = None) -> None:
        super().__init__(cluster)
        self.apiserver = ApiServer()
        self.scheduler = KubeScheduler(self.name)
        self._submitted: list[_Submitted] = []

    def _wake(self, at: int, out: Emitter) -> None:
        self.scheduler.timers.want(at, PHASE_TIMERS, out)

    @on(inp.ScenarioStarted)
    def _run_started(self, env: Envelope, data: inp.ScenarioStarted, out: Emitter) -> None:
        self.scheduler.configure(convert(data.scheduler_config, SchedulerConfig))
        self.apiserver.configure(data.controller_config)

    # -- objects ---------------------------------------------------------------------------
    @on(inp.ObjectApplied)
    def _applied(self, env: Envelope, data: inp.LazyObjectApplied, out: Emitter) -> None:
        kind = data.kind
        if kind == "Node":
            entry = self.cluster.nodes[data.name]
            self.scheduler.cache.node_applied(entry.node, entry.config)
            self.scheduler.cluster_event(env.t, out)
        elif kind in ("Pod", "PriorityClass") and not data.initial:
            self._submit(env, data.as_dict(), out)
        elif kind == "Pod":
            self._initial_pod(self.cluster.decoded.object(env.id, data.object, Pod))
        elif kind == "PriorityClass":
            self.apiserver.class_exists(convert(data.as_dict(), PriorityClass))  # defaulted when decoded
        elif kind == "RuntimeClass":
            self.apiserver.runtime_class_applied(convert(data.as_dict(), RuntimeClass))
        elif kind == "ResourceQuota":
            self.apiserver.quota_applied(convert(data.as_dict(), ResourceQuota))
        elif kind == "PodDisruptionBudget":
            self.scheduler.cache.pdb_applied(convert(data.as_dict(), PodDisruptionBudget))
        elif kind in Workload.KINDS:
            self._workload(convert(data.as_dict(), Workload))

    def _workload(self, w: Workload) -> None:
        """A workload controller: its selector (default topology spreading) and scale
        (disruption budgets); a Deployment's current ReplicaSet is its own controller."""
        rs = replica_set_for(w).metadata.name if w.kind == "Deployment" else ""
        for c in workload_controllers(w, rs):
            self.scheduler.cache.controller_applied(c)

    @on(ObjectCreated)
    def _created(self, env: Envelope, data: ObjectCreated, out: Emitter) -> None:
        if data.object.get("kind") == "Pod":
            self._submit(env, data.object, out)

    def _submit(self, env: Envelope, obj: dict[str, Any], out: Emitter) -> None:
        self._submitted.append(_Submitted(env.sort_key(), env.id, obj))
        self._wake(env.t, out)

    def _initial_pod(self, pod: Pod) -> None:
        """Admitted long ago (when the scenario was loaded): charged to quota, bound or queued."""
        if pod.status.phase in ("Succeeded", "Failed"):
            return
        self.apiserver.charge(pod)
        if pod.spec.node_name:
            start = pod.status.start_time
            unix = self.cluster.settings.start_unix
            at = int((parse_rfc3339(start).timestamp() - unix) * SECOND) if start is not None else 0
            self.scheduler.running(pod, at)
        else:
            self.scheduler.enqueue(pod, 0, "")

    @on(inp.UsageDeclared, when=for_node)
    def _usage(self, env: Envelope, data: inp.UsageDeclared, out: Emitter) -> None:
        name = data.key.removeprefix("node/")
        entry = self.cluster.nodes.get(name) if data.key.startswith("node/") else None
        usage = entry.usage if entry is not None else None
        if usage is None:
            return
        images = {i.name: i.size for i in usage.images}
        if self.scheduler.cache.machine_declared(name, usage.capacity, images):
            self.scheduler.cluster_event(env.t, out)

    # -- nodes -------------------------------------------------------------------------------
    @on(NodeStatusUpdated)
    def _status(self, env: Envelope, data: NodeStatusUpdated, out: Emitter) -> None:
        if self.scheduler.cache.status_updated(data.node, data.allocatable):
            self.scheduler.cluster_event(env.t, out)

    @on(dec.NodeTaintAdded)
    def _plane_taint_added(self, env: Envelope, data: dec.NodeTaintAdded, out: Emitter) -> None:
        self.scheduler.cache.plane_taint_added(
            env.node or "", Taint(key=data.key, value=data.value, effect=data.effect)
        )

    @on(dec.NodeTaintRemoved)
    def _plane_taint_removed(self, env: Envelope, data: dec.NodeTaintRemoved, out: Emitter) -> None:
        self.scheduler.cache.plane_taint_removed(env.node or "", data.key, data.effect)
        self.scheduler.cluster_event(env.t, out)

    @on(inp.NodeTainted)
    def _tainted(self, env: Envelope, data: inp.NodeTainted, out: Emitter) -> None:
        self.scheduler.cache.tainted(data.node, Taint(key=data.key, value=data.value, effect=data.effect))

    @on(inp.NodeUntainted)
    def _untainted(self, env: Envelope, data: inp.NodeUntainted, out: Emitter) -> None:
        self.scheduler.cache.untainted(data.node, data.key, data.effect)
        self.scheduler.cluster_event(env.t, out)

    @on(inp.ObjectDeleted)
    def _deleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind == "Pod":
            key = object_key(data.namespace, data.name)
            if self.scheduler.deleted(key):  # never bound: gone at once
                self.apiserver.release(key)
        elif data.kind == "Node":
            self.scheduler.cache.node_deleted(data.name)
        elif data.kind == "PriorityClass":
            self._submitted.append(_Submitted(env.sort_key(), env.id, None, data))  # in order with class applies
            self._wake(env.t, out)
        elif data.kind in ("RuntimeClass", "ResourceQuota"):
            refused = self.apiserver.delete(data.kind, data.namespace, data.name)
            if refused is not None:
                out.decide(refused)
        elif data.kind == "PodDisruptionBudget" and not self.scheduler.cache.pdb_deleted(data.namespace, data.name):
            message = not_found(data.kind, data.namespace, data.name)
            out.decide(dec.ObjectRejected(kind=data.kind, name=data.name, reason="NotFound", message=message))
        elif data.kind in Workload.KINDS:
            self.scheduler.cache.controller_deleted(data.namespace, data.kind, data.name)

    # -- how pods start and end ---------------------------------------------------------------
    @on(PodStarted)
    def _started(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        if self.scheduler.cache.pod_node.get(data.pod) == data.node:
            self.scheduler.started(data.pod, env.t)

    def _gone(self, key: str, env: Envelope, out: Emitter) -> None:
        if self.scheduler.gone(key, env.t, out):
            self.apiserver.release(key)

    @on(dec.PodTerminated)
    def _terminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        self._gone(env.pod or "", env, out)

    @on(dec.PodForceDeleted)
    def _force_deleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self._gone(env.pod or "", env, out)

    @on(dec.PodRejected)
    def _rejected(self, env: Envelope, data: dec.PodRejected, out: Emitter) -> None:
        if data.admitter == "kubelet":
            self._gone(env.pod or "", env, out)

    @on(dec.OOMKilled)
    def _oom_killed(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        if data.pod_failed:
            self._gone(env.pod or "", env, out)

    @on(dec.PodEvicted)
    def _evicted(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
        self.scheduler.terminating(env.pod or "")

    # -- admission, then scheduling --------------------------------------------------------------
    @on(ClockTick)
    def _tick(self, env: Envelope, data: ClockTick, out: Emitter) -> Iterator[None] | None:
        """Admission, then a cycle per pod ready (a long pass: it yields now and then)."""
        self.scheduler.timers.fired(env.t, data.phase)
        if data.phase != PHASE_TIMERS:
            return None
        submitted, self._submitted = sorted(self._submitted, key=lambda s: s.when), []
        for s in submitted:
            self._admit(env, s, out)
        return self.scheduler.scheduling(env.id, env.t, out)

    def _admit(self, env: Envelope, s: _Submitted, out: Emitter) -> None:
        if s.deleted is not None:
            refused = self.apiserver.delete(s.deleted.kind, s.deleted.namespace, s.deleted.name)
            if refused is not None:
                out.decide(refused, causes=[s.cause])
            return
        assert s.object is not None
        if s.object.get("kind") == "PriorityClass":
            refused = self.apiserver.admit_class(convert(s.object, PriorityClass))
            if refused is not None:
                out.decide(refused)
            return
        raw = self.cluster.decoded.object(s.cause, s.object, Pod)
        if self.scheduler.gates_updated(raw, env.t, out):
            return  # an update of a gated pod: its gates may only be removed
        if self.scheduler.is_known(raw.key):
            return  # an update of a pod the API server has: spec.priority etc. are immutable
        try:
            pod = self.apiserver.admit_pod(raw)
        except AdmissionError as exc:
            refused_pod = dec.PodRejected(reason="Forbidden", message=exc.message, admitter="apiserver")
            out.decide(refused_pod, node=raw.spec.node_name or None, pod=raw.key, causes=[s.cause])
            return
        admitted = out.decide(admitted_record(pod), node=pod.spec.node_name or None, pod=raw.key, causes=[s.cause])
        if pod.spec.node_name:
            self.scheduler.running(pod, None)  # bound by its creator: no scheduling
            self.scheduler.pod_placed(env.t, out)
        else:
            self.scheduler.enqueue(pod, env.t, admitted, out)


__all__ = ["Scheduler"]

"""Controller manager loop: the workload controllers that create pods and replace gone
ones; the deciding is :mod:`ledgerlet_core.controllers.reconcile`.

It learns what exists from the cluster view (nodes, the pods the scenario lists) and
how its pods end from the loops that end them; it creates pods as their templates say
and leaves admission to the API server.
"""

from __future__ import annotations

from ledgerlet_core.cluster.view import ClusterView, LiveTaints, NodeObjects
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import PHASE_TIMERS, ClockTick, PodStarted
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
from ledgerlet_core.controllers.reconcile import PodState, WorkloadControllers
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.model.k8s.objects import Pod, Workload
from ledgerlet_services.loops.base import Loop, on


class ControllerManager(Loop):
    name = "controller-manager"
    topics = (INPUTS, CLOCK, DECISIONS)

    def __init__(self, cluster: ClusterView | None = None) -> None:
        super().__init__(cluster)
        self.controllers = WorkloadControllers(self.name)

    # -- objects -----------------------------------------------------------------------
    @on(inp.ObjectApplied)
    def _applied(self, env: Envelope, data: inp.LazyObjectApplied, out: Emitter) -> None:
        kind = data.kind
        if kind in Workload.KINDS:
            self.controllers.workload_applied(self.cluster.decoded.object(env.id, data.object, Workload))
        elif kind == "Pod" and data.initial:
            self.controllers.adopt(
                self.cluster.decoded.object(env.id, data.object, Pod)
            )  # terminated ones too: they are its failures
        elif kind != "Node":
            return
        self.controllers.changed(env.t, out)

    @on(inp.ObjectDeleted)
    def _deleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind in Workload.KINDS:
            self.controllers.workload_deleted(data.namespace or "default", data.kind, data.name)

    # -- how pods end --------------------------------------------------------------------
    @on(dec.PodEvicted)
    def _evicted(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
        self.controllers.ended(env.pod or "", PodState.FAILED, env.sort_key(), out)

    @on(dec.PodRejected)
    def _rejected(self, env: Envelope, data: dec.PodRejected, out: Emitter) -> None:
        if data.admitter == "kubelet":
            self.controllers.rejected_by_kubelet(env.pod or "", env.sort_key(), out)
        elif data.admitter == "apiserver":
            self.controllers.refused_by_apiserver(env.pod or "", env.t, out)

    @on(dec.OOMKilled)
    def _oom_killed(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        if data.pod_failed:
            self.controllers.ended(env.pod or "", PodState.FAILED, env.sort_key(), out)

    @on(dec.PodTerminated)
    def _terminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        self.controllers.ended(env.pod or "", PodState.GONE, env.sort_key(), out)

    @on(dec.PodPreempted)
    def _preempted(self, env: Envelope, data: dec.PodPreempted, out: Emitter) -> None:
        # deleted by the scheduler: no longer active for its owner (FilterActivePods), though
        # a StatefulSet waits for it to be gone before it reuses the name
        self.controllers.ended(env.pod or "", PodState.FAILED, env.sort_key(), out)

    @on(dec.PodForceDeleted)
    def _force_deleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self.controllers.ended(env.pod or "", PodState.GONE, env.sort_key(), out)

    @on(PodStarted)
    def _started(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        self.controllers.started(data.pod, data.uid, env.t, out)

    # -- node taints: where DaemonSets may run --------------------------------------------------
    @on(dec.NodeTaintAdded)
    def _plane_taint_added(self, env: Envelope, data: dec.NodeTaintAdded, out: Emitter) -> None:
        self.controllers.taints_changed(env.t, out)

    @on(dec.NodeTaintRemoved)
    def _plane_taint_removed(self, env: Envelope, data: dec.NodeTaintRemoved, out: Emitter) -> None:
        self.controllers.taints_changed(env.t, out)

    @on(inp.NodeTainted)
    def _tainted(self, env: Envelope, data: inp.NodeTainted, out: Emitter) -> None:
        self.controllers.taints_changed(env.t, out)

    @on(inp.NodeUntainted)
    def _untainted(self, env: Envelope, data: inp.NodeUntainted, out: Emitter) -> None:
        self.controllers.taints_changed(env.t, out)

    # -- the work, once the instant's inputs are in -------------------------------------------
    @on(ClockTick)
    def _tick(self, env: Envelope, data: ClockTick, out: Emitter) -> None:
        self.controllers.timers.fired(env.t, data.phase)
        if data.phase == PHASE_TIMERS:
            pods, submitted = self.cluster.pods, self.cluster.submitted
            self.controllers.sync(
                env.t,
                NodeObjects(self.cluster),
                out,
                LiveTaints(self.cluster),
                lambda key: key in pods or key in submitted,
            )


__all__ = ["ControllerManager"]

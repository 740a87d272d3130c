"""Out-of-service controller loop: what kube-controller-manager does about a node that
went away (node lifecycle, taint eviction, PodGC, attach-detach); the deciding is
:mod:`ledgerlet_core.controllers.node_loss_controllers`.
"""

from __future__ import annotations

from ledgerlet_core.cluster.view import ClusterView
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import PHASE_TIMERS, ClockTick, PodStarted
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
from ledgerlet_core.controllers.node_loss_controllers import NodeLossControllers, Settings
from ledgerlet_core.controllers.podgc import EVICTED_REASON
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.model.duration import parse_duration
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import Pod, Taint
from ledgerlet_services.loops.base import Loop, on

#: ``PodTerminated`` reasons after which the pod stays in the API, Failed (the kubelet's
#: eviction, the graceful node shutdown); the others are deletions
STAYS_FAILED = frozenset({"Evicted", "NodeShutdown"})


class OutOfServiceController(Loop):
    name = "out-of-service-controller"
    topics = (INPUTS, CLOCK, DECISIONS)

    def __init__(self, cluster: ClusterView | None = None) -> None:
        super().__init__(cluster)
        self.controllers = NodeLossControllers(self.name)

    @on(inp.ScenarioStarted)
    def _started_run(self, env: Envelope, data: inp.ScenarioStarted, out: Emitter) -> None:
        ctl = data.controller_config
        self.controllers.settings = Settings(
            monitor_grace=parse_duration(str(ctl.get("nodeMonitorGracePeriod", "40s"))),
            disable_force_detach_on_timeout=bool(ctl.get("disableForceDetachOnTimeout", False)),
            terminated_pod_gc_threshold=int(ctl.get("terminatedPodGCThreshold", 12500)),
            start=self.cluster.settings.start,
        )

    # -- objects and pods ------------------------------------------------------------------
    @on(inp.ObjectApplied)
    def _applied(self, env: Envelope, data: inp.LazyObjectApplied, out: Emitter) -> None:
        kind = data.kind
        if kind == "Node":
            entry = self.cluster.nodes[data.name]
            frequency = entry.config.node_status_update_frequency
            spec = entry.node.spec
            self.controllers.node_applied(entry.name, list(spec.taints), frequency, spec.unschedulable, env.t, out)
        elif kind == "Pod" and data.initial:
            pod = self.cluster.pods.get(env.pod or "")
            if pod is None:  # not among the pods that exist: terminated already, PodGC counts it
                self.controllers.terminated_applied(self.cluster.decoded.object(env.id, data.object, Pod), env.t, out)
            elif pod.spec.node_name:
                self.controllers.pod_running(pod, pod.spec.node_name, self.cluster.volumes_of(pod))

    @on(dec.PodAdmitted)
    def _admitted(self, env: Envelope, data: dec.PodAdmitted, out: Emitter) -> None:
        self.controllers.pod_admitted(env.pod or "", env.t)

    @on(dec.PodRejected)
    def _rejected(self, env: Envelope, data: dec.PodRejected, out: Emitter) -> None:
        if data.admitter == "kubelet":
            key = env.pod or ""
            evicted = data.reason == EVICTED_REASON
            self.controllers.pod_refused(
                self.cluster.pods.get(key), key, env.node or "", evicted=evicted, now=env.t, out=out
            )

    @on(PodStarted)
    def _pod_started(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        pod = self.cluster.pods.get(data.pod)
        if pod is not None:
            self.controllers.pod_started(pod, data.node, self.cluster.volumes_of(pod), env.t, out)

    @on(dec.PodTerminated)
    def _terminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        if data.reason in STAYS_FAILED:  # Failed, still in the API: PodGC counts it
            self.controllers.pod_ended(env.pod or "", evicted=data.reason == EVICTED_REASON, now=env.t, out=out)
        else:
            self.controllers.pod_gone(env.pod or "", env.t, out)

    @on(dec.PodForceDeleted)
    def _force_deleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self.controllers.pod_force_deleted(env.pod or "", env.t, out)

    @on(dec.OOMKilled)
    def _oom_killed(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        if data.pod_failed:
            self.controllers.pod_ended(env.pod or "", evicted=False, now=env.t, out=out)

    @on(dec.PodEvicted)
    def _evicted(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
        self.controllers.pod_terminating(env.pod or "", env.id)

    @on(dec.PodPreempted)
    def _preempted(self, env: Envelope, data: dec.PodPreempted, out: Emitter) -> None:
        self.controllers.pod_terminating(env.pod or "", env.id, deleted=True)  # the scheduler deletes it

    @on(inp.ObjectDeleted)
    def _deleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind == "Pod":
            self.controllers.pod_deleted(object_key(data.namespace, data.name), env.id, env.t, out)
        elif data.kind == "Node":
            self.controllers.node_deleted(data.name, env.t, out)

    # -- node health and taints ------------------------------------------------------------
    @on(dec.NodeConditionChanged)
    def _condition(self, env: Envelope, data: dec.NodeConditionChanged, out: Emitter) -> None:
        if data.condition == "Ready":
            self.controllers.ready_changed(env.node or "", data.status, env.t, out)

    @on(inp.NodePoweredOff)
    def _powered_off(self, env: Envelope, data: inp.NodePoweredOff, out: Emitter) -> None:
        self.controllers.stopped(data.node, env.t, out)

    @on(dec.NodeShutdownCompleted)
    def _shut_down(self, env: Envelope, data: dec.NodeShutdownCompleted, out: Emitter) -> None:
        self.controllers.stopped(env.node or "", env.t, out)

    @on(inp.NodePoweredOn)
    def _powered_on(self, env: Envelope, data: inp.NodePoweredOn, out: Emitter) -> None:
        self.controllers.powered_on(data.node, env.t, out)

    @on(inp.NodeTainted)
    def _tainted(self, env: Envelope, data: inp.NodeTainted, out: Emitter) -> None:
        self.controllers.tainted(data.node, Taint(key=data.key, value=data.value, effect=data.effect), env.t, out)

    @on(inp.NodeUntainted)
    def _untainted(self, env: Envelope, data: inp.NodeUntainted, out: Emitter) -> None:
        self.controllers.untainted(data.node, data.key, data.effect, env.t, out)

    @on(ClockTick)
    def _tick(self, env: Envelope, data: ClockTick, out: Emitter) -> None:
        self.controllers.timers.fired(env.t, data.phase)
        if data.phase == PHASE_TIMERS:
            self.controllers.tick(env.t, out)


__all__ = ["OutOfServiceController"]

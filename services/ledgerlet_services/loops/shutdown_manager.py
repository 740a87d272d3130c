"""Shutdown manager loop: the kubelet's graceful node shutdown, and its node going down
and up (the deciding is :mod:`ledgerlet_core.kubelet.shutdown_manager`).

It follows which pods are active on each node (running from the start, or started by
their kubelet, until told to stop), starts a shutdown at the tick after the OS asks,
and completes it when the plan's last group ends.
"""

from __future__ import annotations

from ledgerlet_core.cluster.view import ClusterView
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import PHASE_TIMERS, ClockTick, PodStarted
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
from ledgerlet_core.kubelet.shutdown_manager import ShutdownManager as Machine
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_services.loops.base import Loop, on


class ShutdownManager(Loop):
    name = "shutdown-manager"
    topics = (INPUTS, CLOCK, DECISIONS)

    def __init__(self, cluster: ClusterView | None = None) -> None:
        super().__init__(cluster)
        self.machine = Machine()
        self.timers = Timers(self.name)

    # -- which pods are active where ---------------------------------------------------
    @on(inp.ObjectApplied)
    def _applied(self, env: Envelope, data: inp.LazyObjectApplied, out: Emitter) -> None:
        kind = data.kind
        if kind == "Node":
            self.machine.node_added(data.name)
        elif kind == "Pod" and data.initial:
            pod = self.cluster.pods.get(env.pod or "")
            if pod is not None and pod.spec.node_name:
                self.machine.active(pod.spec.node_name, pod)

    @on(PodStarted)
    def _started(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        pod = self.cluster.pods.get(data.pod)
        if pod is not None:
            self.machine.active(data.node, pod)

    @on(dec.PodEvicted)
    def _evicted(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
        self.machine.inactive(env.pod or "")

    @on(dec.PodPreempted)
    def _preempted(self, env: Envelope, data: dec.PodPreempted, out: Emitter) -> None:
        self.machine.inactive(env.pod or "")

    @on(dec.PodTerminated)
    def _terminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        self.machine.inactive(env.pod or "")

    @on(dec.PodForceDeleted)
    def _force_deleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self.machine.inactive(env.pod or "")

    @on(dec.OOMKilled)
    def _oom_killed(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        if data.pod_failed:
            self.machine.inactive(env.pod or "")

    @on(inp.ObjectDeleted)
    def _deleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind == "Pod":
            self.machine.inactive(object_key(data.namespace, data.name))

    # -- shutdown and power ---------------------------------------------------------------
    @on(inp.NodeShutdownRequested)
    def _shutdown_requested(self, env: Envelope, data: inp.NodeShutdownRequested, out: Emitter) -> None:
        if self.machine.requested(data.node, env.t):
            self.timers.want(env.t, PHASE_TIMERS, out)

    @on(inp.NodePoweredOff)
    def _powered_off(self, env: Envelope, data: inp.NodePoweredOff, out: Emitter) -> None:
        self.machine.powered_off(data.node)

    @on(inp.NodePoweredOn)
    def _powered_on(self, env: Envelope, data: inp.NodePoweredOn, out: Emitter) -> None:
        ready = self.machine.powered_on(data.node)
        if ready is not None:
            out.decide(ready, node=data.node)

    @on(ClockTick)
    def _tick(self, env: Envelope, data: ClockTick, out: Emitter) -> None:
        self.timers.fired(env.t, data.phase)
        if data.phase != PHASE_TIMERS:
            return
        for name, starting in self.machine.due(env.t):
            if starting:
                self._start(env, name, out)
            else:
                self._complete(env, name, out)

    def _start(self, env: Envelope, name: str, out: Emitter) -> None:
        config = self.cluster.nodes[name].config
        started = self.machine.start(name, env.t, config, self.cluster.settings.start_unix)
        if started.ready is None:  # no graceful configuration: the node just stops
            out.decide(started.started, node=name)
            self._complete(env, name, out)
            return
        out.decide(started.ready, node=name)
        self.machine.started(name, out.decide(started.started, node=name))
        # completed at a tick of its own, even at this instant: the kubelet's kills (due now
        # too) run first, so pods that exit at once are not left Terminating by the halt
        self.timers.want(started.ends_at, PHASE_TIMERS, out)

    def _complete(self, env: Envelope, name: str, out: Emitter) -> None:
        record, started_id = self.machine.complete(name, env.t, self.cluster.settings.start_unix)
        out.decide(record, node=name, causes=[started_id] if started_id else None)


__all__ = ["ShutdownManager"]

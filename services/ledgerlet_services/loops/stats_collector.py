"""Stats collector loop: one observation per node per housekeeping pass, and the node's
kernel (OOM kills); the deciding is :mod:`ledgerlet_core.node_sim.machines`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from ledgerlet_core.cluster.view import ClusterView
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import ClockTick, PodStarted
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.membership import Membership
from ledgerlet_core.node_sim.machines import Machines
from ledgerlet_services.loops.base import Loop, on


class Collector(Loop):
    name = "stats-collector"
    topics = (INPUTS, CLOCK, DECISIONS)

    def __init__(self, cluster: ClusterView | None = None) -> None:
        super().__init__(cluster)
        self.machines = Machines(self.name, self.cluster.pods, self._start)

    splittable = True

    def set_membership(self, member: Membership) -> None:
        self.machines.member = member

    def set_quiet_nodes(self, nodes: frozenset[str]) -> None:
        self.machines.quiet = nodes

    @on(inp.ScenarioStarted)
    def _run_started(self, env: Envelope, data: inp.ScenarioStarted, out: Emitter) -> None:
        self.machines.whole = data.observations == inp.OBSERVATIONS_WHOLE

    def _start(self) -> datetime:
        """The run's wall-clock start (a method, not a closure: a snapshot pickles the loop)."""
        return self.cluster.settings.start

    @on(inp.ObjectApplied)
    def _applied(self, env: Envelope, data: inp.LazyObjectApplied, out: Emitter) -> None:
        kind = data.kind
        if kind == "Node":
            entry = self.cluster.nodes[data.name]
            self.machines.node_applied(entry.node, entry.config)
        elif kind == "Pod" and data.initial:
            pod = self.cluster.pods.get(env.pod or "")
            if pod is not None:
                self.machines.running(pod)

    @on(PodStarted)
    def _started(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        self.machines.pod_started(env, data, out)

    @on(inp.UsageDeclared)
    def _usage(self, env: Envelope, data: inp.UsageDeclared, out: Emitter) -> None:
        entry = self.cluster.nodes.get(data.key.removeprefix("node/"))
        self.machines.usage_declared(env, data, entry.usage if entry is not None else None, out)

    @on(inp.StatsReported)
    def _stats(self, env: Envelope, data: inp.StatsReported, out: Emitter) -> None:
        self.machines.stats_reported(env, data, out)

    @on(dec.PodTerminated)
    def _terminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        self.machines.pod_terminated(env, data, out)

    @on(dec.PodForceDeleted)
    def _force_deleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self.machines.pod_force_deleted(env, data, out)

    @on(inp.NodePoweredOff)
    def _powered_off(self, env: Envelope, data: inp.NodePoweredOff, out: Emitter) -> None:
        self.machines.node_powered_off(env, data, out)

    @on(dec.NodeShutdownCompleted)
    def _shut_down(self, env: Envelope, data: dec.NodeShutdownCompleted, out: Emitter) -> None:
        self.machines.node_shut_down(env, data, out)

    @on(inp.NodePoweredOn)
    def _powered_on(self, env: Envelope, data: inp.NodePoweredOn, out: Emitter) -> None:
        self.machines.node_powered_on(env, data, out)

    @on(dec.NodeReclaimed)
    def _reclaimed(self, env: Envelope, data: dec.NodeReclaimed, out: Emitter) -> None:
        self.machines.node_reclaimed(env, data, out)

    @on(dec.ImageGarbageCollected)
    def _images_collected(self, env: Envelope, data: dec.ImageGarbageCollected, out: Emitter) -> None:
        self.machines.images_collected(env, data, out)

    @on(ClockTick)
    def _tick(self, env: Envelope, data: ClockTick, out: Emitter) -> Iterator[None]:
        """A long pass over every node: the shell sends each observation as it comes."""
        return self.machines.tick(env, data, out)


__all__ = ["Collector"]

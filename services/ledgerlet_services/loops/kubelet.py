"""The kubelet loop (the ``eviction-manager`` service): node-pressure eviction, one pass
per observation, and everything else the kubelet decides on its node. The deciding is
:mod:`ledgerlet_core.kubelet.kubelet` (admission, pod workers, node status, image GC)
over :func:`ledgerlet_core.kubelet.eviction.manager.synchronize`.
"""

from __future__ import annotations

from collections.abc import Callable

from ledgerlet_core.cluster.view import ClusterView
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import (
    PHASE_STATUS,
    PHASE_TIMERS,
    ClockTick,
    LazyNodeObserved,
    NodeObserved,
    NodesObserved,
    PodDeletionRequested,
    decode_lazy_observation,
)
from ledgerlet_core.contracts.observed import handed_observed
from ledgerlet_core.contracts.order import ORDER_BY_NODE
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS, OBSERVATIONS
from ledgerlet_core.kubelet.kubelet import Kubelet, StopDeleted, StopPreempted
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.membership import Membership
from ledgerlet_services.loops.base import Loop, RunRefused, for_node, on


class KubeletLoop(Loop):
    """The kubelet of every node (its service keeps the name ``eviction-manager``, what it
    was first): node-pressure eviction and the rest of what a kubelet decides.

    Split between members, each is the kubelet of its own nodes only: a run
    split so must be ordered by node (``ScenarioStarted.orderScheme``, contracts/order.py),
    which ``ledgerlet drive --members eviction-manager=N`` asks for; a member skips any
    other run whole, saying why (:class:`RunRefused`)."""

    name = "eviction-manager"
    topics = (INPUTS, CLOCK, OBSERVATIONS, DECISIONS)
    splittable = True
    node_scoped = True

    def __init__(self, cluster: ClusterView | None = None) -> None:
        super().__init__(cluster)
        self.kubelet = Kubelet(self.name, self.cluster.pods, self.cluster.submitted)

    @classmethod
    def keeper(cls, member: Membership) -> Callable[[str | None], bool]:
        return member.keeps_own

    def set_membership(self, member: Membership) -> None:
        self.kubelet.member = member

    def node_place(self) -> Callable[[str], int] | None:
        return self.kubelet.places.__getitem__ if self.cluster.settings.order_scheme == ORDER_BY_NODE else None

    @on(inp.ScenarioStarted)
    def _started(self, env: Envelope, data: inp.ScenarioStarted, out: Emitter) -> None:
        member = self.kubelet.member
        if member is not None and data.order_scheme != ORDER_BY_NODE:
            raise RunRefused(
                f"eviction-manager member {member.index + 1}/{member.count}: run {env.run} is not ordered by "
                "node (ScenarioStarted.orderScheme), so its events cannot be shared out: drive it with "
                f"--members eviction-manager={member.count}"
            )

    # -- nodes and pods ------------------------------------------------------------------
    @on(inp.ObjectApplied)
    def _applied(self, env: Envelope, data: inp.LazyObjectApplied, out: Emitter) -> None:
        kind = data.kind
        if kind == "Node":
            entry = self.cluster.nodes[data.name]
            self.kubelet.node_applied(entry.node, entry.config, out, place=entry.order)
        elif kind == "Pod" and data.initial:
            pod = self.cluster.pods.get(env.pod or "")
            if pod is not None:
                self.kubelet.running(pod)
        elif kind == "Pod":
            self.kubelet.updated(env.pod or "")

    @on(inp.UsageDeclared, when=for_node)
    def _usage(self, env: Envelope, data: inp.UsageDeclared, out: Emitter) -> None:
        entry = self.cluster.nodes.get(data.key.removeprefix("node/")) if data.key.startswith("node/") else None
        if entry is not None and entry.usage is not None:
            self.kubelet.machine_declared(entry.name, dict(entry.usage.capacity.items()), out)

    @on(dec.PodAdmitted)
    def _admitted(self, env: Envelope, data: dec.PodAdmitted, out: Emitter) -> None:
        self.kubelet.admitted(env.pod or "", env.sort_key(), env.id, out)

    @on(dec.PodScheduled)
    def _scheduled(self, env: Envelope, data: dec.PodScheduled, out: Emitter) -> None:
        self.kubelet.scheduled(env.pod or "", env.sort_key(), env.id, out)

    # -- stopping pods ---------------------------------------------------------------------
    @on(inp.ObjectDeleted)
    def _deleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind == "Pod":
            self.kubelet.deleted(data, env.sort_key(), env.id, out)

    @on(PodDeletionRequested)
    def _deletion_requested(self, env: Envelope, data: PodDeletionRequested, out: Emitter) -> None:
        self.kubelet.queue(StopDeleted(data), env.sort_key(), env.id, out)

    @on(dec.PodPreempted)
    def _preempted(self, env: Envelope, data: dec.PodPreempted, out: Emitter) -> None:
        """The scheduler deleted a victim: the kubelet stops it with its own grace period."""
        self.kubelet.queue(StopPreempted(env.pod or "", data), env.sort_key(), env.id, out)

    @on(dec.PodForceDeleted)
    def _force_deleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self.kubelet.force_deleted(env.pod or "")

    @on(dec.OOMKilled)
    def _oom_killed(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        if data.pod_failed:
            self.kubelet.failed(env.pod or "")

    # -- shutdown and power -------------------------------------------------------------------
    @on(inp.NodeShutdownRequested)
    def _shutdown_requested(self, env: Envelope, data: inp.NodeShutdownRequested, out: Emitter) -> None:
        self.kubelet.shutdown_requested(data.node)

    @on(dec.NodeShutdownStarted)
    def _shutdown_started(self, env: Envelope, data: dec.NodeShutdownStarted, out: Emitter) -> None:
        self.kubelet.shutdown_started(env.node or "", data, env.id, out)

    @on(dec.NodeShutdownCompleted)
    def _shut_down(self, env: Envelope, data: dec.NodeShutdownCompleted, out: Emitter) -> None:
        self.kubelet.went_off(env.node or "")

    @on(inp.NodePoweredOff)
    def _powered_off(self, env: Envelope, data: inp.NodePoweredOff, out: Emitter) -> None:
        self.kubelet.went_off(data.node)

    @on(inp.NodePoweredOn)
    def _powered_on(self, env: Envelope, data: inp.NodePoweredOn, out: Emitter) -> None:
        self.kubelet.powered_on(data.node, env.sort_key(), env.id, out)

    # -- passes and the clock ------------------------------------------------------------------
    @on(NodeObserved, decode=decode_lazy_observation)
    def _observed(self, env: Envelope, data: LazyNodeObserved, out: Emitter) -> None:
        """The hot path: pods' stats are decoded only if the pass needs them (another
        member's node's not at all)."""
        if env.node in self.kubelet.nodes:
            self.kubelet.observed(data, out)

    @on(NodesObserved, decode=handed_observed)
    def _observed_together(self, env: Envelope, data: NodesObserved, out: Emitter) -> None:
        """A tick's observations: quiet passes over whole columns, the rest one by one."""
        self.kubelet.observed_together(data, out)

    @on(ClockTick)
    def _tick(self, env: Envelope, data: ClockTick, out: Emitter) -> None:
        self.kubelet.timers.fired(env.t, data.phase)
        if data.phase == PHASE_STATUS:
            self.kubelet.periodic(out)
        elif data.phase == PHASE_TIMERS:
            self.kubelet.tick(out)


__all__ = ["KubeletLoop"]

"""Shutdown manager: the kubelet's graceful node shutdown, and its node going down and up.

On a ``shutdown`` event the kubelet (holding a logind delay inhibitor) reports Ready
False with reason KubeletNotReady and message "node is shutting down", and kills the
node's active pods group by group (:mod:`ledgerlet_core.kubelet.graceful_shutdown`). The plan is
the ``NodeShutdownStarted`` decision; the kubelet's pod killer (the eviction manager
service) carries it out; ``NodeShutdownCompleted`` follows when the last group ends and
the machine then halts. Without a graceful configuration the shutdown is immediate: the
node just stops, as with ``powerOff``. ``powerOn`` brings the kubelet back: Ready True.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import PHASE_TIMERS, ClockTick, ObjectCreated, PodStarted
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
from ledgerlet_core.kubelet.config import KubeletConfig, config_for_node
from ledgerlet_core.kubelet.graceful_shutdown import (
    READY_MESSAGE,
    READY_REASON,
    ShutdownPod,
    period_requested,
    plan_shutdown,
    shutdown_groups,
)
from ledgerlet_core.loop.dispatch import Loop
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND, seconds
from ledgerlet_core.model.k8s.objects import Node, Pod
from ledgerlet_core.model.k8s.priority import pod_priority
from ledgerlet_core.model.timefmt import parse_rfc3339
from ledgerlet_core.scenario.load import exit_after_seconds
from ledgerlet_services.arriving_pods import ArrivingPods

READY_AGAIN_REASON = "KubeletReady"
READY_AGAIN_MESSAGE = "kubelet is posting ready status"


@dataclass(slots=True)
class _Node:
    config: KubeletConfig
    #: active pods in admission order
    pods: dict[str, Pod] = field(default_factory=dict)
    state: str = "up"  # up | shutting-down | off
    requested_at: int | None = None
    ends_at: int | None = None
    started_id: str = ""
    start_unix: float = 0.0


class ShutdownManager(Loop):
    name = "shutdown-manager"
    topics = (INPUTS, CLOCK, DECISIONS)

    def __init__(self) -> None:
        super().__init__()
        self.base_config: dict[str, Any] = {}
        self.start_unix = 0.0
        self.nodes: dict[str, _Node] = {}
        self.arriving = ArrivingPods()
        self.pod_node: dict[str, str] = {}
        self._shutting: set[str] = set()
        self.timers = Timers(self.name)

    def handle(self, env: Envelope, out: Emitter) -> None:
        handler = getattr(self, f"_on_{env.type}", None)
        if handler is not None:
            handler(env, decode_data(env), out)

    def _on_ScenarioStarted(self, env: Envelope, data: inp.ScenarioStarted, out: Emitter) -> None:
        self.base_config = data.kubelet_config
        self.start_unix = parse_rfc3339(data.start).timestamp()

    # -- which pods are active where ---------------------------------------------------
    def _on_ObjectApplied(self, env: Envelope, data: inp.ObjectApplied, out: Emitter) -> None:
        kind = data.object.get("kind")
        if kind == "Node":
            node = convert(data.object, Node)
            config = config_for_node(self.base_config, node.metadata.annotations)
            existing = self.nodes.get(node.metadata.name)
            if existing is None:
                self.nodes[node.metadata.name] = _Node(config)
            else:
                existing.config = config
        elif kind == "Pod":
            pod = convert(data.object, Pod)
            if data.initial:
                where = self.nodes.get(pod.spec.node_name)
                if where is not None and pod.status.phase not in ("Succeeded", "Failed"):
                    where.pods[pod.key] = pod
                    self.pod_node[pod.key] = pod.spec.node_name
            elif pod.key not in self.pod_node:
                self.arriving.arrived(pod)

    def _on_ObjectCreated(self, env: Envelope, data: ObjectCreated, out: Emitter) -> None:
        if data.object.get("kind") == "Pod":
            pod = convert(data.object, Pod)
            self.arriving.arrived(pod)

    def _on_PodAdmitted(self, env: Envelope, data: dec.PodAdmitted, out: Emitter) -> None:
        self.arriving.admitted(env.pod, data)

    def _on_PodStarted(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        pod = self.arriving.started(data.pod)
        node = self.nodes.get(data.node)
        if pod is not None and node is not None:
            node.pods[data.pod] = pod
            self.pod_node[data.pod] = data.node

    def _inactive(self, key: str | None) -> None:
        """The kubelet was told to stop it (or it failed): no longer an active pod."""
        node = self.nodes.get(self.pod_node.pop(key or "", ""))
        if node is not None:
            node.pods.pop(key or "", None)

    def _on_PodEvicted(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
        self._inactive(env.pod)

    def _on_PodPreempted(self, env: Envelope, data: dec.PodPreempted, out: Emitter) -> None:
        self._inactive(env.pod)

    def _on_PodTerminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        self._inactive(env.pod)

    def _on_PodForceDeleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self._inactive(env.pod)

    def _on_PodRejected(self, env: Envelope, data: dec.PodRejected, out: Emitter) -> None:
        self.arriving.refused(env.pod)

    def _on_OOMKilled(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        if data.pod_failed:
            self._inactive(env.pod)

    def _on_ObjectDeleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind == "Pod":
            self._inactive(f"{data.namespace or 'default'}/{data.name}")

    # -- shutdown and power ---------------------------------------------------------------
    def _on_NodeShutdownRequested(self, env: Envelope, data: inp.NodeShutdownRequested, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is None or node.state != "up":
            return
        node.state, node.requested_at = "shutting-down", env.t
        self._shutting.add(data.node)
        self.timers.want(env.t, PHASE_TIMERS, out)

    def _on_NodePoweredOff(self, env: Envelope, data: inp.NodePoweredOff, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is not None:
            node.state, node.requested_at, node.ends_at = "off", None, None
            self._shutting.discard(data.node)

    def _on_NodePoweredOn(self, env: Envelope, data: inp.NodePoweredOn, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is None or node.state != "off":
            return  # still up, or still shutting down: the button does nothing
        node.state, node.requested_at, node.ends_at, node.started_id = "up", None, None, ""
        out.emit(
            dec.NodeConditionChanged(
                condition="Ready", status="True", reason=READY_AGAIN_REASON, message=READY_AGAIN_MESSAGE
            ),
            node=data.node,
        )

    def _on_ClockTick(self, env: Envelope, data: ClockTick, out: Emitter) -> None:
        self.timers.fired(env.t, data.phase)
        if data.phase != PHASE_TIMERS:
            return
        # every service's timer tick comes here: only the nodes shutting down are looked at
        for name in [n for n in self.nodes if n in self._shutting]:
            node = self.nodes[name]
            if node.state == "shutting-down" and node.requested_at == env.t and node.ends_at is None:
                self._start(env, name, node, out)
            elif node.state == "shutting-down" and node.ends_at == env.t:
                self._complete(env, name, node, out)

    def _start(self, env: Envelope, name: str, node: _Node, out: Emitter) -> None:
        groups, source = shutdown_groups(node.config)
        unix = self.start_unix + env.t / SECOND
        if not groups:
            # "No graceful configuration specified, node shutdown will be immediate"
            out.emit(
                dec.NodeShutdownStarted(
                    graceful=False,
                    groups=[],
                    source=source,
                    message="no graceful shutdown configured: the node stops at once, its pods are not stopped",
                    start_time_seconds=unix,
                ),
                node=name,
            )
            node.ends_at = env.t
            self._complete(env, name, node, out)
            return
        pods = [
            ShutdownPod(
                key=p.key,
                priority=pod_priority(p),
                termination_grace=p.spec.termination_grace_period_seconds,
                exits_after=seconds(exit_after_seconds(p)),
            )
            for p in node.pods.values()
        ]
        plan = plan_shutdown(env.t, groups, pods)
        requested = period_requested(groups)
        logind = node.config.logind_inhibit_delay_max // SECOND
        message = "Shutdown manager detected shutdown event"
        if requested > logind:
            message += (
                f"; logind InhibitDelayMaxSec raised from {logind}s to {requested}s by the kubelet's "
                "drop-in /etc/systemd/logind.conf.d/99-kubelet.conf"
            )
        out.emit(
            dec.NodeConditionChanged(condition="Ready", status="False", reason=READY_REASON, message=READY_MESSAGE),
            node=name,
        )
        started = out.emit(
            dec.NodeShutdownStarted(
                graceful=True,
                groups=[
                    dec.ShutdownGroup(
                        priority=g.priority,
                        grace_period_seconds=g.seconds,
                        pods=g.pods,
                        start=g.start / SECOND if g.start is not None else None,
                        end=g.end / SECOND if g.end is not None else None,
                        ended_by=g.ended_by,
                        kills=[
                            dec.ShutdownKill(
                                pod=k.pod, at=k.at / SECOND, grace_period_seconds=k.grace, grace_from=k.grace_from
                            )
                            for k in g.kills
                        ],
                    )
                    for g in plan.groups
                ],
                period_requested_seconds=requested,
                inhibit_delay_max_seconds=max(logind, requested),
                source=source,
                message=message,
                start_time_seconds=unix,
            ),
            node=name,
        )
        node.started_id, node.start_unix = started.id, unix
        node.ends_at = plan.end
        if plan.end > env.t:
            self.timers.want(plan.end, PHASE_TIMERS, out)
        else:
            self._complete(env, name, node, out)

    def _complete(self, env: Envelope, name: str, node: _Node, out: Emitter) -> None:
        """The last group is done: the inhibitor lock is released and the machine halts."""
        node.state, node.ends_at = "off", None
        self._shutting.discard(name)
        out.emit(
            dec.NodeShutdownCompleted(
                start_time_seconds=node.start_unix or self.start_unix + env.t / SECOND,
                end_time_seconds=self.start_unix + env.t / SECOND,
            ),
            node=name,
            causes=[node.started_id] if node.started_id else None,
        )
        for key in list(node.pods):
            self.pod_node.pop(key, None)
        node.pods.clear()


__all__ = ["ShutdownManager"]

"""The kubelet's shutdown manager across nodes: which pods are active where, and each
node's way down and up (``nodeshutdown_manager_linux.go``).

On a shutdown request the kubelet reports Ready False ("node is shutting down") and
kills the node's active pods group by group (:mod:`.graceful_shutdown`); the plan is the
``NodeShutdownStarted`` decision, which the kubelet's pod worker carries out;
``NodeShutdownCompleted`` follows when the last group ends and the machine halts.
Without a graceful configuration, or when the manager could not start because logind
would not raise its inhibit delay (:mod:`.logind`), the node stops at once, its pods not
stopped. A power-on brings the kubelet back: Ready True.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.graceful_shutdown import (
    READY_MESSAGE,
    READY_REASON,
    ShutdownPod,
    period_requested,
    plan_shutdown,
    shutdown_groups,
)
from ledgerlet_core.kubelet.logind import inhibit_delay
from ledgerlet_core.kubelet.shutdown_records import shutdown_immediate, shutdown_started, shutdown_unmanaged
from ledgerlet_core.model.annotations import exit_after_seconds, kubelet_priority
from ledgerlet_core.model.duration import SECOND, seconds
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.model.k8s.priority import is_static_pod

READY_AGAIN_REASON = "KubeletReady"
READY_AGAIN_MESSAGE = "kubelet is posting ready status"


class Power(Enum):
    UP = "up"
    SHUTTING_DOWN = "shutting-down"
    OFF = "off"


@dataclass(slots=True)
class _Node:
    #: active pods in admission order
    pods: dict[str, Pod] = field(default_factory=dict)
    power: Power = Power.UP
    requested_at: int | None = None
    ends_at: int | None = None
    started_id: str = ""
    start_unix: float = 0.0


@dataclass(slots=True)
class Started:
    """A shutdown under way: Ready False (graceful only), the plan, and when it ends."""

    ready: dec.NodeConditionChanged | None
    started: dec.NodeShutdownStarted
    ends_at: int


class ShutdownManager:
    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}
        self._pod_node: dict[str, str] = {}
        self._shutting: set[str] = set()

    # -- which pods are active where --------------------------------------------------
    def node_added(self, name: str) -> None:
        self._nodes.setdefault(name, _Node())

    def active(self, node: str, pod: Pod) -> None:
        """A pod the kubelet runs (admitted, or running from the start)."""
        where = self._nodes.get(node)
        if where is not None:
            key = pod.key
            where.pods[key] = pod
            self._pod_node[key] = node

    def inactive(self, key: str) -> None:
        """The kubelet was told to stop it (or it failed): no longer an active pod."""
        node = self._nodes.get(self._pod_node.pop(key, ""))
        if node is not None:
            node.pods.pop(key, None)

    def pods_on(self, node: str) -> list[str]:
        where = self._nodes.get(node)
        return list(where.pods) if where is not None else []

    # -- power ------------------------------------------------------------------------------
    def requested(self, name: str, now: int) -> bool:
        """The OS asks to shut down; True when the shutdown starts (at the next tick)."""
        node = self._nodes.get(name)
        if node is None or node.power is not Power.UP:
            return False
        node.power, node.requested_at = Power.SHUTTING_DOWN, now
        self._shutting.add(name)
        return True

    def powered_off(self, name: str) -> None:
        node = self._nodes.get(name)
        if node is not None:
            node.power, node.requested_at, node.ends_at = Power.OFF, None, None
            self._shutting.discard(name)

    def powered_on(self, name: str) -> dec.NodeConditionChanged | None:
        """Ready True again, for a node that was off (a node up or going down ignores the button)."""
        node = self._nodes.get(name)
        if node is None or node.power is not Power.OFF:
            return None
        node.power, node.requested_at, node.ends_at, node.started_id = Power.UP, None, None, ""
        return dec.NodeConditionChanged(
            condition="Ready", status="True", reason=READY_AGAIN_REASON, message=READY_AGAIN_MESSAGE
        )

    # -- the clock -----------------------------------------------------------------------------
    def due(self, now: int) -> list[tuple[str, bool]]:
        """Nodes with something to do now, in node order: (name, True to start / False to complete)."""
        out = []
        for name in [n for n in self._nodes if n in self._shutting]:
            node = self._nodes[name]
            if node.power is not Power.SHUTTING_DOWN:
                continue
            if node.requested_at == now and node.ends_at is None:
                out.append((name, True))
            elif node.ends_at == now:
                out.append((name, False))
        return out

    def start(self, name: str, now: int, config: KubeletConfig, run_start_unix: float) -> Started:
        """Plan the shutdown of ``name``'s active pods."""
        node = self._nodes[name]
        groups, source = shutdown_groups(config)
        unix = run_start_unix + now / SECOND
        if not groups:
            node.ends_at = now
            return Started(None, shutdown_immediate(source, unix), now)
        pods = [
            ShutdownPod(
                key=p.key,
                priority=kubelet_priority(p),
                termination_grace=p.spec.termination_grace_period_seconds,
                exits_after=seconds(exit_after_seconds(p)),
                static=is_static_pod(p),
            )
            for p in node.pods.values()
        ]
        requested = period_requested(groups)
        delay = inhibit_delay(requested, config.logind_inhibit_delay_max, config.logind_inhibit_delay_max_after_reload)
        if delay.error:  # the manager never started: no inhibitor lock, the node just stops
            node.ends_at = now
            return Started(None, shutdown_unmanaged(source, unix, requested, delay), now)
        plan = plan_shutdown(now, groups, pods)
        record = shutdown_started(plan, requested=requested, logind=delay, source=source, start_time_seconds=unix)
        node.ends_at, node.start_unix = plan.end, unix
        ready = dec.NodeConditionChanged(condition="Ready", status="False", reason=READY_REASON, message=READY_MESSAGE)
        return Started(ready, record, plan.end)

    def started(self, name: str, started_id: str) -> None:
        self._nodes[name].started_id = started_id

    def complete(self, name: str, now: int, run_start_unix: float) -> tuple[dec.NodeShutdownCompleted, str]:
        """The last group is done: the inhibitor lock is released and the machine halts.
        The record, and the id of the ``NodeShutdownStarted`` it follows from ("" if none)."""
        node = self._nodes[name]
        node.power, node.ends_at = Power.OFF, None
        self._shutting.discard(name)
        record = dec.NodeShutdownCompleted(
            start_time_seconds=node.start_unix or run_start_unix + now / SECOND,
            end_time_seconds=run_start_unix + now / SECOND,
        )
        for key in node.pods:
            self._pod_node.pop(key, None)
        node.pods.clear()
        return record, node.started_id

"""What the kubelet side keeps for one node, and its periodic work besides eviction:
publishing node status (allocatable, pressure conditions, and the taints the control
plane derives from them) and the image GC that runs every ``imageGCPeriod``."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts.internal import NodesObserved, NodeStatusUpdated
from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.eviction.manager import POD_CLEANUP_TIMEOUT, EvictionState
from ledgerlet_core.kubelet.eviction.observations import LazyObservations, signal_values
from ledgerlet_core.kubelet.eviction.reclaim import periodic_image_gc
from ledgerlet_core.kubelet.node_status import allocatable, condition_taints, reported_capacity
from ledgerlet_core.model.k8s.objects import Node, Pod, ResourceList, Taint
from ledgerlet_core.model.runtime import RuntimeView
from ledgerlet_core.model.summary import Summary


@dataclass(slots=True)
class KubeletNode:
    node: Node
    config: KubeletConfig
    layout: str
    state: EvictionState = field(default_factory=EvictionState)
    #: pods that are active on the node (admitted, not told to stop), in admission order
    active: dict[str, Pod] = field(default_factory=dict)
    #: the machine's memory and disk, when a usage entry says (closed loop)
    machine: dict[str, int] = field(default_factory=dict)
    closed_loop: bool = False
    #: what the last pass saw (after its node-level reclaim), for the periodic image GC
    last_summary: Summary | None = None
    last_runtime: RuntimeView | None = None
    last_observation_id: str = ""
    published_conditions: tuple[str, ...] = ()
    published_allocatable: dict[str, str] | None = None
    taints: list[Taint] = field(default_factory=list)
    #: pods the eviction manager killed that have not exited yet -> when it killed them
    evicted: dict[str, int] = field(default_factory=dict)
    #: graceful shutdown in progress (new pods are refused), and the machine is down
    shutting_down: bool = False
    off: bool = False
    #: pods told to stop while the node was down: they finish when it comes back
    terminating: dict[str, tuple[dec.PodTerminated, str]] = field(default_factory=dict)
    #: the pods' stats as the last derived observation left them, as JSON by pod (what the
    #: next one's change applies to: ``NodeObserved.podsDelta``)
    pod_stats: dict[str, msgspec.Raw] | None = None
    #: what the last status update was worked out from (node, config, machine, conditions)
    _status_inputs: tuple[object, ...] | None = None
    #: the last pass, when it was a quiet one taken over whole columns (kubelet/quiet.py):
    #: the tick's observations, this node's place among them, and its observation's id;
    #: what it left (the observations kept, what the pass saw) is made only once read
    #: (:meth:`settle`)
    quiet: tuple[NodesObserved, int, str] | None = None

    def settle(self) -> None:
        """Take up the last pass's leavings if it was a quiet one (``manager._quiet_pass``:
        the conditions' last-observed times as they were, the pass's observations kept,
        nothing met, first observed or reported), before anything reads them."""
        quiet = self.quiet
        if quiet is None:
            return
        self.quiet = None
        batch, i, observation = quiet
        summary = Summary(node=batch.node_stats(i))
        self.state = EvictionState(
            conditions_last_observed=dict(self.state.conditions_last_observed),
            last_observations=LazyObservations(signal_values(summary)),
        )
        self.last_summary = summary
        self.last_runtime = batch.runtimes[batch.runtime[i]]
        self.last_observation_id = observation

    @property
    def observation_id(self) -> str:
        """The id of the observation its last pass was made on ("" before any)."""
        return self.quiet[2] if self.quiet is not None else self.last_observation_id

    def cleanup_pending(self, now: int) -> list[str]:
        """Evicted pods still exiting, for at most ``podCleanupTimeout`` after the kill."""
        return [p for p, at in self.evicted.items() if now - at < POD_CLEANUP_TIMEOUT]

    @property
    def name(self) -> str:
        return self.node.metadata.name

    def capacity(self) -> ResourceList:
        return reported_capacity(self.node.status.capacity, self.machine, self.config)

    def forget_status(self) -> None:
        """The next status update is worked out again, whatever it is made of."""
        self._status_inputs = None

    def status_update(self) -> tuple[NodeStatusUpdated | None, list[dec.NodeTaintAdded], list[dec.NodeTaintRemoved]]:
        """Node status as the kubelet publishes it now, if it changed; then the taint changes."""
        # (``machine`` is replaced whole when declared, never changed in place: kept as it
        # is, not copied; asked on every node every 10 s, so compared field by field inline)
        node, config, machine, conditions = self.node, self.config, self.machine, self.state.conditions
        last = self._status_inputs
        if (
            last is not None
            and (last[0] is node or last[0] == node)
            and (last[1] is config or last[1] == config)
            and (last[2] is machine or last[2] == machine)
            and (last[3] is conditions or last[3] == conditions)
        ):
            return None, [], []  # (what it is worked out from is as it was: so is the status)
        self._status_inputs = (node, config, machine, conditions)
        capacity = self.capacity()
        alloc = {k: str(v) for k, v in allocatable(capacity, self.config).items()}
        conditions = self.state.conditions
        if alloc == self.published_allocatable and conditions == self.published_conditions:
            return None, [], []
        self.published_allocatable = alloc
        self.published_conditions = conditions
        status = NodeStatusUpdated(
            node=self.name,
            capacity={k: str(v) for k, v in capacity.items()},
            allocatable=alloc,
            conditions=list(conditions),
        )
        wanted = condition_taints(conditions)
        added = [dec.NodeTaintAdded(key=t.key, effect=t.effect) for t in wanted if t not in self.taints]
        removed = [dec.NodeTaintRemoved(key=t.key, effect=t.effect) for t in self.taints if t not in wanted]
        self.taints = wanted
        return status, added, removed

    def image_gc(self, now: int) -> dec.ImageGarbageCollected | None:
        """The periodic image GC on what the last pass saw; ``None`` when it had nothing to do."""
        self.settle()
        summary, view = self.last_summary, self.last_runtime
        runtime = summary.node.runtime if summary is not None else None
        fs = runtime.image_fs if runtime is not None else None
        if view is None or fs is None or not fs.capacity_bytes or fs.available_bytes is None:
            return None  # upstream logs "invalid capacity 0 on image filesystem" and carries on
        spec = self.config.spec
        result, self.last_runtime = periodic_image_gc(
            view,
            fs.capacity_bytes,
            fs.available_bytes,
            high=spec.image_gc_high_threshold_percent,
            low=spec.image_gc_low_threshold_percent,
            now=now,
            min_age=self.config.image_minimum_gc_age,
            max_age=self.config.image_maximum_gc_age,
        )
        if result is None:
            return None
        plan = result.plan
        return dec.ImageGarbageCollected(
            usage_percent=plan.usage_percent,
            high_threshold_percent=plan.high_threshold_percent,
            low_threshold_percent=plan.low_threshold_percent,
            bytes_to_free=plan.bytes_to_free,
            bytes_freed=result.bytes_freed,
            images=list(result.images),
            message=result.message,
            error=result.error,
        )

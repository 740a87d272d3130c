"""The kubelet on every node, as one machine: which pods it runs (admission), its
eviction manager's passes, its pod workers, node status and image GC, and its node
going down and up (``pkg/kubelet``).

A pod reaches its kubelet bound: by its creator, or by the scheduler's ``PodScheduled``.
Admission (``Admit``: node pressure, a shutdown under way) is a decision taken at the
next tick, once every loop has the pod, as are deletes, preemption victims and a
power-on: the work queue is ordered by the events that asked for it, so delivery order
cannot change what is decided.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import assert_never

import msgspec

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.internal import (
    PHASE_STATUS,
    PHASE_TIMERS,
    LazyNodeObserved,
    NodesObserved,
    PodDeletionRequested,
    PodStarted,
    pods_from,
)
from ledgerlet_core.contracts.observed import observation_member
from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.eviction.local_storage import has_local_storage_limits
from ledgerlet_core.kubelet.eviction.manager import EvictionState, admit, synchronize
from ledgerlet_core.kubelet.eviction_records import pass_records
from ledgerlet_core.kubelet.graceful_shutdown import ADMIT_MESSAGE, ADMIT_REASON, SHUTDOWN_MESSAGE
from ledgerlet_core.kubelet.node import KubeletNode
from ledgerlet_core.kubelet.pod_worker import PodWorkers
from ledgerlet_core.kubelet.quiet import quiet_passes
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.membership import Membership
from ledgerlet_core.loop.timers import Timers, next_multiple
from ledgerlet_core.model.annotations import FILESYSTEMS_ANNOTATION
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import Node, Pod
from ledgerlet_core.model.summary import PodStats
from ledgerlet_core.model.usage import effective_layout

SortKey = tuple[int, tuple[int, ...]]


# -- the work queue: what is decided at the next tick, in the order it was asked for ---------
@dataclass(frozen=True, slots=True)
class Admit:
    pod: Pod


@dataclass(frozen=True, slots=True)
class StopPreempted:
    pod: str
    data: dec.PodPreempted


@dataclass(frozen=True, slots=True)
class PowerOn:
    node: str


@dataclass(frozen=True, slots=True)
class StopDeleted:
    """A taint-eviction (or other controller's) delete: the pod's grace as asked."""

    data: PodDeletionRequested


@dataclass(frozen=True, slots=True)
class Delete:
    """A user's delete: the grace given, else the pod's own."""

    data: inp.ObjectDeleted


Work = Admit | StopPreempted | PowerOn | StopDeleted | Delete


class Kubelet:
    def __init__(self, owner: str, pods: Mapping[str, Pod], submitted: Mapping[str, Pod]) -> None:
        """``pods``, ``submitted``: the cluster view's live mappings of the pods that exist
        (as admitted, bound once known) and of those the API server has not admitted yet."""
        self.pods = pods
        self.submitted = submitted
        self.timers = Timers(owner)
        self.nodes: dict[str, KubeletNode] = {}
        self.pod_node: dict[str, str] = {}
        self.workers = PodWorkers(self.timers)
        self._work: list[tuple[SortKey, str, Work]] = []
        #: whether any pod made active sets local-storage limits (most runs: none)
        self._any_limits = False
        #: pods the scheduler bound before the API server's admission reached this loop
        self._scheduled_early: dict[str, tuple[SortKey, str]] = {}
        #: this kubelet's share of the nodes when the loop is split (loop/membership.py):
        #: it keeps only its own nodes, so every other node's events find nothing to do
        self.member: Membership | None = None
        #: each of its nodes' place where it first appeared (``NodeEntry.order``): what a
        #: run ordered by node numbers its events with, kept when the node object is deleted
        #: (its kubelet goes on) or made again
        self.places: dict[str, int] = {}

    # -- nodes ---------------------------------------------------------------------------
    def node_applied(self, node: Node, config: KubeletConfig, out: Emitter, *, place: int) -> None:
        """``place``: where the node first stood among the cluster's nodes (``NodeEntry.order``:
        a run ordered by node numbers its events with it, contracts/order.py)."""
        if self.member is not None and not self.member.owns(node.metadata.name):
            return  # another member's node
        self.places.setdefault(node.metadata.name, place)
        layout = effective_layout(node.metadata.annotations.get(FILESYSTEMS_ANNOTATION), False)
        existing = self.nodes.get(node.metadata.name)
        if existing is None:
            self.nodes[node.metadata.name] = KubeletNode(node, config, layout)
            # the kubelet publishes node status from the start, then every nodeStatusUpdateFrequency
            self.timers.want(next_multiple(out.trigger.t, config.node_status_update_frequency), PHASE_STATUS, out)
        else:
            existing.node, existing.config, existing.layout = node, config, layout

    def machine_declared(self, name: str, capacity: dict[str, int], out: Emitter) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        node.closed_loop = True
        node.machine = capacity
        # the periodic image GC runs every imageGCPeriod from time 0 on closed-loop nodes
        self.timers.want(next_multiple(out.trigger.t, node.config.image_gc_period), PHASE_STATUS, out)

    # -- pods arriving -------------------------------------------------------------------
    def running(self, pod: Pod) -> None:
        """A pod running on its node from the start."""
        node = self.nodes.get(pod.spec.node_name)
        if node is not None:
            key = pod.key
            self._activate(node, pod, key)
            self.pod_node[key] = node.name

    def updated(self, key: str) -> None:
        """An update of a pod this kubelet runs (its spec cannot change)."""
        node = self.nodes.get(self.pod_node.get(key, ""))
        pod = self.pods.get(key)
        if node is not None and pod is not None and key in node.active:
            self._activate(node, pod, key)

    def admitted(self, key: str, when: SortKey, cause: str, out: Emitter) -> None:
        """The API server stored the pod: bound by its creator, or waiting for the scheduler."""
        pod = self.pods.get(key)
        if pod is None:
            return
        early = self._scheduled_early.pop(key, None)
        if early is not None:  # the binding arrived first (same step, no order between them)
            self._bound(pod, early, out)
        elif pod.spec.node_name:
            self._bound(pod, (when, cause), out)

    def scheduled(self, key: str, when: SortKey, cause: str, out: Emitter) -> None:
        pod = self.pods.get(key)
        if pod is not None:
            self._bound(pod, (when, cause), out)
        elif key in self.submitted:
            self._scheduled_early[key] = (when, cause)

    def _bound(self, pod: Pod, asked: tuple[SortKey, str], out: Emitter) -> None:
        node = self.nodes.get(pod.spec.node_name)
        if node is None or pod.key in node.active:
            return
        # Admission is a decision: taken at the next tick, once every loop has this pod.
        self.queue(Admit(pod), *asked, out)

    def queue(self, work: Work, when: SortKey, cause: str, out: Emitter) -> None:
        self._work.append((when, cause, work))
        self.timers.want(out.trigger.t, PHASE_TIMERS, out)

    def deleted(self, data: inp.ObjectDeleted, when: SortKey, cause: str, out: Emitter) -> None:
        pod = self.pods.get(object_key(data.namespace, data.name))
        if pod is not None and not pod.spec.node_name:
            return  # never bound: the API server drops it, nothing ran
        self.queue(Delete(data), when, cause, out)

    # -- shutdown and power ------------------------------------------------------------------
    def shutdown_requested(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is not None and not node.off:
            node.shutting_down = True

    def shutdown_started(self, name: str, data: dec.NodeShutdownStarted, cause: str, out: Emitter) -> None:
        """Carry out the shutdown manager's plan: each pod killed at its time with its grace."""
        if name not in self.nodes:
            return  # not a node of this kubelet's (another member's)
        kills = [(k.pod, round(k.at * SECOND), k.grace_period_seconds) for g in data.groups for k in g.kills]
        self.workers.plan_kills(name, kills, cause, out)

    def went_off(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is not None:
            node.off, node.shutting_down = True, False
            self.workers.went_off(node)

    def powered_on(self, name: str, when: SortKey, cause: str, out: Emitter) -> None:
        node = self.nodes.get(name)
        if node is not None and node.off:
            self.queue(PowerOn(name), when, cause, out)

    def force_deleted(self, key: str) -> None:
        """Gone from the API: its kubelet (if it ever comes back) has nothing left to finish."""
        node = self.nodes.get(self.pod_node.pop(key, ""))
        if node is not None:
            node.active.pop(key, None)
            node.terminating.pop(key, None)

    def failed(self, key: str) -> None:
        """A pod whose containers were OOM-killed for good has failed: no longer active."""
        node = self.nodes.get(self.pod_node.pop(key, "") or "")
        if node is not None:
            node.active.pop(key, None)

    # -- the eviction manager's pass ------------------------------------------------------------
    def _activate(self, node: KubeletNode, pod: Pod, key: str) -> None:
        node.active[key] = pod
        if not self._any_limits and has_local_storage_limits(pod):
            self._any_limits = True

    def _limited_pods(self, node: KubeletNode) -> list[Pod]:
        """The node's active pods that set local-storage limits (none on most nodes: a
        pass looks only once some active pod has set them)."""
        if not self._any_limits:
            return []
        return [p for p in node.active.values() if has_local_storage_limits(p)]  # (once per spec)

    def observed_together(self, batch: NodesObserved, out: Emitter) -> None:
        """A tick's derived observations (contracts/observed.py): the passes that provably
        decide nothing are told apart over whole columns (kubelet/quiet.py) and only leave
        what a later read makes of them (:meth:`KubeletNode.settle`); the others are passes
        of their own, each as if its observation had come alone."""
        plan = quiet_passes(batch, self.nodes, out.trigger.t, self._limited_pods if self._any_limits else None)
        pods = batch.pods_json() if plan.full else {}
        for i in plan.full:
            member = observation_member(out.trigger, batch, i)
            self.observed(batch.lazy(i, pods.get(i)), out.for_member(member))
        for i in plan.quiet:
            node = self.nodes[batch.nodes[i]]
            node.quiet = (batch, i, batch.ids[i])

    def observed(self, data: LazyNodeObserved, out: Emitter) -> None:
        """One housekeeping pass on what the observation shows (``synchronize``)."""
        node = self.nodes.get(data.node)
        if node is None or node.off:
            return
        node.settle()
        now, obs = out.trigger.t, out.trigger.id
        layout = data.runtime.layout if data.runtime is not None else node.layout
        result = synchronize(
            now=now,
            config=node.config,
            layout=layout,
            state=node.state,
            summary=data.node_summary(),
            pod_stats=self._pods_told(node, data),
            active_pods=list(node.active.values()),
            local_storage_candidates=self._limited_pods(node),
            runtime=data.runtime,
            after_reclaim=data.after_reclaim,
            cleanup_pending=node.cleanup_pending(now),
        )
        node.state = result.state
        node.last_summary = result.post_reclaim_summary or data.node_summary()
        node.last_runtime = result.runtime
        node.last_observation_id = obs
        records = pass_records(result)
        for record in (*records.conditions, *records.reclaimed):
            out.decide(record, node=data.node)
        for pod, evicted in records.evictions:
            cause = out.decide(evicted, node=data.node, pod=pod.key)
            node.active.pop(pod.key, None)
            self._stop(node, pod, evicted.grace_period_seconds, "Evicted", cause, out)

    @staticmethod
    def _pods_told(node: KubeletNode, data: LazyNodeObserved) -> Callable[[], Sequence[PodStats]]:
        """The pods' stats the observation tells, whole or as a change from the node's
        previous derived observation (``NodeObserved.podsDelta``), decoded only if asked."""
        if data.pods_omitted:
            return _pods_not_carried(data.node)
        if data.pods_delta:
            table = node.pod_stats
            if table is None:
                raise RuntimeError(f"{data.node}: an observation tells a change of pods' stats it has no base for")
            for gone in data.pods_gone:
                table.pop(gone, None)
            # a pod there keeps its place, a new one goes last; each a copy of its own bytes
            # (a Raw holds on to the whole record it was read from)
            table.update((k, msgspec.Raw(bytes(v))) for k, v in data.pods_changed.items())
            return lambda: pods_from(table.values())
        node.pod_stats = data.pods_by_key() if data.source == "usage" else None
        return data.pod_stats

    def _stop(
        self, node: KubeletNode, pod: Pod, grace: int, reason: str, cause: str, out: Emitter, msg: str = ""
    ) -> None:
        if self.workers.stop(node, pod, grace, reason, cause, out, msg):
            self.pod_node.pop(pod.key, None)

    # -- the clock ------------------------------------------------------------------------------
    def tick(self, out: Emitter) -> None:
        """Timers: shutdown kills, pods exiting, then the queued work in the order asked."""
        now = out.trigger.t
        for key, node_name, grace, cause in self.workers.kills_due(now):
            killed = self.nodes[node_name].active.pop(key, None)
            if killed is not None:
                self._stop(self.nodes[node_name], killed, grace, "NodeShutdown", cause, out, SHUTDOWN_MESSAGE)
            else:
                self.workers.shorten(key, grace, out)
        for e in self.workers.exits_due(now):
            node = self.nodes[e.node]
            if node.off:
                continue  # killed before the machine went down: never confirmed
            out.decide(e.data, node=e.node, pod=e.pod, causes=[e.cause])
            self.pod_node.pop(e.pod, None)
            node.evicted.pop(e.pod, None)
        work, self._work = sorted(self._work, key=lambda w: w[0]), []
        for _, cause, item in work:
            self._do(item, cause, out)

    def _do(self, item: Work, cause: str, out: Emitter) -> None:
        if isinstance(item, Admit):
            self._admit(item.pod, cause, out)
        elif isinstance(item, StopPreempted):
            self._stop_active(item.pod, item.data.grace_period_seconds, "Preempted", cause, out)
        elif isinstance(item, PowerOn):
            self._powered_on(item.node, cause, out)
        elif isinstance(item, StopDeleted):
            self._stop_active(item.data.pod, item.data.grace_period_seconds, item.data.reason, cause, out)
        elif isinstance(item, Delete):
            self._delete(item.data, cause, out)
        else:
            assert_never(item)

    def _admit(self, pod: Pod, cause: str, out: Emitter) -> None:
        node = self.nodes.get(pod.spec.node_name)
        if node is None or pod.key in node.active:
            return
        ok, reason, message = admit(pod, node.state.conditions)
        if node.shutting_down or node.off:  # nodeshutdown Admit: every pod, whatever it tolerates
            ok, reason, message = False, ADMIT_REASON, ADMIT_MESSAGE
        if not ok:
            rejected = dec.PodRejected(reason=reason, message=message, admitter="kubelet")
            out.decide(rejected, node=node.name, pod=pod.key, causes=[cause])
            return
        self._activate(node, pod, pod.key)
        self.pod_node[pod.key] = node.name
        started = PodStarted(node=node.name, pod=pod.key, uid=pod.metadata.uid)
        out.decide(started, node=node.name, pod=pod.key, causes=[cause])

    def _stop_active(self, key: str, grace: int, reason: str, cause: str, out: Emitter) -> None:
        node = self.nodes.get(self.pod_node.get(key, ""))
        pod = node.active.pop(key, None) if node else None
        if node is not None and pod is not None:
            self._stop(node, pod, grace, reason, cause, out)

    def _delete(self, data: inp.ObjectDeleted, cause: str, out: Emitter) -> None:
        key = object_key(data.namespace, data.name)
        node = self.nodes.get(self.pod_node.get(key, ""))
        pod = node.active.pop(key, None) if node else None
        if node is None or pod is None:
            return
        own = pod.spec.termination_grace_period_seconds or 0
        grace = data.grace_period_seconds if data.grace_period_seconds is not None else own
        self._stop(node, pod, grace, "ForceDeleted" if data.force else "Deleted", cause, out)

    def _powered_on(self, name: str, cause: str, out: Emitter) -> None:
        """The kubelet is back: it finishes the pods deleted while it was away (their
        containers did not survive the reboot) and starts over with its eviction state."""
        node = self.nodes[name]
        node.off, node.shutting_down = False, False
        node.quiet = None
        node.state = EvictionState()
        node.published_conditions = ()
        node.forget_status()
        for key, (data, _) in sorted(node.terminating.items()):
            out.decide(data, node=name, pod=key, causes=[cause])
            self.pod_node.pop(key, None)
        node.terminating.clear()

    # -- periodic: node status, image GC -----------------------------------------------------------
    def periodic(self, out: Emitter) -> None:
        """Node status every ``nodeStatusUpdateFrequency`` (with the taints the control
        plane derives from conditions) and image GC every ``imageGCPeriod``."""
        now, tick = out.trigger.t, out.trigger.id
        for name, node in self.nodes.items():
            if node.off:
                continue
            seen = [tick, node.observation_id] if node.observation_id else [tick]
            if now % node.config.node_status_update_frequency == 0:
                status, added, removed = node.status_update()
                if status is not None:
                    published = out.decide(status, node=name, causes=seen)
                    for taint in (*removed, *added):  # the control plane's taints follow the status
                        out.decide(taint, node=name, causes=[published])
                self.timers.want(now + node.config.node_status_update_frequency, PHASE_STATUS, out)
            if node.closed_loop and now % node.config.image_gc_period == 0:
                gc = node.image_gc(now)
                if gc is not None:
                    out.decide(gc, node=name, causes=seen)
                self.timers.want(now + node.config.image_gc_period, PHASE_STATUS, out)


def _pods_not_carried(node: str) -> Callable[[], Sequence[PodStats]]:
    """A pass that reads pods' stats its observation was made without: the collector's
    rule of which nodes' passes may read them (node_sim/observing.py) missed one."""

    def fail() -> Sequence[PodStats]:
        raise RuntimeError(f"{node}: a pass needs its pods' stats, which its observation was made without")

    return fail

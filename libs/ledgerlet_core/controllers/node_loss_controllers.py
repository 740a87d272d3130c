"""What kube-controller-manager does about a node that went away: four upstream
controllers over one shared picture of nodes, their pods and their volumes.

Kept apart because their conditions differ (rules in :mod:`.node_loss`):
* node lifecycle (``monitorNodeHealth``): Ready Unknown after the monitor grace period
  without a heartbeat, and the not-ready / unreachable taints (NoSchedule and NoExecute)
  that follow Ready;
* taint eviction (``tainteviction``): pods that do not tolerate a NoExecute taint are
  deleted, at once or after their ``tolerationSeconds`` (a deletion the kubelet carries
  out, or, if the kubelet is gone, that leaves the pod Terminating);
* PodGC (``gcTerminated``, ``gcTerminating``, ``gcOrphaned``, in that order): every 20 s,
  terminated pods beyond ``terminatedPodGCThreshold`` (evicted first, then the oldest),
  Terminating pods on a not-Ready node that has the ``node.kubernetes.io/out-of-service``
  taint (any effect), and every pod of a node still missing 40 s after a pass found it
  missing are force-deleted (the bookkeeping in :mod:`.podgc`);
* attach-detach (``reconciler.go``): a volume no longer wanted on its node is detached
  when the kubelet has unmounted it, at once (forced) with the out-of-service taint, or
  forced after 6 minutes on an unhealthy node unless ``disableForceDetachOnTimeout``.

Work is done at a timer tick, once the instant's inputs are in, and only on the nodes
with something due (a stopped node's monitor deadline, a pass to redo, a deadline).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts.internal import PHASE_TIMERS, PodDeletionRequested
from ledgerlet_core.controllers.node_loss import (
    MAX_WAIT_FOR_UNMOUNT,
    POD_GC_PERIOD,
    RECONCILE_PERIOD,
    TAINT_EVICTION_MESSAGE,
    UNKNOWN_MESSAGE,
    UNKNOWN_REASON,
    force_detach,
    last_heartbeat,
    ready_taints,
    toleration_delay,
    unknown_at,
)
from ledgerlet_core.controllers.podgc import (
    EVICTED_REASON,
    POD_GC,
    OrphanQuarantine,
    TerminatedPods,
    creation_seconds,
)
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers, next_multiple
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Pod, Taint, Toleration
from ledgerlet_core.model.k8s.taints import NO_EXECUTE, NO_SCHEDULE, TAINT_NODE_OUT_OF_SERVICE, TAINT_NODE_UNSCHEDULABLE
from ledgerlet_core.model.timefmt import EPOCH

DEFAULT_TERMINATION_GRACE = 30
UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


@dataclass(slots=True)
class _Node:
    spec_taints: list[Taint]
    status_frequency: int
    #: cordoned (``spec.unschedulable``): the lifecycle controller adds the unschedulable taint
    unschedulable: bool = False
    ready: str = "True"
    user_taints: list[Taint] = field(default_factory=list)
    lifecycle_taints: list[Taint] = field(default_factory=list)
    unknown_at: int | None = None
    #: its kubelet is down (powered off, or halted after a shutdown): nothing unmounts there
    down: bool = False
    deleted_at: int | None = None
    #: pods on it, in the order they arrived
    pods: dict[str, None] = field(default_factory=dict)

    def taints(self) -> list[Taint]:
        return [*self.spec_taints, *self.lifecycle_taints, *self.user_taints]

    def out_of_service(self) -> bool:
        return any(t.key == TAINT_NODE_OUT_OF_SERVICE for t in self.taints())


@dataclass(slots=True)
class _Pod:
    node: str
    tolerations: list[Toleration]
    grace: int
    volumes: tuple[str, ...]
    #: its creationTimestamp (epoch seconds), which PodGC orders terminated pods by
    created: int = 0
    terminating: bool = False
    #: its deletion was asked for: once it has stopped it is gone, not a terminated pod
    deleted: bool = False
    deletion_cause: str = ""
    delete_at: int | None = None


@dataclass(slots=True)
class Settings:
    #: ``--node-monitor-grace-period``
    monitor_grace: int = 40 * SECOND
    disable_force_detach_on_timeout: bool = False
    #: ``--terminated-pod-gc-threshold`` (0: ``gcTerminated`` is off)
    terminated_pod_gc_threshold: int = 12500
    #: the run's start, which creation times count from
    start: datetime = EPOCH


class NodeLossControllers:
    def __init__(self, owner: str, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.timers = Timers(owner)
        self.nodes: dict[str, _Node] = {}
        self.pods: dict[str, _Pod] = {}
        #: (volume, node) -> pods using it there; and volumes no longer wanted -> (since, pod)
        self.attached: dict[tuple[str, str], set[str]] = {}
        self.unwanted: dict[tuple[str, str], tuple[int, str]] = {}
        self.dirty: set[str] = set()
        #: nodes in the order they appeared; those waiting for Ready Unknown; those with a
        #: pod deletion scheduled; those not Ready (or deleted), the only ones PodGC looks at
        self._order: dict[str, int] = {}
        self._stopping: set[str] = set()
        self._deadlines: set[str] = set()
        self._unhealthy: set[str] = set()
        #: PodGC: the terminated pods still in the API, the missing nodes it waits on, and
        #: when pods not running yet were admitted (their creation time)
        self.terminated = TerminatedPods()
        self.quarantine = OrphanQuarantine()
        self._admitted: dict[str, int] = {}

    def _wake(self, at: int, out: Emitter, node: str | None = None) -> None:
        if node is not None:
            self.dirty.add(node)
        self.timers.want(at, PHASE_TIMERS, out)

    def _by_order(self, names: set[str]) -> list[str]:
        return sorted(names, key=self._order.__getitem__)

    # -- nodes ---------------------------------------------------------------------------
    def node_applied(
        self, name: str, spec_taints: list[Taint], status_frequency: int, unschedulable: bool, now: int, out: Emitter
    ) -> None:
        existing = self.nodes.get(name)
        if existing is None:
            self.nodes[name] = _Node(list(spec_taints), status_frequency, unschedulable)
            self._order[name] = len(self._order)
            if unschedulable or any(t.effect == NO_EXECUTE for t in spec_taints):
                # a cordoned node gets its taint, a NoExecute taint evicts from the start
                self._wake(now, out, name)
        else:
            existing.spec_taints, existing.unschedulable = list(spec_taints), unschedulable
            if existing.deleted_at is not None:
                # back before PodGC found it gone for good: its quarantine ends with nothing deleted
                existing.deleted_at = None
                if existing.ready == "True":
                    self._unhealthy.discard(name)
            self._wake(now, out, name)

    def node_deleted(self, name: str, now: int, out: Emitter) -> None:
        node = self.nodes.get(name)
        if node is not None:
            node.deleted_at = now
            self._unhealthy.add(name)  # PodGC looks at it from now on
            if node.pods or self.terminated.on_node(name):
                self._wake(next_multiple(now, POD_GC_PERIOD), out)  # the pass that finds it missing

    def ready_changed(self, name: str, status: str, now: int, out: Emitter) -> None:
        """The kubelet (or the shutdown manager) reported Ready."""
        node = self.nodes.get(name)
        if node is None or node.ready == status:
            return  # (its own Unknown comes back to it: already handled in that pass)
        self._set_ready(name, status)
        if status == "True":
            node.unknown_at = None
            self._stopping.discard(name)
        self._wake(now, out, name)

    def stopped(self, name: str, now: int, out: Emitter) -> None:
        """The kubelet stopped posting status: Ready goes Unknown after the grace period."""
        node = self.nodes.get(name)
        if node is None or node.unknown_at is not None:
            return
        node.down = True
        node.unknown_at = unknown_at(last_heartbeat(now, node.status_frequency), self.settings.monitor_grace)
        self._stopping.add(name)
        self._wake(node.unknown_at, out)

    def powered_on(self, name: str, now: int, out: Emitter) -> None:
        node = self.nodes.get(name)
        if node is not None:
            node.unknown_at, node.down = None, False
            self._stopping.discard(name)
            self._wake(now, out, name)  # its kubelet unmounts what is no longer wanted

    def tainted(self, name: str, taint: Taint, now: int, out: Emitter) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        node.user_taints = [t for t in node.user_taints if (t.key, t.effect) != (taint.key, taint.effect)]
        node.user_taints.append(taint)
        self._wake(now, out, name)

    def untainted(self, name: str, key: str, effect: str, now: int, out: Emitter) -> None:
        """``effect`` empty: every taint with that key."""
        node = self.nodes.get(name)
        if node is None:
            return
        # the taint goes from the Node object, whoever put it there (its spec, or a ``taint`` event)
        node.user_taints = [t for t in node.user_taints if t.key != key or (effect and t.effect != effect)]
        node.spec_taints = [t for t in node.spec_taints if t.key != key or (effect and t.effect != effect)]
        self._wake(now, out, name)

    # -- pods ------------------------------------------------------------------------------
    def pod_admitted(self, key: str, now: int) -> None:
        """The API server admitted a pod (its creation time, unless it says its own)."""
        if key not in self.pods:
            self._admitted[key] = now

    def pod_running(self, pod: Pod, node_name: str, volumes: tuple[str, ...]) -> None:
        """A pod on ``node_name``, with the attachable volumes its claims are bound to."""
        node = self.nodes.get(node_name)
        if node is None:
            return
        grace = pod.spec.termination_grace_period_seconds
        key = pod.key
        created = creation_seconds(pod, self.settings.start, self._admitted.pop(key, 0))
        self.pods[key] = _Pod(
            node_name,
            pod.spec.tolerations,  # (the pod's own, never changed in place: not copied)
            DEFAULT_TERMINATION_GRACE if grace is None else grace,
            volumes,
            created,
        )
        node.pods[key] = None
        for pv in volumes:
            self.attached.setdefault((pv, node_name), set()).add(key)
            self.unwanted.pop((pv, node_name), None)

    def pod_started(self, pod: Pod, node: str, volumes: tuple[str, ...], now: int, out: Emitter) -> None:
        self.pod_running(pod, node, volumes)
        self._wake(now, out, node)  # a NoExecute taint may already be there

    def terminated_applied(self, pod: Pod, now: int, out: Emitter) -> None:
        """A pod of the scenario's objects that has already terminated (Succeeded, Failed)."""
        evicted = pod.status.phase == "Failed" and pod.status.reason == EVICTED_REASON
        created = creation_seconds(pod, self.settings.start, 0)
        self._terminated(pod.key, pod.spec.node_name, evicted, created, next_multiple(now, POD_GC_PERIOD), out)

    def pod_ended(self, key: str, *, evicted: bool, now: int, out: Emitter) -> None:
        """A running pod terminated and stays in the API (Failed: the kubelet evicted it, its
        node's shutdown stopped it, its containers failed for good), unless its deletion was
        asked for; either way it holds nothing on its node any more."""
        p = self.pods.get(key)
        if p is not None and not p.deleted:
            self._terminated(key, p.node, evicted, p.created, next_multiple(now + 1, POD_GC_PERIOD), out)
        self.pod_gone(key, now, out)

    def pod_refused(self, pod: Pod | None, key: str, node: str, *, evicted: bool, now: int, out: Emitter) -> None:
        """The kubelet refused the pod at admission: it is Failed on ``node``."""
        created = creation_seconds(pod, self.settings.start, self._admitted.pop(key, 0))
        self._terminated(key, node, evicted, created, next_multiple(now + 1, POD_GC_PERIOD), out)
        self.pod_gone(key, now, out)

    def _terminated(self, key: str, node: str, evicted: bool, created: int, next_pass: int, out: Emitter) -> None:
        self.terminated.add(key, node, evicted=evicted, created=created)
        threshold = self.settings.terminated_pod_gc_threshold
        if 0 < threshold < len(self.terminated):
            self._wake(next_pass, out)
        n = self.nodes.get(node)
        if n is not None and n.deleted_at is not None:
            self._wake(next_pass, out)

    def pod_force_deleted(self, key: str, now: int, out: Emitter) -> None:
        """Gone from the API, whether it was running or terminated."""
        self.terminated.remove(key)
        self.pod_gone(key, now, out)

    def pod_gone(self, key: str, now: int, out: Emitter) -> None:
        self._admitted.pop(key, None)
        p = self.pods.pop(key, None)
        if p is None:
            return
        node = self.nodes.get(p.node)
        if node is not None:
            node.pods.pop(key, None)
        for pv in p.volumes:
            users = self.attached.get((pv, p.node), set())
            users.discard(key)
            if not users:
                self.unwanted[(pv, p.node)] = (now, key)
        if p.volumes:
            self._wake(now, out, p.node)

    def pod_terminating(self, key: str, cause: str, *, deleted: bool = False) -> None:
        """It is being stopped: evicted by its kubelet, or its deletion was asked for
        (``deleted``: the scheduler's preemption, a user); taint eviction leaves it alone."""
        p = self.pods.get(key)
        if p is None:
            return
        p.deleted = p.deleted or deleted
        if not p.terminating:
            p.terminating, p.deletion_cause, p.delete_at = True, cause, None

    def pod_deleted(self, key: str, cause: str, now: int, out: Emitter) -> None:
        if self.terminated.remove(key) is not None:
            return  # a terminated pod's deletion: nothing runs, it is gone at once
        self.pod_terminating(key, cause, deleted=True)
        if key in self.pods:
            self._wake(now, out, self.pods[key].node)

    # -- the controllers' passes -------------------------------------------------------------
    def tick(self, now: int, out: Emitter) -> None:
        for name in self._by_order(self._stopping):
            node = self.nodes[name]
            if node.unknown_at is not None and node.unknown_at <= now:
                self._stopping.discard(name)
                self._set_ready(name, "Unknown")
                out.decide(
                    dec.NodeConditionChanged(
                        condition="Ready", status="Unknown", reason=UNKNOWN_REASON, message=UNKNOWN_MESSAGE
                    ),
                    node=name,
                )
                self.dirty.add(name)
        dirty, self.dirty = self.dirty, set()
        for name in self._by_order(dirty & self.nodes.keys()):
            self._lifecycle_taints(name, out)
        for name in self._by_order((dirty | self._deadlines) & self.nodes.keys()):
            self._taint_eviction(name, self.nodes[name], now, out, reevaluate=name in dirty)
        if now % POD_GC_PERIOD == 0:
            self._pod_gc(now, out)
        self._detach(now, out)
        self._next_pod_gc(now, out)

    def _set_ready(self, name: str, status: str) -> None:
        self.nodes[name].ready = status
        if status == "True":
            self._unhealthy.discard(name)
        else:
            self._unhealthy.add(name)

    def _lifecycle_taints(self, name: str, out: Emitter) -> None:
        """The taints that follow Ready, and the cordon's (``doNoScheduleTaintingPass``)."""
        node = self.nodes[name]
        want = ready_taints(node.ready)
        if node.unschedulable:
            want.append(UNSCHEDULABLE_TAINT)
        for t in node.lifecycle_taints:
            if t not in want:
                out.decide(dec.NodeTaintRemoved(key=t.key, effect=t.effect), node=name)
        for t in want:
            if t not in node.lifecycle_taints:
                out.decide(dec.NodeTaintAdded(key=t.key, effect=t.effect), node=name)
        node.lifecycle_taints = want

    def _taint_eviction(self, name: str, node: _Node, now: int, out: Emitter, *, reevaluate: bool) -> None:
        taints = [t for t in node.taints() if t.effect == NO_EXECUTE]
        for key in list(node.pods):
            p = self.pods[key]
            if p.terminating:
                continue
            if reevaluate:
                delay = toleration_delay(p.tolerations, taints)
                if delay is None:
                    p.delete_at = None  # tolerated forever (or no NoExecute taint): cancel
                elif delay == 0:
                    p.delete_at = now
                elif p.delete_at is None:  # an existing deadline is never moved
                    p.delete_at = now + delay * SECOND
                    self._wake(p.delete_at, out)
            if p.delete_at is not None and p.delete_at <= now:
                untolerated = next((t for t in taints if toleration_delay(p.tolerations, [t]) is not None), None)
                p.terminating, p.deleted, p.delete_at = True, True, None
                p.deletion_cause = out.decide(
                    PodDeletionRequested(
                        node=name,
                        pod=key,
                        grace_period_seconds=p.grace,
                        by="taint-eviction-controller",
                        reason="TaintEviction",
                        message=TAINT_EVICTION_MESSAGE,
                        taint=f"{untolerated.key}:{untolerated.effect}" if untolerated else "",
                    ),
                    node=name,
                    pod=key,
                )
        if any(self.pods[k].delete_at is not None for k in node.pods):
            self._deadlines.add(name)
        else:
            self._deadlines.discard(name)

    def _pod_gc(self, now: int, out: Emitter) -> None:
        """``gcTerminated``, ``gcTerminating`` and ``gcOrphaned``, in upstream's order."""
        threshold = self.settings.terminated_pod_gc_threshold
        count = len(self.terminated)
        for t in self.terminated.excess(threshold):
            self.terminated.remove(t.key)
            message = f"PodGC: {count} terminated pods, more than terminatedPodGCThreshold {threshold}"
            out.decide(
                dec.PodForceDeleted(reason="terminated", by=POD_GC, message=message), node=t.node or None, pod=t.key
            )
        for name in self._by_order(self._unhealthy):
            node = self.nodes[name]
            if node.deleted_at is not None or node.ready == "True" or not node.out_of_service():
                continue
            for key in sorted(node.pods):
                p = self.pods[key]
                if p.terminating:
                    data = dec.PodForceDeleted(
                        reason="out-of-service",
                        by=POD_GC,
                        message="Terminating on a node that is not Ready and has the out-of-service taint",
                    )
                    out.decide(data, node=name, pod=key, causes=[p.deletion_cause] if p.deletion_cause else None)
        for name in self._by_order(self._unhealthy):
            node = self.nodes[name]
            if node.deleted_at is not None and (node.pods or self.terminated.on_node(name)):
                self.quarantine.seen_missing(name, now)
        for name in self.quarantine.due(now):
            node = self.nodes[name]
            if node.deleted_at is None:
                continue  # it came back: not orphaned
            for key in sorted({*node.pods, *self.terminated.on_node(name)}):
                running = self.pods.get(key)
                self.terminated.remove(key)
                data = dec.PodForceDeleted(reason="orphaned", by=POD_GC, message="PodGC: node no longer exists")
                causes = [running.deletion_cause] if running is not None and running.deletion_cause else None
                out.decide(data, node=name, pod=key, causes=causes)

    def _next_pod_gc(self, now: int, out: Emitter) -> None:
        threshold = self.settings.terminated_pod_gc_threshold
        if self.quarantine or 0 < threshold < len(self.terminated):
            self._wake(next_multiple(now + 1, POD_GC_PERIOD), out)
            return
        for name in self._unhealthy:
            node = self.nodes[name]
            waiting = (
                node.ready != "True" and node.out_of_service() and any(self.pods[k].terminating for k in node.pods)
            )
            if waiting or (node.deleted_at is not None and (node.pods or self.terminated.on_node(name))):
                self._wake(next_multiple(now + 1, POD_GC_PERIOD), out)
                return

    def _detach(self, now: int, out: Emitter) -> None:
        disable = self.settings.disable_force_detach_on_timeout
        for (pv, name), (since, pod) in sorted(self.unwanted.items()):
            node = self.nodes.get(name)
            healthy = node is not None and node.ready == "True"
            oos = node is not None and node.out_of_service()
            if oos:
                # the out-of-service taint (any effect or value) skips the safe-to-detach check,
                # on a Ready node too (``reconciler.go``: ``hasOutOfServiceTaint``)
                reason, forced = "OutOfService", True
            elif node is not None and not node.down:
                reason, forced = "Normal", False  # its kubelet unmounted it as the pod went
            else:
                # still mounted as far as the API knows (the kubelet is gone): only forced
                why = force_detach(
                    healthy=healthy, out_of_service=oos, unwanted_for=now - since, disable_on_timeout=disable
                )
                if why is None:
                    if not disable:
                        self._wake(since + MAX_WAIT_FOR_UNMOUNT + RECONCILE_PERIOD, out)
                    continue
                reason, forced = why, True
            del self.unwanted[(pv, name)]
            self.attached.pop((pv, name), None)
            out.decide(
                dec.VolumeDetached(volume=pv, forced=forced, reason=reason, pod=pod, unwanted_since=since / SECOND),
                node=name,
            )

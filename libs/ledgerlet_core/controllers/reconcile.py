"""The workload controllers' reconcile: the pods each owner wants, created when missing,
and gone ones replaced as upstream does it (rules in :mod:`.workloads`).

ReplicaSets (and the Deployments that own them), StatefulSets, DaemonSets and Jobs keep
the pods they want, named as Kubernetes names them (deterministically). A pod that is
evicted, rejected by its kubelet, OOM-killed for good or deleted is replaced as its
owner does it; the replacement is a ``PodReplaced`` decision. A controller creates a pod
as its template says and the API server admits it (priority, RuntimeClass, quota): a
refused create is retried with back-off, as upstream's work queue does. Work happens on a
clock tick after the instant's inputs are in, so a controller never mistakes a pod
listed later in the scenario for one it must create; only owners (a DaemonSet: nodes)
something happened to are synced.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts.internal import PHASE_TIMERS, ObjectCreated
from ledgerlet_core.controllers.workloads import (
    DAEMON_BACKOFF_INITIAL,
    DAEMON_BACKOFF_MAX,
    DAEMON_TOLERATIONS,
    JOB_BACKOFF_INITIAL,
    JOB_BACKOFF_LIMIT,
    JOB_BACKOFF_MAX,
    backoff,
    controller_of,
    daemon_pod_name,
    node_runs_daemon,
    owner_key,
    pod_from_template,
    replica_pod_name,
    replica_set_for,
    replicas,
    stateful_pod_name,
)
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers
from ledgerlet_core.model.annotations import WORKLOAD_ANNOTATION
from ledgerlet_core.model.codec import object_builtins
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import Node, Pod, Taint, Workload

#: how long a controller waits before replacing a pod its kubelet refused (see :meth:`rejected_by_kubelet`)
REJECTED_REPLACEMENT_DELAY = SECOND

SortKey = tuple[int, tuple[int, ...]]


class PodState(Enum):
    """How a pod stands, from its owner's point of view."""

    ACTIVE = "active"
    #: evicted, rejected, OOM-killed for good, preempted: the object stays, no longer active
    FAILED = "failed"
    #: exited after a delete, or force-deleted: the name is free
    GONE = "gone"


@dataclass(slots=True)
class _Pod:
    pod: Pod
    owner: str
    state: PodState = PodState.ACTIVE
    running: bool = False  # started by its kubelet


@dataclass(slots=True)
class _Owner:
    workload: Workload
    #: the top-level workload usage keys name (a Deployment for its ReplicaSet)
    top: str
    #: its pods' keys, in the order they came (a dict: a ReplicaSet of thousands asks often)
    pods: dict[str, None] = field(default_factory=dict)
    serial: int = 0
    failures: int = 0
    #: per node (DaemonSet) or "" (Job): failures and when the next try is due
    node_failures: dict[str, int] = field(default_factory=dict)
    retry_at: dict[str, int] = field(default_factory=dict)
    #: pods gone or failed that the next pods replace, in the order they ended
    to_replace: list[tuple[SortKey, str]] = field(default_factory=list)
    #: a DaemonSet's pods by node
    by_node: dict[str, list[str]] = field(default_factory=dict)

    def add(self, pod: Pod) -> None:
        if pod.key not in self.pods:
            self.pods[pod.key] = None
            if pod.spec.node_name:
                self.by_node.setdefault(pod.spec.node_name, []).append(pod.key)

    @property
    def kind(self) -> str:
        return self.workload.kind


def _no_pod(key: str) -> bool:
    return False


class WorkloadControllers:
    def __init__(self, owner: str) -> None:
        self.timers = Timers(owner)
        self.owners: dict[str, _Owner] = {}
        self.pods: dict[str, _Pod] = {}
        #: what the next sync looks at: everything, or these owners (a DaemonSet: these nodes)
        self._dirty_all = False
        self._dirty: dict[str, set[str] | None] = {}
        #: retries by when they are due: (at, owner, node or "")
        self._due: list[tuple[int, str, str]] = []
        #: what one sync was given (see :meth:`sync`); let go when it ends, so the state
        #: holds no function of the caller's (a snapshot pickles it)
        self._taints: Mapping[str, list[Taint]] = {}
        self._exists: Callable[[str], bool] = _no_pod

    def _wake(self, at: int, out: Emitter) -> None:
        self.timers.want(at, PHASE_TIMERS, out)

    def changed(self, now: int, out: Emitter) -> None:
        """Something every owner may care about (a node, a workload, a pod listed): sync all."""
        self._dirty_all = True
        self._wake(now, out)

    def taints_changed(self, now: int, out: Emitter) -> None:
        """A node's taints changed: DaemonSets look again at where they run."""
        daemons = [key for key, o in self.owners.items() if o.kind == "DaemonSet"]
        for key in daemons:
            self._mark(key)
        if daemons:
            self._wake(now, out)

    # -- objects -----------------------------------------------------------------------
    def workload_applied(self, w: Workload) -> None:
        key = owner_key(w.metadata.namespace, w.kind, w.metadata.name)
        if w.kind == "Deployment":
            rs = replica_set_for(w)
            self._register(owner_key(rs.metadata.namespace, "ReplicaSet", rs.metadata.name), rs, top=key)
        else:
            self._register(key, w, top=key)

    def _register(self, key: str, w: Workload, top: str) -> None:
        existing = self.owners.get(key)
        if existing is None:
            owner = self.owners[key] = _Owner(w, top)
            for p in self.pods.values():  # pods listed before their owner
                if p.owner == key:
                    owner.add(p.pod)
        else:
            existing.workload = w

    def workload_deleted(self, namespace: str, kind: str, name: str) -> None:
        top = owner_key(namespace, kind, name)
        for key in [k for k, o in self.owners.items() if o.top == top]:
            del self.owners[key]

    def adopt(self, pod: Pod) -> None:
        """A pod listed in the scenario: its owner's (terminated ones count as failed)."""
        ref = controller_of(pod)
        if ref is None:
            return
        key = owner_key(pod.metadata.namespace, ref.kind, ref.name)
        terminal = pod.status.phase in ("Succeeded", "Failed")
        state = PodState.FAILED if terminal else PodState.ACTIVE
        self.pods[pod.key] = _Pod(pod, key, state, running=pod.status.phase == "Running")
        owner = self.owners.get(key)
        if owner is not None:
            owner.add(pod)

    # -- how pods end ----------------------------------------------------------------------
    def _mark(self, key: str, node: str | None = None) -> None:
        """Sync this owner at the next tick (a DaemonSet: on ``node``; None: everywhere)."""
        if key in self._dirty and self._dirty[key] is None:
            return
        if node is None:
            self._dirty[key] = None
        else:
            nodes = self._dirty.setdefault(key, set())
            assert nodes is not None
            nodes.add(node)

    def ended(self, key: str, state: PodState, when: SortKey, out: Emitter, *, delay: int = 0) -> None:
        """A pod failed or is gone (``when``: the deciding event's place, for replacement order)."""
        p = self.pods.get(key)
        if p is None or p.state is PodState.GONE:
            return
        first_end = p.state is PodState.ACTIVE
        if first_end or state is PodState.GONE:
            p.state = state
        owner = self.owners.get(p.owner)
        if owner is None:
            return
        now = when[0]
        kind = owner.kind
        slot = p.pod.spec.node_name if kind == "DaemonSet" else ""
        if first_end and kind in ("DaemonSet", "Job"):
            n = owner.node_failures.get(slot, 0) + 1
            owner.node_failures[slot] = n
            initial, maximum = (
                (DAEMON_BACKOFF_INITIAL, DAEMON_BACKOFF_MAX)
                if kind == "DaemonSet"
                else (JOB_BACKOFF_INITIAL, JOB_BACKOFF_MAX)
            )
            owner.retry_at[slot] = now + backoff(initial, maximum, n)
            heapq.heappush(self._due, (owner.retry_at[slot], p.owner, slot))
            self._wake(owner.retry_at[slot], out)
        # a StatefulSet replaces a pod under its own name, so only once it is gone
        replaceable = (first_end and kind != "StatefulSet") or (state is PodState.GONE and kind == "StatefulSet")
        if replaceable and all(k != key for _, k in owner.to_replace):
            owner.to_replace.append((when, key))
            owner.to_replace.sort()  # by when they ended, however the events were consumed
        if delay:
            heapq.heappush(self._due, (now + delay, p.owner, slot))
            self._wake(now + delay, out)
            return
        self._mark(p.owner, slot if kind == "DaemonSet" else None)
        self._wake(now, out)

    def rejected_by_kubelet(self, key: str, when: SortKey, out: Emitter) -> None:
        # Upstream replaces it at once and the create -> schedule -> reject loop spins at
        # the speed of its API calls until the node's taint keeps the scheduler away; in
        # virtual time that would never end, so the replacement waits one second.
        self.ended(key, PodState.FAILED, when, out, delay=REJECTED_REPLACEMENT_DELAY)

    def refused_by_apiserver(self, key: str, now: int, out: Emitter) -> None:
        """The create failed (priority, quota, RuntimeClass): never stored; try again later."""
        p = self.pods.pop(key, None)
        if p is None:
            return
        owner = self.owners.get(p.owner)
        if owner is not None:
            owner.pods.pop(key, None)
            if p.pod.spec.node_name in owner.by_node and key in owner.by_node[p.pod.spec.node_name]:
                owner.by_node[p.pod.spec.node_name].remove(key)
            owner.failures += 1
            at = now + backoff(JOB_BACKOFF_INITIAL, JOB_BACKOFF_MAX, owner.failures)
            heapq.heappush(self._due, (at, p.owner, p.pod.spec.node_name if owner.kind == "DaemonSet" else ""))
            self._wake(at, out)

    def started(self, key: str, uid: str, now: int, out: Emitter) -> None:
        p = self.pods.get(key)
        if p is not None and p.pod.metadata.uid == uid:
            p.running = True
            owner = self.owners.get(p.owner)
            if owner is not None and owner.kind == "StatefulSet":
                self._mark(p.owner)  # OrderedReady: the next ordinal may go now
                self._wake(now, out)

    # -- the work, once the instant's inputs are in -------------------------------------------
    def sync(
        self,
        now: int,
        nodes: Mapping[str, Node],
        out: Emitter,
        taints: Mapping[str, list[Taint]] | None = None,
        exists: Callable[[str], bool] | None = None,
    ) -> None:
        """``nodes``: the cluster's nodes in the order they first appeared; ``taints``:
        their live taints (their objects' when not given); ``exists``: whether a pod of that
        key exists in the cluster (a generated name already taken is not used again)."""
        self._taints = taints or {}
        self._exists = exists or _no_pod
        try:
            self._sync_due(now, nodes, out)
        finally:
            self._taints, self._exists = {}, _no_pod

    def _sync_due(self, now: int, nodes: Mapping[str, Node], out: Emitter) -> None:
        while self._due and self._due[0][0] <= now:
            _, key, slot = heapq.heappop(self._due)
            owner = self.owners.get(key)
            if owner is not None:
                self._mark(key, slot if owner.kind == "DaemonSet" else None)
        if not (self._dirty_all or self._dirty):
            return
        everything, dirty = self._dirty_all, self._dirty
        self._dirty_all, self._dirty = False, {}
        for key, owner in list(self.owners.items()):
            if everything:
                self._sync(key, owner, now, nodes, out, None)
            elif key in dirty:
                self._sync(key, owner, now, nodes, out, dirty[key])

    def _runs_on(self, owner: _Owner, node: str) -> bool:
        return any(self.pods[k].state is PodState.ACTIVE for k in owner.by_node.get(node, ()) if k in self.pods)

    def _active(self, owner: _Owner) -> list[_Pod]:
        return [self.pods[k] for k in owner.pods if k in self.pods and self.pods[k].state is PodState.ACTIVE]

    def _sync(
        self, key: str, owner: _Owner, now: int, nodes: Mapping[str, Node], out: Emitter, only: set[str] | None
    ) -> None:
        """Create what the owner lacks (``only``: a DaemonSet looks at these nodes alone,
        in the order it looks at all of them)."""
        w = owner.workload
        if w.kind == "DaemonSet":
            names = list(nodes) if only is None else [n for n in nodes if n in only]
            for node_name in names:
                live = self._taints.get(node_name)
                if self._runs_on(owner, node_name) or not node_runs_daemon(w, nodes[node_name], live):
                    continue
                if owner.retry_at.get(node_name, 0) > now:
                    continue
                attempt = owner.node_failures.get(node_name, 0)
                n = 0
                while self._taken(w, daemon_pod_name(w, node_name, attempt + n)):
                    n += 1
                self._create(owner, key, daemon_pod_name(w, node_name, attempt + n), now, out, node=node_name)
            return
        active = self._active(owner)
        want = replicas(w)
        limit = w.spec.backoff_limit if w.spec.backoff_limit is not None else JOB_BACKOFF_LIMIT
        if w.kind == "Job" and (owner.node_failures.get("", 0) > limit or owner.retry_at.get("", 0) > now):
            return
        if w.kind == "StatefulSet":
            by_name = {self.pods[k].pod.metadata.name: self.pods[k] for k in owner.pods if k in self.pods}
            ordered = w.spec.pod_management_policy != "Parallel"
            for ordinal in range(want):
                name = stateful_pod_name(w, ordinal)
                current = by_name.get(name)
                if current is None or current.state is PodState.GONE:
                    self._create(owner, key, name, now, out)
                    if ordered:
                        return  # OrderedReady: one ordinal at a time, each running before the next
                elif ordered and not (current.state is PodState.ACTIVE and current.running):
                    return
            return
        for _ in range(want - len(active)):
            owner.serial += 1
            while self._taken(w, replica_pod_name(w, owner.serial)):
                owner.serial += 1
            self._create(owner, key, replica_pod_name(w, owner.serial), now, out)

    def _taken(self, w: Workload, name: str) -> bool:
        """A generated name some pod already has (upstream: the create fails AlreadyExists
        and the next sync draws another name; here the next one is drawn at once)."""
        key = object_key(w.metadata.namespace, name)
        return key in self.pods or self._exists(key)

    def _create(self, owner: _Owner, key: str, name: str, now: int, out: Emitter, *, node: str = "") -> None:
        """Create the pod as the template says; the API server admits it (or refuses it)."""
        w = owner.workload
        extra = DAEMON_TOLERATIONS if w.kind == "DaemonSet" else ()
        pod = pod_from_template(
            w,
            name,
            node=node,
            extra_tolerations=extra,
            uid_seed=f"{key}/{name}/{now}",
            annotations={WORKLOAD_ANNOTATION: owner.top.split("/", 1)[1]},
        )
        replaces = self._replaced_by(owner, pod)
        self.pods[pod.key] = _Pod(pod, key)
        owner.add(pod)
        out.decide(ObjectCreated(object=object_builtins(pod), owner=owner.top), node=node or None, pod=pod.key)
        if replaces is not None:
            old = self.pods[replaces].pod
            out.decide(
                dec.PodReplaced(replacement=pod.key, owner=owner.top.split("/", 1)[1]),
                node=old.spec.node_name or None,
                pod=replaces,
            )

    def _replaced_by(self, owner: _Owner, new: Pod) -> str | None:
        """The gone pod this one replaces: on the same node (DaemonSet), of the same name
        (StatefulSet), else the oldest one waiting."""
        for i, (_, old_key) in enumerate(owner.to_replace):
            old = self.pods[old_key].pod
            if owner.kind == "DaemonSet" and old.spec.node_name != new.spec.node_name:
                continue
            if owner.kind == "StatefulSet" and old.metadata.name != new.metadata.name:
                continue
            return owner.to_replace.pop(i)[1]
        return None

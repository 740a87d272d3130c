"""Controller manager: the workload controllers that create pods and replace gone ones.

ReplicaSets (and the Deployments that own them), StatefulSets, DaemonSets and Jobs keep
the pods they want, named as Kubernetes names them (deterministically). A pod that is
evicted, rejected by its kubelet, OOM-killed for good or deleted is replaced as its
owner does it, and the replacement is a ``PodReplaced`` decision. Work happens on a clock
tick after the instant's inputs are in, so a controller never mistakes a pod listed
later in the scenario for one it must create.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from ledgerlet_core.apiserver.priority import AdmissionError, admit_priority, known_classes, with_status
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import PHASE_TIMERS, ClockTick, ObjectCreated, PodStarted
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
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
from ledgerlet_core.loop.dispatch import Loop
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers
from ledgerlet_core.model.annotations import WORKLOAD_ANNOTATION
from ledgerlet_core.model.codec import convert, object_builtins
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import Node, Pod, PriorityClass, Workload

#: how long a controller waits before replacing a pod its kubelet refused (see _on_PodRejected)
REJECTED_REPLACEMENT_DELAY = SECOND

#: how a pod ends, from the controllers' point of view
FAILED = "failed"  # evicted, rejected, OOM-killed for good: the object stays, phase Failed
GONE = "gone"  # the pod has exited after a delete, or after it failed: the name is free


@dataclass(slots=True)
class _Pod:
    pod: Pod
    owner: str
    state: str = "active"  # active | failed | gone
    running: bool = False  # started by its kubelet


@dataclass(slots=True)
class _Owner:
    workload: Workload
    #: the top-level workload usage keys name (a Deployment for its ReplicaSet)
    top: str
    pods: list[str] = field(default_factory=list)
    serial: int = 0
    failures: int = 0
    #: per node (DaemonSet) or "" (Job): failures and when the next try is due
    node_failures: dict[str, int] = field(default_factory=dict)
    retry_at: dict[str, int] = field(default_factory=dict)
    #: pods gone or failed that the next pods replace, in the order they ended
    to_replace: list[tuple[tuple[int, tuple[int, ...]], str]] = field(default_factory=list)
    #: a DaemonSet's pods by node
    by_node: dict[str, list[str]] = field(default_factory=dict)

    def add(self, pod: Pod) -> None:
        if pod.key not in self.pods:
            self.pods.append(pod.key)
            if pod.spec.node_name:
                self.by_node.setdefault(pod.spec.node_name, []).append(pod.key)


class ControllerManager(Loop):
    name = "controller-manager"
    topics = (INPUTS, CLOCK, DECISIONS)

    def __init__(self) -> None:
        super().__init__()
        self.nodes: dict[str, Node] = {}
        self.classes: dict[str, PriorityClass] = {}
        self.owners: dict[str, _Owner] = {}
        self.pods: dict[str, _Pod] = {}
        self.timers = Timers(self.name)
        #: what the next sync looks at: everything, or these owners (a DaemonSet: these nodes)
        self._dirty_all = False
        self._dirty: dict[str, set[str] | None] = {}
        #: retries by when they are due: (at, owner, node or "")
        self._due: list[tuple[int, str, str]] = []
        self._node_order: dict[str, int] = {}
        self._nodes_seen = 0

    def handle(self, env: Envelope, out: Emitter) -> None:
        handler = getattr(self, f"_on_{env.type}", None)
        if handler is not None:
            handler(env, decode_data(env), out)

    def _wake(self, at: int, out: Emitter) -> None:
        self.timers.want(at, PHASE_TIMERS, out)

    # -- objects -----------------------------------------------------------------------
    def _on_ObjectApplied(self, env: Envelope, data: inp.ObjectApplied, out: Emitter) -> None:
        kind = data.object.get("kind")
        if kind == "Node":
            node = convert(data.object, Node)
            if node.metadata.name not in self.nodes:
                self._node_order[node.metadata.name] = self._nodes_seen
                self._nodes_seen += 1
            self.nodes[node.metadata.name] = node
        elif kind == "PriorityClass":
            pc = convert(data.object, PriorityClass)
            self.classes[pc.metadata.name] = pc
        elif kind in Workload.KINDS:
            self._workload(convert(data.object, Workload))
        elif kind == "Pod":
            self._adopt(convert(data.object, Pod))
        else:
            return
        self._dirty_all = True
        self._wake(env.t, out)

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

    def _workload(self, w: Workload) -> None:
        key = owner_key(w.metadata.namespace, w.kind, w.metadata.name)
        if w.kind == "Deployment":
            rs = replica_set_for(w)
            rs_key = owner_key(rs.metadata.namespace, "ReplicaSet", rs.metadata.name)
            self._register(rs_key, rs, top=key)
            return
        self._register(key, w, top=key)

    def _register(self, key: str, w: Workload, top: str) -> None:
        existing = self.owners.get(key)
        if existing is None:
            self.owners[key] = _Owner(w, top)
            for p in self.pods.values():  # pods listed before their owner
                if p.owner == key:
                    self.owners[key].add(p.pod)
        else:
            existing.workload = w

    def _adopt(self, pod: Pod) -> None:
        ref = controller_of(pod)
        if ref is None:
            return
        key = owner_key(pod.metadata.namespace, ref.kind, ref.name)
        terminal = pod.status.phase in ("Succeeded", "Failed")
        self.pods[pod.key] = _Pod(pod, key, FAILED if terminal else "active", running=pod.status.phase == "Running")
        owner = self.owners.get(key)
        if owner is not None:
            owner.add(pod)

    def _on_ObjectDeleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind in Workload.KINDS:
            ns = data.namespace or "default"
            for key in [k for k, o in self.owners.items() if o.top == owner_key(ns, data.kind, data.name)]:
                del self.owners[key]
        elif data.kind == "Node":
            self.nodes.pop(data.name, None)
            self._node_order.pop(data.name, None)

    # -- how pods end --------------------------------------------------------------------
    def _ended(self, pod_key: str | None, state: str, env: Envelope, out: Emitter, *, delay: int = 0) -> None:
        p = self.pods.get(pod_key or "")
        if p is None or p.state == GONE:
            return
        first_end = p.state == "active"
        p.state = state if p.state == "active" or state == GONE else p.state
        owner = self.owners.get(p.owner)
        if owner is None:
            return
        kind = owner.workload.kind
        if first_end and kind in ("DaemonSet", "Job"):
            slot = p.pod.spec.node_name if kind == "DaemonSet" else ""
            n = owner.node_failures.get(slot, 0) + 1
            owner.node_failures[slot] = n
            initial, maximum = (
                (DAEMON_BACKOFF_INITIAL, DAEMON_BACKOFF_MAX)
                if kind == "DaemonSet"
                else (JOB_BACKOFF_INITIAL, JOB_BACKOFF_MAX)
            )
            owner.retry_at[slot] = env.t + backoff(initial, maximum, n)
            heapq.heappush(self._due, (owner.retry_at[slot], p.owner, slot))
            self._wake(owner.retry_at[slot], out)
        # a StatefulSet replaces a pod under its own name, so only once it is gone
        replaceable = (first_end and kind != "StatefulSet") or (state == GONE and kind == "StatefulSet")
        if replaceable and all(k != p.pod.key for _, k in owner.to_replace):
            owner.to_replace.append((env.sort_key(), p.pod.key))
            owner.to_replace.sort()  # by when they ended, however the events were consumed
        if delay:
            heapq.heappush(self._due, (env.t + delay, p.owner, p.pod.spec.node_name if kind == "DaemonSet" else ""))
            self._wake(env.t + delay, out)
            return
        self._mark(p.owner, p.pod.spec.node_name if kind == "DaemonSet" else None)
        self._wake(env.t, out)

    def _on_PodEvicted(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
        self._ended(env.pod, FAILED, env, out)

    def _on_PodRejected(self, env: Envelope, data: dec.PodRejected, out: Emitter) -> None:
        if data.admitter == "kubelet":
            # Upstream replaces it at once and the create -> schedule -> reject loop spins at
            # the speed of its API calls until the node's taint keeps the scheduler away; in
            # virtual time that would never end, so the replacement waits one second.
            self._ended(env.pod, FAILED, env, out, delay=REJECTED_REPLACEMENT_DELAY)
        elif data.admitter == "apiserver" and env.pod in self.pods:
            # the create failed (quota, RuntimeClass): the pod was never stored; try again later
            p = self.pods.pop(env.pod)
            owner = self.owners.get(p.owner)
            if owner is not None and env.pod in owner.pods:
                owner.pods.remove(env.pod)
                owner.failures += 1
                at = env.t + backoff(JOB_BACKOFF_INITIAL, JOB_BACKOFF_MAX, owner.failures)
                heapq.heappush(self._due, (at, p.owner, ""))
                self._wake(at, out)

    def _on_OOMKilled(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        if data.pod_failed:
            self._ended(env.pod, FAILED, env, out)

    def _on_PodTerminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        self._ended(env.pod, GONE, env, out)

    def _on_PodPreempted(self, env: Envelope, data: dec.PodPreempted, out: Emitter) -> None:
        # deleted by the scheduler: no longer active for its owner (FilterActivePods), though
        # a StatefulSet waits for it to be gone before it reuses the name
        self._ended(env.pod, FAILED, env, out)

    def _on_PodForceDeleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self._ended(env.pod, GONE, env, out)

    def _on_PodStarted(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        p = self.pods.get(data.pod)
        if p is not None and p.pod.metadata.uid == data.uid:
            p.running = True
            if self.owners.get(p.owner) is not None and self.owners[p.owner].workload.kind == "StatefulSet":
                self._mark(p.owner)  # OrderedReady: the next ordinal may go now
                self._wake(env.t, out)

    # -- the work, once the instant's inputs are in -------------------------------------------
    def _on_ClockTick(self, env: Envelope, data: ClockTick, out: Emitter) -> None:
        self.timers.fired(env.t, data.phase)
        if data.phase != PHASE_TIMERS:
            return
        while self._due and self._due[0][0] <= env.t:
            _, key, slot = heapq.heappop(self._due)
            owner = self.owners.get(key)
            if owner is not None:
                self._mark(key, slot if owner.workload.kind == "DaemonSet" else None)
        if not (self._dirty_all or self._dirty):
            return
        everything, dirty = self._dirty_all, self._dirty
        self._dirty_all, self._dirty = False, {}
        for key, owner in list(self.owners.items()):
            if everything:
                self._sync(key, owner, env, out, None)
            elif key in dirty:
                self._sync(key, owner, env, out, dirty[key])

    def _runs_on(self, owner: _Owner, node: str) -> bool:
        return any(self.pods[k].state == "active" for k in owner.by_node.get(node, ()) if k in self.pods)

    def _active(self, owner: _Owner) -> list[_Pod]:
        return [self.pods[k] for k in owner.pods if k in self.pods and self.pods[k].state == "active"]

    def _sync(self, key: str, owner: _Owner, env: Envelope, out: Emitter, only: set[str] | None) -> None:
        """Create what the owner lacks (``only``: a DaemonSet looks at these nodes alone,
        in the order it looks at all of them)."""
        w = owner.workload
        if w.kind == "DaemonSet":
            order = self._node_order
            names = list(self.nodes) if only is None else sorted(only & self.nodes.keys(), key=lambda n: order[n])
            for node_name in names:
                node = self.nodes[node_name]
                if self._runs_on(owner, node_name) or not node_runs_daemon(w, node):
                    continue
                if owner.retry_at.get(node_name, 0) > env.t:
                    continue
                attempt = owner.node_failures.get(node_name, 0)
                name = daemon_pod_name(w, node_name, attempt)
                self._create(owner, key, name, env, out, node=node_name)
            return
        active = self._active(owner)
        want = replicas(w)
        limit = w.spec.backoff_limit if w.spec.backoff_limit is not None else JOB_BACKOFF_LIMIT
        if w.kind == "Job" and (owner.node_failures.get("", 0) > limit or owner.retry_at.get("", 0) > env.t):
            return
        if w.kind == "StatefulSet":
            by_name = {self.pods[k].pod.metadata.name: self.pods[k] for k in owner.pods if k in self.pods}
            ordered = w.spec.pod_management_policy != "Parallel"
            for ordinal in range(want):
                name = stateful_pod_name(w, ordinal)
                current = by_name.get(name)
                if current is None or current.state == GONE:
                    self._create(owner, key, name, env, out)
                    if ordered:
                        return  # OrderedReady: one ordinal at a time, each running before the next
                elif ordered and not (current.state == "active" and current.running):
                    return
            return
        for _ in range(want - len(active)):
            owner.serial += 1
            self._create(owner, key, replica_pod_name(w, owner.serial), env, out)

    def _create(self, owner: _Owner, key: str, name: str, env: Envelope, out: Emitter, *, node: str = "") -> None:
        w = owner.workload
        extra = DAEMON_TOLERATIONS if w.kind == "DaemonSet" else ()
        pod = pod_from_template(
            w,
            name,
            node=node,
            extra_tolerations=extra,
            uid_seed=f"{key}/{name}/{env.t}",
            annotations={WORKLOAD_ANNOTATION: owner.top.split("/", 1)[1]},
        )
        replaces = self._replaced_by(owner, pod)
        try:
            pod = with_status(admit_priority(pod, known_classes(self.classes)))
        except AdmissionError as exc:
            out.emit(
                dec.PodRejected(reason="FailedCreate", message=exc.message, admitter="apiserver"),
                pod=pod.key,
            )
            return
        self.pods[pod.key] = _Pod(pod, key)
        owner.add(pod)
        out.emit(ObjectCreated(object=object_builtins(pod), owner=owner.top), node=node or None, pod=pod.key)
        if replaces is not None:
            old = self.pods[replaces].pod
            out.emit(
                dec.PodReplaced(replacement=pod.key, owner=owner.top.split("/", 1)[1]),
                node=old.spec.node_name or None,
                pod=replaces,
            )

    def _replaced_by(self, owner: _Owner, new: Pod) -> str | None:
        """The gone pod this one replaces: on the same node (DaemonSet), of the same name
        (StatefulSet), else the oldest one waiting."""
        kind = owner.workload.kind
        for i, (_, old_key) in enumerate(owner.to_replace):
            old = self.pods[old_key].pod
            if kind == "DaemonSet" and old.spec.node_name != new.spec.node_name:
                continue
            if kind == "StatefulSet" and old.metadata.name != new.metadata.name:
                continue
            return owner.to_replace.pop(i)[1]
        return None

"""Scheduler: the API server's pod admission, then kube-scheduler's queue, filters,
scores and DefaultPreemption.

A thin shell over :mod:`ledgerlet_core.scheduling`: it folds objects, node status,
taints and pod lifecycles into the scheduler's cache, and at a clock tick (once the
instant's inputs are in) admits new pods and runs one scheduling cycle per ready pod in
queue order. Binding is a ``PodScheduled`` decision the kubelet acts on; preemption is a
``PodNominated`` decision and one ``PodPreempted`` per victim, which the kubelet stops
with its own grace period.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledgerlet_core.apiserver.admission import (
    admit_pod,
    admitted_record,
    default_conflict,
    validate_priority_class,
    validate_priority_class_update,
)
from ledgerlet_core.apiserver.priority import AdmissionError, known_classes
from ledgerlet_core.apiserver.quota import check_quota, pod_usage, quota_matches
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import PHASE_TIMERS, ClockTick, NodeStatusUpdated, ObjectCreated, PodStarted
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
from ledgerlet_core.kubelet.config import config_for_node
from ledgerlet_core.kubelet.node_status import allocatable, reported_capacity
from ledgerlet_core.loop.dispatch import Loop
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.k8s.objects import (
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ResourceQuota,
    RuntimeClass,
    Taint,
)
from ledgerlet_core.model.k8s.resources import quantities
from ledgerlet_core.model.k8s.selectors import matches
from ledgerlet_core.model.quantity import parse_quantity
from ledgerlet_core.model.timefmt import parse_rfc3339
from ledgerlet_core.model.usage import parse_node_usage
from ledgerlet_core.scheduling.config import SchedulerConfig
from ledgerlet_core.scheduling.cycle import CycleResult, schedule_one
from ledgerlet_core.scheduling.filters import NodeStatus
from ledgerlet_core.scheduling.info import NodeInfo, PodInfo, pod_info
from ledgerlet_core.scheduling.preemption import PDB, Preemption, pdb_violations
from ledgerlet_core.scheduling.queue import QueuedPod, backoff_duration, failed, flush_stale, move_all, ready


@dataclass(slots=True)
class _Pending:
    pod: Pod
    info: PodInfo
    #: the event that admitted it (a pod's decisions cite it)
    cause: str


def _filtered(statuses: dict[str, NodeStatus]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node, s in statuses.items():
        for r in s.reasons:
            out.setdefault(r, []).append(node)
    return out


def _printed(nanos: dict[str, int]) -> dict[str, str]:
    return {k: str(v) for k, v in quantities(nanos).items()}


class Scheduler(Loop):
    name = "scheduler"
    topics = (INPUTS, CLOCK, DECISIONS)

    def __init__(self) -> None:
        super().__init__()
        self.settings = SchedulerConfig()
        self.initial_backoff = SECOND
        self.max_backoff = 10 * SECOND
        self.base_config: dict[str, Any] = {}
        self.not_ready_seconds = 300
        self.unreachable_seconds = 300
        self.start_unix = 0.0
        self.classes: dict[str, PriorityClass] = known_classes()
        self.runtime_classes: dict[str, RuntimeClass] = {}
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.quotas: dict[str, ResourceQuota] = {}
        self.quota_used: dict[str, dict[str, int]] = {}
        self.charged: dict[str, list[tuple[str, dict[str, int]]]] = {}
        self.node_objects: dict[str, Node] = {}
        self.machines: dict[str, dict[str, int]] = {}
        self.nodes: dict[str, NodeInfo] = {}
        self._node_list: list[NodeInfo] | None = None
        self._user_taints: dict[str, list[Taint]] = {}
        self._plane_taints: dict[str, list[Taint]] = {}
        self.pod_node: dict[str, str] = {}
        self.pending: dict[str, _Pending] = {}
        self.queue: dict[str, QueuedPod] = {}
        self.nominated: dict[str, dict[str, PodInfo]] = {}
        self.start_index = 0
        self._seq = 0
        self._arrivals: list[tuple[tuple[int, tuple[int, ...]], str, dict[str, Any]]] = []
        self.timers = Timers(self.name)

    def handle(self, env: Envelope, out: Emitter) -> None:
        handler = getattr(self, f"_on_{env.type}", None)
        if handler is not None:
            handler(env, decode_data(env), out)

    def _wake(self, at: int, out: Emitter) -> None:
        self.timers.want(at, PHASE_TIMERS, out)

    # -- configuration and objects ------------------------------------------------------
    def _on_ScenarioStarted(self, env: Envelope, data: inp.ScenarioStarted, out: Emitter) -> None:
        cfg = self.settings = convert(data.scheduler_config, SchedulerConfig)
        self.initial_backoff = cfg.pod_initial_backoff_seconds * SECOND
        self.max_backoff = cfg.pod_max_backoff_seconds * SECOND
        self.base_config = data.kubelet_config
        ctl = data.controller_config
        self.not_ready_seconds = int(ctl.get("defaultNotReadyTolerationSeconds", 300))
        self.unreachable_seconds = int(ctl.get("defaultUnreachableTolerationSeconds", 300))
        self.start_unix = parse_rfc3339(data.start).timestamp()

    def _on_ObjectApplied(self, env: Envelope, data: inp.ObjectApplied, out: Emitter) -> None:
        obj = data.object
        kind = obj.get("kind")
        if kind == "Node":
            self._node(convert(obj, Node), env, out)
        elif kind == "Pod":
            if data.initial:
                self._initial_pod(convert(obj, Pod))
            else:
                self._later(env, obj, out)
        elif kind == "PriorityClass":
            if data.initial:
                pc = convert(obj, PriorityClass)  # defaulted when decoded (apply_defaults)
                self.classes[pc.metadata.name] = pc
            else:
                self._later(env, obj, out)
        elif kind == "RuntimeClass":
            rc = convert(obj, RuntimeClass)
            self.runtime_classes[rc.metadata.name] = rc
        elif kind == "PodDisruptionBudget":
            pdb = convert(obj, PodDisruptionBudget)
            self.pdbs[f"{pdb.metadata.namespace or 'default'}/{pdb.metadata.name}"] = pdb
        elif kind == "ResourceQuota":
            q = convert(obj, ResourceQuota)
            key = f"{q.metadata.namespace or 'default'}/{q.metadata.name}"
            self.quotas[key] = q
            self.quota_used.setdefault(key, {})

    def _on_ObjectCreated(self, env: Envelope, data: ObjectCreated, out: Emitter) -> None:
        if data.object.get("kind") == "Pod":
            self._later(env, data.object, out)

    def _later(self, env: Envelope, obj: dict[str, Any], out: Emitter) -> None:
        self._arrivals.append((env.sort_key(), env.id, obj))
        self._wake(env.t, out)

    def _on_UsageDeclared(self, env: Envelope, data: inp.UsageDeclared, out: Emitter) -> None:
        if data.key.startswith("node/"):
            name = data.key[len("node/") :]
            self.machines[name] = dict(parse_node_usage(data.usage, data.key).capacity.items())
            if name in self.node_objects:
                self._node(self.node_objects[name], env, out)

    def _node(self, node: Node, env: Envelope, out: Emitter) -> None:
        name = node.metadata.name
        self.node_objects[name] = node
        config = config_for_node(self.base_config, node.metadata.annotations)
        capacity = reported_capacity(node.status.capacity, self.machines.get(name, {}), config)
        alloc = {k: q.nanos for k, q in allocatable(capacity, config).items()}
        existing = self.nodes.get(name)
        if existing is None:
            info = NodeInfo(name, len(self.node_objects) - 1, dict(node.metadata.labels), alloc)
            self.nodes[name] = info
            self._node_list = None
        else:
            info = existing
            info.labels, info.allocatable = dict(node.metadata.labels), alloc
        info.unschedulable = node.spec.unschedulable
        self._retaint(name)
        self._cluster_event(env, out)

    def _retaint(self, name: str) -> None:
        info = self.nodes.get(name)
        if info is None:
            return
        spec = self.node_objects[name].spec.taints
        info.taints = [*spec, *self._plane_taints.get(name, []), *self._user_taints.get(name, [])]

    def _on_NodeStatusUpdated(self, env: Envelope, data: NodeStatusUpdated, out: Emitter) -> None:
        info = self.nodes.get(data.node)
        if info is None:
            return
        alloc = {k: parse_quantity(v).nanos for k, v in data.allocatable.items()}
        if alloc != info.allocatable:
            info.allocatable = alloc
            self._cluster_event(env, out)

    def _on_NodeTaintAdded(self, env: Envelope, data: dec.NodeTaintAdded, out: Emitter) -> None:
        taints = self._plane_taints.setdefault(env.node or "", [])
        taint = Taint(key=data.key, value=data.value, effect=data.effect)
        if taint not in taints:
            taints.append(taint)
        self._retaint(env.node or "")

    def _on_NodeTaintRemoved(self, env: Envelope, data: dec.NodeTaintRemoved, out: Emitter) -> None:
        name = env.node or ""
        self._plane_taints[name] = [
            t for t in self._plane_taints.get(name, []) if (t.key, t.effect) != (data.key, data.effect)
        ]
        self._retaint(name)
        self._cluster_event(env, out)

    def _on_NodeTainted(self, env: Envelope, data: inp.NodeTainted, out: Emitter) -> None:
        taints = [t for t in self._user_taints.get(data.node, []) if (t.key, t.effect) != (data.key, data.effect)]
        taints.append(Taint(key=data.key, value=data.value, effect=data.effect))
        self._user_taints[data.node] = taints
        self._retaint(data.node)

    def _on_NodeUntainted(self, env: Envelope, data: inp.NodeUntainted, out: Emitter) -> None:
        self._user_taints[data.node] = [
            t
            for t in self._user_taints.get(data.node, [])
            if t.key != data.key or (data.effect and t.effect != data.effect)
        ]
        self._retaint(data.node)
        self._cluster_event(env, out)

    def _on_ObjectDeleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind == "Pod":
            key = f"{data.namespace or 'default'}/{data.name}"
            if key in self.queue:  # never bound: gone at once
                self._forget_pending(key)
                self._release(key)
                return
            node = self.nodes.get(self.pod_node.get(key, ""))
            if node is not None and key in node.pods:
                node.pods[key].terminating = True
        elif data.kind == "Node" and data.name in self.nodes:
            del self.nodes[data.name]
            self._node_list = None

    # -- how pods start and end -----------------------------------------------------------
    def _on_PodStarted(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is not None and data.pod in node.pods:
            node.pods[data.pod].start = env.t

    def _gone(self, key: str | None, env: Envelope, out: Emitter) -> None:
        if key is None:
            return
        node = self.nodes.get(self.pod_node.pop(key, ""))
        if node is not None and node.remove(key) is not None:
            self._release(key)
            self._cluster_event(env, out)

    def _on_PodTerminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        self._gone(env.pod, env, out)

    def _on_PodForceDeleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self._gone(env.pod, env, out)

    def _on_PodRejected(self, env: Envelope, data: dec.PodRejected, out: Emitter) -> None:
        if data.admitter == "kubelet":
            self._gone(env.pod, env, out)

    def _on_OOMKilled(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        if data.pod_failed:
            self._gone(env.pod, env, out)

    def _on_PodEvicted(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
        node = self.nodes.get(self.pod_node.get(env.pod or "", ""))
        if node is not None and env.pod in node.pods:
            node.pods[env.pod or ""].terminating = True

    def _cluster_event(self, env: Envelope, out: Emitter) -> None:
        """Something that may make a pending pod fit: unschedulable pods go back (after backoff)."""
        for at in sorted(set(move_all(self.queue, env.t, self.initial_backoff, self.max_backoff))):
            self._wake(at, out)

    # -- quota ------------------------------------------------------------------------------
    def _charge(self, pod: Pod) -> None:
        usage = pod_usage(pod)
        charged = []
        for key, q in self.quotas.items():
            if quota_matches(q, pod):
                used = self.quota_used.setdefault(key, {})
                mine = {k: v for k, v in usage.items() if k in q.spec.hard}
                for k, v in mine.items():
                    used[k] = used.get(k, 0) + v
                charged.append((key, mine))
        self.charged[pod.key] = charged

    def _release(self, key: str) -> None:
        for qkey, mine in self.charged.pop(key, []):
            used = self.quota_used.get(qkey, {})
            for k, v in mine.items():
                used[k] = used.get(k, 0) - v

    # -- admission ------------------------------------------------------------------------------
    def _initial_pod(self, pod: Pod) -> None:
        if pod.status.phase in ("Succeeded", "Failed"):
            return
        self._charge(pod)
        info = pod_info(pod)
        if pod.spec.node_name:
            start = pod.status.start_time
            info.start = int((parse_rfc3339(start).timestamp() - self.start_unix) * SECOND) if start is not None else 0
            self._bind_info(info, pod.spec.node_name)
        else:
            self._enqueue(pod, info, 0, "")

    def _admit_class(self, env: Envelope, obj: dict[str, Any], out: Emitter) -> None:
        pc = convert(obj, PriorityClass)
        name = pc.metadata.name
        old = self.classes.get(name)
        error = validate_priority_class(pc)
        if error is None and old is not None:
            error = validate_priority_class_update(old, pc)
        conflict = default_conflict(pc, self.classes) if error is None else None
        if error is not None:  # validation: 422 Invalid
            reason, message = (
                "Invalid",
                f'PriorityClass.scheduling.k8s.io "{name}" is invalid: {error.field}: {error.message}',
            )
        elif conflict is not None:  # the Priority admission plugin: 403 Forbidden
            reason, message = (
                "Forbidden",
                f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: {conflict.message}',
            )
        else:
            self.classes[name] = pc
            return
        out.emit(dec.ObjectRejected(kind="PriorityClass", name=name, reason=reason, message=message))

    def _admit(self, env: Envelope, obj: dict[str, Any], cause: str, out: Emitter) -> None:
        if obj.get("kind") == "PriorityClass":
            self._admit_class(env, obj, out)
            return
        raw = convert(obj, Pod)
        key = raw.key
        if key in self.pending or key in self.pod_node:
            return  # an update of a pod the API server has: spec.priority etc. are immutable
        try:
            pod = admit_pod(
                raw,
                self.classes,
                self.runtime_classes,
                not_ready_seconds=self.not_ready_seconds,
                unreachable_seconds=self.unreachable_seconds,
            )
            error = check_quota(pod, self.quotas.values(), self.quota_used)
            if error is not None:
                raise error
        except AdmissionError as exc:
            out.emit(
                dec.PodRejected(reason="Forbidden", message=exc.message, admitter="apiserver"),
                node=raw.spec.node_name or None,
                pod=key,
                causes=[cause],
            )
            return
        self._charge(pod)
        admitted = out.emit(admitted_record(pod), node=pod.spec.node_name or None, pod=key, causes=[cause])
        info = pod_info(pod)
        if pod.spec.node_name:
            self._bind_info(info, pod.spec.node_name)  # bound by the user: no scheduling
        else:
            self._enqueue(pod, info, env.t, admitted.id)

    def _enqueue(self, pod: Pod, info: PodInfo, now: int, cause: str) -> None:
        self._seq += 1
        self.pending[pod.key] = _Pending(pod, info, cause)
        self.queue[pod.key] = QueuedPod(pod.key, info.priority, now, self._seq, ready_at=now)

    def _forget_pending(self, key: str) -> None:
        p = self.pending.pop(key, None)
        self.queue.pop(key, None)
        if p is not None and p.info.nominated:
            self.nominated.get(p.info.nominated, {}).pop(key, None)

    def _bind_info(self, info: PodInfo, node_name: str) -> None:
        node = self.nodes.get(node_name)
        if node is None:
            return
        info.nominated = ""
        node.add(info)
        self.pod_node[info.key] = node_name

    # -- scheduling ----------------------------------------------------------------------------
    def _on_ClockTick(self, env: Envelope, data: ClockTick, out: Emitter) -> None:
        self.timers.fired(env.t, data.phase)
        if data.phase != PHASE_TIMERS:
            return
        arrivals, self._arrivals = sorted(self._arrivals, key=lambda a: a[0]), []
        for _, cause, obj in arrivals:
            self._admit(env, obj, cause, out)
        for at in flush_stale(self.queue, env.t, self.initial_backoff, self.max_backoff):
            self._wake(at, out)
        for q in ready(self.queue, env.t):
            if q.key in self.queue:
                self._attempt(env, q, out)

    def _node_order(self) -> list[NodeInfo]:
        if self._node_list is None:
            self._node_list = sorted(self.nodes.values(), key=lambda n: n.order)
        return self._node_list

    def _nominated_view(self) -> dict[str, list[PodInfo]]:
        return {n: list(pods.values()) for n, pods in self.nominated.items() if pods}

    def _pdb_views(self) -> list[PDB]:
        """PDBs with ``disruptionsAllowed`` as the disruption controller computes it: healthy
        (running, not terminating) matching pods minus what must stay available."""
        views = []
        running = [p for n in self.nodes.values() for p in n.pods.values() if not p.terminating]
        for pdb in self.pdbs.values():
            ns = pdb.metadata.namespace or "default"
            matching = [p for p in running if p.namespace == ns and matches(pdb.spec.selector, p.labels)]
            healthy = len(matching)
            spec = pdb.spec
            if spec.min_available is not None:
                want = _resolve(spec.min_available, healthy, up=True)
            elif spec.max_unavailable is not None:
                want = healthy - _resolve(spec.max_unavailable, healthy, up=True)
            else:
                want = 0
            views.append(PDB(pdb.metadata.name, ns, spec.selector, max(healthy - want, 0)))
        return views

    def _attempt(self, env: Envelope, q: QueuedPod, out: Emitter) -> None:
        p = self.pending[q.key]
        info = p.info
        nominated = self._nominated_view()
        pdbs = self._pdb_views() if self.pdbs else []
        result = schedule_one(
            info, self._node_order(), nominated, pdbs, self.settings, now=env.t, start_index=self.start_index
        )
        self.start_index = result.next_start
        causes = [env.id, p.cause] if p.cause else [env.id]
        if result.node:
            self._bound(env, q, p, result, causes, out)
            return
        post = result.preemption
        if post is not None and post.nominate:
            self._nominate(env, p, post, result, pdbs, causes, out)
        elif post is not None and post.nominate == "" and info.nominated:
            self.nominated.get(info.nominated, {}).pop(info.key, None)
            info.nominated = ""
        failed(q, env.t)
        out.emit(
            dec.PodUnschedulable(
                reasons=result.reasons,
                message=result.message,
                priority=info.priority,
                requests=_printed(info.requests),
                filtered=_filtered(result.statuses),
                attempts=q.attempts,
                backoff_seconds=backoff_duration(q.attempts, self.initial_backoff, self.max_backoff) / SECOND,
                nominated_node=info.nominated,
            ),
            pod=info.key,
            causes=causes,
        )

    def _bound(
        self, env: Envelope, q: QueuedPod, p: _Pending, result: CycleResult, causes: list[str], out: Emitter
    ) -> None:
        info = p.info
        nominated = info.nominated
        if nominated:
            self.nominated.get(nominated, {}).pop(info.key, None)
        del self.pending[q.key]
        del self.queue[q.key]
        self._bind_info(info, result.node)
        top = sorted(result.scores, key=lambda s: -s.total)[:5]
        out.emit(
            dec.PodScheduled(
                requests=_printed(info.requests),
                why=result.why,
                priority=info.priority,
                evaluated_nodes=result.evaluated,
                feasible_nodes=sum(1 for s in result.statuses.values() if s.fits),
                filtered=_filtered({n: s for n, s in result.statuses.items() if not s.fits}),
                scores=[dec.NodeScoreSeen(node=s.node, total=s.total, plugins=s.plugins) for s in top],
                nominated_node=nominated,
                attempts=q.attempts + 1,
            ),
            node=result.node,
            pod=info.key,
            causes=causes,
        )

    def _nominate(
        self,
        env: Envelope,
        p: _Pending,
        post: Preemption,
        result: CycleResult,
        pdbs: list[PDB],
        causes: list[str],
        out: Emitter,
    ) -> None:
        """Record the nomination, delete the victims (their own grace), and clear the
        nominations of lower-priority pods on that node (``prepareCandidate``)."""
        info = p.info
        node_name = post.nominate or ""
        if info.nominated and info.nominated != node_name:
            self.nominated.get(info.nominated, {}).pop(info.key, None)
        info.nominated = node_name
        cleared = []
        for other in sorted(self.nominated.get(node_name, {}).values(), key=lambda o: o.key):
            if other.priority < info.priority and other.key != info.key:
                other.nominated = ""
                self.nominated[node_name].pop(other.key)
                cleared.append(other.key)
        self.nominated.setdefault(node_name, {})[info.key] = info
        violating = {v.key for v in pdb_violations(post.victims, pdbs)[0]}
        nominated_env = out.emit(
            dec.PodNominated(
                victims=[v.key for v in post.victims],
                priority=info.priority,
                message=(
                    f"{len(post.victims)} pod(s) of lower priority removed from {node_name} so that the pod fits; "
                    "every other lower-priority pod there was reprieved"
                ),
                candidates=[
                    dec.PreemptionCandidate(
                        node=c.node,
                        victims=[v.key for v in c.victims],
                        pdb_violations=c.pdb_violations,
                        highest_victim_priority=c.victims[0].priority,
                    )
                    for c in post.candidates[:10]
                ],
                decided_by=post.decided_by,
                tied=post.tied,
                offset=post.offset,
                examined_nodes=post.examined,
                pdb_violations=next((c.pdb_violations for c in post.candidates if c.node == node_name), 0),
                cleared_nominations=cleared,
                filtered=_filtered(result.statuses),
            ),
            node=node_name,
            pod=info.key,
            causes=causes,
        )
        for victim in post.victims:
            if victim.terminating:
                continue  # already being deleted: no second delete
            victim.terminating = True
            victim.by_preemption = True
            out.emit(
                dec.PodPreempted(
                    preemptor=info.key,
                    grace_period_seconds=victim.termination_grace,
                    priority=victim.priority,
                    preemptor_priority=info.priority,
                    message=f"{info.scheduler_name}: preempting to accommodate a higher priority pod",
                    violates_pdb=victim.key in violating,
                ),
                node=node_name,
                pod=victim.key,
                causes=[nominated_env.id],
            )
        for key in cleared:
            if key in self.queue:
                for at in move_all({key: self.queue[key]}, env.t, self.initial_backoff, self.max_backoff):
                    self._wake(at, out)


def _resolve(value: int | str, total: int, *, up: bool) -> int:
    """An IntOrString: an int, or a percentage of ``total`` (rounded up, as the PDB controller)."""
    if isinstance(value, int):
        return value
    pct = int(value.rstrip("%"))
    return -(-total * pct // 100) if up else total * pct // 100


__all__ = ["Scheduler"]

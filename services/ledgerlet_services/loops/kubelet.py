"""Eviction manager: the kubelet's node-pressure eviction, one pass per observation.

A thin shell over :func:`ledgerlet_core.kubelet.eviction.manager.synchronize`: it keeps each
node's pods (in admission order) and eviction state, turns a pass's result into
decisions, admits pods arriving at a node under pressure (``Admit``), and stops pods
(eviction, deletion) by their grace period and their ``ledgerlet/exit-after``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ledgerlet_core.apiserver.admission import apply_admitted
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import (
    PHASE_STATUS,
    PHASE_TIMERS,
    ClockTick,
    LazyNodeObserved,
    ObjectCreated,
    PodDeletionRequested,
    PodStarted,
    decode_lazy_observation,
)
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS, OBSERVATIONS
from ledgerlet_core.kubelet.config import config_for_node
from ledgerlet_core.kubelet.eviction.local_storage import has_local_storage_limits
from ledgerlet_core.kubelet.eviction.manager import (
    IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS,
    EvictionState,
    PassResult,
    admit,
    synchronize,
)
from ledgerlet_core.kubelet.eviction.observations import threshold_quantity
from ledgerlet_core.kubelet.eviction.signals import SIGNAL_TO_CONDITION
from ledgerlet_core.kubelet.graceful_shutdown import ADMIT_MESSAGE, ADMIT_REASON, SHUTDOWN_MESSAGE
from ledgerlet_core.kubelet.node import KubeletNode
from ledgerlet_core.loop.dispatch import Loop
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers, next_multiple
from ledgerlet_core.model.annotations import FILESYSTEMS_ANNOTATION, exit_after_seconds
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND, seconds
from ledgerlet_core.model.k8s.objects import Node, Pod
from ledgerlet_core.model.usage import parse_node_usage
from ledgerlet_core.node_sim.stats import effective_layout


@dataclass(order=True, slots=True)
class _Exit:
    at: int
    #: the (time, order) of the decision that stopped the pod: ties broken the same way
    #: whatever order the services' events were consumed in
    source: tuple[int, tuple[int, ...]]
    pod: str = field(compare=False)
    node: str = field(compare=False)
    data: dec.PodTerminated = field(compare=False)
    cause: str = field(compare=False)


class EvictionManager(Loop):
    name = "eviction-manager"
    topics = (INPUTS, CLOCK, OBSERVATIONS, DECISIONS)

    def __init__(self) -> None:
        super().__init__()
        self.base_config: dict[str, Any] = {}
        self.nodes: dict[str, KubeletNode] = {}
        self.pod_node: dict[str, str] = {}
        self.exits: list[_Exit] = []
        self._limits: dict[str, bool] = {}
        #: pods that arrived or were deleted, handled at the next tick in event order
        self.arrivals: list[tuple[tuple[int, tuple[int, ...]], str, tuple[str, Any]]] = []
        #: pods the API server has not admitted yet, and admitted pods waiting for the scheduler
        self.unadmitted: dict[str, Pod] = {}
        self.unbound: dict[str, Pod] = {}
        self.scheduled: dict[str, Envelope] = {}
        #: the graceful shutdown's kills: (at, seq, pod, node, grace, cause)
        self.kills: list[tuple[int, int, str, str, int, str]] = []
        self.timers = Timers(self.name)

    def handle(self, env: Envelope, out: Emitter) -> None:
        if env.type == "NodeObserved":  # the hot path: pods' stats decoded only if needed
            self._on_NodeObserved(env, decode_lazy_observation(env.data), out)
            return
        handler = getattr(self, f"_on_{env.type}", None)
        if handler is not None:
            handler(env, decode_data(env), out)

    # -- inputs ------------------------------------------------------------------
    def _on_ScenarioStarted(self, env: Envelope, data: inp.ScenarioStarted, out: Emitter) -> None:
        self.base_config = data.kubelet_config

    def _on_ObjectApplied(self, env: Envelope, data: inp.ObjectApplied, out: Emitter) -> None:
        kind = data.object.get("kind")
        if kind == "Node":
            node = convert(data.object, Node)
            config = config_for_node(self.base_config, node.metadata.annotations)
            layout = effective_layout(node.metadata.annotations.get(FILESYSTEMS_ANNOTATION), False)
            existing = self.nodes.get(node.metadata.name)
            if existing is None:
                self.nodes[node.metadata.name] = KubeletNode(node, config, layout)
                # the kubelet publishes node status from the start, then every nodeStatusUpdateFrequency
                self.timers.want(next_multiple(env.t, config.node_status_update_frequency), PHASE_STATUS, out)
            else:
                existing.node, existing.config, existing.layout = node, config, layout
        elif kind == "Pod":
            pod = convert(data.object, Pod)
            if data.initial:
                self._pod_applied(env, pod, True, out)
            else:
                self._arrived(pod)

    def _on_ObjectCreated(self, env: Envelope, data: ObjectCreated, out: Emitter) -> None:
        if data.object.get("kind") == "Pod":
            self._arrived(convert(data.object, Pod))

    def _arrived(self, pod: Pod) -> None:
        """A pod created or updated: an update of a pod here changes it, a new one waits for admission."""
        node = self.nodes.get(self.pod_node.get(pod.key, ""))
        if node is not None and pod.key in node.active:
            node.active[pod.key] = msgspec.structs.replace(pod, spec=node.active[pod.key].spec)
            return
        if pod.key not in self.unbound:
            self.unadmitted[pod.key] = pod

    def _on_UsageDeclared(self, env: Envelope, data: inp.UsageDeclared, out: Emitter) -> None:
        if not data.key.startswith("node/"):
            return
        node = self.nodes.get(data.key[len("node/") :])
        if node is None:
            return
        node.closed_loop = True
        node.machine = dict(parse_node_usage(data.usage, data.key).capacity.items())
        # the periodic image GC runs every imageGCPeriod from time 0 on closed-loop nodes
        self.timers.want(next_multiple(env.t, node.config.image_gc_period), PHASE_STATUS, out)

    def _pod_applied(self, env: Envelope, pod: Pod, initial: bool, out: Emitter) -> None:
        node = self.nodes.get(pod.spec.node_name) if pod.spec.node_name else None
        if node is None:
            return
        key = pod.key
        if key in node.active:
            node.active[key] = pod  # an update of a pod already running here
            return
        if initial:
            if pod.status.phase not in ("Succeeded", "Failed"):
                node.active[key] = pod
                self.pod_node[key] = node.node.metadata.name
            return
        # Admission is a decision: taken at the next tick, once every service has this pod.
        self._later(env, ("admit", pod), out)

    def _on_PodAdmitted(self, env: Envelope, data: dec.PodAdmitted, out: Emitter) -> None:
        """The API server stored the pod: bound by its creator, or waiting for the scheduler."""
        pod = self.unadmitted.pop(env.pod or "", None)
        if pod is None:
            return
        pod = apply_admitted(pod, data)
        scheduled = self.scheduled.pop(pod.key, None)
        if scheduled is not None:  # the binding arrived first (same step, no order between them)
            self._bind(scheduled, pod, out)
        elif pod.spec.node_name:
            self._pod_applied(env, pod, False, out)
        else:
            self.unbound[pod.key] = pod

    def _on_PodScheduled(self, env: Envelope, data: dec.PodScheduled, out: Emitter) -> None:
        pod = self.unbound.pop(env.pod or "", None)
        if pod is None:
            if env.pod in self.unadmitted:
                self.scheduled[env.pod] = env
            return
        self._bind(env, pod, out)

    def _bind(self, scheduled: Envelope, pod: Pod, out: Emitter) -> None:
        if scheduled.node:
            bound = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=scheduled.node))
            self._pod_applied(scheduled, bound, False, out)

    def _on_PodRejected(self, env: Envelope, data: dec.PodRejected, out: Emitter) -> None:
        if data.admitter == "apiserver":
            self.unadmitted.pop(env.pod or "", None)

    # -- shutdown and power -------------------------------------------------------------
    def _on_NodeShutdownRequested(self, env: Envelope, data: inp.NodeShutdownRequested, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is not None and not node.off:
            node.shutting_down = True

    def _on_NodeShutdownStarted(self, env: Envelope, data: dec.NodeShutdownStarted, out: Emitter) -> None:
        """Carry out the shutdown manager's plan: each pod killed at its time with its grace."""
        name = env.node or ""
        for group in data.groups:
            for k in group.kills:
                at = round(k.at * SECOND)
                heapq.heappush(self.kills, (at, len(self.kills), k.pod, name, k.grace_period_seconds, env.id))
                self.timers.want(at, PHASE_TIMERS, out)

    def _went_off(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        node.off, node.shutting_down = True, False
        for e in self.exits:  # killed, not yet exited: they stay Terminating
            if e.node == name:
                node.terminating[e.pod] = (e.data, e.cause)

    def _shorten(self, env: Envelope, key: str, grace: int, out: Emitter) -> None:
        """A pod already stopping is killed again with a shorter grace: the pod worker keeps
        the shorter one (``pod_workers.go: calculateEffectiveGracePeriod``)."""
        for i, e in enumerate(self.exits):
            if e.pod != key:
                continue
            at = env.t + grace * SECOND
            if at < e.at:
                self.exits[i] = _Exit(at, e.source, e.pod, e.node, e.data, e.cause)
                heapq.heapify(self.exits)
                self.timers.want(at, PHASE_TIMERS, out)
            return

    def _on_NodeShutdownCompleted(self, env: Envelope, data: dec.NodeShutdownCompleted, out: Emitter) -> None:
        self._went_off(env.node or "")

    def _on_NodePoweredOff(self, env: Envelope, data: inp.NodePoweredOff, out: Emitter) -> None:
        self._went_off(data.node)

    def _on_NodePoweredOn(self, env: Envelope, data: inp.NodePoweredOn, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is None or not node.off:
            return
        self._later(env, ("power-on", data.node), out)

    def _powered_on(self, env: Envelope, name: str, cause: str, out: Emitter) -> None:
        """The kubelet is back: it finishes the pods deleted while it was away (their
        containers did not survive the reboot) and starts over with its eviction state."""
        node = self.nodes[name]
        node.off, node.shutting_down = False, False
        node.state = EvictionState()
        node.published_conditions = ()
        for key, (data, _) in sorted(node.terminating.items()):
            out.emit(data, node=name, pod=key, causes=[cause])
            self.pod_node.pop(key, None)
        node.terminating.clear()

    def _on_PodForceDeleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        """Gone from the API: its kubelet (if it ever comes back) has nothing left to finish."""
        node = self.nodes.get(self.pod_node.pop(env.pod or "", ""))
        if node is not None:
            node.active.pop(env.pod or "", None)
            node.terminating.pop(env.pod or "", None)

    def _on_PodDeletionRequested(self, env: Envelope, data: PodDeletionRequested, out: Emitter) -> None:
        self._later(env, ("controller-delete", data), out)

    def _on_PodPreempted(self, env: Envelope, data: dec.PodPreempted, out: Emitter) -> None:
        """The scheduler deleted a victim: the kubelet stops it with its own grace period."""
        self._later(env, ("preempt", (env.pod or "", data)), out)

    def _on_ObjectDeleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind == "Pod":
            key = f"{data.namespace or 'default'}/{data.name}"
            if self.unbound.pop(key, None) is None:
                self._later(env, ("delete", data), out)

    def _later(self, env: Envelope, work: tuple[str, Any], out: Emitter) -> None:
        self.arrivals.append((env.sort_key(), env.id, work))
        self.timers.want(env.t, PHASE_TIMERS, out)

    def _admit(self, pod: Pod, cause: str, out: Emitter) -> None:
        node = self.nodes.get(pod.spec.node_name)
        if node is None or pod.key in node.active:
            return
        key, name = pod.key, node.name
        ok, reason, message = admit(pod, node.state.conditions)
        if node.shutting_down or node.off:  # nodeshutdown Admit: every pod, whatever it tolerates
            ok, reason, message = False, ADMIT_REASON, ADMIT_MESSAGE
        if not ok:
            out.emit(
                dec.PodRejected(reason=reason, message=message, admitter="kubelet"),
                node=name,
                pod=key,
                causes=[cause],
            )
            return
        node.active[key] = pod
        self.pod_node[key] = name
        out.emit(PodStarted(node=name, pod=key, uid=pod.metadata.uid), node=name, pod=key, causes=[cause])

    def _delete(self, env: Envelope, data: inp.ObjectDeleted, cause: str, out: Emitter) -> None:
        key = f"{data.namespace or 'default'}/{data.name}"
        node_name = self.pod_node.get(key)
        node = self.nodes.get(node_name) if node_name else None
        pod = node.active.pop(key, None) if node else None
        if node is None or pod is None:
            return
        own = pod.spec.termination_grace_period_seconds or 0
        grace = data.grace_period_seconds if data.grace_period_seconds is not None else own
        reason = "ForceDeleted" if data.force else "Deleted"
        self._stop(env, node.name, pod, grace, reason, cause, out)

    def _preempted(self, env: Envelope, victim: tuple[str, dec.PodPreempted], cause: str, out: Emitter) -> None:
        key, data = victim
        node = self.nodes.get(self.pod_node.get(key, ""))
        pod = node.active.pop(key, None) if node else None
        if node is None or pod is None:
            return
        self._stop(env, node.name, pod, data.grace_period_seconds, "Preempted", cause, out)

    def _limited(self, pod: Pod) -> bool:
        """Whether a pod sets local-storage limits (cached: pods do not change once admitted)."""
        uid = pod.metadata.uid
        if uid not in self._limits:
            self._limits[uid] = has_local_storage_limits(pod)
        return self._limits[uid]

    def _on_OOMKilled(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        """A pod whose containers were OOM-killed for good has failed: no longer active."""
        if not data.pod_failed or env.pod is None:
            return
        node = self.nodes.get(self.pod_node.pop(env.pod, "") or "")
        if node is not None:
            node.active.pop(env.pod, None)

    # -- passes ------------------------------------------------------------------
    def _on_NodeObserved(self, env: Envelope, data: LazyNodeObserved, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is None or node.off:
            return
        layout = data.runtime.layout if data.runtime is not None else node.layout
        result = synchronize(
            now=env.t,
            config=node.config,
            layout=layout,
            state=node.state,
            summary=data.node_summary(),
            pod_stats=data.pod_stats,
            active_pods=list(node.active.values()),
            local_storage_candidates=[p for p in node.active.values() if self._limited(p)],
            runtime=data.runtime,
            after_reclaim=data.after_reclaim,
            cleanup_pending=node.cleanup_pending(env.t),
        )
        node.state = result.state
        node.last_summary = result.post_reclaim_summary or data.node_summary()
        node.last_runtime = result.runtime
        node.last_observation_id = env.id
        self._emit_pass(env, data.node, node, result, out)

    def _emit_pass(self, env: Envelope, name: str, node: KubeletNode, result: PassResult, out: Emitter) -> None:
        met_written = [t.written for t in result.met]
        for change in result.condition_changes:
            out.emit(
                dec.NodeConditionChanged(
                    condition=change.condition,
                    status=change.status,
                    reason=change.reason,
                    message=change.message,
                    thresholds=[
                        w
                        for t, w in zip(result.met, met_written, strict=True)
                        if change.status == "True" and SIGNAL_TO_CONDITION[t.signal] == change.condition
                    ],
                ),
                node=name,
            )
        chosen = result.chosen
        for r in result.reclaims:
            if r.bytes_freed == 0:
                continue  # attempted but freed nothing: recorded on the eviction it led to
            out.emit(
                dec.NodeReclaimed(
                    signal=str(chosen.signal) if chosen else "",
                    action=str(r.action),
                    bytes_freed=r.bytes_freed,
                    images=list(r.images),
                    containers=r.containers,
                ),
                node=name,
            )
        for local in result.local_evictions:
            key = local.pod.key
            evicted_local = out.emit(
                dec.PodEvicted(
                    signal=local.signal,
                    threshold=local.what,
                    observed=local.observed,
                    grace_period_seconds=IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS,
                    message=local.message,
                    ranking=[key],
                    resource="ephemeral-storage",
                    threshold_quantity=local.limit.value(),
                    hard=True,
                ),
                node=name,
                pod=key,
            )
            node.active.pop(key, None)
            self._stop(env, name, local.pod, IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS, "Evicted", evicted_local.id, out)
        ev = result.eviction
        if ev is None:
            return
        pod_key = ev.pod.key
        first = {t.written + str(t.grace_period): at for t, at in result.state.first_observed}
        seen = [
            dec.ThresholdSeen(
                threshold=t.written,
                quantity=threshold_quantity(t, result.observations[t.signal], with_min_reclaim=False).value(),
                available=result.observations[t.signal].available.value(),
                capacity=result.observations[t.signal].capacity.value(),
                hard=t.hard,
                grace_period_seconds=t.grace_period / SECOND,
                first_observed_at=first[t.written + str(t.grace_period)] / SECOND
                if t.written + str(t.grace_period) in first
                else None,
                min_reclaim=t.min_reclaim.resolve(result.observations[t.signal].capacity).value()
                if t.min_reclaim is not None
                else 0,
            )
            for t in result.met
            if t.signal in result.observations
        ]
        evicted = out.emit(
            dec.PodEvicted(
                signal=str(ev.threshold.signal),
                threshold=ev.threshold.written,
                observed=ev.observed.value(),
                grace_period_seconds=ev.grace_period_seconds,
                message=ev.message,
                ranking=[e.pod for e in ev.ranking],
                resource=ev.resource,
                threshold_quantity=ev.threshold_quantity.value(),
                capacity=ev.capacity.value(),
                hard=ev.threshold.hard,
                ranking_details=list(ev.ranking),
                thresholds_met=seen,
                offending_containers=list(ev.offending_containers),
                offending_containers_usage=list(ev.offending_containers_usage),
                skipped_critical=list(ev.skipped_critical),
                node_reclaim=[
                    dec.ReclaimAttempt(action=str(r.action), bytes_freed=r.bytes_freed) for r in result.reclaims
                ],
            ),
            node=name,
            pod=pod_key,
        )
        node.active.pop(pod_key, None)
        self._stop(env, name, ev.pod, ev.grace_period_seconds, "Evicted", evicted.id, out)

    # -- stopping pods -------------------------------------------------------------
    def _stop(
        self, env: Envelope, node: str, pod: Pod, grace: int, reason: str, cause: str, out: Emitter, message: str = ""
    ) -> None:
        """The pod gets SIGTERM now and exits after ``exit-after`` or its grace, whichever first."""
        data = dec.PodTerminated(reason=reason, grace_period_seconds=grace, killed_at=env.t / SECOND, message=message)
        if self.nodes[node].off and reason != "ForceDeleted":
            # the kubelet is gone: the pod stays Terminating until it comes back (or is force-deleted;
            # a force delete removes the object from the API server whatever the kubelet does)
            self.nodes[node].terminating[pod.key] = (data, cause)
            return
        exit_in = min(seconds(exit_after_seconds(pod)), max(grace, 0) * SECOND)
        if exit_in == 0:
            out.emit(data, node=node, pod=pod.key, causes=[cause])
            self.pod_node.pop(pod.key, None)
            return
        if reason == "Evicted":
            self.nodes[node].evicted[pod.key] = env.t  # the next passes wait for it to go
        at = env.t + exit_in
        heapq.heappush(self.exits, _Exit(at, (env.t, (*env.order, len(self.exits))), pod.key, node, data, cause))
        self.timers.want(at, PHASE_TIMERS, out)

    def _on_ClockTick(self, env: Envelope, data: ClockTick, out: Emitter) -> None:
        self.timers.fired(env.t, data.phase)
        if data.phase == PHASE_STATUS:
            self._periodic(env, out)
            return
        if data.phase != PHASE_TIMERS:
            return
        while self.kills and self.kills[0][0] <= env.t:
            _, _, key, node_name, grace, cause = heapq.heappop(self.kills)
            killed = self.nodes[node_name].active.pop(key, None)
            if killed is not None:
                self._stop(env, node_name, killed, grace, "NodeShutdown", cause, out, SHUTDOWN_MESSAGE)
            else:
                self._shorten(env, key, grace, out)
        while self.exits and self.exits[0].at <= env.t:
            e = heapq.heappop(self.exits)
            if self.nodes[e.node].off:
                continue  # killed before the machine went down: never confirmed
            out.emit(e.data, node=e.node, pod=e.pod, causes=[e.cause])
            self.pod_node.pop(e.pod, None)
            self.nodes[e.node].evicted.pop(e.pod, None)
        arrivals, self.arrivals = sorted(self.arrivals, key=lambda a: a[0]), []
        for _, cause, (what, payload) in arrivals:
            if what == "admit":
                self._admit(payload, cause, out)
            elif what == "preempt":
                self._preempted(env, payload, cause, out)
            elif what == "power-on":
                self._powered_on(env, payload, cause, out)
            elif what == "controller-delete":
                node = self.nodes.get(self.pod_node.get(payload.pod, ""))
                victim = node.active.pop(payload.pod, None) if node else None
                if node is not None and victim is not None:
                    self._stop(env, node.name, victim, payload.grace_period_seconds, payload.reason, cause, out)
            else:
                self._delete(env, payload, cause, out)

    # -- periodic: node status, image GC ---------------------------------------------
    def _periodic(self, env: Envelope, out: Emitter) -> None:
        for name, node in self.nodes.items():
            if node.off:
                continue
            seen = [env.id, node.last_observation_id] if node.last_observation_id else [env.id]
            if env.t % node.config.node_status_update_frequency == 0:
                status, added, removed = node.status_update()
                if status is not None:
                    published = out.emit(status, node=name, causes=seen)
                    for taint in (*removed, *added):  # the control plane's taints follow the status
                        out.emit(taint, node=name, causes=[published.id])
                self.timers.want(env.t + node.config.node_status_update_frequency, PHASE_STATUS, out)
            if node.closed_loop and env.t % node.config.image_gc_period == 0:
                gc = node.image_gc(env.t)
                if gc is not None:
                    out.emit(gc, node=name, causes=seen)
                self.timers.want(env.t + node.config.image_gc_period, PHASE_STATUS, out)


__all__ = ["EvictionManager"]

"""Out-of-service controller: what kube-controller-manager does about a node that went away.

Four upstream controllers, kept apart because their conditions differ
(:mod:`ledgerlet_core.controllers.node_loss`):
* node lifecycle: Ready Unknown after the monitor grace period without a heartbeat, and
  the not-ready / unreachable taints (NoSchedule and NoExecute) that follow Ready;
* taint eviction: pods that do not tolerate a NoExecute taint are deleted, at once or
  after their ``tolerationSeconds`` (a deletion the kubelet carries out, or, if the
  kubelet is gone, that leaves the pod Terminating);
* PodGC: every 20 s, Terminating pods on a not-Ready node that has the
  ``node.kubernetes.io/out-of-service`` taint (any effect) are force-deleted; pods of a
  deleted node after 40 s;
* attach-detach: a volume no longer wanted on its node is detached when the kubelet has
  unmounted it, at once (forced) with the out-of-service taint, or forced after 6 minutes
  on an unhealthy node unless ``disableForceDetachOnTimeout``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import (
    PHASE_TIMERS,
    ClockTick,
    ObjectCreated,
    PodDeletionRequested,
    PodStarted,
)
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.contracts.topics import CLOCK, DECISIONS, INPUTS
from ledgerlet_core.controllers.node_loss import (
    MAX_WAIT_FOR_UNMOUNT,
    ORPHAN_QUARANTINE,
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
from ledgerlet_core.kubelet.config import config_for_node
from ledgerlet_core.loop.dispatch import Loop
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.timers import Timers, next_multiple
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND, parse_duration
from ledgerlet_core.model.k8s.objects import Node, PersistentVolume, PersistentVolumeClaim, Pod, Taint, Toleration
from ledgerlet_core.model.k8s.taints import NO_EXECUTE, TAINT_NODE_OUT_OF_SERVICE
from ledgerlet_services.arriving_pods import ArrivingPods


@dataclass(slots=True)
class _Node:
    spec_taints: list[Taint]
    status_frequency: int
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
    volumes: list[str]
    terminating: bool = False
    deletion_cause: str = ""
    delete_at: int | None = None


class OutOfServiceController(Loop):
    name = "out-of-service-controller"
    topics = (INPUTS, CLOCK, DECISIONS)

    def __init__(self) -> None:
        super().__init__()
        self.grace = 40 * SECOND
        self.disable_force_detach = False
        self.base_config: dict[str, Any] = {}
        self.nodes: dict[str, _Node] = {}
        self.pods: dict[str, _Pod] = {}
        self.arriving = ArrivingPods()
        self.claims: dict[str, str] = {}  # ns/claim -> PersistentVolume
        self.attachable: set[str] = set()  # PersistentVolumes with a csi source
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
        self.timers = Timers(self.name)

    def handle(self, env: Envelope, out: Emitter) -> None:
        handler = getattr(self, f"_on_{env.type}", None)
        if handler is not None:
            handler(env, decode_data(env), out)

    def _wake(self, at: int, out: Emitter, node: str | None = None) -> None:
        if node is not None:
            self.dirty.add(node)
        self.timers.want(at, PHASE_TIMERS, out)

    # -- objects --------------------------------------------------------------------------
    def _on_ScenarioStarted(self, env: Envelope, data: inp.ScenarioStarted, out: Emitter) -> None:
        ctl = data.controller_config
        self.grace = parse_duration(str(ctl.get("nodeMonitorGracePeriod", "40s")))
        self.disable_force_detach = bool(ctl.get("disableForceDetachOnTimeout", False))
        self.base_config = data.kubelet_config

    def _on_ObjectApplied(self, env: Envelope, data: inp.ObjectApplied, out: Emitter) -> None:
        kind = data.object.get("kind")
        if kind == "Node":
            node = convert(data.object, Node)
            config = config_for_node(self.base_config, node.metadata.annotations)
            existing = self.nodes.get(node.metadata.name)
            if existing is None:
                self.nodes[node.metadata.name] = _Node(list(node.spec.taints), config.node_status_update_frequency)
                self._order[node.metadata.name] = len(self._order)
            else:
                existing.spec_taints = list(node.spec.taints)
                self._wake(env.t, out, node.metadata.name)
        elif kind == "Pod":
            pod = convert(data.object, Pod)
            if data.initial:
                if pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed"):
                    self._track(pod, pod.spec.node_name)
            elif pod.key not in self.pods:
                self.arriving.arrived(pod)
        elif kind == "PersistentVolume":
            pv = convert(data.object, PersistentVolume)
            if pv.spec.csi is not None:
                self.attachable.add(pv.metadata.name)
            ref = pv.spec.claim_ref or {}
            if ref.get("name"):
                self.claims.setdefault(f"{ref.get('namespace') or 'default'}/{ref['name']}", pv.metadata.name)
        elif kind == "PersistentVolumeClaim":
            pvc = convert(data.object, PersistentVolumeClaim)
            if pvc.spec.volume_name:
                self.claims[f"{pvc.metadata.namespace or 'default'}/{pvc.metadata.name}"] = pvc.spec.volume_name

    def _on_ObjectCreated(self, env: Envelope, data: ObjectCreated, out: Emitter) -> None:
        if data.object.get("kind") == "Pod":
            pod = convert(data.object, Pod)
            self.arriving.arrived(pod)

    def _on_PodAdmitted(self, env: Envelope, data: dec.PodAdmitted, out: Emitter) -> None:
        self.arriving.admitted(env.pod, data)

    def _on_PodStarted(self, env: Envelope, data: PodStarted, out: Emitter) -> None:
        pod = self.arriving.started(data.pod)
        if pod is not None:
            self._track(pod, data.node)
            self._wake(env.t, out, data.node)  # a NoExecute taint may already be there

    def _track(self, pod: Pod, node_name: str) -> None:
        node = self.nodes.get(node_name)
        if node is None:
            return
        ns = pod.metadata.namespace or "default"
        volumes = [
            self.claims[f"{ns}/{v.persistent_volume_claim.claim_name}"]
            for v in pod.spec.volumes
            if v.persistent_volume_claim is not None
            and self.claims.get(f"{ns}/{v.persistent_volume_claim.claim_name}") in self.attachable
        ]
        grace = pod.spec.termination_grace_period_seconds
        self.pods[pod.key] = _Pod(node_name, list(pod.spec.tolerations), 30 if grace is None else grace, volumes)
        node.pods[pod.key] = None
        for pv in volumes:
            self.attached.setdefault((pv, node_name), set()).add(pod.key)
            self.unwanted.pop((pv, node_name), None)

    # -- pods ending --------------------------------------------------------------------------
    def _gone(self, key: str | None, env: Envelope, out: Emitter) -> None:
        p = self.pods.pop(key or "", None)
        if p is None:
            return
        node = self.nodes.get(p.node)
        if node is not None:
            node.pods.pop(key or "", None)
        for pv in p.volumes:
            users = self.attached.get((pv, p.node), set())
            users.discard(key or "")
            if not users:
                self.unwanted[(pv, p.node)] = (env.t, key or "")
        if p.volumes:
            self._wake(env.t, out, p.node)

    def _on_PodTerminated(self, env: Envelope, data: dec.PodTerminated, out: Emitter) -> None:
        self._gone(env.pod, env, out)

    def _on_PodForceDeleted(self, env: Envelope, data: dec.PodForceDeleted, out: Emitter) -> None:
        self._gone(env.pod, env, out)

    def _on_PodRejected(self, env: Envelope, data: dec.PodRejected, out: Emitter) -> None:
        self.arriving.refused(env.pod)

    def _on_OOMKilled(self, env: Envelope, data: dec.OOMKilled, out: Emitter) -> None:
        if data.pod_failed:
            self._gone(env.pod, env, out)

    def _terminating(self, key: str | None, cause: str) -> None:
        p = self.pods.get(key or "")
        if p is not None and not p.terminating:
            p.terminating, p.deletion_cause, p.delete_at = True, cause, None

    def _on_PodEvicted(self, env: Envelope, data: dec.PodEvicted, out: Emitter) -> None:
        self._terminating(env.pod, env.id)

    def _on_PodPreempted(self, env: Envelope, data: dec.PodPreempted, out: Emitter) -> None:
        self._terminating(env.pod, env.id)

    def _on_ObjectDeleted(self, env: Envelope, data: inp.ObjectDeleted, out: Emitter) -> None:
        if data.kind == "Pod":
            key = f"{data.namespace or 'default'}/{data.name}"
            self._terminating(key, env.id)
            if key in self.pods:
                self._wake(env.t, out, self.pods[key].node)
        elif data.kind == "Node" and data.name in self.nodes:
            self.nodes[data.name].deleted_at = env.t
            self._unhealthy.add(data.name)  # PodGC looks at it from now on
            self._wake(env.t + ORPHAN_QUARANTINE, out)

    # -- node health and taints -------------------------------------------------------------------
    def _on_NodeConditionChanged(self, env: Envelope, data: dec.NodeConditionChanged, out: Emitter) -> None:
        node = self.nodes.get(env.node or "")
        if node is None or data.condition != "Ready" or node.ready == data.status:
            return  # (its own Unknown comes back to it: already handled in that pass)
        self._set_ready(env.node or "", data.status)
        if data.status == "True":
            node.unknown_at = None
            self._stopping.discard(env.node or "")
        self._wake(env.t, out, env.node)

    def _stopped(self, name: str, env: Envelope, out: Emitter) -> None:
        """The kubelet stopped posting status: Ready goes Unknown after the grace period."""
        node = self.nodes.get(name)
        if node is None or node.unknown_at is not None:
            return
        node.down = True
        node.unknown_at = unknown_at(last_heartbeat(env.t, node.status_frequency), self.grace)
        self._stopping.add(name)
        self._wake(node.unknown_at, out)

    def _on_NodePoweredOff(self, env: Envelope, data: inp.NodePoweredOff, out: Emitter) -> None:
        self._stopped(data.node, env, out)

    def _on_NodeShutdownCompleted(self, env: Envelope, data: dec.NodeShutdownCompleted, out: Emitter) -> None:
        self._stopped(env.node or "", env, out)

    def _on_NodePoweredOn(self, env: Envelope, data: inp.NodePoweredOn, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is not None:
            node.unknown_at, node.down = None, False
            self._stopping.discard(data.node)
            self._wake(env.t, out, data.node)  # its kubelet unmounts what is no longer wanted

    def _on_NodeTainted(self, env: Envelope, data: inp.NodeTainted, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is None:
            return
        node.user_taints = [t for t in node.user_taints if (t.key, t.effect) != (data.key, data.effect)]
        node.user_taints.append(Taint(key=data.key, value=data.value, effect=data.effect))
        self._wake(env.t, out, data.node)

    def _on_NodeUntainted(self, env: Envelope, data: inp.NodeUntainted, out: Emitter) -> None:
        node = self.nodes.get(data.node)
        if node is None:
            return
        node.user_taints = [
            t for t in node.user_taints if t.key != data.key or (data.effect and t.effect != data.effect)
        ]
        self._wake(env.t, out, data.node)

    # -- the controllers' passes, once the instant's inputs are in ------------------------------------
    def _on_ClockTick(self, env: Envelope, data: ClockTick, out: Emitter) -> None:
        self.timers.fired(env.t, data.phase)
        if data.phase != PHASE_TIMERS:
            return
        # Every service's timer tick reaches this handler: only nodes with something due are
        # looked at (a stopped node's monitor deadline, a pass to redo, a deletion deadline).
        now = env.t
        for name in sorted(self._stopping, key=self._order.__getitem__):
            node = self.nodes[name]
            if node.unknown_at is not None and node.unknown_at <= now:
                self._stopping.discard(name)
                self._set_ready(name, "Unknown")
                out.emit(
                    dec.NodeConditionChanged(
                        condition="Ready", status="Unknown", reason=UNKNOWN_REASON, message=UNKNOWN_MESSAGE
                    ),
                    node=name,
                )
                self.dirty.add(name)
        dirty, self.dirty = self.dirty, set()
        for name in sorted(dirty & self.nodes.keys(), key=self._order.__getitem__):
            self._lifecycle_taints(name, out)
        for name in sorted((dirty | self._deadlines) & self.nodes.keys(), key=self._order.__getitem__):
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
        node = self.nodes[name]
        want = ready_taints(node.ready)
        for t in node.lifecycle_taints:
            if t not in want:
                out.emit(dec.NodeTaintRemoved(key=t.key, effect=t.effect), node=name)
        for t in want:
            if t not in node.lifecycle_taints:
                out.emit(dec.NodeTaintAdded(key=t.key, effect=t.effect), node=name)
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
                p.terminating, p.delete_at = True, None
                deletion = out.emit(
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
                p.deletion_cause = deletion.id
        if any(self.pods[k].delete_at is not None for k in node.pods):
            self._deadlines.add(name)
        else:
            self._deadlines.discard(name)

    def _pod_gc(self, now: int, out: Emitter) -> None:
        """``gcTerminating`` and ``gcOrphaned``, in upstream's order."""
        for name in sorted(self._unhealthy, key=self._order.__getitem__):
            node = self.nodes[name]
            orphaned = node.deleted_at is not None and now - node.deleted_at >= ORPHAN_QUARANTINE
            if not orphaned and not (node.ready != "True" and node.out_of_service()):
                continue
            for key in sorted(node.pods):
                p = self.pods[key]
                if orphaned:
                    data = dec.PodForceDeleted(
                        reason="orphaned", by="pod-garbage-collector", message="PodGC: node no longer exists"
                    )
                elif p.terminating:
                    data = dec.PodForceDeleted(
                        reason="out-of-service",
                        by="pod-garbage-collector",
                        message="Terminating on a node that is not Ready and has the out-of-service taint",
                    )
                else:
                    continue
                out.emit(data, node=name, pod=key, causes=[p.deletion_cause] if p.deletion_cause else None)

    def _next_pod_gc(self, now: int, out: Emitter) -> None:
        for node in (self.nodes[n] for n in self._unhealthy):
            waiting = (
                node.ready != "True" and node.out_of_service() and any(self.pods[k].terminating for k in node.pods)
            )
            if waiting or (node.deleted_at is not None and node.pods):
                self._wake(next_multiple(now + 1, POD_GC_PERIOD), out)
                return

    def _detach(self, now: int, out: Emitter) -> None:
        for (pv, name), (since, pod) in sorted(self.unwanted.items()):
            node = self.nodes.get(name)
            healthy = node is not None and node.ready == "True"
            oos = node is not None and node.out_of_service()
            if node is not None and not node.down:
                reason, forced = "Normal", False  # its kubelet unmounted it as the pod went
            else:
                # still mounted as far as the API knows (the kubelet is gone): only forced
                why = force_detach(
                    healthy=healthy,
                    out_of_service=oos,
                    unwanted_for=now - since,
                    disable_on_timeout=self.disable_force_detach,
                )
                if why is None:
                    if not self.disable_force_detach:
                        self._wake(since + MAX_WAIT_FOR_UNMOUNT + RECONCILE_PERIOD, out)
                    continue
                reason, forced = why, True
            del self.unwanted[(pv, name)]
            self.attached.pop((pv, name), None)
            out.emit(
                dec.VolumeDetached(volume=pv, forced=forced, reason=reason, pod=pod, unwanted_since=since / SECOND),
                node=name,
            )


__all__ = ["OutOfServiceController"]

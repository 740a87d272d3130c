"""A Pod as the API server holds it at an instant, folded from what the run stored about it.

The pod exists once the API server accepted it (a scenario's ``objects`` from the start,
later ones at their ``PodAdmitted``) and until it is deleted: a preempted, deleted or
taint-evicted pod is gone once it has exited, a force-deleted one at once. Status is what
the kubelet, the scheduler and the controllers wrote:

* evicted (``pkg/kubelet/eviction/eviction_manager.go: evictPod``): ``phase: Failed``,
  ``reason: Evicted``, the eviction message, and the ``DisruptionTarget`` condition
  (reason ``TerminationByKubelet``) from the decision on;
* refused by its kubelet (``pkg/kubelet/kubelet.go: rejectPod``): ``phase: Failed``, the
  admission reason, message ``Pod was rejected: ...``;
* shut down (``pkg/kubelet/nodeshutdown``): ``phase: Failed``, ``reason: Terminated``,
  the shutdown message and ``DisruptionTarget``;
* preempted (``pkg/scheduler/framework/preemption``): ``DisruptionTarget`` (reason
  ``PreemptionByScheduler``) and a ``deletionTimestamp`` until it exits;
* OOM-killed containers: ``lastState.terminated.reason: OOMKilled``, the restart count,
  ``CrashLoopBackOff`` while backing off.

A pod the kubelet ended with a status reason of its own is shown without container
statuses (as kubelets before the ``ContainerStatusUnknown`` reporting wrote them), so
kubectl's STATUS column reads ``Evicted`` or ``Terminated`` as operators know it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts import internal
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.model.annotations import MANIFEST_PRIORITY_ANNOTATION, WORKLOAD_ANNOTATION
from ledgerlet_core.model.duration import SECOND
from ledgerlet_services.audit.kube_api.meta import Instant, facade_uid, resource_version, rfc3339

#: annotations ledgerlet adds for its own bookkeeping (the API server never had them)
INTERNAL_ANNOTATIONS: Final = frozenset({MANIFEST_PRIORITY_ANNOTATION, WORKLOAD_ANNOTATION})
CONFIG_SOURCE: Final = "kubernetes.io/config.source"
CONFIG_MIRROR: Final = "kubernetes.io/config.mirror"
CONFIG_HASH: Final = "kubernetes.io/config.hash"

#: the types whose events change a pod as the API server holds it
POD_TYPES: Final = (
    "ObjectApplied",
    "ObjectCreated",
    "ObjectDeleted",
    "PodAdmitted",
    "PodRejected",
    "PodScheduled",
    "PodUnschedulable",
    "PodNominated",
    "PodStarted",
    "PodPreempted",
    "PodDeletionRequested",
    "PodEvicted",
    "PodTerminated",
    "PodForceDeleted",
    "OOMKilled",
)
#: how a pod ends that its object outlives (the kubelet writes a terminal status)
_KEPT_ENDINGS: Final = {"Evicted": "Evicted", "NodeShutdown": "Terminated"}
_CONDITION_ORDER: Final = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
    "DisruptionTarget",
)


@dataclass
class _Container:
    restarts: int = 0
    #: (virtual ns, reason, exit code) of its last termination
    last: tuple[int, str, int] | None = None
    running_since: int | None = None
    #: backing off until this virtual instant (ns), then running again
    back_off_until: int | None = None
    #: terminated for good: (virtual ns, reason, exit code)
    terminated: tuple[int, str, int] | None = None


@dataclass
class _Pod:
    raw: dict[str, Any] | None = None
    exists: bool = False
    created: int = 0
    node: str = ""
    phase: str = "Pending"
    reason: str = ""
    message: str = ""
    #: type -> (status, reason, message, virtual ns)
    conditions: dict[str, tuple[str, str, str, int]] = field(default_factory=dict)
    started: int | None = None
    containers: dict[str, _Container] = field(default_factory=dict)
    deletion: tuple[int, int] | None = None
    nominated: str = ""
    qos: str = ""
    #: the kubelet ended it with a status reason of its own (no container statuses)
    ended_by_kubelet: bool = False
    eviction_message: str = ""
    changed: int = 0
    #: the event that carried the object (a uid for objects given without one)
    origin: str = ""


def object_uid(origin: str) -> str:
    """The uid the API server gave an object submitted without one (an ``apply`` event's):
    derived from the event that carried it, so every reader gives the same."""
    return facade_uid("object", origin)


def _condition(p: _Pod, kind: str, status: str, t: int, reason: str = "", message: str = "") -> None:
    old = p.conditions.get(kind)
    if old is not None and old[0] == status and old[1] == reason:
        t = old[3]  # unchanged: the transition stays when it was
    p.conditions[kind] = (status, reason, message, t)


def _start(p: _Pod, t: int) -> None:
    p.phase = "Running"
    if p.started is None:
        p.started = t
    for c in p.containers.values():
        if c.running_since is None and c.terminated is None:
            c.running_since = t
    for kind in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"):
        _condition(p, kind, "True", t)


def _containers(raw: dict[str, Any]) -> dict[str, _Container]:
    return {c.get("name", ""): _Container() for c in raw.get("spec", {}).get("containers", [])}


def _fold_applied(p: _Pod, env: Envelope, data: inp.ObjectApplied) -> None:
    obj = data.object
    if data.initial:
        p.raw, p.exists, p.created, p.origin = obj, True, 0, env.id
        p.containers = _containers(obj)
        status = obj.get("status", {})
        p.phase = status.get("phase", "Pending")
        p.qos = status.get("qosClass", "")
        p.node = obj.get("spec", {}).get("nodeName", "")
        if p.node:
            _condition(p, "PodScheduled", "True", 0)
        if p.phase == "Running":
            _start(p, 0)
        elif p.phase in ("Succeeded", "Failed"):
            p.reason, p.message = status.get("reason", ""), status.get("message", "")
            p.ended_by_kubelet = True
    elif p.exists and p.raw is not None:  # an update: metadata changes, the spec is immutable
        p.raw = {**p.raw, "metadata": obj.get("metadata", p.raw.get("metadata", {}))}
    else:
        _reincarnate(p, obj, env.id)


def _reincarnate(p: _Pod, obj: dict[str, Any] | None, origin: str) -> None:
    """A pod object submitted under a name whose last pod is gone (a StatefulSet's new
    ``db-0``): nothing of the old one carries over."""
    fresh = _Pod(raw=obj, changed=p.changed, origin=origin)
    for name in fresh.__dataclass_fields__:
        setattr(p, name, getattr(fresh, name))


def _fold_admitted(p: _Pod, env: Envelope, data: dec.PodAdmitted) -> None:
    if p.raw is None or p.exists:
        return
    raw = copy.deepcopy(p.raw)
    spec = raw.setdefault("spec", {})
    spec["priority"] = data.priority
    written: dict[str, Any] = {
        "priorityClassName": data.priority_class_name,
        "preemptionPolicy": data.preemption_policy,
        "nodeSelector": data.node_selector,
        "tolerations": data.tolerations,
    }
    for key, value in written.items():
        if value:
            spec[key] = value
    if data.overhead:
        spec["overhead"] = data.overhead
    p.raw, p.exists, p.created = raw, True, env.t
    p.qos = data.qos_class
    p.containers = _containers(raw)
    p.phase = "Pending"
    if env.node:
        p.node = env.node
        _condition(p, "PodScheduled", "True", env.t)


def _fold_ending(p: _Pod, env: Envelope, data: dec.PodTerminated) -> None:
    """``PodTerminated``: the pod has exited; why says whether its object stays."""
    reason = data.reason
    kept = _KEPT_ENDINGS.get(reason)
    if kept is None:
        p.exists = False  # deleted (by a user, the scheduler's preemption, the taint manager): gone once exited
        return
    p.phase, p.reason, p.ended_by_kubelet = "Failed", kept, True
    p.message = p.eviction_message if reason == "Evicted" else data.message
    if reason == "NodeShutdown":
        _condition(p, "DisruptionTarget", "True", env.t, "TerminationByKubelet", p.message)
    for kind in ("Ready", "ContainersReady"):  # (status.GeneratePodReadyCondition: a terminal pod)
        if kind in p.conditions:
            _condition(p, kind, "False", env.t, "PodFailed")
    if "PodReadyToStartContainers" in p.conditions:  # the sandbox is gone
        _condition(p, "PodReadyToStartContainers", "False", env.t)


def _fold_oom(p: _Pod, env: Envelope, data: dec.OOMKilled) -> None:
    c = p.containers.setdefault(data.container, _Container())
    c.restarts = data.restart_count or c.restarts  # (0 is never stored: omitted, the count kept)
    c.last = (env.t, "OOMKilled", 137)
    c.running_since = None
    if data.pod_failed:
        c.terminated = (env.t, "OOMKilled", 137)
        p.phase = "Failed"
        for kind in ("Ready", "ContainersReady"):
            _condition(p, kind, "False", env.t, "PodFailed")
        return
    restart_at = data.restart_at
    c.back_off_until = None if restart_at is None else round(float(restart_at) * SECOND)
    if c.back_off_until is None:
        c.terminated = (env.t, "OOMKilled", 137)


def fold_pod(events: Iterable[Envelope], t_to: int) -> _Pod:
    """The pod's state after every event at or before ``t_to`` (ns), in decision order;
    each event read as its contract's model (``contracts.registry``)."""
    p = _Pod()
    for env in events:
        if env.t > t_to:
            break
        if env.type not in POD_TYPES:
            continue
        p.changed = env.t
        _fold_one(p, env, decode_data(env))
    return p


def _fold_one(p: _Pod, env: Envelope, data: Any) -> None:
    match data:
        case inp.ObjectApplied():
            _fold_applied(p, env, data)
        case internal.ObjectCreated():
            if not p.exists:
                _reincarnate(p, data.object, env.id)
        case dec.PodAdmitted():
            _fold_admitted(p, env, data)
        case dec.PodRejected():
            _fold_rejected(p, data)
        case dec.PodScheduled():
            p.node = env.node or p.node
            p.nominated = ""
            _condition(p, "PodScheduled", "True", env.t)
        case dec.PodUnschedulable():
            p.nominated = data.nominated_node or p.nominated
            _condition(p, "PodScheduled", "False", env.t, "Unschedulable", data.message)
        case dec.PodNominated():
            p.nominated = env.node or ""
        case internal.PodStarted():
            _start(p, env.t)
        case dec.PodPreempted():
            _condition(p, "DisruptionTarget", "True", env.t, data.reason, data.message)
            p.deletion = (env.t, data.grace_period_seconds)
        case internal.PodDeletionRequested():
            if data.reason == "TaintEviction":
                _condition(p, "DisruptionTarget", "True", env.t, "DeletionByTaintManager", data.message)
            p.deletion = (env.t, data.grace_period_seconds)
        case dec.PodEvicted():
            p.eviction_message = data.message
            _condition(p, "DisruptionTarget", "True", env.t, "TerminationByKubelet", p.eviction_message)
        case dec.PodTerminated():
            _fold_ending(p, env, data)
        case dec.PodForceDeleted():
            p.exists = False
        case inp.ObjectDeleted():
            _fold_deleted(p, env, data)
        case dec.OOMKilled():
            _fold_oom(p, env, data)


def _fold_rejected(p: _Pod, data: dec.PodRejected) -> None:
    if data.admitter == "apiserver":
        if not p.exists:
            p.raw = None  # refused: it never existed
    elif p.exists:
        p.phase, p.reason, p.ended_by_kubelet = "Failed", data.reason, True
        p.message = "Pod was rejected: " + data.message
        for k in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"):
            p.conditions.pop(k, None)


def _fold_deleted(p: _Pod, env: Envelope, data: inp.ObjectDeleted) -> None:
    grace = data.grace_period_seconds
    if not p.node or data.force or grace == 0:
        p.exists = False  # never bound, or --force --grace-period=0: removed at once
    elif p.exists:
        own = (p.raw or {}).get("spec", {}).get("terminationGracePeriodSeconds", 30)
        p.deletion = (env.t, int(own if grace is None else grace))


def _container_status(spec: dict[str, Any], c: _Container, instant: Instant) -> dict[str, Any]:
    start = instant.start
    state: dict[str, Any]
    ready = False
    if c.terminated is not None:
        t, reason, code = c.terminated
        state = {"terminated": {"exitCode": code, "reason": reason, "finishedAt": rfc3339(start, t)}}
    elif c.back_off_until is not None and instant.t < c.back_off_until:
        name = spec.get("name", "")
        state = {"waiting": {"reason": "CrashLoopBackOff", "message": f"back-off restarting failed container {name}"}}
    else:
        since = c.back_off_until if c.back_off_until is not None else c.running_since
        if since is None:
            state = {"waiting": {"reason": "ContainerCreating"}}
        else:
            state = {"running": {"startedAt": rfc3339(start, since)}}
            ready = True
    out: dict[str, Any] = {
        "name": spec.get("name", ""),
        "state": state,
        "lastState": {},
        "ready": ready,
        "restartCount": c.restarts,
        "image": spec.get("image", ""),
        "imageID": "",
        "started": ready,
    }
    if c.last is not None:
        t, reason, code = c.last
        out["lastState"] = {"terminated": {"exitCode": code, "reason": reason, "finishedAt": rfc3339(start, t)}}
    return out


def pod_object(p: _Pod, instant: Instant) -> dict[str, Any] | None:
    """The Pod JSON (``v1``), or None when no such pod exists at the instant."""
    if not p.exists or p.raw is None:
        return None
    start = instant.start
    raw = p.raw
    meta = copy.deepcopy(raw.get("metadata", {}))
    annotations = {k: v for k, v in meta.get("annotations", {}).items() if k not in INTERNAL_ANNOTATIONS}
    if annotations.get(CONFIG_SOURCE) in ("file", "http") and meta.get("uid"):
        # the API server holds a static pod's mirror (pkg/kubelet/pod/mirror_client.go)
        annotations.setdefault(CONFIG_HASH, meta["uid"])
        annotations.setdefault(CONFIG_MIRROR, meta["uid"])
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    meta.setdefault("namespace", "default")
    if not meta.get("uid"):
        meta["uid"] = object_uid(p.origin)
    meta.setdefault("creationTimestamp", rfc3339(start, p.created))
    meta["resourceVersion"] = resource_version(p.changed)
    if p.deletion is not None:
        at, grace = p.deletion
        meta["deletionTimestamp"] = rfc3339(start, at + grace * SECOND)
        meta["deletionGracePeriodSeconds"] = grace
    spec = copy.deepcopy(raw.get("spec", {}))
    if p.node:
        spec["nodeName"] = p.node
    status: dict[str, Any] = {"phase": p.phase}
    conditions = []
    for kind in _CONDITION_ORDER:
        if kind in p.conditions:
            value, reason, message, t = p.conditions[kind]
            cond: dict[str, Any] = {"type": kind, "status": value, "lastProbeTime": None}
            cond["lastTransitionTime"] = rfc3339(start, t)
            if reason:
                cond["reason"] = reason
            if message:
                cond["message"] = message
            conditions.append(cond)
    if conditions:
        status["conditions"] = conditions
    if p.reason:
        status["reason"] = p.reason
    if p.message:
        status["message"] = p.message
    if p.nominated:
        status["nominatedNodeName"] = p.nominated
    given_start = raw.get("status", {}).get("startTime")
    if given_start or p.started is not None:
        status["startTime"] = given_start or rfc3339(start, p.started or 0)
    if p.started is not None and not p.ended_by_kubelet:
        status["containerStatuses"] = [
            _container_status(c, p.containers.get(c.get("name", ""), _Container()), instant)
            for c in spec.get("containers", [])
        ]
    if p.qos:
        status["qosClass"] = p.qos
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def build_pod(events: Iterable[Envelope], instant: Instant) -> dict[str, Any] | None:
    return pod_object(fold_pod(events, instant.t), instant)

"""A Pod as the API server holds it at an instant: the projection of its history.

The pod's life (when it exists, its phase, conditions, containers, deletion) is folded
in the core (:mod:`ledgerlet_core.cluster.pod_history`); this module writes it as the
``v1`` Pod object kubectl reads. A pod the kubelet ended with a status reason of its own
is shown without container statuses (as kubelets before the ``ContainerStatusUnknown``
reporting wrote them), so kubectl's STATUS column reads ``Evicted`` or ``Terminated`` as
operators know it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, Final

from ledgerlet_core.cluster.pod_history import POD_HISTORY_TYPES, ContainerHistory, PodHistory, Termination, pod_history
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.model.annotations import MANIFEST_PRIORITY_ANNOTATION, WORKLOAD_ANNOTATION
from ledgerlet_services.audit.kube_api.meta import Instant, facade_uid, resource_version, rfc3339

#: annotations ledgerlet adds for its own bookkeeping (the API server never had them)
INTERNAL_ANNOTATIONS: Final = frozenset({MANIFEST_PRIORITY_ANNOTATION, WORKLOAD_ANNOTATION})
CONFIG_SOURCE: Final = "kubernetes.io/config.source"
CONFIG_MIRROR: Final = "kubernetes.io/config.mirror"
CONFIG_HASH: Final = "kubernetes.io/config.hash"

#: the types whose events change a pod as the API server holds it
POD_TYPES: Final = POD_HISTORY_TYPES
_CONDITION_ORDER: Final = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
    "DisruptionTarget",
)


def object_uid(origin: str) -> str:
    """The uid the API server gave an object submitted without one (an ``apply`` event's):
    derived from the event that carried it, so every reader gives the same."""
    return facade_uid("object", origin)


def pod_uid(p: PodHistory) -> str:
    """The uid of the pod a history holds now: its own, or the one its origin gave it (the
    Pod object and its Events read the same)."""
    return str((p.submitted or {}).get("metadata", {}).get("uid", "")) or object_uid(p.origin)


def _terminated(ended: Termination, instant: Instant) -> dict[str, Any]:
    finished = rfc3339(instant.start, ended.at)
    return {"terminated": {"exitCode": ended.exit_code, "reason": ended.reason, "finishedAt": finished}}


def _container_status(spec: dict[str, Any], c: ContainerHistory, instant: Instant) -> dict[str, Any]:
    start = instant.start
    state: dict[str, Any]
    ready = False
    if c.terminated is not None:
        state = _terminated(c.terminated, instant)
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
        out["lastState"] = _terminated(c.last, instant)
    return out


def pod_object(p: PodHistory, instant: Instant) -> dict[str, Any] | None:
    """The Pod JSON (``v1``) of the pod's history up to the instant, or None when no such
    pod exists then."""
    if not p.exists or p.submitted is None:
        return None
    start = instant.start
    raw = p.submitted
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
    meta["uid"] = pod_uid(p)
    meta.setdefault("creationTimestamp", rfc3339(start, p.created))
    meta["resourceVersion"] = resource_version(p.changed)
    if p.deletion is not None:
        meta["deletionTimestamp"] = rfc3339(start, p.deletion.deadline)
        meta["deletionGracePeriodSeconds"] = p.deletion.grace_period_seconds
    spec = p.spec()
    if p.node:
        spec["nodeName"] = p.node
    status: dict[str, Any] = {"phase": p.phase}
    conditions = []
    for kind in _CONDITION_ORDER:
        if kind in p.conditions:
            held = p.conditions[kind]
            cond: dict[str, Any] = {"type": kind, "status": held.status, "lastProbeTime": None}
            cond["lastTransitionTime"] = rfc3339(start, held.since)
            if held.reason:
                cond["reason"] = held.reason
            if held.message:
                cond["message"] = held.message
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
            _container_status(c, p.containers.get(c.get("name", ""), ContainerHistory()), instant)
            for c in spec.get("containers", [])
        ]
    if p.qos:
        status["qosClass"] = p.qos
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def build_pod(events: Iterable[Envelope], instant: Instant) -> dict[str, Any] | None:
    """The Pod JSON at the instant from the pod's stored events (in store order)."""
    return pod_object(pod_history(events, instant.t), instant)

"""Namespaces, PriorityClasses, RuntimeClasses, PodDisruptionBudgets and ResourceQuotas
at an instant.

Each exists from an accepted apply (an ``ObjectApplied`` no ``ObjectRejected`` answered)
to an accepted delete; the two system PriorityClasses exist from the start, as the API
server creates them at bootstrap, and so do the four namespaces every cluster has (the
others are the namespaces the run's objects live in). A budget's status is what the
disruption controller would write from the pods at that instant
(``pkg/controller/disruption``); a quota's ``used`` what the quota controller would
count (``pkg/quota/v1/evaluator/core/pods.go``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ledgerlet_core.apiserver.quota import pod_usage, quota_matches
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.model.codec import convert, object_builtins
from ledgerlet_core.model.k8s.objects import Pod, PodDisruptionBudget, ResourceQuota
from ledgerlet_core.model.k8s.priority import system_priority_classes
from ledgerlet_core.model.k8s.resources import resource_format
from ledgerlet_core.model.quantity import Quantity
from ledgerlet_core.scheduling.disruption import Controller, budget_status
from ledgerlet_core.scheduling.info import PodInfo, pod_info
from ledgerlet_services.audit.kube_api.meta import Instant, facade_uid, resource_version, rfc3339

#: namespaces every cluster has
BUILT_IN_NAMESPACES: Final = ("default", "kube-node-lease", "kube-public", "kube-system")
SIMPLE_KINDS: Final = ("PriorityClass", "RuntimeClass", "PodDisruptionBudget", "ResourceQuota")


@dataclass
class _Simple:
    obj: dict[str, Any]
    created: int
    changed: int
    exists: bool = True
    origin: str = ""


def fold_simple(events: Iterable[Envelope], rejected: set[str], t_to: int) -> dict[str, _Simple]:
    """Objects of one kind by stream after the applies and deletes the API server accepted."""
    out: dict[str, _Simple] = {}
    for env in events:
        if env.t > t_to or env.id in rejected:
            continue
        data: dict[str, Any] = json.loads(bytes(env.data))
        if env.type == "ObjectApplied":
            found = out.get(env.stream)
            if found is None or not found.exists:
                out[env.stream] = _Simple(data["object"], env.t, env.t, origin=env.id)
            else:
                found.obj, found.changed = data["object"], env.t
        elif env.type == "ObjectDeleted" and env.stream in out:
            out[env.stream].exists = False
    return {k: v for k, v in out.items() if v.exists}


def simple_object(s: _Simple, instant: Instant) -> dict[str, Any]:
    obj = copy.deepcopy(s.obj)
    meta = obj.setdefault("metadata", {})
    if not meta.get("uid"):
        meta["uid"] = facade_uid("object", s.origin)
    meta.setdefault("creationTimestamp", rfc3339(instant.start, s.created))
    meta["resourceVersion"] = resource_version(s.changed)
    if obj.get("kind") == "PriorityClass":  # what the API server's defaulting and encoding write
        obj.setdefault("value", 0)
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    return obj


def system_classes(instant: Instant) -> list[dict[str, Any]]:
    """``system-node-critical`` and ``system-cluster-critical``, there from the start."""
    out = []
    for pc in system_priority_classes():
        obj = object_builtins(pc)
        obj["metadata"] = {
            "name": pc.metadata.name,
            "uid": facade_uid(instant.run, "PriorityClass", pc.metadata.name),
            "resourceVersion": resource_version(0),
            "creationTimestamp": rfc3339(instant.start, 0),
        }
        obj["value"] = pc.value
        out.append(obj)
    return out


def namespace_object(name: str, instant: Instant) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "uid": facade_uid(instant.run, "Namespace", name),
            "resourceVersion": resource_version(0),
            "creationTimestamp": rfc3339(instant.start, 0),
            "labels": {"kubernetes.io/metadata.name": name},
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _counted(raw: Mapping[str, Any]) -> PodInfo:
    """A pod as the disruption controller counts it: terminating when being deleted,
    healthy (``start`` set) when Ready."""
    info = pod_info(convert(dict(raw), Pod))
    info.terminating = bool(raw.get("metadata", {}).get("deletionTimestamp"))
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in raw.get("status", {}).get("conditions", [])
    )
    info.start = 0 if ready else None
    return info


def with_budget_status(
    obj: dict[str, Any],
    pods: Sequence[Mapping[str, Any]],
    controllers: Mapping[tuple[str, str, str], Controller],
) -> dict[str, Any]:
    """A budget with the status the disruption controller computes from ``pods`` (its
    namespace's, at the instant) and the workload controllers' scale
    (:func:`ledgerlet_core.scheduling.disruption.budget_status`, as the scheduler reads it)."""
    pdb = convert(obj, PodDisruptionBudget)
    status = budget_status(pdb, [_counted(p) for p in pods], controllers)
    obj["status"] = {
        "currentHealthy": status.healthy,
        "desiredHealthy": status.desired,
        "disruptionsAllowed": status.allowed,
        "expectedPods": status.expected,
        "observedGeneration": 1,
    }
    return obj


def with_quota_status(obj: dict[str, Any], pods: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A quota with ``status.hard`` and what the namespace's non-terminal pods use of it."""
    quota = convert(obj, ResourceQuota)
    hard = {str(k): str(v) for k, v in quota.spec.hard.items()}
    used_nanos = dict.fromkeys(hard, 0)
    for raw in pods:
        if raw.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        pod = convert(raw, Pod)
        if not quota_matches(quota, pod):
            continue
        for name, nanos in pod_usage(pod).items():
            if name in used_nanos:
                used_nanos[name] += nanos
    used = {}
    for name, nanos in used_nanos.items():
        base = name.split(".", 1)[1] if "." in name else name
        used[name] = str(Quantity(nanos, resource_format(base)))
    obj["status"] = {"hard": hard, "used": used}
    return obj

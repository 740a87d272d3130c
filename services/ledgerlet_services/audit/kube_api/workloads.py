"""Deployments, ReplicaSets, DaemonSets, StatefulSets and Jobs at an instant: each as the
run stored it, with the status its controller would have written from the pods then.

A Deployment's ReplicaSet is the one ledgerlet's controller runs it with
(``controllers/workloads.replica_set_for``, named by the template's hash), so ``kubectl
get rs`` lists it and a pod's ``Controlled By: ReplicaSet/...`` can be followed. Status,
from the pods of the instant (``namespace``'s, as the facade builds them):

* ReplicaSet (``pkg/controller/replicaset: calculateStatus``): ``replicas`` the active
  pods (neither Succeeded, Failed nor terminating), ``readyReplicas`` those Ready,
  ``availableReplicas`` the same (no ``minReadySeconds`` is modelled).
* Deployment (``pkg/controller/deployment/sync.go: calculateStatus``): the same over its
  ReplicaSets' pods, every one of them up to date (one template), and
  ``unavailableReplicas`` what ``spec.replicas`` lacks.
* DaemonSet (``pkg/controller/daemon: updateDaemonSetStatus``): ``desiredNumberScheduled``
  the nodes that should run it then (``nodeShouldRunDaemonPod`` as ledgerlet models it:
  node selector and the node's taints at the instant), ``currentNumberScheduled`` those
  that do run an active pod of it, ``numberMisscheduled`` the others that do.
* StatefulSet (``pkg/controller/statefulset: updateStatefulSetStatus``): replicas, ready,
  current, updated and available, from its active pods.
* Job (``pkg/controller/job``): active, ready, succeeded and failed pods; ``Complete``
  once ``completions`` succeeded, ``Failed`` once ``backoffLimit`` is passed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ledgerlet_core.controllers.workloads import JOB_BACKOFF_LIMIT, node_runs_daemon, replica_set_for
from ledgerlet_core.model.codec import convert, object_builtins
from ledgerlet_core.model.k8s.objects import Node, Taint, Workload
from ledgerlet_services.audit.kube_api.meta import Instant, facade_uid, resource_version, rfc3339

WORKLOAD_KINDS: Final = ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata", {})
    return meta


def controller_ref(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (kind, name) of the pod's controller (``metav1.GetControllerOf``; the first
    owner when none says it is the controller, as ledgerlet's controllers read it)."""
    refs = _meta(pod).get("ownerReferences") or []
    chosen = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return (str(chosen.get("kind", "")), str(chosen.get("name", ""))) if chosen else None


def _active(pod: Mapping[str, Any]) -> bool:
    """``controller.IsPodActive``: not Succeeded or Failed, and not being deleted."""
    phase = pod.get("status", {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not _meta(pod).get("deletionTimestamp")


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def owned(pods: Sequence[Mapping[str, Any]], kind: str, names: Sequence[str]) -> list[Mapping[str, Any]]:
    return [p for p in pods if (ref := controller_ref(p)) is not None and ref[0] == kind and ref[1] in names]


def deployment_replica_set(deployment: Mapping[str, Any], instant: Instant) -> dict[str, Any]:
    """The ReplicaSet the controller runs ``deployment`` with, as the API server holds it."""
    rs = object_builtins(replica_set_for(convert(deployment, Workload)))
    rs["apiVersion"], rs["kind"] = "apps/v1", "ReplicaSet"
    meta = rs.setdefault("metadata", {})
    meta["uid"] = facade_uid(instant.run, "ReplicaSet", meta.get("namespace", ""), meta.get("name", ""))
    for ref in meta.get("ownerReferences", []):
        ref["uid"] = _meta(deployment).get("uid", "")
    meta["creationTimestamp"] = _meta(deployment).get("creationTimestamp") or rfc3339(instant.start, 0)
    meta["resourceVersion"] = _meta(deployment).get("resourceVersion", resource_version(0))
    return rs


def replica_sets_of(deployment: Mapping[str, Any], replica_sets: Sequence[Mapping[str, Any]]) -> list[str]:
    """The names of a Deployment's ReplicaSets among ``replica_sets`` (those that name it
    their owner: the one it runs, and any stored with it as owner)."""
    meta = _meta(deployment)
    return [
        str(_meta(rs).get("name", ""))
        for rs in replica_sets
        if _meta(rs).get("namespace") == meta.get("namespace")
        and any(
            r.get("kind") == "Deployment" and r.get("name") == meta.get("name")
            for r in _meta(rs).get("ownerReferences") or []
        )
    ]


def _replicas(obj: Mapping[str, Any]) -> int:
    value = obj.get("spec", {}).get("replicas")
    return int(value) if isinstance(value, int) else 1


def _counts(pods: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    active = [p for p in pods if _active(p)]
    return len(active), sum(1 for p in active if _ready(p))


def with_workload_status(
    obj: dict[str, Any],
    pods: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
    instant: Instant,
    replica_sets: Sequence[str] = (),
) -> dict[str, Any]:
    """``obj`` (a copy) with the status its controller writes from ``pods`` (its
    namespace's) and ``nodes`` (a DaemonSet's candidates) at the instant. ``replica_sets``:
    a Deployment's ReplicaSets by name."""
    out = copy.deepcopy(obj)
    kind = out.get("kind", "")
    name = str(_meta(out).get("name", ""))
    generation = int(_meta(out).get("generation", 1) or 1)
    status: dict[str, Any] = {"observedGeneration": generation}
    if kind in ("ReplicaSet", "Deployment", "StatefulSet"):
        mine = owned(pods, "ReplicaSet", replica_sets) if kind == "Deployment" else owned(pods, kind, [name])
        active, ready = _counts(mine)
        status |= {"replicas": active, "readyReplicas": ready, "availableReplicas": ready}
        if kind == "ReplicaSet":
            status["fullyLabeledReplicas"] = active
        elif kind == "Deployment":
            status |= {"updatedReplicas": active, "unavailableReplicas": max(0, _replicas(out) - ready)}
        else:
            status |= {"currentReplicas": active, "updatedReplicas": active}
    elif kind == "DaemonSet":
        status |= _daemon_status(out, owned(pods, kind, [name]), nodes)
    elif kind == "Job":
        status |= _job_status(out, owned(pods, kind, [name]), instant)
    out["status"] = {k: v for k, v in status.items() if v != 0 or k in _ALWAYS}
    return out


#: counts the API server writes even when zero (omitempty is not on them)
_ALWAYS: Final = frozenset(
    {
        "replicas",
        "currentNumberScheduled",
        "desiredNumberScheduled",
        "numberMisscheduled",
        "numberReady",
    }
)


def _daemon_status(
    ds: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    workload = convert(ds, Workload)
    should: set[str] = set()
    for raw in nodes:
        node = convert(raw, Node)
        taints = [convert(t, Taint) for t in raw.get("spec", {}).get("taints") or []]
        if node_runs_daemon(workload, node, taints):
            should.add(node.metadata.name)
    running: dict[str, list[Mapping[str, Any]]] = {}
    for p in pods:
        if _active(p):
            running.setdefault(str(p.get("spec", {}).get("nodeName", "")), []).append(p)
    current = [n for n in running if n in should]
    ready = sum(1 for n in current if any(_ready(p) for p in running[n]))
    return {
        "desiredNumberScheduled": len(should),
        "currentNumberScheduled": len(current),
        "numberMisscheduled": sum(1 for n in running if n not in should),
        "numberReady": ready,
        "updatedNumberScheduled": len(current),
        "numberAvailable": ready,
        "numberUnavailable": len(should) - ready,
    }


def _job_status(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], instant: Instant) -> dict[str, Any]:
    spec = job.get("spec", {})
    phases = [p.get("status", {}).get("phase") for p in pods]
    active, ready = _counts(pods)
    succeeded, failed = phases.count("Succeeded"), phases.count("Failed")
    out: dict[str, Any] = {"active": active, "ready": ready, "succeeded": succeeded, "failed": failed}
    created = _meta(job).get("creationTimestamp")
    if created:
        out["startTime"] = created
    completions = spec.get("completions")
    limit = spec.get("backoffLimit", JOB_BACKOFF_LIMIT)
    finished = [
        p.get("status", {}).get("containerStatuses", [{}])[0].get("state", {}).get("terminated", {}).get("finishedAt")
        for p in pods
    ]
    last = max((f for f in finished if f), default=None)
    if succeeded >= (completions if isinstance(completions, int) else 1) and active == 0:
        out["conditions"] = [_condition("Complete", last)]
        out["completionTime"] = last or rfc3339(instant.start, instant.t)
    elif isinstance(limit, int) and failed > limit:
        out["conditions"] = [_condition("Failed", last, "BackoffLimitExceeded", "Job has reached the backoff limit")]
    return out


def _condition(kind: str, at: str | None, reason: str = "", message: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "status": "True", "lastProbeTime": at, "lastTransitionTime": at}
    if reason:
        out |= {"reason": reason, "message": message}
    return out

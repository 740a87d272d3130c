"""kubectl's columns for the workloads (``pkg/printers/internalversion/printers.go``:
``printDeployment``, ``printReplicaSet``, ``printDaemonSet``, ``printStatefulSet``,
``printJob``), every age and duration measured to the instant shown."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from ledgerlet_services.audit.kube_api.meta import Instant, age, human_duration, moment

_NAME: Final = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace.",
    "priority": 0,
}
_AGE_DOC: Final = "CreationTimestamp is a timestamp representing the server time when this object was created."


def _col(name: str, kind: str = "string", *, priority: int = 0, doc: str = "") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": "", "description": doc, "priority": priority}


_AGE: Final = _col("Age", doc=_AGE_DOC)
_CONTAINERS: Final = _col("Containers", priority=1, doc="Names of each container in the template.")
_IMAGES: Final = _col("Images", priority=1, doc="Images referenced by each container in the template.")
_SELECTOR: Final = _col("Selector", priority=1, doc="Label selector for pods.")

_DOCS: Final = {
    "up-to-date": "Total number of non-terminated pods targeted by this deployment that have the desired "
    "template spec.",
    "available": "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    "rs-ready": "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
    "ds-desired": "The total number of nodes that should be running the daemon pod.",
    "ds-current": "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
    "ds-ready": "The number of nodes that should be running the daemon pod and have one or more of the daemon "
    "pod running with a Ready Condition.",
    "ds-updated": "The total number of nodes that are running updated daemon pod",
    "ds-available": "The number of nodes that should be running the daemon pod and have one or more of the "
    "daemon pod running and available.",
    "node-selector": "NodeSelector is a selector which must be true for the pod to fit on a node.",
}

COLUMNS: Final[dict[str, list[dict[str, Any]]]] = {
    "Deployment": [
        _NAME,
        _col("Ready", doc="Number of the pod with ready state"),
        _col("Up-to-date", "integer", doc=_DOCS["up-to-date"]),
        _col("Available", "integer", doc=_DOCS["available"]),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        _SELECTOR,
    ],
    "ReplicaSet": [
        _NAME,
        _col("Desired", "integer", doc="Replicas is the number of desired pods."),
        _col("Current", "integer", doc="Replicas is the most recently observed number of non-terminating pods."),
        _col("Ready", "integer", doc=_DOCS["rs-ready"]),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        _SELECTOR,
    ],
    "DaemonSet": [
        _NAME,
        _col("Desired", "integer", doc=_DOCS["ds-desired"]),
        _col("Current", "integer", doc=_DOCS["ds-current"]),
        _col("Ready", "integer", doc=_DOCS["ds-ready"]),
        _col("Up-to-date", "integer", doc=_DOCS["ds-updated"]),
        _col("Available", "integer", doc=_DOCS["ds-available"]),
        _col("Node Selector", doc=_DOCS["node-selector"]),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        _SELECTOR,
    ],
    "StatefulSet": [_NAME, _col("Ready", doc="Number of the pod with ready state"), _AGE, _CONTAINERS, _IMAGES],
    "Job": [
        _NAME,
        _col("Status", doc="Status of the job."),
        _col("Completions", doc="The completion status of the job."),
        _col("Duration", doc="Time required to complete the job."),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        _SELECTOR,
    ],
}


def _template(obj: Mapping[str, Any]) -> tuple[str, str]:
    containers = obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


def _selector(obj: Mapping[str, Any]) -> str:
    """``metav1.FormatLabelSelector``: ``k=v,k2 in (a,b)``, ``<none>`` when empty."""
    sel = obj.get("spec", {}).get("selector") or {}
    parts = [f"{k}={v}" for k, v in (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        op, values = e.get("operator", ""), e.get("values") or []
        if op in ("In", "NotIn"):
            parts.append(f"{e.get('key')} {op.lower()} ({','.join(values)})")
        elif op == "Exists":
            parts.append(str(e.get("key")))
        else:
            parts.append(f"!{e.get('key')}")
    return ",".join(parts) or "<none>"


def _status(obj: Mapping[str, Any], name: str) -> int:
    value = obj.get("status", {}).get(name, 0)
    return int(value) if isinstance(value, int) else 0


def _desired(obj: Mapping[str, Any]) -> int:
    value = obj.get("spec", {}).get("replicas")
    return int(value) if isinstance(value, int) else 1


def _created(obj: Mapping[str, Any], instant: Instant) -> str:
    return age(instant, obj.get("metadata", {}).get("creationTimestamp"))


def _deployment(obj: Mapping[str, Any], instant: Instant) -> list[Any]:
    containers, images = _template(obj)
    ready = f"{_status(obj, 'readyReplicas')}/{_desired(obj)}"
    return [
        obj.get("metadata", {}).get("name", ""),
        ready,
        _status(obj, "updatedReplicas"),
        _status(obj, "availableReplicas"),
        _created(obj, instant),
        containers,
        images,
        _selector(obj),
    ]


def _replica_set(obj: Mapping[str, Any], instant: Instant) -> list[Any]:
    containers, images = _template(obj)
    return [
        obj.get("metadata", {}).get("name", ""),
        _desired(obj),
        _status(obj, "replicas"),
        _status(obj, "readyReplicas"),
        _created(obj, instant),
        containers,
        images,
        _selector(obj),
    ]


def _daemon_set(obj: Mapping[str, Any], instant: Instant) -> list[Any]:
    containers, images = _template(obj)
    node_selector = obj.get("spec", {}).get("template", {}).get("spec", {}).get("nodeSelector") or {}
    return [
        obj.get("metadata", {}).get("name", ""),
        _status(obj, "desiredNumberScheduled"),
        _status(obj, "currentNumberScheduled"),
        _status(obj, "numberReady"),
        _status(obj, "updatedNumberScheduled"),
        _status(obj, "numberAvailable"),
        ",".join(f"{k}={v}" for k, v in node_selector.items()) or "<none>",
        _created(obj, instant),
        containers,
        images,
        _selector(obj),
    ]


def _stateful_set(obj: Mapping[str, Any], instant: Instant) -> list[Any]:
    containers, images = _template(obj)
    ready = f"{_status(obj, 'readyReplicas')}/{_desired(obj)}"
    return [obj.get("metadata", {}).get("name", ""), ready, _created(obj, instant), containers, images]


def _job_state(status: Mapping[str, Any]) -> str:
    """The STATUS column: the job's finished condition, else Running."""
    for c in status.get("conditions") or []:
        if c.get("status") == "True" and c.get("type") in ("Complete", "Failed", "Suspended", "FailureTarget"):
            return "Failed" if c["type"] == "FailureTarget" else str(c["type"])
    return "Running"


def _job(obj: Mapping[str, Any], instant: Instant) -> list[Any]:
    containers, images = _template(obj)
    spec, status = obj.get("spec", {}), obj.get("status", {})
    succeeded = _status(obj, "succeeded")
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if isinstance(completions, int):
        done = f"{succeeded}/{completions}"
    elif isinstance(parallelism, int) and parallelism > 1:
        done = f"{succeeded}/1 of {parallelism}"
    else:
        done = f"{succeeded}/1"
    duration = ""
    start, end = status.get("startTime"), status.get("completionTime")
    if start:
        began = datetime.fromisoformat(start.replace("Z", "+00:00"))
        until = datetime.fromisoformat(end.replace("Z", "+00:00")) if end else moment(instant.start, instant.t)
        duration = human_duration((until - began).total_seconds())
    return [
        obj.get("metadata", {}).get("name", ""),
        _job_state(status),
        done,
        duration,
        _created(obj, instant),
        containers,
        images,
        _selector(obj),
    ]


CELLS: Final[dict[str, Callable[[Mapping[str, Any], Instant], list[Any]]]] = {
    "Deployment": _deployment,
    "ReplicaSet": _replica_set,
    "DaemonSet": _daemon_set,
    "StatefulSet": _stateful_set,
    "Job": _job,
}

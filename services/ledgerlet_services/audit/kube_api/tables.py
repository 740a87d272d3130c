"""Server-side ``Table`` output: kubectl's columns, computed at the endpoint's instant.

Columns and cells follow ``pkg/printers/internalversion/printers.go`` (``printPod``,
``printNode``, ``printEvent``, ``printNamespace``, ``printPodDisruptionBudget``,
``printResourceQuota``, ``printPriorityClass``, ``printRuntimeClass``; the workloads'
and the metrics' in their own modules). The one
difference is on purpose: every age ("AGE", "LAST SEEN", "(5m ago)") is measured to
the instant the endpoint shows, not to the wall clock, so ``kubectl get pods`` at
``--at 5m`` reads as it would have five minutes into the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ledgerlet_services.audit.kube_api import metrics_tables, workload_tables
from ledgerlet_services.audit.kube_api.meta import Instant, age
from ledgerlet_services.audit.kube_api.selectors import core_form

_NAME_DOC: Final = "Name must be unique within a namespace."
_AGE_DOC: Final = "CreationTimestamp is a timestamp representing the server time when this object was created."


def _col(name: str, kind: str = "string", *, priority: int = 0, fmt: str = "", doc: str = "") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": fmt, "description": doc, "priority": priority}


_NAME: Final = _col("Name", fmt="name", doc=_NAME_DOC)
_AGE: Final = _col("Age", doc=_AGE_DOC)

COLUMNS: Final[dict[str, list[dict[str, Any]]]] = {
    "Pod": [
        _NAME,
        _col("Ready", doc="The aggregate readiness state of this pod for accepting traffic."),
        _col("Status", doc="The aggregate status of the containers in this pod."),
        _col(
            "Restarts",
            doc="Restarts of the pod's containers, and how long ago the last one was.",
        ),
        _AGE,
        _col("IP", priority=1, doc="podIP address allocated to the pod."),
        _col("Node", priority=1, doc="NodeName indicates in which node this pod is scheduled."),
        _col(
            "Nominated Node",
            priority=1,
            doc="nominatedNodeName is set only when this pod preempts other pods on the node.",
        ),
        _col(
            "Readiness Gates", priority=1, doc="If specified, all readiness gates will be evaluated for pod readiness."
        ),
    ],
    "Node": [
        _NAME,
        _col("Status", doc="The status of the node"),
        _col("Roles", doc="The roles of the node"),
        _AGE,
        _col("Version", doc="Kubelet Version reported by the node."),
        _col("Internal-IP", priority=1, doc="List of addresses reachable to the node."),
        _col("External-IP", priority=1, doc="List of addresses reachable to the node."),
        _col("OS-Image", priority=1, doc="OS Image reported by the node from /etc/os-release."),
        _col("Kernel-Version", priority=1, doc="Kernel Version reported by the node from 'uname -r'."),
        _col("Container-Runtime", priority=1, doc="ContainerRuntime Version reported by the node."),
    ],
    "Event": [
        _col("Last Seen", doc="The time at which the most recent occurrence of this event was recorded."),
        _col("Type", doc="Type of this event (Normal, Warning), new types could be added in the future"),
        _col(
            "Reason",
            doc="A short, machine understandable reason for the transition.",
        ),
        _col("Object", doc="The object that this event is about."),
        _col(
            "Subobject",
            priority=1,
            doc="The part of the object the event is about (a container).",
        ),
        _col("Source", priority=1, doc="The component reporting this event."),
        _col("Message", doc="A human-readable description of the status of this operation."),
        _col("First Seen", priority=1, doc="The time at which the event was first recorded."),
        _col("Count", priority=1, doc="The number of times this event has occurred."),
        _col("Name", priority=1, fmt="name", doc=_NAME_DOC),
    ],
    "Namespace": [_NAME, _col("Status", doc="The status of the namespace"), _AGE],
    "PodDisruptionBudget": [
        _NAME,
        _col("Min Available", doc="The minimum number of pods that must be available."),
        _col("Max Unavailable", doc="The maximum number of pods that may be unavailable."),
        _col("Allowed Disruptions", "integer", doc="Calculated number of pods that may be disrupted at this time."),
        _AGE,
    ],
    "ResourceQuota": [
        _NAME,
        _AGE,
        _col("Request", doc="The minimum amount of cpu/memory a container may consume."),
        _col(
            "Limit",
            doc="The maximum amount of cpu/memory a container may use.",
        ),
    ],
    "PriorityClass": [
        _NAME,
        _col("Value", "integer", doc="value represents the integer value of this priority class."),
        _col(
            "Global-Default",
            "boolean",
            doc="Whether this class is the default for pods that name none.",
        ),
        _AGE,
        _col("PreemptionPolicy", doc="preemptionPolicy is the Policy for preempting pods with lower priority."),
    ],
    "Lease": [
        _NAME,
        _col("Holder", doc="holderIdentity contains the identity of the holder of a current lease."),
        _AGE,
    ],
    "RuntimeClass": [
        _NAME,
        _col(
            "Handler",
            doc="The runtime handler the CRI uses for pods of this class.",
        ),
        _AGE,
    ],
}


def _pod_cells(pod: Mapping[str, Any], instant: Instant) -> list[Any]:
    """``printPod``: READY, STATUS (the pod's reason, a container's waiting or terminated
    reason, ``Terminating`` with a deletion timestamp), RESTARTS with the last one's age."""
    spec, status, meta = pod.get("spec", {}), pod.get("status", {}), pod.get("metadata", {})
    phase = status.get("phase", "")
    reason = status.get("reason") or phase
    restarts, ready, last_restart = 0, 0, ""
    has_running = False
    for c in reversed(status.get("containerStatuses", [])):
        restarts += int(c.get("restartCount", 0))
        finished = c.get("lastState", {}).get("terminated", {}).get("finishedAt", "")
        if finished and finished > last_restart:
            last_restart = finished
        state = c.get("state", {})
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state and state["terminated"].get("reason"):
            reason = state["terminated"]["reason"]
        elif "terminated" in state:
            term = state["terminated"]
            reason = f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode', 0)}"
        elif c.get("ready") and "running" in state:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        ready_cond = any(x.get("type") == "Ready" and x.get("status") == "True" for x in status.get("conditions", []))
        reason = "Running" if ready_cond else "NotReady"
    if meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    restarts_text = str(restarts)
    if last_restart:
        restarts_text = f"{restarts} ({age(instant, last_restart)} ago)"
    cells: list[Any] = [
        meta.get("name", ""),
        f"{ready}/{len(spec.get('containers', []))}",
        reason,
        restarts_text,
        age(instant, meta.get("creationTimestamp")),
    ]
    ips = status.get("podIPs") or ([{"ip": status["podIP"]}] if status.get("podIP") else [])
    gates = spec.get("readinessGates", [])
    gates_text = "<none>"
    if gates:
        true = sum(
            1
            for g in gates
            if any(
                x.get("type") == g.get("conditionType") and x.get("status") == "True"
                for x in status.get("conditions", [])
            )
        )
        gates_text = f"{true}/{len(gates)}"
    cells += [
        ips[0]["ip"] if ips else "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]
    return cells


def _node_cells(node: Mapping[str, Any], instant: Instant) -> list[Any]:
    """``printNode``: STATUS from Ready only (``NotReady`` for False and Unknown)."""
    meta, spec, status = node.get("metadata", {}), node.get("spec", {}), node.get("status", {})
    ready = next((c for c in status.get("conditions", []) if c.get("type") == "Ready"), None)
    words = ["Unknown"] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    if spec.get("unschedulable"):
        words.append("SchedulingDisabled")
    labels = meta.get("labels", {})
    roles = sorted(
        {k.removeprefix("node-role.kubernetes.io/") for k in labels if k.startswith("node-role.kubernetes.io/")}
        | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set())
    )
    info = status.get("nodeInfo", {})
    addresses = status.get("addresses", [])

    def address(kind: str) -> str:
        return next((a["address"] for a in addresses if a.get("type") == kind), "<none>")

    return [
        meta.get("name", ""),
        ",".join(words),
        ",".join(r for r in roles if r) or "<none>",
        age(instant, meta.get("creationTimestamp")),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _event_cells(event: Mapping[str, Any], instant: Instant) -> list[Any]:
    """``printEvent``: counts and times from the series for events.k8s.io events."""
    event = core_form(event)
    first = age(instant, event.get("firstTimestamp") or event.get("eventTime"))
    last = age(instant, event["lastTimestamp"]) if event.get("lastTimestamp") else first
    count = event.get("count") or 1
    if event.get("series"):
        last = age(instant, event["series"].get("lastObservedTime"))
        count = event["series"].get("count", count)
    ref = event.get("involvedObject", {})
    target = f"{ref.get('kind', '').lower()}/{ref['name']}" if ref.get("name") else ref.get("kind", "").lower()
    source = event.get("source", {})
    component = source.get("component") or event.get("reportingComponent", "")
    host = source.get("host") or event.get("reportingInstance", "")
    return [
        last,
        event.get("type", ""),
        event.get("reason", ""),
        target,
        ref.get("fieldPath", ""),
        f"{component}, {host}" if host else component,
        str(event.get("message", "")).strip(),
        first,
        count,
        event.get("metadata", {}).get("name", ""),
    ]


def _pdb_cells(pdb: Mapping[str, Any], instant: Instant) -> list[Any]:
    spec = pdb.get("spec", {})
    return [
        pdb.get("metadata", {}).get("name", ""),
        str(spec["minAvailable"]) if spec.get("minAvailable") is not None else "N/A",
        str(spec["maxUnavailable"]) if spec.get("maxUnavailable") is not None else "N/A",
        int(pdb.get("status", {}).get("disruptionsAllowed", 0)),
        age(instant, pdb.get("metadata", {}).get("creationTimestamp")),
    ]


def _quota_cells(quota: Mapping[str, Any], instant: Instant) -> list[Any]:
    status = quota.get("status", {})
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(status.get("hard", {})):
        text = f"{name}: {status.get('used', {}).get(name, '0')}/{status['hard'][name]}"
        (limits if name.split(".")[0] == "limits" and "." in name else requests).append(text)
    return [
        quota.get("metadata", {}).get("name", ""),
        age(instant, quota.get("metadata", {}).get("creationTimestamp")),
        ", ".join(requests),
        ", ".join(limits),
    ]


def _priority_class_cells(pc: Mapping[str, Any], instant: Instant) -> list[Any]:
    return [
        pc.get("metadata", {}).get("name", ""),
        int(pc.get("value", 0)),
        bool(pc.get("globalDefault", False)),
        age(instant, pc.get("metadata", {}).get("creationTimestamp")),
        pc.get("preemptionPolicy") or "",
    ]


def _simple_cells(*fields: str) -> Callable[[Mapping[str, Any], Instant], list[Any]]:
    def cells(obj: Mapping[str, Any], instant: Instant) -> list[Any]:
        out: list[Any] = [obj.get("metadata", {}).get("name", "")]
        for f in fields:
            value: Any = obj
            for part in f.split("."):
                value = value.get(part, "") if isinstance(value, Mapping) else ""
            out.append(value)
        out.append(age(instant, obj.get("metadata", {}).get("creationTimestamp")))
        return out

    return cells


CELLS: Final[dict[str, Callable[[Mapping[str, Any], Instant], list[Any]]]] = {
    "Pod": _pod_cells,
    "Node": _node_cells,
    "Event": _event_cells,
    "Namespace": _simple_cells("status.phase"),
    "PodDisruptionBudget": _pdb_cells,
    "ResourceQuota": _quota_cells,
    "PriorityClass": _priority_class_cells,
    "RuntimeClass": _simple_cells("handler"),
    "Lease": _simple_cells("spec.holderIdentity"),
    **workload_tables.CELLS,
    **metrics_tables.CELLS,
}
COLUMNS.update(workload_tables.COLUMNS)
COLUMNS.update(metrics_tables.COLUMNS)

_COMPLETED: Final = {
    "Succeeded": [
        {"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}
    ],
    "Failed": [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}],
}


def row(kind: str, obj: Mapping[str, Any], instant: Instant, include_object: str) -> dict[str, Any]:
    """One row; the object as ``includeObject`` asks (``Metadata`` by default)."""
    out: dict[str, Any] = {"cells": CELLS[kind](obj, instant)}
    if kind == "Pod":
        completed = _COMPLETED.get(obj.get("status", {}).get("phase", ""))
        if completed:
            out["conditions"] = completed
    if include_object == "Object":
        out["object"] = obj
    elif include_object != "None":
        out["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {}),
        }
    return out


def table(
    kind: str,
    objects: Sequence[Mapping[str, Any]],
    instant: Instant,
    *,
    list_meta: Mapping[str, Any],
    include_object: str = "Metadata",
    headers: bool = True,
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table (``headers``: with its column definitions; watch events
    after the first leave them out, as the API server does to save bandwidth)."""
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta),
        "columnDefinitions": COLUMNS[kind] if headers else [],
        "rows": [row(kind, o, instant, include_object) for o in objects],
    }

"""A Node as the API server holds it at an instant.

Conditions are the kubelet's four (``pkg/kubelet/nodestatus/setters.go``: MemoryPressure,
DiskPressure, PIDPressure, Ready, in that order) with upstream's reasons and messages;
each changes where a ``NodeConditionChanged`` decision says it did, and until then reads
as a healthy kubelet posts it. When the node lifecycle controller marks Ready Unknown
(``pkg/controller/nodelifecycle: tryUpdateNodeHealth``) every other condition goes Unknown
with it, until the kubelet posts again. Taints are the object's, the control plane's
(pressure, not-ready, unreachable: ``NodeTaintAdded``/``Removed``) and the operator's
(``taint``/``untaint``), as the scheduler saw them; capacity and allocatable are the
last the kubelet published (``NodeStatusUpdated``).
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
from ledgerlet_services.audit.kube_api.meta import Instant, facade_uid, resource_version, rfc3339

#: decisions and inputs about a node that change its object (read through the node index)
NODE_TYPES: Final = (
    "ObjectApplied",
    "ObjectDeleted",
    "NodeConditionChanged",
    "NodeTaintAdded",
    "NodeTaintRemoved",
    "NodeTainted",
    "NodeUntainted",
    "NodePoweredOff",
    "NodePoweredOn",
)
#: what the kubelet publishes (internal, on the node's stream)
STATUS_TYPES: Final = ("NodeStatusUpdated",)

#: condition -> (healthy status, reason, message): what a kubelet posts when all is well
HEALTHY: Final = {
    "MemoryPressure": ("False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    "DiskPressure": ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    "PIDPressure": ("False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    "Ready": ("True", "KubeletReady", "kubelet is posting ready status"),
}
UNKNOWN_REASON: Final = "NodeStatusUnknown"
UNKNOWN_MESSAGE: Final = "Kubelet stopped posting node status."


@dataclass
class _Taint:
    key: str
    effect: str
    value: str = ""
    added: int | None = None


@dataclass
class _Node:
    raw: dict[str, Any] | None = None
    exists: bool = False
    created: int = 0
    #: condition -> (status, reason, message, virtual ns)
    conditions: dict[str, tuple[str, str, str, int]] = field(default_factory=dict)
    plane: list[_Taint] = field(default_factory=list)
    user: list[_Taint] = field(default_factory=list)
    untainted: list[tuple[str, str]] = field(default_factory=list)
    capacity: dict[str, str] | None = None
    allocatable: dict[str, str] | None = None
    off_since: int | None = None
    changed: int = 0
    origin: str = ""


def _untaints(key: str, effect: str, taint_key: str, taint_effect: str) -> bool:
    return taint_key == key and (not effect or taint_effect == effect)


def fold_node(events: Iterable[Envelope], t_to: int) -> _Node:
    """The node's state after every event at or before ``t_to``, in decision order; each
    event that changes it read as its contract's model (``contracts.registry``)."""
    n = _Node()
    for env in events:
        if env.t > t_to:
            break
        if env.type == "NodePoweredOff":
            n.off_since = env.t
        elif env.type == "NodePoweredOn":
            n.off_since = None
        elif env.type not in _TYPED or not _fold_one(n, env, decode_data(env)):
            continue
        n.changed = env.t
    return n


#: the types whose data changes the node
_TYPED: Final = frozenset(
    {
        "ObjectApplied",
        "ObjectDeleted",
        "NodeConditionChanged",
        "NodeTaintAdded",
        "NodeTaintRemoved",
        "NodeTainted",
        "NodeUntainted",
        "NodeStatusUpdated",
    }
)


def _fold_one(n: _Node, env: Envelope, data: Any) -> bool:
    """Apply one event; False when it is about another kind of object."""
    match data:
        case inp.ObjectApplied():
            if data.object.get("kind") != "Node":
                return False
            if not n.exists:
                n.exists, n.created, n.origin = True, env.t, env.id
            n.raw = data.object
            n.untainted = []
        case inp.ObjectDeleted():
            if data.kind != "Node":
                return False
            n.exists = False
        case dec.NodeConditionChanged():
            n.conditions[data.condition] = (data.status, data.reason, data.message, env.t)
        case dec.NodeTaintAdded():
            if not any((t.key, t.effect) == (data.key, data.effect) for t in n.plane):
                n.plane.append(_Taint(data.key, data.effect, data.value, env.t))
        case dec.NodeTaintRemoved():
            n.plane = [t for t in n.plane if (t.key, t.effect) != (data.key, data.effect)]
        case inp.NodeTainted():
            n.user = [t for t in n.user if (t.key, t.effect) != (data.key, data.effect)]
            n.user.append(_Taint(data.key, data.effect, data.value, env.t))
        case inp.NodeUntainted():
            n.user = [t for t in n.user if not _untaints(data.key, data.effect, t.key, t.effect)]
            n.untainted.append((data.key, data.effect))
        case internal.NodeStatusUpdated():
            n.capacity, n.allocatable = data.capacity, data.allocatable
    return True


def _conditions(n: _Node, instant: Instant) -> list[dict[str, Any]]:
    start = instant.start
    ready = n.conditions.get("Ready")
    lost_at = ready[3] if ready is not None and ready[0] == "Unknown" and ready[1] == UNKNOWN_REASON else None
    heartbeat = instant.t if lost_at is None else (n.off_since if n.off_since is not None else lost_at)
    out = []
    for kind, (status, reason, message) in HEALTHY.items():
        t = n.created
        if kind in n.conditions:
            status, reason, message, t = n.conditions[kind]
        if lost_at is not None and kind != "Ready" and t <= lost_at:
            status, reason, message, t = "Unknown", UNKNOWN_REASON, UNKNOWN_MESSAGE, lost_at
        out.append(
            {
                "type": kind,
                "status": status,
                "lastHeartbeatTime": rfc3339(start, min(heartbeat, instant.t)),
                "lastTransitionTime": rfc3339(start, t),
                "reason": reason,
                "message": message,
            }
        )
    return out


def _taints(n: _Node, instant: Instant) -> list[dict[str, Any]]:
    spec_taints = (n.raw or {}).get("spec", {}).get("taints", [])
    kept = [
        t
        for t in spec_taints
        if not any(_untaints(k, e, t.get("key", ""), t.get("effect", "")) for k, e in n.untainted)
    ]
    out = [dict(t) for t in kept]
    for t in (*n.plane, *n.user):
        taint: dict[str, Any] = {"key": t.key, "effect": t.effect}
        if t.value:
            taint["value"] = t.value
        if t.effect == "NoExecute" and t.added is not None:
            taint["timeAdded"] = rfc3339(instant.start, t.added)
        out.append(taint)
    return out


def node_object(n: _Node, instant: Instant) -> dict[str, Any] | None:
    """The Node JSON (``v1``), or None when no such node exists at the instant."""
    if not n.exists or n.raw is None:
        return None
    raw = n.raw
    meta = copy.deepcopy(raw.get("metadata", {}))
    if not meta.get("uid"):
        meta["uid"] = facade_uid("object", n.origin)
    meta.setdefault("creationTimestamp", rfc3339(instant.start, n.created))
    meta["resourceVersion"] = resource_version(n.changed)
    spec = copy.deepcopy(raw.get("spec", {}))
    taints = _taints(n, instant)
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)
    given = raw.get("status", {})
    status: dict[str, Any] = copy.deepcopy(given)
    status["capacity"] = n.capacity or given.get("capacity", {})
    status["allocatable"] = n.allocatable or given.get("allocatable") or status["capacity"]
    status["conditions"] = _conditions(n, instant)
    status.setdefault("addresses", [{"type": "Hostname", "address": meta.get("name", "")}])
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 10250}})
    status.setdefault("nodeInfo", {})
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def build_node(events: Iterable[Envelope], instant: Instant) -> dict[str, Any] | None:
    return node_object(fold_node(events, instant.t), instant)


LEASE_NAMESPACE: Final = "kube-node-lease"


def lease_object(node: dict[str, Any], instant: Instant) -> dict[str, Any]:
    """The node's heartbeat Lease in ``kube-node-lease`` (``pkg/kubelet/nodelease``),
    renewed at the node's last heartbeat."""
    meta = node.get("metadata", {})
    name = meta.get("name", "")
    ready: dict[str, Any] = next(
        (c for c in node.get("status", {}).get("conditions", []) if c.get("type") == "Ready"), {}
    )
    renewed = str(ready.get("lastHeartbeatTime", meta.get("creationTimestamp", "")))
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": LEASE_NAMESPACE,
            "uid": facade_uid(instant.run, "Lease", name),
            "resourceVersion": meta.get("resourceVersion", ""),
            "creationTimestamp": meta.get("creationTimestamp"),
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta.get("uid", "")}],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": 40,
            "renewTime": renewed.replace("Z", ".000000Z") if renewed.endswith("Z") else renewed,
        },
    }

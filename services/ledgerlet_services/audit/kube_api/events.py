"""Kubernetes Events from stored decisions, with upstream's reasons, messages and counts.

Every Event comes from a decision (or the taint manager's deletion) of the run, so none
expires. What each component records, and where upstream records it:

* kubelet (``record.EventRecorder``: ``firstTimestamp``, ``lastTimestamp``, ``count``,
  ``source``): ``Evicted`` (``eviction_manager.go: evictPod``, with the
  ``offending_containers`` annotations), ``Killing`` ``Stopping container X``
  (``kuberuntime_container.go: killContainer``), admission refusals under their own
  reason (``kubelet.go: rejectPod``), node conditions ``NodeHasDiskPressure`` and kin,
  ``Node N status is now: R`` (``kubelet_node_status.go: recordNodeStatusEvent``),
  ``FreeDiskSpaceFailed`` and, on a repeated failure, ``ImageGCFailed``
  (``images/image_gc_manager.go``, ``kubelet.go: StartGarbageCollection``), ``Shutdown``
  (``nodeshutdown_manager_linux.go``);
* kube-scheduler (``events.k8s.io``: ``eventTime``, ``series``, ``action``):
  ``Scheduled``, ``FailedScheduling``, ``Preempted`` ``Preempted by pod UID on node N``
  (``framework/preemption/preemption.go``);
* controllers: ``SuccessfulCreate`` on the owner, ``NodeNotReady`` from the node
  lifecycle controller, ``TaintManagerEviction``.

Identical events of one object (same source, reason, message) are one Event whose count
and last timestamp grow, as client-go's ``EventCorrelator`` dedups them.
"""

from __future__ import annotations

import bisect
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ledgerlet_core.cluster.pod_history import POD_HISTORY_TYPES, PodHistory, fold_event
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts import internal
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.model.duration import SECOND, parse_duration
from ledgerlet_services.audit.kube_api.meta import (
    Instant,
    facade_uid,
    micro_time,
    resource_version,
    rfc3339,
    unix_nanos,
)
from ledgerlet_services.audit.kube_api.pods import pod_uid

KUBELET: Final = "kubelet"
SCHEDULER: Final = "default-scheduler"
SCHEDULER_INSTANCE: Final = "default-scheduler-ledgerlet"

#: decisions about a pod that record events, and the taint manager's deletion (internal)
POD_EVENT_TYPES: Final = (
    "PodEvicted",
    "PodTerminated",
    "PodPreempted",
    "PodScheduled",
    "PodUnschedulable",
    "PodRejected",
    "PodReplaced",
    "PodDeletionRequested",
)
#: decisions about a node that record events
NODE_EVENT_TYPES: Final = ("NodeConditionChanged", "ImageGarbageCollected", "NodeShutdownStarted")
#: what a node's events are built from (its object for its uid)
NODE_HISTORY_TYPES: Final = ("ObjectApplied", *NODE_EVENT_TYPES)
#: the decision types whose events a listing pages through (internal ones aside)
EVENT_DECISION_TYPES: Final = tuple(t for t in (*POD_EVENT_TYPES, *NODE_EVENT_TYPES) if t != "PodDeletionRequested")

_CONDITION_REASONS: Final = {
    ("MemoryPressure", "True"): "NodeHasInsufficientMemory",
    ("MemoryPressure", "False"): "NodeHasSufficientMemory",
    ("DiskPressure", "True"): "NodeHasDiskPressure",
    ("DiskPressure", "False"): "NodeHasNoDiskPressure",
    ("PIDPressure", "True"): "NodeHasInsufficientPID",
    ("PIDPressure", "False"): "NodeHasSufficientPID",
    ("Ready", "True"): "NodeReady",
    ("Ready", "False"): "NodeNotReady",
    ("Ready", "Unknown"): "NodeNotReady",
}
_CONTROLLERS: Final = {
    "ReplicaSet": "replicaset-controller",
    "DaemonSet": "daemonset-controller",
    "StatefulSet": "statefulset-controller",
    "Job": "job-controller",
    "Deployment": "deployment-controller",
}

#: event reason -> the types of record it can come from (``reason=`` listings read only those)
REASON_TYPES: Final = {
    "Evicted": ("PodEvicted", "PodRejected"),
    "Killing": ("PodTerminated",),
    "Preempted": ("PodPreempted",),
    "Scheduled": ("PodScheduled",),
    "FailedScheduling": ("PodUnschedulable",),
    "SuccessfulCreate": ("PodReplaced",),
    "TaintManagerEviction": ("PodDeletionRequested",),
    "FreeDiskSpaceFailed": ("ImageGarbageCollected",),
    "ImageGCFailed": ("ImageGarbageCollected",),
    "Shutdown": ("NodeShutdownStarted",),
    **dict.fromkeys(set(_CONDITION_REASONS.values()), ("NodeConditionChanged",)),
}


def types_for_reason(reason: str) -> tuple[str, ...]:
    """Record types an event of ``reason`` can come from; any other reason is a kubelet's
    admission refusal (``OutOfcpu``, ``NodeShutdown``, ``NodeAffinity``...)."""
    return REASON_TYPES.get(reason, ("PodRejected",))


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One occurrence of an event, before identical ones are counted together."""

    source_id: str
    sub: int
    #: when it happened (virtual ns) and when the record it comes from was stored
    t: int
    seen: int
    involved: Mapping[str, str]
    namespace: str
    type: str
    reason: str
    message: str
    component: str
    host: str = ""
    #: events.k8s.io style (the scheduler): eventTime, series and action instead of counts
    action: str = ""
    related: Mapping[str, str] | None = None
    annotations: Mapping[str, str] | None = None

    def key(self) -> tuple[Any, ...]:
        ref = self.involved
        return (
            ref.get("kind"),
            ref.get("namespace"),
            ref.get("name"),
            ref.get("uid"),
            ref.get("fieldPath"),
            self.type,
            self.reason,
            self.message,
            self.component,
            self.host,
        )


@dataclass
class Occurrences:
    """An Event: its first occurrence and how often it recurred up to the instant."""

    first: EventSpec
    count: int = 1
    last: int = 0
    last_seen: int = 0
    extra: list[EventSpec] = field(default_factory=list)


#: the pod events that make a recorded event (or carry the pod's object), read as their models
_POD_SOURCES: Final = frozenset(
    {
        "ObjectApplied",
        "ObjectCreated",
        "PodEvicted",
        "PodTerminated",
        "PodPreempted",
        "PodScheduled",
        "PodUnschedulable",
        "PodRejected",
        "PodReplaced",
        "PodDeletionRequested",
    }
)
#: the node events that do
_NODE_SOURCES: Final = frozenset(
    {"ObjectApplied", "NodeConditionChanged", "ImageGarbageCollected", "NodeShutdownStarted"}
)


def _pod_ref(key: str, uid: str, field_path: str = "") -> dict[str, str]:
    namespace, _, name = key.partition("/")
    ref = {"kind": "Pod", "namespace": namespace, "name": name, "uid": uid, "apiVersion": "v1"}
    if field_path:
        ref["fieldPath"] = field_path
    return ref


#: the uid of the pod a name held at an instant: ``(pod key, t) -> uid`` ("" if none)
UidAt = Callable[[str, int], str]


def pod_uids(history: Sequence[Envelope]) -> list[tuple[int, str]]:
    """When each pod of one name's history (in store order) took the name, and its uid,
    folded as the Pod object is (:mod:`ledgerlet_core.cluster.pod_history`)."""
    out: list[tuple[int, str]] = []
    h = PodHistory()
    for env in history:
        if env.type in POD_HISTORY_TYPES:
            h = fold_event(h, env, decode_data(env))
            uid = pod_uid(h)
            if not out or out[-1][1] != uid:
                out.append((env.t, uid))
    return out


def uid_at(timelines: Mapping[str, Sequence[tuple[int, str]]]) -> UidAt:
    """The uid each name's pod had at an instant, from :func:`pod_uids` of each name."""

    def at(key: str, t: int) -> str:
        timeline = timelines.get(key, ())
        n = bisect.bisect_right(timeline, t, key=lambda entry: entry[0])
        return timeline[n - 1][1] if n else ""

    return at


def pod_event_specs(key: str, history: Sequence[Envelope], uids: UidAt) -> list[EventSpec]:
    """The events recorded about one pod (and its owner's ``SuccessfulCreate``) from its
    history in decision order; ``uids`` gives the uids of other pods (preemptors). Each
    event names the pod that held the name when it was recorded: its history is folded
    along as the Pod object's is, so an Event and the Pod the facade shows agree on uids
    (a StatefulSet's pod created again after an eviction is a new one)."""
    out: list[EventSpec] = []
    h = PodHistory()
    namespace = key.partition("/")[0]
    for env in history:
        folded = env.type in POD_HISTORY_TYPES
        if env.type not in _POD_SOURCES and not folded:
            continue
        data = decode_data(env)
        if folded:
            h = fold_event(h, env, data)
        if isinstance(data, inp.ObjectApplied | internal.ObjectCreated):
            continue
        obj = h.submitted or {}
        uid = pod_uid(h)
        node = env.node or ""

        def spec(sub: int = 0, t: int = env.t, env: Envelope = env, **kw: Any) -> EventSpec:
            return EventSpec(source_id=env.id, sub=sub, t=t, seen=env.t, namespace=namespace, **kw)

        if isinstance(data, dec.PodEvicted):
            annotations = {}
            if data.offending_containers:
                annotations["offending_containers"] = ",".join(data.offending_containers)
                annotations["offending_containers_usage"] = ",".join(data.offending_containers_usage)
            if data.resource:
                annotations["starved_resource"] = data.resource
            out.append(
                spec(
                    involved=_pod_ref(key, uid),
                    type="Warning",
                    reason="Evicted",
                    message=data.message,
                    component=KUBELET,
                    host=node,
                    annotations=annotations or None,
                )
            )
        elif isinstance(data, dec.PodTerminated):
            killed = round(float(data.killed_at) * SECOND)
            for i, c in enumerate(obj.get("spec", {}).get("containers", [])):
                name = c.get("name", "")
                out.append(
                    spec(
                        sub=i,
                        t=min(killed, env.t),
                        involved=_pod_ref(key, uid, f"spec.containers{{{name}}}"),
                        type="Normal",
                        reason="Killing",
                        message=f"Stopping container {name}",
                        component=KUBELET,
                        host=node,
                    )
                )
        elif isinstance(data, dec.PodPreempted):
            preemptor = data.preemptor
            out.append(
                spec(
                    involved=_pod_ref(key, uid),
                    type="Normal",
                    reason="Preempted",
                    message=f"Preempted by pod {uids(preemptor, env.t) or preemptor} on node {node}",
                    component=SCHEDULER,
                    host=SCHEDULER_INSTANCE,
                    action="Preempting",
                    related=_pod_ref(preemptor, uids(preemptor, env.t)),
                )
            )
        elif isinstance(data, dec.PodScheduled):
            out.append(
                spec(
                    involved=_pod_ref(key, uid),
                    type="Normal",
                    reason="Scheduled",
                    message=f"Successfully assigned {key} to {node}",
                    component=SCHEDULER,
                    host=SCHEDULER_INSTANCE,
                    action="Binding",
                )
            )
        elif isinstance(data, dec.PodUnschedulable):
            out.append(
                spec(
                    involved=_pod_ref(key, uid),
                    type="Warning",
                    reason="FailedScheduling",
                    message=data.message,
                    component=SCHEDULER,
                    host=SCHEDULER_INSTANCE,
                    action="Scheduling",
                )
            )
        elif isinstance(data, dec.PodRejected) and data.admitter != "apiserver":
            out.append(
                spec(
                    involved=_pod_ref(key, uid),
                    type="Warning",
                    reason=data.reason,
                    message=data.message,
                    component=KUBELET,
                    host=node,
                )
            )
        elif isinstance(data, dec.PodReplaced):
            owner_kind, _, owner_name = data.owner.partition("/")
            new_name = data.replacement.partition("/")[2]
            owner_uid = next(
                (
                    r.get("uid", "")
                    for r in obj.get("metadata", {}).get("ownerReferences", [])
                    if r.get("name") == owner_name
                ),
                "",
            )
            message = (
                f"create Pod {new_name} in StatefulSet {owner_name} successful"
                if owner_kind == "StatefulSet"
                else f"Created pod: {new_name}"
            )
            owner = {
                "kind": owner_kind,
                "namespace": namespace,
                "name": owner_name,
                "uid": owner_uid,
                "apiVersion": "batch/v1" if owner_kind == "Job" else "apps/v1",
            }
            out.append(
                spec(
                    involved=owner,
                    type="Normal",
                    reason="SuccessfulCreate",
                    message=message,
                    component=_CONTROLLERS.get(owner_kind, "controller-manager"),
                )
            )
        elif isinstance(data, internal.PodDeletionRequested) and data.reason == "TaintEviction":
            out.append(
                spec(
                    involved=_pod_ref(key, uid),
                    type="Normal",
                    reason="TaintManagerEviction",
                    message=f"Marking for deletion Pod {key}",
                    component="taint-eviction-controller",
                )
            )
    return out


def image_gc_period(kubelet_config: Mapping[str, Any]) -> int:
    """``imageGCPeriod`` (5m, an upstream constant ledgerlet lets a scenario set)."""
    raw = kubelet_config.get("imageGCPeriod", "5m")
    try:
        return parse_duration(raw) if isinstance(raw, str) else round(float(raw) * SECOND)
    except ValueError:
        return 300 * SECOND


def node_event_specs(name: str, history: Sequence[Envelope], gc_period: int) -> list[EventSpec]:
    """The events recorded about one node from its history in decision order."""
    out: list[EventSpec] = []
    uid = ""
    kubelet_ref = {"kind": "Node", "name": name, "uid": name}  # the kubelet's nodeRef: its name as uid
    last_gc_failure: int | None = None
    for env in history:
        if env.type not in _NODE_SOURCES:
            continue
        data = decode_data(env)
        if isinstance(data, inp.ObjectApplied):
            uid = data.object.get("metadata", {}).get("uid", uid)
            continue

        def spec(sub: int = 0, env: Envelope = env, **kw: Any) -> EventSpec:
            return EventSpec(source_id=env.id, sub=sub, t=env.t, seen=env.t, namespace="default", **kw)

        if isinstance(data, dec.NodeConditionChanged):
            reason = _CONDITION_REASONS.get((data.condition, data.status))
            if reason is None:
                continue
            message = f"Node {name} status is now: {reason}"
            if data.status == "Unknown":  # the node lifecycle controller, not the kubelet
                ref = {"kind": "Node", "name": name, "uid": uid, "apiVersion": "v1"}
                out.append(
                    spec(involved=ref, type="Normal", reason=reason, message=message, component="node-controller")
                )
            else:
                out.append(
                    spec(
                        involved=kubelet_ref,
                        type="Normal",
                        reason=reason,
                        message=message,
                        component=KUBELET,
                        host=name,
                    )
                )
        elif isinstance(data, dec.ImageGarbageCollected):
            error = data.error
            if not error:
                last_gc_failure = None
                continue
            out.append(
                spec(
                    involved=kubelet_ref,
                    type="Warning",
                    reason="FreeDiskSpaceFailed",
                    message=error,
                    component=KUBELET,
                    host=name,
                )
            )
            if last_gc_failure is not None and env.t - last_gc_failure == gc_period:
                out.append(
                    spec(
                        sub=1,
                        involved=kubelet_ref,
                        type="Warning",
                        reason="ImageGCFailed",
                        message=error,
                        component=KUBELET,
                        host=name,
                    )
                )
            last_gc_failure = env.t
        elif isinstance(data, dec.NodeShutdownStarted):
            out.append(
                spec(
                    involved=kubelet_ref,
                    type="Normal",
                    reason="Shutdown",
                    message="Shutdown manager detected shutdown event",
                    component=KUBELET,
                    host=name,
                )
            )
    return out


def correlate(specs: Iterable[EventSpec], t_to: int) -> list[Occurrences]:
    """Identical occurrences up to ``t_to`` counted as one Event each, in order of first."""
    groups: dict[tuple[Any, ...], Occurrences] = {}
    for s in specs:
        if s.seen > t_to:
            continue
        found = groups.get(s.key())
        if found is None:
            groups[s.key()] = Occurrences(s, 1, s.t, s.seen)
        else:
            found.count += 1
            found.last = max(found.last, s.t)
            found.last_seen = max(found.last_seen, s.seen)
            found.extra.append(s)
    return list(groups.values())


def event_name(occ: Occurrences, instant: Instant) -> str:
    """``<object>.<hex unix nanos>`` as client-go names events (the nanoseconds carry a
    few digits derived from the record, so two events of one object at one instant differ)."""
    first = occ.first
    salt = zlib.crc32(f"{first.source_id}/{first.sub}".encode()) % 1000
    return f"{first.involved.get('name', '')}.{unix_nanos(instant.start, first.t) + salt:x}"


def core_event(occ: Occurrences, instant: Instant) -> dict[str, Any]:
    """The Event as ``/api/v1`` serves it."""
    first = occ.first
    start = instant.start
    meta: dict[str, Any] = {
        "name": event_name(occ, instant),
        "namespace": first.namespace,
        "uid": facade_uid(instant.run, first.source_id, str(first.sub)),
        "resourceVersion": resource_version(occ.last_seen),
        "creationTimestamp": rfc3339(start, first.t),
    }
    if first.annotations:
        meta["annotations"] = dict(first.annotations)
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": meta,
        "involvedObject": {k: v for k, v in first.involved.items() if v},
        "reason": first.reason,
        "message": first.message,
    }
    if first.action:  # recorded through events.k8s.io
        out["source"] = {}
        out["firstTimestamp"] = None
        out["lastTimestamp"] = None
        out["eventTime"] = micro_time(start, first.t)
        if occ.count > 1:
            out["series"] = {"count": occ.count, "lastObservedTime": micro_time(start, occ.last)}
        out["action"] = first.action
        if first.related:
            out["related"] = {k: v for k, v in first.related.items() if v}
    else:
        out["source"] = {"component": first.component, **({"host": first.host} if first.host else {})}
        out["firstTimestamp"] = rfc3339(start, first.t)
        out["lastTimestamp"] = rfc3339(start, occ.last)
        out["count"] = occ.count
        out["eventTime"] = None
    out["type"] = first.type
    out["reportingComponent"] = first.component
    out["reportingInstance"] = first.host
    return out


def events_v1(core: Mapping[str, Any]) -> dict[str, Any]:
    """The same Event as ``events.k8s.io/v1`` serves it (``pkg/apis/events/v1`` conversion)."""
    out: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": core["metadata"],
        "eventTime": core.get("eventTime"),
        "reportingController": core.get("reportingComponent", ""),
        "reportingInstance": core.get("reportingInstance", ""),
        "action": core.get("action", ""),
        "reason": core.get("reason", ""),
        "regarding": core.get("involvedObject", {}),
        "note": core.get("message", ""),
        "type": core.get("type", ""),
    }
    if core.get("series"):
        out["series"] = core["series"]
    if core.get("related"):
        out["related"] = core["related"]
    if core.get("source"):
        out["deprecatedSource"] = core["source"]
    if core.get("firstTimestamp"):
        out["deprecatedFirstTimestamp"] = core["firstTimestamp"]
        out["deprecatedLastTimestamp"] = core["lastTimestamp"]
        out["deprecatedCount"] = core.get("count", 1)
    return out

"""Recorded Kubernetes Events, kept as what the cluster was seen to do (``spec.observedEvents``).

A recording of an incident often holds the kubelet's own ``Evicted`` events
(``kubectl get events -o yaml``). They are never an input: nothing a run decides reads
them. They are the observed outcome, set beside ledgerlet's decision by ``explain`` (the
real message next to the re-derived one). Both shapes are read: core ``v1`` Events
(``involvedObject``, ``message``, ``source``, ``count``, ``lastTimestamp``) and
``events.k8s.io/v1`` (``regarding``, ``note``, ``reportingController``, ``series``,
``deprecated*``), as upstream's ``staging/src/k8s.io/api/events/v1/types.go`` maps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.timefmt import parse_rfc3339

EVENT_API_VERSIONS: Final = ("v1", "events.k8s.io/v1", "events.k8s.io/v1beta1")
_EARLIEST: Final = "0001-01-01T00:00:00Z"


def is_event(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Event" and obj.get("apiVersion") in EVENT_API_VERSIONS


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _stamp(value: Any, where: str, field: str) -> str:
    """An RFC 3339 timestamp as written, checked; "" when absent."""
    if value in (None, ""):
        return ""
    text = value if isinstance(value, str) else value.isoformat() if hasattr(value, "isoformat") else None
    if text is None:
        raise InputError(f"expected an RFC 3339 time, got {value!r}", obj=where, field=field)
    try:
        return parse_rfc3339(text).strftime("%Y-%m-%dT%H:%M:%S.%fZ").replace(".000000Z", "Z")
    except ValueError as exc:
        raise InputError(str(exc), obj=where, field=field) from None


def observed_event(obj: Any, where: str) -> dict[str, Any]:
    """One recorded Event as the run keeps it: when it was last seen, its type, reason and
    message, the object it is about, who reported it and how many times."""
    if not isinstance(obj, dict) or not is_event(obj):
        raise InputError("expected an Event (kind: Event, apiVersion: v1 or events.k8s.io/v1)", obj=where, field="kind")
    new = obj.get("apiVersion", "").startswith("events.k8s.io/")
    ref_field = "regarding" if new else "involvedObject"
    ref = obj.get(ref_field)
    if not isinstance(ref, dict) or not _text(ref.get("name")) or not _text(ref.get("kind")):
        raise InputError("expected the object the event is about, with its kind and name", obj=where, field=ref_field)
    reason = obj.get("reason")
    if not isinstance(reason, str) or not reason:
        raise InputError("required field is missing", obj=where, field="reason")
    series = _map(obj.get("series"))
    if new:
        source = _map(obj.get("deprecatedSource"))
        component = _text(obj.get("reportingController")) or _text(source.get("component"))
        host = _text(source.get("host")) or _text(obj.get("reportingInstance"))
        message = _text(obj.get("note"))
        first = _stamp(obj.get("deprecatedFirstTimestamp"), where, "deprecatedFirstTimestamp")
        last = _stamp(series.get("lastObservedTime"), where, "series.lastObservedTime") or _stamp(
            obj.get("deprecatedLastTimestamp"), where, "deprecatedLastTimestamp"
        )
        count = series.get("count") or obj.get("deprecatedCount") or 1
    else:
        source = _map(obj.get("source"))
        component = _text(source.get("component")) or _text(obj.get("reportingComponent"))
        host = _text(source.get("host")) or _text(obj.get("reportingInstance"))
        message = _text(obj.get("message"))
        first = _stamp(obj.get("firstTimestamp"), where, "firstTimestamp")
        last = _stamp(series.get("lastObservedTime"), where, "series.lastObservedTime") or _stamp(
            obj.get("lastTimestamp"), where, "lastTimestamp"
        )
        count = series.get("count") or obj.get("count") or 1
    event_time = _stamp(obj.get("eventTime"), where, "eventTime")
    created = _stamp(_map(obj.get("metadata")).get("creationTimestamp"), where, "metadata.creationTimestamp")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InputError(f"expected a count of at least 1, got {count!r}", obj=where, field="count")
    out: dict[str, Any] = {
        "time": last or event_time or first or created,
        "type": _text(obj.get("type")) or "Normal",
        "reason": reason,
        "message": message,
        "object": {k: ref[k] for k in ("kind", "namespace", "name", "uid") if _text(ref.get(k))},
        "count": count,
    }
    if first and first != out["time"]:
        out["firstTime"] = first
    if component or host:
        out["source"] = {k: v for k, v in (("component", component), ("host", host)) if v}
    return out


def observed_events(raw: list[Any]) -> list[dict[str, Any]]:
    """``spec.observedEvents``, each checked and kept as :func:`observed_event` gives it."""
    return [observed_event(obj, f"spec.observedEvents[{i}]") for i, obj in enumerate(raw)]


def about_pod(events: list[dict[str, Any]], pod: str) -> list[dict[str, Any]]:
    """The recorded events about ``NAMESPACE/NAME`` (a Pod), oldest first."""
    namespace, _, name = pod.partition("/")
    mine = [
        e
        for e in events
        if e.get("object", {}).get("kind") == "Pod"
        and e["object"].get("name") == name
        and e["object"].get("namespace", "default") == namespace
    ]
    return sorted(mine, key=lambda e: parse_rfc3339(e["time"]) if e.get("time") else parse_rfc3339(_EARLIEST))

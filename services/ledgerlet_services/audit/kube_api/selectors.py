"""Label and field selectors as the API server parses and matches them.

Label selectors: ``k8s.io/apimachinery/pkg/labels/selector.go`` (``=``, ``==``, ``!=``,
``in``, ``notin``, existence, ``!`` non-existence, ``>``/``<`` on integers). Field
selectors: ``k8s.io/apimachinery/pkg/fields/selector.go`` (``=``, ``==``, ``!=``, with
``\\`` escapes), checked against the fields each kind lets a client select by
(``pkg/apis/core/v1/conversion.go``: ``AddFieldLabelConversionsFor...``). A selector
that does not parse, or names a field the kind does not have, is a 400.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ledgerlet_core.model.k8s.selection import Requirement, Selector, int64
from ledgerlet_services.audit.kube_api.meta import bad_request

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


#: the facade's operators as the core's matcher names them (``selection.Requirement``)
_OPS: Final = {"=": "In", "in": "In", "!=": "NotIn", "notin": "NotIn", "gt": "Gt", "lt": "Lt"}


def _split_outside_parens(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def _check_key(key: str, whole: str) -> str:
    if not key or len(key.rsplit("/", 1)[-1]) > 63 or not _KEY.match(key):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r} in selector {whole!r}")
    return key


def _check_value(value: str, whole: str) -> str:
    if len(value) > 63 or (value and not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", value)):
        raise bad_request(f"unable to parse requirement: invalid label value {value!r} in selector {whole!r}")
    return value


_SET = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")
_CMP = re.compile(r"^\s*([^!=<>\s]+)\s*(==|!=|=|>|<)\s*(\S*)\s*$")


def parse_label_selector(text: str | None) -> Selector:
    """The selector a request's ``labelSelector`` says, matched as the core matches (``selection``)."""
    if not text or not text.strip():
        return Selector()
    reqs: list[Requirement] = []
    for raw in _split_outside_parens(text):
        part = raw.strip()
        if not part:
            raise bad_request(f"unable to parse requirement: empty requirement in selector {text!r}")
        if m := _SET.match(part):
            values = tuple(_check_value(v.strip(), text) for v in m.group(3).split(","))
            reqs.append(Requirement(_check_key(m.group(1), text), _OPS[m.group(2)], values))
        elif m := _CMP.match(part):
            key, op, value = m.group(1), m.group(2), m.group(3)
            _check_key(key, text)
            if op in (">", "<"):
                if int64(value) is None:  # (NewRequirement: strconv.ParseInt(vals[i], 10, 64))
                    raise bad_request(
                        f"unable to parse requirement: for 'gt', 'lt' operators, the value must be an integer: {part!r}"
                    )
                reqs.append(Requirement(key, "Gt" if op == ">" else "Lt", (value,)))
            else:
                reqs.append(Requirement(key, "NotIn" if op == "!=" else "In", (_check_value(value, text),)))
        elif part.startswith("!"):
            reqs.append(Requirement(_check_key(part[1:].strip(), text), "DoesNotExist", ()))
        else:
            reqs.append(Requirement(_check_key(part, text), "Exists", ()))
    return Selector(tuple(reqs))


@dataclass(frozen=True, slots=True)
class FieldTerm:
    field: str
    value: str
    equal: bool


@dataclass(frozen=True, slots=True)
class FieldSelector:
    terms: tuple[FieldTerm, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all((fields.get(t.field, "") == t.value) == t.equal for t in self.terms)

    def wanted(self, field: str) -> str | None:
        """The value the selector requires ``field`` to equal, if it does."""
        return next((t.value for t in self.terms if t.field == field and t.equal), None)


def _split_escaped(text: str, sep: str) -> list[str]:
    parts, current, escaped = [], "", False
    for ch in text:
        if escaped:
            current += "\\" + ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append(current)
            current = ""
        else:
            current += ch
    if escaped:
        raise bad_request(f"invalid field selector: {text!r} ends in an escape")
    parts.append(current)
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_field_selector(
    text: str | None, allowed: frozenset[str], aliases: Mapping[str, str] | None = None
) -> FieldSelector:
    """``text`` for a kind whose selectable fields are ``allowed`` (``aliases`` maps the
    names another API version uses: ``events.k8s.io``'s ``regarding.name``)."""
    if not text or not text.strip():
        return FieldSelector()
    terms: list[FieldTerm] = []
    for raw in _split_escaped(text, ","):
        part = raw.strip()
        field, value, equal = _term(part)
        field = (aliases or {}).get(field, field)
        if field not in allowed:
            raise bad_request(f"field label not supported: {field}")
        terms.append(FieldTerm(field, value, equal))
    return FieldSelector(tuple(terms))


def _term(part: str) -> tuple[str, str, bool]:
    """``field=value``, ``field==value`` or ``field!=value`` (the first unescaped operator)."""
    for op, equal in (("!=", False), ("==", True), ("=", True)):
        index = _find_unescaped(part, op)
        if index >= 0:
            return part[:index].strip(), _unescape(part[index + len(op) :].strip()), equal
    raise bad_request(f"invalid selector: '{part}'; can't understand '{part}'")


def _find_unescaped(text: str, op: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(op, i):
            return i
        i += 1
    return -1


_META: Final = frozenset({"metadata.name", "metadata.namespace"})

POD_FIELDS: Final = _META | {
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
}
NODE_FIELDS: Final = _META | {"spec.unschedulable"}
NAMESPACE_FIELDS: Final = frozenset({"metadata.name", "status.phase"})
EVENT_FIELDS: Final = _META | {
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
}
#: events.k8s.io/v1 selects by the same fields under its own names
EVENT_ALIASES: Final = {
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
}


def _meta_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata", {})
    return {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}


def pod_fields(pod: Mapping[str, Any]) -> dict[str, str]:
    """``pkg/registry/core/pod/strategy.go: ToSelectableFields``."""
    spec, status = pod.get("spec", {}), pod.get("status", {})
    ips = [ip.get("ip", "") for ip in status.get("podIPs", [])]
    return {
        **_meta_fields(pod),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.restartPolicy": spec.get("restartPolicy", ""),
        "spec.schedulerName": spec.get("schedulerName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
        "status.phase": status.get("phase", ""),
        "status.podIP": status.get("podIP", ""),
        "status.podIPs": ips[0] if ips else "",
        "status.nominatedNodeName": status.get("nominatedNodeName", ""),
    }


def node_fields(node: Mapping[str, Any]) -> dict[str, str]:
    return {
        **_meta_fields(node),
        "spec.unschedulable": "true" if node.get("spec", {}).get("unschedulable") else "false",
    }


def namespace_fields(ns: Mapping[str, Any]) -> dict[str, str]:
    return {**_meta_fields(ns), "status.phase": ns.get("status", {}).get("phase", "")}


def core_form(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """An ``events.k8s.io/v1`` Event read under core/v1's field names (the other as it is)."""
    if "regarding" not in event:
        return event
    return {
        "metadata": event.get("metadata", {}),
        "involvedObject": event.get("regarding", {}),
        "reason": event.get("reason", ""),
        "message": event.get("note", ""),
        "type": event.get("type", ""),
        "source": event.get("deprecatedSource", {}),
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": event.get("deprecatedCount", 0),
        "eventTime": event.get("eventTime"),
        "series": event.get("series"),
        "reportingComponent": event.get("reportingController", ""),
        "reportingInstance": event.get("reportingInstance", ""),
    }


def event_fields(event: Mapping[str, Any]) -> dict[str, str]:
    """``pkg/registry/core/event/strategy.go: ToSelectableFields`` (either API version)."""
    event = core_form(event)
    ref = event.get("involvedObject", {})
    return {
        **_meta_fields(event),
        **{
            f"involvedObject.{k}": str(ref.get(k, ""))
            for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
        },
        "reason": event.get("reason", ""),
        "reportingComponent": event.get("reportingComponent", ""),
        "source": event.get("source", {}).get("component", ""),
        "type": event.get("type", ""),
    }


FieldsOf = Callable[[Mapping[str, Any]], dict[str, str]]

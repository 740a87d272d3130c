"""What a facade request names and asks for: the resource path, the selectors allowed on
it, the Table form, a page's size, and the answer to a write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from starlette.requests import Request

from ledgerlet_core.model.duration import format_duration
from ledgerlet_services.audit.kube_api import resources as res
from ledgerlet_services.audit.kube_api.meta import ApiError, Instant, query_int
from ledgerlet_services.audit.kube_api.selectors import (
    EVENT_ALIASES,
    EVENT_FIELDS,
    NAMESPACE_FIELDS,
    NODE_FIELDS,
    POD_FIELDS,
    FieldSelector,
    event_fields,
    namespace_fields,
    node_fields,
    parse_field_selector,
    pod_fields,
)

READ_METHODS: Final = ("GET", "HEAD")
ALL_METHODS: Final = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
TABLE_TYPE: Final = "application/json;as=Table;v=v1;g=meta.k8s.io"
MAX_LIMIT: Final = 5000
NOT_FOUND: Final = "the server could not find the requested resource"

#: kind -> the field selectors it takes and its fields as a selector reads them
ALLOWED_FIELDS: Final = {
    "Pod": (POD_FIELDS, pod_fields),
    "Node": (NODE_FIELDS, node_fields),
    "Namespace": (NAMESPACE_FIELDS, namespace_fields),
    "Event": (EVENT_FIELDS, event_fields),
}
_META_FIELDS: Final = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True, slots=True)
class Target:
    """What a resource path names."""

    resource: res.Resource
    namespace: str
    name: str = ""
    subresource: str = ""


def resource_path(group: str, version: str, rest: list[str]) -> Target:
    """``[namespaces/NS/]RESOURCE[/NAME[/SUB]]`` under a group version."""
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3 or "" in rest:
        raise ApiError(404, "NotFound", NOT_FOUND)
    found = res.find(group, version, rest[0])
    if found is None:
        raise ApiError(404, "NotFound", NOT_FOUND)
    if namespace and not found.namespaced:
        raise ApiError(404, "NotFound", NOT_FOUND)
    return Target(found, namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "")


def wants_table(request: Request) -> str | None:
    """The Table API version the client asks for first (``as=Table``), if any."""
    for part in request.headers.get("accept", "").split(","):
        media = part.replace(" ", "")
        if "as=Table" in media and "g=meta.k8s.io" in media:
            return "meta.k8s.io/v1beta1" if "v=v1beta1" in media else "meta.k8s.io/v1"
        if media.startswith("application/json") and "as=" not in media:
            return None
    return None


def field_selector(target: Target, text: str | None) -> FieldSelector:
    kind = target.resource.kind
    allowed = ALLOWED_FIELDS.get(kind, (_META_FIELDS, None))[0]
    aliases = EVENT_ALIASES if kind == "Event" and target.resource.group else None
    return parse_field_selector(text, allowed, aliases)


def selector_fields(kind: str, obj: dict[str, Any]) -> dict[str, str]:
    """An object's fields as a field selector reads them (name and namespace for most kinds)."""
    fields_of = ALLOWED_FIELDS.get(kind, (None, None))[1]
    if fields_of:
        return fields_of(obj)
    meta = obj.get("metadata", {})
    return {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}


def page_limit(text: str | None) -> int | None:
    value = query_int(text, "limit")
    return None if not value else min(value, MAX_LIMIT)


def refused(resource: res.Resource | None, name: str, method: str, instant: Instant | None = None) -> ApiError:
    """Every write: 405, as for a resource whose verbs are get, list and watch."""
    what = f'{resource.name} "{name}"' if resource is not None and name else (resource.name if resource else "this")
    where = f" (run {instant.run} at {format_duration(instant.t)})" if instant is not None else ""
    message = (
        f"the server does not allow this method on the requested resource: {what} is a stored run's record{where}; "
        f"{method} is refused, this API serves get, list and watch only"
    )
    details = {"name": name, "kind": resource.name} if resource is not None else None
    return ApiError(405, "MethodNotAllowed", message, details=details, headers={"Allow": "GET, HEAD"})

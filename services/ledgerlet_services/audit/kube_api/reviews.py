"""What a client may ask about itself: ``SelfSubjectAccessReview`` (``kubectl auth
can-i``), ``SelfSubjectRulesReview`` (``can-i --list``) and ``SelfSubjectReview``
(``kubectl auth whoami``), answered with the read-only truth of a stored run.

Anyone who reaches the facade (with the token, when there is one) may get, list and watch
every resource it serves and the status subresource where there is one; nothing can be
created, changed or deleted, and no other subresource (``log``, ``exec``, ``eviction``)
is served. The reviews are created (POST) and answered, never stored, as the API server
does (``pkg/registry/authorization/selfsubjectaccessreview/rest.go``).
"""

from __future__ import annotations

import json
from typing import Any, Final

from ledgerlet_services.audit.kube_api import protobuf as pb
from ledgerlet_services.audit.kube_api.meta import ApiError, bad_request
from ledgerlet_services.audit.kube_api.resources import CREATE_ONLY, READ_VERBS, RESOURCES, Resource

#: the paths outside any group that answer a get
NON_RESOURCE_PATHS: Final = ("/version", "/api", "/api/*", "/apis", "/apis/*", "/openapi/*")
REFUSED: Final = "this API replays a stored run: it serves get, list and watch, and nothing can be changed"


def _readable(group: str, name: str, subresource: str) -> Resource | None:
    for r in RESOURCES:
        served = not subresource or subresource in r.subresources
        if r.group == group and r.name == name and r.verbs != CREATE_ONLY and served:
            return r
    return None


def _access(spec: dict[str, Any]) -> dict[str, Any]:
    attributes = spec.get("resourceAttributes")
    if isinstance(attributes, dict):
        verb = str(attributes.get("verb", ""))
        group, name = str(attributes.get("group", "")), str(attributes.get("resource", ""))
        sub = str(attributes.get("subresource", ""))
        what = f"{name}/{sub}" if sub else name
        if _readable(group, name, sub) is None:
            return {"allowed": False, "reason": f"{what}{'.' + group if group else ''} is not served: {REFUSED}"}
        if verb not in READ_VERBS:
            return {"allowed": False, "reason": f"{verb} {what}: {REFUSED}"}
        return {"allowed": True, "reason": "a stored run may be read"}
    path_attributes = spec.get("nonResourceAttributes")
    if isinstance(path_attributes, dict):
        path, verb = str(path_attributes.get("path", "")), str(path_attributes.get("verb", ""))
        served = any(path == p or (p.endswith("/*") and path.startswith(p[:-1])) for p in NON_RESOURCE_PATHS)
        if not served:
            return {"allowed": False, "reason": f"{path} is not served: {REFUSED}"}
        if verb != "get":
            return {"allowed": False, "reason": f"{verb} {path}: {REFUSED}"}
        return {"allowed": True, "reason": "a stored run may be read"}
    raise bad_request("SelfSubjectAccessReview: spec.resourceAttributes or spec.nonResourceAttributes is required")


def _rules() -> dict[str, Any]:
    """``SubjectRulesReviewStatus``: read every served resource, create the reviews."""
    by_group: dict[str, list[str]] = {}
    creatable: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.verbs == CREATE_ONLY:
            creatable.setdefault(r.group, []).append(r.name)
            continue
        names = by_group.setdefault(r.group, [])
        for name in (r.name, *(f"{r.name}/{s}" for s in r.subresources)):
            if name not in names:
                names.append(name)
    rules = [{"verbs": list(READ_VERBS), "apiGroups": [g], "resources": names} for g, names in by_group.items()]
    rules += [{"verbs": list(CREATE_ONLY), "apiGroups": [g], "resources": names} for g, names in creatable.items()]
    return {
        "resourceRules": rules,
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": list(NON_RESOURCE_PATHS)}],
        "incomplete": False,
    }


def _user(authenticated: bool) -> dict[str, Any]:
    """Who the facade takes the client for: the holder of its one token, or anyone."""
    if authenticated:
        return {"userInfo": {"username": "ledgerlet:token-holder", "groups": ["system:authenticated"]}}
    return {"userInfo": {"username": "system:anonymous", "groups": ["system:unauthenticated"]}}


_RESOURCE_ATTRIBUTES: Final = {
    1: "namespace",
    2: "verb",
    3: "group",
    4: "version",
    5: "resource",
    6: "subresource",
    7: "name",
}


def _from_protobuf(resource: Resource, body: bytes) -> dict[str, Any]:
    """A review kubectl sent as protobuf (``k8s.io/api/authorization/v1/generated.proto``:
    ``spec`` is field 2; an access review's attributes fields 1 and 2 of it; a rules
    review's namespace field 1), as the JSON it stands for."""
    try:
        _, kind, raw = pb.unwrap(body)
        if kind and kind != resource.kind:
            raise bad_request(f"expected a {resource.kind}, got a {kind}")
        spec_bytes = pb.message(raw, 2) or b""
        spec: dict[str, Any] = {}
        if resource.kind == "SelfSubjectAccessReview":
            attributes = pb.message(spec_bytes, 1)
            if attributes is not None:
                spec["resourceAttributes"] = pb.strings(attributes, _RESOURCE_ATTRIBUTES)
            path = pb.message(spec_bytes, 2)
            if path is not None:
                spec["nonResourceAttributes"] = pb.strings(path, {1: "path", 2: "verb"})
        elif resource.kind == "SelfSubjectRulesReview":
            spec = pb.strings(spec_bytes, {1: "namespace"})
    except pb.WireError as exc:
        raise bad_request(f"the {resource.kind} is not protobuf: {exc}") from None
    return {"spec": spec}


def review(
    resource: Resource, body: bytes, namespace: str, *, authenticated: bool, content_type: str = "application/json"
) -> dict[str, Any]:
    """The review ``body`` asks for, answered (what the API server returns with 201)."""
    if "protobuf" in content_type:
        asked: Any = _from_protobuf(resource, body)
    else:
        try:
            asked = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError):
            raise bad_request(f"the {resource.kind} is neither JSON nor Kubernetes protobuf") from None
    if not isinstance(asked, dict):
        raise bad_request(f"the {resource.kind} is not an object")
    spec = asked.get("spec") if isinstance(asked.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    if resource.kind == "SelfSubjectAccessReview":
        status = _access(spec)
    elif resource.kind == "SelfSubjectRulesReview":
        status = _rules()
        spec = {"namespace": spec.get("namespace") or namespace}
    elif resource.kind == "SelfSubjectReview":
        status = _user(authenticated)
    else:  # (only the reviews are create-only)
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    metadata = asked.get("metadata") if isinstance(asked.get("metadata"), dict) else {}
    out: dict[str, Any] = {
        "kind": resource.kind,
        "apiVersion": resource.group_version,
        "metadata": {**(metadata or {}), "creationTimestamp": None},
    }
    if resource.kind != "SelfSubjectReview":
        out["spec"] = spec
    out["status"] = status
    return out

"""The facade's HTTP side: ``/k8s/{run}/{at}/...`` answered as the API server answers.

Mounted by the audit API (``http_api.create_app``). The path prefix names the run (an
id, a unique prefix of one, or ``latest``) and the instant (``end`` or a duration such
as ``5m``): ``ledgerlet kubeconfig`` writes it into a kubeconfig's server URL, and
kubectl never needs to know. Errors are ``Status`` objects with upstream's reasons
(kubectl prints ``Error from server (NotFound): pods "x" not found``); every verb but
get, list and watch is refused (405, or 403 for subresources such as ``log``); the
bearer token is the audit API's.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ledgerlet_core.model.duration import format_duration
from ledgerlet_services.audit.kube_api import resources as res
from ledgerlet_services.audit.kube_api.clock import ShiftedReader, shift_to_now, shifted, split_clock
from ledgerlet_services.audit.kube_api.meta import (
    ApiError,
    Instant,
    instant_of,
    not_found,
    query_int,
    resource_version,
    status_object,
)
from ledgerlet_services.audit.kube_api.openapi import v2_answer, v3_document, v3_index
from ledgerlet_services.audit.kube_api.reader import Change, KubeReader, Query, after_instant
from ledgerlet_services.audit.kube_api.reviews import review
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
    parse_label_selector,
    pod_fields,
)
from ledgerlet_services.audit.kube_api.tables import table
from ledgerlet_services.audit.queries import Audit

log = logging.getLogger(__name__)

PREFIX: Final = "/k8s"
READ_METHODS: Final = ("GET", "HEAD")
ALL_METHODS: Final = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
TABLE_TYPE: Final = "application/json;as=Table;v=v1;g=meta.k8s.io"
#: how long a watch stays open when the client does not say (the API server's lower bound)
DEFAULT_WATCH_SECONDS: Final = 1800
#: the longest a watch stays open (a year: a deadline the clock can add)
MAX_WATCH_SECONDS: Final = 365 * 24 * 3600
#: a run still being recorded is polled this often once a watch has caught up
POLL_SECONDS: Final = 1.0
MAX_LIMIT: Final = 5000
#: what the root lists (``GET /``)
ROOT_PATHS: Final = ["/api", "/api/v1", "/apis", "/openapi/v2", "/openapi/v3", "/version"]

_ALLOWED_FIELDS: Final = {
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


def _status(exc: ApiError) -> Response:
    return JSONResponse(exc.status(), status_code=exc.code, headers=exc.headers or None)


def _resource_path(group: str, version: str, rest: list[str]) -> Target:
    """``[namespaces/NS/]RESOURCE[/NAME[/SUB]]`` under a group version."""
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3 or "" in rest:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    found = res.find(group, version, rest[0])
    if found is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if namespace and not found.namespaced:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return Target(found, namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "")


def _wants_table(request: Request) -> str | None:
    """The Table API version the client asks for first (``as=Table``), if any."""
    for part in request.headers.get("accept", "").split(","):
        media = part.replace(" ", "")
        if "as=Table" in media and "g=meta.k8s.io" in media:
            return "meta.k8s.io/v1beta1" if "v=v1beta1" in media else "meta.k8s.io/v1"
        if media.startswith("application/json") and "as=" not in media:
            return None
    return None


def _field_selector(target: Target, text: str | None) -> FieldSelector:
    kind = target.resource.kind
    allowed = _ALLOWED_FIELDS.get(kind, (_META_FIELDS, None))[0]
    aliases = EVENT_ALIASES if kind == "Event" and target.resource.group else None
    return parse_field_selector(text, allowed, aliases)


def _limit(text: str | None) -> int | None:
    value = query_int(text, "limit")
    return None if not value else min(value, MAX_LIMIT)


def create_kube_app(audit: Callable[[], Audit], token: str | None) -> Starlette:
    """The facade; ``audit`` gives the audit queries once the parent app has opened the store."""

    def authorised(request: Request) -> None:
        if not token:
            return
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
            raise ApiError(401, "Unauthorized", "Unauthorized")

    async def endpoint(request: Request) -> Response:
        try:
            authorised(request)
            return await dispatch(request)
        except ApiError as exc:
            return _status(exc)
        except Exception:
            log.exception("%s %s failed", request.method, request.url.path)
            return _status(ApiError(500, "InternalError", "the request failed; the server log says why"))

    async def dispatch(request: Request) -> Response:
        parts = list(request.path_params.get("path", "").split("/"))
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) < 2:
            raise ApiError(
                404,
                "NotFound",
                f"this is a stored run's API: use {PREFIX}/RUN/INSTANT/... (ledgerlet kubeconfig writes the URL)",
            )
        reader = KubeReader(audit())
        at_text, as_now = split_clock(parts[1])
        instant = await reader.instant(parts[0], at_text)
        if as_now:  # the instant served as the moment of the request (kube_api/clock.py)
            seconds = shift_to_now(instant, time.time())
            reader, instant = ShiftedReader(audit(), seconds), shifted(instant, seconds)
        rest = parts[2:]
        headers = await _run_warning(audit(), instant)
        if not rest:
            return JSONResponse({"paths": ROOT_PATHS}, headers=headers)
        if rest == ["version"]:
            return JSONResponse(res.version_info())
        if rest[0] == "api" and len(rest) <= 2:
            return discovery(request, legacy=True, rest=rest[1:])
        if rest[0] == "apis" and len(rest) <= 3:
            return discovery(request, legacy=False, rest=rest[1:])
        if rest[0] == "openapi" and request.method in READ_METHODS:
            answer = served_openapi(request, rest, f"{PREFIX}/{parts[0]}/{parts[1]}")
            if answer is not None:
                return answer
        if rest[0] == "api" and rest[1] == "v1":
            target = _resource_path("", "v1", rest[2:])
        elif rest[0] == "apis" and len(rest) > 3:
            target = _resource_path(rest[1], rest[2], rest[3:])
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return await _serve(request, reader, instant, target, headers)

    async def _serve(
        request: Request, reader: KubeReader, instant: Instant, target: Target, headers: dict[str, str]
    ) -> Response:
        resource = target.resource
        if resource.verbs == res.CREATE_ONLY:  # a review the client asks about itself (reviews.py)
            if request.method != "POST" or target.name or target.subresource:
                raise ApiError(
                    405,
                    "MethodNotAllowed",
                    f"{resource.name} are created (POST) and answered, never stored or read back",
                    headers={"Allow": "POST"},
                )
            answer = review(
                resource,
                await request.body(),
                target.namespace,
                authenticated=bool(token),
                content_type=request.headers.get("content-type", "application/json"),
            )
            return JSONResponse(answer, status_code=201, headers=headers)
        if request.method not in READ_METHODS:
            raise _refused(resource, target.name, request.method, instant)
        if target.subresource and target.subresource != "status":
            raise ApiError(
                403,
                "Forbidden",
                f'{resource.name} "{target.name}" is forbidden: {resource.name}/{target.subresource} is not served: '
                "this API replays a stored run (no logs, exec, proxy or evictions; get, list and watch only)",
                details={"name": target.name, "kind": resource.name},
            )
        params = request.query_params
        if target.name:
            if resource.namespaced and not target.namespace:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if params.get("watch") in ("true", "1"):
                field = f"metadata.name={target.name}"
                return await _watch(request, reader, instant, target, field, headers)
            obj = await reader.get(resource, instant, target.namespace, target.name)
            if obj is None:
                raise not_found(resource.name, target.name, resource.group)
            version = _wants_table(request)
            if version is not None:
                body = table(
                    resource.kind,
                    [obj],
                    instant,
                    list_meta={"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                    include_object=params.get("includeObject", "Metadata"),
                )
                body["apiVersion"] = version
                return JSONResponse(body, media_type=TABLE_TYPE, headers=headers)
            return JSONResponse(obj, headers=headers)
        if params.get("watch") in ("true", "1"):
            return await _watch(request, reader, instant, target, params.get("fieldSelector"), headers)
        return await _list(request, reader, instant, target, headers)

    async def _list(
        request: Request, reader: KubeReader, instant: Instant, target: Target, headers: dict[str, str]
    ) -> Response:
        params = request.query_params
        resource = target.resource
        q = Query(
            target.namespace or None,
            parse_label_selector(params.get("labelSelector")),
            _field_selector(target, params.get("fieldSelector")),
        )
        items = reader.page(resource, instant, q, limit=_limit(params.get("limit")), token=params.get("continue"))
        first = await anext(items)  # errors (a continue token not ours) surface before the stream starts
        version = _wants_table(request)
        rv = resource_version(instant.t)
        include = params.get("includeObject", "Metadata")

        async def body() -> AsyncIterator[bytes]:
            if version is not None:
                head = {
                    "kind": "Table",
                    "apiVersion": version,
                    "columnDefinitions": table(resource.kind, [], instant, list_meta={})["columnDefinitions"],
                }
                yield json.dumps(head)[:-1].encode() + b',"rows":['
            else:
                yield (
                    json.dumps({"kind": f"{resource.kind}List", "apiVersion": resource.group_version})[:-1].encode()
                    + b',"items":['
                )
            item: dict[str, Any] | str = first
            n = 0
            while isinstance(item, dict):
                if version is not None:
                    out = table(resource.kind, [item], instant, list_meta={}, include_object=include)["rows"][0]
                else:
                    out = item
                yield (b"," if n else b"") + json.dumps(out).encode()
                n += 1
                item = await anext(items)
            meta: dict[str, Any] = {"resourceVersion": rv}
            if item:
                meta["continue"] = item
            yield b'],"metadata":' + json.dumps(meta).encode() + b"}"

        media = TABLE_TYPE if version is not None else "application/json"
        return StreamingResponse(body(), media_type=media, headers=headers)

    async def _watch(
        request: Request,
        reader: KubeReader,
        instant: Instant,
        target: Target,
        field_text: str | None,
        headers: dict[str, str],
    ) -> Response:
        params = request.query_params
        resource = target.resource
        q = Query(
            target.namespace or None,
            parse_label_selector(params.get("labelSelector")),
            _field_selector(target, field_text),
        )
        version = _wants_table(request)
        include = params.get("includeObject", "Metadata")
        rv_text = params.get("resourceVersion", "") or ""
        initial = rv_text in ("", "0") or params.get("sendInitialEvents") == "true"
        from_t = instant.t
        if not initial:
            given = instant_of(rv_text)
            if given is None:
                raise ApiError(410, "Expired", f"too old resource version: {rv_text}")
            from_t = min(max(given, 0), instant.end)
        timeout = query_int(params.get("timeoutSeconds"), "timeoutSeconds")
        seconds = min(timeout, MAX_WATCH_SECONDS) if timeout else DEFAULT_WATCH_SECONDS
        fields_of = _ALLOWED_FIELDS.get(resource.kind, (None, None))[1]

        def matches(obj: dict[str, Any] | None) -> bool:
            if obj is None:
                return False
            meta = obj.get("metadata", {})
            if q.namespace and meta.get("namespace") != q.namespace:
                return False
            fields = (
                fields_of(obj)
                if fields_of
                else {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}
            )
            return q.labels.matches(meta.get("labels")) and q.fields.matches(fields)

        def event(kind: str, obj: dict[str, Any], at: Instant, headers_sent: list[bool]) -> bytes:
            out: dict[str, Any] = obj
            if version is not None:
                out = table(
                    resource.kind,
                    [obj],
                    at,
                    list_meta={"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")},
                    include_object=include,
                    headers=not headers_sent[0],
                )
                out["apiVersion"] = version
                headers_sent[0] = True
            return json.dumps({"type": kind, "object": out}).encode() + b"\n"

        async def stream() -> AsyncIterator[bytes]:
            sent = [False]
            deadline = time.monotonic() + seconds
            if initial:
                async for item in reader.page(resource, instant, q, limit=None, token=None):
                    if isinstance(item, dict):
                        yield event("ADDED", item, instant, sent)
                if params.get("sendInitialEvents") == "true":
                    mark = {
                        "kind": resource.kind,
                        "apiVersion": resource.group_version,
                        "metadata": {
                            "resourceVersion": resource_version(instant.t),
                            "annotations": {"k8s.io/initial-events-end": "true"},
                        },
                    }
                    yield json.dumps({"type": "BOOKMARK", "object": mark}).encode() + b"\n"
            cursor = after_instant(from_t)
            while time.monotonic() < deadline:
                async for reached, changes in reader.changes(resource, instant, cursor):
                    cursor = reached
                    for ch in changes:
                        for kind, obj in _filtered(ch, matches):
                            yield event(kind, obj, Instant(instant.run, instant.start, ch.t, instant.end), sent)
                    if time.monotonic() >= deadline:
                        return
                if await audit().status(instant.run) == "completed":
                    await asyncio.sleep(max(0.0, deadline - time.monotonic()))
                    return
                await asyncio.sleep(POLL_SECONDS)

        media = TABLE_TYPE if version is not None else "application/json"
        return StreamingResponse(stream(), media_type=media, headers=headers)

    async def routing_error(request: Request, exc: Exception) -> Response:
        """What the router answers itself, as a ``Status`` too: a path it cannot match (one
        holding a newline), a method no route takes (``TRACE``, or one made up)."""
        code = getattr(exc, "status_code", 404)
        if code == 405:
            return _status(_refused(None, "", request.method))
        message = "the server could not find the requested resource" if code == 404 else str(exc)
        return JSONResponse(status_object(code, "NotFound" if code == 404 else "BadRequest", message), status_code=code)

    return Starlette(
        routes=[Route("/{path:path}", endpoint, methods=ALL_METHODS)],
        exception_handlers={HTTPException: routing_error},
    )


def discovery(request: Request, *, legacy: bool, rest: list[str]) -> Response:
    if request.method not in READ_METHODS:
        raise _refused(None, "", request.method)
    if not rest:
        media = res.wants_aggregated(request.headers.get("accept", ""))
        if media is not None:
            version = "apidiscovery.k8s.io/v2beta1" if "v2beta1" in media else "apidiscovery.k8s.io/v2"
            body = res.aggregated_discovery(legacy, version)
            return Response(json.dumps(body), media_type=media)
        if legacy:
            host = request.headers.get("host", "127.0.0.1")
            return JSONResponse(res.api_versions(host))
        return JSONResponse(res.api_group_list())
    if legacy:
        found = res.api_resource_list(rest[0]) if len(rest) == 1 else None
    elif len(rest) == 1:
        found = res.api_group(rest[0])
    else:
        found = res.api_resource_list(f"{rest[0]}/{rest[1]}")
    if found is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return JSONResponse(found)


def served_openapi(request: Request, rest: list[str], prefix: str) -> Response | None:
    """``/openapi/v2`` and ``/openapi/v3[/GROUP-VERSION]`` (``openapi.py``); None for other paths."""
    if rest == ["openapi", "v2"]:
        body, media = v2_answer(request.headers.get("accept", ""))
        return Response(body, media_type=media)
    if rest[:2] != ["openapi", "v3"]:
        return None
    if len(rest) == 2:
        return JSONResponse(v3_index(prefix))
    doc = v3_document("/".join(rest[2:]))
    if doc is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return JSONResponse(doc, headers={"Cache-Control": "public, immutable"})


def _filtered(ch: Change, matches: Callable[[dict[str, Any] | None], bool]) -> list[tuple[str, dict[str, Any]]]:
    """A change as a watch with selectors sees it: an object that starts or stops matching
    is added or deleted (``k8s.io/apiserver/pkg/storage/cacher``'s filtering)."""
    if ch.type == "ADDED":
        return [("ADDED", ch.obj)] if matches(ch.obj) else []
    if ch.type == "DELETED":
        return [("DELETED", ch.obj)] if matches(ch.obj) else []
    now, before = matches(ch.obj), matches(ch.old) if ch.old is not None else True
    if now and before:
        return [("MODIFIED", ch.obj)]
    if now:
        return [("ADDED", ch.obj)]
    if before and ch.old is not None:
        return [("DELETED", ch.old)]
    return []


def _refused(resource: res.Resource | None, name: str, method: str, instant: Instant | None = None) -> ApiError:
    """Every write: 405, as for a resource whose verbs are get, list and watch."""
    what = f'{resource.name} "{name}"' if resource is not None and name else (resource.name if resource else "this")
    where = f" (run {instant.run} at {format_duration(instant.t)})" if instant is not None else ""
    message = (
        f"the server does not allow this method on the requested resource: {what} is a stored run's record{where}; "
        f"{method} is refused, this API serves get, list and watch only"
    )
    details = {"name": name, "kind": resource.name} if resource is not None else None
    return ApiError(405, "MethodNotAllowed", message, details=details, headers={"Allow": "GET, HEAD"})


async def _run_warning(audit: Audit, instant: Instant) -> dict[str, str]:
    """A ``Warning`` header (kubectl prints it) when the run did not complete."""
    status = None
    with contextlib.suppress(Exception):
        status = await audit.status(instant.run)
    if status in (None, "completed"):
        return {}
    return {"Warning": f'299 - "run {instant.run} is {status}: it holds only what was stored before it stopped"'}

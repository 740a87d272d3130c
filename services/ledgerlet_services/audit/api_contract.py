"""What the audit API's OpenAPI document promises about errors, made true: every error
is ``application/problem+json`` (RFC 9457), a request that does not validate is a 400
(the server never answers FastAPI's default 422), ``/v1`` routes may answer 401 (with a
token) and 404 (an unknown run, pod or decision).

Also its Prometheus metrics: requests by route template and status, and their latency.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.types import Scope

PROBLEM: Final = "application/problem+json"
_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

PROBLEM_SCHEMA: Final = {
    "type": "object",
    "description": "RFC 9457 problem details",
    "required": ["type", "title", "status", "detail", "instance"],
    "properties": {
        "type": {"type": "string", "example": "about:blank"},
        "title": {"type": "string", "example": "Bad Request"},
        "status": {"type": "integer", "example": 400},
        "detail": {"type": "string"},
        "instance": {"type": "string", "description": "the request's path"},
    },
}
_WHY: Final = {
    "400": "the request does not validate: a parameter of the wrong type or out of range, a cursor "
    "the server did not give out, a NUL byte",
    "401": "a bearer token is required (the server was started with one)",
    "404": "no such run (or the prefix names several), pod, node or decision",
}


def _problem(status: str) -> dict[str, Any]:
    return {"description": _WHY[status], "content": {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}}


def with_problem_responses(doc: dict[str, Any], extra_schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    """``doc`` (FastAPI's generated document) with the error responses the server gives
    (and ``extra_schemas``: models a route names by reference only)."""
    out = copy.deepcopy(doc)
    schemas = out.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in (extra_schemas or {}).items():
        schemas.setdefault(name, schema)
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas["Problem"] = PROBLEM_SCHEMA
    for path, operations in out.get("paths", {}).items():
        for op in operations.values():
            responses = op.setdefault("responses", {})
            had_validation = responses.pop("422", None) is not None
            if had_validation or path.startswith("/v1/"):
                responses["400"] = _problem("400")
            if path.startswith("/v1/") or path == "/metrics":
                responses["401"] = _problem("401")
            if path.startswith("/v1/runs/"):
                responses["404"] = _problem("404")
    return out


#: request latency buckets, seconds: a page answered in a millisecond up to a watch held
#: open for the API server's half hour (prometheus_client's default stops at 10 s)
REQUEST_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)


def route_template(scope: Scope) -> str:
    """The template of the route a request was answered by, from the app's root: a mounted
    app's route (the facade's ``/{run}/{at}/api/v1/pods``) after its mount's path (``/k8s``);
    convertors left out (``{path}``, not ``{path:path}``)."""
    route = scope.get("route")
    template = getattr(route, "path_format", None)
    if template is None:
        return "unmatched"
    if isinstance(route, Mount):  # (the mounted app answered without a route of its own)
        return str(template)
    root = scope.get("root_path", "")
    mounted = root[len(scope.get("app_root_path", root)) :]
    return f"{mounted}{template}"


class ApiMetrics:
    """Requests counted by route template (``/v1/runs/{run}/decisions``, never the raw path:
    ids would make a series each) and status; latency per route."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "ledgerlet_api_requests", "requests answered", ["method", "route", "status"], registry=self.registry
        )
        self.seconds = Histogram(
            "ledgerlet_api_request_seconds",
            "time to answer (a list streamed to its end; a watch until it closes)",
            ["method", "route"],
            registry=self.registry,
            buckets=REQUEST_BUCKETS,
        )
        # the server's own RSS, CPU seconds and open file descriptors (process_*), from /proc
        ProcessCollector(registry=self.registry)

    async def middleware(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        began = time.perf_counter()
        response = await call_next(request)
        route = route_template(request.scope)
        method = request.method if request.method in _METHODS else "other"  # (a client names it: bounded)
        self.requests.labels(method, route, str(response.status_code)).inc()
        self.seconds.labels(method, route).observe(time.perf_counter() - began)
        return response

    def answer(self) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

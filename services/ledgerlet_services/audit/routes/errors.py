"""The audit API's error answers: RFC 9457 problem details under ``/v1``, the API server's
``Status`` under ``/k8s`` (even where a request never reaches the facade), and the two
middlewares that look at every request (a NUL byte refused, a run's status reported)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from ledgerlet_services.audit.kube_api.meta import status_object
from ledgerlet_services.audit.kube_api.mount import PREFIX as KUBE_PREFIX
from ledgerlet_services.audit.queries import Audit, BadCursor, BadFilter, NotFound
from ledgerlet_services.audit.routes.common import problem

log = logging.getLogger("ledgerlet_services.audit.http_api")

Next = Callable[[Request], Awaitable[Response]]


def install(app: FastAPI) -> None:
    """The exception handlers and the middlewares, on ``app``."""
    app.exception_handler(NotFound)(not_found)
    app.exception_handler(BadCursor)(bad_request)
    app.exception_handler(BadFilter)(bad_request)
    app.exception_handler(HTTPException)(http_error)
    app.exception_handler(Exception)(unexpected)
    app.middleware("http")(run_status)
    app.middleware("http")(no_nul)
    app.exception_handler(RequestValidationError)(invalid)


async def not_found(request: Request, exc: Exception) -> Response:
    return problem(404, "Not Found", str(exc), request)


async def bad_request(request: Request, exc: Exception) -> Response:
    return problem(400, "Bad Request", str(exc), request)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if kube_path(request):  # (a path under /k8s the mount cannot match: it holds a newline)
        found = "the server could not find the requested resource"
        return kube_status(exc.status_code, found if exc.status_code == 404 else str(exc.detail))
    headers = dict(exc.headers or {})  # a 405 says what is allowed (Allow)
    if exc.status_code == 401:
        headers["WWW-Authenticate"] = "Bearer"
    title = {401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed"}.get(exc.status_code, "Error")
    return problem(exc.status_code, title, str(exc.detail), request, headers or None)


async def unexpected(request: Request, exc: Exception) -> Response:
    log.exception("%s %s failed", request.method, request.url.path)
    return problem(500, "Internal Server Error", "the request failed; the server log says why", request)


async def invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
    return problem(400, "Bad Request", "; ".join(parts), request)


async def run_status(request: Request, call_next: Next) -> Response:
    """Every answer about one run says how that run ended (``Ledgerlet-Run-Status``):
    an incomplete run's decisions are only part of it."""
    response = await call_next(request)
    parts = request.url.path.split("/")
    if len(parts) > 4 and parts[1:3] == ["v1", "runs"] and response.status_code < 400:
        audit: Audit = request.app.state.audit
        with contextlib.suppress(NotFound):
            status = await audit.status(await audit.resolve(parts[3]))
            if status is not None:
                response.headers["Ledgerlet-Run-Status"] = status
    return response


async def no_nul(request: Request, call_next: Next) -> Response:
    """A NUL byte is no part of any id, name or filter (PostgreSQL refuses it in text)."""
    raw = request.scope.get("raw_path", b"") + b"?" + request.scope.get("query_string", b"")
    if b"\x00" in raw or b"%00" in raw:
        message = "a NUL byte is not allowed in the path or the query"
        if kube_path(request):  # (kubectl's side answers as the API server: a Status)
            return kube_status(400, message)
        return problem(400, "Bad Request", message, request)
    return await call_next(request)


def kube_path(request: Request) -> bool:
    path = request.url.path
    return path == KUBE_PREFIX or path.startswith(KUBE_PREFIX + "/")


def kube_status(code: int, message: str) -> Response:
    """An error under ``/k8s`` as the API server gives it (a ``Status``), even where the
    request never reached the facade."""
    reason = {400: "BadRequest", 401: "Unauthorized", 404: "NotFound", 405: "MethodNotAllowed"}.get(code, "BadRequest")
    return JSONResponse(status_object(code, reason, message), status_code=code)

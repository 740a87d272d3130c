"""Every facade answer that is not what was asked for is a ``Status``, as the API server's:
a route's ``ApiError``, a failure (a 500, logged), and what the router answers itself."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ledgerlet_services.audit.kube_api.meta import ApiError, status_object
from ledgerlet_services.audit.kube_api.target import NOT_FOUND, refused

log = logging.getLogger("ledgerlet_services.audit.kube_api.app")


def status(exc: ApiError) -> Response:
    return JSONResponse(exc.status(), status_code=exc.code, headers=exc.headers or None)


class StatusRoute(APIRoute):
    """A route whose errors, its dependencies' included, are answered as ``Status`` objects."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except ApiError as exc:
                return status(exc)
            except Exception:
                log.exception("%s %s failed", request.method, request.url.path)
                return status(ApiError(500, "InternalError", "the request failed; the server log says why"))

        return answer


async def routing_error(request: Request, exc: Exception) -> Response:
    """What the router answers itself, as a ``Status`` too: a path it cannot match (one
    holding a newline), a method no route takes (``TRACE``, or one made up)."""
    code = getattr(exc, "status_code", 404)
    if code == 405:
        return status(refused(None, "", request.method))
    message = NOT_FOUND if code == 404 else str(exc)
    return JSONResponse(status_object(code, "NotFound" if code == 404 else "BadRequest", message), status_code=code)

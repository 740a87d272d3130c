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

import contextlib
import hmac
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ledgerlet_services.audit.kube_api import resources as res
from ledgerlet_services.audit.kube_api.asked import Asked
from ledgerlet_services.audit.kube_api.clock import ShiftedReader, shift_to_now, shifted, split_clock
from ledgerlet_services.audit.kube_api.discovery import discovery, served_openapi
from ledgerlet_services.audit.kube_api.meta import ApiError, Instant, status_object
from ledgerlet_services.audit.kube_api.reader import KubeReader
from ledgerlet_services.audit.kube_api.target import (
    ALL_METHODS,
    NOT_FOUND,
    READ_METHODS,
    Target,
    refused,
    resource_path,
)
from ledgerlet_services.audit.kube_api.verbs import serve
from ledgerlet_services.audit.queries import Audit

__all__ = ["PREFIX", "ROOT_PATHS", "create_kube_app", "discovery", "served_openapi"]

log = logging.getLogger(__name__)

PREFIX: Final = "/k8s"
#: what the root lists (``GET /``)
ROOT_PATHS: Final = ["/api", "/api/v1", "/apis", "/openapi/v2", "/openapi/v3", "/version"]


def create_kube_app(audit: Callable[[], Audit], token: str | None) -> Starlette:
    """The facade; ``audit`` gives the audit queries once the parent app has opened the store."""
    facade = Facade(audit, token)
    return Starlette(
        routes=[Route("/{path:path}", facade.endpoint, methods=ALL_METHODS)],
        exception_handlers={HTTPException: routing_error},
    )


@dataclass(frozen=True, slots=True)
class Facade:
    """The one route's endpoint: the token checked, the path read, the answer or a ``Status``."""

    audit: Callable[[], Audit]
    token: str | None

    async def endpoint(self, request: Request) -> Response:
        try:
            self.authorise(request)
            return await self.dispatch(request)
        except ApiError as exc:
            return status(exc)
        except Exception:
            log.exception("%s %s failed", request.method, request.url.path)
            return status(ApiError(500, "InternalError", "the request failed; the server log says why"))

    def authorise(self, request: Request) -> None:
        if not self.token:
            return
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token.encode()):
            raise ApiError(401, "Unauthorized", "Unauthorized")

    async def dispatch(self, request: Request) -> Response:
        """``RUN/AT/...``: the run and the instant first, then what is asked at them."""
        parts = list(request.path_params.get("path", "").split("/"))
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) < 2:
            raise ApiError(
                404,
                "NotFound",
                f"this is a stored run's API: use {PREFIX}/RUN/INSTANT/... (ledgerlet kubeconfig writes the URL)",
            )
        reader, instant = await self.at(parts[0], parts[1])
        headers = await run_warning(self.audit(), instant)
        rest = parts[2:]
        answer = described(request, rest, f"{PREFIX}/{parts[0]}/{parts[1]}", headers)
        if answer is not None:
            return answer
        asked = Asked(request, reader, instant, resource_target(rest), headers, self.audit)
        return await serve(asked, authenticated=bool(self.token))

    async def at(self, run: str, at: str) -> tuple[KubeReader, Instant]:
        """The reader and the instant a path names (``...+now``: served as the moment of the request)."""
        reader = KubeReader(self.audit())
        at_text, as_now = split_clock(at)
        instant = await reader.instant(run, at_text)
        if as_now:  # the instant served as the moment of the request (kube_api/clock.py)
            seconds = shift_to_now(instant, time.time())
            return ShiftedReader(self.audit(), seconds), shifted(instant, seconds)
        return reader, instant


def described(request: Request, rest: list[str], prefix: str, headers: dict[str, str]) -> Response | None:
    """What the facade says of itself at a run's instant: its paths, version, discovery and
    OpenAPI documents; None for a resource path."""
    if not rest:
        return JSONResponse({"paths": ROOT_PATHS}, headers=headers)
    if rest == ["version"]:
        return JSONResponse(res.version_info())
    if rest[0] == "api" and len(rest) <= 2:
        return discovery(request, legacy=True, rest=rest[1:])
    if rest[0] == "apis" and len(rest) <= 3:
        return discovery(request, legacy=False, rest=rest[1:])
    if rest[0] == "openapi" and request.method in READ_METHODS:
        return served_openapi(request, rest, prefix)
    return None


def resource_target(rest: list[str]) -> Target:
    if rest[0] == "api" and rest[1] == "v1":
        return resource_path("", "v1", rest[2:])
    if rest[0] == "apis" and len(rest) > 3:
        return resource_path(rest[1], rest[2], rest[3:])
    raise ApiError(404, "NotFound", NOT_FOUND)


def status(exc: ApiError) -> Response:
    return JSONResponse(exc.status(), status_code=exc.code, headers=exc.headers or None)


async def routing_error(request: Request, exc: Exception) -> Response:
    """What the router answers itself, as a ``Status`` too: a path it cannot match (one
    holding a newline), a method no route takes (``TRACE``, or one made up)."""
    code = getattr(exc, "status_code", 404)
    if code == 405:
        return status(refused(None, "", request.method))
    message = NOT_FOUND if code == 404 else str(exc)
    return JSONResponse(status_object(code, "NotFound" if code == 404 else "BadRequest", message), status_code=code)


async def run_warning(audit: Audit, instant: Instant) -> dict[str, str]:
    """A ``Warning`` header (kubectl prints it) when the run did not complete."""
    found = None
    with contextlib.suppress(Exception):
        found = await audit.status(instant.run)
    if found in (None, "completed"):
        return {}
    return {"Warning": f'299 - "run {instant.run} is {found}: it holds only what was stored before it stopped"'}

"""The facade's HTTP side: ``/k8s/{run}/{at}/...`` answered as the API server answers.

Mounted by the audit API (``http_api.create_app``). The path prefix names the run (an
id, a unique prefix of one, or ``latest``) and the instant (``end`` or a duration such
as ``5m``): ``ledgerlet kubeconfig`` writes it into a kubeconfig's server URL, and
kubectl never needs to know. Its routes are routers (``routers/``), one per API group,
each route a path template (``/{run}/{at}/api/v1/namespaces/{namespace}/pods/{name}``).
Errors are ``Status`` objects with upstream's reasons (kubectl prints ``Error from server
(NotFound): pods "x" not found``); every verb but get, list and watch is refused (405, or
403 for subresources such as ``log``); the bearer token is the audit API's.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from ledgerlet_services.audit.kube_api.discovery import discovery, served_openapi
from ledgerlet_services.audit.kube_api.mount import PREFIX, ROOT_PATHS
from ledgerlet_services.audit.kube_api.routers import ROUTERS
from ledgerlet_services.audit.kube_api.routers.answering import routing_error
from ledgerlet_services.audit.kube_api.routers.at_instant import Facade
from ledgerlet_services.audit.queries import Audit

__all__ = ["PREFIX", "ROOT_PATHS", "create_kube_app", "discovery", "served_openapi"]


def create_kube_app(audit: Callable[[], Audit], token: str | None) -> FastAPI:
    """The facade; ``audit`` gives the audit queries once the parent app has opened the store."""
    app = FastAPI(
        # (the routers' routes, in their order, in one router: each included router would
        # be matched on its own, a few times over, and a request tries most of them)
        routes=[route for router in ROUTERS for route in router.routes],
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
        exception_handlers={HTTPException: routing_error},
    )
    app.state.facade = Facade(audit, token)
    app.add_middleware(TrailingSlashes)
    return app


class TrailingSlashes:
    """A path's trailing slashes dropped before it is routed (``/api/v1/pods/`` is
    ``/api/v1/pods``), as kubectl's paths are read by the API server."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            trimmed = scope["path"].rstrip("/")
            if len(trimmed) > len(scope.get("root_path", "")):
                scope["path"] = trimmed  # (in place: the audit API's metrics read the route it leads to)
        await self.app(scope, receive, send)

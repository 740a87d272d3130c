"""The decision audit API (FastAPI): read-only, on the SQLite or PostgreSQL store.

``/v1/runs/{run}/...``: ``run`` is a run id or ``latest``. Errors are RFC 9457
``application/problem+json``. With a token configured every ``/v1`` route wants
``Authorization: Bearer TOKEN``, and so does ``/metrics``; ``/healthz`` and ``/readyz``
never do (and say nothing of the store). Beside it,
``/k8s/{run}/{at}/...`` is a read-only Kubernetes API over the same store (``kube_api``),
behind the same token.

The routes are routers, one per resource (``routes/``); this module puts them together
with the store's lifetime, the OpenAPI document and the facade's mount.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi_offline import FastAPIOffline

from ledgerlet_services.audit import api_models as api
from ledgerlet_services.audit.api_contract import ApiMetrics, with_problem_responses
from ledgerlet_services.audit.kube_api import root as kube_root
from ledgerlet_services.audit.kube_api.app import create_kube_app
from ledgerlet_services.audit.kube_api.mount import PREFIX as KUBE_PREFIX
from ledgerlet_services.audit.queries import Audit
from ledgerlet_services.audit.routes import decisions, errors, health, nodes, pods, runs
from ledgerlet_services.audit.routes.common import Auth, window_seconds
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store

__all__ = ["create_app", "window_seconds"]

ABOUT: dict[str, Any] = {
    "title": "ledgerlet decision audit",
    "version": "1",
    "description": "Every decision ledgerlet's control loops made, with the inputs it was made from.",
}


async def _beat(store: SqlEventStore, heartbeat: Callable[[], None], every: float = 2.0) -> None:
    """Touch the health file while the store answers (``ledgerlet health audit-api``)."""
    while True:
        with contextlib.suppress(Exception):
            await store.ping()
            heartbeat()
        await asyncio.sleep(every)


def _lifespan(
    store_dsn: str, store: SqlEventStore | None, heartbeat: Callable[[], None] | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Open (and migrate) the store at start-up unless one is handed in; close what it opened."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = store is None
        app.state.store = store or await open_store(store_dsn, reading=True)
        app.state.audit = Audit(app.state.store)
        beat = asyncio.create_task(_beat(app.state.store, heartbeat)) if heartbeat is not None else None
        try:
            yield
        finally:
            if beat is not None:
                beat.cancel()
            if owned:
                await app.state.store.close()

    return lifespan


def _openapi_document(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """The generated document with the error responses the server gives, made once."""

    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            generated = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            explanation = api.Explanation.model_json_schema(ref_template="#/components/schemas/{model}")
            extra = {
                "Explanation": {k: v for k, v in explanation.items() if k != "$defs"},
                **explanation.get("$defs", {}),
            }
            app.openapi_schema = with_problem_responses(generated, extra)
        return app.openapi_schema

    return document


def create_app(
    store_dsn: str,
    *,
    token: str | None = None,
    store: SqlEventStore | None = None,
    heartbeat: Callable[[], None] | None = None,
    publish_docs: bool = False,
) -> FastAPI:
    """The app; it opens (and migrates) the store at start-up unless one is handed in.

    With a token, the OpenAPI document is behind it too and the docs pages are off,
    unless ``publish_docs`` says they may be public."""
    public_docs = not token or publish_docs
    about = {**ABOUT, "lifespan": _lifespan(store_dsn, store, heartbeat)}
    if public_docs:  # Swagger UI and ReDoc from assets the package ships: nothing from a CDN
        app = FastAPIOffline(docs_url="/docs", redoc_url="/redoc", static_url="/docs-assets", **about)
    else:
        app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, **about)
    app.state.token = token
    app.state.metrics = ApiMetrics()
    document = _openapi_document(app)
    app.openapi = document  # type: ignore[method-assign]
    app.middleware("http")(app.state.metrics.middleware)
    if not public_docs:
        app.add_api_route(
            "/openapi.json", _served(document), methods=["GET"], dependencies=[Auth], include_in_schema=False
        )
    errors.install(app)
    for router in (health.router, runs.router, decisions.router, pods.router, nodes.router):
        app.include_router(router)
    # kubectl against the past: the Kubernetes API over the same store, behind the same token
    # (and at the root what kubectl asks there: /version, discovery, OpenAPI)
    app.include_router(kube_root.router)
    app.mount(KUBE_PREFIX, create_kube_app(lambda: _audit_of(app), token))
    return app


def _served(document: Callable[[], dict[str, Any]]) -> Callable[[], Any]:
    async def openapi() -> dict[str, Any]:
        return document()

    return openapi


def _audit_of(app: FastAPI) -> Audit:
    found: Audit = app.state.audit
    return found

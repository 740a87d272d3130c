"""The decision audit API (FastAPI): read-only, on the SQLite or PostgreSQL store.

``/v1/runs/{run}/...``: ``run`` is a run id or ``latest``. Errors are RFC 9457
``application/problem+json``. With a token configured every ``/v1`` route wants
``Authorization: Bearer TOKEN``, and so does ``/metrics``; ``/healthz`` and ``/readyz``
never do (and say nothing of the store). Beside it,
``/k8s/{run}/{at}/...`` is a read-only Kubernetes API over the same store (``kube_api``),
behind the same token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import PurePath
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException

from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.postmortem.instants import InstantError, parse_instant
from ledgerlet_services.audit import api_models as api
from ledgerlet_services.audit.api_contract import PROBLEM, ApiMetrics, with_problem_responses
from ledgerlet_services.audit.kube_api.app import PREFIX as KUBE_PREFIX
from ledgerlet_services.audit.kube_api.app import create_kube_app
from ledgerlet_services.audit.kube_api.meta import status_object
from ledgerlet_services.audit.kube_api.root import add_root_routes
from ledgerlet_services.audit.kube_api.routes import kube_route
from ledgerlet_services.audit.queries import DEFAULT_PAGE, MAX_PAGE, Audit, BadCursor, BadFilter, NotFound
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store

log = logging.getLogger(__name__)

#: answers carry the fields their handler set (a decision without a pod has no "pod": null)
TYPED: dict[str, Any] = {"response_model_exclude_unset": True}

#: what a window bound (``from``, ``to``) may be written as
WINDOW_BOUND = (
    "an instant, inclusive: virtual seconds (90, 12.5), a Go duration (5m), a time of day on the run's day "
    "(09:05, 09:05:30; UTC unless +hh:mm is given) or RFC 3339 (2026-01-29T09:05:00Z)"
)


def WindowBound(**kwargs: Any) -> Any:
    return Query(description=WINDOW_BOUND, max_length=64, **kwargs)


def problem(status: int, title: str, detail: str, request: Request, headers: dict[str, str] | None = None) -> Response:
    body = {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
    }
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _audit(request: Request) -> Audit:
    result: Audit = request.app.state.audit
    return result


#: module level: the routes' annotations are strings FastAPI resolves in this module
AuditDep = Annotated[Audit, Depends(_audit)]


async def _beat(store: SqlEventStore, heartbeat: Callable[[], None], every: float = 2.0) -> None:
    """Touch the health file while the store answers (``ledgerlet health audit-api``)."""
    while True:
        with contextlib.suppress(Exception):
            await store.ping()
            heartbeat()
        await asyncio.sleep(every)


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

    about: dict[str, Any] = {
        "title": "ledgerlet decision audit",
        "version": "1",
        "description": "Every decision ledgerlet's control loops made, with the inputs it was made from.",
        "lifespan": lifespan,
    }
    if public_docs:  # Swagger UI and ReDoc from assets the package ships: nothing from a CDN
        app = FastAPIOffline(docs_url="/docs", redoc_url="/redoc", static_url="/docs-assets", **about)
    else:
        app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, **about)

    def openapi_document() -> dict[str, Any]:
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

    app.openapi = openapi_document  # type: ignore[method-assign]
    metrics = ApiMetrics({KUBE_PREFIX: kube_route})
    app.middleware("http")(metrics.middleware)

    async def authorised(request: Request) -> None:
        if not token:
            return
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
            raise HTTPException(401, "a valid bearer token is required")

    Auth = Depends(authorised)

    if not public_docs:

        @app.get("/openapi.json", dependencies=[Auth], include_in_schema=False)
        async def openapi() -> dict[str, Any]:
            return openapi_document()

    @app.exception_handler(NotFound)
    async def _not_found(request: Request, exc: NotFound) -> Response:
        return problem(404, "Not Found", str(exc), request)

    @app.exception_handler(BadCursor)
    async def _bad_cursor(request: Request, exc: BadCursor) -> Response:
        return problem(400, "Bad Request", str(exc), request)

    @app.exception_handler(BadFilter)
    async def _bad_filter(request: Request, exc: BadFilter) -> Response:
        return problem(400, "Bad Request", str(exc), request)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        if _kube_path(request):  # (a path under /k8s the mount cannot match: it holds a newline)
            found = "the server could not find the requested resource"
            return _kube_status(exc.status_code, found if exc.status_code == 404 else str(exc.detail))
        headers = dict(exc.headers or {})  # a 405 says what is allowed (Allow)
        if exc.status_code == 401:
            headers["WWW-Authenticate"] = "Bearer"
        title = {401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed"}.get(exc.status_code, "Error")
        return problem(exc.status_code, title, str(exc.detail), request, headers or None)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("%s %s failed", request.method, request.url.path)
        return problem(500, "Internal Server Error", "the request failed; the server log says why", request)

    @app.middleware("http")
    async def _run_status(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
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

    @app.middleware("http")
    async def _no_nul(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        """A NUL byte is no part of any id, name or filter (PostgreSQL refuses it in text)."""
        raw = request.scope.get("raw_path", b"") + b"?" + request.scope.get("query_string", b"")
        if b"\x00" in raw or b"%00" in raw:
            message = "a NUL byte is not allowed in the path or the query"
            if _kube_path(request):  # (kubectl's side answers as the API server: a Status)
                return _kube_status(400, message)
            return problem(400, "Bad Request", message, request)
        return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return problem(400, "Bad Request", "; ".join(parts), request)

    @app.get("/metrics", dependencies=[Auth], tags=["health"], response_class=PlainTextResponse)
    async def prometheus_metrics() -> Response:
        """Prometheus text format: requests by route and status, and their latency (behind
        the token when there is one: the routes and their traffic are the server's own)."""
        return metrics.answer()

    @app.get("/healthz", tags=["health"], response_model=api.Health)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], response_model=api.Ready)
    async def readyz(request: Request) -> Response:
        """Whether the store answers; open to probes, so it says nothing of the store
        itself (its address named the database host and user to anyone)."""
        try:
            await request.app.state.store.ping()
        except Exception:  # the store is away: not ready (why is in the server's log)
            log.warning("readyz: the event store does not answer", exc_info=True)
            return problem(503, "Service Unavailable", "the event store does not answer", request)
        return JSONResponse({"status": "ready"})

    @app.get("/v1/runs", dependencies=[Auth], tags=["runs"], response_model=list[api.Run], **TYPED)
    async def runs(a: AuditDep) -> list[dict[str, Any]]:
        return [
            {
                "run": r.run,
                "name": r.name,
                "start": r.start.isoformat().replace("+00:00", "Z"),
                "durationSeconds": r.duration_seconds,
                "recordedAt": r.recorded_at.isoformat(),
                "source": PurePath(r.source).name if r.source else r.source,
                "status": r.status,
                **({"statusReason": r.status_reason} if r.status_reason else {}),
            }
            for r in await a.runs()
        ]

    @app.get(
        "/v1/runs/{run}/decisions", dependencies=[Auth], tags=["decisions"], response_model=api.DecisionsPage, **TYPED
    )
    async def decisions(
        a: AuditDep,
        run: str,
        type: Annotated[list[str] | None, Query(description="decision types (repeatable)")] = None,
        node: str | None = None,
        pod: Annotated[str | None, Query(description="namespace/name")] = None,
        t_from: Annotated[str | None, WindowBound(alias="from")] = None,
        t_to: Annotated[str | None, WindowBound(alias="to")] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = DEFAULT_PAGE,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        run = await a.resolve(run)
        window = await window_seconds(a, run, t_from, t_to)
        items, nxt = await a.decisions(
            run, types=type or (), node=node, pod=pod, t_from=window[0], t_to=window[1], cursor=cursor, limit=limit
        )
        return {"run": run, "items": items, "next": nxt}

    @app.get(
        "/v1/runs/{run}/decisions/{event_id}",
        dependencies=[Auth],
        tags=["decisions"],
        response_model=api.Decision,
        **TYPED,
    )
    async def decision(a: AuditDep, run: str, event_id: str) -> dict[str, Any]:
        return await a.decision(await a.resolve(run), event_id)

    @app.get(
        "/v1/runs/{run}/pods/{namespace}/{name}",
        dependencies=[Auth],
        tags=["pods"],
        response_model=api.PodHistory,
        **TYPED,
    )
    async def pod_history(a: AuditDep, run: str, namespace: str, name: str) -> dict[str, Any]:
        run = await a.resolve(run)
        return {"run": run, "pod": f"{namespace}/{name}", "events": await a.pod_history(run, f"{namespace}/{name}")}

    @app.get(
        "/v1/runs/{run}/pods/{namespace}/{name}/explain",
        dependencies=[Auth],
        tags=["pods"],
        response_model=None,
        responses={
            200: {
                "description": "the explanation (JSON), or ?format=text its text",
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Explanation"}},
                    "text/plain": {"schema": {"type": "string"}},
                },
            }
        },
    )
    async def explain(
        a: AuditDep, run: str, namespace: str, name: str, format: str = Query("json", pattern="^(json|text)$")
    ) -> api.Explanation | PlainTextResponse:
        exp = await a.explain(await a.resolve(run), f"{namespace}/{name}")
        if format == "text":
            return PlainTextResponse(exp.render_text())
        return api.Explanation.model_validate(exp.to_dict())

    @app.get(
        "/v1/runs/{run}/nodes/{name}/timeline",
        dependencies=[Auth],
        tags=["nodes"],
        response_model=api.NodeTimeline,
        **TYPED,
    )
    async def node_timeline(
        a: AuditDep,
        run: str,
        name: str,
        t_from: Annotated[str | None, WindowBound(alias="from")] = None,
        t_to: Annotated[str | None, WindowBound(alias="to")] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = MAX_PAGE,
    ) -> dict[str, Any]:
        run = await a.resolve(run)
        window = await window_seconds(a, run, t_from, t_to)
        events = await a.node_timeline(run, name, t_from=window[0], t_to=window[1], limit=limit)
        return {"run": run, "node": name, "events": events}

    # kubectl against the past: the Kubernetes API over the same store, behind the same token
    # (and at the root what kubectl asks there: /version, discovery, OpenAPI)
    add_root_routes(app, token)
    app.mount(KUBE_PREFIX, create_kube_app(lambda: _audit_of(app), token))
    return app


async def window_seconds(
    audit: Audit, run: str, t_from: str | None, t_to: str | None
) -> tuple[float | None, float | None]:
    """A window's bounds in virtual seconds from however they were written
    (``ledgerlet_core.postmortem.instants``); :class:`BadFilter` (400) names the bad one."""
    started, start = await audit.started(run)
    out: list[float | None] = []
    for name, text in (("from", t_from), ("to", t_to)):
        if text is None:
            out.append(None)
            continue
        try:
            out.append(parse_instant(text, start, started.duration) / SECOND)
        except InstantError as exc:
            raise BadFilter(f"{name}: {exc}") from None
    return out[0], out[1]


def _kube_path(request: Request) -> bool:
    path = request.url.path
    return path == KUBE_PREFIX or path.startswith(KUBE_PREFIX + "/")


def _kube_status(code: int, message: str) -> Response:
    """An error under ``/k8s`` as the API server gives it (a ``Status``), even where the
    request never reached the facade."""
    reason = {400: "BadRequest", 401: "Unauthorized", 404: "NotFound", 405: "MethodNotAllowed"}.get(code, "BadRequest")
    return JSONResponse(status_object(code, reason, message), status_code=code)


def _audit_of(app: FastAPI) -> Audit:
    found: Audit = app.state.audit
    return found

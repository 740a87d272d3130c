"""``/metrics``, ``/healthz`` and ``/readyz``: the server's own state, never the store's."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from ledgerlet_services.audit import api_models as api
from ledgerlet_services.audit.api_contract import ApiMetrics
from ledgerlet_services.audit.routes.common import Auth, problem

log = logging.getLogger("ledgerlet_services.audit.http_api")

router = APIRouter(tags=["health"])


@router.get("/metrics", dependencies=[Auth], response_class=PlainTextResponse)
async def prometheus_metrics(request: Request) -> Response:
    """Prometheus text format: requests by route and status, and their latency (behind
    the token when there is one: the routes and their traffic are the server's own)."""
    metrics: ApiMetrics = request.app.state.metrics
    return metrics.answer()


@router.get("/healthz", response_model=api.Health)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", response_model=api.Ready)
async def readyz(request: Request) -> Response:
    """Whether the store answers; open to probes, so it says nothing of the store
    itself (its address named the database host and user to anyone)."""
    try:
        await request.app.state.store.ping()
    except Exception:  # the store is away: not ready (why is in the server's log)
        log.warning("readyz: the event store does not answer", exc_info=True)
        return problem(503, "Service Unavailable", "the event store does not answer", request)
    return JSONResponse({"status": "ready"})

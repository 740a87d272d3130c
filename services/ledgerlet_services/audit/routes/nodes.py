"""``/v1/runs/{run}/nodes/{name}/timeline``: what happened on one node, in order."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ledgerlet_services.audit import api_models as api
from ledgerlet_services.audit.queries import MAX_PAGE
from ledgerlet_services.audit.routes.common import TYPED, AuditDep, Auth, WindowBound, window_seconds

router = APIRouter(tags=["nodes"], dependencies=[Auth])


@router.get("/v1/runs/{run}/nodes/{name}/timeline", response_model=api.NodeTimeline, **TYPED)
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

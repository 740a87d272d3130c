"""``/v1/runs/{run}/decisions[/{event_id}]``: a run's decisions, filtered and paged, or one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ledgerlet_services.audit import api_models as api
from ledgerlet_services.audit.queries import DEFAULT_PAGE, MAX_PAGE
from ledgerlet_services.audit.routes.common import TYPED, AuditDep, Auth, WindowBound, window_seconds

router = APIRouter(tags=["decisions"], dependencies=[Auth])


@router.get("/v1/runs/{run}/decisions", response_model=api.DecisionsPage, **TYPED)
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


@router.get("/v1/runs/{run}/decisions/{event_id}", response_model=api.Decision, **TYPED)
async def decision(a: AuditDep, run: str, event_id: str) -> dict[str, Any]:
    return await a.decision(await a.resolve(run), event_id)

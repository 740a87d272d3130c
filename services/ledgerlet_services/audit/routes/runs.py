"""``/v1/runs``: every stored run, newest last."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from fastapi import APIRouter

from ledgerlet_services.audit import api_models as api
from ledgerlet_services.audit.routes.common import TYPED, AuditDep, Auth

router = APIRouter(tags=["runs"], dependencies=[Auth])


@router.get("/v1/runs", response_model=list[api.Run], **TYPED)
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

"""``/v1/runs/{run}/pods/{namespace}/{name}[/explain]``: a pod's history, and why it went."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from ledgerlet_services.audit import api_models as api
from ledgerlet_services.audit.routes.common import TYPED, AuditDep, Auth

router = APIRouter(tags=["pods"], dependencies=[Auth])

#: the explanation's two forms; the JSON one by reference to the schema the app adds
EXPLAIN_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "the explanation (JSON), or ?format=text its text",
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/Explanation"}},
            "text/plain": {"schema": {"type": "string"}},
        },
    }
}


@router.get("/v1/runs/{run}/pods/{namespace}/{name}", response_model=api.PodHistory, **TYPED)
async def pod_history(a: AuditDep, run: str, namespace: str, name: str) -> dict[str, Any]:
    run = await a.resolve(run)
    return {"run": run, "pod": f"{namespace}/{name}", "events": await a.pod_history(run, f"{namespace}/{name}")}


@router.get("/v1/runs/{run}/pods/{namespace}/{name}/explain", response_model=None, responses=EXPLAIN_RESPONSES)
async def explain(
    a: AuditDep, run: str, namespace: str, name: str, format: str = Query("json", pattern="^(json|text)$")
) -> api.Explanation | PlainTextResponse:
    exp = await a.explain(await a.resolve(run), f"{namespace}/{name}")
    if format == "text":
        return PlainTextResponse(exp.render_text())
    return api.Explanation.model_validate(exp.to_dict())

"""A get: one object as it was at the instant, or its Table row when the client asks for a Table."""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from ledgerlet_services.audit.kube_api.asked import Asked
from ledgerlet_services.audit.kube_api.meta import not_found
from ledgerlet_services.audit.kube_api.tables import table
from ledgerlet_services.audit.kube_api.target import TABLE_TYPE, wants_table


async def get(asked: Asked) -> Response:
    target, instant = asked.target, asked.instant
    resource = target.resource
    obj = await asked.reader.get(resource, instant, target.namespace, target.name)
    if obj is None:
        raise not_found(resource.name, target.name, resource.group)
    version = wants_table(asked.request)
    if version is None:
        return JSONResponse(obj, headers=asked.headers)
    body = table(
        resource.kind,
        [obj],
        instant,
        list_meta={"resourceVersion": obj["metadata"].get("resourceVersion", "")},
        include_object=asked.request.query_params.get("includeObject", "Metadata"),
    )
    body["apiVersion"] = version
    return JSONResponse(body, media_type=TABLE_TYPE, headers=asked.headers)

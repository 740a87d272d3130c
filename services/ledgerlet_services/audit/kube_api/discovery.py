"""Discovery (``/api``, ``/apis``, each group version) and the OpenAPI documents: what a
client asks before it asks for objects, the same for every run and instant."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ledgerlet_services.audit.kube_api import resources as res
from ledgerlet_services.audit.kube_api.meta import ApiError
from ledgerlet_services.audit.kube_api.openapi import v2_answer, v3_document, v3_index
from ledgerlet_services.audit.kube_api.target import NOT_FOUND, READ_METHODS, refused


def discovery(request: Request, *, legacy: bool, rest: list[str]) -> Response:
    if request.method not in READ_METHODS:
        raise refused(None, "", request.method)
    if not rest:
        media = res.wants_aggregated(request.headers.get("accept", ""))
        if media is not None:
            version = "apidiscovery.k8s.io/v2beta1" if "v2beta1" in media else "apidiscovery.k8s.io/v2"
            body = res.aggregated_discovery(legacy, version)
            return Response(json.dumps(body), media_type=media)
        if legacy:
            host = request.headers.get("host", "127.0.0.1")
            return JSONResponse(res.api_versions(host))
        return JSONResponse(res.api_group_list())
    if legacy:
        found = res.api_resource_list(rest[0]) if len(rest) == 1 else None
    elif len(rest) == 1:
        found = res.api_group(rest[0])
    else:
        found = res.api_resource_list(f"{rest[0]}/{rest[1]}")
    if found is None:
        raise ApiError(404, "NotFound", NOT_FOUND)
    return JSONResponse(found)


def served_openapi(request: Request, rest: list[str], prefix: str) -> Response | None:
    """``/openapi/v2`` and ``/openapi/v3[/GROUP-VERSION]`` (``openapi.py``); None for other paths."""
    if rest == ["openapi", "v2"]:
        return openapi_v2(request)
    if rest[:2] != ["openapi", "v3"]:
        return None
    if len(rest) == 2:
        return openapi_v3_index(prefix)
    return openapi_v3("/".join(rest[2:]))


def openapi_v2(request: Request) -> Response:
    """The v2 document, as protobuf or JSON as the client asks."""
    body, media = v2_answer(request.headers.get("accept", ""))
    return Response(body, media_type=media)


def openapi_v3_index(prefix: str) -> Response:
    """Each group version's v3 document, by its URL under ``prefix`` (the run's, or none)."""
    return JSONResponse(v3_index(prefix))


def openapi_v3(group_version: str) -> Response:
    doc = v3_document(group_version)
    if doc is None:
        raise ApiError(404, "NotFound", NOT_FOUND)
    return JSONResponse(doc, headers={"Cache-Control": "public, immutable"})

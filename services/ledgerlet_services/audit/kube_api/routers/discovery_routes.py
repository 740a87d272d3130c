"""What the facade says of itself at a run's instant: the paths it serves, its version,
discovery (``/api``, ``/apis``, each group and group version) and the OpenAPI documents.

Discovery refuses writes as the resources do (405); an OpenAPI path answers reads only
(another method finds no route: 404)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ledgerlet_services.audit.kube_api import resources as res
from ledgerlet_services.audit.kube_api.discovery import discovery, openapi_v2, openapi_v3, openapi_v3_index
from ledgerlet_services.audit.kube_api.mount import ROOT_PATHS
from ledgerlet_services.audit.kube_api.routers.answering import StatusRoute
from ledgerlet_services.audit.kube_api.routers.at_instant import At, at_instant
from ledgerlet_services.audit.kube_api.target import ALL_METHODS, READ_METHODS

#: (every route resolves the run and the instant first: a run that is not there is a 404)
router = APIRouter(route_class=StatusRoute, dependencies=[Depends(at_instant)])
BASE = "/{run}/{at}"


@router.api_route(BASE, methods=ALL_METHODS)
async def root(at: At) -> Response:
    return JSONResponse({"paths": ROOT_PATHS}, headers=await at.headers())


@router.api_route(f"{BASE}/version", methods=ALL_METHODS)
async def version() -> Response:
    return JSONResponse(res.version_info())


@router.api_route(f"{BASE}/api", methods=ALL_METHODS)
async def legacy_versions(request: Request) -> Response:
    return discovery(request, legacy=True, rest=[])


@router.api_route(f"{BASE}/api/v1", methods=ALL_METHODS)
async def core_resources(request: Request) -> Response:
    return discovery(request, legacy=True, rest=["v1"])


@router.api_route(f"{BASE}/api/{{version}}", methods=ALL_METHODS)
async def legacy_version(request: Request, version: str) -> Response:
    return discovery(request, legacy=True, rest=[version])


@router.api_route(f"{BASE}/apis", methods=ALL_METHODS)
async def groups(request: Request) -> Response:
    return discovery(request, legacy=False, rest=[])


@router.api_route(f"{BASE}/apis/{{group}}", methods=ALL_METHODS)
async def group(request: Request, group: str) -> Response:
    return discovery(request, legacy=False, rest=[group])


@router.api_route(f"{BASE}/apis/{{group}}/{{version}}", methods=ALL_METHODS)
async def group_resources(request: Request, group: str, version: str) -> Response:
    return discovery(request, legacy=False, rest=[group, version])


@router.api_route(f"{BASE}/openapi/v2", methods=list(READ_METHODS))
async def openapi_document(request: Request) -> Response:
    return openapi_v2(request)


@router.api_route(f"{BASE}/openapi/v3", methods=list(READ_METHODS))
async def openapi_index(at: At) -> Response:
    return openapi_v3_index(at.prefix)


@router.api_route(f"{BASE}/openapi/v3/{{group_version:path}}", methods=list(READ_METHODS))
async def openapi_group_version(group_version: str) -> Response:
    return openapi_v3(group_version)

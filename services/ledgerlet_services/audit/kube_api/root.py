"""What kubectl asks at the server's root, whatever its kubeconfig's path says.

``kubectl get --raw /version`` (and ``--raw`` with any path) replaces the server URL's
path instead of adding to it (client-go ``Request.RequestURI``), so the run's prefix
(``/k8s/RUN/AT``) is lost: the root answers ``/version``, discovery (``/api``,
``/apis``, each group version) and the OpenAPI documents, none of which depends on a run.
A resource path at the root says where the runs are. ``/version`` is open, as the API
server's is to anyone (``system:public-info-viewer``); the rest wants the token, if any.
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ledgerlet_services.audit.kube_api import resources as res
from ledgerlet_services.audit.kube_api.discovery import discovery, served_openapi
from ledgerlet_services.audit.kube_api.meta import ApiError
from ledgerlet_services.audit.kube_api.mount import PREFIX, ROOT_PATHS
from ledgerlet_services.audit.kube_api.routers.answering import status
from ledgerlet_services.audit.kube_api.routers.at_instant import check_token

PATHS: Final = (
    "/version",
    "/api",
    "/api/{rest:path}",
    "/apis",
    "/apis/{rest:path}",
    "/openapi/v2",
    "/openapi/v3",
    "/openapi/v3/{rest:path}",
)

#: :data:`PATHS`, routed on the audit API, kept out of its OpenAPI document
router = APIRouter(include_in_schema=False)


async def endpoint(request: Request) -> Response:
    """The answer, or its ``Status``; the token (the audit API's) wanted except for ``/version``."""
    parts = [p for p in request.url.path.split("/") if p]
    try:
        if parts != ["version"]:
            check_token(request.app.state.token, request)
        return answer(request, parts)
    except ApiError as exc:
        return status(exc)


for _path in PATHS:
    router.add_api_route(_path, endpoint, methods=["GET", "HEAD"])


def answer(request: Request, parts: list[str]) -> Response:
    if parts == ["version"]:
        return JSONResponse(res.version_info())
    if parts[0] == "api" and len(parts) <= 2:
        return discovery(request, legacy=True, rest=parts[1:])
    if parts[0] == "apis" and len(parts) <= 3:
        return discovery(request, legacy=False, rest=parts[1:])
    if parts[0] == "openapi":
        found = served_openapi(request, parts, "")
        if found is not None:
            return found
    raise ApiError(
        404,
        "NotFound",
        f"the root serves {', '.join(ROOT_PATHS)}; a stored run's objects are under {PREFIX}/RUN/INSTANT/... "
        "(ledgerlet kubeconfig writes that URL)",
    )

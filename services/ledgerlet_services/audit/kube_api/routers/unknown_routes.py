"""Paths no other route serves, answered as the API server answers them (404 ``Status``),
each under the template of its shape, so that request metrics name what was asked
without a series per name: ``/apis/{group}/{version}/{resource}`` and the like under a
run, ``/{run}/{at}/{path}`` for anything else under one, ``/{path}`` outside one.

They come last: a route's literal segments (``pods``, ``apps``) win over these."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from ledgerlet_services.audit.kube_api.meta import ApiError
from ledgerlet_services.audit.kube_api.mount import PREFIX
from ledgerlet_services.audit.kube_api.routers.answering import StatusRoute
from ledgerlet_services.audit.kube_api.routers.at_instant import Authorised, at_instant, resolve
from ledgerlet_services.audit.kube_api.target import ALL_METHODS, NOT_FOUND

#: (a namespace's shape before the one as long: /namespaces/NS/RESOURCE is a list in NS)
_SHAPES = (
    "/namespaces/{namespace}/{resource}/{name}/{subresource}",
    "/namespaces/{namespace}/{resource}/{name}",
    "/namespaces/{namespace}/{resource}",
    "/{resource}/{name}/{subresource}",
    "/{resource}/{name}",
    "/{resource}",
)
UNDER_RUN = (
    *(f"/{{run}}/{{at}}/api/{{version}}{shape}" for shape in _SHAPES),
    *(f"/{{run}}/{{at}}/apis/{{group}}/{{version}}{shape}" for shape in _SHAPES),
    "/{run}/{at}/{path:path}",
)

router = APIRouter(route_class=StatusRoute)


async def unknown() -> Response:
    """A path under a run that names nothing served (once the run and instant are found)."""
    raise ApiError(404, "NotFound", NOT_FOUND)


for path in UNDER_RUN:
    router.add_api_route(path, unknown, methods=ALL_METHODS, dependencies=[Depends(at_instant)])


@router.api_route("/{path:path}", methods=ALL_METHODS)
async def outside(request: Request, facade: Authorised) -> Response:
    """A path that names no run and instant (or names them with an empty segment)."""
    parts = request.path_params["path"].split("/")
    if len(parts) < 2:
        message = f"this is a stored run's API: use {PREFIX}/RUN/INSTANT/... (ledgerlet kubeconfig writes the URL)"
        raise ApiError(404, "NotFound", message)
    await resolve(facade, parts[0], parts[1])
    raise ApiError(404, "NotFound", NOT_FOUND)

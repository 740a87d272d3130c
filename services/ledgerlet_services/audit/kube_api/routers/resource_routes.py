"""One resource's routes under its group version: its list, each object, the object's
``status``, its other subresources (refused); or, for a review, its one ``POST``.

Every route takes every method a client may send, so that a write is answered as the
API server answers it for a resource whose verbs are get, list and watch (405, saying
what is refused), not as a path nobody serves. A namespaced resource has each route
twice: across namespaces (``/pods``) and in one (``/namespaces/{namespace}/pods``).
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ledgerlet_services.audit.kube_api import resources as res
from ledgerlet_services.audit.kube_api.asked import Asked, not_served, review_only
from ledgerlet_services.audit.kube_api.getting import get
from ledgerlet_services.audit.kube_api.listing import list_objects
from ledgerlet_services.audit.kube_api.meta import ApiError
from ledgerlet_services.audit.kube_api.reviews import review
from ledgerlet_services.audit.kube_api.routers.answering import StatusRoute
from ledgerlet_services.audit.kube_api.routers.at_instant import At, AtInstant, at_instant
from ledgerlet_services.audit.kube_api.target import ALL_METHODS, NOT_FOUND, READ_METHODS, Target, refused
from ledgerlet_services.audit.kube_api.watching import watch


def resource_router() -> APIRouter:
    """A router of resources: each route resolves the run and the instant first (a run that
    is not there is a 404), and answers its errors as ``Status`` objects."""
    return APIRouter(route_class=StatusRoute, dependencies=[Depends(at_instant)])


def served(group: str, version: str, name: str) -> res.Resource:
    """A resource the facade serves (``resources.RESOURCES``)."""
    found = res.find(group, version, name)
    if found is None:
        raise LookupError(f"{group}/{version} {name} is not served (resources.RESOURCES)")
    return found


def collections(resource: res.Resource) -> list[str]:
    """The resource's list paths, under its group version's."""
    group = f"apis/{resource.group}" if resource.group else "api"
    base = f"/{{run}}/{{at}}/{group}/{resource.version}"
    paths = [f"{base}/{resource.name}"]
    if resource.namespaced:
        paths.append(f"{base}/namespaces/{{namespace}}/{resource.name}")
    return paths


def watching(request: Request) -> bool:
    return request.query_params.get("watch") in ("true", "1")


@dataclass(frozen=True, slots=True)
class ReadOnly:
    """A resource read as it was at the instant (get, list, watch); every write refused."""

    resource: res.Resource
    #: subresources Kubernetes has for it, refused under their own names (``log``, ``exec``)
    refused: tuple[str, ...] = ()
    #: the subresources its objects have at all (None: any name, refused unless ``status``)
    only: tuple[str, ...] | None = None

    def add_to(self, router: APIRouter) -> None:
        for path in collections(self.resource):
            router.add_api_route(path, self.collection, methods=ALL_METHODS)
            router.add_api_route(f"{path}/{{name}}", self.item, methods=ALL_METHODS)
            router.add_api_route(f"{path}/{{name}}/status", self.item, methods=ALL_METHODS)
            subresources = self.refused + (("{subresource}",) if self.only is None else self.only)
            for sub in subresources:
                router.add_api_route(f"{path}/{{name}}/{sub}", self.subresource, methods=ALL_METHODS)

    async def asked(self, request: Request, at: AtInstant, subresource: str = "") -> Asked:
        """The request, once it is a read (every other method: 405)."""
        params = request.path_params
        target = Target(self.resource, params.get("namespace", ""), params.get("name", ""), subresource)
        if request.method not in READ_METHODS:
            raise refused(self.resource, target.name, request.method, at.instant)
        return Asked(request, at.reader, at.instant, target, await at.headers(), at.facade.audit)

    async def collection(self, request: Request, at: At) -> Response:
        """The list, or a watch of it (``?watch=1``)."""
        asked = await self.asked(request, at)
        if watching(request):
            return await watch(asked, request.query_params.get("fieldSelector"))
        return await list_objects(asked)

    async def item(self, request: Request, at: At) -> Response:
        """One object (or its ``status``, the object itself), or a watch of it."""
        asked = await self.asked(request, at)
        target = asked.target
        if self.resource.namespaced and not target.namespace:
            raise ApiError(404, "NotFound", NOT_FOUND)
        if watching(request):
            return await watch(asked, f"metadata.name={target.name}")
        return await get(asked)

    async def subresource(self, request: Request, at: At) -> Response:
        """A subresource other than ``status``: 403 (logs, exec, proxy... are not served)."""
        name = request.path_params.get("subresource") or request.scope["route"].path.rsplit("/", 1)[1]
        raise not_served((await self.asked(request, at, name)).target)


@dataclass(frozen=True, slots=True)
class CreateOnly:
    """A review the client asks about itself: created (``POST``) and answered, never stored,
    so never read back (405 for anything else)."""

    resource: res.Resource

    def add_to(self, router: APIRouter) -> None:
        for path in collections(self.resource):
            router.add_api_route(path, self.create, methods=ALL_METHODS)
            router.add_api_route(f"{path}/{{name}}", self.refuse, methods=ALL_METHODS)
            router.add_api_route(f"{path}/{{name}}/{{subresource}}", self.refuse, methods=ALL_METHODS)

    async def create(self, request: Request, at: At) -> Response:
        if request.method != "POST":
            raise review_only(self.resource)
        headers = await at.headers()
        answer = review(
            self.resource,
            await request.body(),
            request.path_params.get("namespace", ""),
            authenticated=bool(at.facade.token),
            content_type=request.headers.get("content-type", "application/json"),
        )
        return JSONResponse(answer, status_code=201, headers=headers)

    async def refuse(self) -> Response:
        raise review_only(self.resource)

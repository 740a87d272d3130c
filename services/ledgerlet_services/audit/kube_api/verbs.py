"""A resource request answered by its verb: a review created, a write refused, one object
got (as itself or a Table row), or on to a list or a watch."""

from __future__ import annotations

from starlette.responses import JSONResponse, Response

from ledgerlet_services.audit.kube_api import resources as res
from ledgerlet_services.audit.kube_api.asked import Asked, not_served, review_only
from ledgerlet_services.audit.kube_api.listing import list_objects
from ledgerlet_services.audit.kube_api.meta import ApiError, not_found
from ledgerlet_services.audit.kube_api.reviews import review
from ledgerlet_services.audit.kube_api.tables import table
from ledgerlet_services.audit.kube_api.target import NOT_FOUND, READ_METHODS, TABLE_TYPE, refused, wants_table
from ledgerlet_services.audit.kube_api.watching import watch


async def serve(asked: Asked, *, authenticated: bool) -> Response:
    """What the request's method and query ask of its target."""
    request, target = asked.request, asked.target
    resource = target.resource
    if resource.verbs == res.CREATE_ONLY:  # a review the client asks about itself (reviews.py)
        return await _review(asked, authenticated=authenticated)
    if request.method not in READ_METHODS:
        raise refused(resource, target.name, request.method, asked.instant)
    if target.subresource and target.subresource != "status":
        raise not_served(target)
    watching = request.query_params.get("watch") in ("true", "1")
    if target.name:
        if resource.namespaced and not target.namespace:
            raise ApiError(404, "NotFound", NOT_FOUND)
        if watching:
            return await watch(asked, f"metadata.name={target.name}")
        return await get(asked)
    if watching:
        return await watch(asked, request.query_params.get("fieldSelector"))
    return await list_objects(asked)


async def _review(asked: Asked, *, authenticated: bool) -> Response:
    request, target = asked.request, asked.target
    if request.method != "POST" or target.name or target.subresource:
        raise review_only(target.resource)
    answer = review(
        target.resource,
        await request.body(),
        target.namespace,
        authenticated=authenticated,
        content_type=request.headers.get("content-type", "application/json"),
    )
    return JSONResponse(answer, status_code=201, headers=asked.headers)


async def get(asked: Asked) -> Response:
    """One object, or its Table row when the client asks for a Table."""
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

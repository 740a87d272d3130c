"""A list, streamed: items (or Table rows) as the reader pages them, then the list's
metadata with the continue token, if any."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import Response, StreamingResponse

from ledgerlet_services.audit.kube_api.asked import Asked
from ledgerlet_services.audit.kube_api.meta import Instant, resource_version
from ledgerlet_services.audit.kube_api.reader import Query
from ledgerlet_services.audit.kube_api.selectors import parse_label_selector
from ledgerlet_services.audit.kube_api.tables import table
from ledgerlet_services.audit.kube_api.target import TABLE_TYPE, field_selector, page_limit, wants_table


def selection(asked: Asked, field_text: str | None) -> Query:
    """The request's namespace, label selector and field selector (``field_text``)."""
    labels = parse_label_selector(asked.request.query_params.get("labelSelector"))
    return Query(asked.target.namespace or None, labels, field_selector(asked.target, field_text))


async def list_objects(asked: Asked) -> Response:
    params = asked.request.query_params
    q = selection(asked, params.get("fieldSelector"))
    items = asked.reader.page(
        asked.target.resource, asked.instant, q, limit=page_limit(params.get("limit")), token=params.get("continue")
    )
    first = await anext(items)  # errors (a continue token not ours) surface before the stream starts
    version = wants_table(asked.request)
    body = _body(asked, version, first, items, params.get("includeObject", "Metadata"))
    media = TABLE_TYPE if version is not None else "application/json"
    return StreamingResponse(body, media_type=media, headers=asked.headers)


def _head(kind: str, group_version: str, instant: Instant, version: str | None) -> bytes:
    """The list's opening, up to its first item."""
    if version is not None:
        head = {
            "kind": "Table",
            "apiVersion": version,
            "columnDefinitions": table(kind, [], instant, list_meta={})["columnDefinitions"],
        }
        return json.dumps(head)[:-1].encode() + b',"rows":['
    return json.dumps({"kind": f"{kind}List", "apiVersion": group_version})[:-1].encode() + b',"items":['


async def _body(
    asked: Asked,
    version: str | None,
    first: dict[str, Any] | str,
    items: AsyncIterator[dict[str, Any] | str],
    include: str,
) -> AsyncIterator[bytes]:
    resource, instant = asked.target.resource, asked.instant
    rv = resource_version(instant.t)
    yield _head(resource.kind, resource.group_version, instant, version)
    item = first
    n = 0
    while isinstance(item, dict):
        if version is not None:
            out = table(resource.kind, [item], instant, list_meta={}, include_object=include)["rows"][0]
        else:
            out = item
        yield (b"," if n else b"") + json.dumps(out).encode()
        n += 1
        item = await anext(items)
    meta: dict[str, Any] = {"resourceVersion": rv}
    if item:
        meta["continue"] = item
    yield b'],"metadata":' + json.dumps(meta).encode() + b"}"

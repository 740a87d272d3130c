"""A watch: the initial objects (unless the client starts from a resource version), then
every change after the instant as ``ADDED``/``MODIFIED``/``DELETED``, filtered by the
selectors as the API server's watch cache filters, until the timeout."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final

from starlette.responses import Response, StreamingResponse

from ledgerlet_services.audit.kube_api.asked import Asked
from ledgerlet_services.audit.kube_api.listing import selection
from ledgerlet_services.audit.kube_api.meta import ApiError, Instant, instant_of, query_int, resource_version
from ledgerlet_services.audit.kube_api.reader import Change, Query, after_instant
from ledgerlet_services.audit.kube_api.tables import table
from ledgerlet_services.audit.kube_api.target import TABLE_TYPE, selector_fields, wants_table

#: how long a watch stays open when the client does not say (the API server's lower bound)
DEFAULT_WATCH_SECONDS: Final = 1800
#: the longest a watch stays open (a year: a deadline the clock can add)
MAX_WATCH_SECONDS: Final = 365 * 24 * 3600
#: a run still being recorded is polled this often once a watch has caught up
POLL_SECONDS: Final = 1.0


@dataclass(slots=True)
class Watch:
    """One watch's settings, read from its query, and how it writes an event."""

    asked: Asked
    q: Query
    version: str | None
    include: str
    initial: bool
    from_t: int
    seconds: int
    headers_sent: bool = False

    def matches(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata", {})
        if self.q.namespace and meta.get("namespace") != self.q.namespace:
            return False
        fields = selector_fields(self.asked.target.resource.kind, obj)
        return self.q.labels.matches(meta.get("labels") or {}) and self.q.fields.matches(fields)

    def event(self, kind: str, obj: dict[str, Any], at: Instant) -> bytes:
        out: dict[str, Any] = obj
        if self.version is not None:
            out = table(
                self.asked.target.resource.kind,
                [obj],
                at,
                list_meta={"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")},
                include_object=self.include,
                headers=not self.headers_sent,
            )
            out["apiVersion"] = self.version
            self.headers_sent = True
        return json.dumps({"type": kind, "object": out}).encode() + b"\n"


def _settings(asked: Asked, field_text: str | None) -> Watch:
    params = asked.request.query_params
    instant = asked.instant
    q = selection(asked, field_text)
    version = wants_table(asked.request)
    include = params.get("includeObject", "Metadata")
    rv_text = params.get("resourceVersion", "") or ""
    initial = rv_text in ("", "0") or params.get("sendInitialEvents") == "true"
    from_t = instant.t
    if not initial:
        given = instant_of(rv_text)
        if given is None:
            raise ApiError(410, "Expired", f"too old resource version: {rv_text}")
        from_t = min(max(given, 0), instant.end)
    timeout = query_int(params.get("timeoutSeconds"), "timeoutSeconds")
    seconds = min(timeout, MAX_WATCH_SECONDS) if timeout else DEFAULT_WATCH_SECONDS
    return Watch(asked, q, version, include, initial, from_t, seconds)


async def watch(asked: Asked, field_text: str | None) -> Response:
    w = _settings(asked, field_text)
    media = TABLE_TYPE if w.version is not None else "application/json"
    return StreamingResponse(_stream(w), media_type=media, headers=asked.headers)


async def _initial(w: Watch) -> AsyncIterator[bytes]:
    """The objects at the instant as ``ADDED``, and the bookmark that ends them when asked for."""
    resource, instant = w.asked.target.resource, w.asked.instant
    async for item in w.asked.reader.page(resource, instant, w.q, limit=None, token=None):
        if isinstance(item, dict):
            yield w.event("ADDED", item, instant)
    if w.asked.request.query_params.get("sendInitialEvents") == "true":
        mark = {
            "kind": resource.kind,
            "apiVersion": resource.group_version,
            "metadata": {
                "resourceVersion": resource_version(instant.t),
                "annotations": {"k8s.io/initial-events-end": "true"},
            },
        }
        yield json.dumps({"type": "BOOKMARK", "object": mark}).encode() + b"\n"


async def _stream(w: Watch) -> AsyncIterator[bytes]:
    asked = w.asked
    resource, instant = asked.target.resource, asked.instant
    deadline = time.monotonic() + w.seconds
    if w.initial:
        async for line in _initial(w):
            yield line
    cursor = after_instant(w.from_t)
    while time.monotonic() < deadline:
        async for reached, changes in asked.reader.changes(resource, instant, cursor):
            cursor = reached
            for ch in changes:
                for kind, obj in filtered(ch, w.matches):
                    yield w.event(kind, obj, Instant(instant.run, instant.start, ch.t, instant.end))
            if time.monotonic() >= deadline:
                return
        if await asked.audit().status(instant.run) == "completed":
            await asyncio.sleep(max(0.0, deadline - time.monotonic()))
            return
        await asyncio.sleep(POLL_SECONDS)


def filtered(ch: Change, matches: Callable[[dict[str, Any] | None], bool]) -> list[tuple[str, dict[str, Any]]]:
    """A change as a watch with selectors sees it: an object that starts or stops matching
    is added or deleted (``k8s.io/apiserver/pkg/storage/cacher``'s filtering)."""
    if ch.type == "ADDED":
        return [("ADDED", ch.obj)] if matches(ch.obj) else []
    if ch.type == "DELETED":
        return [("DELETED", ch.obj)] if matches(ch.obj) else []
    now, before = matches(ch.obj), matches(ch.old) if ch.old is not None else True
    if now and before:
        return [("MODIFIED", ch.obj)]
    if now:
        return [("ADDED", ch.obj)]
    if before and ch.old is not None:
        return [("DELETED", ch.old)]
    return []

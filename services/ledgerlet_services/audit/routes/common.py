"""What every audit route shares: the audit queries and the token as dependencies, the
problem-details answer, and a window's bounds read however they were written."""

from __future__ import annotations

import hmac
from typing import Annotated, Any, Final

from fastapi import Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.postmortem.instants import InstantError, parse_instant
from ledgerlet_services.audit.api_contract import PROBLEM
from ledgerlet_services.audit.queries import Audit, BadFilter

#: answers carry the fields their handler set (a decision without a pod has no "pod": null)
TYPED: Final[dict[str, Any]] = {"response_model_exclude_unset": True}

#: what a window bound (``from``, ``to``) may be written as
WINDOW_BOUND: Final = (
    "an instant, inclusive: virtual seconds (90, 12.5), a Go duration (5m), a time of day on the run's day "
    "(09:05, 09:05:30; UTC unless +hh:mm is given) or RFC 3339 (2026-01-29T09:05:00Z)"
)


def WindowBound(**kwargs: Any) -> Any:
    return Query(description=WINDOW_BOUND, max_length=64, **kwargs)


def problem(status: int, title: str, detail: str, request: Request, headers: dict[str, str] | None = None) -> Response:
    body = {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
    }
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _audit(request: Request) -> Audit:
    result: Audit = request.app.state.audit
    return result


#: module level: the routes' annotations are strings FastAPI resolves in their modules
AuditDep = Annotated[Audit, Depends(_audit)]


def authorised(request: Request) -> None:
    """The bearer token the app was made with (``app.state.token``), when it has one."""
    token: str | None = request.app.state.token
    if not token:
        return
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
        raise HTTPException(401, "a valid bearer token is required")


Auth: Final = Depends(authorised)


async def window_seconds(
    audit: Audit, run: str, t_from: str | None, t_to: str | None
) -> tuple[float | None, float | None]:
    """A window's bounds in virtual seconds from however they were written
    (``ledgerlet_core.postmortem.instants``); :class:`BadFilter` (400) names the bad one."""
    started, start = await audit.started(run)
    out: list[float | None] = []
    for name, text in (("from", t_from), ("to", t_to)):
        if text is None:
            out.append(None)
            continue
        try:
            out.append(parse_instant(text, start, started.duration) / SECOND)
        except InstantError as exc:
            raise BadFilter(f"{name}: {exc}") from None
    return out[0], out[1]

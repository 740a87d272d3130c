"""What every answer is made of: times, resource versions, ``Status`` errors.

Times are the run's virtual clock rendered from its start, as the API server renders
``metav1.Time`` (whole seconds) and ``metav1.MicroTime`` (microseconds). A resource
version is a virtual instant in nanoseconds plus one (never ``0``, which a watch reads
as "any"): an object's is the instant of its last change, a list's the instant it shows,
and a watch from it streams what happened after that instant.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from ledgerlet_core.postmortem.instants import InstantError, within_run

#: uids of objects the facade makes up (events, namespaces): derived, so stable across requests
FACADE_UID_NAMESPACE: Final = uuid.UUID("5b0e8d7e-16c4-5f0a-9a11-6b7562656374")


@dataclass(frozen=True, slots=True)
class Instant:
    """The run and the virtual instant an endpoint shows."""

    run: str
    start: datetime
    #: virtual nanoseconds since the run's start
    t: int
    #: the end of the run (its duration), for ``end`` and for watches
    end: int


def moment(start: datetime, t_ns: int) -> datetime:
    return start + timedelta(microseconds=t_ns // 1000)


def rfc3339(start: datetime, t_ns: int) -> str:
    """``metav1.Time``: RFC 3339 in whole seconds, UTC."""
    return moment(start, t_ns).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(start: datetime, t_ns: int) -> str:
    """``metav1.MicroTime``: RFC 3339 with six fractional digits."""
    return moment(start, t_ns).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def unix_nanos(start: datetime, t_ns: int) -> int:
    return int(start.timestamp()) * 1_000_000_000 + start.microsecond * 1000 + t_ns


def resource_version(t_ns: int) -> str:
    return str(t_ns + 1)


#: the largest value of an integer query parameter (Go's int64, as the API server parses them)
MAX_INT64: Final = (1 << 63) - 1


def ascii_uint(text: str) -> int | None:
    """``text`` as a non-negative int64 written in ASCII digits, else None. (``str.isdigit``
    takes superscripts, which ``int`` refuses, and ``int`` refuses more than 4,300 digits:
    both were a 500.)"""
    if not text or len(text) > 19 or not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value <= MAX_INT64 else None


def query_int(text: str | None, name: str) -> int | None:
    """An integer query parameter (``limit``, ``timeoutSeconds``): absent is None; one that
    is not a non-negative int64 in ASCII digits is a 400, as the API server's parameter
    decoding answers (``strconv.ParseInt``)."""
    if text is None or text == "":
        return None
    value = ascii_uint(text)
    if value is None:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise bad_request(f"{name} must be a non-negative integer of at most {MAX_INT64}, got {shown!r}")
    return value


def instant_of(resource_version_text: str) -> int | None:
    """The virtual instant a resource version names, or None when it is not one of ours."""
    value = ascii_uint(resource_version_text)
    return value - 1 if value else None


def facade_uid(*parts: str) -> str:
    return str(uuid.uuid5(FACADE_UID_NAMESPACE, "/".join(parts)))


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration`` (k8s.io/apimachinery/pkg/util/duration), which kubectl's
    AGE columns use; here measured to the endpoint's instant instead of the wall clock."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        s = whole % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return f"{hours // 24 // 365}y{(hours // 24) % 365}d"
    return f"{hours // 24 // 365}y"


def age(instant: Instant, timestamp: str | None) -> str:
    """An AGE cell: from ``timestamp`` (RFC 3339) to the endpoint's instant."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return human_duration((moment(instant.start, instant.t) - then).total_seconds())


class ApiError(Exception):
    """An answer the API server gives as a ``Status`` (``k8s.io/apimachinery/pkg/api/errors``)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        return status_object(self.code, self.reason, self.message, self.details)


def status_object(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A failure ``Status`` (``metav1.Status``) as the API server writes it."""
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        out["details"] = details
    out["code"] = code
    return out


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    """``errors.NewNotFound``: ``pods "x" not found``."""
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        404, "NotFound", f'{qualified} "{name}" not found', details={"name": name, "group": group, "kind": resource}
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def parse_at(text: str, start: datetime, duration: int) -> int:
    """The instant ``text`` names within the run (``end``, ``5m``, ``09:05``, RFC 3339:
    ``ledgerlet_core.postmortem.instants``); NotFound, as for a path that is not there, if
    it names none of the run's."""
    try:
        return within_run(text, start, duration)
    except InstantError as exc:
        raise ApiError(404, "NotFound", f"instant {exc}") from None

"""Wall-clock renderings of virtual time (RFC 3339, UTC). Pure: no clock is read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def parse_rfc3339(text: str) -> datetime:
    """``2026-01-29T09:00:00Z`` (or with an offset / fraction) as an aware UTC datetime."""
    value = datetime.fromisoformat(text.replace("z", "Z"))
    if value.tzinfo is None:
        raise ValueError(f"time {text!r} has no time zone; write it as RFC 3339, e.g. 2026-01-29T09:00:00Z")
    return value.astimezone(UTC)


def format_rfc3339(start: datetime, t_ns: int) -> str:
    """``start + t`` as ``2026-01-29T09:00:40Z``; fractions only when there are some."""
    moment = start + timedelta(microseconds=t_ns // 1000)
    nanos = t_ns % 1_000_000_000
    base = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if nanos:
        base += "." + f"{nanos:09d}".rstrip("0")
    return base + "Z"


def time_key(text: str | None) -> datetime | None:
    """A comparable value for a stats time, or ``None`` for the zero time."""
    if not text:
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None

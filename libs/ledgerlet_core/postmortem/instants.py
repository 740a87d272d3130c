"""An instant of a run as a person writes it: an offset into the run, a clock time, or a
time of day on the run's day. Pure: the run's start is given, no clock is read.

People think in clock time (the alert fired at 09:05; the event says
``2026-01-29T09:05:00Z``), the run counts virtual time from its start. Every ``--at``,
``--from``, ``--to`` and API window takes any of:

* ``end`` (and ``start``): the run's last and first instant;
* an offset, a Go duration (``5m``, ``1h2m30s``, ``-30s``) or a bare number of seconds
  (``90``, ``12.5``);
* RFC 3339 (``2026-01-29T09:05:00Z``, ``2026-01-29T10:05:00+01:00``);
* a time of day (``09:05``, ``09:05:30``, ``09:05:30.25``, with ``Z`` or ``+01:00`` if
  not UTC): on the day the run started, or the next day for a run that crosses midnight
  and reaches it only then.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, time, timedelta, timezone
from typing import Final

from ledgerlet_core.model.duration import SECOND, DurationError, format_duration, parse_duration
from ledgerlet_core.model.timefmt import parse_rfc3339

#: virtual nanoseconds an int64 clock holds, in whole seconds (an instant beyond is refused,
#: not wrapped; whole seconds, so that it survives a round trip through float seconds)
MAX_NS: Final = 9_223_372_036 * SECOND

_TIME_OF_DAY: Final = re.compile(
    r"(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d)(?:\.(?P<f>\d{1,9}))?)?"
    r"(?P<zone>Z|z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?"
)
_NUMBER: Final = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")

FORMS: Final = "end, an offset such as 5m or 90, a time of day such as 09:05, or RFC 3339 (2026-01-29T09:05:00Z)"


class InstantError(ValueError):
    """Text that names no instant; the message says which forms do."""


def _zone(text: str | None) -> timezone:
    if text is None or text in ("Z", "z"):
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def _since(start: datetime, moment: datetime) -> int:
    delta = moment - start
    return (delta.days * 86_400 + delta.seconds) * SECOND + delta.microseconds * 1000


def _time_of_day(match: re.Match[str], start: datetime, duration: int) -> int:
    zone = _zone(match["zone"])
    fraction = (match["f"] or "").ljust(9, "0")
    nanos = int(fraction) if fraction else 0
    clock = time(int(match["h"]), int(match["m"]), int(match["s"] or 0), tzinfo=zone)
    day = start.astimezone(zone).date()
    first = _since(start, datetime.combine(day, clock)) + nanos
    if first < 0 and first + 86_400 * SECOND <= duration:
        return first + 86_400 * SECOND  # a run that crosses midnight reaches it the next day
    return first


def parse_instant(text: str, start: datetime, duration: int) -> int:
    """Virtual nanoseconds from ``start`` for ``text`` (see the module's forms); it may lie
    outside ``[0, duration]``: callers that need an instant of the run check that
    (:func:`within_run`). :class:`InstantError` for text that is no instant, or one
    beyond what an int64 nanosecond clock holds."""
    t = _parse(text, start, duration)
    if abs(t) > MAX_NS:
        raise InstantError(f"{text!r} is beyond the virtual clock (about 292 years either side of the start)")
    return t


def _parse(text: str, start: datetime, duration: int) -> int:
    given = text.strip()
    if given == "end":
        return duration
    if given == "start":
        return 0
    if _NUMBER.fullmatch(given):
        seconds = float(given)
        if not math.isfinite(seconds) or abs(seconds) * SECOND > MAX_NS:
            raise InstantError(f"{text!r} is beyond the virtual clock")
        return round(seconds * SECOND)
    clock = _TIME_OF_DAY.fullmatch(given)
    if clock is not None:
        return _time_of_day(clock, start, duration)
    if "T" in given.upper() and "-" in given[:8]:
        try:
            moment = parse_rfc3339(given.upper())
        except ValueError as exc:
            raise InstantError(f"{text!r} is not RFC 3339: {exc}") from None
        return _since(start, moment)
    try:
        return parse_duration(given)
    except DurationError:
        raise InstantError(f"{text!r} is none of {FORMS}") from None


def within_run(text: str, start: datetime, duration: int) -> int:
    """:func:`parse_instant`, refused (with the run's span in clock time) outside the run."""
    t = parse_instant(text, start, duration)
    if not 0 <= t <= duration:
        end = start + timedelta(microseconds=duration // 1000)
        span = f"{start:%Y-%m-%dT%H:%M:%SZ} to {end:%Y-%m-%dT%H:%M:%SZ}, 0s to {format_duration(duration)}"
        raise InstantError(f"{text!r} is outside the run ({span}, or end)")
    return t

"""Go durations (``time.ParseDuration`` / ``Duration.String``) in integer nanoseconds.

Virtual time everywhere in ledgerlet is an integer count of nanoseconds since the
scenario's start, so that sums of grace periods and intervals never drift.
"""

from __future__ import annotations

import math
from typing import Final

__all__ = ["DurationError", "format_duration", "parse_duration", "seconds", "to_seconds"]

NS: Final = 1
US: Final = 1_000
MS: Final = 1_000_000
SECOND: Final = 1_000_000_000
MINUTE: Final = 60 * SECOND
HOUR: Final = 60 * MINUTE

_UNITS: Final[dict[str, int]] = {
    "ns": NS,
    "us": US,
    "\u00b5s": US,
    "\u03bcs": US,
    "ms": MS,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_MAX: Final = 2**63 - 1


class DurationError(ValueError):
    """A string ``time.ParseDuration`` refuses; the message is Go's."""


def parse_duration(text: str) -> int:
    """``time.ParseDuration``: ``"1h30m"``, ``"1.5s"``, ``"-10s"``, ``"0"`` -> nanoseconds."""
    orig = text
    neg = False
    if text and text[0] in "+-":
        neg = text[0] == "-"
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise DurationError(f'time: invalid duration "{orig}"')
    total = 0
    while text:
        i = 0
        while i < len(text) and text[i].isdigit() and text[i].isascii():
            i += 1
        whole = text[:i]
        text = text[i:]
        frac = ""
        if text.startswith("."):
            text = text[1:]
            j = 0
            while j < len(text) and text[j].isdigit() and text[j].isascii():
                j += 1
            frac = text[:j]
            text = text[j:]
        if not whole and not frac:
            raise DurationError(f'time: invalid duration "{orig}"')
        k = 0
        while k < len(text) and text[k] != "." and not (text[k].isdigit() and text[k].isascii()):
            k += 1
        unit = text[:k]
        text = text[k:]
        if not unit:
            raise DurationError(f'time: missing unit in duration "{orig}"')
        if unit not in _UNITS:
            raise DurationError(f'time: unknown unit "{unit}" in duration "{orig}"')
        scale = _UNITS[unit]
        value = int(whole or "0") * scale
        if frac:
            # Go truncates the fractional part towards zero at nanosecond precision.
            value += int(frac) * scale // 10 ** len(frac)
        total += value
        if total > _MAX:
            raise DurationError(f'time: invalid duration "{orig}"')
    return -total if neg else total


def seconds(value: float) -> int:
    """Seconds (as scenario files write them) to nanoseconds, rounded to the nearest ns.

    Numbers have the same bounds as duration strings (Go's int64 nanoseconds, about 292
    years): NaN, infinities and anything larger are refused, never carried into a run."""
    # (an int is compared as an int: one of 401 digits has no float, math.isfinite raised)
    if (not isinstance(value, int) and not math.isfinite(value)) or abs(value) * SECOND > _MAX:
        shown = (
            repr(value)
            if len(repr(value)) <= 30
            else f"a number of {len(repr(value)):,} characters ({repr(value)[:12]}...)"
        )
        raise DurationError(f"{shown} seconds is not a duration (at most {_MAX // SECOND:,} seconds either way)")
    return round(value * SECOND)


def to_seconds(ns: int) -> float:
    return ns / SECOND


def format_duration(ns: int) -> str:
    """``Duration.String()``: ``1h30m0s``, ``1.5s``, ``300ms``, ``0s``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < SECOND:
        for unit, size in (("ms", MS), ("\u00b5s", US), ("ns", NS)):
            if u >= size:
                return sign + _frac(u, size) + unit
    hours, rem = divmod(u, HOUR)
    minutes, rem = divmod(rem, MINUTE)
    out = _frac(rem, SECOND) + "s"
    if hours or minutes:
        out = f"{minutes}m" + out
    if hours:
        out = f"{hours}h" + out
    return sign + out


def _frac(value: int, size: int) -> str:
    whole, rest = divmod(value, size)
    if not rest:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}." + f"{rest:0{digits}d}".rstrip("0")

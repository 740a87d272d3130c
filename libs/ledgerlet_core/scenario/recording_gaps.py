"""Recordings far apart in time, refused before they become a scenario.

An import's offsets are exact: a 2018 summary among 2021 ones makes a 1,384-day
scenario whose run then steps through every housekeeping interval in between. Pieces
taken that far apart are almost always a mix-up (files of two incidents in one
directory), so the widest gap is named, with the files on either side of it; an explicit
flag (``ledgerlet import --allow-gaps``) takes them anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

from ledgerlet_core.model.errors import InputError

#: the widest gap between consecutive recordings an import takes without being told to
MAX_GAP: Final = timedelta(hours=1)


def gap_text(delta: timedelta) -> str:
    """``1,384 days 2 h``, ``3 h 20 min``, ``75 s``: as a person reads a gap."""
    total = int(delta.total_seconds())
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days:,} day{'s' if days != 1 else ''}" + (f" {hours} h" if hours else "")
    if hours:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    if minutes:
        return f"{minutes} min" + (f" {secs} s" if secs else "")
    return f"{secs} s"


def check_gaps(timed: Sequence[tuple[datetime, str]], max_gap: timedelta | None = MAX_GAP) -> None:
    """``timed``: when each recording was taken and its file, in time order. An
    :class:`InputError` names the widest gap above ``max_gap`` (None: any gap is taken)."""
    if max_gap is None or len(timed) < 2:
        return
    widest = max(range(1, len(timed)), key=lambda i: timed[i][0] - timed[i - 1][0])
    (before, before_file), (after, after_file) = timed[widest - 1], timed[widest]
    gap = after - before
    if gap <= max_gap:
        return
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    raise InputError(
        f"the recordings are {gap_text(gap)} apart: {before_file} was taken at {before.strftime(stamp)} and the next, "
        f"at {after.strftime(stamp)} (more than {gap_text(max_gap)} between two recordings is taken for a mix-up: "
        f"the scenario would replay every housekeeping interval in between). Import the pieces separately, or "
        f"give --allow-gaps to take them anyway",
        file=after_file,
    )

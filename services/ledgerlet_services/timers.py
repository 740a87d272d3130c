"""A service's requests for clock ticks: asked for once per instant and phase."""

from __future__ import annotations

from ledgerlet_core.contracts.internal import TimerSet
from ledgerlet_services.emitter import Emitter
from ledgerlet_services.topics import TIMERS


class Timers:
    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._asked: set[tuple[int, int]] = set()

    def want(self, at: int, phase: int, out: Emitter, purpose: str = "") -> None:
        """Ask the clock to tick at ``at`` in ``phase`` (once, however often asked)."""
        if (at, phase) in self._asked:
            return
        self._asked.add((at, phase))
        out.emit(TIMERS, TimerSet(at=at, owner=self.owner, purpose=purpose, phase=phase), stream="clock", key="clock")

    def fired(self, at: int, phase: int) -> None:
        self._asked.discard((at, phase))


def next_multiple(now: int, period: int) -> int:
    """The first multiple of ``period`` at or after ``now`` (grids start at time 0)."""
    return -(-now // period) * period

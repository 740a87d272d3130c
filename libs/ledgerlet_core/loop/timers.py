"""A loop's requests for clock ticks: asked for once per instant and phase."""

from __future__ import annotations

from ledgerlet_core.contracts.internal import TimerSet
from ledgerlet_core.contracts.order import TIMER_REQUESTS
from ledgerlet_core.loop.emitter import Emitter


class Timers:
    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._asked: set[tuple[int, int]] = set()

    def want(self, at: int, phase: int, out: Emitter) -> None:
        """Ask the clock to tick at ``at`` in ``phase`` (once, however often asked)."""
        if (at, phase) in self._asked:
            return
        self._asked.add((at, phase))
        # Named after the step, not the event that asked: several events of one step may ask
        # for the same tick, and which of them comes first depends on delivery.
        order = [*out.trigger.order[:2], out.rank, TIMER_REQUESTS + phase, at]
        out.emit(TimerSet(at=at, owner=self.owner, phase=phase), stream="clock", key="clock", order=order, causes=[])

    def fired(self, at: int, phase: int) -> None:
        self._asked.discard((at, phase))


def next_multiple(now: int, period: int) -> int:
    """The first multiple of ``period`` at or after ``now`` (grids start at time 0)."""
    return -(-now // period) * period

"""A loop's requests for clock ticks: asked for once per instant and phase until it
fires (in a run ordered by node, a node-scoped loop's: once per step)."""

from __future__ import annotations

from ledgerlet_core.contracts.internal import TimerSet
from ledgerlet_core.contracts.order import TIMER_REQUESTS
from ledgerlet_core.loop.emitter import Emitter


class Timers:
    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._asked: set[tuple[int, int]] = set()
        #: ordered by node: (at, phase, step's root) asked, by the step's virtual time
        self._asked_by_step: dict[int, set[tuple[int, int, int, int]]] = {}

    def want(self, at: int, phase: int, out: Emitter) -> None:
        """Ask the clock to tick at ``at`` in ``phase`` (once, however often asked).

        Ordered by node (contracts/order.py), once per step instead: a request asked
        for in a step by members that each own some nodes then has the same id, and
        the same content, whichever of them asks."""
        step = out.trigger.order
        if out.place is not None:
            asked = self._asked_by_step.setdefault(out.trigger.t, set())
            if (at, phase, step[0], step[1]) in asked:
                return
            asked.add((at, phase, step[0], step[1]))
        elif (at, phase) in self._asked:
            return
        else:
            self._asked.add((at, phase))
        # Named after the step, not the event that asked: several events of one step may ask
        # for the same tick, and which of them comes first depends on delivery.
        order = [*step[:2], out.rank, TIMER_REQUESTS + phase, at]
        out.emit(TimerSet(at=at, owner=self.owner, phase=phase), stream="clock", key="clock", order=order, causes=[])

    def fired(self, at: int, phase: int) -> None:
        self._asked.discard((at, phase))
        for t in [t for t in self._asked_by_step if t < at]:
            del self._asked_by_step[t]


def next_multiple(now: int, period: int) -> int:
    """The first multiple of ``period`` at or after ``now`` (grids start at time 0)."""
    return -(-now // period) * period

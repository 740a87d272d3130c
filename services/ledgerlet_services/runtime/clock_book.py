"""The virtual clock's book of what the loops asked for: which phase to tick next at an
instant, and when the next instant is.

Kept by the scenario driver of the distributed stack (runtime/driver.py) and by the
embedded engine (runtime/engine.py) alike, so both tick the same rounds in the same
phases: at an instant the clock ticks, lowest phase first, until nothing more is due
there; a tick of a phase answers the requests made before its round, not those its own
handling makes.
"""

from __future__ import annotations

from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import TimerSet


class ClockBook:
    def __init__(self) -> None:
        #: instant -> phase -> the last round at that instant whose handling asked for it
        #: (-1: asked before the instant)
        self._timers: dict[int, dict[int, int]] = {}

    def asked(self, env: Envelope, data: TimerSet) -> None:
        """A loop's request for a tick (a driver that takes over reads at once what
        several rounds asked for)."""
        by = env.order[1] if env.t == data.at and env.order[0] == order.CLOCK else -1
        asked = self._timers.setdefault(data.at, {})
        asked[data.phase] = max(asked.get(data.phase, -1), by)

    def next_instant(self) -> int | None:
        """The earliest instant anything was asked for."""
        return min(self._timers) if self._timers else None

    def phase(self, now: int, rnd: int, earlier: list[int] | None = None) -> int | None:
        """The phase of round ``rnd`` at ``now`` (None: nothing more is due there), the
        requests it answers struck off. ``earlier``: the phases of the rounds an earlier
        driver of the run ticked at ``now``, ticked again as they were."""
        due = sorted({p for at, phases in self._timers.items() if at <= now for p in phases})
        if earlier is not None and rnd < len(earlier):
            phase = earlier[rnd]
        elif not due:
            return None
        else:
            phase = due[0]
        for at in [at for at in self._timers if at <= now]:
            asked = self._timers[at]
            if asked.get(phase, rnd) < rnd:
                del asked[phase]
            if not asked:
                del self._timers[at]
        return phase

"""An emitter for core tests: what a decision module emitted, as (type, node, pod, data)."""

from __future__ import annotations

from typing import Any

import msgspec

from ledgerlet_core.contracts.internal import ClockTick
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.model.duration import SECOND


def emitter(at: float = 0, rank: int = 99) -> Emitter:
    """An emitter handling a clock tick at ``at`` seconds."""
    tick = make_envelope(ClockTick(), run="test", t=round(at * SECOND), order=[1, 0], stream="clock")
    return Emitter(tick, rank)


def decided(out: Emitter) -> list[tuple[str, str | None, str | None, dict[str, Any]]]:
    """What was emitted, timer requests left out."""
    return [
        (e.envelope.type, e.envelope.node, e.envelope.pod, msgspec.json.decode(e.envelope.data))
        for e in out.out
        if e.envelope.type != "TimerSet"
    ]


def asked(out: Emitter) -> list[float]:
    """The instants (seconds) ticks were asked for."""
    return [msgspec.json.decode(e.envelope.data)["at"] / SECOND for e in out.out if e.envelope.type == "TimerSet"]

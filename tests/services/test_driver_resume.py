"""A driver that takes over a run whose driver was killed ticks as the first one did.

A tick's id is its instant and round, not its phase, and services skip ids they have
handled: a second driver must tick each round the first one ticked with the same phase,
and must not fold into one the requests several rounds made for the same phase (it reads
them all at once, where the first driver read them round by round)."""

from __future__ import annotations

import msgspec

from ledgerlet_bus.memory import MemoryBus
from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.envelope import decode_envelope, encode_envelope
from ledgerlet_core.contracts.inputs import ScenarioStarted
from ledgerlet_core.contracts.internal import PHASE_HOUSEKEEPING, PHASE_TIMERS, ClockTick, TimerSet
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_core.model.duration import SECOND
from ledgerlet_services.runtime.driver import Driver
from ledgerlet_services.runtime.topic_specs import CLOCK, TIMERS, topic_specs

T = 5 * SECOND
RUN = "r"


async def _published(bus: MemoryBus, ticks: list[tuple[int, int]], asked: list[tuple[list[int], int]]) -> None:
    """What a first driver and the services left: its ticks at T (round, phase), and the
    timers asked for (the order of the step that asked, the phase)."""
    await bus.create_topics(topic_specs(1))
    producer = bus.producer()
    for rnd, phase in ticks:
        tick = make_envelope(ClockTick(round=rnd, phase=phase), run=RUN, t=T, order=[order.CLOCK, rnd], stream="c")
        await producer.send(CLOCK, encode_envelope(tick), key=b"clock")
    for n, (step, phase) in enumerate(asked):
        at_step = T if step[0] == order.CLOCK else 0
        timer = make_envelope(
            TimerSet(at=T, owner="x", phase=phase), run=RUN, t=at_step, order=[*step, 99, n], stream="timers"
        )
        await producer.send(TIMERS, encode_envelope(timer), key=b"clock")
    await producer.flush()


async def _ticks_at_t(bus: MemoryBus, resume: bool) -> list[tuple[int, int]]:
    started = make_envelope(
        ScenarioStarted(name="s", start="1970-01-01T00:00:00Z", duration=10 * SECOND),
        run=RUN,
        t=0,
        order=[order.INPUTS, 0],
        stream="scenario",
    )
    driver = Driver(bus, [started], run=RUN, duration=10 * SECOND, groups={}, resume=resume)
    await driver.run()
    out = []
    for rec in await bus.consumer("probe", [CLOCK], whole=True).getmany(timeout=0, max_records=1000):
        env = decode_envelope(rec.value)
        if env.type == "ClockTick" and env.t == T:
            tick = msgspec.json.decode(env.data, type=ClockTick)
            out.append((tick.round, tick.phase))
    return out


async def test_a_driver_taking_over_ticks_every_round_the_services_asked_for() -> None:
    bus = MemoryBus(retain=True)
    # asked before T (an input), by round 0 and by round 1 at T; the first driver ticked
    # rounds 0 and 1 (each a timers tick) and was killed before round 2
    asked = [([order.INPUTS, 0], PHASE_TIMERS), ([order.CLOCK, 0], PHASE_TIMERS), ([order.CLOCK, 1], PHASE_TIMERS)]
    asked.append(([order.INPUTS, 1], PHASE_HOUSEKEEPING))
    await _published(bus, [(0, PHASE_TIMERS), (1, PHASE_TIMERS)], asked)
    ticks = await _ticks_at_t(bus, resume=True)
    # its own ticks: rounds 0 and 1 again as they were, then round 2 (asked by round 1),
    # then housekeeping
    assert ticks[2:] == [(0, PHASE_TIMERS), (1, PHASE_TIMERS), (2, PHASE_TIMERS), (3, PHASE_HOUSEKEEPING)]


async def test_a_first_driver_answers_each_request_once() -> None:
    bus = MemoryBus(retain=True)
    await _published(bus, [], [([order.INPUTS, 0], PHASE_TIMERS), ([order.INPUTS, 1], PHASE_HOUSEKEEPING)])
    assert await _ticks_at_t(bus, resume=False) == [(0, PHASE_TIMERS), (1, PHASE_HOUSEKEEPING)]

"""The scenario driver: the virtual clock.

It publishes the inputs of each instant, then ticks the clock in phases until no
service wants another tick at that instant, waiting after every step until the bus is
idle (every service group has committed everything it reads). Time therefore advances
only when all consequences of the present are folded in, and the results do not
depend on how fast anything runs: the same scenario gives the same decisions on the
in-memory bus and over Kafka.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ledgerlet_bus.api import Bus, Consumer, Producer
from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.envelope import Envelope, decode_envelope, encode_envelope
from ledgerlet_core.contracts.internal import ClockTick
from ledgerlet_core.contracts.registry import decode_data, make_envelope
from ledgerlet_services.runtime.causal_buffer import next_offsets
from ledgerlet_services.runtime.clock_book import ClockBook
from ledgerlet_services.runtime.input_stream import InputStream
from ledgerlet_services.runtime.telemetry import Telemetry
from ledgerlet_services.runtime.topic_specs import CLOCK, INPUTS, TIMERS

log = logging.getLogger(__name__)

CLOCK_GROUP = "virtual-clock"


@dataclass
class DriverStats:
    instants: int = 0
    ticks: int = 0
    inputs: int = 0
    virtual_time: int = 0
    #: the ids of every input, tick and end this driver published: what the store must
    #: hold once the run is over (runtime/run_completeness.py)
    published: list[str] = field(default_factory=list)


class Driver:
    def __init__(
        self,
        bus: Bus,
        feed: Iterable[Envelope],
        *,
        run: str,
        duration: int,
        groups: Mapping[str, Sequence[str]],
        followers: Mapping[str, Sequence[str]] | None = None,
        max_follower_lag: int = 20_000,
        max_backlog_bytes: int | None = None,
        progress: Callable[[int], None] | None = None,
        idle_timeout: float = 120.0,
        telemetry: Telemetry | None = None,
        resume: bool = False,
    ) -> None:
        """``resume``: the run may have been driven before (a driver killed part way):
        the ticks it published are read first and published again as they were."""
        self.bus = bus
        self.resume = resume
        #: inputs not published yet: each is let go once published (a fleet's feed is
        #: hundreds of thousands of encoded objects, and the bus has its own copy)
        self.feed = InputStream(feed)
        self.run_id = run
        self.duration = duration
        self.groups = groups
        self.followers = followers or {}
        self.max_follower_lag = max_follower_lag
        #: an instant's inputs are published this many bytes at a time, each once every
        #: group (followers too) has read the ones before; None: all at once. A bus that
        #: holds what it carries in memory sets it, or a fleet's starting state would be
        #: there whole, encoded, before the first service read any of it. (What the
        #: followers still trail from earlier instants comes on top: ``max_follower_lag``.)
        self.max_backlog_bytes = max_backlog_bytes
        self.progress = progress
        self.idle_timeout = idle_timeout
        self.telemetry = telemetry or Telemetry.disabled()
        self.stats = DriverStats()
        #: what the loops asked for (runtime/clock_book.py)
        self.book = ClockBook()
        # A group per driver, read from the start: a stack serves run after run, and a driver
        # that takes over a run whose driver was killed must learn every timer the services
        # asked for before (they will not ask again: what they handled is skipped as seen).
        self._timer_group = f"{CLOCK_GROUP}.{run}.{uuid.uuid4().hex[:12]}"
        #: instant -> the phase of each round an earlier driver of this run ticked there
        self._ticked: dict[int, list[int]] = {}

    async def run(self) -> None:
        producer = self.bus.producer()
        timers = self.bus.consumer(self._timer_group, [TIMERS], whole=True)
        try:
            if self.resume:
                await self._read_earlier_ticks()
            feed = self.feed
            while True:
                next_input = feed.peek().t if feed else None
                next_timer = self.book.next_instant()
                candidates = [x for x in (next_input, next_timer) if x is not None]
                if not candidates:
                    break
                now = min(candidates)
                if now > self.duration:
                    break
                self.stats.instants += 1
                if await self._publish_inputs(now, producer):
                    await self._settle(timers)
                await self._tick(now, producer, timers)
                await self._keep_followers_close()
                self.stats.virtual_time = now
                if self.progress is not None:
                    self.progress(now)
            end = make_envelope(
                ev.ScenarioEnded(duration=self.duration),
                run=self.run_id,
                t=self.duration,
                order=[order.END],
                stream="scenario",
            )
            await producer.send(
                INPUTS, encode_envelope(end), key=b"cluster", headers=self.telemetry.publishing("driver", end)
            )
            self.stats.published.append(end.id)
            await producer.flush()
            await self._settle(timers)
            self.stats.virtual_time = self.duration
            if self.progress is not None:
                self.progress(self.duration)
        finally:
            await producer.close()
            await timers.close()

    async def _publish_inputs(self, now: int, producer: Producer) -> int:
        """Publish the inputs of ``now``, letting each go once sent (the bus has it)."""
        published = backlog = 0
        while self.feed and self.feed.peek().t == now:
            env = self.feed.take()
            value = encode_envelope(env)
            if self.max_backlog_bytes is not None and backlog and backlog + len(value) > self.max_backlog_bytes:
                await producer.flush()
                await self.bus.wait_idle(self.groups, timeout=self.idle_timeout)
                await self._followers_caught_up()
                backlog = 0
            await producer.send(
                INPUTS, value, key=(env.node or "cluster").encode(), headers=self.telemetry.publishing("driver", env)
            )
            self.stats.published.append(env.id)
            backlog += len(value)
            published += 1
        if published:
            await producer.flush()
            self.stats.inputs += published
        return published

    async def _keep_followers_close(self) -> None:
        """Groups that only record (the store) may lag, but not without bound."""
        if self.followers and await self.bus.lag(self.followers) > self.max_follower_lag:
            await self._followers_caught_up()

    async def _followers_caught_up(self) -> None:
        """Wait until the recording groups have read everything (at least ten minutes of
        patience: a store that restarts holds them up, not the run's own work)."""
        if self.followers:
            await self.bus.wait_idle(self.followers, timeout=max(self.idle_timeout, 600.0))

    async def _read_earlier_ticks(self) -> None:
        """The ticks an earlier driver of this run published (a tick's id is its instant and
        round, not its phase: a driver that takes over must tick each round it ticked with
        the same phase, or the services would skip a tick they never had, as seen)."""
        group = f"{CLOCK_GROUP}.ticks.{self.run_id}.{uuid.uuid4().hex[:12]}"
        clock = self.bus.consumer(group, [CLOCK], whole=True)
        try:
            ticks: dict[int, dict[int, int]] = {}
            while await self.bus.lag({group: [CLOCK]}):
                records = await clock.getmany(timeout=0.2, max_records=10_000)
                for r in records:
                    env = decode_envelope(r.value)
                    if env.type == "ClockTick" and env.run == self.run_id:
                        tick: ClockTick = decode_data(env)
                        ticks.setdefault(env.t, {})[tick.round] = tick.phase
                if records:
                    await clock.commit(next_offsets(records))
            self._ticked = {t: [rounds[r] for r in sorted(rounds)] for t, rounds in ticks.items()}
        finally:
            await clock.close()

    async def _tick(self, now: int, producer: Producer, timers: Consumer) -> None:
        """Tick at ``now``, lowest phase first, until nothing more is due at ``now`` (the
        rounds an earlier driver of the run ticked here first, as it ticked them)."""
        rnd = 0
        earlier = self._ticked.pop(now, [])
        while True:
            phase = self.book.phase(now, rnd, earlier)
            if phase is None:
                return
            tick = make_envelope(
                ClockTick(round=rnd, phase=phase), run=self.run_id, t=now, order=[order.CLOCK, rnd], stream="clock"
            )
            await producer.send(
                CLOCK, encode_envelope(tick), key=b"clock", headers=self.telemetry.publishing("clock", tick)
            )
            self.stats.published.append(tick.id)
            await producer.flush()
            self.stats.ticks += 1
            rnd += 1
            await self._settle(timers)

    async def _settle(self, timers: Consumer) -> None:
        """Wait until every service has handled everything, then collect timer requests.

        Once the services are idle nothing more is written to the timers topic, so
        reading until this driver's own group has committed its end reads them all."""
        await self.bus.wait_idle(self.groups, timeout=self.idle_timeout)
        mine = {self._timer_group: [TIMERS]}
        while await self.bus.lag(mine):
            records = await timers.getmany(timeout=0.05, max_records=10_000)
            for r in records:
                env = decode_envelope(r.value)
                if env.type == "TimerSet" and env.run == self.run_id:
                    self.book.asked(env, decode_data(env))
            if records:
                await timers.commit(next_offsets(records))

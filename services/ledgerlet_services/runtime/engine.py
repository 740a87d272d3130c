"""The embedded engine: every control loop of a run in one process, over one cluster view,
each event dispatched once, in causal order.

The distributed stack runs each loop as a service of its own, reading its topics at its
own pace and folding a cluster view of its own (runtime/shell.py). In one process none
of that is needed: the engine keeps the step's events in a queue ordered by ``(t,
order)``, folds each one into the run's single cluster view, hands it to every loop that
reads its topic (additions folded before their handlers, removals after, as
:class:`~ledgerlet_core.cluster.view.ClusterView` has it), queues what they emit, and
stores everything as the recorder would. The virtual clock is the driver's
(runtime/clock_book.py): an instant's inputs, then ticks in phases until nothing more is
due there. Handlers never depend on the order of a step's events beyond their causal
order (the shell holds events back until their step is handled, and a restart folds the
topics again in ``(t, order)``), so the engine derives what the services derive, event
for event, id for id: the golden logs, and every example run both ways on Kafka and
PostgreSQL, say so.

An input batch's members are handed out one after another at the batch's place, as the
shell does (no input of the step can fall between them). Stored events are appended in
the background while the loops go on, one append at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.cluster.view import ClusterView, folds_event
from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.batch import BATCH, expand
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import ClockTick, TimerSet
from ledgerlet_core.contracts.registry import decode_data, make_envelope
from ledgerlet_core.contracts.topics import topic_of
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_services.loops.base import Handler, Loop, fold_decoder
from ledgerlet_services.runtime.catalog import CONTROL_LOOPS
from ledgerlet_services.runtime.clock_book import ClockBook
from ledgerlet_services.runtime.driver import DriverStats
from ledgerlet_services.runtime.input_stream import InputStream
from ledgerlet_services.runtime.outgoing import routed
from ledgerlet_services.runtime.recorder import NAME as RECORDER
from ledgerlet_services.runtime.recorder import STOP_GRACE, EventSink, StoreUnwritable, append_waiting, stored_form
from ledgerlet_services.runtime.telemetry import Telemetry

Headers = tuple[tuple[str, bytes], ...]

#: stored events handed to the store at a time, at most, and their bytes (a fleet's input
#: batches hold hundreds of pods each: the store's rows for them are made all at once)
APPEND_EVERY: Final = 4000
APPEND_BYTES: Final = 4 << 20
#: events dispatched between two turns given to the event loop (the store's appends go on
#: in their thread meanwhile; a signal is noticed)
YIELD_EVERY: Final = 2000


class LoopFailed(RuntimeError):
    """A control loop raised while handling an event: the run cannot go on."""

    def __init__(self, loop: str, cause: BaseException) -> None:
        super().__init__(f"{loop} stopped: {cause!r}")
        self.loop = loop


@dataclass
class EngineOutcome:
    driver: DriverStats
    events_stored: int
    #: by loop: events handed to it, and what it emitted
    service_events: dict[str, int] = field(default_factory=dict)
    service_out: dict[str, int] = field(default_factory=dict)


class Engine:
    def __init__(
        self,
        feed: Iterable[Envelope],
        sink: EventSink,
        *,
        run: str,
        duration: int,
        progress: Callable[[int], None] | None = None,
        telemetry: Telemetry | None = None,
        quiet_nodes: frozenset[str] = frozenset(),
        full_observations: bool = False,
        loops: Sequence[type[Loop]] = CONTROL_LOOPS,
        store_wait: float | None = None,
        decoding: SharedDecoding | None = None,
    ) -> None:
        """``store_wait``: seconds the store may refuse every append before the run fails
        (:class:`~ledgerlet_services.runtime.recorder.StoreUnwritable`); None: for ever.
        ``decoding``: objects decoded for this run already (the scenario's, as loaded:
        runtime/embedded.py); else the engine's own."""
        self.run_id = run
        self.duration = duration
        self.sink = sink
        self.progress = progress
        self.telemetry = telemetry or Telemetry.disabled()
        self.full_observations = full_observations
        self.store_wait = store_wait
        self._never = asyncio.Event()
        #: inputs not dispatched yet, in order (each let go once handed out; a scenario's
        #: made as they are taken: runtime/input_stream.py)
        self.feed = InputStream(feed)
        self.view = ClusterView(decoding if decoding is not None else SharedDecoding())
        self.loops = [kind(self.view) for kind in loops]
        if quiet_nodes:
            for loop in self.loops:
                loop.set_quiet_nodes(quiet_nodes)
        self.book = ClockBook()
        self.stats = DriverStats()
        self.events_in: Counter[str] = Counter()
        self.events_out: Counter[str] = Counter()
        self.stored = 0
        #: the step's events not dispatched yet: (t, order, arrival, envelope, headers)
        self._queue: list[tuple[int, tuple[int, ...], int, Envelope, Headers]] = []
        self._arrivals = 0
        self._readers: dict[str, list[Loop]] = {}
        self._handlers: dict[str, list[tuple[Loop, Handler]]] = {}
        #: no telemetry to feed: each event goes the short way (:meth:`_handle_plain`)
        self._plain = not (self.telemetry.tracing or self.telemetry.metering)
        #: the loop a failure to fold an event of a type is told of (the first that reads it)
        self._failing: dict[str, str] = {}
        self._pending: list[tuple[Envelope, Headers]] = []
        self._pending_bytes = 0
        self._append: asyncio.Task[int] | None = None
        self._dispatched = 0

    # -- the clock -----------------------------------------------------------------------
    async def run(self) -> EngineOutcome:
        try:
            while True:
                next_input = self.feed.peek().t if self.feed else None
                next_timer = self.book.next_instant()
                candidates = [x for x in (next_input, next_timer) if x is not None]
                if not candidates or min(candidates) > self.duration:
                    break
                now = min(candidates)
                self.stats.instants += 1
                await self._settle(inputs_at=now)
                rnd = 0
                while (phase := self.book.phase(now, rnd)) is not None:
                    tick = make_envelope(
                        ClockTick(round=rnd, phase=phase),
                        run=self.run_id,
                        t=now,
                        order=[order.CLOCK, rnd],
                        stream="clock",
                    )
                    self._push(tick, self.telemetry.publishing("clock", tick))
                    self.stats.ticks += 1
                    rnd += 1
                    await self._settle()
                self.stats.virtual_time = now
                self.view.decoded.unseed()  # (the starting objects are met: see Decoded.seed)
                if self.progress is not None:
                    self.progress(now)
            end = make_envelope(
                ev.ScenarioEnded(duration=self.duration),
                run=self.run_id,
                t=self.duration,
                order=[order.END],
                stream="scenario",
            )
            self._push(end, self.telemetry.publishing("driver", end))
            await self._settle()
            self.stats.virtual_time = self.duration
            if self.progress is not None:
                self.progress(self.duration)
            await self._flush(final=True)
        except LoopFailed:
            # what was derived before the failure is stored, as the recorder would have it
            with contextlib.suppress(Exception):
                await self._flush(final=True)
            raise
        except StoreUnwritable as exc:  # (as the recorder's service would stop)
            raise LoopFailed(RECORDER, exc) from exc
        except asyncio.CancelledError:
            # interrupted: what the store has is kept, the rest left for a run completed
            # later with this id; a run that stored nothing yet stores its start
            if self._append is None and not self.stored and self._pending:
                batch, self._pending = self._pending[:APPEND_EVERY], []
                self._append = asyncio.create_task(self._store(batch))
            raise
        finally:
            await self._let_append_finish()
        return EngineOutcome(
            driver=self.stats,
            events_stored=self.stored,
            service_events=dict(self.events_in),
            service_out=dict(self.events_out),
        )

    # -- the step ------------------------------------------------------------------------
    def _push(self, env: Envelope, headers: Headers = ()) -> None:
        self._arrivals += 1
        heapq.heappush(self._queue, (env.t, tuple(env.order), self._arrivals, env, headers))

    async def _settle(self, *, inputs_at: int | None = None) -> None:
        """Dispatch the step's events until none is left (what they derive comes in too);
        ``inputs_at``: the instant's inputs first, each taken from the feed only once what
        comes before it is dispatched (a fleet's starting state is never queued whole)."""
        queue, feed = self._queue, self.feed
        while True:
            if inputs_at is not None and feed and feed.peek().t == inputs_at:
                nxt = feed.peek()
                if not queue or (nxt.t, tuple(nxt.order)) < queue[0][:2]:
                    self._push(self._take_input(), self.telemetry.publishing("driver", nxt))
                    self.stats.inputs += 1
            if not queue:
                break
            _, _, _, env, headers = heapq.heappop(queue)
            for _ in self._dispatch(env, headers):  # (a long pass gives the event loop turns)
                await asyncio.sleep(0)
            self._dispatched += 1
            if self._dispatched % YIELD_EVERY == 0 or self._full():
                await self._flush()

    def _take_input(self) -> Envelope:
        """The next input; one that cannot be made (a scenario's are made as they are
        taken: runtime/input_stream.py) fails the run as a loop's failure does, so it is
        stored as failed, not left without an end."""
        try:
            return self.feed.take()
        except Exception as exc:
            raise LoopFailed("driver", exc) from exc

    def _dispatch(self, env: Envelope, headers: Headers) -> Iterator[None]:
        """Store, then hand out ``env``; yields while a long pass is under way."""
        self._pending.append((env, headers))
        self._pending_bytes += len(env.data)
        if env.type == "TimerSet":
            data: TimerSet = decode_data(env)
            self.book.asked(env, data)
            return
        if env.type == BATCH:
            for member in expand(env):  # (one after another, at the batch's place)
                yield from self._handle(member, headers)
            return
        yield from self._handle(env, headers)

    def _handle(self, env: Envelope, headers: Headers) -> Iterator[None]:
        if self._plain:
            return self._handle_plain(env)
        return self._handle_watched(env, headers)

    def _handle_plain(self, env: Envelope) -> Iterator[None]:
        """:meth:`_handle_watched` without telemetry: the hot path (a fleet's starting pods
        are hundreds of thousands of events), with each type's handlers looked up once."""
        handlers = self._handlers.get(env.type)
        if handlers is None:
            readers = self._readers_of(env)
            handlers = self._handlers[env.type] = [
                (loop, h) for loop in readers if (h := loop.handler(env.type)) is not None
            ]
        memo: dict[Any, Any] = {}
        data: Any = None
        folds = folds_event(env)
        if folds:
            decode = fold_decoder(env.type)
            try:
                data = memo[decode] = decode(env.data)
                self.view.arrive(env, data)
            except Exception as exc:  # (as the first loop to fold it would have failed)
                raise LoopFailed(self._failing[env.type], exc) from exc
        counts, push = self.events_in, self._push
        for loop, (method, decoder, when) in handlers:
            if when is not None and not when(env):
                continue
            out = Emitter(env, loop.rank, place=loop.node_place())
            try:
                mine = memo.get(decoder)
                if mine is None:
                    mine = memo[decoder] = decoder(env.data)
                steps = method(env, mine, out)
                if steps is not None:
                    yield from steps
            except Exception as exc:
                raise LoopFailed(loop.name, exc) from exc
            counts[loop.name] += 1
            for emitted in out.out:
                self.events_out[loop.name] += emitted.events
                push(emitted.envelope)
        if folds:
            self.view.settle(env, data)

    def _readers_of(self, env: Envelope) -> list[Loop]:
        """The loops that read ``env``'s topic and have a handler of its type."""
        readers = self._readers.get(env.type)
        if readers is None:
            topic = topic_of(env.type, env.kind)
            readers = [loop for loop in self.loops if topic in loop.topics]
            self._failing[env.type] = readers[0].name if readers else "engine"
            readers = self._readers[env.type] = [loop for loop in readers if loop.handles(env.type)]
        return readers

    def _handle_watched(self, env: Envelope, headers: Headers) -> Iterator[None]:
        """Handle ``env``, with a span per loop and the services' metrics."""
        readers = self._readers_of(env)
        memo: dict[Any, Any] = {}
        folds = folds_event(env)
        data: Any = None
        if folds:
            decode = fold_decoder(env.type)
            try:
                data = memo[decode] = decode(env.data)
                self.view.arrive(env, data)
            except Exception as exc:  # (as the first loop to fold it would have failed)
                raise LoopFailed(self._failing[env.type], exc) from exc
        telemetry = self.telemetry
        tracing, metering = telemetry.tracing, telemetry.metering
        for loop in readers:
            out = Emitter(env, loop.rank, place=loop.node_place())
            began = time.perf_counter() if metering else 0.0
            out_headers: Headers = ()
            try:
                if tracing:
                    with telemetry.handling(loop.name, env, headers) as out_headers:
                        yield from loop.react(env, out, memo) or ()
                else:
                    yield from loop.react(env, out, memo) or ()
            except Exception as exc:
                raise LoopFailed(loop.name, exc) from exc
            self.events_in[loop.name] += 1
            if metering:  # (counted as each service counts them: in, out, and how long it took)
                telemetry.events_in(loop.name, 1)
                telemetry.batch_done(loop.name, [routed(e) for e in out.out], time.perf_counter() - began)
            for emitted in out.out:
                self.events_out[loop.name] += emitted.events
                self._push(emitted.envelope, out_headers)
        if folds:
            self.view.settle(env, data)

    # -- the store -------------------------------------------------------------------------
    async def _flush(self, *, final: bool = False) -> None:
        """Hand what was dispatched to the store, one append at a time (what piles up
        meanwhile waits for the append under way past :data:`APPEND_EVERY` events), and
        give the event loop a turn; ``final``: until the store has it all."""
        while True:
            appending = self._append
            if appending is not None and (final or appending.done() or self._full()):
                # (shielded: cancelling the run must not cancel the write under way with
                # it, which cut off mid-transaction holds SQLite's write lock for good)
                self.stored += await asyncio.shield(appending)
                self._append = appending = None
            if self._pending and appending is None:
                batch, self._pending, self._pending_bytes = self._pending, [], 0
                self._append = asyncio.create_task(self._store(batch))
            if not final or self._append is None:
                break
        await asyncio.sleep(0)

    async def _let_append_finish(self) -> None:
        """Let the append under way finish (for at most ``STOP_GRACE`` seconds), however
        often the run is cancelled meanwhile: a store write cut off half way can leave its
        connection unusable, and closing the store would then never return."""
        task = self._append
        if task is None or task.done():
            return
        deadline = time.monotonic() + STOP_GRACE
        cancelled = False
        while not task.done() and (left := deadline - time.monotonic()) > 0:
            try:
                await asyncio.wait([task], timeout=left)
            except asyncio.CancelledError:
                cancelled = True
        if not task.done():
            task.cancel()
        elif not task.cancelled() and task.exception() is None:
            self.stored += task.result()
        self._append = None
        if cancelled:
            raise asyncio.CancelledError

    def _full(self) -> bool:
        return len(self._pending) >= APPEND_EVERY or self._pending_bytes >= APPEND_BYTES

    async def _store(self, batch: list[tuple[Envelope, Headers]]) -> int:
        envelopes = [stored_form(env, full=self.full_observations) for env, _ in batch]
        stored = await append_waiting(self.sink, envelopes, who=RECORDER, stop=self._never, wait=self.store_wait)
        self.telemetry.stored(RECORDER, batch)
        return stored

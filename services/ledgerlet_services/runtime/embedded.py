"""The embedded default: every service in one process, on the in-memory bus.

Same services, same shell loop, same driver as the distributed stack; only the bus is
in memory and the store defaults to a SQLite file.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ledgerlet_bus.memory import MemoryBus
from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.inputs import OBSERVATIONS_WHOLE
from ledgerlet_core.contracts.internal import RUN_COMPLETED, RUN_FAILED, RunEnded
from ledgerlet_core.contracts.registry import DECISION, make_envelope
from ledgerlet_core.loop.membership import Membership
from ledgerlet_core.model.k8s.objects import AnyObject, Node, Pod
from ledgerlet_core.scenario.feed import scenario_feed
from ledgerlet_core.scenario.load import Scenario
from ledgerlet_services.runtime.catalog import CONTROL_LOOPS
from ledgerlet_services.runtime.driver import Driver, DriverStats
from ledgerlet_services.runtime.engine import Engine, LoopFailed
from ledgerlet_services.runtime.recorder import EventSink, RecorderRunner
from ledgerlet_services.runtime.shell import ServiceRunner, SharedEnvelopes
from ledgerlet_services.runtime.telemetry import Telemetry
from ledgerlet_services.runtime.topic_specs import ALL_TOPICS, topic_specs
from ledgerlet_store.contract import EventStore, StoredEvent

#: how long a step may go on without any loop committing anything before the run is
#: declared stuck (progress, not elapsed time: a slow machine is waited out)
IDLE_TIMEOUT = 120.0

#: how many records the recorder may trail the loops by before the clock waits for it:
#: the in-memory bus keeps every record it has not stored (an observation of a 110-pod
#: node is some 60 KB)
MAX_RECORDER_LAG = 5_000


#: what a loop reads from the in-memory bus at a time: the loops then read a fleet's
#: starting state in step (a few thousand pods apart), and the envelopes they share are
#: kept that long, not for the whole fleet
FETCH_MAX_BYTES = 4 << 20

#: how much of an instant's inputs the driver puts on the in-memory bus before it waits
#: for every group to have read them (a 5,000-node fleet's starting state is ~1.3 GB encoded)
MAX_BACKLOG_BYTES = 32 << 20


class ServiceFailed(RuntimeError):
    """A service stopped with an error during the run (``outcome_stored``: the run is
    stored as failed; the store may be what failed)."""

    outcome_stored: bool = False


@dataclass
class RunResult:
    run: str
    decisions: list[StoredEvent]
    driver: DriverStats
    events_stored: int
    wall_seconds: float
    service_events: dict[str, int] = field(default_factory=dict)


def new_run_id() -> str:
    return uuid.uuid4().hex


async def run_embedded(
    scenario: Scenario,
    store: EventStore,
    *,
    run: str | None = None,
    progress: Callable[[int], None] | None = None,
    partitions: int = 4,
    full_observations: bool = False,
    telemetry: Telemetry | None = None,
    bus: MemoryBus | None = None,
    idle_timeout: float = IDLE_TIMEOUT,
    store_wait: float | None = None,
) -> RunResult:
    """``store_wait``: seconds the store may refuse every write before the run fails
    (None: waited out for ever)."""
    run_id = run or new_run_id()
    began = time.perf_counter()
    decoding = SharedDecoding()
    if full_observations and scenario.observations != OBSERVATIONS_WHOLE:
        scenario = dataclasses.replace(scenario, observations=OBSERVATIONS_WHOLE)
    try:
        outcome = await run_feed(
            _seeded_feed(scenario, run_id, decoding),
            store,
            run=run_id,
            duration=scenario.duration,
            progress=progress,
            partitions=partitions,
            full_observations=full_observations,
            telemetry=telemetry,
            bus=bus,
            idle_timeout=idle_timeout,
            store_wait=store_wait,
            decoding=decoding,
        )
    except ServiceFailed as exc:
        with contextlib.suppress(Exception):  # (the store may be what failed: bounded)
            await asyncio.wait_for(record_outcome(store, run_id, scenario.duration, RUN_FAILED, str(exc)), 10)
            exc.outcome_stored = True
        raise
    finally:
        decoding.forget(run_id, scenario.digest)
    await record_outcome(store, run_id, scenario.duration, RUN_COMPLETED)
    decisions = await store.read_run(run_id, kind=DECISION)
    return RunResult(
        run=run_id,
        decisions=decisions,
        driver=outcome.driver,
        events_stored=outcome.events_stored,
        wall_seconds=time.perf_counter() - began,
        service_events=outcome.service_events,
    )


def _seeded_feed(scenario: Scenario, run: str, decoding: SharedDecoding) -> Iterator[Envelope]:
    """The scenario's inputs, made as they are taken; the loops that decode through
    ``decoding`` are given its nodes and pods as loaded, by the id of the input that
    carries each, before they meet it (``Decoded.seed``: one copy of a fleet's pods, not
    two, and none decoded again)."""
    decoded = decoding.for_run(run, scenario.digest)

    def built(event_id: str, obj: AnyObject) -> None:
        if isinstance(obj, Node | Pod):
            decoded.seed(event_id, obj)

    return scenario_feed(scenario, run, built)


async def record_outcome(sink: EventSink, run: str, t: int, outcome: str, reason: str = "") -> None:
    """Store how the run ended, after everything it derived (:class:`RunEnded`)."""
    at = order.RUN_COMPLETED_AT if outcome == RUN_COMPLETED else order.RUN_FAILED_AT
    ended = RunEnded(outcome=outcome, reason=reason)
    await sink.append_batch([make_envelope(ended, run=run, t=t, order=[order.END, at], stream="run")])


@dataclass
class FeedOutcome:
    driver: DriverStats
    events_stored: int
    service_events: dict[str, int]
    #: by group: what each runner emitted
    service_out: dict[str, int] = field(default_factory=dict)


async def run_feed(
    feed: Iterable[Envelope],
    sink: EventSink,
    *,
    run: str,
    duration: int,
    progress: Callable[[int], None] | None = None,
    partitions: int = 4,
    full_observations: bool = False,
    telemetry: Telemetry | None = None,
    bus: MemoryBus | None = None,
    idle_timeout: float = IDLE_TIMEOUT,
    quiet_nodes: frozenset[str] = frozenset(),
    members: Mapping[str, int] | None = None,
    store_wait: float | None = None,
    decoding: SharedDecoding | None = None,
) -> FeedOutcome:
    """Drive a run's input events through every control loop; everything lands in ``sink``.

    ``ledgerlet run`` feeds a scenario's inputs and stores; replay and what-if feed the
    inputs a store recorded and collect what the loops derive, to compare
    (``quiet_nodes``: nodes a quick verification does not observe).

    The loops run in the embedded engine (runtime/engine.py: one cluster view, each event
    dispatched once), unless a ``bus`` is given or services are split between ``members``
    (each with its own group, as ``ledgerlet service NAME --member I/N`` runs them): then
    every loop is a service runner of its own on that in-memory bus, as in the
    distributed stack (:func:`run_on_bus`). ``decoding``: what the loops decode
    through, shared by them all (seeded with the scenario's objects); else one of the run's.
    """
    decoding = decoding if decoding is not None else SharedDecoding()
    if bus is None and not members:
        engine = Engine(
            feed,
            sink,
            run=run,
            duration=duration,
            progress=progress,
            telemetry=telemetry,
            quiet_nodes=quiet_nodes,
            full_observations=full_observations,
            store_wait=store_wait,
            decoding=decoding,
        )
        del feed  # (the engine lets each input go once it is handed out)
        try:
            done = await engine.run()
        except LoopFailed as exc:
            raise ServiceFailed(str(exc)) from exc.__cause__
        return FeedOutcome(done.driver, done.events_stored, done.service_events, done.service_out)
    return await run_on_bus(
        feed,
        sink,
        run=run,
        duration=duration,
        progress=progress,
        partitions=partitions,
        full_observations=full_observations,
        telemetry=telemetry,
        bus=bus,
        idle_timeout=idle_timeout,
        quiet_nodes=quiet_nodes,
        members=members,
        store_wait=store_wait,
        decoding=decoding,
    )


async def run_on_bus(
    feed: Iterable[Envelope],
    sink: EventSink,
    *,
    run: str,
    duration: int,
    progress: Callable[[int], None] | None = None,
    partitions: int = 4,
    full_observations: bool = False,
    telemetry: Telemetry | None = None,
    bus: MemoryBus | None = None,
    idle_timeout: float = IDLE_TIMEOUT,
    quiet_nodes: frozenset[str] = frozenset(),
    members: Mapping[str, int] | None = None,
    store_wait: float | None = None,
    decoding: SharedDecoding | None = None,
) -> FeedOutcome:
    """:func:`run_feed` with every loop a service runner of its own on an in-memory bus,
    with the recorder and the driver, exactly as the distributed stack runs them."""
    # (a bounded fetch keeps the loops near each other: what they share is kept meanwhile)
    bus = bus or MemoryBus(fetch_max_bytes=FETCH_MAX_BYTES)
    await bus.create_topics(topic_specs(partitions))
    # (each loop reads its topics' records, the recorder every topic's)
    shares = [
        (kind, Membership(i, n) if n > 1 else None)  # (1 of 1 is the whole work: no split)
        for kind in CONTROL_LOOPS
        for n in [(members or {}).get(kind.name, 1)]
        for i in range(n)
    ]
    decoding = decoding if decoding is not None else SharedDecoding()
    shared = SharedEnvelopes({t: sum(t in kind.topics for kind, _ in shares) for t in ALL_TOPICS}, recorders=1)
    runners = [
        ServiceRunner(
            bus, kind, telemetry=telemetry, envelopes=shared, quiet_nodes=quiet_nodes, member=member, decoding=decoding
        )
        for kind, member in shares
    ]
    recorder = RecorderRunner(
        bus, sink, full_observations=full_observations, telemetry=telemetry, envelopes=shared, store_wait=store_wait
    )
    groups = {r.group: list(r.topics) for r in runners}
    driver = Driver(
        bus,
        feed,
        run=run,
        duration=duration,
        groups=groups,
        # the recorder may trail the loops, but the bus keeps what it has not stored: bounded
        followers={recorder.group: list(ALL_TOPICS)},
        max_follower_lag=MAX_RECORDER_LAG,
        max_backlog_bytes=MAX_BACKLOG_BYTES,
        progress=progress,
        telemetry=telemetry,
        idle_timeout=idle_timeout,
    )
    del feed  # the driver lets each input go once it is published
    service_tasks = [asyncio.create_task(r.run(), name=r.group) for r in runners]
    recorder_task = asyncio.create_task(recorder.run(), name=recorder.group)
    drive = asyncio.create_task(driver.run(), name="driver")
    try:
        done, _ = await asyncio.wait([drive, recorder_task, *service_tasks], return_when=asyncio.FIRST_COMPLETED)
        if drive not in done:
            failed = next(iter(done))
            drive.cancel()
            exc = failed.exception() if not failed.cancelled() else None
            raise ServiceFailed(f"{failed.get_name()} stopped: {exc!r}") from exc
        drive.result()
        await _wait_recorded(bus, recorder, recorder_task)
    finally:
        for r in runners:
            r.stop()
        for task in (*service_tasks, drive):
            task.cancel()
        # the recorder finishes the write under way: a store write cut off half way can
        # leave its connection unusable, and closing the store would then never return
        await recorder.stopped(recorder_task)
        for task in (*service_tasks, recorder_task, drive):
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    return FeedOutcome(
        driver=driver.stats,
        events_stored=recorder.appended,
        service_events={r.group: r.stats.events_in for r in runners},
        service_out={r.group: r.stats.events_out for r in runners},
    )


async def _wait_recorded(bus: MemoryBus, recorder: RecorderRunner, task: asyncio.Task[None]) -> None:
    waiter = asyncio.create_task(bus.wait_idle({recorder.group: list(ALL_TOPICS)}, timeout=600))
    done, _ = await asyncio.wait([waiter, task], return_when=asyncio.FIRST_COMPLETED)
    if waiter not in done:
        waiter.cancel()
        exc = task.exception() if not task.cancelled() else None
        raise ServiceFailed(f"{recorder.group} stopped: {exc!r}") from exc
    waiter.result()

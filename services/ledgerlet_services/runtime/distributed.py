"""The distributed stack: every service in a process of its own on Kafka, the event store
on PostgreSQL, and a driver that feeds a scenario in and keeps the virtual clock.

The code that decides is the embedded run's: the same services, shell loop and driver;
only the bus and the store differ, and the results do not depend on which is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledgerlet_bus.api import BusUnavailable
from ledgerlet_bus.retry import with_backoff
from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.contracts.internal import RUN_COMPLETED, RUN_FAILED
from ledgerlet_core.contracts.registry import DECISION
from ledgerlet_core.loop.membership import Membership, group_of
from ledgerlet_core.scenario.feed import scenario_feed
from ledgerlet_core.scenario.load import Scenario
from ledgerlet_services.runtime.catalog import (
    control_loop,
    loop_groups,
    order_scheme_for,
    recorder_groups,
    service_names,
)
from ledgerlet_services.runtime.driver import Driver
from ledgerlet_services.runtime.embedded import RunResult, new_run_id, record_outcome
from ledgerlet_services.runtime.health import Heartbeat
from ledgerlet_services.runtime.host_memory import HOST_SLOT
from ledgerlet_services.runtime.pool import Pool
from ledgerlet_services.runtime.recorder import NAME as RECORDER
from ledgerlet_services.runtime.recorder import RecorderRunner
from ledgerlet_services.runtime.run_binding import check_run_binding
from ledgerlet_services.runtime.run_completeness import (
    RunShortfall,
    pods_to_admit,
    shortfall_reason,
    unadmitted,
    unadmitted_reason,
    unstored,
)
from ledgerlet_services.runtime.shell import ServiceRunner, not_splittable
from ledgerlet_services.runtime.snapshot_policy import DEFAULT_EVERY_RECORDS, DEFAULT_EVERY_SECONDS, Snapshots
from ledgerlet_services.runtime.stopping import step
from ledgerlet_services.runtime.telemetry import Telemetry
from ledgerlet_services.runtime.topic_specs import DEFAULT_PARTITIONS, topic_specs
from ledgerlet_store.contract import StoreUnavailable
from ledgerlet_store.dsn import is_postgres
from ledgerlet_store.leases import Lease
from ledgerlet_store.presence import Presence
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store

if TYPE_CHECKING:  # (aiokafka is imported by the commands that talk to Kafka alone)
    from ledgerlet_bus.kafka import KafkaBus

log = logging.getLogger(__name__)


#: seconds a member handed over may take to reach a point where its state can be
#: checkpointed (runtime/shell.py ServiceRunner.hand_over) before it is stopped anyway
HAND_OVER_PATIENCE = 10.0


class UnknownService(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class SnapshotEvery:
    """How often a control loop checkpoints its state: after this many records, or this
    many seconds of handling, whichever comes first (records 0: never)."""

    records: int = DEFAULT_EVERY_RECORDS
    seconds: float = DEFAULT_EVERY_SECONDS


async def open_bus(url: str, *, client_id: str, partitions: int) -> KafkaBus:
    from ledgerlet_bus.kafka import KafkaBus

    bus = KafkaBus.from_url(url, client_id=client_id)
    await bus.start()
    await bus.create_topics(topic_specs(partitions))
    return bus


async def wait_for_store(dsn: str) -> SqlEventStore:
    """Open (and migrate) the store, waiting for the database to come up."""
    return await with_backoff(f"opening the event store {dsn}", lambda: open_store(dsn), retry_on=(StoreUnavailable,))


async def serve(
    name: str,
    *,
    bus_url: str,
    store_dsn: str | None,
    partitions: int = DEFAULT_PARTITIONS,
    telemetry: Telemetry | None = None,
    stop: asyncio.Event | None = None,
    heartbeat: Heartbeat | None = None,
    lag_every: float = 5.0,
    snapshot_every: SnapshotEvery | None = None,
    lease: bool = True,
    member: Membership | None = None,
    pool: int | None = None,
) -> None:
    """Run one service until ``stop`` is set (SIGTERM): it finishes its batch and leaves.

    A control loop with a store checkpoints its state there (``snapshot_every``; records
    0 turns it off), so a restart folds only what came after the newest checkpoint. With
    a PostgreSQL store, the service first takes its lease (``lease``): several processes
    may run it, one is active and the others stand by (ledgerlet_store/leases.py). ``member``: this
    process's share of a split service (loop/membership.py); each member has a group,
    lease and snapshot of its own. ``pool``: host a fair share of the service's ``pool``
    members, moving them between the processes of the pool as processes come and go
    (runtime/pool.py; needs a PostgreSQL store, whose leases say who hosts which)."""
    kind = control_loop(name)
    if kind is None and name != RECORDER:
        raise UnknownService(f"unknown service {name!r}; services: {', '.join(service_names())}")
    if kind is None and not store_dsn:
        raise UnknownService(f"{name} needs --store (or LEDGERLET_STORE)")
    if (member is not None or pool is not None) and (kind is None or not kind.splittable):
        raise UnknownService(not_splittable(name))
    if pool is not None:
        if member is not None:
            raise UnknownService(f"{name}: --member and --pool exclude each other")
        if pool < 2:
            raise UnknownService(f"{name}: --pool takes 2 or more members, got {pool}")
        if not (store_dsn and is_postgres(store_dsn) and lease):
            raise UnknownService(f"{name}: --pool needs a PostgreSQL store and leases (who hosts a member is a lease)")
    members = [Membership(i, pool) for i in range(pool)] if pool is not None else [member]
    group = group_of(name, member)
    telemetry = telemetry or Telemetry.disabled()
    stop = stop or asyncio.Event()
    bus = await open_bus(bus_url, client_id=f"ledgerlet-{name}", partitions=partitions)
    store: SqlEventStore | None = None
    every = snapshot_every or SnapshotEvery()
    try:
        if store_dsn and (kind is None or every.records > 0):
            store = await wait_for_store(store_dsn)
        groups = (
            {group_of(name, m): list(kind.topics) for m in members}
            if kind is not None
            else {g: list(ts) for g, ts in recorder_groups().items()}
        )
        current_store = store
        #: the objects decoded once for every runner this process hosts
        decoding = SharedDecoding()

        def make_runner(member: Membership | None = member) -> ServiceRunner | RecorderRunner:
            if kind is None:
                assert current_store is not None
                return RecorderRunner(bus, current_store, telemetry=telemetry)
            snapshots = None
            if current_store is not None and every.records > 0:
                key = bus.physical(group_of(name, member))
                snapshots = Snapshots(
                    current_store, key, every_records=every.records, every_seconds=every.seconds, host_slot=HOST_SLOT
                )
            return ServiceRunner(bus, kind, telemetry=telemetry, snapshots=snapshots, member=member, decoding=decoding)

        reporter = asyncio.create_task(_report_lag(bus, groups, telemetry, lag_every))
        try:
            if pool is not None:
                assert store_dsn is not None

                async def serve_member(member: Membership, held: Lease, hand_over: asyncio.Event) -> None:
                    runner = make_runner(member)
                    assert isinstance(runner, ServiceRunner)
                    given_up = asyncio.Event()

                    async def hand_over_in_time() -> None:
                        await hand_over.wait()
                        runner.hand_over()  # at its next clean point, with a checkpoint
                        await asyncio.sleep(HAND_OVER_PATIENCE)
                        given_up.set()  # (stopped where it is: the next host folds more)

                    handing = asyncio.create_task(hand_over_in_time())
                    try:
                        await _run_while_held(group_of(name, member), runner, held, given_up, heartbeat)
                    finally:
                        handing.cancel()

                # (processes started with another N are another pool: they would count
                # each other, and share out members that are not theirs)
                presence = Presence(store_dsn, f"{bus.physical(name)}/{pool}")
                await Pool(
                    name, pool, presence, lambda m: Lease(store_dsn, bus.physical(group_of(name, m))), serve_member
                ).run(stop, heartbeat)
            else:
                held = Lease(store_dsn, bus.physical(group)) if lease and store_dsn and is_postgres(store_dsn) else None
                await _serve_runners(group, make_runner, held, stop, heartbeat, bus_url)
        finally:
            reporter.cancel()
    finally:
        if store is not None:
            with step("closing the event store"):
                await store.close()
        with step("closing the bus"):
            await bus.close()
        with step("flushing telemetry"):
            telemetry.shutdown()


async def _serve_runners(
    name: str,
    make_runner: Callable[[], ServiceRunner | RecorderRunner],
    lease: Lease | None,
    stop: asyncio.Event,
    heartbeat: Heartbeat | None,
    bus_url: str,
) -> None:
    """Run a fresh runner each time this member holds the lease (always, without one),
    until ``stop``; a runner whose member lost the lease stops and its state goes."""
    while not stop.is_set():
        if lease is not None:
            if not await lease.acquire(stop, heartbeat):
                return
            log.info("%s: holds the lease: active", name)
        log.info("%s: running on %s", name, bus_url)
        if not await _run_while_held(name, make_runner(), lease, stop, heartbeat):
            if lease is not None:
                with step(f"{name}: releasing its lease"):
                    await lease.release()
            return


async def _run_while_held(
    name: str,
    runner: ServiceRunner | RecorderRunner,
    lease: Lease | None,
    stop: asyncio.Event,
    heartbeat: Heartbeat | None,
) -> bool:
    """Run ``runner`` until it ends, ``stop`` is set or ``lease`` is lost; whether the
    lease was lost (the runner then stopped and its state goes)."""
    runner.heartbeat = heartbeat
    task = asyncio.create_task(runner.run(), name=name)
    stopper = asyncio.create_task(stop.wait())
    lost = asyncio.create_task(lease.lost()) if lease is not None else None
    watched = [task, stopper] + ([lost] if lost is not None else [])
    try:
        done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # (not left running without its lease: cancelled too)
        for pending in watched:
            pending.cancel()
        await asyncio.gather(*watched, return_exceptions=True)
        raise
    runner.stop()
    stopper.cancel()
    try:
        with step(f"{name}: finishing its batch, committing, closing its Kafka clients"):
            await task  # finishes the batch in hand, closes its consumer and producer
    except BusUnavailable as exc:
        if not stop.is_set():
            raise
        # (stopping anyway: what it had not committed comes again to the group's next reader)
        log.warning("%s: stopped with the broker away, nothing more committed (%s)", name, exc)
    finally:
        if lost is not None:
            lost.cancel()
    return lost is not None and lost in done


async def _report_lag(bus: KafkaBus, groups: dict[str, list[str]], telemetry: Telemetry, every: float) -> None:
    if not telemetry.metering:
        return
    while True:
        with contextlib.suppress(Exception):
            lags, _ = await bus.lag_by_group(groups)
            for group, lag in lags.items():
                telemetry.set_lag(group, lag)
        await asyncio.sleep(every)


async def drive(
    scenario: Scenario,
    *,
    bus_url: str,
    store_dsn: str,
    run: str | None = None,
    partitions: int = DEFAULT_PARTITIONS,
    progress: Callable[[int], None] | None = None,
    idle_timeout: float = 600.0,
    telemetry: Telemetry | None = None,
    members: Mapping[str, int] | None = None,
) -> RunResult:
    """Feed a scenario to the running stack and keep its clock; return its decisions
    once the recorder has stored everything (``members``: the services split between
    members, and how many: the clock waits for every member's group; a split eviction
    manager orders the run by node). A run whose store lacks anything the driver
    published is stored as failed and raises :class:`RunShortfall`."""
    run_id = run or new_run_id()
    began = time.perf_counter()
    scenario = dataclasses.replace(scenario, order_scheme=order_scheme_for(members, scenario.order_scheme))
    if run is not None:  # completing a run: the same scenario, the same options (run_binding)
        store = await open_store(store_dsn)
        try:
            await check_run_binding(store, run_id, scenario)
        finally:
            await store.close()
    bus = await open_bus(bus_url, client_id="ledgerlet-driver", partitions=partitions)
    try:
        driver = Driver(
            bus,
            scenario_feed(scenario, run_id),
            run=run_id,
            duration=scenario.duration,
            groups=loop_groups(members),
            followers=recorder_groups(),
            progress=progress,
            idle_timeout=idle_timeout,
            telemetry=telemetry,
            # a run named by the caller may be one a killed driver left part way; a new id
            # cannot have been driven (and its clock need not be read from the start)
            resume=run is not None,
        )
        await driver.run()
        await bus.wait_idle(recorder_groups(), timeout=idle_timeout)
    finally:
        await bus.close()
    store = await wait_for_store(store_dsn)
    try:
        published = driver.stats.published
        missing = await unstored(store, published)
        if missing:
            reason = shortfall_reason(run_id, missing, len(set(published)))
            await record_outcome(store, run_id, scenario.duration, RUN_FAILED, reason)
            raise RunShortfall(reason)
        decisions = await store.read_run(run_id, kind=DECISION)
        wanted = pods_to_admit(scenario)
        never = unadmitted(((d.envelope.type, d.envelope.pod) for d in decisions), wanted)
        if never:
            reason = unadmitted_reason(run_id, never, len(wanted))
            await record_outcome(store, run_id, scenario.duration, RUN_FAILED, reason)
            raise RunShortfall(reason)
        await record_outcome(store, run_id, scenario.duration, RUN_COMPLETED)
        stored = await store.count(run_id)
    finally:
        await store.close()
    return RunResult(
        run=run_id,
        decisions=decisions,
        driver=driver.stats,
        events_stored=stored,
        wall_seconds=time.perf_counter() - began,
    )

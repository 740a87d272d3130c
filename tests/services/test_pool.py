"""A pool of processes sharing a split service's members (runtime/pool.py), on the local
PostgreSQL: who is live, fair shares, members taken and handed over as processes come and
go, never hosted twice at once. (The same on Tansu with real services, a member moving
mid-run: tests/distributed/test_pool_members.py.)"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from ledgerlet_core.loop.membership import Membership
from ledgerlet_services.runtime.distributed import UnknownService, serve
from ledgerlet_services.runtime.pool import Pool, ServeMember, fair_share
from ledgerlet_store.leases import Lease, lock_id
from ledgerlet_store.presence import Presence
from tests.support.waiting import Turns, until

pytestmark = pytest.mark.postgres


def test_a_fair_share_is_rounded_up_so_the_live_processes_host_every_member() -> None:
    assert [fair_share(6, live) for live in (1, 2, 3, 4, 5, 6, 7)] == [6, 3, 2, 2, 2, 1, 1]
    assert fair_share(3, 0) == 3  # (not joined yet: counts itself)
    assert all(fair_share(n, live) * live >= n for n in range(1, 20) for live in range(1, 20))


class _Hosts:
    """Fake member runners that note where each member is hosted, and fail the test if
    one is ever hosted by two processes at once."""

    def __init__(self) -> None:
        self.where: dict[int, str] = {}
        self.taken: list[tuple[str, int]] = []
        self.wrong: list[str] = []

    def serve(self, process: str) -> ServeMember:
        async def serve_member(member: Membership, lease: Lease, hand_over: asyncio.Event) -> None:
            if not lease.held:
                self.wrong.append(f"member {member.index} served without its lease")
            if member.index in self.where:
                self.wrong.append(f"member {member.index} hosted twice")
            self.where[member.index] = process
            self.taken.append((process, member.index))
            try:
                await hand_over.wait()
            finally:
                del self.where[member.index]

        return serve_member

    def of(self, process: str) -> list[int]:
        return sorted(i for i, p in self.where.items() if p == process)


@contextlib.asynccontextmanager
async def _pools() -> AsyncIterator[list[tuple[Pool, asyncio.Event, asyncio.Task[None]]]]:
    made: list[tuple[Pool, asyncio.Event, asyncio.Task[None]]] = []
    try:
        yield made
    finally:
        for _, stop, _ in made:
            stop.set()
        for pool, _, task in made:
            await asyncio.wait_for(task, 10)  # (each hands its members over and leaves)
            assert not pool.hosted and not pool.presence.joined


async def test_members_move_as_processes_join_and_leave(pg_database: str) -> None:
    hosts = _Hosts()
    looks = {p: Turns() for p in "abc"}

    def start(process: str, made: list[tuple[Pool, asyncio.Event, asyncio.Task[None]]]) -> tuple[Pool, asyncio.Event]:
        pool = Pool(
            "eviction-manager",
            3,
            Presence(pg_database, "ns.eviction-manager"),
            lambda m: Lease(pg_database, f"ns.eviction-manager.{m.suffix}", every=0.1),
            hosts.serve(process),
            every=0.05,
        )
        stop = asyncio.Event()
        made.append((pool, stop, asyncio.create_task(pool.run(stop, looks[process].beat))))
        return pool, stop

    async with _pools() as made:
        a, stop_a = start("a", made)
        await until(lambda: hosts.of("a") == [0, 1, 2])  # alone: every member
        b, _ = start("b", made)  # joins: a hands one over (share 2 of 3), b takes it
        await until(lambda: len(hosts.of("a")) == 2 and len(hosts.of("b")) == 1)
        assert ("handed over", hosts.of("b")[0]) in a.moves
        c, _ = start("c", made)  # share 1 each
        await until(lambda: [len(hosts.of(p)) for p in "abc"] == [1, 1, 1])
        await asyncio.gather(*(looks[p].more(5) for p in "abc"))  # and it stays so: nothing moves without a change
        assert [len(hosts.of(p)) for p in "abc"] == [1, 1, 1]
        settled = len(hosts.taken)
        stop_a.set()  # a leaves: its member goes to b or c
        await made[0][2]
        await until(lambda: sorted(hosts.of("b") + hosts.of("c")) == [0, 1, 2])
        assert len(hosts.taken) == settled + 1
        assert b.indexes + c.indexes and not a.hosted
    assert not hosts.wrong


async def test_a_pool_takes_only_free_members_and_one_freed_later(pg_database: str) -> None:
    """A member whose lease another holds (a static ``--member`` process, or a process of
    the pool not counted yet) is left to it, and taken once it is let go."""
    hosts = _Hosts()
    elsewhere = Lease(pg_database, "ns.eviction-manager.member-1-of-2", every=0.1)
    assert await elsewhere.try_once()
    presence = Presence(pg_database, "ns.eviction-manager")
    pool = Pool(
        "eviction-manager",
        2,
        presence,
        lambda m: Lease(pg_database, f"ns.eviction-manager.{m.suffix}", every=0.1),
        hosts.serve("a"),
        every=0.05,
    )
    async with _pools() as made:
        stop, looks = asyncio.Event(), Turns()
        made.append((pool, stop, asyncio.create_task(pool.run(stop, looks.beat))))
        await until(lambda: hosts.of("a") == [1])
        assert lock_id(elsewhere.key) in await presence.leases_held()  # (seen as held: not tried)
        await looks.more(5)
        assert hosts.of("a") == [1]
        await elsewhere.release()
        await until(lambda: hosts.of("a") == [0, 1])
    assert not hosts.wrong


async def test_a_member_runner_that_fails_fails_its_process(pg_database: str) -> None:
    async def failing(member: Membership, lease: Lease, hand_over: asyncio.Event) -> None:
        raise RuntimeError(f"member {member.index} broke")

    pool = Pool(
        "stats-collector",
        2,
        Presence(pg_database, "ns.stats-collector"),
        lambda m: Lease(pg_database, f"ns.stats-collector.{m.suffix}", every=0.1),
        failing,
        every=0.05,
    )
    with pytest.raises(RuntimeError, match="broke"):
        await asyncio.wait_for(pool.run(asyncio.Event()), 10)
    assert not pool.hosted and not pool.presence.joined  # (its leases and its place let go)


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("scheduler", {"pool": 3}, "scheduler cannot be split"),
        ("eviction-manager", {"pool": 1}, "2 or more"),
        ("eviction-manager", {"pool": 3, "member": Membership(0, 3)}, "exclude each other"),
        ("eviction-manager", {"pool": 3, "lease": False}, "needs a PostgreSQL store and leases"),
    ],
)
async def test_a_pool_is_refused_where_it_cannot_work(
    name: str, kwargs: dict[str, object], message: str, pg_database: str
) -> None:
    with pytest.raises(UnknownService, match=message):
        await serve(name, bus_url="kafka://127.0.0.1:1", store_dsn=pg_database, **kwargs)  # type: ignore[arg-type]


def test_the_cli_reads_the_pool_from_the_environment_and_refuses_a_bad_one(
    pg_database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``LEDGERLET_POOL`` set for a container, as deploy/compose.pool.yaml does: a bad
    value is refused by name before anything starts, and so is a pool without leases."""
    from ledgerlet_services.app.cli import EXIT_BAD_INPUT, main

    argv = ["service", "eviction-manager", "--bus", "kafka://127.0.0.1:1", "--store", pg_database]
    monkeypatch.setenv("LEDGERLET_POOL", "six")
    assert main(argv) == EXIT_BAD_INPUT
    assert "LEDGERLET_POOL: expected a number of members, got 'six'" in " ".join(capsys.readouterr().err.split())
    monkeypatch.setenv("LEDGERLET_POOL", "3")
    assert main([*argv, "--no-lease"]) == EXIT_BAD_INPUT
    assert "--pool needs a PostgreSQL store and leases" in " ".join(capsys.readouterr().err.split())
    assert main([*argv, "--no-lease", "--pool", "1"]) == EXIT_BAD_INPUT  # (the flag before the variable)
    assert "2 or more" in " ".join(capsys.readouterr().err.split())


async def test_free_members_are_taken_at_once_and_handed_over_only_once_the_count_settles(pg_database: str) -> None:
    """A member without a host holds the clock up, so it is taken at the next look; a
    member moves to a process that joined only after the number of live processes has
    stayed the same for ``settle`` seconds (processes rejoining after a database restart
    do not send members back and forth)."""
    hosts = _Hosts()
    now = [0.0]  # the pools' clock: it moves only when the test says
    looks = {p: Turns() for p in "ab"}

    def pool(process: str) -> Pool:
        return Pool(
            "eviction-manager",
            2,
            Presence(pg_database, "ns.eviction-manager/2"),
            lambda m: Lease(pg_database, f"ns.eviction-manager.{m.suffix}", every=0.1),
            hosts.serve(process),
            every=0.05,
            settle=1.5,
            clock=lambda: now[0],
        )

    async with _pools() as made:
        a, stop_a = pool("a"), asyncio.Event()
        made.append((a, stop_a, asyncio.create_task(a.run(stop_a, looks["a"].beat))))
        await until(lambda: hosts.of("a") == [0, 1])  # at once: no time has passed
        b, stop_b = pool("b"), asyncio.Event()
        made.append((b, stop_b, asyncio.create_task(b.run(stop_b, looks["b"].beat))))
        await until(lambda: b.presence.joined)
        await asyncio.gather(looks["a"].more(5), looks["b"].more(5))  # (a has seen b: two live)
        now[0] = 1.4
        await asyncio.gather(looks["a"].more(5), looks["b"].more(5))
        assert hosts.of("a") == [0, 1] and hosts.of("b") == []  # the count has not settled yet
        now[0] = 1.5
        await until(lambda: len(hosts.of("a")) == 1 and len(hosts.of("b")) == 1)
    assert not hosts.wrong

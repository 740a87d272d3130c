"""Leases (one member of a service active) and presence (a pool's live processes): advisory
locks on the local PostgreSQL, which never raise a driver's exception."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from ledgerlet_store.contract import StoreUnavailable
from ledgerlet_store.leases import PING_PATIENCE, SERVER_SETTINGS, Lease, lock_id, plain_dsn
from ledgerlet_store.presence import Presence, pool_class_id
from tests.support.waiting import Turns, until

pytestmark = pytest.mark.postgres


async def _stop_after(seconds: float) -> asyncio.Event:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(seconds, stop.set)
    return stop


async def test_one_member_holds_the_lease_and_a_standby_takes_it_when_released(pg_database: str) -> None:
    active, standby = Lease(pg_database, "ns.scheduler", every=0.1), Lease(pg_database, "ns.scheduler", every=0.1)
    other = Lease(pg_database, "ns.eviction-manager", every=0.1)
    assert await active.acquire(asyncio.Event())
    beats, stop = Turns(), asyncio.Event()

    def beat() -> None:  # a standby's loop turns while it waits (its health check passes) ...
        beats.beat()
        if beats.count == 3:
            stop.set()

    assert not await standby.acquire(stop, beat)  # ... until it is told to stop
    assert beats.count == 3
    assert await other.acquire(asyncio.Event())  # another service's lease is its own
    await active.release()
    assert await standby.acquire(await _stop_after(5))
    assert standby.held and not active.held
    await standby.release()
    await other.release()


async def test_a_member_whose_session_ends_has_lost_the_lease(pg_database: str) -> None:
    """What a database restart or a network cut does: the member notices and steps down,
    and the lease is free for whoever asks next."""
    active, standby = Lease(pg_database, "g", every=0.1), Lease(pg_database, "g", every=0.1)
    assert await active.acquire(asyncio.Event())
    watching = asyncio.create_task(active.lost())
    await until(lambda: active.pings >= 3, what="three pings answered")
    assert not watching.done()
    admin = await asyncpg.connect(plain_dsn(pg_database))
    try:
        holder = await admin.fetchval(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        assert holder is not None
        ended = await admin.fetchval("SELECT pg_terminate_backend($1)", holder)
    finally:
        await admin.close()
    assert ended
    await asyncio.wait_for(watching, 10)
    assert not active.held
    assert await standby.acquire(await _stop_after(5))
    await standby.release()


def test_the_lease_reads_the_stores_dsn() -> None:
    assert plain_dsn("postgresql+asyncpg://u@h:5432/db") == "postgresql://u@h:5432/db"
    assert plain_dsn("postgresql://u@h/db") == "postgresql://u@h/db"
    assert lock_id("a") != lock_id("b") and lock_id("a") == lock_id("a")


async def test_the_server_ends_a_cut_off_holders_session_within_seconds(pg_database: str) -> None:
    """TCP keepalives on the lease's session (ledgerlet_store/leases.py): the server notices a
    holder gone from the network a little after the holder itself gives up, not hours
    later (the system default), and ends the session that holds the lock."""
    lease = Lease(pg_database, "k", every=1.0)
    assert await lease.acquire(asyncio.Event())
    try:
        rows = await lease._conn.fetch(
            "SELECT name, setting::int AS value, unit FROM pg_settings WHERE name = ANY($1)", list(SERVER_SETTINGS)
        )
    finally:
        await lease.release()
    shown = {r["name"]: r["value"] for r in rows}
    units = {r["name"]: r["unit"] for r in rows}
    assert units == {
        "tcp_keepalives_idle": "s",
        "tcp_keepalives_interval": "s",
        "tcp_keepalives_count": None,
        "tcp_user_timeout": "ms",
    }
    noticed = shown["tcp_keepalives_idle"] + shown["tcp_keepalives_interval"] * shown["tcp_keepalives_count"]
    gives_up = lease.every + PING_PATIENCE  # the holder's own: its last ping unanswered
    assert gives_up < noticed <= 15
    assert gives_up * 1000 < shown["tcp_user_timeout"] <= 15_000


async def test_presence_counts_the_live_processes_and_forgets_one_whose_session_ended(pg_database: str) -> None:
    a, b, other = Presence(pg_database, "ns.svc"), Presence(pg_database, "ns.svc"), Presence(pg_database, "ns.x")
    for p in (a, b, other):
        await p.join()
    assert a.number != b.number
    assert await a.live() == 2 and await other.live() == 1
    admin = await asyncpg.connect(plain_dsn(pg_database))
    try:  # what SIGKILL does to a process: its session ends
        killed = await admin.fetchval(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND classid = $1::bigint::oid"
            " AND objid = $2::bigint::oid",
            pool_class_id("ns.svc"),
            b.number,
        )
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", killed)
    finally:
        await admin.close()
    for _ in range(200):  # (polled: the server forgets the session once it has ended it)
        if await a.live() == 1:
            break
        await asyncio.sleep(0.05)
    assert await a.live() == 1
    for p in (a, b, other):
        await p.leave()


async def test_presence_reads_the_leases_held_by_anyone_and_only_them(pg_database: str) -> None:
    """What a pool reads to try only the free members: the leases' lock ids, whoever holds
    them, not the pool's own presence locks; a released lease is gone from them."""
    pool, other = Presence(pg_database, "ns.svc"), Presence(pg_database, "ns.other")
    await pool.join()
    await other.join()
    a, b = Lease(pg_database, "ns.svc/a", every=0.1), Lease(pg_database, "ns.svc/b", every=0.1)
    try:
        assert await pool.leases_held() == set()
        assert await a.try_once() and await b.try_once()
        assert await pool.leases_held() == {lock_id("ns.svc/a"), lock_id("ns.svc/b")}
        await a.release()
        assert await other.leases_held() == {lock_id("ns.svc/b")}  # (read by any member)
    finally:
        for lease in (a, b):
            await lease.release()
        for p in (pool, other):
            await p.leave()
    assert not pool.joined


async def test_presence_says_the_database_is_away_as_the_store_does() -> None:
    away = Presence("postgresql://postgres@127.0.0.1:1/nowhere", "ns.svc")
    with pytest.raises(StoreUnavailable):
        await away.join()
    assert not away.joined
    lease = Lease("postgresql://postgres@127.0.0.1:1/nowhere", "ns.svc", every=0.1)
    assert not await lease.try_once()  # (a lease is not taken, never an exception)

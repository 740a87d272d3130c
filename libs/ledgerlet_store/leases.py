"""One active member per service: a lease held as a PostgreSQL advisory lock.

Several processes may run the same service; the one that holds the lease consumes and
decides, the others wait as standbys and take over when it goes (as kube-scheduler's
replicas do with leader election). The lease is a session-level advisory lock on a
connection of its own: PostgreSQL releases it the moment that session ends, so a member
killed with SIGKILL hands over at once, without a time-to-live to wait out; one cut off
from the network, once the server's keepalives find it gone (seconds: SERVER_SETTINGS).

A member that loses its connection (the database restarting, a network cut) has lost the
lease too: it stops handling, lets its state go, and waits for the lease like any
standby; whoever takes the lease rebuilds the state from the newest snapshot and the
records committed since. Decisions do not depend on which member makes them (event ids
come from the events' places), so a short overlap while a cut-off member notices cannot
make a different decision, only a copy of one, which every consumer drops.

A lease never raises when its database is away: it is simply not taken, or lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

#: what a database that does not answer looks like from asyncpg
AWAY: Final = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)

#: How long a holder waits for its ping before it steps down (it pings every ``every``
#: seconds): ~6 s after its last answer, at the default of one ping a second.
PING_PATIENCE: Final = 5.0

#: The lease's session, as the server keeps it: TCP keepalives, so that after a network
#: cut (or a holder's machine gone) the server ends the session, and frees the lock, some
#: 6 + 3 x 1 = 9 s after the last packet, not when its kernel gives up hours later; and
#: ``tcp_user_timeout`` (ms) for a cut while the server still had a reply unacknowledged,
#: when keepalives do not start. Keepalive probes are answered by the holder's kernel, so
#: a live holder keeps its lease however long its event loop is busy (a long pass over a
#: fleet): ``idle_session_timeout`` would take the lease from it. 9 s is a little over the
#: holder's own give-up time, so the lock is normally freed once a cut-off holder has
#: stepped down, and a standby does not take over while the old one still commits.
SERVER_SETTINGS: Final = {
    "tcp_keepalives_idle": "6",
    "tcp_keepalives_interval": "1",
    "tcp_keepalives_count": "3",
    "tcp_user_timeout": "9000",
}


def lock_id(key: str) -> int:
    """The advisory lock's 64-bit id for ``key`` (a service's group, namespaced)."""
    return int.from_bytes(hashlib.sha256(f"ledgerlet-lease:{key}".encode()).digest()[:8], "big", signed=True)


def plain_dsn(dsn: str) -> str:
    """asyncpg takes ``postgresql://``; the store's DSN may name a driver."""
    scheme, sep, rest = dsn.partition("://")
    return f"{scheme.split('+', 1)[0]}{sep}{rest}"


class Lease:
    def __init__(self, dsn: str, key: str, *, every: float = 1.0) -> None:
        self.dsn = plain_dsn(dsn)
        self.key = key
        self.every = every
        #: pings answered while held (how long :meth:`lost` has watched, in its own turns)
        self.pings = 0
        self._conn: Any = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    async def acquire(self, stop: asyncio.Event, heartbeat: Callable[[], None] | None = None) -> bool:
        """Wait until this member holds the lease (True), or ``stop`` is set (False). A
        standby's loop turns too, so its health check passes while it waits."""
        said = False
        while not stop.is_set():
            if heartbeat is not None:
                heartbeat()
            if await self.try_once():
                return True
            if not said:
                log.info("%s: standby (another member holds the lease)", self.key)
                said = True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.every):
                    await stop.wait()
        return False

    async def try_once(self) -> bool:
        """Take the lease if it is free, without waiting (False if another holds it or
        the database does not answer)."""
        conn = None
        try:
            conn = await asyncpg.connect(self.dsn, timeout=10, server_settings=SERVER_SETTINGS)
            if await conn.fetchval("SELECT pg_try_advisory_lock($1)", lock_id(self.key)):
                self._conn, conn = conn, None
                return True
        except AWAY as exc:
            log.warning("%s: the lease's database is not answering (%s)", self.key, exc)
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
        return False

    async def lost(self) -> None:
        """Return once the lease is gone (its session closed or not answering)."""
        while self._conn is not None:
            await asyncio.sleep(self.every)
            try:
                async with asyncio.timeout(max(self.every * 5, PING_PATIENCE)):
                    await self._conn.fetchval("SELECT 1")
                self.pings += 1
            except AWAY as exc:
                log.warning("%s: lease lost (%s): stepping down", self.key, exc)
                await self.release()
                return

    async def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)

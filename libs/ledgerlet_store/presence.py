"""A process's place in a pool (runtime/pool.py): an advisory lock held on a session of its
own, which PostgreSQL counts (``pg_locks``) and forgets the moment the session ends, so a
killed process leaves the pool at once."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
from collections.abc import AsyncIterator
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped]

from ledgerlet_store.contract import StoreUnavailable
from ledgerlet_store.leases import AWAY, PING_PATIENCE, SERVER_SETTINGS, plain_dsn

_HERE: Final = " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
_LIVE: Final = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2"
    " AND classid = $1::bigint::oid" + _HERE
)
#: the one-part (bigint) advisory locks held: leases (leases.py lock_id), whose key
#: pg_locks shows as its high and low halves
_HELD: Final = (
    "SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks"
    " WHERE locktype = 'advisory' AND granted AND objsubid = 1" + _HERE
)


def pool_class_id(key: str) -> int:
    """The first half of the presence locks' two-part key: 31 bits of the pool's name (a
    non-negative int4, as ``pg_locks.classid`` shows it)."""
    return int.from_bytes(hashlib.sha256(f"ledgerlet-pool:{key}".encode()).digest()[:4], "big") & 0x7FFFFFFF


@contextlib.asynccontextmanager
async def _answering(what: str, patience: float | None = PING_PATIENCE) -> AsyncIterator[None]:
    """The database's silence (within ``patience`` seconds) as StoreUnavailable."""
    try:
        async with asyncio.timeout(patience):
            yield
    except AWAY as exc:
        raise StoreUnavailable(f"{what}: {exc or type(exc).__name__}") from exc


class Presence:
    """A process's place in a pool (``key``: the namespaced service). Raises
    StoreUnavailable where the database does not answer (the caller tries again)."""

    def __init__(self, dsn: str, key: str) -> None:
        self.dsn = plain_dsn(dsn)
        self.key = key
        self.class_id = pool_class_id(key)
        #: this process's number in the pool (its lock's second half), once joined
        self.number: int | None = None
        self._conn: Any = None

    @property
    def joined(self) -> bool:
        return self._conn is not None

    async def join(self) -> None:
        """Take a number of its own in the pool."""
        async with _answering(f"{self.key}: joining the pool", None):
            conn = await asyncpg.connect(self.dsn, timeout=10, server_settings=SERVER_SETTINGS)
            try:
                while True:
                    number = random.randrange(1, 2**31)  # (a name for this process, not a decision)
                    if await conn.fetchval("SELECT pg_try_advisory_lock($1::int, $2::int)", self.class_id, number):
                        break
            except BaseException:
                with contextlib.suppress(Exception):
                    await conn.close()
                raise
        self._conn, self.number = conn, number

    async def live(self) -> int:
        """How many processes are in the pool now (this one included, once joined)."""
        assert self._conn is not None, "join the pool first"
        async with _answering(f"{self.key}: counting the pool"):
            return int(await self._conn.fetchval(_LIVE, self.class_id))

    async def leases_held(self) -> set[int]:
        """The lock ids of the leases held now, by anyone (so that only free members are
        tried, without a connection for each)."""
        assert self._conn is not None, "join the pool first"
        async with _answering(f"{self.key}: reading the leases held"):
            return {int(row[0]) for row in await self._conn.fetch(_HELD)}

    async def leave(self) -> None:
        conn, self._conn, self.number = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)

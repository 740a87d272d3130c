"""The event store on SQLite (the embedded default): one file, WAL, writers one at a time
by ``BEGIN IMMEDIATE``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_store.batches import MEMBER_COLUMNS, MemberRow
from ledgerlet_store.contract import StoreError, StoreUnavailable, stream_id
from ledgerlet_store.rows import COLUMNS, row_without_version, with_version
from ledgerlet_store.schema import events
from ledgerlet_store.sql_store import INDEXED_BATCHES, Conflict, SqlEventStore

#: seconds a connection waits for another process's write lock before it gives up
BUSY_TIMEOUT: Final = 60.0
#: bytes per database page of a new file: a fleet's starting state is half a million
#: member rows, and SQLite reads and writes (WAL included) a page per system call
PAGE_SIZE: Final = 16_384

_INSERT: Final = f"INSERT INTO {events.name} ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
_OBSERVED_INSERT: Final = "INSERT INTO observation_members (event_id, run, t, node, position) VALUES (?, ?, ?, ?, ?)"
_MEMBER_INSERT: Final = (
    f"INSERT INTO batch_members ({', '.join(MEMBER_COLUMNS)}) VALUES ({', '.join('?' * len(MEMBER_COLUMNS))})"
)


class SqliteEventStore(SqlEventStore):
    dialect = "sqlite"

    def __init__(self, engine: AsyncEngine, dsn: str) -> None:
        super().__init__(engine, dsn)
        #: a DateTime as the dialect's own bind processor writes it (its text form)
        self._time_in_db: Callable[[Any], Any] | None = events.c.recorded_at.type.dialect_impl(
            engine.dialect
        ).bind_processor(engine.dialect)

    @classmethod
    def connect_to(cls, url: str, dsn: str) -> SqliteEventStore:
        engine = create_async_engine(url, connect_args={"timeout": BUSY_TIMEOUT})
        _pragmas(engine)
        return cls(engine, dsn)

    def _failure(self, exc: BaseException) -> StoreError | None:
        if isinstance(exc, sa.exc.IntegrityError | sqlite3.IntegrityError):
            return Conflict(str(exc.args[0] if exc.args else exc))
        if isinstance(
            exc,
            sa.exc.OperationalError | sqlite3.OperationalError | sa.exc.TimeoutError | OSError | TimeoutError,
        ):
            # locked past the wait, a disk that failed, a file that cannot be opened
            return self._described(StoreUnavailable, exc)
        if isinstance(exc, sa.exc.SQLAlchemyError | sqlite3.Error):
            return self._described(StoreError, exc)
        return None

    async def _take_write_lock(self, conn: AsyncConnection) -> None:
        """Taken already: a write transaction begins ``BEGIN IMMEDIATE`` (:func:`_pragmas`)."""

    async def _take_migration_lock(self, conn: AsyncConnection) -> None:
        """The write lock (``BEGIN IMMEDIATE``): a second migrator waits for the first."""

    async def text_sorts_bytewise(self) -> bool:
        return True  # (SQLite compares text with memcmp unless told otherwise)

    async def _insert_batch(self, envelopes: Sequence[Envelope], *, careful: bool) -> int:
        """The embedded recorder's hot path: plain tuples through the driver's
        ``executemany`` (SQLAlchemy's per-row parameter handling cost as much as SQLite's
        own insert)."""
        known = self._stream_versions
        async with self.writing() as conn:
            seen: set[str] = set(await self._existing(conn, [e.id for e in envelopes])) if careful else set()
            fresh: list[Envelope] = []
            for e in envelopes:
                if e.id not in seen:
                    seen.add(e.id)
                    fresh.append(e)
            if not fresh:
                return 0
            sids = [stream_id(e.run, e.stream) for e in fresh]
            streams = set(sids)
            versions = {} if careful else {sid: known[sid] for sid in streams if sid in known}
            unknown = sorted(streams - versions.keys())
            if unknown:
                versions.update(await self._versions(conn, unknown))
            recorded_at = self._time(datetime.now(UTC))
            rows = []
            for e, sid in zip(fresh, sids, strict=True):
                v = versions.get(sid, 0) + 1
                versions[sid] = v
                rows.append(with_version(row_without_version(e), v, recorded_at))
            await conn.exec_driver_sql(_INSERT, rows)
            await self._index_members(conn, [e for e in fresh if e.type in INDEXED_BATCHES])
        self._remember(versions)  # (committed)
        return len(rows)

    async def _insert_members(
        self, conn: AsyncConnection, inputs: list[MemberRow], observed: list[tuple[str, str, int, str, int]]
    ) -> None:
        if inputs:
            await conn.exec_driver_sql(_MEMBER_INSERT, inputs)
        if observed:
            await conn.exec_driver_sql(_OBSERVED_INSERT, observed)

    def _time(self, at: datetime) -> Any:
        """``at`` as the SQLite dialect stores a DateTime (its own text form, as every
        other row has it: the driver's default adapter would write another)."""
        return self._time_in_db(at) if self._time_in_db is not None else at


def _pragmas(engine: AsyncEngine) -> None:
    @sa_event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transactions out of the driver's hands so writers can BEGIN IMMEDIATE.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA page_size={PAGE_SIZE}")  # (a new file's: ignored by an existing one)
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
        cur.close()

    @sa_event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("ledgerlet_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

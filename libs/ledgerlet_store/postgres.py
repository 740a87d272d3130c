"""The event store on PostgreSQL (the distributed stack's): appenders serialised by a
table lock, batches written with COPY, the schema migrated under an advisory lock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped]
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_store.batches import MEMBER_COLUMNS, MemberRow
from ledgerlet_store.contract import StoreError, StoreUnavailable
from ledgerlet_store.rows import COLUMNS, row_without_version, with_version
from ledgerlet_store.sql_store import INDEXED_BATCHES, Conflict, SqlEventStore, driver_message

#: advisory lock id: one migrator at a time
MIGRATION_LOCK: Final = 7_420_117

_OBSERVED_COLUMNS: Final = ("event_id", "run", "t", "node", "position")

#: SQLSTATE classes of a server that is away, not of a statement that is wrong: connection
#: exceptions, insufficient resources (too many connections), operator intervention (a
#: shutdown or restart: "the database system is starting up"), system errors
UNAVAILABLE_CLASSES: Final = frozenset({"08", "53", "57", "58"})


class PostgresEventStore(SqlEventStore):
    dialect = "postgresql"

    def __init__(self, engine: Any, dsn: str) -> None:
        super().__init__(engine, dsn)
        self._byte_ordered: bool | None = None

    @classmethod
    def connect_to(cls, url: str, dsn: str) -> PostgresEventStore:
        engine = create_async_engine(
            url,
            pool_size=5,
            max_overflow=5,
            pool_pre_ping=True,  # a database restart leaves dead connections in the pool
            # asyncpg prepares statements; after five runs PostgreSQL may switch to a generic
            # plan, and for the id/version look-ups on a fast-growing, not-yet-analysed table
            # that plan is a sequential scan (appends fell from 20k/s to 600/s at 50k rows).
            connect_args={"server_settings": {"plan_cache_mode": "force_custom_plan"}},
        )
        return cls(engine, dsn)

    def _failure(self, exc: BaseException) -> StoreError | None:
        cause = _driver_error(exc)
        if isinstance(cause, asyncpg.UniqueViolationError) or isinstance(exc, sa.exc.IntegrityError):
            return Conflict(driver_message(exc))
        if unavailable(exc):
            return self._described(StoreUnavailable, exc)
        if isinstance(exc, sa.exc.SQLAlchemyError | asyncpg.PostgresError | asyncpg.InterfaceError):
            return self._described(StoreError, exc)
        return None

    async def _take_write_lock(self, conn: AsyncConnection) -> None:
        await conn.execute(sa.text("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE"))

    async def _take_migration_lock(self, conn: AsyncConnection) -> None:
        await conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))

    async def text_sorts_bytewise(self) -> bool:
        """With the C (or POSIX) collation of the libc provider only: a database whose
        default collation is ICU's, or a language's, sorts ``a`` before ``B``."""
        if self._byte_ordered is None:
            async with self.connect() as conn:
                version = int((await conn.execute(sa.text("SHOW server_version_num"))).scalar_one())
                provider = "datlocprovider::text" if version >= 150000 else "'c'"  # (ICU as a default came in 15)
                q = sa.text(f"SELECT datcollate, {provider} FROM pg_database WHERE datname = current_database()")
                collation, kind = (await conn.execute(q)).one()
            self._byte_ordered = str(kind) == "c" and (collation in ("C", "POSIX") or str(collation).startswith("C."))
        return self._byte_ordered

    async def _insert_batch(self, envelopes: Sequence[Envelope], *, careful: bool) -> int:
        """COPY, several times faster than INSERT. Rows are built before the write lock is
        taken, so a second appender's preparation overlaps the first one's COPY; under the
        lock only the versions are filled in."""
        rows = [row_without_version(e) for e in envelopes]
        versions: dict[str, int] = {}
        async with self.writing() as conn:
            raw: Any = (await conn.get_raw_connection()).driver_connection
            sids = {row[2] for row in rows}
            seen: set[str] = set()
            known = self._stream_versions
            if careful:
                ids = list(dict.fromkeys(row[0] for row in rows))
                found = await raw.fetch("SELECT event_id FROM events WHERE event_id = ANY($1::text[])", ids)
                seen = {r[0] for r in found}
                unknown = sorted(sids)
            else:
                versions = {sid: known[sid] for sid in sids if sid in known}
                unknown = sorted(sids - versions.keys())
            if unknown:
                found = await raw.fetch(
                    "SELECT stream, max(version) FROM events WHERE stream = ANY($1::text[]) GROUP BY stream", unknown
                )
                versions.update({r[0]: r[1] for r in found})
            now = datetime.now(UTC)
            records = []
            for row in rows:
                if row[0] in seen:
                    continue
                seen.add(row[0])
                sid = row[2]
                v = versions.get(sid, 0) + 1
                versions[sid] = v
                records.append(with_version(row, v, now))
            if records:
                await raw.copy_records_to_table("events", records=records, columns=COLUMNS)
                stored = {r[0] for r in records}
                await self._index_members(conn, [e for e in envelopes if e.type in INDEXED_BATCHES and e.id in stored])
        self._remember(versions)  # (committed)
        return len(records)

    async def _insert_members(
        self, conn: AsyncConnection, inputs: list[MemberRow], observed: list[tuple[str, str, int, str, int]]
    ) -> None:
        raw: Any = (await conn.get_raw_connection()).driver_connection
        if inputs:
            await raw.copy_records_to_table("batch_members", records=inputs, columns=MEMBER_COLUMNS)
        if observed:
            await raw.copy_records_to_table("observation_members", records=observed, columns=_OBSERVED_COLUMNS)


def _driver_error(exc: BaseException) -> BaseException:
    """asyncpg's own exception behind SQLAlchemy's wrapping of it (or ``exc`` itself)."""
    orig = getattr(exc, "orig", None)
    if orig is None:
        return exc
    return orig.__cause__ if isinstance(orig.__cause__, Exception) else orig


def unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (SQLAlchemy's or asyncpg's) says the server is away, not that a
    statement is wrong: the same statement may succeed later."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sa.exc.DisconnectionError | sa.exc.TimeoutError):
        return True
    cause = _driver_error(exc)
    if isinstance(cause, OSError | TimeoutError | asyncpg.InterfaceError | asyncpg.PostgresConnectionError):
        return True
    if isinstance(cause, asyncpg.PostgresError):
        return str(getattr(cause, "sqlstate", "") or "")[:2] in UNAVAILABLE_CLASSES
    return isinstance(exc, sa.exc.InterfaceError | sa.exc.OperationalError)

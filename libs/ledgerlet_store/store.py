"""Opening the event store a DSN names: SQLite (the embedded default) or PostgreSQL.

The store's contract is contract.py; what both backends do alike, sql_store.py; what each
does its own way, sqlite.py and postgres.py. The run registry (runs.py) and the
Kubernetes facade's pages (kube_reads.py) read it from modules of their own.
"""

from __future__ import annotations

import sqlalchemy as sa

from ledgerlet_store.contract import StoreError
from ledgerlet_store.dsn import async_url
from ledgerlet_store.read_only import read_only_url
from ledgerlet_store.schema import SCHEMA_REVISION
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.sqlite import SqliteEventStore


async def open_store(dsn: str, *, migrate: bool = True, reading: bool = False) -> SqlEventStore:
    """The store at ``dsn``, its schema brought to the newest migration unless ``migrate``
    is False (raises StoreUnavailable if the database does not answer). ``reading``: the
    caller only reads, so a SQLite file that cannot be written is opened read-only
    (:mod:`ledgerlet_store.read_only`) rather than refused."""
    url = async_url(dsn)
    frozen = read_only_url(dsn) if reading else None
    if frozen is not None:
        url, migrate = frozen, False
    store: SqlEventStore
    if url.startswith("sqlite"):
        store = SqliteEventStore.connect_to(url, dsn)
    else:
        from ledgerlet_store.postgres import PostgresEventStore  # (asyncpg: for PostgreSQL alone)

        store = PostgresEventStore.connect_to(url, dsn)
    try:
        if migrate:
            await store.migrate()
        elif frozen is not None:
            await _check_revision(store)
    except BaseException:
        await store.close()
        raise
    return store


async def _check_revision(store: SqlEventStore) -> None:
    """A store opened without migrating must already have this code's schema."""
    async with store.engine.connect() as conn:
        found = (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).scalar()
    if found != SCHEMA_REVISION:
        raise StoreError(
            f"{store.describe()} holds schema {found or 'none'}, this ledgerlet reads {SCHEMA_REVISION}; "
            "it cannot be written, so it cannot be upgraded (copy it somewhere writable)"
        )

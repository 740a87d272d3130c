"""Opening the event store a DSN names: SQLite (the embedded default) or PostgreSQL.

The store's contract is contract.py; what both backends do alike, sql_store.py; what each
does its own way, sqlite.py and postgres.py. The run registry (runs.py) and the
Kubernetes facade's pages (kube_reads.py) read it from modules of their own.
"""

from __future__ import annotations

from ledgerlet_store.dsn import async_url
from ledgerlet_store.postgres import PostgresEventStore
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.sqlite import SqliteEventStore


async def open_store(dsn: str, *, migrate: bool = True) -> SqlEventStore:
    """The store at ``dsn``, its schema brought to the newest migration unless ``migrate``
    is False (raises StoreUnavailable if the database does not answer)."""
    url = async_url(dsn)
    store: SqlEventStore
    if url.startswith("sqlite"):
        store = SqliteEventStore.connect_to(url, dsn)
    else:
        store = PostgresEventStore.connect_to(url, dsn)
    if migrate:
        try:
            await store.migrate()
        except BaseException:
            await store.close()
            raise
    return store

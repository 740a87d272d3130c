"""Alembic environment: runs on the connection the store hands it (sync side of async)."""

from __future__ import annotations

from alembic import context

from ledgerlet_store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()

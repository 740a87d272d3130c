"""The event store's tables (the migrations create them; this is what the code reads)."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

#: INTEGER PRIMARY KEY on SQLite (the rowid, so it autoincrements); BIGINT elsewhere.
PositionType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

events = sa.Table(
    "events",
    metadata,
    sa.Column("position", PositionType, primary_key=True, autoincrement=True),
    sa.Column("event_id", sa.String(36), nullable=False, unique=True),
    sa.Column("run", sa.String(64), nullable=False),
    sa.Column("stream", sa.String(512), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("type", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("schema_version", sa.SmallInteger, nullable=False),
    sa.Column("t", sa.BigInteger, nullable=False),
    sa.Column("order_key", sa.String(512), nullable=False),
    sa.Column("node", sa.String(253)),
    sa.Column("pod", sa.String(512)),
    sa.Column("causes", sa.Text, nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.UniqueConstraint("stream", "version", name="uq_events_stream_version"),
)
sa.Index("ix_events_run_type_t", events.c.run, events.c.type, events.c.t)
sa.Index("ix_events_run_kind_t_order", events.c.run, events.c.kind, events.c.t, events.c.order_key)
sa.Index("ix_events_run_node_t", events.c.run, events.c.node, events.c.t)
sa.Index("ix_events_run_pod_t", events.c.run, events.c.pod, events.c.t)

"""The event store's tables (the migrations create them; this is what the code reads)."""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa

#: the schema revision this code reads and writes: the newest migration's (a test holds
#: it to alembic's head), so a store already there is opened without loading alembic
SCHEMA_REVISION: Final = "0005"

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
# Partial indexes (migration 0002): internal events are read by stream or position only.
_DECISIONS = sa.text("kind = 'decision'")
_NOT_INTERNAL = sa.text("kind <> 'internal'")
_WITH_POD = sa.text("pod IS NOT NULL")
_RUN_STARTS = sa.text("type = 'ScenarioStarted'")


def _partial(name: str, where: sa.TextClause, *columns: sa.Column[object]) -> sa.Index:
    """(PostgreSQL's are the migrations' to make: naming its ``postgresql_where`` here
    would load its dialect in every process, SQLite's too.)"""
    return sa.Index(name, *columns, sqlite_where=where)


_partial("ix_events_decisions", _DECISIONS, events.c.run, events.c.t, events.c.order_key)
_partial("ix_events_run_type_t", _NOT_INTERNAL, events.c.run, events.c.type, events.c.t)
_partial("ix_events_run_node_t", _NOT_INTERNAL, events.c.run, events.c.node, events.c.t)
_partial("ix_events_run_pod_t", _WITH_POD, events.c.run, events.c.pod, events.c.t)
_partial("ix_events_run_starts", _RUN_STARTS, events.c.position)

#: The pods' inputs inside stored input batches (``InputBatch``: one row in ``events`` for a
#: node's starting pods): each one's id, run, type, instant, place, node and pod, and the
#: position of the row that carries it. Reads by id, by pod, by node and in decision order
#: find them here without reading every batch (migration 0003). A batch's other members
#: (the pods' usage entries) are read with their batch: nothing asks for them alone.
batch_members = sa.Table(
    "batch_members",
    metadata,
    sa.Column("event_id", sa.String(36), primary_key=True),
    sa.Column("run", sa.String(64), nullable=False),
    sa.Column("type", sa.String(64), nullable=False),
    sa.Column("t", sa.BigInteger, nullable=False),
    sa.Column("order_key", sa.String(512), nullable=False),
    sa.Column("node", sa.String(253)),
    sa.Column("pod", sa.String(512), nullable=False),
    sa.Column("position", PositionType, nullable=False),
)
sa.Index("ix_batch_members_run_pod", batch_members.c.run, batch_members.c.pod)
sa.Index("ix_batch_members_run_t", batch_members.c.run, batch_members.c.t, batch_members.c.order_key)

#: The observations inside stored observation batches (``NodesObserved``: one row in
#: ``events`` for a tick's derived observations of up to a thousand nodes): each one's id,
#: run, instant and node, and the position of the row that carries it (migration 0005).
observation_members = sa.Table(
    "observation_members",
    metadata,
    sa.Column("event_id", sa.String(36), primary_key=True),
    sa.Column("run", sa.String(64), nullable=False),
    sa.Column("t", sa.BigInteger, nullable=False),
    sa.Column("node", sa.String(253), nullable=False),
    sa.Column("position", PositionType, nullable=False),
)
sa.Index(
    "ix_observation_members_run_node_t", observation_members.c.run, observation_members.c.node, observation_members.c.t
)

#: A service's state checkpoint, one row per consumer group (migration 0004): the state
#: as it was once the group had committed ``offsets`` (JSON ``[[topic, partition, next
#: offset], ...]``). A cache, not a record: replaced by the next one, and safe to drop.
snapshots = sa.Table(
    "snapshots",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("version", sa.String(64), nullable=False),
    sa.Column("offsets", sa.Text, nullable=False),
    sa.Column("state", sa.LargeBinary, nullable=False),
    sa.Column("records", sa.BigInteger, nullable=False),
    sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False),
)

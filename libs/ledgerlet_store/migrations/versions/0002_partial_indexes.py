"""Partial indexes: index each event only where a query needs it.

Most stored events are observations and clock bookkeeping (kind ``internal``); the
recorder writes tens of thousands a second, and every index on them costs appends.
Internal events are read by stream (a node's observations are its stream, in order) or
by position (replay), which the primary key and the ``(stream, version)`` constraint
already index. Decisions and inputs are indexed by type, node and pod; decisions also
in decision order; the runs by their ``ScenarioStarted``.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

DECISIONS = sa.text("kind = 'decision'")
NOT_INTERNAL = sa.text("kind <> 'internal'")
WITH_POD = sa.text("pod IS NOT NULL")
RUN_STARTS = sa.text("type = 'ScenarioStarted'")


def _partial(name: str, columns: list[str], where: sa.TextClause) -> None:
    op.create_index(name, "events", columns, postgresql_where=where, sqlite_where=where)


def upgrade() -> None:
    for name in ("ix_events_run_type_t", "ix_events_run_kind_t_order", "ix_events_run_node_t", "ix_events_run_pod_t"):
        op.drop_index(name, table_name="events")
    _partial("ix_events_decisions", ["run", "t", "order_key"], DECISIONS)
    _partial("ix_events_run_type_t", ["run", "type", "t"], NOT_INTERNAL)
    _partial("ix_events_run_node_t", ["run", "node", "t"], NOT_INTERNAL)
    _partial("ix_events_run_pod_t", ["run", "pod", "t"], WITH_POD)
    _partial("ix_events_run_starts", ["position"], RUN_STARTS)


def downgrade() -> None:
    for name in (
        "ix_events_decisions",
        "ix_events_run_type_t",
        "ix_events_run_node_t",
        "ix_events_run_pod_t",
        "ix_events_run_starts",
    ):
        op.drop_index(name, table_name="events")
    op.create_index("ix_events_run_type_t", "events", ["run", "type", "t"])
    op.create_index("ix_events_run_kind_t_order", "events", ["run", "kind", "t", "order_key"])
    op.create_index("ix_events_run_node_t", "events", ["run", "node", "t"])
    op.create_index("ix_events_run_pod_t", "events", ["run", "pod", "t"])

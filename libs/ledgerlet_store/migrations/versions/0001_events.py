"""The append-only events table.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column(
            "position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
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
    op.create_index("ix_events_run_type_t", "events", ["run", "type", "t"])
    op.create_index("ix_events_run_kind_t_order", "events", ["run", "kind", "t", "order_key"])
    op.create_index("ix_events_run_node_t", "events", ["run", "node", "t"])
    op.create_index("ix_events_run_pod_t", "events", ["run", "pod", "t"])


def downgrade() -> None:
    op.drop_table("events")

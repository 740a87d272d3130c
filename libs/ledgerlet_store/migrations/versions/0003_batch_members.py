"""Members of stored input batches, by id and by pod.

A fleet's starting pods are stored a node at a time (one ``InputBatch`` row each); this
table finds the row that carries a given member (by event id, or by pod), so reading
one pod's history does not read every batch.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "batch_members",
        sa.Column("event_id", sa.String(36), primary_key=True),
        sa.Column("run", sa.String(64), nullable=False),
        sa.Column("pod", sa.String(512)),
        sa.Column("position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
    )
    op.create_index("ix_batch_members_run_pod", "batch_members", ["run", "pod"])


def downgrade() -> None:
    op.drop_index("ix_batch_members_run_pod", table_name="batch_members")
    op.drop_table("batch_members")

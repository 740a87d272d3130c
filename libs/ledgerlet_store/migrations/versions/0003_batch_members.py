"""The pods' inputs inside stored input batches: by id, by pod, by node, in decision order.

A fleet's starting pods are stored a node at a time (one ``InputBatch`` row each); this
table finds the row that carries a given pod's input, so reading one pod's history (or a
page of pods) does not read every batch.

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
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("t", sa.BigInteger, nullable=False),
        sa.Column("order_key", sa.String(512), nullable=False),
        sa.Column("node", sa.String(253)),
        sa.Column("pod", sa.String(512), nullable=False),
        sa.Column("position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
    )
    op.create_index("ix_batch_members_run_pod", "batch_members", ["run", "pod"])
    op.create_index("ix_batch_members_run_t", "batch_members", ["run", "t", "order_key"])


def downgrade() -> None:
    op.drop_index("ix_batch_members_run_t", table_name="batch_members")
    op.drop_index("ix_batch_members_run_pod", table_name="batch_members")
    op.drop_table("batch_members")

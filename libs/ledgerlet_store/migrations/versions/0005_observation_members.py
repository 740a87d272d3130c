"""The observations inside stored observation batches: by id, and by node and time.

A tick's derived observations are stored together (one ``NodesObserved`` row for up to a
thousand nodes); this table finds the row that carries a given observation, so a
decision's cited observation, or one node's observations over a window, are read
without reading every batch.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "observation_members",
        sa.Column("event_id", sa.String(36), primary_key=True),
        sa.Column("run", sa.String(64), nullable=False),
        sa.Column("t", sa.BigInteger, nullable=False),
        sa.Column("node", sa.String(253), nullable=False),
        sa.Column("position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
    )
    op.create_index("ix_observation_members_run_node_t", "observation_members", ["run", "node", "t"])


def downgrade() -> None:
    op.drop_index("ix_observation_members_run_node_t", table_name="observation_members")
    op.drop_table("observation_members")

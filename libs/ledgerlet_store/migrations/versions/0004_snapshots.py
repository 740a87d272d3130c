"""Services' state checkpoints: one row per consumer group, replaced at every checkpoint.

Not events: a snapshot is a cache of what folding a group's committed records gives, so a
restarted service folds only what came after it. It can always be thrown away.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "snapshots",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("offsets", sa.Text, nullable=False),
        sa.Column("state", sa.LargeBinary, nullable=False),
        sa.Column("records", sa.BigInteger, nullable=False),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("snapshots")

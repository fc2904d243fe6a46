"""per-revision estimates

Revision ID: 0003
Revises: 0001
Create Date: 2026-12-01
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
        "estimate",
        sa.Column("revision_pk", sa.Integer(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["revision_pk"], ["revision.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("revision_pk"),
    )


def downgrade() -> None:
    op.drop_table("estimate")

"""Xet reconstruction terms kept by Xet file hash

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02

The terms of each weight file the tensor diff asked the CAS server for (issue 33), compact and
compressed, so that a comparison of any two stored revisions, or a restart, needs no request.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "xet_terms",
        sa.Column("xet_hash", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("kept_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("xet_hash"),
    )


def downgrade() -> None:
    op.drop_table("xet_terms")

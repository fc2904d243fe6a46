"""lineage: each tracked derivative's base revision and staleness

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lineage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo_pk", sa.Integer(), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("base_repo_id", sa.String(length=200), nullable=False),
        sa.Column("relation", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("base_sha", sa.String(length=64), nullable=True),
        sa.Column("missed", sa.JSON(), nullable=False),
        sa.Column("aspects", sa.JSON(), nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("detail", sa.String(), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["repo_pk"], ["repo.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("repo_pk", name="uq_lineage_repo"),
    )
    op.create_index("ix_lineage_base_repo_id", "lineage", ["base_repo_id"])


def downgrade() -> None:
    op.drop_index("ix_lineage_base_repo_id", table_name="lineage")
    op.drop_table("lineage")

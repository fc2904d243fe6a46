"""scheduling: per-repo schedule and leases, job leases, change-listing cursors

Revision ID: 0006
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "repo_schedule",
        sa.Column("repo_pk", sa.Integer(), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("woken_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("listed", sa.Boolean(), nullable=True),
        sa.Column("hint_head", sa.String(length=64), nullable=True),
        sa.Column("hint_gated", sa.Boolean(), nullable=True),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["repo_pk"], ["repo.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("repo_pk"),
    )
    op.create_index("ix_repo_schedule_woken", "repo_schedule", ["woken_at"])
    op.create_table(
        "job_lease",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "discovery_cursor",
        sa.Column("name", sa.String(length=300), nullable=False),
        sa.Column("value", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("discovery_cursor")
    op.drop_table("job_lease")
    op.drop_index("ix_repo_schedule_woken", table_name="repo_schedule")
    op.drop_table("repo_schedule")

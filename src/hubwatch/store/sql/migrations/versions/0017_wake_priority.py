"""wake priority

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02

Each wake carries a priority (WakePriority): workers claim the repos that changed before the
periodic verifications, so a changed repo never waits behind one that did not (issue 35). The
claim index leads with it; discovery's pass reads only the repos due, by `due_at`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repo_schedule") as batch:
        batch.add_column(
            sa.Column("priority", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
        batch.drop_index("ix_repo_schedule_woken")
        batch.create_index("ix_repo_schedule_woken", ["priority", "woken_at"])
        batch.create_index("ix_repo_schedule_due", ["due_at"])


def downgrade() -> None:
    with op.batch_alter_table("repo_schedule") as batch:
        batch.drop_index("ix_repo_schedule_due")
        batch.drop_index("ix_repo_schedule_woken")
        batch.create_index("ix_repo_schedule_woken", ["woken_at"])
        batch.drop_column("priority")

"""repos keep when a pin last named them

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03

When `hubwatch pins check` (the CI gate) last found a pin of each repo (issue 35): a repo pinned
lately counts as watched, its verifications claimed before the others' (`WakePriority.WATCHED`).
Rows stored before have none (NULL): the next check records its pins.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pinned_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.drop_column("pinned_at")

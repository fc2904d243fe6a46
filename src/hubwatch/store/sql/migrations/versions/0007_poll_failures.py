"""poll failures: how many polls of each repo failed in a row (a repo becomes degraded)

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # How many polls failed before is not known; one that failed last counts as one.
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.add_column(sa.Column("failures", sa.Integer(), nullable=False, server_default="0"))
    op.execute("UPDATE repo SET failures = 1 WHERE last_error IS NOT NULL")


def downgrade() -> None:
    # degraded is a state this schema did not know: such repos are active again
    op.execute("UPDATE repo SET state = 'active' WHERE state = 'degraded'")
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.drop_column("failures")

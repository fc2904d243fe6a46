"""change counts: each change carries its revision's repo and commit date, indexed for badges

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01

The counting badges (breaking changes in 30 days, changes since a pinned revision) walked every
revision in range and looked its changes up; with the repo and the commit date on the change
row, each count is a range scan of one index over the changes it counts (issue 15).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("change", schema=None) as batch_op:
        batch_op.add_column(sa.Column("repo_pk", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("committed_at", sa.DateTime(timezone=True), nullable=True))
    op.execute(
        "UPDATE change SET"
        " repo_pk = (SELECT r.repo_pk FROM revision r WHERE r.id = change.revision_pk),"
        " committed_at = (SELECT r.committed_at FROM revision r WHERE r.id = change.revision_pk)"
    )
    with op.batch_alter_table("change", schema=None) as batch_op:
        batch_op.alter_column("repo_pk", existing_type=sa.Integer(), nullable=False)
        batch_op.alter_column(
            "committed_at", existing_type=sa.DateTime(timezone=True), nullable=False
        )
        batch_op.create_index(
            "ix_change_repo_revision", ["repo_pk", "revision_pk", "severity"], unique=False
        )
        batch_op.create_index(
            "ix_change_repo_committed", ["repo_pk", "committed_at", "severity"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("change", schema=None) as batch_op:
        batch_op.drop_index("ix_change_repo_committed")
        batch_op.drop_index("ix_change_repo_revision")
        batch_op.drop_column("committed_at")
        batch_op.drop_column("repo_pk")

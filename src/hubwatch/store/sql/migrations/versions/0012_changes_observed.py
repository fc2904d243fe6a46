"""changes counted by when hubwatch observed them: each change carries its revision's recorded time

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02

The counting badge (`breaking (30d)`) counted a repo's changes by their commit date, which
whoever pushes a commit sets: three breaking changes dated 2001 left it green, one dated 2100
kept it red until 2100 (issue 29). A change now carries the time its revision was recorded
(our clock), copied as the commit date was (migration 0008), and the count is a range of
(repo, observed time); the commit date stays on the revision, shown, never counted by.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("change", schema=None) as batch_op:
        batch_op.add_column(sa.Column("observed_at", sa.DateTime(timezone=True), nullable=True))
    op.execute(
        "UPDATE change SET"
        " observed_at = (SELECT r.recorded_at FROM revision r WHERE r.id = change.revision_pk)"
    )
    with op.batch_alter_table("change", schema=None) as batch_op:
        batch_op.alter_column(
            "observed_at", existing_type=sa.DateTime(timezone=True), nullable=False
        )
        batch_op.drop_index("ix_change_repo_committed")
        batch_op.drop_column("committed_at")
        batch_op.create_index(
            "ix_change_repo_observed", ["repo_pk", "observed_at", "severity"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("change", schema=None) as batch_op:
        batch_op.add_column(sa.Column("committed_at", sa.DateTime(timezone=True), nullable=True))
    op.execute(
        "UPDATE change SET"
        " committed_at = (SELECT r.committed_at FROM revision r WHERE r.id = change.revision_pk)"
    )
    with op.batch_alter_table("change", schema=None) as batch_op:
        batch_op.alter_column(
            "committed_at", existing_type=sa.DateTime(timezone=True), nullable=False
        )
        batch_op.drop_index("ix_change_repo_observed")
        batch_op.drop_column("observed_at")
        batch_op.create_index(
            "ix_change_repo_committed", ["repo_pk", "committed_at", "severity"], unique=False
        )

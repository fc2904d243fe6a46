"""revision counts, change tallies, history index: what badges and history pages read

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

`list_repos` and `get_repo` counted a repo's revisions on every call, which grew with its
history (issue 15); `add_revision` now adds one in the revision's own transaction. A history
page (newest first) on PostgreSQL walked the primary key backwards and filtered by repo, since
its index on repo_pk alone is not in id order; (repo_pk, id) makes the page one index range.
`change_tally` counts each repo's changes per block of 1024 revision ids, so that a count since
a pinned revision adds blocks instead of scanning every later change (store/sql/tally.py).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("revision_count", sa.Integer(), server_default="0", nullable=False)
        )
    op.execute(
        "UPDATE repo SET revision_count ="
        " (SELECT count(*) FROM revision r WHERE r.repo_pk = repo.id)"
    )
    op.create_index("ix_revision_repo_position", "revision", ["repo_pk", "id"], unique=False)
    op.create_table(
        "change_tally",
        sa.Column("repo_pk", sa.Integer(), nullable=False),
        sa.Column("block", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("breaking", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["repo_pk"], ["repo.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("repo_pk", "block"),
    )
    op.execute(  # the block size is store.sql.tally.BLOCK's, as it was when this was written
        "INSERT INTO change_tally (repo_pk, block, total, breaking)"
        " SELECT repo_pk, revision_pk / 1024, count(*),"
        " count(CASE WHEN severity = 'breaking' THEN 1 END)"
        " FROM change GROUP BY repo_pk, revision_pk / 1024"
    )


def downgrade() -> None:
    op.drop_table("change_tally")
    op.drop_index("ix_revision_repo_position", table_name="revision")
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.drop_column("revision_count")

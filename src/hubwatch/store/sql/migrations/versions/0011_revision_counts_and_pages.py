"""repo revision count and history index: revisions counted on write, pages one index range

Revision ID: 0011
Revises: 0009
Create Date: 2026-12-01

`list_repos` and `get_repo` counted a repo's revisions on every call, which grew with its
history (issue 15); `add_revision` now adds one in the revision's own transaction. A history
page (newest first) on PostgreSQL walked the primary key backwards and filtered by repo, since
its index on repo_pk alone is not in id order; (repo_pk, id) makes the page one index range.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0009"
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


def downgrade() -> None:
    op.drop_index("ix_revision_repo_position", table_name="revision")
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.drop_column("revision_count")

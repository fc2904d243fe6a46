"""repos keep the Hub's identity of the repo and the names it had

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02

Who is behind a name (issue 34): the Hub's object id of a repo (`_id`) and its creation time
(`createdAt`), which a rename keeps and a repo deleted and created again under the same name does
not; and the names a followed rename left behind, so that pins using them are found. Rows stored
before have none (NULL): the next poll records what the Hub answers.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.add_column(sa.Column("hub_object_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("hub_created_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("former_ids", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("repo", schema=None) as batch_op:
        batch_op.drop_column("former_ids")
        batch_op.drop_column("hub_created_at")
        batch_op.drop_column("hub_object_id")

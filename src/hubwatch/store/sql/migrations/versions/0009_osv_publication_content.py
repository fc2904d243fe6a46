"""osv publication content: ids derived from the change, content digest, modified, withdrawn

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from hubwatch.models import publication_id

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("osv_publication", schema=None) as batch_op:
        batch_op.add_column(sa.Column("digest", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("modified_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("withdrawn_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("record", sa.JSON(), nullable=True))
    # Numbered ids (x_HUBWATCH-2025-7) depended on the order a database met the changes;
    # each becomes the id derived from its change, as every new one is.
    connection = op.get_bind()
    rows = connection.execute(
        sa.text("SELECT osv_id, repo_id, sha, kind, path, year FROM osv_publication")
    ).all()
    for old, repo_id, sha, kind, path, year in rows:
        connection.execute(
            sa.text("UPDATE osv_publication SET osv_id = :new WHERE osv_id = :old"),
            {"new": publication_id(repo_id, sha, kind, path, year), "old": old},
        )


def downgrade() -> None:
    with op.batch_alter_table("osv_publication", schema=None) as batch_op:
        batch_op.drop_column("record")
        batch_op.drop_column("withdrawn_at")
        batch_op.drop_column("modified_at")
        batch_op.drop_column("digest")

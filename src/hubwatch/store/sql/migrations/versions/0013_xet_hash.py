"""file entries keep their Xet file hash

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01

The Hub's tree listing names each Xet-stored file's hash (`xetHash`), the id of its
reconstruction on the CAS server: what the tensor-level diff of a re-upload asks for (issue 33).
Rows stored before have none (NULL), as plain LFS and git files do.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("file_entry", schema=None) as batch_op:
        batch_op.add_column(sa.Column("xet_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("file_entry", schema=None) as batch_op:
        batch_op.drop_column("xet_hash")

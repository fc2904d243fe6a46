"""refs, code links and linked changes

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02

A tracked repo's refs (branches, tags, open pull requests) and which are diffed against its
branch; the repos whose code a model loads (external auto_map targets, kernel repos); and the
changes reported on a repo from either, apart from its own history (issue 34).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _repo_pk(primary: bool) -> list[sa.schema.SchemaItem]:
    return [
        sa.Column("repo_pk", sa.Integer(), nullable=False, primary_key=primary),
        sa.ForeignKeyConstraint(["repo_pk"], ["repo.id"], ondelete="CASCADE"),
    ]


def upgrade() -> None:
    op.create_table(
        "ref_watch",
        *_repo_pk(True),
        sa.Column("watch", sa.String(length=16), nullable=False),
    )
    op.create_table(
        "repo_ref",
        *_repo_pk(True),
        sa.Column("ref", sa.String(length=255), nullable=False, primary_key=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("target", sa.String(length=64), nullable=False),
        sa.Column("diffed", sa.String(length=64), nullable=True),
    )
    op.create_table(
        "code_link",
        *_repo_pk(True),
        sa.Column("target", sa.String(length=200), nullable=False, primary_key=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("via", sa.String(length=1000), nullable=False),
    )
    op.create_index("ix_code_link_target", "code_link", ["target"])
    op.create_table(
        "linked_change",
        sa.Column("id", sa.Integer(), nullable=False),
        *_repo_pk(False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=255), nullable=False),
        sa.Column("head", sa.String(length=64), nullable=False),
        sa.Column("base", sa.String(length=64), nullable=True),
        sa.Column("observed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("changes", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_linked_change_repo_pk", "linked_change", ["repo_pk"])


def downgrade() -> None:
    op.drop_index("ix_linked_change_repo_pk", table_name="linked_change")
    op.drop_table("linked_change")
    op.drop_index("ix_code_link_target", table_name="code_link")
    op.drop_table("code_link")
    op.drop_table("repo_ref")
    op.drop_table("ref_watch")

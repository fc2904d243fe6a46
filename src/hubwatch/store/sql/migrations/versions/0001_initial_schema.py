"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    _create_blob()
    _create_repo()
    _create_event()
    _create_revision()
    _create_file_entry()


def _create_blob() -> None:
    op.create_table(
        "blob",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("sha256"),
    )


def _create_repo() -> None:
    op.create_table(
        "repo",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo_id", sa.String(length=200), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=True),
        sa.Column("branch", sa.String(length=255), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("head_sha", sa.String(length=64), nullable=True),
        sa.Column("renamed_to", sa.String(length=200), nullable=True),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_polled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("repo_id"),
    )


def _create_event() -> None:
    op.create_table(
        "event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo_pk", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=True),
        sa.Column("detail", sa.String(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["repo_pk"], ["repo.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_event_repo_pk"), ["repo_pk"], unique=False)


def _create_revision() -> None:
    op.create_table(
        "revision",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo_pk", sa.Integer(), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("parents", sa.JSON(), nullable=False),
        sa.Column("committed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("authors", sa.JSON(), nullable=False),
        sa.Column("title", sa.String(), nullable=False),
        sa.Column("message", sa.String(), nullable=False),
        sa.Column("changed", sa.JSON(), nullable=False),
        sa.Column("reachable", sa.Boolean(), nullable=False),
        sa.Column("card", sa.JSON(), nullable=True),
        sa.Column("card_error", sa.String(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["repo_pk"], ["repo.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("repo_pk", "sha", name="uq_revision_repo_sha"),
    )
    with op.batch_alter_table("revision", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_revision_repo_pk"), ["repo_pk"], unique=False)
        batch_op.create_index(batch_op.f("ix_revision_sha"), ["sha"], unique=False)


def _create_file_entry() -> None:
    op.create_table(
        "file_entry",
        sa.Column("revision_pk", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("blob_id", sa.String(length=64), nullable=False),
        sa.Column("lfs_sha256", sa.String(length=64), nullable=True),
        sa.Column("content_sha256", sa.String(length=64), nullable=True),
        sa.Column("content_status", sa.String(length=16), nullable=True),
        sa.Column("content_error", sa.String(), nullable=True),
        sa.Column("header_sha256", sa.String(length=64), nullable=True),
        sa.Column("header_status", sa.String(length=16), nullable=True),
        sa.Column("header_error", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["revision_pk"], ["revision.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("revision_pk", "path"),
    )
    with op.batch_alter_table("file_entry", schema=None) as batch_op:
        batch_op.create_index("ix_file_entry_blob", ["blob_id", "path"], unique=False)
        batch_op.create_index("ix_file_entry_lfs", ["lfs_sha256"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("file_entry", schema=None) as batch_op:
        batch_op.drop_index("ix_file_entry_lfs")
        batch_op.drop_index("ix_file_entry_blob")

    op.drop_table("file_entry")
    with op.batch_alter_table("revision", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_revision_sha"))
        batch_op.drop_index(batch_op.f("ix_revision_repo_pk"))

    op.drop_table("revision")
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_event_repo_pk"))

    op.drop_table("event")
    op.drop_table("repo")
    op.drop_table("blob")

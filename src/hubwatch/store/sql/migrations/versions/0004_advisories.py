"""advisories: revision dependencies, advisory checks and matches, OSV publication ids

Revision ID: 0004
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "revision_dependency",
        sa.Column("revision_pk", sa.Integer(), nullable=False),
        sa.Column("ecosystem", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("source", sa.String(length=1024), nullable=False),
        sa.Column("version", sa.String(length=200), nullable=True),
        sa.Column("spec", sa.String(length=1000), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(["revision_pk"], ["revision.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("revision_pk", "ecosystem", "name", "source"),
    )
    op.create_table(
        "advisory_check",
        sa.Column("revision_pk", sa.Integer(), nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("service", sa.String(length=32), nullable=False),
        sa.Column("error", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(["revision_pk"], ["revision.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("revision_pk"),
    )
    op.create_table(
        "advisory_match",
        sa.Column("revision_pk", sa.Integer(), nullable=False),
        sa.Column("advisory_id", sa.String(length=100), nullable=False),
        sa.Column("package", sa.String(length=200), nullable=False),
        sa.Column("aliases", sa.JSON(), nullable=False),
        sa.Column("summary", sa.String(), nullable=False),
        sa.Column("severity", sa.JSON(), nullable=False),
        sa.Column("fixed", sa.JSON(), nullable=False),
        sa.Column("version", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("modified", sa.String(length=40), nullable=False),
        sa.Column("attached_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["revision_pk"], ["revision.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("revision_pk", "advisory_id", "package"),
    )
    op.create_table(
        "osv_publication",
        sa.Column("osv_id", sa.String(length=64), nullable=False),
        sa.Column("repo_id", sa.String(length=200), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("year", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("osv_id"),
        sa.UniqueConstraint("repo_id", "sha", "kind", "path", name="uq_osv_publication_change"),
        sa.UniqueConstraint("year", "number", name="uq_osv_publication_number"),
    )


def downgrade() -> None:
    op.drop_table("osv_publication")
    op.drop_table("advisory_match")
    op.drop_table("advisory_check")
    op.drop_table("revision_dependency")

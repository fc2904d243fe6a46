"""stored bytes compressed with lz4 on PostgreSQL

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03

PostgreSQL compresses a value over ~2 kB as it stores it, with pglz unless told otherwise; pglz
took 11 ms of the server's CPU for each 600 kB tokenizer.json a backfill stored, lz4 under 3 ms,
for 18% more bytes on disk (issue 35). The columns a revision writes its large values into (a
file's bytes, Xet terms, the estimate) use lz4 where the server has it (14 or later, built with
lz4: `default_toast_compression` then offers it). Only values written afterwards are affected;
both kinds are read alike. Nothing changes on SQLite, which does not compress.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

COLUMNS = (("blob", "data"), ("xet_terms", "data"), ("estimate", "data"))


def _has_lz4() -> bool:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return False
    offered = bind.execute(
        text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
    ).scalar()
    return offered is not None and "lz4" in offered


def _compress(method: str) -> None:
    for table, column in COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}")


def upgrade() -> None:
    if _has_lz4():
        _compress("lz4")


def downgrade() -> None:
    if _has_lz4():
        _compress("default")

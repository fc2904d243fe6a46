"""Rows written straight into a database left at an older migration, for migration tests."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection


def old_repo(conn: Connection, repo_id: str = "org/old") -> None:
    """A tracked Hub repo's row as every migration since 0001 has it (`added_at`: now)."""
    conn.execute(
        text(
            "INSERT INTO repo (repo_id, source, branch, state, added_at)"
            " VALUES (:repo, 'hub', 'main', 'active', CURRENT_TIMESTAMP)"
        ),
        {"repo": repo_id},
    )

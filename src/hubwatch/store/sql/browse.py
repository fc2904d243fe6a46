"""SqlBrowseStore: the BrowseStore part of SqlStore (paged history, counts, recent changes)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func
from sqlmodel import col, select

from hubwatch.models import (
    CommitSha,
    FeedItem,
    HistoryPage,
    RevisionChanges,
    Severity,
    StoredRevision,
)
from hubwatch.store.browse import BrowseStore
from hubwatch.store.sql.base import SqlBase, as_change, as_revision, utc
from hubwatch.store.sql.tables import ChangeRow, RepoRow, RevisionRow


class SqlBrowseStore(SqlBase, BrowseStore):
    """Paged history, change counts and recent changes, each in one or two indexed queries."""

    def history_page(
        self, repo_id: str, *, before: int | None = None, limit: int = 50
    ) -> HistoryPage:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            query = select(RevisionRow).where(RevisionRow.repo_pk == repo.id)
            if before is not None:
                query = query.where(col(RevisionRow.id) < before)
            rows = session.exec(query.order_by(col(RevisionRow.id).desc()).limit(limit + 1)).all()
            more = len(rows) > limit
            rows = rows[:limit]
            return HistoryPage(
                tuple(as_revision(repo_id, row) for row in rows),
                (rows[-1].id if more else None),
                tuple(row.id or 0 for row in rows),
            )

    def latest_revision(self, repo_id: str) -> StoredRevision | None:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            row = session.exec(
                select(RevisionRow)
                .where(RevisionRow.repo_pk == repo.id, col(RevisionRow.reachable).is_(True))
                .order_by(col(RevisionRow.id).desc())
                .limit(1)
            ).first()
            return as_revision(repo_id, row) if row else None

    def revision_changes(self, repo_id: str, sha: CommitSha) -> RevisionChanges:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            revision = self._revision_row(session, repo, sha)
            rows = session.exec(
                select(ChangeRow)
                .where(ChangeRow.revision_pk == revision.id)
                .order_by(col(ChangeRow.position))
            ).all()
            base = rows[0].base_sha if rows else None
            return RevisionChanges(
                as_revision(repo_id, revision),
                CommitSha(base) if base else None,
                tuple(as_change(row) for row in rows),
            )

    def change_counts(
        self, repo_id: str, *, after: CommitSha | None = None, since: datetime | None = None
    ) -> dict[Severity, int]:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            query = (
                select(ChangeRow.severity, func.count())
                .select_from(ChangeRow)
                .join(RevisionRow, col(RevisionRow.id) == col(ChangeRow.revision_pk))
                .where(RevisionRow.repo_pk == repo.id)
                .group_by(col(ChangeRow.severity))
            )
            if after is not None:
                pinned = self._revision_pk(session, repo, after)
                query = query.where(col(RevisionRow.id) > pinned)
            if since is not None:
                query = query.where(col(RevisionRow.committed_at) >= since)
            counts = dict.fromkeys(Severity, 0)
            for severity, count in session.exec(query).all():
                counts[Severity(severity)] = int(count)
            return counts

    def recent_changes(
        self, *, repo_id: str | None = None, org: str | None = None, limit: int = 50
    ) -> list[FeedItem]:
        with self._session() as session:
            with_changes = select(ChangeRow.revision_pk).distinct()
            query = (
                select(RevisionRow, RepoRow.repo_id)
                .join(RepoRow, col(RepoRow.id) == col(RevisionRow.repo_pk))
                .where(col(RevisionRow.id).in_(with_changes))
            )
            if repo_id is not None:
                query = query.where(RepoRow.repo_id == repo_id)
            if org is not None:
                # NOTE: not LIKE: `_` and `%` are wildcards in it, and SQLite's LIKE ignores
                # case (`/feeds/m_ta-LLAMA.atom` matched meta-llama); `=` on a prefix is exact.
                prefix = f"{org}/"
                query = query.where(func.substr(col(RepoRow.repo_id), 1, len(prefix)) == prefix)
            revisions = session.exec(query.order_by(col(RevisionRow.id).desc()).limit(limit)).all()
            ids = [row.id for row, _ in revisions]
            grouped: dict[int, list[ChangeRow]] = {}
            for change in session.exec(
                select(ChangeRow)
                .where(col(ChangeRow.revision_pk).in_(ids))
                .order_by(col(ChangeRow.revision_pk), col(ChangeRow.position))
            ).all():
                grouped.setdefault(change.revision_pk, []).append(change)
            items = []
            for row, repo in revisions:
                rows = grouped.get(row.id or 0, [])
                base = rows[0].base_sha if rows else None
                items.append(
                    FeedItem(
                        repo,
                        utc(row.recorded_at),
                        RevisionChanges(
                            as_revision(repo, row),
                            CommitSha(base) if base else None,
                            tuple(as_change(c) for c in rows),
                        ),
                    )
                )
            return items

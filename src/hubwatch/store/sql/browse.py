"""SqlBrowseStore: the BrowseStore part of SqlStore (paged history, counts, recent changes)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import UTC, datetime

from sqlalchemy import func
from sqlmodel import Session, col, select

from hubwatch.errors import UnknownRevision
from hubwatch.models import (
    Change,
    CommitSha,
    FeedItem,
    HistoryPage,
    RevisionChanges,
    Severity,
    StoredRevision,
)
from hubwatch.store.browse import BrowseStore
from hubwatch.store.sql.tables import ChangeRow, RepoRow, RevisionRow


class SqlBrowseStore(BrowseStore):
    """Mixin for SqlStore; relies on its `_session()` and `_repo_row()`."""

    def _session(self) -> AbstractContextManager[Session]:  # pragma: no cover - SqlStore's
        raise NotImplementedError

    def _repo_row(self, session: Session, repo_id: str) -> RepoRow:  # pragma: no cover
        raise NotImplementedError

    def history_page(
        self, repo_id: str, *, before: int | None = None, limit: int = 50
    ) -> HistoryPage:
        from hubwatch.store.sql.store import _revision

        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            query = select(RevisionRow).where(RevisionRow.repo_pk == repo.id)
            if before is not None:
                query = query.where(col(RevisionRow.id) < before)
            rows = session.exec(query.order_by(col(RevisionRow.id).desc()).limit(limit + 1)).all()
            more = len(rows) > limit
            rows = rows[:limit]
            return HistoryPage(
                tuple(_revision(repo_id, row) for row in rows),
                (rows[-1].id if more else None),
                tuple(row.id or 0 for row in rows),
            )

    def latest_revision(self, repo_id: str) -> StoredRevision | None:
        from hubwatch.store.sql.store import _revision

        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            row = session.exec(
                select(RevisionRow)
                .where(RevisionRow.repo_pk == repo.id, col(RevisionRow.reachable).is_(True))
                .order_by(col(RevisionRow.id).desc())
                .limit(1)
            ).first()
            return _revision(repo_id, row) if row else None

    def revision_changes(self, repo_id: str, sha: CommitSha) -> RevisionChanges:
        from hubwatch.store.sql.store import _revision

        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            revision = session.exec(
                select(RevisionRow).where(RevisionRow.repo_pk == repo.id, RevisionRow.sha == sha)
            ).first()
            if revision is None:
                raise UnknownRevision(f"{repo_id} has no stored revision {sha}")
            rows = session.exec(
                select(ChangeRow)
                .where(ChangeRow.revision_pk == revision.id)
                .order_by(col(ChangeRow.position))
            ).all()
            base = rows[0].base_sha if rows else None
            return RevisionChanges(
                _revision(repo_id, revision),
                CommitSha(base) if base else None,
                tuple(_change(row) for row in rows),
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
                pinned = session.exec(
                    select(RevisionRow.id).where(
                        RevisionRow.repo_pk == repo.id, RevisionRow.sha == after
                    )
                ).first()
                if pinned is None:
                    raise UnknownRevision(f"{repo_id} has no stored revision {after}")
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
        from hubwatch.store.sql.store import _revision

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
                query = query.where(col(RepoRow.repo_id).startswith(f"{org}/"))
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
                        _utc(row.recorded_at),
                        RevisionChanges(
                            _revision(repo, row),
                            CommitSha(base) if base else None,
                            tuple(_change(c) for c in rows),
                        ),
                    )
                )
            return items


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _change(row: ChangeRow) -> Change:
    return Change(
        row.kind, Severity(row.severity), row.summary, row.path, row.before, row.after, row.detail
    )

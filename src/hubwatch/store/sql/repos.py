"""SqlRepoStore: the RepoStore part of SqlStore (tracked repos and their events)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete, select

from hubwatch.models import (
    CommitSha,
    RepoEvent,
    RepoRef,
    RepoState,
    TrackedRepo,
)
from hubwatch.store.dbapi import tracked_repo
from hubwatch.store.repos import RepoStore
from hubwatch.store.sql.base import SqlBase, as_event
from hubwatch.store.sql.tables import ChangeTallyRow, EventRow, FileRow, RepoRow, RevisionRow


class SqlRepoStore(SqlBase, RepoStore):
    """Repos and events on SQL; removing a repo removes its revisions, files and events."""

    def _tracked(self, row: RepoRow) -> TrackedRepo:
        return tracked_repo(
            row.repo_id,
            row.source,
            row.url,
            row.branch,
            row.state,
            row.head_sha,
            row.revision_count,  # kept on write: a count grew with history
            row.added_at,
            row.last_polled_at,
            row.last_error,
            row.renamed_to,
            row.failures,
        )

    def add_repo(self, repo: RepoRef) -> bool:
        with self._session() as session:
            if session.exec(select(RepoRow.id).where(RepoRow.repo_id == repo.repo_id)).first():
                return False
            session.add(
                RepoRow(
                    repo_id=repo.repo_id,
                    source=repo.source.value,
                    url=repo.url,
                    branch=repo.branch,
                    added_at=datetime.now(UTC),
                )
            )
            try:
                session.commit()
            except IntegrityError:  # tracked concurrently by another process
                session.rollback()
                return False
            return True

    def remove_repo(self, repo_id: str) -> None:
        with self._session() as session:
            row = self._repo_row(session, repo_id)
            revisions = select(RevisionRow.id).where(RevisionRow.repo_pk == row.id)
            session.exec(delete(FileRow).where(col(FileRow.revision_pk).in_(revisions)))
            session.exec(delete(RevisionRow).where(col(RevisionRow.repo_pk) == row.id))
            session.exec(delete(EventRow).where(col(EventRow.repo_pk) == row.id))
            session.exec(delete(ChangeTallyRow).where(col(ChangeTallyRow.repo_pk) == row.id))
            session.delete(row)
            session.commit()  # blobs stay: other repos may share them

    def get_repo(self, repo_id: str) -> TrackedRepo:
        with self._session() as session:
            return self._tracked(self._repo_row(session, repo_id))

    def list_repos(self) -> list[TrackedRepo]:
        with self._session() as session:
            rows = session.exec(select(RepoRow).order_by(RepoRow.repo_id)).all()
            return [self._tracked(row) for row in rows]

    def update_repo(
        self,
        repo_id: str,
        *,
        state: RepoState | None = None,
        head: CommitSha | None = None,
        polled_at: datetime | None = None,
        error: str | None = None,
        clear_error: bool = False,
        renamed_to: str | None = None,
    ) -> None:
        values: dict[str, Any] = {}
        if state is not None:
            values["state"] = state.value
        if head is not None:
            values["head_sha"] = head
        if polled_at is not None:
            values["last_polled_at"] = polled_at
        if error is not None:
            values["last_error"] = error
        elif clear_error:
            values["last_error"] = None
            values["failures"] = 0
        if renamed_to is not None:
            values["renamed_to"] = renamed_to
        if not values:
            return
        with self._session() as session:
            self._repo_row(session, repo_id)
            session.exec(update(RepoRow).where(col(RepoRow.repo_id) == repo_id).values(**values))
            session.commit()

    def record_failure(self, repo_id: str, error: str, polled_at: datetime) -> int:
        with self._session() as session:
            self._repo_row(session, repo_id)
            session.exec(
                update(RepoRow)
                .where(col(RepoRow.repo_id) == repo_id)
                .values(
                    last_error=error, last_polled_at=polled_at, failures=col(RepoRow.failures) + 1
                )
            )
            failures = session.exec(
                select(RepoRow.failures).where(RepoRow.repo_id == repo_id)
            ).one()
            session.commit()
            return int(failures)

    def add_event(self, repo_id: str, event: RepoEvent) -> None:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            assert repo.id is not None
            session.add(
                EventRow(
                    repo_pk=repo.id,
                    kind=event.kind.value,
                    sha=event.sha,
                    detail=event.detail,
                    at=event.at or datetime.now(UTC),
                )
            )
            session.commit()

    def events(self, repo_id: str) -> list[RepoEvent]:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            rows = session.exec(
                select(EventRow).where(EventRow.repo_pk == repo.id).order_by(col(EventRow.id))
            ).all()
            return [as_event(row) for row in rows]

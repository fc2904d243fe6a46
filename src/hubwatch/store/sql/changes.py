"""SqlChangeStore: the ChangeStore part of SqlStore (a mixin over its session and repo lookup)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

from sqlalchemy import func
from sqlmodel import Session, col, delete, select

from hubwatch.errors import UnknownRevision
from hubwatch.models import Change, CommitSha, RevisionChanges, Severity, Snapshot, StoredRevision
from hubwatch.store.changes import ChangeStore
from hubwatch.store.sql.tables import ChangeRow, RepoRow, RevisionRow


class SqlChangeStore(ChangeStore):
    """Writes a snapshot's changes in the revision's transaction; reads them back by repo."""

    # Provided by SqlStore.
    def _session(self) -> AbstractContextManager[Session]:
        raise NotImplementedError

    def _repo_row(self, session: Session, repo_id: str) -> RepoRow:
        raise NotImplementedError

    def revision(self, repo_id: str, rev: str) -> StoredRevision:
        raise NotImplementedError

    def _add_changes(self, session: Session, revision_pk: int, snapshot: Snapshot) -> None:
        """Queue the snapshot's changes in the session that stores its revision."""
        session.add_all(_rows(revision_pk, snapshot.base, 0, snapshot.changes))

    def changes(
        self, repo_id: str, *, since: str | None = None, min_severity: Severity | None = None
    ) -> list[RevisionChanges]:
        from hubwatch.store.sql.store import _revision

        since_sha = self.revision(repo_id, since).sha if since else None
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            query = (
                select(RevisionRow, ChangeRow)
                .join(ChangeRow, col(ChangeRow.revision_pk) == col(RevisionRow.id))
                .where(RevisionRow.repo_pk == repo.id)
                .order_by(col(RevisionRow.id), col(ChangeRow.position))
            )
            if since_sha is not None:
                after = select(RevisionRow.id).where(
                    RevisionRow.repo_pk == repo.id, RevisionRow.sha == since_sha
                )
                query = query.where(col(RevisionRow.id) > after.scalar_subquery())
            if min_severity is not None:
                query = query.where(col(ChangeRow.rank) >= min_severity.rank)
            grouped: dict[int, tuple[RevisionRow, str | None, list[Change]]] = {}
            for revision, row in session.exec(query).all():
                assert revision.id is not None
                entry = grouped.setdefault(revision.id, (revision, row.base_sha, []))
                entry[2].append(_change(row))
            return [
                RevisionChanges(
                    _revision(repo_id, revision),
                    CommitSha(base) if base else None,
                    tuple(changes),
                )
                for revision, base, changes in grouped.values()
            ]

    def replace_changes(
        self, repo_id: str, sha: CommitSha, kind: str, changes: Sequence[Change]
    ) -> None:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            revision = session.exec(
                select(RevisionRow).where(RevisionRow.repo_pk == repo.id, RevisionRow.sha == sha)
            ).first()
            if revision is None or revision.id is None:
                raise UnknownRevision(f"{repo_id} has no stored revision {sha}")
            session.exec(
                delete(ChangeRow).where(
                    col(ChangeRow.revision_pk) == revision.id, col(ChangeRow.kind) == kind
                )
            )
            last = session.exec(
                select(func.max(ChangeRow.position)).where(ChangeRow.revision_pk == revision.id)
            ).one()
            base = revision.parents[0] if revision.parents else None
            start = 0 if last is None else int(last) + 1
            session.add_all(_rows(revision.id, base, start, changes))
            session.commit()


def _rows(
    revision_pk: int, base: str | None, start: int, changes: Sequence[Change]
) -> list[ChangeRow]:
    """Rows for `changes`, numbered from `start` in the order given."""
    return [
        ChangeRow(
            revision_pk=revision_pk,
            base_sha=base,
            position=start + i,
            kind=change.kind[:64],
            severity=change.severity.value,
            rank=change.severity.rank,
            summary=_text(change.summary),
            path=change.path[:1024] if change.path else None,
            before=change.before,
            after=change.after,
            detail=_text(change.detail) if change.detail is not None else None,
        )
        for i, change in enumerate(changes)
    ]


def _text(value: str) -> str:
    """Text PostgreSQL accepts: upstream values quoted in a summary may hold NUL characters."""
    return value.replace("\x00", "\ufffd")


def _change(row: ChangeRow) -> Change:
    return Change(
        row.kind,
        Severity(row.severity),
        row.summary,
        row.path,
        row.before,
        row.after,
        row.detail,
    )

"""SqlChangeStore: the ChangeStore part of SqlStore (changes stored with their revision)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, func
from sqlmodel import col, delete, select

from hubwatch.models import Change, CommitSha, RevisionChanges, Severity
from hubwatch.store.changes import ChangeStore
from hubwatch.store.sql.base import SqlBase, as_change, as_revision
from hubwatch.store.sql.tables import ChangeRow, RevisionRow
from hubwatch.store.sql.tally import add_to_tally, breaking_in


class SqlChangeStore(SqlBase, ChangeStore):
    """Reads a repo's changes back by revision; `change_rows` writes them with the revision."""

    def changes(
        self,
        repo_id: str,
        *,
        since: str | None = None,
        min_severity: Severity | None = None,
        limit: int | None = None,
    ) -> list[RevisionChanges]:
        with self._session() as session:
            since_sha = self._revision_by_prefix(session, repo_id, since).sha if since else None
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
            if limit is not None:  # the first `limit` revisions the query would return
                firsts = (
                    query.with_only_columns(col(RevisionRow.id))
                    .distinct()
                    .order_by(None)
                    .order_by(col(RevisionRow.id))
                    .limit(limit)
                )
                query = query.where(col(RevisionRow.id).in_(firsts.scalar_subquery()))
            grouped: dict[int, tuple[RevisionRow, str | None, list[Change]]] = {}
            for revision, row in session.exec(query).all():
                assert revision.id is not None
                entry = grouped.setdefault(revision.id, (revision, row.base_sha, []))
                entry[2].append(as_change(row))
            return [
                RevisionChanges(
                    as_revision(repo_id, revision),
                    CommitSha(base) if base else None,
                    tuple(changes),
                )
                for revision, base, changes in grouped.values()
            ]

    def replace_changes(
        self, repo_id: str, sha: CommitSha, kind: str, changes: Sequence[Change]
    ) -> None:
        with self._session() as session:
            revision = self._revision_row(session, self._repo_row(session, repo_id), sha)
            assert revision.id is not None
            these = (col(ChangeRow.revision_pk) == revision.id) & (col(ChangeRow.kind) == kind)
            replaced = session.exec(
                select(
                    func.count(),
                    func.count(case((col(ChangeRow.severity) == Severity.BREAKING.value, 1))),
                ).where(these)
            ).one()
            session.exec(delete(ChangeRow).where(these))
            last = session.exec(
                select(func.max(ChangeRow.position)).where(ChangeRow.revision_pk == revision.id)
            ).one()
            base = revision.parents[0] if revision.parents else None
            start = 0 if last is None else int(last) + 1
            session.add_all(change_rows(revision, base, start, changes))
            total, breaking = len(changes) - replaced[0], breaking_in(changes) - replaced[1]
            add_to_tally(session, self.dialect, revision.repo_pk, revision.id, total, breaking)
            session.commit()


def change_rows(
    revision: RevisionRow, base: str | None, start: int, changes: Sequence[Change]
) -> list[ChangeRow]:
    """Rows for `changes` of the stored `revision`, numbered from `start` in the order given."""
    assert revision.id is not None  # flushed: the rows point at it
    values = change_values(
        revision.id, revision.repo_pk, revision.recorded_at, base, start, changes
    )
    return [ChangeRow(**row) for row in values]


def change_values(
    revision_pk: int,
    repo_pk: int,
    observed_at: datetime,
    base: str | None,
    start: int,
    changes: Sequence[Change],
) -> list[dict[str, Any]]:
    """The column values of `change_rows`, for one Core executemany; `observed_at` is when
    the revision was recorded (what time windows count by)."""
    return [
        {
            "revision_pk": revision_pk,
            "repo_pk": repo_pk,
            "observed_at": observed_at,
            "base_sha": base,
            "position": start + i,
            "kind": change.kind[:64],
            "severity": change.severity.value,
            "rank": change.severity.rank,
            "summary": _text(change.summary),
            "path": change.path[:1024] if change.path else None,
            "before": change.before,
            "after": change.after,
            "detail": _text(change.detail) if change.detail is not None else None,
        }
        for i, change in enumerate(changes)
    ]


def _text(value: str) -> str:
    """Text PostgreSQL accepts: upstream values quoted in a summary may hold NUL characters."""
    return value.replace("\x00", "\ufffd")

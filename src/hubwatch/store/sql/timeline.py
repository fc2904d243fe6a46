"""SqlTimelineStore: the TimelineStore part of SqlStore (filtered timeline pages, trends)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any

from sqlalchemy import ColumnElement, func, or_
from sqlmodel import Session, col, select

from hubwatch.models import (
    ChangeFilter,
    CommitSha,
    Estimate,
    RevisionChanges,
    Severity,
    TimelinePage,
    TrendPoint,
)
from hubwatch.models.timeline import WEIGHT_SUFFIXES
from hubwatch.store.sql.base import SqlBase, as_change, as_revision, utc
from hubwatch.store.sql.tables import BlobRow, ChangeRow, EstimateRow, FileRow, RevisionRow
from hubwatch.store.timeline import TimelineStore


class SqlTimelineStore(SqlBase, TimelineStore):
    """A page of revisions (a range of the revision index, narrowed by an EXISTS on the
    change index), then their changes and their trend values, one query each."""

    def timeline(
        self, repo_id: str, where: ChangeFilter, *, offset: int = 0, limit: int = 50
    ) -> TimelinePage:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            query = select(RevisionRow).where(RevisionRow.repo_pk == repo.id)
            if where.since is not None:
                query = query.where(col(RevisionRow.committed_at) >= where.since.astimezone(UTC))
            taken = taken_by(where)
            if where.by_change:
                query = query.where(
                    select(ChangeRow.id)
                    .where(
                        ChangeRow.repo_pk == repo.id,
                        col(ChangeRow.revision_pk) == col(RevisionRow.id),
                        *taken,
                    )
                    .exists()
                )
            query = query.order_by(col(RevisionRow.id).desc()).offset(offset).limit(limit + 1)
            rows = session.exec(query).all()
            shown = rows[:limit]
            grouped = _changes(session, [r.id for r in shown if r.id is not None], taken)
            pages = []
            for row in shown:
                found = grouped.get(row.id or 0, [])
                base = found[0].base_sha if found else None
                pages.append(
                    RevisionChanges(
                        as_revision(repo_id, row),
                        CommitSha(base) if base else None,
                        tuple(as_change(c) for c in found),
                    )
                )
            return TimelinePage(tuple(pages), len(rows) > limit)

    def trend(self, repo_id: str, *, limit: int = 200) -> list[TrendPoint]:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            rows = session.exec(
                select(RevisionRow.id, RevisionRow.sha, RevisionRow.committed_at, EstimateRow.data)
                .outerjoin(EstimateRow, col(EstimateRow.revision_pk) == col(RevisionRow.id))
                .where(RevisionRow.repo_pk == repo.id)
                .order_by(col(RevisionRow.id).desc())
                .limit(limit)
            ).all()
            ids = [row[0] for row in rows if row[0] is not None]
            breaking = set(
                session.exec(
                    select(ChangeRow.revision_pk)
                    .where(
                        ChangeRow.repo_pk == repo.id,
                        col(ChangeRow.revision_pk).in_(ids),
                        ChangeRow.severity == Severity.BREAKING.value,
                    )
                    .distinct()
                ).all()
            )
            weights = _weights(session, ids)
            configs = _configs(session, ids)
            return [
                TrendPoint(
                    CommitSha(sha),
                    utc(date),
                    pk in breaking,
                    Estimate.from_json(data) if data is not None else None,
                    configs.get(pk),
                    weights.get(pk),
                )
                for pk, sha, date, data in reversed(rows)
            ]


def taken_by(where: ChangeFilter) -> list[ColumnElement[bool]]:
    """The filter's severity and kind as conditions on a change row."""
    taken: list[ColumnElement[bool]] = []
    if where.severity is not None:
        taken.append(col(ChangeRow.severity) == where.severity.value)
    if where.kind is not None:
        below = f"{where.kind}."
        # NOTE: not LIKE: `_` is its wildcard, and kinds are full of underscores
        taken.append(
            or_(
                col(ChangeRow.kind) == where.kind,
                func.substr(col(ChangeRow.kind), 1, len(below)) == below,
            )
        )
    return taken


def _changes(
    session: Session, ids: Sequence[int], taken: list[ColumnElement[bool]]
) -> dict[int, list[ChangeRow]]:
    """The changes of revisions `ids` that `taken` lets through, by revision, in order."""
    grouped: dict[int, list[ChangeRow]] = {}
    for change in session.exec(
        select(ChangeRow)
        .where(col(ChangeRow.revision_pk).in_(ids), *taken)
        .order_by(col(ChangeRow.revision_pk), col(ChangeRow.position))
    ).all():
        grouped.setdefault(change.revision_pk, []).append(change)
    return grouped


def _weights(session: Session, ids: Sequence[int]) -> dict[int, int]:
    """Each revision's weight files' sizes added up (revisions without any left out)."""
    path = func.lower(col(FileRow.path))
    found: Sequence[Any] = session.exec(
        select(FileRow.revision_pk, func.sum(col(FileRow.size)))
        .where(
            col(FileRow.revision_pk).in_(ids),
            or_(*(path.like(f"%{suffix}") for suffix in WEIGHT_SUFFIXES)),
        )
        .group_by(col(FileRow.revision_pk))
    ).all()
    return {int(pk): int(total) for pk, total in found}


def _configs(session: Session, ids: Sequence[int]) -> dict[int, bytes]:
    """Each revision's stored config.json; a config unchanged across revisions read once."""
    shas = dict(
        session.exec(
            select(FileRow.revision_pk, FileRow.content_sha256).where(
                col(FileRow.revision_pk).in_(ids),
                FileRow.path == "config.json",
                col(FileRow.content_sha256).is_not(None),
            )
        ).all()
    )
    blobs = dict(
        session.exec(
            select(BlobRow.sha256, BlobRow.data).where(col(BlobRow.sha256).in_(set(shas.values())))
        ).all()
    )
    return {pk: blobs[sha] for pk, sha in shas.items() if sha in blobs}

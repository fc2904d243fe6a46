"""SqlAdvisoryStore: the AdvisoryStore half of SqlStore, on the same engine and sessions."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete, func, select

from hubwatch.errors import StoreError
from hubwatch.models import (
    AdvisoryId,
    AdvisoryMatch,
    AdvisoryReport,
    CommitSha,
    Dependency,
    MatchStatus,
    Publication,
    SeverityScore,
    publication_id,
)
from hubwatch.store.advisories import AdvisoryStore
from hubwatch.store.sql.base import SqlBase, utc
from hubwatch.store.sql.tables import (
    AdvisoryCheckRow,
    AdvisoryMatchRow,
    DependencyRow,
    PublicationRow,
)

_ASSIGN_ATTEMPTS = 5


class SqlAdvisoryStore(SqlBase, AdvisoryStore):
    """Dependencies, matches and checks per revision; publication ids with a retried counter."""

    def record_advisories(
        self,
        repo_id: str,
        sha: CommitSha,
        dependencies: Sequence[Dependency],
        matches: Sequence[AdvisoryMatch] | None,
        *,
        service: str,
        error: str | None = None,
    ) -> list[AdvisoryMatch]:
        now = datetime.now(UTC)
        with self._session() as session:
            pk = self._revision_pk(session, self._repo_row(session, repo_id), sha)
            session.exec(delete(DependencyRow).where(col(DependencyRow.revision_pk) == pk))
            seen: set[tuple[str, str, str]] = set()
            for dep in dependencies:
                key = (dep.ecosystem, dep.name, dep.source)
                if key in seen:  # the same package twice in one file: keep the first
                    continue
                seen.add(key)
                session.add(
                    DependencyRow(
                        revision_pk=pk,
                        ecosystem=dep.ecosystem,
                        name=dep.name,
                        source=dep.source,
                        version=dep.version,
                        spec=dep.spec,
                        reason=dep.reason,
                    )
                )
            check = session.get(AdvisoryCheckRow, pk)
            if check is None:
                check = AdvisoryCheckRow(revision_pk=pk, checked_at=now, service=service)
            check.checked_at, check.service, check.error = now, service, error
            session.add(check)
            new: list[AdvisoryMatch] = []
            if matches is not None:
                old = {
                    (row.advisory_id, row.package): row.attached_at
                    for row in session.exec(
                        select(AdvisoryMatchRow).where(AdvisoryMatchRow.revision_pk == pk)
                    ).all()
                }
                session.exec(
                    delete(AdvisoryMatchRow).where(col(AdvisoryMatchRow.revision_pk) == pk)
                )
                session.flush()
                kept: set[tuple[str, str]] = set()
                for match in matches:
                    key2 = (match.advisory_id, match.package)
                    if key2 in kept:
                        continue
                    kept.add(key2)
                    if key2 not in old:
                        new.append(match)
                    session.add(_match_row(pk, match, old.get(key2, now)))
            session.commit()
            return new

    def advisory_report(self, repo_id: str, sha: CommitSha) -> AdvisoryReport:
        with self._session() as session:
            pk = self._revision_pk(session, self._repo_row(session, repo_id), sha)
            deps = session.exec(
                select(DependencyRow)
                .where(DependencyRow.revision_pk == pk)
                .order_by(col(DependencyRow.name), col(DependencyRow.source))
            ).all()
            rows = session.exec(
                select(AdvisoryMatchRow)
                .where(AdvisoryMatchRow.revision_pk == pk)
                .order_by(col(AdvisoryMatchRow.package), col(AdvisoryMatchRow.advisory_id))
            ).all()
            check = session.get(AdvisoryCheckRow, pk)
            return AdvisoryReport(
                dependencies=tuple(
                    Dependency(d.ecosystem, d.name, d.version, d.spec, d.source, d.reason)
                    for d in deps
                ),
                matches=tuple(_match(row) for row in rows),
                checked_at=utc(check.checked_at) if check else None,
                service=check.service if check else None,
                error=check.error if check else None,
            )

    def publication(
        self, repo_id: str, sha: CommitSha, kind: str, path: str | None, year: int
    ) -> Publication:
        key = (
            col(PublicationRow.repo_id) == repo_id,
            col(PublicationRow.sha) == sha,
            col(PublicationRow.kind) == kind,
            col(PublicationRow.path) == (path or ""),
        )
        for _ in range(_ASSIGN_ATTEMPTS):
            with self._session() as session:
                row = session.exec(select(PublicationRow).where(*key)).first()
                if row is not None:
                    return _publication(row)
                last = session.exec(
                    select(func.max(PublicationRow.number)).where(PublicationRow.year == year)
                ).one()
                number = int(last or 0) + 1  # kept for ordering; the id no longer shows it
                row = PublicationRow(
                    osv_id=publication_id(repo_id, sha, kind, path, year),
                    repo_id=repo_id,
                    sha=sha,
                    kind=kind,
                    path=path or "",
                    year=year,
                    number=number,
                    published_at=datetime.now(UTC),
                )
                session.add(row)
                try:
                    session.commit()
                except IntegrityError:  # another writer took that number (or that change)
                    session.rollback()
                    continue
                return _publication(row)
        raise StoreError(f"could not assign an OSV id for {repo_id}@{sha[:12]} {kind}")

    def revise_publication(
        self, osv_id: str, digest: str, record: dict[str, Any], at: datetime
    ) -> datetime:
        with self._session() as session:
            row = session.get(PublicationRow, osv_id)
            if row is None:
                raise StoreError(f"no OSV publication {osv_id}")
            if row.digest != digest or row.withdrawn_at is not None:
                # the first export of a publication keeps `modified` = `published`
                if row.digest is not None or row.withdrawn_at is not None:
                    row.modified_at = at
                row.digest, row.record, row.withdrawn_at = digest, record, None
                session.add(row)
                session.commit()
            return utc(row.modified_at or row.published_at)

    def withdraw_publications(self, live: Collection[str], at: datetime) -> list[Publication]:
        keep = set(live)
        found = []
        with self._session() as session:
            for row in session.exec(select(PublicationRow).order_by(col(PublicationRow.osv_id))):
                if row.osv_id in keep:
                    continue
                if row.withdrawn_at is None:
                    row.withdrawn_at = row.modified_at = at
                    session.add(row)
                found.append(_publication(row))
            session.commit()
        return found


def _publication(row: PublicationRow) -> Publication:
    return Publication(
        AdvisoryId(row.osv_id),
        utc(row.published_at),
        utc(row.modified_at) if row.modified_at else None,
        utc(row.withdrawn_at) if row.withdrawn_at else None,
        dict(row.record) if row.record else None,
    )


def _match_row(pk: int, match: AdvisoryMatch, attached_at: datetime) -> AdvisoryMatchRow:
    return AdvisoryMatchRow(
        revision_pk=pk,
        advisory_id=match.advisory_id,
        package=match.package,
        aliases=list(match.aliases),
        summary=match.summary,
        severity=[{"type": s.type, "vector": s.vector, "score": s.score} for s in match.severity],
        fixed=list(match.fixed),
        version=match.version,
        status=match.status.value,
        reason=match.reason,
        modified=match.modified[:40],
        attached_at=attached_at,
    )


def _match(row: AdvisoryMatchRow) -> AdvisoryMatch:
    severity = []
    for entry in row.severity:
        score = entry.get("score")
        severity.append(
            SeverityScore(
                str(entry.get("type", "")),
                str(entry.get("vector", "")),
                float(score) if isinstance(score, int | float) else None,
            )
        )
    return AdvisoryMatch(
        advisory_id=AdvisoryId(row.advisory_id),
        aliases=tuple(row.aliases),
        summary=row.summary,
        severity=tuple(severity),
        fixed=tuple(row.fixed),
        package=row.package,
        version=row.version,
        status=MatchStatus(row.status),
        reason=row.reason,
        modified=row.modified,
    )

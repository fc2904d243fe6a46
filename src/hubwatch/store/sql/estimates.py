"""SqlEstimateStore: the EstimateStore part of SqlStore (an estimate per revision, by sha)."""

from __future__ import annotations

from sqlalchemy import Table
from sqlmodel import col, select

from hubwatch.models import CommitSha, Estimate
from hubwatch.store.estimates import EstimateStore
from hubwatch.store.sql.base import SqlBase
from hubwatch.store.sql.tables import EstimateRow, RepoRow, RevisionRow

ESTIMATE: Table = EstimateRow.__table__  # type: ignore[attr-defined]  # SQLModel does not declare it


class SqlEstimateStore(SqlBase, EstimateStore):
    """Reads estimates back; `estimate_values` writes them in `add_revision`'s transaction."""

    def estimate(self, repo_id: str, sha: CommitSha) -> Estimate | None:
        with self._session() as session:
            found = session.exec(
                select(RevisionRow.id, EstimateRow.data)
                .join(RepoRow, col(RepoRow.id) == RevisionRow.repo_pk)
                .outerjoin(EstimateRow, col(EstimateRow.revision_pk) == RevisionRow.id)
                .where(RepoRow.repo_id == repo_id, RevisionRow.sha == sha)
            ).first()
            if found is None:  # NotTracked or UnknownRevision, whichever it is
                self._revision_pk(session, self._repo_row(session, repo_id), sha)
            data = found[1] if found is not None else None
            return Estimate.from_json(data) if data is not None else None


def estimate_values(revision_pk: int, estimate: Estimate) -> dict[str, object]:
    """The row storing `estimate` (its JSON, with `ok` and `error` as columns), for Core."""
    return {
        "revision_pk": revision_pk,
        "ok": estimate.ok,
        "error": estimate.error,
        "data": estimate.to_json(),
    }

"""SqlEstimateStore: the EstimateStore part of SqlStore (an estimate per revision, by sha)."""

from __future__ import annotations

from hubwatch.models import CommitSha, Estimate
from hubwatch.store.estimates import EstimateStore
from hubwatch.store.sql.base import SqlBase
from hubwatch.store.sql.tables import EstimateRow


class SqlEstimateStore(SqlBase, EstimateStore):
    """Reads estimates back; `estimate_row` writes them in `add_revision`'s transaction."""

    def estimate(self, repo_id: str, sha: CommitSha) -> Estimate | None:
        with self._session() as session:
            revision = self._revision_pk(session, self._repo_row(session, repo_id), sha)
            row = session.get(EstimateRow, revision)
            return Estimate.from_json(row.data) if row is not None else None


def estimate_row(revision_pk: int, estimate: Estimate) -> EstimateRow:
    """The row storing `estimate` (its JSON, with `ok` and `error` as columns)."""
    return EstimateRow(
        revision_pk=revision_pk,
        ok=estimate.ok,
        error=estimate.error,
        data=estimate.to_json(),
    )

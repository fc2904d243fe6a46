"""SqlStore's part for estimates: written inside add_revision's transaction, read by sha."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from sqlmodel import Session, select

from hubwatch.errors import UnknownRevision
from hubwatch.models import CommitSha, Snapshot
from hubwatch.store.estimates import EstimateStore
from hubwatch.store.sql.tables import EstimateRow, RepoRow, RevisionRow


class SqlEstimateStore(EstimateStore):
    """Mixin for SqlStore; relies on its `_session()` and `_repo_row()`."""

    def _session(self) -> AbstractContextManager[Session]:  # pragma: no cover - SqlStore's
        raise NotImplementedError

    def _repo_row(self, session: Session, repo_id: str) -> RepoRow:  # pragma: no cover
        raise NotImplementedError

    def _add_estimate(self, session: Session, revision_pk: int, snapshot: Snapshot) -> None:
        """Queue the snapshot's estimate in the revision's own session (same transaction)."""
        data = snapshot.estimate
        if data is None:
            return
        error = data.get("error")
        session.add(
            EstimateRow(
                revision_pk=revision_pk,
                ok=bool(data.get("ok")),
                error=error if isinstance(error, str) else None,
                data=data,
            )
        )

    def estimate(self, repo_id: str, sha: CommitSha) -> dict[str, Any] | None:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            revision = session.exec(
                select(RevisionRow.id).where(RevisionRow.repo_pk == repo.id, RevisionRow.sha == sha)
            ).first()
            if revision is None:
                raise UnknownRevision(f"{repo_id} has no stored revision {sha}")
            row = session.get(EstimateRow, revision)
            return dict(row.data) if row is not None else None

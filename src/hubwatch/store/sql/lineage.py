"""SqlLineageStore: the LineageStore part of SqlStore (one lineage row per tracked derivative)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select as core_select

from hubwatch.models import CommitSha
from hubwatch.models.lineage import Lineage, LineageStatus, Relation
from hubwatch.store.lineage import LineageStore
from hubwatch.store.sql.base import REPO, SqlBase, utc
from hubwatch.store.sql.tables import LineageRow

LINEAGE = LineageRow.__table__  # type: ignore[attr-defined]  # SQLModel declares it untyped


class SqlLineageStore(SqlBase, LineageStore):
    """Lineage records on SQL: written by an upsert on the derivative's key."""

    def set_lineage(self, lineage: Lineage) -> None:
        with self._transaction() as connection:
            values = {
                "repo_pk": self._repo_pk(connection, lineage.repo_id),
                "sha": lineage.sha,
                "base_repo_id": lineage.base_repo_id,
                "relation": lineage.relation.value,
                "status": lineage.status.value,
                "base_sha": lineage.base_sha,
                "missed": [dict(m) for m in lineage.missed],
                "aspects": list(lineage.aspects),
                "checked_at": lineage.checked_at,
                "detail": lineage.detail,
                "extra": dict(lineage.extra),
            }
            insert = self._insert(LineageRow).values(**values)
            connection.execute(
                insert.on_conflict_do_update(
                    index_elements=["repo_pk"],
                    set_={k: v for k, v in values.items() if k != "repo_pk"},
                )
            )

    def lineage_of(self, repo_id: str) -> Lineage | None:
        with self._reading() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            row = connection.execute(
                core_select(LINEAGE).where(LINEAGE.c.repo_pk == repo_pk)
            ).first()
            return as_lineage(repo_id, row._mapping) if row is not None else None

    def derivatives_of(self, base_repo_id: str) -> list[Lineage]:
        with self._reading() as connection:
            rows = connection.execute(
                core_select(LINEAGE, REPO.c.repo_id.label("derivative_id"))
                .join(REPO, REPO.c.id == LINEAGE.c.repo_pk)
                .where(LINEAGE.c.base_repo_id == base_repo_id)
                .order_by(REPO.c.repo_id)
            ).all()
            return [as_lineage(row.derivative_id, row._mapping) for row in rows]


def as_lineage(repo_id: str, row: Any) -> Lineage:
    """A stored lineage row (a Core row's mapping) as the record it was written from."""
    return Lineage(
        repo_id=repo_id,
        sha=CommitSha(row["sha"]),
        base_repo_id=row["base_repo_id"],
        relation=Relation(row["relation"]),
        status=LineageStatus(row["status"]),
        base_sha=CommitSha(row["base_sha"]) if row["base_sha"] else None,
        missed=tuple(row["missed"]),
        aspects=tuple(row["aspects"]),
        checked_at=utc(row["checked_at"]),
        detail=row["detail"],
        extra=dict(row["extra"]),
    )

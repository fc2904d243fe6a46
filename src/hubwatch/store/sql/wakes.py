"""SqlStore's part for what discovery reads and asks: entries by the page, wakes, due times."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, case, func, or_, update
from sqlmodel import Session, col, select

from hubwatch.models import (
    CommitSha,
    RepoRef,
    RepoStatus,
    ScheduleEntry,
    SourceKind,
    WakePriority,
)
from hubwatch.store.sql.base import SqlBase, batches, utc
from hubwatch.store.sql.tables import RepoRow, ScheduleRow, SubscriptionRow


class SqlWakes(SqlBase):
    """Schedule entries read a page at a time, so discovery's memory does not grow with the
    number of tracked repos; wakes with their priority; due times; the listing's verdicts."""

    def schedule_entries(self) -> list[ScheduleEntry]:
        entries: list[ScheduleEntry] = []
        after: str | None = None
        while page := self.schedule_page(after, 5_000):
            entries += page
            after = page[-1].ref.repo_id
        return entries

    def schedule_page(
        self, after: str | None, limit: int, due_by: datetime | None = None
    ) -> list[ScheduleEntry]:
        query = self._entry_query().order_by(RepoRow.repo_id).limit(limit)
        if after is not None:
            query = query.where(col(RepoRow.repo_id) > after)
        if due_by is not None:
            query = query.where(
                or_(col(ScheduleRow.due_at).is_(None), col(ScheduleRow.due_at) <= due_by)
            )
        return self._entries(query)

    def schedule_for(
        self, repo_ids: Iterable[str], object_ids: Iterable[str] = ()
    ) -> list[ScheduleEntry]:
        entries: dict[str, ScheduleEntry] = {}
        for column, values in ((RepoRow.repo_id, repo_ids), (RepoRow.hub_object_id, object_ids)):
            for chunk in batches(sorted(set(values))):
                for entry in self._entries(self._entry_query().where(col(column).in_(chunk))):
                    entries[entry.ref.repo_id] = entry
        return sorted(entries.values(), key=lambda e: e.ref.repo_id)

    def tracked_count(self, source: SourceKind) -> int:
        with self._session() as session:
            query = select(func.count()).select_from(RepoRow)
            return int(session.exec(query.where(col(RepoRow.source) == source.value)).one())

    def waiting_count(self, priority: WakePriority) -> int:
        with self._session() as session:
            query = (
                select(func.count())
                .select_from(ScheduleRow)
                .where(
                    col(ScheduleRow.woken_at).is_not(None),
                    col(ScheduleRow.lease_owner).is_(None),
                    col(ScheduleRow.priority) >= int(priority),
                )
            )
            return int(session.exec(query).one())

    def _entry_query(self) -> Any:
        return select(RepoRow, ScheduleRow).join(
            ScheduleRow, col(ScheduleRow.repo_pk) == col(RepoRow.id), isouter=True
        )

    def _entries(self, query: Any) -> list[ScheduleEntry]:
        with self._session() as session:
            rows = session.exec(query).all()
            repos, orgs = self._watched(session)
            return [
                ScheduleEntry(
                    ref=RepoRef(repo.repo_id, SourceKind(repo.source), repo.url, repo.branch),
                    state=repo.state,
                    head=CommitSha(repo.head_sha) if repo.head_sha else None,
                    last_polled_at=utc(repo.last_polled_at),
                    failed=repo.last_error is not None,
                    due_at=utc(sched.due_at) if sched else None,
                    woken=bool(sched and sched.woken_at is not None),
                    listed=sched.listed if sched else None,
                    object_id=repo.hub_object_id,
                    watched=repo.repo_id in repos or repo.repo_id.partition("/")[0] in orgs,
                    pinned_at=utc(repo.pinned_at),
                )
                for repo, sched in rows
            ]

    def _watched(self, session: Session) -> tuple[set[str], set[str]]:
        """The repos and orgs subscriptions name (a small table, read with each page)."""
        rows = session.exec(select(SubscriptionRow.repo_id, SubscriptionRow.org)).all()
        return {r for r, _ in rows if r}, {o for _, o in rows if o}

    def _pks(self, session: Session, repo_ids: Iterable[str]) -> dict[str, int]:
        pks: dict[str, int] = {}
        for chunk in batches(sorted(set(repo_ids))):
            rows = session.exec(
                select(RepoRow.repo_id, RepoRow.id).where(col(RepoRow.repo_id).in_(chunk))
            ).all()
            pks.update({repo_id: pk for repo_id, pk in rows if pk is not None})
        return pks

    def _leased_pk(self, session: Session, repo_id: str) -> int | None:
        """The repo a lease was claimed under `repo_id`: a poll that followed a rename holds
        its lease on, and gives it back, under the name it was claimed by."""
        pk = self._pks(session, [repo_id]).get(repo_id)
        if pk is not None:
            return pk
        rows = session.exec(
            select(RepoRow.id, RepoRow.former_ids).where(col(RepoRow.former_ids).is_not(None))
        ).all()
        return next((pk for pk, former in rows if repo_id in (former or ())), None)

    def _ensure_rows(self, session: Session, pks: Iterable[int]) -> None:
        """Create the schedule rows that do not exist yet (due now); concurrent-safe."""
        now = datetime.now(UTC)
        for chunk in batches(sorted(set(pks))):
            have = set(
                session.exec(
                    select(ScheduleRow.repo_pk).where(col(ScheduleRow.repo_pk).in_(chunk))
                ).all()
            )
            missing = [{"repo_pk": pk, "due_at": now} for pk in chunk if pk not in have]
            if missing:
                stmt = self._insert(ScheduleRow).values(missing).on_conflict_do_nothing()
                session.execute(stmt)

    def wake(
        self,
        repo_ids: Iterable[str],
        at: datetime,
        hints: Mapping[str, RepoStatus] | None = None,
        priority: WakePriority = WakePriority.CHANGE,
    ) -> int:
        hints = hints or {}
        table = ScheduleRow.metadata.tables["repo_schedule"]
        # A repo already waiting keeps the more urgent of its two wakes: a change announced
        # while its verification waits makes it a change.
        kept = case(
            (
                (table.c.woken_at.is_not(None)) & (table.c.priority < int(priority)),
                table.c.priority,
            ),
            else_=int(priority),
        )
        with self._session() as session:
            pks = self._pks(session, repo_ids)
            self._ensure_rows(session, pks.values())
            plain = sorted(pk for repo_id, pk in pks.items() if repo_id not in hints)
            for chunk in batches(plain):
                session.execute(
                    update(table)
                    .where(table.c.repo_pk.in_(chunk))
                    .values(priority=kept, woken_at=at, hint_head=None, hint_gated=None)
                )
            hinted = [
                {"pk": pk, "head": hints[repo_id].head, "gated": hints[repo_id].gated}
                for repo_id, pk in pks.items()
                if repo_id in hints
            ]
            if hinted:
                session.connection().execute(
                    update(table)
                    .where(table.c.repo_pk == bindparam("pk"))
                    .values(
                        priority=kept,
                        woken_at=at,
                        hint_head=bindparam("head"),
                        hint_gated=bindparam("gated"),
                    ),
                    hinted,
                )
            session.commit()
            return len(pks)

    def set_due(self, due: Mapping[str, datetime]) -> None:
        if not due:
            return
        with self._session() as session:
            pks = self._pks(session, due)
            self._ensure_rows(session, pks.values())
            params = [{"pk": pks[repo_id], "due": when} for repo_id, when in due.items()]
            params = [p for p in params if p["pk"] is not None]
            table = ScheduleRow.metadata.tables["repo_schedule"]
            stmt = (
                update(table)
                .where(table.c.repo_pk == bindparam("pk"))
                .values(due_at=bindparam("due"))
            )
            session.connection().execute(stmt, params)
            session.commit()

    def set_listed(self, repo_ids: Iterable[str], listed: bool) -> None:
        with self._session() as session:
            pks = self._pks(session, repo_ids)
            self._ensure_rows(session, pks.values())
            for chunk in batches(sorted(pks.values())):
                session.execute(
                    update(ScheduleRow)
                    .where(col(ScheduleRow.repo_pk).in_(chunk))
                    .values(listed=listed)
                )
            session.commit()

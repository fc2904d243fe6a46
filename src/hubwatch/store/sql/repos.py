"""SqlRepoStore: the RepoStore part of SqlStore (tracked repos and their events)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import or_, text, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete, select

from hubwatch.models import (
    CommitSha,
    RepoEvent,
    RepoIdentity,
    RepoRef,
    RepoState,
    TrackedRepo,
)
from hubwatch.store.dbapi import tracked_repo
from hubwatch.store.repos import RepoPins, RepoStore
from hubwatch.store.sql.base import REPO, SqlBase, as_event, batches
from hubwatch.store.sql.tables import (
    ChangeTallyRow,
    EventRow,
    FileRow,
    RepoRow,
    RevisionRow,
    ScheduleRow,
    SubscriptionRow,
)

BATCH = 5_000
"""Repos per transaction in `add_repos`: large enough that a commit (an fsync on SQLite) costs
little per repo, small enough that a lock is never held for long."""


class SqlRepoStore(SqlBase, RepoStore, RepoPins):
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
            identity=_identity(row),
            former_ids=tuple(row.former_ids or ()),
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

    def add_repos(self, repos: Iterable[RepoRef]) -> int:
        added = 0
        for batch in batches(repos, BATCH):
            added += self._add_batch(batch)
        return added

    def _add_batch(self, batch: list[RepoRef]) -> int:
        """One transaction: the repos not tracked yet, and a schedule row for each (due now,
        not woken: what a repo never polled has); how many were new."""
        now = datetime.now(UTC)
        first: dict[str, RepoRef] = {}
        for repo in batch:  # a repo named again: as it was named first, like a later batch
            first.setdefault(repo.repo_id, repo)
        unique = list(first.values())
        if self.dialect == "postgresql":
            columns = {
                "ids": [repo.repo_id for repo in unique],
                "sources": [repo.source.value for repo in unique],
                "urls": [repo.url for repo in unique],
                "branches": [repo.branch for repo in unique],
                "now": now,
            }
            with self._transaction() as connection:
                return len(connection.execute(_PG_ADD, columns).all())
        rows = [
            {
                "repo_id": repo.repo_id,
                "source": repo.source.value,
                "url": repo.url,
                "branch": repo.branch,
                "state": "active",
                "added_at": now,
                "failures": 0,
                "revision_count": 0,
            }
            for repo in unique
        ]
        # NOTE: executemany of one INSERT … ON CONFLICT DO NOTHING RETURNING: SQLAlchemy's
        # "insertmanyvalues" sends it as a few multi-row INSERTs, and RETURNING gives the keys
        # of the rows inserted only (a conflict returns none).
        insert = self._insert(RepoRow).on_conflict_do_nothing(index_elements=["repo_id"])
        with self._transaction() as connection:
            pks = connection.execute(insert.returning(col(RepoRow.id)), rows).scalars().all()
            if pks:
                schedules = [{"repo_pk": pk, "due_at": now} for pk in pks]
                connection.execute(self._insert(ScheduleRow).on_conflict_do_nothing(), schedules)
        return len(pks)

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

    def repos_page(
        self, after: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[TrackedRepo]:
        query = select(RepoRow)
        if after is not None:
            query = query.where(col(RepoRow.repo_id) > after)
        query = query.order_by(col(RepoRow.repo_id)).offset(offset).limit(limit)
        with self._session() as session:
            return [self._tracked(row) for row in session.exec(query).all()]

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

    def set_identity(self, repo_id: str, identity: RepoIdentity) -> None:
        values = {"hub_object_id": identity.object_id, "hub_created_at": identity.created_at}
        with self._session() as session:
            self._repo_row(session, repo_id)
            session.exec(update(RepoRow).where(col(RepoRow.repo_id) == repo_id).values(**values))
            session.commit()

    def rename_repo(self, repo_id: str, new_id: str) -> bool:
        with self._session() as session:
            row = self._repo_row(session, repo_id)
            if session.exec(select(RepoRow.id).where(RepoRow.repo_id == new_id)).first():
                return False
            former = [name for name in row.former_ids or () if name != new_id] + [repo_id]
            row.repo_id, row.former_ids, row.renamed_to = new_id, former, None
            session.add(row)
            # its subscribers follow it: they asked for this repo, whatever it is called
            session.exec(
                update(SubscriptionRow)
                .where(col(SubscriptionRow.repo_id) == repo_id)
                .values(repo_id=new_id)
            )
            try:
                session.commit()
            except IntegrityError:  # the new id tracked concurrently by another process
                session.rollback()
                return False
            return True

    def find_repo(
        self, *, object_id: str | None = None, former_id: str | None = None
    ) -> str | None:
        with self._session() as session:
            if object_id:
                query = select(RepoRow.repo_id).where(RepoRow.hub_object_id == object_id)
                return session.exec(query.order_by(col(RepoRow.id))).first()
            if not former_id:
                return None
            # NOTE: few repos were ever renamed, and a JSON "contains" is not portable SQL
            rows = session.exec(
                select(RepoRow.repo_id, RepoRow.former_ids).where(
                    col(RepoRow.former_ids).is_not(None)
                )
            ).all()
            folded = former_id.casefold()
            return next(
                (rid for rid, former in rows if any(f.casefold() == folded for f in former or ())),
                None,
            )

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

    def mark_pinned(self, repo_ids: Iterable[str], at: datetime) -> int:
        at = at.astimezone(UTC)  # SQLite keeps no zone: every stored time is UTC
        pinned = REPO.c.pinned_at
        marked = 0
        with self._session() as session:
            connection = session.connection()
            for chunk in batches(sorted(set(repo_ids))):
                marked += connection.execute(
                    update(REPO)
                    .where(REPO.c.repo_id.in_(chunk), or_(pinned.is_(None), pinned < at))
                    .values(pinned_at=at)
                ).rowcount
            session.commit()
        return marked

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


# NOTE: on PostgreSQL one statement a batch, its rows passed as four arrays: a multi-row VALUES
# of 5,000 rows costs psycopg more to parse (its placeholders are split in Python, uncached for
# long queries) than the server takes to insert them; the CTE adds the schedule rows in the same
# round trip, for the repos inserted only.
_PG_ADD = text(
    """
    WITH added AS (
        INSERT INTO repo (repo_id, source, url, branch, state, added_at, failures, revision_count)
        SELECT t.repo_id, t.source, t.url, t.branch, 'active', :now, 0, 0
        FROM unnest(
            CAST(:ids AS text[]), CAST(:sources AS text[]),
            CAST(:urls AS text[]), CAST(:branches AS text[])
        ) AS t(repo_id, source, url, branch)
        ON CONFLICT (repo_id) DO NOTHING
        RETURNING id
    )
    INSERT INTO repo_schedule (repo_pk, due_at)
    SELECT id, :now FROM added
    ON CONFLICT (repo_pk) DO NOTHING
    RETURNING repo_pk
    """
)


def _identity(row: RepoRow) -> RepoIdentity | None:
    if row.hub_object_id is None and row.hub_created_at is None:
        return None
    created = row.hub_created_at
    if created is not None and created.tzinfo is None:  # SQLite keeps no offset: stored as UTC
        created = created.replace(tzinfo=UTC)
    return RepoIdentity(row.hub_object_id, created)

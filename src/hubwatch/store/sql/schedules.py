"""SqlStore's part for sharing work: schedules, leases (FOR UPDATE SKIP LOCKED), cursors."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import and_, bindparam, or_, text, update
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlmodel import Session, col, select

from hubwatch.errors import StoreError, WorkerConflict, WorkerIdTaken
from hubwatch.models import Claim, CommitSha, RepoStatus, ScheduleEntry
from hubwatch.store.scheduling import ScheduleStore
from hubwatch.store.sql.base import SqlBase, utc
from hubwatch.store.sql.entries import ENTRY_COLUMNS, entry
from hubwatch.store.sql.tables import CursorRow, JobLeaseRow, RepoRow, ScheduleRow

_CHUNK = 500  # ids per IN (…) list: far below every driver's parameter limit


def _chunks(items: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


class SqlScheduleStore(SqlBase, ScheduleStore):
    """Schedules and leases in SQL; on SQLite, one worker process at a time (a file lock)."""

    # -- one worker on SQLite ---------------------------------------------------------------

    @contextmanager
    def worker_slot(self, owner: str) -> Iterator[int]:
        if self.dialect == "postgresql":
            with self._owner_lock(owner):
                yield self._free_leases(owner)  # held under this id: by a process now dead
            return
        database = self._engine.url.database
        if not database or database == ":memory:":
            yield 0  # an in-memory SQLite is private anyway
            return
        path = Path(f"{database}.worker.lock")
        with open(path, "a+") as lock:
            try:
                # The kernel drops an flock when its process dies, SIGKILL included.
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.seek(0)
                holder = lock.read().strip() or "another process"
                raise WorkerConflict(
                    f"a worker ({holder}) already runs on this SQLite database ({database}); "
                    "SQLite serves one worker process: use PostgreSQL "
                    "(HUBWATCH_DATABASE_URL) for several"
                ) from None
            lock.seek(0)
            lock.truncate()
            lock.write(f"{owner} pid {os.getpid()}\n")
            lock.flush()
            try:
                # One worker process at a time: every lease held here is a dead one's.
                yield self._free_leases(None)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @contextmanager
    def _owner_lock(self, owner: str) -> Iterator[None]:
        """PostgreSQL: hold a session advisory lock on `owner` (in this schema) while the block
        runs, on a connection of its own; the server drops it when the session ends, a killed
        process's included. WorkerIdTaken while another session holds it."""
        key = text(
            "SELECT hashtextextended('hubwatch worker ' || current_schema() || ' ' || :o, 0)"
        )
        try:
            connection = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        except OperationalError as exc:
            raise StoreError(f"database error: {exc.orig}") from None
        try:
            lock = connection.execute(key, {"o": owner}).scalar_one()
            if not connection.execute(
                text("SELECT pg_try_advisory_lock(:k)"), {"k": lock}
            ).scalar():
                raise WorkerIdTaken(f"a worker with the id {owner!r} already runs on this database")
            try:
                yield
            finally:
                with suppress(SQLAlchemyError):  # a lost connection has lost its lock too
                    connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": lock})
        finally:
            with suppress(SQLAlchemyError):
                connection.close()

    def _free_leases(self, owner: str | None) -> int:
        """Give back the repo and job leases held by `owner` (None: by anyone); how many."""
        repos = update(ScheduleRow).where(col(ScheduleRow.lease_owner).is_not(None))
        jobs = update(JobLeaseRow).where(col(JobLeaseRow.owner).is_not(None))
        if owner is not None:
            repos = repos.where(col(ScheduleRow.lease_owner) == owner)
            jobs = jobs.where(col(JobLeaseRow.owner) == owner)
        with self._session() as session:
            freed = session.execute(
                repos.values(lease_owner=None, lease_claimed_at=None, lease_expires_at=None)
            ).rowcount  # type: ignore[attr-defined]  # CursorResult
            freed += session.execute(jobs.values(owner=None, expires_at=None)).rowcount  # type: ignore[attr-defined]
            session.commit()
        return int(freed)

    # -- schedules --------------------------------------------------------------------------

    def schedule_entries(self) -> list[ScheduleEntry]:
        entries: list[ScheduleEntry] = []
        while page := self.schedule_page(entries[-1].ref.repo_id if entries else None, 1000):
            entries += page
        return entries

    def schedule_page(self, after: str | None, limit: int) -> list[ScheduleEntry]:
        # NOTE: the columns it needs, not whole RepoRow and ScheduleRow objects: those of every
        # repo at once took `serve` from 130 to 350 MiB at 100k repos (issue 36)
        query = ENTRY_COLUMNS.order_by(col(RepoRow.repo_id)).limit(limit)
        if after is not None:
            query = query.where(col(RepoRow.repo_id) > after)
        with self._session() as session:
            return [entry(*row) for row in session.execute(query).all()]

    def _pks(self, session: Session, repo_ids: Iterable[str]) -> dict[str, int]:
        pks: dict[str, int] = {}
        for chunk in _chunks(sorted(set(repo_ids))):
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
        for chunk in _chunks(sorted(set(pks))):
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
    ) -> int:
        hints = hints or {}
        with self._session() as session:
            pks = self._pks(session, repo_ids)
            self._ensure_rows(session, pks.values())
            plain = sorted(pk for repo_id, pk in pks.items() if repo_id not in hints)
            for chunk in _chunks(plain):
                session.execute(
                    update(ScheduleRow)
                    .where(col(ScheduleRow.repo_pk).in_(chunk))
                    .values(woken_at=at, hint_head=None, hint_gated=None)
                )
            table = ScheduleRow.metadata.tables["repo_schedule"]
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
                        woken_at=at, hint_head=bindparam("head"), hint_gated=bindparam("gated")
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
            for chunk in _chunks(sorted(pks.values())):
                session.execute(
                    update(ScheduleRow)
                    .where(col(ScheduleRow.repo_pk).in_(chunk))
                    .values(listed=listed)
                )
            session.commit()

    # -- repo leases ------------------------------------------------------------------------

    def claim_repos(self, owner: str, now: datetime, lease_s: float, limit: int = 1) -> list[Claim]:
        with self._session() as session:
            free = or_(
                col(ScheduleRow.lease_expires_at).is_(None),
                col(ScheduleRow.lease_expires_at) < now,
            )
            # NOTE: SKIP LOCKED is what lets many workers claim at once without waiting on each
            # other; SQLite ignores FOR UPDATE, and its writers are serialised anyway.
            pks = list(
                session.exec(
                    select(ScheduleRow.repo_pk)
                    .where(col(ScheduleRow.woken_at).is_not(None), free)
                    .order_by(col(ScheduleRow.woken_at), col(ScheduleRow.repo_pk))
                    .limit(limit)
                    .with_for_update(skip_locked=True)
                ).all()
            )
            if not pks:
                session.rollback()
                return []
            session.execute(
                update(ScheduleRow)
                .where(col(ScheduleRow.repo_pk).in_(pks), free)
                .values(
                    lease_owner=owner,
                    lease_claimed_at=now,
                    lease_expires_at=now + timedelta(seconds=lease_s),
                )
            )
            rows = session.exec(
                select(RepoRow.repo_id, ScheduleRow.hint_head, ScheduleRow.hint_gated)
                .join(ScheduleRow, col(ScheduleRow.repo_pk) == col(RepoRow.id))
                .where(col(RepoRow.id).in_(pks), col(ScheduleRow.lease_owner) == owner)
                .order_by(col(ScheduleRow.woken_at), col(ScheduleRow.repo_pk))
            ).all()
            session.commit()
            return [
                Claim(
                    repo_id,
                    RepoStatus(CommitSha(head), repo_id, gated=bool(gated)) if head else None,
                )
                for repo_id, head, gated in rows
            ]

    def renew_lease(self, repo_id: str, owner: str, until: datetime) -> bool:
        with self._session() as session:
            pk = self._leased_pk(session, repo_id)
            if pk is None:
                return False
            result = session.execute(
                update(ScheduleRow)
                .where(col(ScheduleRow.repo_pk) == pk, col(ScheduleRow.lease_owner) == owner)
                .values(lease_expires_at=until)
            )
            session.commit()
            return bool(result.rowcount)  # type: ignore[attr-defined]  # CursorResult

    def release_repo(self, repo_id: str, owner: str, *, done: bool, due_at: datetime) -> None:
        with self._session() as session:
            pk = self._leased_pk(session, repo_id)
            if pk is None:
                return  # untracked meanwhile
            mine = and_(col(ScheduleRow.repo_pk) == pk, col(ScheduleRow.lease_owner) == owner)
            if done:
                # A wake that came in while we polled is kept: the poll may have missed it.
                session.execute(
                    update(ScheduleRow)
                    .where(mine, col(ScheduleRow.woken_at) <= col(ScheduleRow.lease_claimed_at))
                    .values(woken_at=None, hint_head=None, hint_gated=None)
                )
                session.execute(update(ScheduleRow).where(mine).values(due_at=due_at))
            session.execute(
                update(ScheduleRow)
                .where(mine)
                .values(lease_owner=None, lease_claimed_at=None, lease_expires_at=None)
            )
            session.commit()

    # -- periodic jobs ----------------------------------------------------------------------

    def claim_job(self, name: str, owner: str, now: datetime, lease_s: float) -> bool:
        with self._session() as session:
            session.execute(
                self._insert(JobLeaseRow)
                .values(name=name, next_run_at=now)
                .on_conflict_do_nothing()
            )
            session.commit()
            claimed = session.execute(
                update(JobLeaseRow)
                .where(
                    col(JobLeaseRow.name) == name,
                    col(JobLeaseRow.next_run_at) <= now,
                    or_(col(JobLeaseRow.expires_at).is_(None), col(JobLeaseRow.expires_at) < now),
                )
                .values(owner=owner, expires_at=now + timedelta(seconds=lease_s))
            )
            session.commit()
            return bool(claimed.rowcount)  # type: ignore[attr-defined]  # CursorResult

    def renew_job(self, name: str, owner: str, until: datetime) -> bool:
        with self._session() as session:
            renewed = session.execute(
                update(JobLeaseRow)
                .where(col(JobLeaseRow.name) == name, col(JobLeaseRow.owner) == owner)
                .values(expires_at=until)
            )
            session.commit()
            return bool(renewed.rowcount)  # type: ignore[attr-defined]  # CursorResult

    def finish_job(self, name: str, owner: str, next_run_at: datetime) -> None:
        with self._session() as session:
            session.execute(
                update(JobLeaseRow)
                .where(col(JobLeaseRow.name) == name, col(JobLeaseRow.owner) == owner)
                .values(owner=None, expires_at=None, next_run_at=next_run_at)
            )
            session.commit()

    # -- cursors ----------------------------------------------------------------------------

    def cursor(self, name: str) -> datetime | None:
        with self._session() as session:
            row = session.get(CursorRow, name)
            return utc(row.value) if row else None

    def set_cursor(self, name: str, value: datetime) -> None:
        with self._session() as session:
            row = session.get(CursorRow, name)
            if row is None:
                session.add(CursorRow(name=name, value=value))
            else:
                row.value = value
                session.add(row)
            session.commit()

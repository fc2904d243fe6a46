"""SqlBrowseStore: the BrowseStore part of SqlStore (paged history, counts, recent changes)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Integer, Text, bindparam, case, cast, func
from sqlalchemy import select as core_select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import Select
from sqlmodel import col, select

from hubwatch.errors import NotTracked, UnknownRevision
from hubwatch.models import (
    ChangeFilter,
    CommitSha,
    FeedItem,
    HistoryPage,
    HistoryText,
    RepoState,
    RevisionChanges,
    RevisionText,
    Severity,
    StoredRevision,
)
from hubwatch.store.browse import BrowseStore
from hubwatch.store.sql.base import (
    CHANGE,
    REPO,
    REVISION,
    REVISION_COLUMNS,
    REVISION_NAMES,
    RevisionValues,
    SqlBase,
    as_change,
    as_revision,
    utc,
)
from hubwatch.store.sql.tables import ChangeRow, RepoRow, RevisionRow
from hubwatch.store.sql.tally import BLOCK, TALLY
from hubwatch.store.sql.timeline import taken_by


class SqlBrowseStore(SqlBase, BrowseStore):
    """Paged history, change counts and recent changes, each in one or two indexed queries."""

    @property
    def reads_are_local(self) -> bool:
        # SQLite in WAL mode (make_engine): a reader never waits on the writer, and a badge or
        # page is a few index lookups in a file (0.1-0.5 ms); PostgreSQL's are round trips
        return self.dialect == "sqlite"

    def repo_state(self, repo_id: str) -> RepoState:
        rows = self._driven(_STATE, {"repo_id": repo_id})
        if not rows:
            raise NotTracked(f"{repo_id} is not tracked")
        return RepoState(rows[0][0])

    def history_page(
        self, repo_id: str, *, before: int | None = None, limit: int = 50
    ) -> HistoryPage:
        # NOTE: Core, not ORM rows: a page is read-only and the ORM doubled its cost; one
        # statement, built once, the repo looked up inside it (issue 15).
        rows, cursor = self._page(_PAGE, repo_id, before, limit)
        return HistoryPage(
            tuple(as_revision(repo_id, RevisionValues._make(row)) for row in rows),
            cursor,
            tuple(row[0] for row in rows),
        )

    def history_text(
        self, repo_id: str, *, before: int | None = None, limit: int = 50
    ) -> HistoryText:
        # NOTE: the JSON columns read as their text: decoding them was a third of a page's
        # cost, only for the API to encode them again (issue 15).
        rows, cursor = self._page(_PAGE_TEXT, repo_id, before, limit)
        return HistoryText(tuple(_text(row) for row in rows), cursor)

    def _page(
        self, query: Select[Any], repo_id: str, before: int | None, limit: int
    ) -> tuple[list[tuple[Any, ...]], int | None]:
        """Up to `limit` rows of `query` older than position `before`, and the next cursor.

        On the driver's cursor (store/sql/driver.py), as the badges' reads: SQLAlchemy's
        execution and result layers cost three times the query itself (issue 15)."""
        cursor = _NO_CURSOR if before is None else before
        rows = self._driven(query, {"repo_id": repo_id, "before": cursor, "limit": limit + 1})
        if not rows:
            self.repo_state(repo_id)  # NotTracked, if that is why
        if len(rows) <= limit:
            return rows, None
        return rows[:limit], int(rows[limit - 1][0])

    def latest_revision(self, repo_id: str) -> StoredRevision | None:
        rows = self._driven(_LATEST, {"repo_id": repo_id})
        if not rows:
            self.repo_state(repo_id)  # NotTracked, if that is why
            return None
        return as_revision(repo_id, RevisionValues._make(rows[0]))

    def revision_changes(self, repo_id: str, sha: CommitSha) -> RevisionChanges:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            revision = self._revision_row(session, repo, sha)
            rows = session.exec(
                select(ChangeRow)
                .where(ChangeRow.revision_pk == revision.id)
                .order_by(col(ChangeRow.position))
            ).all()
            base = rows[0].base_sha if rows else None
            return RevisionChanges(
                as_revision(repo_id, revision),
                CommitSha(base) if base else None,
                tuple(as_change(row) for row in rows),
            )

    def count_changes(
        self, repo_id: str, *, after: CommitSha | None = None, since: datetime | None = None
    ) -> tuple[int, int]:
        # the two counts badges ask for, on the driver's cursor as `_page`
        if after is not None and since is None:  # the pin's block, then later tallies
            rows = self._driven(_AFTER, {"repo_id": repo_id, "sha": after})
            found = rows[0] if rows else None
            _check_pinned(repo_id, after, found)
            assert found is not None
            return int(found[2]) + int(found[4]), int(found[3]) + int(found[5])
        if after is None and since is not None:  # a range of ix_change_repo_observed
            found = self._driven(_SINCE, {"repo_id": repo_id, "since": since})[0]
            if found[0] is None:
                raise NotTracked(f"{repo_id} is not tracked")
            return int(found[1]), int(found[2])
        with self._reading() as connection:
            query = core_select(func.count(), _BREAKING)
            total, of_breaking = connection.execute(
                query.where(*self._counted(connection, repo_id, after, since))
            ).one()
        return int(total), int(of_breaking)

    def _counted(
        self,
        connection: Connection,
        repo_id: str,
        after: CommitSha | None,
        since: datetime | None,
    ) -> list[ColumnElement[bool]]:
        """Which changes a count takes. Changes carry their repo (migration 0008) and when
        they were observed (0012): with `after`, a range scan of ix_change_repo_revision,
        with `since` of ix_change_repo_observed; no revision walk."""
        if after is None:
            where = [CHANGE.c.repo_pk == self._repo_pk(connection, repo_id)]
        else:
            repo_pk, pinned_pk = self._pinned(connection, repo_id, after)
            where = [CHANGE.c.repo_pk == repo_pk, CHANGE.c.revision_pk > pinned_pk]
        if since is not None:
            where.append(CHANGE.c.observed_at >= since)
        return where

    def _pinned(self, connection: Connection, repo_id: str, sha: CommitSha) -> tuple[int, int]:
        """The repo's key and its revision's, in one statement; NotTracked, UnknownRevision."""
        found = connection.execute(_PINNED, {"repo_id": repo_id, "sha": sha}).first()
        _check_pinned(repo_id, sha, found)
        assert found is not None
        return int(found[0]), int(found[1])

    def recent_changes(
        self,
        *,
        repo_id: str | None = None,
        org: str | None = None,
        limit: int = 50,
        where: ChangeFilter | None = None,
    ) -> list[FeedItem]:
        taken = taken_by(where) if where is not None else []
        with self._session() as session:
            with_changes = select(ChangeRow.revision_pk).where(*taken).distinct()
            query = (
                select(RevisionRow, RepoRow.repo_id)
                .join(RepoRow, col(RepoRow.id) == col(RevisionRow.repo_pk))
                .where(col(RevisionRow.id).in_(with_changes))
            )
            if repo_id is not None:
                query = query.where(RepoRow.repo_id == repo_id)
            if where is not None and where.since is not None:
                query = query.where(col(RevisionRow.committed_at) >= where.since.astimezone(UTC))
            if org is not None:
                # NOTE: not LIKE: `_` and `%` are wildcards in it, and SQLite's LIKE ignores
                # case (`/feeds/m_ta-LLAMA.atom` matched meta-llama); `=` on a prefix is exact.
                prefix = f"{org}/"
                query = query.where(func.substr(col(RepoRow.repo_id), 1, len(prefix)) == prefix)
            revisions = session.exec(query.order_by(col(RevisionRow.id).desc()).limit(limit)).all()
            ids = [row.id for row, _ in revisions]
            grouped: dict[int, list[ChangeRow]] = {}
            for change in session.exec(
                select(ChangeRow)
                .where(col(ChangeRow.revision_pk).in_(ids), *taken)
                .order_by(col(ChangeRow.revision_pk), col(ChangeRow.position))
            ).all():
                grouped.setdefault(change.revision_pk, []).append(change)
            items = []
            for row, repo in revisions:
                rows = grouped.get(row.id or 0, [])
                base = rows[0].base_sha if rows else None
                items.append(
                    FeedItem(
                        repo,
                        utc(row.recorded_at),
                        RevisionChanges(
                            as_revision(repo, row),
                            CommitSha(base) if base else None,
                            tuple(as_change(c) for c in rows),
                        ),
                    )
                )
            return items


def _check_pinned(repo_id: str, sha: CommitSha, found: Sequence[Any] | None) -> None:
    """NotTracked without the repo's key (found[0]), UnknownRevision without the pin's."""
    if found is None:
        raise NotTracked(f"{repo_id} is not tracked")
    if found[1] is None:
        raise UnknownRevision(f"{repo_id} has no stored revision {sha}")


def _text(row: Sequence[Any]) -> RevisionText:
    """A row of `_PAGE_TEXT` (the id first) as a RevisionText."""
    return RevisionText(row[1], row[2], utc(row[3]), row[4], row[5], row[6], row[7], row[8], row[9])


# The reads badges and history pages make on every request, built once: building a statement
# cost as much as running it (issue 15).
_REPO_KEY = core_select(REPO.c.id).where(REPO.c.repo_id == bindparam("repo_id")).scalar_subquery()
_STATE = core_select(REPO.c.state).where(REPO.c.repo_id == bindparam("repo_id"))
_JSON_COLUMNS = frozenset({"parents", "authors", "changed", "card"})
_NO_CURSOR = 2**62
"""`before` for the first page: after every position."""
_PAGE = (
    core_select(*REVISION_COLUMNS)
    .where(REVISION.c.repo_pk == _REPO_KEY, REVISION.c.id < bindparam("before", type_=BigInteger))
    .order_by(REVISION.c.id.desc())
    # NOTE: the limit written into the SQL: with it a parameter, PostgreSQL planned every
    # execution of the prepared statement anew (a custom plan, 0.65 ms at 1M revisions, for
    # a query that runs in 0.09 ms); with it written, it keeps one generic plan.
    .limit(bindparam("limit", type_=Integer, literal_execute=True))
)
_PAGE_TEXT = _PAGE.with_only_columns(
    *(
        cast(column, Text) if name in _JSON_COLUMNS else column
        for name, column in zip(REVISION_NAMES, REVISION_COLUMNS, strict=True)
    )
)
"""`_PAGE` with the JSON columns as text (`RevisionText`'s order, after the id)."""
_LATEST = (
    core_select(*REVISION_COLUMNS)
    .where(REVISION.c.repo_pk == _REPO_KEY, REVISION.c.reachable.is_(True))
    .order_by(REVISION.c.id.desc())
    .limit(bindparam("one", 1, type_=Integer, literal_execute=True))  # as _PAGE's limit
)
_PINNED = (
    core_select(REPO.c.id, REVISION.c.id)
    .select_from(REPO)
    .outerjoin(REVISION, (REVISION.c.repo_pk == REPO.c.id) & (REVISION.c.sha == bindparam("sha")))
    .where(REPO.c.repo_id == bindparam("repo_id"))
)
_BREAKING = func.count(case((CHANGE.c.severity == Severity.BREAKING.value, 1)))
# NOTE: no GROUP BY: its temporary B-tree doubled SQLite's time for the same range.
_SINCE = core_select(_REPO_KEY, func.count(), _BREAKING).where(
    CHANGE.c.repo_pk == _REPO_KEY,
    CHANGE.c.observed_at >= bindparam("since", type_=CHANGE.c.observed_at.type),
)


def _after() -> Select[Any]:
    """`count_after` and the pin's lookup in one statement (one round trip, not two, for a
    badge; issue 15): the repo's key, the pin's, the changes of the rest of the pin's block
    (all, breaking) and the later blocks' tallies (all, breaking)."""
    pin = _PINNED.with_only_columns(REPO.c.id.label("repo_pk"), REVISION.c.id.label("pinned")).cte(
        "pin"
    )
    repo_pk, pinned = pin.c.repo_pk, pin.c.pinned
    block = pinned // BLOCK
    rest = (
        CHANGE.c.repo_pk == repo_pk,
        CHANGE.c.revision_pk > pinned,
        CHANGE.c.revision_pk < (block + 1) * BLOCK,
    )
    later = (TALLY.c.repo_pk == repo_pk, TALLY.c.block > block)
    return core_select(
        repo_pk,
        pinned,
        core_select(func.count()).where(*rest).scalar_subquery(),
        core_select(_BREAKING).where(*rest).scalar_subquery(),
        core_select(func.coalesce(func.sum(TALLY.c.total), 0)).where(*later).scalar_subquery(),
        core_select(func.coalesce(func.sum(TALLY.c.breaking), 0)).where(*later).scalar_subquery(),
    ).select_from(pin)


_AFTER = _after()

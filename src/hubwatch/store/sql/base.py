"""SqlBase: what every SQL store mixin shares (engine, sessions, row lookups, row converters)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from itertools import islice
from typing import Any, NamedTuple, TypeVar, cast

from sqlalchemy import Table
from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.exc import (
    DBAPIError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.sql import Select
from sqlmodel import Session, SQLModel, col, select

from hubwatch.errors import NotTracked, StoreError, StoreUnavailable, UnknownRevision
from hubwatch.models import (
    Change,
    CommitSha,
    EventKind,
    RepoEvent,
    Severity,
    StoredRevision,
)
from hubwatch.models.timestamps import utc as utc  # the mixins import it from here
from hubwatch.store.outage import Outage
from hubwatch.store.sql.blobcache import BlobCache
from hubwatch.store.sql.driver import DriverQuery
from hubwatch.store.sql.engine import is_lost, make_engine
from hubwatch.store.sql.pipeline import can_pipeline
from hubwatch.store.sql.tables import ChangeRow, EventRow, RepoRow, RevisionRow

REPO: Table = RepoRow.__table__  # type: ignore[attr-defined]
REVISION: Table = RevisionRow.__table__  # type: ignore[attr-defined]
CHANGE: Table = ChangeRow.__table__  # type: ignore[attr-defined]


T = TypeVar("T")

IN_LIST = 500
"""Values per IN (…) list: far below SQLite's and PostgreSQL's parameter limits."""


def batches(items: Iterable[T], size: int = IN_LIST) -> Iterator[list[T]]:
    """`items` in lists of `size`, the last one shorter; nothing for no items."""
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


class RevisionValues(NamedTuple):
    """A row of REVISION_COLUMNS, as a driver's cursor gives it (store/sql/driver.py)."""

    id: int
    sha: str
    parents: list[str]
    committed_at: datetime
    authors: list[str]
    title: str
    message: str
    changed: list[str]
    reachable: bool
    card: dict[str, object] | None


REVISION_NAMES = RevisionValues._fields
REVISION_COLUMNS = tuple(REVISION.c[name] for name in REVISION_NAMES)
"""What `as_revision` reads, for Core selects of revisions."""


class SqlBase:
    """The engine and the lookups every `Sql*Store` mixin of SqlStore builds on.

    Modelled on APScheduler 4's `BaseDataStore`: the mixins inherit this instead of each
    declaring stubs for what the composite store provides.
    """

    def __init__(self, url: str) -> None:
        self._url = url
        self.outage = Outage()
        """Whether the database answers, as this process sees it (one log line an outage)."""
        try:
            self._engine = make_engine(url, self.outage)
        except (SQLAlchemyError, ValueError) as exc:
            raise StoreError(f"invalid database URL: {type(exc).__name__}") from None
        self._reader = self._engine.execution_options(isolation_level="AUTOCOMMIT")
        """The engine for `_reading`: each statement alone, no BEGIN and ROLLBACK round trips."""
        self._queries: dict[Select[Any], DriverQuery] = {}
        """`_driven`'s statements, compiled for this store's dialect."""
        self._blobs = BlobCache()
        """Bytes read or written lately, by sha256: the next revision's diff reads them again."""
        self._recent = threading.local()
        """`_written` and `_last`, per thread: a worker polls several repos at once, each in a
        thread, and each poll's next revision follows that poll's last one."""

    @property
    def _written(self) -> tuple[tuple[int, datetime], dict[str, tuple[str, str | None]]] | None:
        """The revision this thread added last: (key, time recorded), and its files by path
        (blob id, LFS sha256); a backfill's next revision is compared with it, not read back."""
        found: tuple[tuple[int, datetime], dict[str, tuple[str, str | None]]] | None
        found = getattr(self._recent, "written", None)
        return found

    @_written.setter
    def _written(
        self, value: tuple[tuple[int, datetime], dict[str, tuple[str, str | None]]] | None
    ) -> None:
        self._recent.written = value

    @property
    def _last(self) -> tuple[str, str] | None:
        """(repo id, sha) of the revision this thread added last, committed without waiting for
        the disk (`revisions.SYNCHRONOUS`): its child must find it stored."""
        found: tuple[str, str] | None = getattr(self._recent, "last", None)
        return found

    @_last.setter
    def _last(self, value: tuple[str, str] | None) -> None:
        self._recent.last = value

    @property
    def _drawn(self) -> tuple[int, int] | None:
        """(repo key, a revision key drawn since) for the child of `_last`, on PostgreSQL: the
        next revision of a backfill is written without a lookup first (store/sql/following.py)."""
        found: tuple[int, int] | None = getattr(self._recent, "drawn", None)
        return found

    @_drawn.setter
    def _drawn(self, value: tuple[int, int] | None) -> None:
        self._recent.drawn = value

    @property
    def dialect(self) -> str:
        """The SQLAlchemy dialect name: "sqlite" or "postgresql"."""
        return self._engine.dialect.name

    def _failure(self, error: BaseException) -> StoreError | None:
        """What a driver's error (SQLAlchemy's, or the DB-API's own) is raised as:
        StoreUnavailable when the database cannot be reached or used now (the outage noted:
        one log line for all of it, `store/outage.py`); StoreError for SQLAlchemy's other
        OperationalErrors; None: as it is (a bug, a constraint)."""
        orig = error.orig if isinstance(error, DBAPIError) and error.orig else error
        if is_lost(orig, self._engine.dialect.loaded_dbapi):
            reason = str(orig).strip()
            self.outage.failed(reason)
            return StoreUnavailable(f"database unavailable: {reason}")
        if isinstance(error, OperationalError | InterfaceError):
            return StoreError(f"database error: {orig}")
        return None

    @contextmanager
    def _connected(self, engine: Engine) -> Iterator[Connection]:
        """A connection of `engine`, closed after; a database error raised as StoreError
        (StoreUnavailable when the database is unreachable)."""
        with self._translated(), engine.connect() as connection:
            yield connection

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """The block, its database errors raised as `_failure` says; a block that ends
        cleanly tells the outage tracker the database answers again."""
        try:
            yield
        except DBAPIError as exc:
            failure = self._failure(exc)
            if failure is None:
                raise
            raise failure from None
        self.outage.recovered()

    @contextmanager
    def _session(self) -> Iterator[Session]:
        """An ORM session, closed (rolled back unless committed) after; a database error
        raised as `_connected` raises it, the close's own included (a ROLLBACK on a
        connection the server has just terminated)."""
        with self._translated(), Session(self._engine, expire_on_commit=False) as session:
            yield session

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A connection in one transaction, committed at the end of the block."""
        with self._connected(self._engine) as connection, connection.begin():
            yield connection

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        """A plain connection for Core reads (no ORM session: rows need no identity map), in
        autocommit: on PostgreSQL a transaction around a read cost two more round trips than
        its query (issue 15); a read here needs no snapshot across its statements."""
        with self._connected(self._reader) as connection:
            yield connection

    def _driven(self, statement: Select[Any], params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of `statement` run on the driver's cursor (`DriverQuery`): for the reads
        every badge and history page makes, where SQLAlchemy's layers cost more than the query."""
        query = self._queries.get(statement)
        if query is None:
            query = self._queries[statement] = DriverQuery(statement, self._engine.dialect)
        with self._driver() as connection:
            return query.rows(connection, params)

    @contextmanager
    def _driver(self) -> Iterator[Any]:
        """A pooled connection's own DB-API connection, autocommit on PostgreSQL as `_reading`
        is; a driver error is raised as StoreError and the connection leaves the pool."""
        dbapi = self._engine.dialect.loaded_dbapi
        try:
            # NOTE: the pool raises the DB-API's own error for a failed connect, not
            # SQLAlchemy's (which only a Connection wraps it in)
            pooled = self._engine.raw_connection()
        except (DBAPIError, dbapi.Error) as exc:
            raise self._failure(exc) or StoreError(f"database error: {exc}") from None
        connection: Any = pooled.driver_connection
        postgres = self.dialect == "postgresql"
        try:
            if postgres:  # no BEGIN; and the pool's ROLLBACK on return is then no round trip
                connection.autocommit = True
            yield connection
        except dbapi.Error as exc:
            pooled.invalidate()  # whatever state it is in, it is not handed out again
            raise self._failure(exc) or StoreError(f"database error: {exc}") from None
        finally:
            if postgres and pooled.is_valid:
                connection.autocommit = False
            pooled.close()
        self.outage.recovered()

    @contextmanager
    def _writing_pipelined(self) -> Iterator[Connection]:
        """A connection for a `pipelined_transaction` and the reads before it: on PostgreSQL
        in autocommit (the pipeline sends its own BEGIN and COMMIT: no round trip for a BEGIN
        before the reads); elsewhere a plain connection in one transaction: the caller commits,
        closing it rolls back. Never the readers' autocommit one there: a revision's rows must
        land together or not at all (a process killed between two statements left a revision
        without files)."""
        engine = self._reader if can_pipeline(self._engine.dialect) else self._engine
        with self._connected(engine) as connection:
            yield connection

    def _repo_pk(self, connection: Connection, repo_id: str) -> int:
        """The tracked repo's key; NotTracked if there is none."""
        pk = connection.execute(
            core_select(REPO.c.id).where(REPO.c.repo_id == repo_id)
        ).scalar_one_or_none()
        if pk is None:
            raise NotTracked(f"{repo_id} is not tracked")
        return int(pk)

    def _insert(self, table: type[SQLModel]) -> postgresql.Insert | sqlite.Insert:
        """An INSERT of this dialect, which has ON CONFLICT DO NOTHING (the generic one has not)."""
        if self.dialect == "postgresql":
            return postgresql.insert(table)
        return sqlite.insert(table)

    def _repo_row(self, session: Session, repo_id: str) -> RepoRow:
        """The tracked repo's row; NotTracked if there is none."""
        row = session.exec(select(RepoRow).where(RepoRow.repo_id == repo_id)).first()
        if row is None:
            raise NotTracked(f"{repo_id} is not tracked")
        return row

    def _revision_row(self, session: Session, repo: RepoRow, sha: str) -> RevisionRow:
        """The stored revision with exactly this sha; UnknownRevision if there is none."""
        row = session.exec(
            select(RevisionRow).where(RevisionRow.repo_pk == repo.id, RevisionRow.sha == sha)
        ).first()
        if row is None:
            raise UnknownRevision(f"{repo.repo_id} has no stored revision {sha}")
        return row

    def _revision_pk(self, session: Session, repo: RepoRow, sha: str) -> int:
        """The key of the stored revision with exactly this sha; UnknownRevision if none."""
        pk = self._revision_row(session, repo, sha).id
        assert pk is not None  # a row read back from the database has its key
        return pk

    def _revision_by_prefix(self, session: Session, repo_id: str, rev: str) -> RevisionRow:
        """The revision a full or abbreviated sha names; UnknownRevision if none or ambiguous."""
        rev = rev.strip().lower()
        if not rev or len(rev) > 64 or any(c not in "0123456789abcdef" for c in rev):
            raise UnknownRevision(f"{rev[:70]!r} is not a commit sha (hex, 1 to 64 characters)")
        rows = session.exec(
            select(RevisionRow)
            .join(RepoRow, col(RepoRow.id) == RevisionRow.repo_pk)
            .where(RepoRow.repo_id == repo_id, col(RevisionRow.sha).startswith(rev))
            .limit(2)
        ).all()
        if not rows:
            self._repo_row(session, repo_id)  # NotTracked, if that is why
            raise UnknownRevision(f"{repo_id} has no stored revision {rev}")
        if len(rows) > 1:
            raise UnknownRevision(f"{rev} is ambiguous in {repo_id}; give more characters")
        return rows[0]


def as_change(row: ChangeRow) -> Change:
    """A stored change row as the value it was written from."""
    return Change(
        row.kind,
        Severity(row.severity),
        row.summary,
        row.path,
        row.before,
        row.after,
        row.detail,
    )


def as_revision(repo_id: str, row: RevisionRow | Row[Any] | RevisionValues) -> StoredRevision:
    """A stored revision row (ORM, or a Core row of the REVISION_COLUMNS) as the store returns
    it."""
    # NOTE: CommitSha is a NewType (no conversion to run): a history page builds 50 of these.
    return StoredRevision(
        repo_id=repo_id,
        sha=CommitSha(row.sha),
        parents=cast("tuple[CommitSha, ...]", tuple(row.parents)),
        date=utc(row.committed_at),
        authors=tuple(row.authors),
        title=row.title,
        message=row.message,
        changed=tuple(row.changed),
        reachable=row.reachable,
        card=row.card,
    )


def as_event(row: EventRow) -> RepoEvent:
    """A stored event row as the event it was written from."""
    return RepoEvent(
        EventKind(row.kind),
        row.detail,
        CommitSha(row.sha) if row.sha else None,
        utc(row.at),
    )

"""SqlBase: what every SQL store mixin shares (engine, sessions, row lookups, row converters)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NamedTuple, cast

import orjson
from sqlalchemy import Table, event
from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.exc import DisconnectionError, OperationalError, SQLAlchemyError
from sqlalchemy.sql import Select
from sqlmodel import Session, SQLModel, col, create_engine, select

from hubwatch.errors import NotTracked, StoreError, UnknownRevision
from hubwatch.models import (
    Change,
    CommitSha,
    EventKind,
    RepoEvent,
    Severity,
    StoredRevision,
)
from hubwatch.models.timestamps import utc as utc  # the mixins import it from here
from hubwatch.store.sql.blobcache import BlobCache
from hubwatch.store.sql.driver import DriverQuery
from hubwatch.store.sql.pipeline import can_pipeline
from hubwatch.store.sql.tables import ChangeRow, EventRow, RepoRow, RevisionRow

REPO: Table = RepoRow.__table__  # type: ignore[attr-defined]
REVISION: Table = RevisionRow.__table__  # type: ignore[attr-defined]
CHANGE: Table = ChangeRow.__table__  # type: ignore[attr-defined]


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


_LONG_NUMBER = re.compile(r"[\[,:\s]-?[0-9]{19}")
"""A number of 19 digits or more inside an array or object (digits in a string: json reads it,
only slower); a number alone goes to json whatever its length."""


def json_loads(text: str | bytes | int | float) -> Any:
    """A stored JSON column's value: orjson, several times faster than json for a history
    page's columns (issue 15); json for what only it reads exactly: NaN (json.dumps writes
    it) and integers beyond 64 bits (orjson turns them into floats)."""
    if isinstance(text, int | float):
        # SQLite gives a JSON column NUMERIC affinity: a value that is a JSON number alone is
        # stored, and returned, as a number
        return text
    if not isinstance(text, str):
        text = bytes(text).decode()
    if text[:1] not in "-0123456789" and _LONG_NUMBER.search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


POOL_SIZE = 10
"""Connections a store keeps open: the API's concurrent reads, the poller and the webhook
deliverer; more at once open overflow connections, closed after each use."""


def make_engine(url: str) -> Engine:
    """An engine for `url`, with SQLite set up for a long-running writer (WAL, foreign keys)."""
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"timeout": 30},
            json_deserializer=json_loads,
            pool_size=POOL_SIZE,  # as PostgreSQL's below: a new SQLite connection runs the
            max_overflow=2 * POOL_SIZE,  # pragmas and reads the schema before its first read
        )

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    # NOTE: pool_size 10, not SQLAlchemy's 5: with more requests at once than pooled
    # connections, each extra one opened and closed a connection per read (312 sessions in
    # 2,000 badge reads from 8 clients, a connection costing more than the read; issue 15)
    engine = create_engine(
        url, json_deserializer=json_loads, pool_size=POOL_SIZE, max_overflow=2 * POOL_SIZE
    )
    _ping_when_idle(engine)
    return engine


PING_IDLE_S = 1.0
"""A pooled connection idle this long is pinged before it is used again."""


def _ping_when_idle(engine: Engine) -> None:
    """Ping a pooled connection only when it has sat idle (`PING_IDLE_S`), not at every
    checkout as `pool_pre_ping` does: that is a round trip more than a badge's one query on
    PostgreSQL (issue 15). A connection the server dropped meanwhile is replaced, as
    pre-ping replaces it; one dropped within the last second fails its statement once, and
    SQLAlchemy then discards the pool's connections."""

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("idle_since", None)
        if since is None or time.monotonic() - since < PING_IDLE_S:
            return  # new, or in use a moment ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # whatever the driver raises for a dead connection
            raise DisconnectionError(f"idle connection lost: {type(exc).__name__}") from exc


@contextmanager
def _connected(engine: Engine) -> Iterator[Connection]:
    """A connection of `engine`, closed after; a database error raised as StoreError."""
    try:
        with engine.connect() as connection:
            yield connection
    except OperationalError as exc:
        raise StoreError(f"database error: {exc.orig}") from None


class SqlBase:
    """The engine and the lookups every `Sql*Store` mixin of SqlStore builds on.

    Modelled on APScheduler 4's `BaseDataStore`: the mixins inherit this instead of each
    declaring stubs for what the composite store provides.
    """

    def __init__(self, url: str) -> None:
        self._url = url
        try:
            self._engine = make_engine(url)
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
    def dialect(self) -> str:
        """The SQLAlchemy dialect name: "sqlite" or "postgresql"."""
        return self._engine.dialect.name

    @contextmanager
    def _session(self) -> Iterator[Session]:
        with Session(self._engine, expire_on_commit=False) as session:
            try:
                yield session
            except OperationalError as exc:
                session.rollback()
                raise StoreError(f"database error: {exc.orig}") from None

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        """A plain connection for Core reads (no ORM session: rows need no identity map), in
        autocommit: on PostgreSQL a transaction around a read cost two more round trips than
        its query (issue 15); a read here needs no snapshot across its statements."""
        with _connected(self._reader) as connection:
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
        try:
            pooled = self._engine.raw_connection()
        except OperationalError as exc:
            raise StoreError(f"database error: {exc.orig}") from None
        connection: Any = pooled.driver_connection
        postgres = self.dialect == "postgresql"
        try:
            if postgres:  # no BEGIN; and the pool's ROLLBACK on return is then no round trip
                connection.autocommit = True
            yield connection
        except self._engine.dialect.loaded_dbapi.Error as exc:
            pooled.invalidate()  # whatever state it is in, it is not handed out again
            raise StoreError(f"database error: {exc}") from None
        finally:
            if postgres and pooled.is_valid:
                connection.autocommit = False
            pooled.close()

    @contextmanager
    def _writing_pipelined(self) -> Iterator[Connection]:
        """A connection for a `pipelined_transaction` and the reads before it: on PostgreSQL
        in autocommit (the pipeline sends its own BEGIN and COMMIT: no round trip for a BEGIN
        before the reads); elsewhere a plain connection in one transaction: the caller commits,
        closing it rolls back. Never the readers' autocommit one there: a revision's rows must
        land together or not at all (a process killed between two statements left a revision
        without files)."""
        engine = self._reader if can_pipeline(self._engine.dialect) else self._engine
        with _connected(engine) as connection:
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

"""SqlStore: the Store on SQLAlchemy/SQLModel, for SQLite (default) and PostgreSQL."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from sqlalchemy import delete, insert
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from hubwatch.errors import StoreError
from hubwatch.models.timestamps import now as utc_now
from hubwatch.settings import Settings
from hubwatch.store.base import Store
from hubwatch.store.sql.advisories import SqlAdvisoryStore
from hubwatch.store.sql.browse import SqlBrowseStore
from hubwatch.store.sql.changes import SqlChangeStore
from hubwatch.store.sql.estimates import SqlEstimateStore
from hubwatch.store.sql.known import SqlKnownContent
from hubwatch.store.sql.lineage import SqlLineageStore
from hubwatch.store.sql.links import SqlLinkStore
from hubwatch.store.sql.migrate import current, shipped_head, upgrade
from hubwatch.store.sql.repos import SqlRepoStore
from hubwatch.store.sql.revisions import SqlRevisionStore
from hubwatch.store.sql.schedules import SqlScheduleStore
from hubwatch.store.sql.tables import CursorRow
from hubwatch.store.sql.timeline import SqlTimelineStore
from hubwatch.store.sql.webhooks import SqlWebhookStore
from hubwatch.store.sql.xet import SqlXetTermsStore


class SqlStore(
    SqlRepoStore,
    SqlRevisionStore,
    SqlKnownContent,
    SqlChangeStore,
    SqlAdvisoryStore,
    SqlEstimateStore,
    SqlScheduleStore,
    SqlWebhookStore,
    SqlBrowseStore,
    SqlLineageStore,
    SqlXetTermsStore,
    SqlTimelineStore,
    SqlLinkStore,
    Store,
):
    """Store on SQLite or PostgreSQL; the URL decides. Each part is a mixin over `SqlBase`."""

    def start(self) -> None:
        try:
            upgrade(self._engine)
        except OperationalError as exc:
            raise StoreError(
                f"cannot open the database ({self._engine.url.render_as_string()}): {exc.orig}"
            ) from None

    def close(self) -> None:
        self._engine.dispose()

    def write_problem(self) -> str | None:
        """Why a write fails now (a full disk, a read-only file or server), or None: a row of
        the cursor table written and deleted in one committed transaction."""
        probe = CursorRow.__table__  # type: ignore[attr-defined]
        try:
            with self._engine.begin() as connection:
                connection.execute(insert(probe).values(name=_PROBE, value=utc_now()))
                connection.execute(delete(probe).where(probe.c.name == _PROBE))
        except SQLAlchemyError as exc:
            return one_line(getattr(exc, "orig", None) or exc)
        return None

    def start_reading(self) -> None:
        """Get ready to read a database this store cannot write: StoreError unless it is at the
        newest schema (a migration would be a write)."""
        head = shipped_head()
        if head is None or current(self._engine) != head:
            raise StoreError("the database is not at the newest schema, and cannot be migrated")


_PROBE = "hubwatch write check"


def one_line(exc: object) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def open_store(settings: Settings, *, or_read_only: bool = False) -> SqlStore:
    """A started store (migrations applied) for the configured database.

    `or_read_only`: where it cannot be written (a full disk, a read-only file), a store that
    reads what is there, with `read_only` saying why, instead of StoreError.
    """
    url = settings.resolved_database_url()
    try:
        if settings.database_url is None:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = SqlStore(url)
        store.start()
    except (StoreError, OSError) as exc:
        if not or_read_only:
            raise
        return _open_reading(url, _why(url, one_line(exc)))
    if or_read_only and (problem := store.write_problem()) is not None:
        store.read_only = _why(url, problem)
    return store


def _why(url: str, error: str) -> str:
    """`error`, with what the database's file system says of it (full, read-only) where it
    is a SQLite file: SQLite's own words for a full disk can be "disk I/O error"."""
    database = make_url(url).database if url.startswith("sqlite") else None
    if not database or database == ":memory:":
        return error
    try:
        found = os.statvfs(Path(database).parent)
    except OSError:
        return error
    if found.f_flag & os.ST_RDONLY:
        return f"{error} (the file system is read-only)"
    if found.f_bavail == 0:
        return f"{error} (no space left on the device)"
    if Path(database).exists() and not os.access(database, os.W_OK):
        return f"{error} (the database file is read-only)"
    return error


def _open_reading(url: str, why: str) -> SqlStore:
    """A store reading the SQLite file of `url` as it lies on disk (`immutable`: no lock, no
    -wal or -shm file, nothing written); StoreError with `why` when that cannot be read."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or not Path(database).is_file():
        raise StoreError(why)
    # NOTE: what a crash left in the -wal file, not yet checkpointed, is not read
    # (https://www.sqlite.org/uri.html#uriimmutable)
    uri = f"sqlite:///file:{Path(database).resolve()}?mode=ro&immutable=1&uri=true"
    store = SqlStore(uri)
    try:
        store.start_reading()
        with store._reading() as connection:
            connection.exec_driver_sql("SELECT count(*) FROM repo").all()
    except (StoreError, SQLAlchemyError, sqlite3.Error):
        store.close()
        raise StoreError(why) from None
    store.read_only = why
    return store

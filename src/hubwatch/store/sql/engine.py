"""The SQLAlchemy engine of a store: pooling, SQLite's settings, pings, what counts as lost."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError
from sqlmodel import create_engine

from hubwatch.store.outage import Outage

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


def make_engine(url: str, outage: Outage | None = None) -> Engine:
    """An engine for `url`, with SQLite set up for a long-running writer (WAL, foreign keys);
    on PostgreSQL a pooled connection is pinged before use when it sat idle, or when it was
    last used before the latest failure `outage` saw (a server restarted meanwhile)."""
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
    _ping_when_idle(engine, outage or Outage())
    return engine


PING_IDLE_S = 1.0
"""A pooled connection idle this long is pinged before it is used again."""


def _ping_when_idle(engine: Engine, outage: Outage) -> None:
    """Ping a pooled connection only when it has sat idle (`PING_IDLE_S`), not at every
    checkout as `pool_pre_ping` does: that is a round trip more than a badge's one query on
    PostgreSQL (issue 15). A connection the server dropped meanwhile is replaced, as
    pre-ping replaces it; one dropped within the last second fails its statement once, and
    then every connection last used before that failure is pinged before its next use (a
    restarted server dropped them all: none fails a statement once the database is back)."""

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("idle_since", None)
        if since is None:
            return  # new
        if time.monotonic() - since < PING_IDLE_S and since > outage.failed_at:
            return  # in use a moment ago, and since the last failure: a restart would have
            # left it dead and failed its next statement (a second outage logged, at once)
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # whatever the driver raises for a dead connection
            raise DisconnectionError(f"idle connection lost: {type(exc).__name__}") from exc


_SQLITE_LOST = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_FULL")
"""SQLite's errors that say the file cannot be used now (locked, unreadable, the disk full),
not that a statement is wrong (which SQLite raises as an OperationalError too)."""


def is_lost(error: BaseException, dbapi: Any) -> bool:
    """Whether a driver's error (`dbapi`'s own) says the database cannot be reached or used
    now: a server restarting or shutting down, a connection cut, a file locked; worth trying
    again later, unlike a statement the database refuses."""
    name = getattr(error, "sqlite_errorname", None)
    if name is not None:
        return str(name).startswith(_SQLITE_LOST)
    return isinstance(error, dbapi.OperationalError | dbapi.InterfaceError)

"""Pipelined writes: a transaction's statements sent to PostgreSQL without waiting for each."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError


def can_pipeline(dialect: Dialect) -> bool:
    """Whether `pipelined_transaction` sends the statements in a pipeline on `dialect`:
    PostgreSQL through psycopg over a libpq that has pipeline mode (14 or later)."""
    if dialect.name != "postgresql" or dialect.driver != "psycopg":
        return False
    return bool(dialect.loaded_dbapi.Pipeline.is_supported())


@contextmanager
def pipelined_transaction(connection: Connection, *, synchronous: bool = True) -> Iterator[None]:
    """The block's statements in one transaction, committed as the block ends; on PostgreSQL
    without waiting for the disk when not `synchronous` (its synchronous_commit, for this
    transaction alone: a server crash may lose it whole, never a part of it).

    On PostgreSQL (psycopg), BEGIN, the statements and COMMIT are sent without waiting for
    each other's results and answered together as the block ends: one round trip, where each
    statement, BEGIN and COMMIT cost one (issue 15). `connection` must then be in autocommit
    (statements before the block, a read say, need no BEGIN of their own). Elsewhere (SQLite: no
    round trips to save) the statements run as usual in the connection's transaction.

    Only for statements whose results are not read: a result arrives after the block, so
    SQLAlchemy would see no rows (a SELECT, an INSERT with RETURNING: build INSERTs
    `.inline()`, without the implicit RETURNING of their key). The first statement refused
    raises as the block ends (or at a later statement of the block), as the class SQLAlchemy
    gives the error (IntegrityError...), whichever statement it was; nothing is committed then.
    """
    if not can_pipeline(connection.dialect):
        yield
        connection.commit()
        return
    driver = connection.connection.driver_connection
    assert driver is not None and driver.autocommit, "a pipelined transaction sends its BEGIN"
    dbapi = connection.dialect.loaded_dbapi
    try:
        with driver.pipeline():
            # through the driver, as psycopg sends them itself outside a pipeline (not counted
            # as statements by SQLAlchemy's events either)
            driver.execute("BEGIN")
            if not synchronous:
                driver.execute("SET LOCAL synchronous_commit = off")
            yield
            driver.execute("COMMIT")
    except BaseException as exc:
        # refused, the transaction is aborted, not ended: roll it back before the connection
        # goes back to its pool (the pipeline's COMMIT was not run)
        with suppress(dbapi.Error):
            driver.rollback()
        if isinstance(exc, dbapi.Error):  # raised by psycopg as the block ends, not wrapped
            dialect = connection.dialect
            raise DBAPIError.instance(None, None, exc, dbapi.Error, dialect=dialect) from exc
        raise

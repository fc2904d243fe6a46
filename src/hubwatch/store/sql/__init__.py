"""The SQL backend of the Store: SQLite (the embedded default) and PostgreSQL."""

from hubwatch.store.sql.store import SqlStore, make_engine

__all__ = ["SqlStore", "make_engine"]

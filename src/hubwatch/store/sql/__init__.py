"""The SQL backend of the Store: SQLite (the embedded default) and PostgreSQL."""

from hubwatch.store.sql.engine import make_engine
from hubwatch.store.sql.store import SqlStore, open_store

__all__ = ["SqlStore", "make_engine", "open_store"]

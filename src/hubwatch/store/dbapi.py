"""DbapiRepoListing: the tracked repos read over plain DB-API, for `hubwatch list` (issue 15).

SQLAlchemy, SQLModel and Alembic took `hubwatch list --json` ~0.4 s to import before its one
query. This reads the repo table with stdlib sqlite3 (read-only) or psycopg instead, and only
from a database at SCHEMA_HEAD; anything else (no database yet, an older schema, a URL it does
not read, any driver error) is SqlStore's to handle, which migrates or creates it as ever.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

from hubwatch.errors import HubwatchError, StoreUnavailable
from hubwatch.models import (
    CommitSha,
    RepoIdentity,
    RepoRef,
    RepoState,
    SourceKind,
    TrackedRepo,
)
from hubwatch.models.timestamps import utc

SCHEMA_HEAD = "0019"
"""The newest migration shipped (store/sql/migrations/versions); a test holds it equal to
Alembic's head, so a new migration cannot leave this reader on an older schema."""

# NOTE: SQLAlchemy's own pattern (sqlalchemy/engine/url.py, _parse_url), so that a URL is split
# here exactly as the full store's make_url splits it.
_URL = re.compile(
    r"""
        (?P<name>[\w\+]+)://
        (?:
            (?P<username>[^:/]*)
            (?::(?P<password>[^@]*))?
        @)?
        (?:
            (?:
                \[(?P<ipv6host>[^/\?]+)\] |
                (?P<ipv4host>[^/:\?]+)
            )?
            (?::(?P<port>[^/\?]*))?
        )?
        (?:/(?P<database>[^\?]*))?
        (?:\?(?P<query>.*))?
    """,
    re.X,
)

_PG_PARAMETERS = frozenset(
    {
        "application_name",
        "connect_timeout",
        "options",
        "sslcert",
        "sslkey",
        "sslmode",
        "sslrootcert",
    }
)
"""libpq parameters a PostgreSQL URL's query may carry here (SQLAlchemy hands them to psycopg
as they are); any other, `host` (SQLAlchemy's multi-host form) among them, is left to SqlStore."""

_NO_SQLITE_PARTS = ("username", "password", "ipv4host", "ipv6host", "port")
"""URL parts a SQLite file URL has none of."""

_COLUMNS = (
    "repo_id, source, url, branch, state, head_sha, revision_count, added_at, last_polled_at,"
    " last_error, renamed_to, failures, hub_object_id, hub_created_at, former_ids"
)


@dataclass(frozen=True)
class _Reader:
    """An open DB-API connection (sqlite3's or psycopg's) with what its driver differs in."""

    connection: Any
    errors: tuple[type[Exception], ...]
    """What a read may raise that leaves the answer to the full store."""
    mark: str
    """The driver's parameter placeholder."""

    def page(self, after: str | None, limit: int, offset: int) -> list[TrackedRepo]:
        """One keyset page of repos by id: `WHERE repo_id > after`, on the unique index."""
        where = f"WHERE repo_id > {self.mark} " if after is not None else ""
        query = (
            f"SELECT {_COLUMNS} FROM repo {where}ORDER BY repo_id"
            f" LIMIT {self.mark} OFFSET {self.mark}"
        )
        values = (limit, offset) if after is None else (after, limit, offset)
        rows = self.connection.execute(query, values).fetchall()
        return [_row_repo(tuple(row)) for row in rows]


class DbapiRepoListing:
    """`SqlStore.list_repos()` without SQLAlchemy: the same values, or None where it cannot
    answer for certain (the caller then opens the full store)."""

    def __init__(self, url: str) -> None:
        self._url = url

    def list_repos(self) -> list[TrackedRepo] | None:
        """The tracked repos ordered by id, or None: a URL other than a plain SQLite file or
        PostgreSQL over psycopg, no database, a schema other than SCHEMA_HEAD, any error."""
        pages = self.pages()
        return None if pages is None else [repo for page in pages for repo in page]

    def pages(
        self, *, offset: int = 0, limit: int | None = None, size: int = 1000
    ) -> Iterator[list[TrackedRepo]] | None:
        """The tracked repos by id, `size` at a time (memory bounded by a page), the first
        `offset` skipped, at most `limit` (None: all); None where `list_repos` is. An error
        after the first page raises StoreUnavailable: what came before is already out."""
        reader = self._reader()
        if reader is None:
            return None
        try:
            first = reader.page(None, _size(size, limit), offset)
        except reader.errors:
            reader.connection.close()
            return None
        return _pages(reader, first, size, limit)

    def _reader(self) -> _Reader | None:
        """A connection to a database at SCHEMA_HEAD, or None."""
        match = _URL.match(self._url)
        if match is None:
            return None
        parts = match.groupdict()
        reader = None
        if parts["name"] == "sqlite":
            path = _sqlite_path(parts)
            reader = None if path is None else _sqlite_reader(path)
        elif parts["name"] == "postgresql+psycopg":
            params = _postgres_params(parts)
            reader = None if params is None else _postgres_reader(params)
        if reader is None:
            return None
        try:
            rows = reader.connection.execute("SELECT version_num FROM alembic_version")
            if [tuple(row) for row in rows.fetchall()] == [(SCHEMA_HEAD,)]:
                return reader
        except reader.errors:
            pass
        reader.connection.close()
        return None


def _size(size: int, left: int | None) -> int:
    return size if left is None else min(size, left)


def _pages(
    reader: _Reader, page: list[TrackedRepo], size: int, limit: int | None
) -> Iterator[list[TrackedRepo]]:
    """`page`, then those after it until the repos or `limit` run out; the connection closed
    at the end, or when the caller stops early."""
    left = limit
    try:
        while page:
            yield page
            wanted = _size(size, left)
            left = None if left is None else left - len(page)
            if len(page) < wanted or left == 0:
                return
            try:
                page = reader.page(page[-1].ref.repo_id, _size(size, left), 0)
            except reader.errors as exc:
                raise StoreUnavailable(f"the repo listing stopped part way: {exc}") from None
    finally:
        reader.connection.close()


def _sqlite_path(parts: dict[str, str | None]) -> str | None:
    """The file a `sqlite:///path` URL names (relative, or absolute with four slashes)."""
    database = parts["database"]
    if parts["query"] is not None or not database:  # ?uri=true, ?mode=... : the store's to read
        return None
    if any(parts[key] is not None for key in _NO_SQLITE_PARTS):
        return None
    path = unquote(database)  # NOTE: make_url unquotes the database part too
    return None if path == ":memory:" else path


def _postgres_params(parts: dict[str, str | None]) -> dict[str, Any] | None:
    """psycopg.connect's arguments as SQLAlchemy's psycopg dialect builds them from the URL."""
    params: dict[str, Any] = {}
    for key, name in (("username", "user"), ("password", "password"), ("database", "dbname")):
        if value := unquote(parts[key] or ""):
            params[name] = value
    if host := parts["ipv4host"] or parts["ipv6host"]:
        params["host"] = host
    if port := parts["port"]:
        if not port.isdigit():
            return None
        params["port"] = int(port)
    pairs = parse_qsl(parts["query"] or "")
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys) or not set(keys) <= _PG_PARAMETERS:
        return None
    params.update(pairs)
    return params


def _sqlite_reader(path: str) -> _Reader | None:
    import sqlite3

    try:
        # read-only: a missing file stays missing (the full store creates it), nothing is written
        connection = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error:
        return None
    return _Reader(connection, (sqlite3.Error, ValueError, HubwatchError), "?")


def _postgres_reader(params: dict[str, Any]) -> _Reader | None:
    import psycopg

    try:
        connection = psycopg.connect(**params, autocommit=True)
    except psycopg.Error:
        return None
    return _Reader(connection, (psycopg.Error, ValueError, HubwatchError), "%s")


def _row_repo(row: tuple[Any, ...]) -> TrackedRepo:
    """One row of `_COLUMNS`: the first twelve are `tracked_repo`'s, then the repo's identity."""
    object_id, created, former = row[12:]
    identity = None
    if object_id is not None or created is not None:
        identity = RepoIdentity(object_id, None if created is None else _timestamp(created))
    names = json.loads(former) if isinstance(former, str) else former  # SQLite: JSON text
    return tracked_repo(*row[:12], identity=identity, former_ids=tuple(names or ()))


def tracked_repo(
    repo_id: str,
    source: str,
    url: str | None,
    branch: str,
    state: str,
    head: str | None,
    revisions: int,
    added_at: str | datetime,
    last_polled_at: str | datetime | None,
    last_error: str | None,
    renamed_to: str | None,
    failures: int,
    *,
    identity: RepoIdentity | None = None,
    former_ids: tuple[str, ...] = (),
) -> TrackedRepo:
    """One repo row (`_COLUMNS`, in order) as a TrackedRepo: for this reader and SqlRepoStore's,
    so that both give the same values."""
    return TrackedRepo(
        ref=RepoRef(repo_id, _SOURCES.get(source) or SourceKind(source), url, branch),
        state=_STATES.get(state) or RepoState(state),
        head=CommitSha(head) if head else None,
        revisions=revisions,
        added_at=_timestamp(added_at),
        last_polled_at=None if last_polled_at is None else _timestamp(last_polled_at),
        last_error=last_error,
        renamed_to=renamed_to,
        failures=failures,
        identity=identity,
        former_ids=former_ids,
    )


_SOURCES = {kind.value: kind for kind in SourceKind}
_STATES = {state.value: state for state in RepoState}
"""Each enum by its value: a dict lookup, where calling the enum takes a few times longer
(a page of a thousand repos calls both a thousand times)."""


def _timestamp(value: str | datetime) -> datetime:
    """A stored timestamp, UTC-aware: psycopg gives datetimes; SQLite gives the text that
    SQLAlchemy wrote, which SQLAlchemy reads back with `fromisoformat` too."""
    return utc(value if isinstance(value, datetime) else datetime.fromisoformat(value))

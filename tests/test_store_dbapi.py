"""DbapiRepoListing: the same repos as SqlStore.list_repos() without SQLAlchemy, or None."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from hubwatch.cli.base import plain
from hubwatch.models import RepoRef, RepoState, SourceKind
from hubwatch.store.dbapi import SCHEMA_HEAD, DbapiRepoListing
from hubwatch.store.sql import SqlStore, make_engine
from hubwatch.store.sql.migrate import alembic_config, upgrade
from tests.test_store import sha, snapshot

POLLED = datetime(2024, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def populate(store: SqlStore) -> None:
    """Repos in several states, through the store's public API."""
    store.add_repo(RepoRef("org/alpha"))
    store.add_repo(RepoRef("org/beta", SourceKind.GIT, "/srv/git/beta", "release"))
    store.add_repo(RepoRef("org/gamma"))
    store.add_repo(RepoRef("Org/delta"))
    store.add_repo(RepoRef("org/epsilon"))
    for n in (1, 2):
        store.add_revision("org/beta", snapshot(n, {"config.json": b"{}"}, n - 1 or None))
    store.update_repo("org/beta", head=sha(2), polled_at=POLLED)
    for _ in range(3):
        store.record_failure("org/gamma", 'HTTP 503: "upstream" said\nno \x1b[31m', POLLED)
    store.update_repo("org/gamma", state=RepoState.DEGRADED)
    store.update_repo("org/alpha", state=RepoState.DELETED, renamed_to="org/alpha-2")
    store.update_repo("Org/delta", state=RepoState.AUTH_FAILED, error="401", polled_at=POLLED)
    store.update_repo("org/epsilon", polled_at=POLLED + timedelta(days=400), clear_error=True)


def test_schema_head_is_the_newest_migration(store: SqlStore) -> None:
    heads = ScriptDirectory.from_config(alembic_config(store._engine)).get_heads()
    assert heads == [SCHEMA_HEAD]


def test_listing_equals_the_stores_values_and_json(store: SqlStore, db_url: str) -> None:
    populate(store)
    expected = store.list_repos()
    listed = DbapiRepoListing(db_url).list_repos()
    assert listed == expected
    assert sorted(r.revisions for r in expected) == [0, 0, 0, 0, 2]
    assert json.dumps(plain(listed)) == json.dumps(plain(expected))  # offsets, enums, None


def test_empty_database_at_head_lists_nothing(store: SqlStore, db_url: str) -> None:
    assert DbapiRepoListing(db_url).list_repos() == []


def test_missing_sqlite_file_is_left_to_the_store_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "hubwatch.db"
    assert DbapiRepoListing(f"sqlite:///{path}").list_repos() is None
    assert not path.exists()


def test_schema_behind_head_is_left_to_the_store(db_url: str) -> None:
    engine = make_engine(db_url)
    upgrade(engine, "0010")
    engine.dispose()
    assert DbapiRepoListing(db_url).list_repos() is None


def test_head_without_the_repo_table_is_left_to_the_store(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32))")
        connection.execute("INSERT INTO alembic_version VALUES (?)", (SCHEMA_HEAD,))
    connection.close()
    assert DbapiRepoListing(f"sqlite:///{path}").list_repos() is None


def test_a_file_that_is_no_database_is_left_to_the_store(tmp_path: Path) -> None:
    (tmp_path / "hubwatch.db").write_bytes(b"not a database at all" * 100)
    assert DbapiRepoListing(f"sqlite:///{tmp_path / 'hubwatch.db'}").list_repos() is None


def test_percent_escaped_sqlite_path_is_read_as_sqlalchemy_reads_it(tmp_path: Path) -> None:
    folder = tmp_path / "a b#c%d"
    folder.mkdir()
    url = f"sqlite:///{folder / 'x.db'}".replace("%", "%25").replace(" ", "%20")
    store = SqlStore(url)
    store.start()
    store.add_repo(RepoRef("org/m"))
    store.close()
    assert (folder / "x.db").exists()
    listed = DbapiRepoListing(url).list_repos()
    assert listed is not None and [r.ref.repo_id for r in listed] == ["org/m"]


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///{db}?mode=ro",
        "sqlite+pysqlite:///{db}",
        "postgresql://u@127.0.0.1:1/db",
        "postgresql+psycopg://u@127.0.0.1:x/db",
        "postgresql+psycopg://u@127.0.0.1:1/db?host=/tmp",
        "postgresql+psycopg://u@127.0.0.1:1/db?sslmode=require&sslmode=disable",
        "mysql+pymysql://u@127.0.0.1/db",
        "not a url",
    ],
)
def test_urls_it_does_not_read_are_left_to_the_store(sqlite_url: str, url: str) -> None:
    store = SqlStore(sqlite_url)  # a database at head, which these URLs name otherwise
    store.start()
    store.close()
    path = sqlite_url.removeprefix("sqlite:///")
    assert DbapiRepoListing(url.format(db=path)).list_repos() is None


def test_unreachable_postgresql_is_left_to_the_store() -> None:
    url = "postgresql+psycopg://nobody@127.0.0.1:1/db?connect_timeout=2"
    assert DbapiRepoListing(url).list_repos() is None

"""A revision's rows written in one pipelined transaction: races and refusals handled as before."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import IntegrityError

from hubwatch.errors import StoreError
from hubwatch.store.sql import SqlStore
from hubwatch.store.sql.pipeline import pipelined_transaction
from tests.test_store import REPO, sha, snapshot


@pytest.fixture
def two_writers(pg_url: str) -> Iterator[tuple[SqlStore, SqlStore]]:
    """Two stores on one PostgreSQL database, as two worker processes have."""
    stores = SqlStore(pg_url), SqlStore(pg_url)
    stores[0].start()
    yield stores
    for store in stores:
        store.close()


@pytest.mark.postgres
def test_a_revision_another_writer_stored_meanwhile_is_not_stored_twice(
    two_writers: tuple[SqlStore, SqlStore],
) -> None:
    # the other writer commits the revision between this one's lookup and its insert: the
    # unique key refuses the insert when the pipeline is answered, and that is told apart
    # from a row refused for itself (before, the IntegrityError escaped add_revision)
    mine, other = two_writers
    mine.add_repo(REPO)
    revision = snapshot(1, {"config.json": b"{}"})
    raced: list[bool] = []

    def other_first(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.startswith("INSERT INTO revision") and not raced:
            raced.append(other.add_revision(REPO.repo_id, revision))

    event.listen(mine._engine, "before_cursor_execute", other_first)
    assert mine.add_revision(REPO.repo_id, revision) is False
    assert raced == [True]
    assert [r.sha for r in mine.history(REPO.repo_id)] == [sha(1)]
    assert mine.get_repo(REPO.repo_id).revisions == 1
    assert [f.path for f in mine.files(REPO.repo_id, sha(1))] == ["config.json"]


@pytest.mark.postgres
def test_a_statement_refused_in_a_pipeline_commits_none_of_its_block(pg_url: str) -> None:
    store = SqlStore(pg_url)
    store.start()
    try:
        with store._writing_pipelined() as connection:
            connection.execute(text("CREATE TABLE one (n INTEGER PRIMARY KEY)"))
            with pytest.raises(IntegrityError, match="(?i)duplicate"):
                with pipelined_transaction(connection):
                    connection.execute(text("INSERT INTO one VALUES (1)"))
                    connection.execute(text("INSERT INTO one VALUES (1)"))
                    connection.execute(text("INSERT INTO one VALUES (2)"))
            # rolled back, not left aborted: the same connection goes on
            with pipelined_transaction(connection):
                connection.execute(text("INSERT INTO one VALUES (3)"))
            rows = connection.execute(text("SELECT n FROM one")).scalars().all()
        assert rows == [3]
    finally:
        store.close()


def test_a_child_is_not_stored_while_the_parent_this_store_wrote_is_gone(store: SqlStore) -> None:
    # a revision committed without waiting for the disk is lost if the database crashes within
    # the second; a poll going on through a new connection must not store its child without it
    store.add_repo(REPO)
    assert store.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"})) is True
    with store._engine.begin() as connection:  # what a crash would have lost
        connection.execute(text("DELETE FROM revision WHERE sha = :sha"), {"sha": sha(1)})
    child = snapshot(2, {"config.json": b"{}"}, parent=1)
    for _ in range(2):  # the tracker's second attempt stores less of it: refused the same
        with pytest.raises(StoreError, match="stored a moment ago, is gone"):
            store.add_revision(REPO.repo_id, child)
    assert store.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"})) is True
    assert store.add_revision(REPO.repo_id, child) is True
    assert [r.sha for r in store.history(REPO.repo_id)] == [sha(1), sha(2)]


@pytest.mark.postgres
def test_a_revision_written_without_waiting_for_the_disk_leaves_the_setting_as_it_was(
    pg_url: str,
) -> None:
    # SET LOCAL: the connection goes back to the pool synchronous, for every other write
    store = SqlStore(pg_url)
    store.start()
    try:
        store.add_repo(REPO)
        assert store.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"})) is True
        with store._writing_pipelined() as connection:  # the pool's one connection
            # on, as a server's default is: the throwaway test cluster runs with it off
            connection.exec_driver_sql("SET synchronous_commit = on")
        assert store.add_revision(REPO.repo_id, snapshot(2, {"config.json": b"{}"})) is True
        with store._writing_pipelined() as connection:
            after = connection.exec_driver_sql("SHOW synchronous_commit").scalar()
        assert after == "on"
    finally:
        store.close()

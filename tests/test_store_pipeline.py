"""A revision's rows written in one pipelined transaction: races and refusals handled as before."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
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


def _statements(store: SqlStore) -> list[str]:
    """The statements `store` runs from now on (their first two words), as they run."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(" ".join(statement.split()[:3]))

    event.listen(store._engine, "before_cursor_execute", count)
    return seen


@pytest.mark.postgres
def test_a_backfill_s_next_revision_is_written_without_a_lookup_first(pg_url: str) -> None:
    # its parent's key, files and repo are known from writing it; its own key was drawn in
    # the parent's pipeline: the one round trip is its write (issue 35)
    store = SqlStore(pg_url)
    store.start()
    try:
        store.add_repo(REPO)
        assert store.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"})) is True
        seen = _statements(store)
        for n in (2, 3):
            child = snapshot(n, {"config.json": b'{"n": %d}' % n}, parent=n - 1)
            assert store.add_revision(REPO.repo_id, child) is True
        assert not [s for s in seen if s.startswith("SELECT")], seen
        history = store.history(REPO.repo_id)
        assert [r.sha for r in history] == [sha(1), sha(2), sha(3)]
        assert [r.changed for r in history] == [("config.json",)] * 3
        assert store.get_repo(REPO.repo_id).revisions == 3
        assert [f.path for f in store.files(REPO.repo_id, sha(3))] == ["config.json"]
    finally:
        store.close()


@pytest.mark.postgres
def test_a_child_written_after_another_writer_s_revision_takes_a_later_key(
    two_writers: tuple[SqlStore, SqlStore],
) -> None:
    # the key drawn with the parent came before the other writer's: history is in key order,
    # so the child is written the usual way, under a key drawn now
    mine, other = two_writers
    mine.add_repo(REPO)
    assert mine.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"})) is True
    assert other.add_revision(REPO.repo_id, snapshot(3, {"a.json": b"{}"}, parent=1)) is True
    assert mine.add_revision(REPO.repo_id, snapshot(2, {"b.json": b"{}"}, parent=1)) is True
    assert [r.sha for r in mine.history(REPO.repo_id)] == [sha(1), sha(3), sha(2)]
    assert mine.get_repo(REPO.repo_id).revisions == 3
    assert [f.path for f in mine.files(REPO.repo_id, sha(2))] == ["b.json"]


@pytest.mark.postgres
def test_a_child_another_writer_stored_meanwhile_is_not_stored_twice(
    two_writers: tuple[SqlStore, SqlStore],
) -> None:
    mine, other = two_writers
    mine.add_repo(REPO)
    assert mine.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"})) is True
    child = snapshot(2, {"config.json": b"[]"}, parent=1)
    assert other.add_revision(REPO.repo_id, child) is True
    assert mine.add_revision(REPO.repo_id, child) is False
    assert [r.sha for r in mine.history(REPO.repo_id)] == [sha(1), sha(2)]
    assert mine.get_repo(REPO.repo_id).revisions == 2


def test_a_child_with_a_row_refused_is_refused_whole(store: SqlStore) -> None:
    # refused without its lookup, it is written again with it, and refused the same: raised,
    # nothing of it stored, and the next attempt (the tracker's, with less) is stored
    store.add_repo(REPO)
    assert store.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"})) is True
    child = snapshot(2, {"config.json": b"[]"}, parent=1)
    twice = replace(child, files=(*child.files, child.files[0]))  # a file listed twice
    with pytest.raises(IntegrityError):
        store.add_revision(REPO.repo_id, twice)
    assert [r.sha for r in store.history(REPO.repo_id)] == [sha(1)]
    assert store.add_revision(REPO.repo_id, child) is True
    assert [r.sha for r in store.history(REPO.repo_id)] == [sha(1), sha(2)]
    assert store.get_repo(REPO.repo_id).revisions == 2


@pytest.mark.postgres
def test_stored_bytes_are_compressed_with_lz4_where_the_server_offers_it(pg_url: str) -> None:
    # pglz cost the server 11 ms for each 600 kB tokenizer.json a backfill stored, lz4 < 3 ms
    store = SqlStore(pg_url)
    store.start()
    try:
        with store._reading() as connection:
            offered = connection.exec_driver_sql(
                "SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'"
            ).scalar()
            methods = connection.exec_driver_sql(
                "SELECT attrelid::regclass::text, attcompression FROM pg_attribute"
                " WHERE attname = 'data' AND attrelid = ANY(ARRAY['blob', 'estimate',"
                " 'xet_terms']::regclass[])"
            ).all()
    finally:
        store.close()
    expected = "l" if offered is not None and "lz4" in offered else ""
    assert sorted(methods) == [(t, expected) for t in ("blob", "estimate", "xet_terms")]

"""A revision's rows written in one pipelined transaction: races and refusals handled as before."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import IntegrityError

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

"""A backfill's next revision on PostgreSQL: its lookup's checks made by its own write instead.

`add_revision` looks up the repo, the revision and its parent, and draws the revision's key,
before it writes: a round trip of its own before the pipelined one, half of those a stored
revision waits on (issue 35). When the revision follows the one this thread stored last (its
first parent: each revision of a backfill), all of that is known but whether the database still
has the parent: the key was drawn in the parent's own pipeline (`draw_key`), the repo's key and
the parent's files kept, and the revision's row takes its repo key from the parent's row
(`INSERT_CHILD`), so it cannot be inserted without the parent; refused, the revision is written
again the usual way, whose lookup says why (`revisions.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from sqlalchemy import bindparam, exists, insert
from sqlalchemy import select as core_select
from sqlalchemy.engine import Connection

from hubwatch.store.sql.base import REVISION


class Drawn(NamedTuple):
    """What the next revision of a backfill is written with (`SqlBase._drawn`)."""

    repo_pk: int
    """The repo's key."""
    key: int
    """A key drawn from the revisions' sequence, after the parent's own."""


_PARENT = REVISION.alias("parent")
_LATER = REVISION.alias("later")
_REPO_OF_PARENT = (
    core_select(_PARENT.c.repo_pk)
    .where(
        _PARENT.c.id == bindparam("parent_pk"),
        _PARENT.c.sha == bindparam("parent_sha"),
        _PARENT.c.recorded_at == bindparam("parent_at"),
        _PARENT.c.repo_pk == bindparam("parent_repo"),
        # still the repo's newest: a revision another writer stored since took a later key
        # than the one drawn here, and history is in key order
        ~exists().where(_LATER.c.repo_pk == _PARENT.c.repo_pk, _LATER.c.id > _PARENT.c.id),
    )
    .scalar_subquery()
)
INSERT_CHILD = insert(REVISION).values(repo_pk=_REPO_OF_PARENT).inline()
"""The revision's row, its repo key read from its parent's row (`parent_pk`, `parent_sha`,
`parent_at`: its key, sha and time recorded; `parent_repo`: the repo's key), and only while the
parent is the repo's newest revision: otherwise the key is NULL, which the column refuses
(IntegrityError), and nothing of the pipeline is committed. Built once with parameters."""

_DRAW = "SELECT nextval(pg_get_serial_sequence('revision', 'id'))"


def draw_key(connection: Connection) -> Callable[[], int]:
    """Draw a revision key in the pipeline of `connection` (`pipelined_transaction`); the
    callable reads it once the pipeline is answered. Through the driver: its cursor keeps the
    result for after the pipeline, which SQLAlchemy's would not (it reads none)."""
    driver = connection.connection.driver_connection
    assert driver is not None
    cursor = driver.execute(_DRAW)

    def key() -> int:
        row = cursor.fetchone()
        assert row is not None
        return int(row[0])

    return key

"""Counts kept on write: each repo's revisions, and its changes per block of revision ids.

A badge's "changes since a pinned revision" was a range scan of every change after the pin,
which grew with history (13 ms for 50,000 changes on PostgreSQL, issue 15). With tallies it is
the changes of the rest of the pin's block (at most BLOCK revisions) plus one row per later
block: BLOCK times fewer rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Integer, Select, Table, bindparam, case, func, update
from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from hubwatch.models import Change, Severity
from hubwatch.store.sql.tables import ChangeRow, ChangeTallyRow, RepoRow

BLOCK = 1024
"""Revision ids per tally row."""

TALLY: Table = ChangeTallyRow.__table__  # type: ignore[attr-defined]
CHANGE: Table = ChangeRow.__table__  # type: ignore[attr-defined]
REPO: Table = RepoRow.__table__  # type: ignore[attr-defined]


def add_to_tally(
    session: Session | Connection,
    dialect: str,
    repo_pk: int,
    revision_pk: int,
    total: int,
    breaking: int,
) -> None:
    """Add `total` changes, `breaking` of them breaking (either may be negative), to the tally
    of the block of `revision_pk`, in the caller's transaction."""
    if total == 0 and breaking == 0:
        return
    values = {"repo_pk": repo_pk, "block": revision_pk // BLOCK, "total": total}
    session.execute(_UPSERT[dialect == "postgresql"], {**values, "breaking": breaking})


def _upsert(insert: Any) -> Any:
    """The tally's upsert (`insert`: the dialect's), built once with parameters."""
    statement = insert(TALLY).values(
        repo_pk=bindparam("repo_pk"),
        block=bindparam("block"),
        total=bindparam("total"),
        breaking=bindparam("breaking"),
    )
    return statement.on_conflict_do_update(
        index_elements=["repo_pk", "block"],
        set_={
            "total": TALLY.c.total + statement.excluded.total,
            "breaking": TALLY.c.breaking + statement.excluded.breaking,
        },
    )


# built once: building a statement cost more than running it (issue 15); by "is postgresql"
_UPSERT = (_upsert(sqlite.insert), _upsert(postgresql.insert))
_ONE_MORE = (
    update(REPO)
    .where(REPO.c.id == bindparam("pk"))
    .values(revision_count=REPO.c.revision_count + 1)
)


def count_revision(
    session: Session | Connection,
    dialect: str,
    repo_pk: int,
    revision_pk: int,
    changes: Sequence[Change],
) -> None:
    """What a newly stored revision adds to its repo's counts, in the revision's transaction:
    one revision, and its changes to its block's tally."""
    session.execute(_ONE_MORE, {"pk": repo_pk})
    add_to_tally(session, dialect, repo_pk, revision_pk, len(changes), breaking_in(changes))


def breaking_in(changes: Sequence[Change]) -> int:
    return sum(1 for c in changes if c.severity is Severity.BREAKING)


def count_after(connection: Connection, repo_pk: int, pinned_pk: int) -> tuple[int, int]:
    """(all, breaking) changes of the repo's revisions after `pinned_pk`: the rest of its
    block counted, the later blocks' tallies added, in one statement."""
    block = pinned_pk // BLOCK
    total, breaking = connection.execute(
        _COUNT_AFTER,
        {"repo_pk": repo_pk, "pinned": pinned_pk, "block": block, "next": (block + 1) * BLOCK},
    ).one()
    return int(total), int(breaking)


def _sum(column: ColumnElement[int], where: tuple[ColumnElement[bool], ...]) -> Any:
    return core_select(func.coalesce(func.sum(column), 0)).where(*where).scalar_subquery()


def _count_after() -> Select[Any]:
    """The statement of `count_after`, built once: building it cost more than running it."""
    repo_pk = bindparam("repo_pk", type_=Integer)
    rest = (
        core_select(
            func.count().label("total"),
            func.count(case((CHANGE.c.severity == Severity.BREAKING.value, 1))).label("breaking"),
        )
        .where(
            CHANGE.c.repo_pk == repo_pk,
            CHANGE.c.revision_pk > bindparam("pinned"),
            CHANGE.c.revision_pk < bindparam("next"),
        )
        .subquery()
    )
    later = (TALLY.c.repo_pk == repo_pk, TALLY.c.block > bindparam("block"))
    return core_select(
        rest.c.total + _sum(TALLY.c.total, later), rest.c.breaking + _sum(TALLY.c.breaking, later)
    ).select_from(rest)


_COUNT_AFTER = _count_after()

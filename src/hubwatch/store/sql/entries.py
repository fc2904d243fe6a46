"""The schedule entries discovery reads: the columns of a repo and its schedule, and the entry."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select as columns
from sqlmodel import col

from hubwatch.models import CommitSha, RepoRef, ScheduleEntry, SourceKind
from hubwatch.store.sql.base import utc
from hubwatch.store.sql.tables import RepoRow, ScheduleRow

ENTRY_COLUMNS = columns(
    *(
        col(column)
        for column in (
            RepoRow.repo_id,
            RepoRow.source,
            RepoRow.url,
            RepoRow.branch,
            RepoRow.state,
            RepoRow.head_sha,
            RepoRow.last_polled_at,
            RepoRow.last_error,
            RepoRow.hub_object_id,
            ScheduleRow.due_at,
            ScheduleRow.woken_at,
            ScheduleRow.listed,
        )
    )
).join(ScheduleRow, col(ScheduleRow.repo_pk) == col(RepoRow.id), isouter=True)
"""What a ScheduleEntry is made of: a repo's row and its schedule (none yet: never scheduled)."""


def entry(
    repo_id: str,
    source: str,
    url: str | None,
    branch: str,
    state: str,
    head: str | None,
    polled: datetime | None,
    error: str | None,
    object_id: str | None,
    due: datetime | None,
    woken: datetime | None,
    listed: bool | None,
) -> ScheduleEntry:
    """One row of ENTRY_COLUMNS as an entry (a repo never scheduled has no schedule yet)."""
    return ScheduleEntry(
        ref=RepoRef(repo_id, SourceKind(source), url, branch),
        state=state,
        head=CommitSha(head) if head else None,
        last_polled_at=utc(polled),
        failed=error is not None,
        due_at=utc(due),
        woken=woken is not None,
        listed=listed,
        object_id=object_id,
    )

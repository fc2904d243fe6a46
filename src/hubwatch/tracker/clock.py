"""Commit dates against our clock: a commit dated in the future or the distant past is flagged.

Whoever pushes a commit sets its date. hubwatch counts by its own clock (badges and feeds by
when it recorded a revision: `change.observed_at`, migration 0012) and shows commit dates
without trusting them; this hook tells the user when a date cannot be when the commit was
made, with a `commit.date_implausible` change (info) on the revision: dated more than a day
after hubwatch recorded it, before git existed, or more than a week before its parent.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from hubwatch.errors import UnknownRevision
from hubwatch.models import Change, CommitSha, RevisionStored, Severity
from hubwatch.store.changes import ChangeStore
from hubwatch.store.repos import RevisionStore

KIND = "commit.date_implausible"
FUTURE_SKEW = timedelta(days=1)
"""How far past our clock a commit may be dated (a machine's clock or time zone set wrong)."""
FLOOR = datetime(2005, 4, 7, tzinfo=UTC)
"""git's first commit: no commit of a git history is older."""
PARENT_SKEW = timedelta(days=7)
"""How far before its parent a commit may be dated (two machines' clocks) before it is odd."""


class ClockStore(RevisionStore, ChangeStore, Protocol):
    """What the check reads and writes: a parent's date, the revision's changes."""


def implausible(date: datetime, recorded: datetime, parent: datetime | None) -> Change | None:
    """The `commit.date_implausible` change for a commit dated `date`, recorded by hubwatch at
    `recorded`, whose first parent is dated `parent` (None: a root, or a parent not stored);
    None when the date is plausible."""
    if date > recorded + FUTURE_SKEW:
        reason, said = "future", f"{_span(date - recorded)} after hubwatch recorded it"
    elif date < FLOOR:
        reason, said = "before git", "before git existed (2005)"
    elif parent is not None and date < parent - PARENT_SKEW:
        reason, said = "before its parent", f"{_span(parent - date)} before its parent"
    else:
        return None
    summary = (
        f"Commit dated {date:%Y-%m-%d %H:%M} UTC, {said}; counted as of when hubwatch recorded "
        f"it ({recorded:%Y-%m-%d %H:%M} UTC)."
    )
    after = {
        "date": date.isoformat(),
        "recorded": recorded.isoformat(),
        "parent": parent.isoformat() if parent else None,
        "reason": reason,
    }
    return Change(KIND, Severity.INFO, summary, None, None, after)


def _span(delta: timedelta) -> str:
    days = delta.days
    if days >= 730:
        return f"{days // 365} years"
    if days >= 2:
        return f"{days} days"
    return f"{int(delta.total_seconds() // 3600)} hours"


class CommitClock:
    """The tracker's hook (`after_revision`) that flags an implausible commit date."""

    def __init__(
        self, store: ClockStore, now: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self._store = store
        self._now = now
        self._last: tuple[str, CommitSha, datetime] | None = None
        """(repo, sha, date) of the revision seen last: a backfill's next parent, not read."""

    def after_revision(self, stored: RevisionStored) -> list[Change]:
        """Check a revision just stored; store and give its `commit.date_implausible`."""
        commit = stored.commit
        parent = self._parent_date(stored.repo_id, stored.base)
        self._last = (stored.repo_id, commit.sha, commit.date)
        change = implausible(commit.date, self._now(), parent)
        if change is None:
            return []
        self._store.replace_changes(stored.repo_id, commit.sha, KIND, [change])
        return [change]

    def _parent_date(self, repo_id: str, base: CommitSha | None) -> datetime | None:
        if base is None:
            return None
        if self._last is not None and self._last[:2] == (repo_id, base):
            return self._last[2]
        try:
            return self._store.revision(repo_id, base).date
        except UnknownRevision:
            return None

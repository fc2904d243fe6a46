"""Pages of revision history and feed items, as the API and feeds read them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from hubwatch.models.change import Change
from hubwatch.models.ids import CommitSha
from hubwatch.models.revision import StoredRevision


@dataclass(frozen=True, slots=True)
class RevisionChanges:
    """A stored revision with the changes recorded for it."""

    revision: StoredRevision
    base: CommitSha | None
    """The revision it was compared with (its first parent); None: an empty revision."""
    changes: tuple[Change, ...]


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """Some of a repo's revisions, newest first, and where the next page starts."""

    revisions: tuple[StoredRevision, ...]
    next_cursor: int | None
    """Pass as `before` for the next (older) page; None on the last page."""
    positions: tuple[int, ...] = ()
    """Each revision's position (its cursor)."""


class RevisionText(NamedTuple):
    """A stored revision as a history page writes it: its JSON columns (`parents`, `authors`,
    `changed`, `card`) the JSON text stored, not decoded. What json.dumps wrote: JSON, but for
    NaN and Infinity, which it writes too."""

    sha: str
    parents: str
    date: datetime
    authors: str
    title: str
    message: str
    changed: str
    reachable: bool
    card: str | None
    """None: SQL NULL; the text `null` is as good."""


@dataclass(frozen=True, slots=True)
class HistoryText:
    """A `HistoryPage` of `RevisionText`s: a page written out as JSON without decoding and
    encoding again what is stored as JSON (issue 15)."""

    revisions: tuple[RevisionText, ...]
    next_cursor: int | None


@dataclass(frozen=True, slots=True)
class FeedItem:
    """One revision's changes as a feed shows them, with the repo it belongs to."""

    repo_id: str
    recorded_at: datetime
    changes: RevisionChanges

"""What workers share to schedule polls: each repo's schedule and a leased claim."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

from hubwatch.models.ids import CommitSha
from hubwatch.models.repo import RepoRef, RepoStatus


class WakePriority(IntEnum):
    """Which woken repos workers claim first: lower first, then the oldest wake.

    A repo that changed never waits behind one that did not: a change the listing or a webhook
    announced goes before the periodic verification of a repo a pin or subscription names, which
    goes before every other verification and first poll.
    """

    CHANGE = 0
    WATCHED = 1
    VERIFY = 2


@dataclass(frozen=True, slots=True)
class ScheduleEntry:
    """What change discovery needs to know about one tracked repo, read in one query."""

    ref: RepoRef
    state: str
    """The repo's RepoState value (active, gated, disabled, deleted)."""
    head: CommitSha | None
    last_polled_at: datetime | None
    failed: bool
    """Whether its last poll ended in an error."""
    due_at: datetime | None
    """When its own check is next due; None: never scheduled, so due now."""
    woken: bool
    """Whether it is already waiting for a poll."""
    listed: bool | None
    """Whether the Hub's public listing shows it; None: not known yet."""
    object_id: str | None = None
    """The Hub's object id of the repo: the listing names a renamed repo by its new id only."""
    watched: bool = False
    """Whether a subscription names the repo: its verifications go before the others'."""
    pinned_at: datetime | None = None
    """When `hubwatch pins check` last found a pin of the repo; None: never. Recently pinned,
    its verifications go before the others' too."""


@dataclass(frozen=True, slots=True)
class Claim:
    """A repo leased to one worker, with what woke it."""

    repo_id: str
    hint: RepoStatus | None = None
    """The repo's status as the listing that woke it gave it; None: the poll asks the source."""

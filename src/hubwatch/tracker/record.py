"""What one poll of one repo records: its result, the repo's events and its readable state."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog

from hubwatch.errors import SourceError
from hubwatch.models import CommitSha, EventKind, RepoEvent, RepoRef, RepoState, TrackedRepo
from hubwatch.sources.base import RevisionSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.base import Store

log = structlog.get_logger(__name__)


@dataclass
class PollResult:
    """What one poll of one repo did."""

    repo_id: str
    new: list[CommitSha] = field(default_factory=list)
    unreachable: list[CommitSha] = field(default_factory=list)
    events: list[RepoEvent] = field(default_factory=list)
    error: str | None = None
    failure: SourceError | None = None
    """The error that ended the poll early, for callers that map it (exit codes)."""
    idle: bool = False
    """Nothing upstream changed since the last poll (one cheap request)."""
    private: bool | None = None
    """Whether the source said the repo is private; None when the poll did not learn it."""
    listed: bool = False
    """Whether the source's change listing shows the repo (a public Hub repo)."""


@dataclass(frozen=True)
class PollRun:
    """One poll in progress: what each step of it reads from, and where it records what it did."""

    store: Store
    source: RevisionSource
    retry: RetryPolicy
    tracked: TrackedRepo
    """The repo as the store had it when the poll began; state changes compare against it."""
    result: PollResult

    @property
    def repo(self) -> RepoRef:
        return self.tracked.ref

    def event(self, kind: EventKind, detail: str, *, sha: CommitSha | None = None) -> None:
        """Store an event about the repo, add it to the result and log it under its kind."""
        event = RepoEvent(kind, detail, sha, now())
        self.store.add_event(self.repo.repo_id, event)
        self.result.events.append(event)
        emit = log.warning if kind is EventKind.POLL_FAILED else log.info
        emit(kind.value, detail=detail)

    def set_state(self, state: RepoState, kind: EventKind, detail: str) -> None:
        """Record the repo's state; an event of `kind` only when the state is a new one."""
        if self.tracked.state != state:
            self.event(kind, detail)
        self.store.update_repo(self.repo.repo_id, state=state, polled_at=now(), clear_error=True)

    def fail(self, exc: SourceError) -> None:
        """Record the error that ended the poll early (a poll_failed event)."""
        self.result.error, self.result.failure = str(exc), exc
        self.store.update_repo(self.repo.repo_id, polled_at=now(), error=self.result.error)
        self.event(EventKind.POLL_FAILED, self.result.error)


def now() -> datetime:
    """The time events and polls are stamped with."""
    return datetime.now(UTC)

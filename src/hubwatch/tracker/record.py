"""What one poll of one repo records: its result, the repo's events and its readable state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import structlog

from hubwatch import metrics
from hubwatch.errors import HubwatchError, TokenRefused
from hubwatch.lineage.judge import LineageReads
from hubwatch.models import CommitSha, EventKind, RepoEvent, RepoRef, RepoState, TrackedRepo
from hubwatch.models.timestamps import now
from hubwatch.sources.base import RevisionSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.links import LinkStore
from hubwatch.store.repos import RepoStore
from hubwatch.store.scheduling import ScheduleStore
from hubwatch.tracker.partial import one_line


class PollStore(LineageReads, ScheduleStore, LinkStore, Protocol):
    """What one poll reads and writes: the repo and its events, its revisions and their contents,
    their changes and lineage, whether the listing vouches for it, its refs and code links."""


log = structlog.get_logger(__name__)

DEGRADED_AFTER = 3
"""Polls in a row that fail before a repo is marked degraded (HUBWATCH_DEGRADED_AFTER)."""


class PollStopped(Exception):
    """Raised by a progress callback to stop a poll between two revisions; passed on as is."""


@dataclass
class PollResult:
    """What one poll of one repo did."""

    repo_id: str
    new: list[CommitSha] = field(default_factory=list)
    unreachable: list[CommitSha] = field(default_factory=list)
    events: list[RepoEvent] = field(default_factory=list)
    error: str | None = None
    failure: HubwatchError | None = None
    """The error that ended the poll early, for callers that map it (exit codes)."""
    idle: bool = False
    """Nothing upstream changed since the last poll (one cheap request)."""
    private: bool | None = None
    """Whether the source said the repo is private; None when the poll did not learn it."""
    listed: bool = False
    """Whether the source's change listing shows the repo (a public Hub repo)."""
    partial: list[CommitSha] = field(default_factory=list)
    """New revisions that could not be read whole (each has a `revision.partial` change)."""
    renamed_from: str | None = None
    """The name the repo was tracked under when the poll began, where it followed a rename
    (`repo_id` is the new one)."""
    identity_changed: bool = False
    """Another repo answers under the name (a `repo.identity_changed` event)."""


@dataclass(frozen=True)
class PollRun:
    """One poll in progress: what each step of it reads from, and where it records what it did."""

    store: PollStore
    source: RevisionSource
    retry: RetryPolicy
    tracked: TrackedRepo
    """The repo as the store had it when the poll began; state changes compare against it."""
    result: PollResult
    degraded_after: int = DEGRADED_AFTER

    @property
    def repo(self) -> RepoRef:
        return self.tracked.ref

    def event(self, kind: EventKind, detail: str, *, sha: CommitSha | None = None) -> None:
        """Store an event about the repo, add it to the result and log it under its kind."""
        event = RepoEvent(kind, detail, sha, now())
        self.store.add_event(self.repo.repo_id, event)
        self.result.events.append(event)
        emit = log.warning if kind in _WARNINGS else log.info
        emit(kind.value, detail=detail)

    def set_state(self, state: RepoState, kind: EventKind, detail: str) -> None:
        """Record the repo's state; an event of `kind` only when the state is a new one."""
        if self.tracked.state != state:
            self.event(kind, detail)
        self.store.update_repo(self.repo.repo_id, state=state, polled_at=now(), clear_error=True)

    def fail(self, exc: HubwatchError) -> None:
        """Record the error that ended the poll early (a poll_failed event); a repo whose polls
        failed `degraded_after` times in a row becomes degraded."""
        self.result.error = one_line(str(exc)) or type(exc).__name__
        self.result.failure = exc
        self.event(EventKind.POLL_FAILED, self.result.error)
        self.result.events += record_failure(
            self.store, self.repo.repo_id, self.result.error, self.degraded_after
        )

    def refused(self, exc: TokenRefused) -> None:
        """The Hub refused the token: the repo becomes auth_failed and the poll ends. What is
        stored stays as it was, and no event is stored (nothing happened to the repo); the
        warning is the source's, once per check of the token, not one per repo."""
        repo_id = self.repo.repo_id
        self.result.error = one_line(str(exc)) or type(exc).__name__
        self.result.failure = exc
        metrics.AUTH_FAILED.inc()
        if self.tracked.state != RepoState.AUTH_FAILED:
            log.info("repo_auth_failed", detail=self.result.error)
        self.store.update_repo(repo_id, state=RepoState.AUTH_FAILED)
        self.store.record_failure(repo_id, self.result.error, now())

    def crash(self, exc: Exception) -> None:
        """Record a poll that crashed on `exc` (a bug, not a SourceError): logged with its type
        and message, and failed like any poll."""
        error = f"internal error while polling: {describe(exc)}"
        log_crash("poll_crashed", exc)
        self.fail(HubwatchError(error))

    def succeeded(self) -> None:
        """The poll read what it had to: a degraded repo is active again (repo_recovered)."""
        if self.tracked.state != RepoState.DEGRADED:  # only failures degrade: none here
            return
        if self.store.get_repo(self.repo.repo_id).state == RepoState.DEGRADED:
            self.set_state(RepoState.ACTIVE, EventKind.REPO_RECOVERED, _recovered(self.tracked))


_WARNINGS = (EventKind.POLL_FAILED, EventKind.REPO_DEGRADED)


def record_failure(
    store: RepoStore, repo_id: str, error: str, degraded_after: int
) -> list[RepoEvent]:
    """Count a failed poll; the repo_degraded event when this one makes the repo degraded.

    Only an active repo degrades: a gated, disabled or deleted one already says what is wrong.
    """
    failures = store.record_failure(repo_id, error, now())
    if failures < degraded_after or store.get_repo(repo_id).state != RepoState.ACTIVE:
        return []
    store.update_repo(repo_id, state=RepoState.DEGRADED)
    detail = f"{repo_id}: {failures} polls in a row failed; the last one: {error}"
    event = RepoEvent(EventKind.REPO_DEGRADED, detail, None, now())
    store.add_event(repo_id, event)
    log.warning(event.kind.value, repo=repo_id, failures=failures, detail=detail)
    return [event]


def _recovered(tracked: TrackedRepo) -> str:
    last = f"; the last error was: {tracked.last_error}" if tracked.last_error else ""
    return f"{tracked.ref.repo_id} is polled successfully again{last}"


def describe(exc: BaseException) -> str:
    """An exception as one line for users and logs: its type and message, no traceback."""
    message = one_line(str(exc))
    if len(message) > 300:
        message = message[:299] + "…"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def log_crash(event: str, exc: BaseException, **fields: object) -> None:
    """Log a crash as one line (type and message); its traceback only at DEBUG."""
    log.error(event, error=describe(exc), **fields)
    log.debug(f"{event}_traceback", exc_info=exc, **fields)

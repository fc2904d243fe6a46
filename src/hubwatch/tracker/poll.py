"""Tracking: backfill a repo's history oldest first, then poll it for new revisions and events."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial

import structlog

from hubwatch import metrics
from hubwatch.diff import Differ
from hubwatch.errors import (
    AuthError,
    HubwatchError,
    RepoDisabled,
    RepoGated,
    RepoNotFound,
    SourceError,
)
from hubwatch.models import (
    CommitInfo,
    CommitSha,
    EventKind,
    RepoEvent,
    RepoRef,
    RepoState,
    RepoStatus,
    SourceKind,
    TrackedRepo,
)
from hubwatch.sources.base import ChangeFeed, RevisionSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.base import Store
from hubwatch.tracker.compare import diff_snapshot
from hubwatch.tracker.estimate import with_estimate
from hubwatch.tracker.snapshot import Limits, take_snapshot

log = structlog.get_logger(__name__)

Progress = Callable[[int, int, CommitInfo], None]
"""Called after each stored revision with (done, total, commit)."""
RevisionHook = Callable[[str, CommitSha], None]
"""Called with (repo_id, sha) after a new revision is stored (advisories attach here)."""


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


class Tracker:
    """Keeps the store's history of each tracked repo in step with its source."""

    def __init__(
        self,
        store: Store,
        sources: Mapping[SourceKind, RevisionSource],
        limits: Limits | None = None,
        retry: RetryPolicy | None = None,
        after_revision: Sequence[RevisionHook] = (),
        differs: Mapping[str, Differ] | None = None,
    ) -> None:
        self._store = store
        self._hooks = tuple(after_revision)
        self._sources = sources
        self.sources = sources
        self._limits = limits or Limits()
        self._retry = retry or RetryPolicy()
        self._differs = differs
        """The differs run on each new revision; None: the registry (`diff.DIFFERS`)."""

    def _source(self, repo: RepoRef) -> RevisionSource:
        try:
            return self._sources[repo.source]
        except KeyError:
            raise HubwatchError(f"no {repo.source.value} source is configured") from None

    def track(self, repo: RepoRef, progress: Progress | None = None) -> PollResult:
        """Start tracking `repo` and backfill its whole history; idempotent."""
        source = self._source(repo)
        # Check it exists before storing anything, so a typo leaves no trace in the store.
        self._retry.call(lambda: source.status(repo), f"{repo.repo_id} status")
        self._store.add_repo(repo)
        return self.poll(repo.repo_id, progress)

    def poll(
        self,
        repo_id: str,
        progress: Progress | None = None,
        hint: RepoStatus | None = None,
    ) -> PollResult:
        """Bring one tracked repo up to date; never raises SourceError (it is recorded).

        `hint`: the repo's status as a change listing just gave it; saves asking the source.
        """
        tracked = self._store.get_repo(repo_id)
        result = PollResult(repo_id)
        structlog.contextvars.bind_contextvars(repo=repo_id, poll_id=uuid.uuid4().hex[:12])
        try:
            self._poll(tracked, result, progress, hint)
        except SourceError as exc:
            result.error, result.failure = str(exc), exc
            self._store.update_repo(repo_id, polled_at=_now(), error=result.error)
            self._event(tracked, result, EventKind.POLL_FAILED, result.error)
        finally:
            structlog.contextvars.unbind_contextvars("repo", "poll_id", "hub_request_id")
        return result

    def poll_all(self) -> list[PollResult]:
        """Poll every tracked repo once; no repo's failure, even a bug, stops the others."""
        results = []
        for tracked in self._store.list_repos():
            repo_id = tracked.ref.repo_id
            try:
                results.append(self.poll(repo_id))
            except Exception as exc:  # the daemon must outlive any one repo
                log.exception("poll_crashed", repo=repo_id)
                error = f"internal error while polling: {type(exc).__name__}: {exc}"[:500]
                results.append(PollResult(repo_id, error=error))
                try:
                    self._store.update_repo(repo_id, polled_at=_now(), error=error)
                except Exception:  # the store itself may be what failed
                    log.exception("poll_error_not_recorded", repo=repo_id)
        return results

    # -- internals --------------------------------------------------------------------------

    def _poll(
        self,
        tracked: TrackedRepo,
        result: PollResult,
        progress: Progress | None,
        hint: RepoStatus | None,
    ) -> None:
        repo = tracked.ref
        source = self._source(repo)
        retry = self._retry
        try:
            if hint is not None and hint.repo_id == repo.repo_id:
                status = hint
            else:
                status = retry.call(lambda: source.status(repo), f"{repo.repo_id} status")
        except RepoNotFound as exc:
            self._set_state(tracked, result, RepoState.DELETED, EventKind.REPO_DELETED, str(exc))
            return
        except RepoDisabled as exc:
            self._set_state(tracked, result, RepoState.DISABLED, EventKind.REPO_DISABLED, str(exc))
            return
        result.private = status.private
        if isinstance(source, ChangeFeed) and status is not hint:
            # what discovery needs to know: the public listing shows public repos only
            result.listed = not status.private
            self._store.set_listed([repo.repo_id], result.listed)
        elif isinstance(source, ChangeFeed):
            result.listed = True  # hints come from the listing or a push to a public repo

        if status.repo_id != repo.repo_id and tracked.renamed_to != status.repo_id:
            self._store.update_repo(repo.repo_id, renamed_to=status.repo_id)
            self._event(
                tracked,
                result,
                EventKind.REPO_RENAMED,
                f"{repo.repo_id} now redirects to {status.repo_id}",
            )
        if status.gated and tracked.state != RepoState.GATED:
            self._set_state(
                tracked,
                result,
                RepoState.GATED,
                EventKind.REPO_GATED,
                f"{repo.repo_id} became gated",
            )
        elif not status.gated and tracked.state != RepoState.ACTIVE:
            kind = (
                EventKind.REPO_UNGATED
                if tracked.state == RepoState.GATED
                else (EventKind.REPO_RESTORED)
            )
            self._set_state(
                tracked, result, RepoState.ACTIVE, kind, f"{repo.repo_id} is readable again"
            )

        known = self._store.known_shas(repo.repo_id)
        if tracked.head == status.head and known.get(status.head):
            result.idle = True
            self._store.update_repo(repo.repo_id, polled_at=_now(), clear_error=True)
            log.debug("poll_idle", head=status.head)
            return

        commits = retry.call(lambda: source.list_commits(repo), f"{repo.repo_id} commits")
        listed = {commit.sha for commit in commits}
        gone = [sha for sha, reachable in known.items() if reachable and sha not in listed]
        back = [sha for sha, reachable in known.items() if not reachable and sha in listed]
        if gone:
            self._store.set_reachable(repo.repo_id, gone, False)
            result.unreachable = gone
            self._event(
                tracked,
                result,
                EventKind.HISTORY_REWRITTEN,
                f"{len(gone)} recorded revision(s) no longer reachable from "
                f"{repo.branch}; they are kept",
                sha=gone[0],
            )
        if back:
            self._store.set_reachable(repo.repo_id, back, True)

        todo = [commit for commit in reversed(commits) if commit.sha not in known]
        for done, commit in enumerate(todo, 1):
            structlog.contextvars.bind_contextvars(sha=commit.sha)
            try:
                snapshot = retry.call(
                    partial(take_snapshot, source, repo, commit, self._store, self._limits),
                    f"{repo.repo_id}@{commit.sha[:12]}",
                )
            except AuthError as exc:
                if isinstance(exc, RepoGated) and tracked.state != RepoState.GATED:
                    self._set_state(
                        tracked, result, RepoState.GATED, EventKind.REPO_GATED, str(exc)
                    )
                raise
            finally:
                structlog.contextvars.unbind_contextvars("sha")
            snapshot = with_estimate(snapshot, self._store.blob)
            parent = commit.parents[0] if commit.parents else None
            base = parent if parent in known else None
            snapshot = diff_snapshot(self._store, repo.repo_id, snapshot, base, self._differs)
            stored = self._store.add_revision(repo.repo_id, snapshot)
            known[commit.sha] = True
            if stored:
                result.new.append(commit.sha)
                log.info("revision_detected", sha=commit.sha, title=commit.title[:80])
                metrics.REVISIONS.inc()
                metrics.count_changes(snapshot.changes)
                if tracked.head is not None:  # a new commit, not a backfill of old history
                    lag = (_now() - commit.date).total_seconds()
                    metrics.DETECTION_LAG.observe(max(lag, 0.0))
                self._after_revision(repo.repo_id, commit.sha)
            if progress:
                progress(done, len(todo), commit)
        # the listing is newer than `status` when a commit landed in between
        head = commits[0].sha if commits else status.head
        self._store.update_repo(repo.repo_id, head=head, polled_at=_now(), clear_error=True)

    def _after_revision(self, repo_id: str, sha: CommitSha) -> None:
        for hook in self._hooks:
            try:
                hook(repo_id, sha)
            except Exception as exc:  # a hook must never fail the poll; the revision is stored
                log.error("revision_hook_failed", sha=sha, error=f"{type(exc).__name__}: {exc}")

    def _set_state(
        self,
        tracked: TrackedRepo,
        result: PollResult,
        state: RepoState,
        kind: EventKind,
        detail: str,
    ) -> None:
        repo_id = tracked.ref.repo_id
        if tracked.state != state:
            self._event(tracked, result, kind, detail)
        self._store.update_repo(repo_id, state=state, polled_at=_now(), clear_error=True)

    def _event(
        self,
        tracked: TrackedRepo,
        result: PollResult,
        kind: EventKind,
        detail: str,
        *,
        sha: CommitSha | None = None,
    ) -> None:
        event = RepoEvent(kind, detail, sha, _now())
        self._store.add_event(tracked.ref.repo_id, event)
        result.events.append(event)
        emit = log.warning if kind is EventKind.POLL_FAILED else log.info
        emit(kind.value, detail=detail)


def _now() -> datetime:
    return datetime.now(UTC)

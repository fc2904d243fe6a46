"""Tracking: backfill a repo's history oldest first, then poll it for new revisions and events.

A poll is a pipeline of steps, each in its own module: the repo's status (`status.py`), its
history and reachability (`history.py`), then each new revision (`revisions.py`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import structlog

from hubwatch.caching import Memo
from hubwatch.diff import Differ
from hubwatch.errors import HubwatchError, InvalidRepoId, StoreUnavailable, TokenRefused
from hubwatch.lineage.judge import LineageJudge
from hubwatch.models import CommitSha, RepoRef, RepoStatus, SourceKind
from hubwatch.models.refs import RefWatch
from hubwatch.models.timestamps import now
from hubwatch.sources.base import RevisionSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.repos import RepoStore
from hubwatch.tracker.history import list_history
from hubwatch.tracker.identity import check_identity, current, follow_rename
from hubwatch.tracker.links import report_to_dependents, update_links
from hubwatch.tracker.record import (
    DEGRADED_AFTER,
    PollResult,
    PollRun,
    PollStopped,
    PollStore,
    describe,
    log_crash,
    record_failure,
)
from hubwatch.tracker.refs import RefsStep
from hubwatch.tracker.revisions import Progress, RevisionHook, RevisionPipeline
from hubwatch.tracker.snapshot import Limits
from hubwatch.tracker.status import read_status

log = structlog.get_logger(__name__)

__all__ = ["PollResult", "PollStopped", "Progress", "RevisionHook", "Tracker", "crashed"]


class Tracker:
    """Keeps the store's history of each tracked repo in step with its source."""

    def __init__(
        self,
        store: PollStore,
        sources: Mapping[SourceKind, RevisionSource],
        limits: Limits | None = None,
        retry: RetryPolicy | None = None,
        after_revision: Sequence[RevisionHook] = (),
        differs: Mapping[str, Differ] | None = None,
        degraded_after: int = DEGRADED_AFTER,
        lineage: LineageJudge | None = None,
    ) -> None:
        self._store = store
        self._sources = sources
        self.sources = sources
        self._retry = retry or RetryPolicy()
        self.degraded_after = degraded_after
        """Polls in a row that fail before a repo is marked degraded."""
        memo = Memo()  # what the polls' views and snapshots derive from content, shared
        self._revisions = RevisionPipeline(
            limits or Limits(),
            differs,
            tuple(after_revision),
            lineage or LineageJudge(memo=memo),
            memo,
        )
        self._refs = RefsStep(self._revisions.limits, differs, memo)

    def _source(self, repo: RepoRef) -> RevisionSource:
        try:
            return self._sources[repo.source]
        except KeyError:
            raise HubwatchError(f"no {repo.source.value} source is configured") from None

    def track(
        self, repo: RepoRef, progress: Progress | None = None, refs: RefWatch | None = None
    ) -> PollResult:
        """Start tracking `repo` and backfill its whole history; idempotent. `refs`: which of
        its refs to diff against the branch from now on (None: as stored, none at first).

        Raises the source's error (or a HubwatchError for a bug) when the repo cannot be read
        at all; what goes wrong after that is recorded, as by `poll`.
        """
        source = self._source(repo)
        # Check it exists before storing anything, so a typo leaves no trace in the store.
        try:
            status = self._retry.call(lambda: source.status(repo), f"{repo.repo_id} status")
        except HubwatchError:
            raise
        except Exception as exc:  # a bug: one line for the user, the traceback at DEBUG
            log_crash("track_crashed", exc, repo=repo.repo_id)
            message = f"internal error while reading {repo.repo_id}: {describe(exc)}"
            raise HubwatchError(message) from exc
        repo = _canonical(repo, status.repo_id)
        self._store.add_repo(repo)
        if refs is not None:
            self._store.watch_refs(repo.repo_id, refs)
        return self.poll(repo.repo_id, progress, read=status)  # not a second model_info

    def poll(
        self,
        repo_id: str,
        progress: Progress | None = None,
        hint: RepoStatus | None = None,
        *,
        read: RepoStatus | None = None,
    ) -> PollResult:
        """Bring one tracked repo up to date; what goes wrong is recorded, not raised.

        A source error or a bug ends the poll (`PollResult.error`, a poll_failed event, and
        after `degraded_after` such polls in a row the repo is degraded); a bad revision does
        not (it is stored with what could be read). Raised: PollStopped from `progress`,
        StoreUnavailable (the database is down: nothing to record it in), and what the store
        raises while recording the failure. `hint`: the repo's status as a
        change listing just gave it; saves asking the source. `read`: the status the source
        itself just answered (`track` asked it), used alike but not taken as a listing's.
        """
        tracked = self._store.get_repo(repo_id)
        source = self._source(tracked.ref)
        run = PollRun(
            self._store, source, self._retry, tracked, PollResult(repo_id), self.degraded_after
        )
        structlog.contextvars.bind_contextvars(repo=repo_id, poll_id=uuid.uuid4().hex[:12])
        try:
            self._poll(run, progress, hint, read)
        except (PollStopped, StoreUnavailable):
            raise  # an outage is not the repo's failure, nor could it be recorded
        except TokenRefused as exc:
            current(run).refused(exc)
        except HubwatchError as exc:
            current(run).fail(exc)
        except Exception as exc:  # a bug, or input nobody foresaw: recorded, never raised
            current(run).crash(exc)
        finally:
            structlog.contextvars.unbind_contextvars("repo", "poll_id", "hub_request_id")
        return run.result

    def poll_all(self) -> list[PollResult]:
        """Poll every tracked repo once; no repo's failure, even a bug, stops the others."""
        results = []
        for tracked in self._store.list_repos():
            repo_id = tracked.ref.repo_id
            try:
                results.append(self.poll(repo_id))
            except StoreUnavailable:
                raise  # the database is down for every repo alike
            except Exception as exc:  # the daemon must outlive any one repo
                results.append(crashed(self._store, repo_id, exc, self.degraded_after))
        return results

    def _poll(
        self,
        run: PollRun,
        progress: Progress | None,
        hint: RepoStatus | None,
        read: RepoStatus | None = None,
    ) -> None:
        """status → (idle?) → history and reachability → each new revision → the new head."""
        status = read_status(run, hint, read)
        if status is None:
            return
        run = follow_rename(run, status)  # in the same poll: the listing names the new id
        check_identity(run, status)
        repo_id = run.repo.repo_id
        known = self._store.known_shas(repo_id)
        if run.tracked.head == status.head and known.get(status.head):
            run.result.idle = True
            self._store.update_repo(repo_id, polled_at=now(), clear_error=True)
            self._linked(run, status.head)
            run.succeeded()
            log.debug("poll_idle", head=status.head)
            return
        commits = list_history(run, known)
        self._revisions.store_new(run, commits, known, progress)
        # the listing is newer than `status` when a commit landed in between
        head = commits[0].sha if commits else status.head
        self._store.update_repo(repo_id, head=head, polled_at=now(), clear_error=True)
        self._linked(run, head)
        run.succeeded()

    def _linked(self, run: PollRun, head: CommitSha) -> None:
        """The steps whose changes are reported apart from the branch's history: its code
        links and its dependents (after new revisions), its pull requests (where asked). Their
        failures are logged, and leave the poll a success: the next poll runs them again."""
        before = run.tracked.head
        steps: list[tuple[str, Callable[[], object]]] = [
            ("refs", lambda: self._refs.run(run, head))
        ]
        if run.result.new and head in self._store.known_shas(run.repo.repo_id):
            steps.insert(
                0, ("links", lambda: update_links(run, head, self.track, self._revisions.memo))
            )
            if before is not None and before != head:
                steps.insert(1, ("dependents", lambda: report_to_dependents(run, before, head)))
        for name, step in steps:
            try:
                step()
            except (PollStopped, StoreUnavailable):
                raise
            except HubwatchError as exc:
                log.warning("poll_step_failed", step=name, error=str(exc))
            except Exception as exc:  # a bug in one step must not undo the poll's success
                log_crash("poll_step_crashed", exc, step=name)


def _canonical(repo: RepoRef, answered: str) -> RepoRef:
    """`repo` under the id its source answers under: the Hub redirects (307) other letter cases
    and old names to its canonical id, which its listing and its webhooks use."""
    if answered == repo.repo_id:
        return repo
    try:
        return replace(repo, repo_id=answered)
    except InvalidRepoId:  # an id we would refuse from a user: keep the one the user gave
        log.warning("canonical_id_refused", repo=repo.repo_id)
        return repo


def crashed(
    store: RepoStore, repo_id: str, exc: Exception, degraded_after: int = DEGRADED_AFTER
) -> PollResult:
    """Log and record a poll that crashed on `exc` outside `Tracker.poll`'s own recording (the
    store failing, most likely); call it in `except`.

    The repo keeps the error as its last one, so that a bug shows without reading the logs.
    """
    log_crash("poll_crashed", exc, repo=repo_id)
    error = f"internal error while polling: {describe(exc)}"
    try:
        record_failure(store, repo_id, error, degraded_after)
    except Exception as again:  # the store itself may be what failed
        log_crash("poll_error_not_recorded", again, repo=repo_id)
    return PollResult(repo_id, error=error)

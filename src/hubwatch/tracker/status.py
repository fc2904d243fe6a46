"""The first step of a poll: the repo's status, and the state changes it shows."""

from __future__ import annotations

import structlog

from hubwatch.errors import RepoDisabled, RepoNotFound
from hubwatch.models import EventKind, RepoState, RepoStatus
from hubwatch.sources.base import ChangeFeed
from hubwatch.tracker.record import PollRun

log = structlog.get_logger(__name__)


def read_status(run: PollRun, hint: RepoStatus | None) -> RepoStatus | None:
    """The repo's status, its renames and gating recorded; None once it is deleted or disabled.

    `hint`: the status a change listing just gave, used instead of asking when it names the repo.
    """
    repo = run.repo
    try:
        if hint is not None and hint.repo_id == repo.repo_id:
            status = hint
        else:
            status = run.retry.call(lambda: run.source.status(repo), f"{repo.repo_id} status")
    except RepoNotFound as exc:
        run.set_state(RepoState.DELETED, EventKind.REPO_DELETED, str(exc))
        return None
    except RepoDisabled as exc:
        run.set_state(RepoState.DISABLED, EventKind.REPO_DISABLED, str(exc))
        return None
    _note_visibility(run, status, from_listing=status is hint)
    _note_rename(run, status)
    _note_gating(run, status)
    return status


def _note_visibility(run: PollRun, status: RepoStatus, *, from_listing: bool) -> None:
    run.result.private = status.private
    if not isinstance(run.source, ChangeFeed):
        return
    if from_listing:
        run.result.listed = True  # hints come from the listing or a push to a public repo
    else:
        # what discovery needs to know: the public listing shows public repos only
        run.result.listed = not status.private
        run.store.set_listed([run.repo.repo_id], run.result.listed)


def _note_rename(run: PollRun, status: RepoStatus) -> None:
    repo_id = run.repo.repo_id
    if status.repo_id != repo_id and run.tracked.renamed_to != status.repo_id:
        run.store.update_repo(repo_id, renamed_to=status.repo_id)
        run.event(EventKind.REPO_RENAMED, f"{repo_id} now redirects to {status.repo_id}")


def _note_gating(run: PollRun, status: RepoStatus) -> None:
    repo_id, state = run.repo.repo_id, run.tracked.state
    if state == RepoState.AUTH_FAILED:
        # The token is accepted again; nothing happened to the repo, so no event either way.
        readable = RepoState.GATED if status.gated else RepoState.ACTIVE
        run.store.update_repo(repo_id, state=readable)
        log.info("repo_auth_restored", state=readable.value)
    elif status.gated and state != RepoState.GATED:
        run.set_state(RepoState.GATED, EventKind.REPO_GATED, f"{repo_id} became gated")
    # A degraded repo recovers when the whole poll succeeds (PollRun.succeeded), not here.
    elif not status.gated and state not in (RepoState.ACTIVE, RepoState.DEGRADED):
        kind = EventKind.REPO_UNGATED if state == RepoState.GATED else EventKind.REPO_RESTORED
        run.set_state(RepoState.ACTIVE, kind, f"{repo_id} is readable again")

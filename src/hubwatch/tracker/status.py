"""The first step of a poll: the repo's status, and the state changes it shows."""

from __future__ import annotations

import structlog

from hubwatch.errors import RepoDisabled, RepoHidden, RepoNotFound
from hubwatch.models import EventKind, RepoState, RepoStatus
from hubwatch.sources.base import ChangeFeed
from hubwatch.tracker.record import PollRun

log = structlog.get_logger(__name__)


def read_status(
    run: PollRun, hint: RepoStatus | None, read: RepoStatus | None = None
) -> RepoStatus | None:
    """The repo's status, its gating and identity recorded; None once it is deleted, unavailable
    or disabled. A rename is the caller's to follow (tracker/identity.py).

    `hint`: the status a change listing just gave, used instead of asking when it names the repo.
    `read`: the status the source answered a moment ago (a `track`), used alike.
    """
    repo = run.repo
    try:
        if hint is not None and hint.repo_id == repo.repo_id:
            status = hint
        elif read is not None and read.repo_id == repo.repo_id:
            status = read
        else:
            status = run.retry.call(lambda: run.source.status(repo), f"{repo.repo_id} status")
    except RepoHidden as exc:
        # the Hub's "not found" is also what a repo turned private answers: not "deleted"
        run.set_state(RepoState.UNAVAILABLE, EventKind.REPO_UNAVAILABLE, str(exc))
        return None
    except RepoNotFound as exc:
        run.set_state(RepoState.DELETED, EventKind.REPO_DELETED, str(exc))
        return None
    except RepoDisabled as exc:
        run.set_state(RepoState.DISABLED, EventKind.REPO_DISABLED, str(exc))
        return None
    _note_visibility(run, status, from_listing=status is hint)
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
        if _another_repo(run, status):  # not restored: repo.identity_changed says what it is
            run.store.update_repo(repo_id, state=RepoState.ACTIVE)
            return
        kind = EventKind.REPO_UNGATED if state == RepoState.GATED else EventKind.REPO_RESTORED
        run.set_state(RepoState.ACTIVE, kind, f"{repo_id} is readable again")


def _another_repo(run: PollRun, status: RepoStatus) -> bool:
    stored, seen = run.tracked.identity, status.identity
    return bool(stored and seen and stored.differs(seen))

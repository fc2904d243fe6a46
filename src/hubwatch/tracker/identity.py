"""Who is behind a tracked name: renames followed, and another repo under the same name caught.

A rename keeps the Hub's object id (`_id`) and creation time (`createdAt`); a repo deleted and
created again under the same name, or a name taken over by someone else, has new ones. The first
is followed (the repo is tracked under its new name in the same poll, the old name kept among its
former ids, where pins naming it are found); the second is a `repo.identity_changed` event, of
severity security. docs/identity.md says what each means.
"""

from __future__ import annotations

from dataclasses import replace

import structlog

from hubwatch.diff import event_change
from hubwatch.errors import InvalidRepoId
from hubwatch.models import EventKind, RepoIdentity, RepoStatus, Snapshot, validate_repo_id
from hubwatch.tracker.record import PollRun

log = structlog.get_logger(__name__)


def follow_rename(run: PollRun, status: RepoStatus) -> PollRun:
    """The poll, under the repo's new name when the source answered under another one.

    The Hub answers an old name with a redirect (307) to the new one, which huggingface_hub
    follows; its listing and its webhooks name the repo by the new name only, so the repo is
    tracked under it from now on. Where the new name is tracked already (both were tracked), the
    rename is only recorded (`renamed_to`), as before.
    """
    old, new = run.repo.repo_id, status.repo_id
    if new == old:
        return run
    try:
        validate_repo_id(new)
    except InvalidRepoId:  # an id we would refuse from a user: keep the one we have
        log.warning("renamed_id_refused", repo=old)
        return run
    if not run.store.rename_repo(old, new):
        if run.tracked.renamed_to != new:
            run.store.update_repo(old, renamed_to=new)
            run.event(EventKind.REPO_RENAMED, f"{old} now redirects to {new}, tracked already")
        return run
    structlog.contextvars.bind_contextvars(repo=new)
    moved = replace(run, tracked=run.store.get_repo(new))
    moved.result.repo_id = new
    moved.result.renamed_from = old
    moved.event(
        EventKind.REPO_RENAMED,
        f"{old} was renamed to {new} (the Hub redirects the old name); tracked as {new} from "
        f"now on. Pins naming {old} use a moved name: if someone creates {old} again, they "
        "load that repo instead",
    )
    return moved


def current(run: PollRun) -> PollRun:
    """`run` under the name its repo is tracked by now (a rename followed mid-poll)."""
    if run.result.repo_id == run.repo.repo_id:
        return run
    return replace(run, tracked=run.store.get_repo(run.result.repo_id))


def check_identity(run: PollRun, status: RepoStatus) -> None:
    """Record the repo's identity the first time it is seen; a `repo.identity_changed` event
    (and the new identity kept) when another repo answers under the name."""
    seen, stored = status.identity, run.tracked.identity
    if seen is None:
        return
    if stored is None:
        run.store.set_identity(run.repo.repo_id, seen)
        return
    merged = RepoIdentity(seen.object_id or stored.object_id, seen.created_at or stored.created_at)
    differs = stored.differs(seen)
    if merged != stored:
        run.store.set_identity(run.repo.repo_id, merged)
    if not differs:
        return
    run.result.identity_changed = True
    run.event(
        EventKind.REPO_IDENTITY_CHANGED,
        f"another repo answers as {run.repo.repo_id}: its {' and '.join(differs)} changed "
        f"({_describe(stored)} → {_describe(seen)}); it was deleted and created again, or its "
        "name was taken. Every revision recorded before is the old repo's",
        sha=status.head,
    )


def _describe(identity: RepoIdentity) -> str:
    parts = []
    if identity.object_id:
        parts.append(f"id {identity.object_id}")
    if identity.created_at:
        parts.append(f"created {identity.created_at:%Y-%m-%d %H:%M:%S}")
    return ", ".join(parts) or "unknown"


def with_identity(run: PollRun, snapshot: Snapshot) -> Snapshot:
    """`snapshot` with the poll's `repo.identity_changed` among its changes, when it is the
    first revision the poll stores after another repo answered under the name: the new repo's
    first revision carries it, so that feeds, badges and "changes since" show it as they show
    any security change (webhooks have the event itself)."""
    if not run.result.identity_changed or run.result.new:
        return snapshot
    found = [e for e in run.result.events if e.kind is EventKind.REPO_IDENTITY_CHANGED]
    change = event_change(found[-1]) if found else None
    if change is None:
        return snapshot
    return replace(snapshot, changes=(*snapshot.changes, change))

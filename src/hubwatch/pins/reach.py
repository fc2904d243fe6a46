"""What became of the repo and revision behind a pin: a moved name, another repo under the name,
a pinned revision no longer in the history (and the surviving one with the same files)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from hubwatch.diff import event_change
from hubwatch.errors import NotTracked
from hubwatch.models import Change, EventKind, StoredRevision
from hubwatch.store.repos import RepoStore, RevisionStore

_COMPARED = 50
"""Surviving revisions compared with an unreachable pinned one, nearest in date first: enough
for a super-squash (one survivor) or a force push, without reading a long history's files."""


class ReachStore(RepoStore, RevisionStore, Protocol):
    """What these checks read: the repo's events, revisions and their files."""


def tracked_name(store: RepoStore, name: str) -> str | None:
    """The name the repo a pin names is tracked under now, where it differs: the pin uses a
    name the repo left in a rename hubwatch followed. None: the pin's name is current (or
    nothing tracks it)."""
    try:
        store.get_repo(name)
        return None
    except NotTracked:
        return store.find_repo(former_id=name)


def identity_changes(store: ReachStore, repo_id: str) -> tuple[Change, ...]:
    """The `repo.identity_changed` events of the repo, as changes (security)."""
    events = [e for e in store.events(repo_id) if e.kind is EventKind.REPO_IDENTITY_CHANGED]
    return tuple(c for e in events if (c := event_change(e)) is not None)


def same_files(
    store: ReachStore, repo_id: str, pinned: StoredRevision, history: Sequence[StoredRevision]
) -> StoredRevision | None:
    """The surviving (reachable) revision nearest in date to the unreachable `pinned` one whose
    files are identical (every path with the same blob id); None when there is none."""
    wanted = _files(store, repo_id, pinned)
    alive = [r for r in history if r.reachable and r.sha != pinned.sha]
    alive.sort(key=lambda r: abs((r.date - pinned.date).total_seconds()))
    return next((r for r in alive[:_COMPARED] if _files(store, repo_id, r) == wanted), None)


def _files(store: ReachStore, repo_id: str, revision: StoredRevision) -> set[tuple[str, str]]:
    return {(f.path, f.blob_id) for f in store.files(repo_id, revision.sha)}

"""Runs the differs over stored revisions and new snapshots: the store glue of `hubwatch.diff`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hubwatch.caching import Memo
from hubwatch.diff import Differ, diff_revisions
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, CommitSha, Snapshot
from hubwatch.store.views import FilesOf, RevisionReads, stored_view
from hubwatch.tracker.held import LastStored


def diff_snapshot(
    store: RevisionReads,
    repo_id: str,
    snapshot: Snapshot,
    base: CommitSha | None,
    differs: Mapping[str, Differ] | None = None,
    base_files: FilesOf | None = None,
    held: LastStored | None = None,
    memo: Memo | None = None,
) -> Snapshot:
    """The snapshot with its changes against the stored revision `base` (None: an empty one).

    `held`: the revision stored last, viewed from memory when it is `base`; the new view is
    offered to it, to be held once the snapshot is stored. `memo`: shared by both views."""
    memo = memo if memo is not None else Memo()
    old = RevisionView.empty(memo)
    if base:
        in_memory = held.view(base) if held is not None else None
        old = in_memory or stored_view(store, repo_id, base, base_files, memo)
    new = RevisionView.of_snapshot(snapshot, store.blob, memo)
    changes = diff_revisions(old, new, differs)
    if held is not None:
        held.offer(new)
    return replace(snapshot, changes=tuple(changes), base=base)


def diff_stored(
    store: RevisionReads,
    repo_id: str,
    rev_a: str,
    rev_b: str,
    differs: Mapping[str, Differ] | None = None,
) -> list[Change]:
    """Changes between any two stored revisions (abbreviated shas accepted)."""
    a, b = store.revision(repo_id, rev_a), store.revision(repo_id, rev_b)
    memo = Memo()
    return diff_revisions(
        stored_view(store, repo_id, a.sha, memo=memo),
        stored_view(store, repo_id, b.sha, memo=memo),
        differs,
    )

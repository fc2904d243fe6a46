"""Runs the differs over stored revisions and new snapshots: the store glue of `hubwatch.diff`."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from hubwatch.caching import Memo
from hubwatch.diff import DEFAULT_BUDGET_S, Differ, apply_policy, diff_revisions
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, CommitSha, ReadStatus, Snapshot
from hubwatch.store.views import FilesOf, RevisionReads, stored_view
from hubwatch.tracker.estimate import CONFIG
from hubwatch.tracker.held import LastStored
from hubwatch.tracker.select import is_json, is_tracked_content


def diff_snapshot(
    store: RevisionReads,
    repo_id: str,
    snapshot: Snapshot,
    base: CommitSha | None,
    differs: Mapping[str, Differ] | None = None,
    base_files: FilesOf | None = None,
    held: LastStored | None = None,
    memo: Memo | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
) -> Snapshot:
    """The snapshot with its changes against the stored revision `base` (None: an empty one).

    `held`: the revision stored last, viewed from memory when it is `base`; the new view is
    offered to it, to be held once the snapshot is stored. `memo`: shared by both views;
    `budget_s`: the seconds its differs may take (`diff_revisions`)."""
    memo = memo if memo is not None else Memo()
    old = RevisionView.empty(memo)
    if base:
        in_memory = held.view(base) if held is not None else None
        old = in_memory or stored_view(store, repo_id, base, base_files, memo)
    new = RevisionView.of_snapshot(snapshot, store.blob, memo)
    changes = diff_revisions(old, new, differs, budget_s)
    if base:
        changes = _with_returns(store, repo_id, old, new, base, changes, differs)
    if held is not None:
        held.offer(new)
    return replace(snapshot, changes=tuple(changes), base=base)


def _with_returns(
    store: RevisionReads,
    repo_id: str,
    old: RevisionView,
    new: RevisionView,
    base: CommitSha,
    changes: list[Change],
    differs: Mapping[str, Differ] | None,
) -> list[Change]:
    """`changes`, where a JSON file is back (absent from `base`, or unreadable there, and read
    now) and an earlier revision read it: what it changes said against that revision instead
    of against nothing (`unset → …`), each summary naming it."""
    back = [
        path
        for path in new.files
        if is_json(path)
        and is_tracked_content(path)
        and new.status(path) is ReadStatus.STORED
        and old.status(path) is not ReadStatus.STORED
    ]
    last = store.last_read(repo_id, back, base) if back else {}
    if not last:
        return changes

    def about(change: Change, paths: Collection[str]) -> bool:
        estimate = change.kind.startswith("estimate.") and CONFIG in paths
        return estimate or (change.path in paths and not change.kind.startswith("files."))

    kept = [change for change in changes if not about(change, last)]
    for sha in sorted(set(last.values())):
        paths = {path for path, read_at in last.items() if read_at == sha}
        earlier = stored_view(store, repo_id, sha, memo=new.memo)
        for change in diff_revisions(earlier, new, differs):
            if about(change, paths):
                said = f"{change.summary} (against {sha[:7]}, where it was last read)"
                kept.append(replace(change, summary=said))
    return sorted(apply_policy(kept), key=lambda change: -change.severity.rank)


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

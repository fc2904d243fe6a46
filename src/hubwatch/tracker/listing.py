"""A new revision's file list: its stored parent's with what changed, where the source compares
two revisions in one request (the Hub's compare endpoint); its tree listing otherwise."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hubwatch.models import CommitSha, FileEntry, StoredFile
from hubwatch.sources.base import FileChange
from hubwatch.tracker.record import PollRun
from hubwatch.tracker.snapshot import CLEANED


def revision_files(
    run: PollRun,
    sha: CommitSha,
    base: CommitSha | None,
    base_files: Callable[[], list[StoredFile]],
) -> list[FileEntry]:
    """The files of `sha`: from one compare against `base` (its stored parent) where the
    source has one and `base`'s stored list can take the changes; its tree listing otherwise.

    Both give the same entries in the same order (tests/test_hub_compare.py checks it over
    adds, deletes, renames, LFS and Xet files): the unchanged ones are the parent's as stored,
    which held what the parent's own listing gave.
    """
    repo, what = run.repo, f"{run.repo.repo_id}@{sha[:12]}"
    parent = base_files() if base is not None else []
    if base is not None and usable(parent):
        changes = run.retry.call(lambda: run.source.changed_files(repo, base, sha), what)
        merged = with_changes(parent, changes) if changes is not None else None
        if merged is not None:
            return merged
    return run.retry.call(lambda: run.source.list_files(repo, sha), what)


def usable(parent: Sequence[StoredFile]) -> bool:
    """Whether a stored file list can stand for its revision's tree: not one stored without
    its files (an empty list: the listing failed, or the store refused it), nor one with a
    path renamed to be storable."""
    return bool(parent) and not any(CLEANED in f.path for f in parent)


def with_changes(
    parent: Sequence[StoredFile], changes: Sequence[FileChange]
) -> list[FileEntry] | None:
    """The parent's files with `changes` made, in git's tree order (by the path's bytes, as
    `git ls-tree -r` and the Hub's tree listing give them); None when a change removes a path
    the parent does not have (the two do not fit: the caller lists the tree instead)."""
    by_path = {
        f.path: FileEntry(f.path, f.size, f.blob_id, f.lfs_sha256, xet_hash=f.xet_hash)
        for f in parent
    }
    # removals first: a path renamed away and added anew is in the new tree whatever the order
    for change in changes:
        if change.entry is None and by_path.pop(change.path, None) is None:
            return None
    for change in changes:
        if change.entry is not None:
            by_path[change.path] = change.entry
    return sorted(by_path.values(), key=lambda entry: entry.path.encode("utf-8", "surrogatepass"))

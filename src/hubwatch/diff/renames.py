"""Files renamed between two revisions: the same content under a new path, or (for text files
of one kind) a removed file and an added one that are mostly the same lines."""

from __future__ import annotations

import difflib
import posixpath

from hubwatch.diff.text import MAX_ALIGNED
from hubwatch.formats.view import RevisionView

SIMILAR = 0.5
"""Two text files sharing at least this share of lines (difflib's ratio) are one renamed."""
_MAX_PAIRS = 64  # removed x added text files compared by content, at most


def renamed(old: RevisionView, new: RevisionView) -> dict[str, str]:
    """Old path → new path of each file that moved (each path paired once)."""
    removed = sorted(old.files.keys() - new.files.keys())
    added = sorted(new.files.keys() - old.files.keys())
    if not removed or not added:
        return {}
    by_content: dict[str, list[str]] = {}
    for path in added:
        entry = new.files[path]
        by_content.setdefault(entry.lfs_sha256 or entry.blob_id, []).append(path)
    pairs: dict[str, str] = {}
    for path in removed:
        entry = old.files[path]
        same = by_content.get(entry.lfs_sha256 or entry.blob_id, [])
        if same:
            pairs[path] = same.pop(0)
    rest_removed = [p for p in removed if p not in pairs]
    rest_added = [p for p in added if p not in pairs.values()]
    pairs.update(_similar(old, new, rest_removed, rest_added))
    return pairs


def _similar(
    old: RevisionView, new: RevisionView, removed: list[str], added: list[str]
) -> dict[str, str]:
    if not removed or not added or len(removed) * len(added) > _MAX_PAIRS:
        return {}
    pairs: dict[str, str] = {}
    for path in removed:
        before = old.text(path)
        if before is None:
            continue
        kind = posixpath.splitext(path)[1]
        best, score = None, SIMILAR
        for candidate in added:
            after = new.text(candidate)
            if (
                candidate in pairs.values()
                or after is None
                or posixpath.splitext(candidate)[1] != kind
            ):
                continue
            one, other = before.splitlines(), after.splitlines()
            matcher = difflib.SequenceMatcher(None, one, other)
            if matcher.real_quick_ratio() >= score and matcher.quick_ratio() >= score:
                # ratio() is quadratic in the lines: past MAX_ALIGNED the lines shared by
                # content (quick_ratio, linear) say it
                big = max(len(one), len(other)) > MAX_ALIGNED
                ratio = matcher.quick_ratio() if big else matcher.ratio()
                if ratio >= score:
                    best, score = candidate, ratio
        if best is not None:
            pairs[path] = best
    return pairs

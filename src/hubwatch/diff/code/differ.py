"""Custom code (`*.py`) and requirements files: what `trust_remote_code` would now run, said by
what the change does. The severity policy grades each change by its findings."""

from __future__ import annotations

import fnmatch
import posixpath
from typing import Any

from hubwatch.diff.code.compare import Findings, compare_modules
from hubwatch.diff.code.repo import (
    Target,
    is_code,
    module,
    modules,
    reachable,
    sibling_paths,
    targets,
)
from hubwatch.diff.renames import renamed
from hubwatch.diff.sections import listing
from hubwatch.diff.text import LineDiff, line_diff
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity


def diff_code(old: RevisionView, new: RevisionView) -> list[Change]:
    """One change per custom-code or requirements file added, removed, renamed or changed."""
    moved = {a: b for a, b in renamed(old, new).items() if is_code(a) and is_code(b)}
    context = _Context(old, new)
    changes = []
    for path in sorted(old.files.keys() | new.files.keys()):
        if fnmatch.fnmatchcase(posixpath.basename(path), "requirements*.txt"):
            changes += _requirements(old, new, path)
        elif not is_code(path) or path in moved:
            continue
        elif path in moved.values():
            was = next(a for a, b in moved.items() if b == path)
            same = old.files[was].blob_id == new.files[path].blob_id
            needed = context.still_needed(was)
            if not same or needed:  # an unchanged file moved: `files.renamed` says it
                changes += context.changed(was, path)
        elif path not in old.files:
            changes.append(context.added(path))
        elif path not in new.files:
            changes.append(context.removed(path))
        elif old.files[path].blob_id != new.files[path].blob_id:
            changes += context.changed(path, path)
    return changes


class _Context:
    """What every file's judgement shares: the old loader targets, what the new code runs."""

    def __init__(self, old: RevisionView, new: RevisionView) -> None:
        self.old, self.new = old, new
        self.first = not any(is_code(p) for p in old.files)
        self.old_targets: list[Target] = targets(old)
        self.new_targets: list[Target] = targets(new)
        self.reach = reachable(new)
        self.modules = modules(new)
        used: set[str] = set()
        for read in self.modules.values():
            used |= read.loaded | {f".{a}" for a in read.attributes}
        self.used = frozenset(used)
        self.known = frozenset(p for read in modules(old).values() for p in read.packages)

    def _reachable(self, path: str) -> bool | None:
        return None if self.reach is None else path in self.reach

    def added(self, path: str) -> Change:
        read = module(self.new, path)
        found = Findings(first=self.first, reachable=self._reachable(path))
        if read is None or not read.ok:
            found.unread = read.error if read else "its text was not stored"
        else:
            found.risky = [r.describe() for r in read.risks]
            if not self.first:
                found.added = sorted(read.units)
        lines = read.lines if read else 0
        what = "custom code appears in the repo" if self.first else "new custom code"
        summary = f"Custom code {path} added ({lines:,} lines): {what}"
        summary += (
            f"; it reaches {listing(found.risky, 2)}."
            if found.risky
            else ", run by trust_remote_code."
        )
        if found.reachable is False:
            summary = f"Custom code {path} added ({lines:,} lines); no loader imports it."
        if found.unread:
            summary += f" Not read as Python ({found.unread}): review it."
        return self._change("code.custom_added", path, None, path, found, summary)

    def removed(self, path: str) -> Change:
        found = Findings(reachable=self._reachable(path))
        found.breaks = self.still_needed(path)
        summary = (
            f"Custom code {path} removed, but {found.breaks[0]}."
            if found.breaks
            else f"Custom code {path} removed."
        )
        return self._change("code.custom_removed", path, path, None, found, summary)

    def still_needed(self, path: str) -> list[str]:
        """Why the revision still needs a file that is gone: a loader config naming a class in
        it, a module importing it."""
        needed = [
            f"{t.config} still names {t.name} in it ({t.auto})"
            for t in self.new_targets
            if t.path == path
        ]
        for importer, read in self.modules.items():
            if any(path in sibling_paths(importer, s) for s in read.siblings):
                needed.append(f"{importer} still imports it")
        return needed

    def changed(self, was: str, path: str) -> list[Change]:
        before, after = module(self.old, was), module(self.new, path)
        if before is None or after is None:
            found = Findings(reachable=self._reachable(path), unread="its text was not stored")
        else:
            found = compare_modules(was, before, after, self.old_targets, self.used, self.known)
            found.reachable = self._reachable(path)
            if was != path:
                found.breaks += self.still_needed(was)
        summary = _summary(path, found, _line_counts(self.old, self.new, was, path))
        if was != path:
            summary = summary.replace(f"Custom code {path}", f"Custom code {was} → {path}", 1)
        return [self._change("code.custom_changed", path, was, path, found, summary)]

    def _change(
        self, kind: str, path: str, was: str | None, now: str | None, found: Findings, summary: str
    ) -> Change:
        before = _side(self.old, was, None if was == path else was)
        after = _side(self.new, now, None) | {"findings": found.as_json()}
        detail = "\n".join(_finding_lines(found))
        if was is not None and now is not None:
            detail += "\n\n" + _unified(self.old, self.new, was, now)
        return Change(kind, Severity.SECURITY, summary, path, before, after, detail.strip() or None)


def _side(view: RevisionView, path: str | None, renamed_from: str | None) -> dict[str, Any]:
    if path is None or path not in view.files:
        return {}
    read = module(view, path)
    out: dict[str, Any] = {"git_blob": view.files[path].blob_id}
    if read is not None:
        out["lines"] = read.lines
    if renamed_from:
        out["path"] = renamed_from
    return out


def _summary(path: str, found: Findings, lines: str) -> str:
    head = f"Custom code {path}"
    if found.breaks:
        more = f" (and {len(found.breaks) - 1} more)" if len(found.breaks) > 1 else ""
        return f"{head}: {found.breaks[0]}{more}; {lines}."
    if found.risky:
        return f"{head} now reaches {found.risky[0]}; {lines}."
    if found.reachable is False:
        return f"{head} changed ({lines}); no loader imports it (auto_map does not reach it)."
    if found.unread:
        return f"{head} changed ({lines}) but was not read as Python: {found.unread}."
    if found.runs_differently:
        parts = []
        if found.changed:
            parts.append(f"{listing(found.changed, 3)} changed")
        if found.added:
            parts.append(f"{listing(found.added, 2)} added")
        if found.removed:
            parts.append(f"{listing(found.removed, 2)} removed")
        parts += found.notes[:1]
        return f"{head}: {'; '.join(parts)} ({lines})."
    what = "; ".join(found.cosmetic) or "comments or formatting"
    return f"{head}: the code that runs is the same ({what}; {lines})."


def _finding_lines(found: Findings) -> list[str]:
    out = []
    for title, items in (
        ("breaks", found.breaks),
        ("newly reaches", found.risky),
        ("changed", found.changed),
        ("added", found.added),
        ("removed", found.removed),
        ("also", found.notes),
        ("cosmetic", found.cosmetic),
    ):
        out += [f"{title}: {item}" for item in items]
    return out


def _diff(old: RevisionView, new: RevisionView, was: str, now: str) -> LineDiff:
    before = (old.text(was) or "") if was in old.files else ""
    after = (new.text(now) or "") if now in new.files else ""
    return line_diff(before, after, f"a/{was}", f"b/{now}")


def _line_counts(old: RevisionView, new: RevisionView, was: str, now: str) -> str:
    """+added -removed lines over the whole files (not a truncated diff)."""
    diff = _diff(old, new, was, now)
    return f"+{diff.added} -{diff.removed} lines" + ("" if diff.aligned else " by content")


def _unified(old: RevisionView, new: RevisionView, was: str, now: str) -> str:
    return _diff(old, new, was, now).text


def _requirements(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    a, b = old.files.get(path), new.files.get(path)
    if b is None or (a is not None and a.blob_id == b.blob_id):
        return []
    return [
        Change(
            "code.requirements",
            Severity.SECURITY,
            f"{path} {'added' if a is None else 'changed'} ({_line_counts(old, new, path, path)}):"
            " other packages would be installed.",
            path,
            {"git_blob": a.blob_id} if a else None,
            {"git_blob": b.blob_id},
            _unified(old, new, path, path),
        )
    ]

"""Licence files (LICENSE, MODEL_LICENSE, NOTICE, USE_POLICY…) compared: a restriction added is
breaking, one lifted behavior, a rewording or a new name info (`formats/license.py` reads the
terms)."""

from __future__ import annotations

from typing import Any

from hubwatch.diff.sections import listing
from hubwatch.diff.text import line_diff
from hubwatch.formats.license import is_license, read_terms
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity


def diff_license(old: RevisionView, new: RevisionView) -> list[Change]:
    """One change per licence file added (after a repo's first revision), removed or changed."""
    if not old.files:
        return []  # a first revision: `files.added` names its licence files
    changes = []
    for path in sorted(p for p in old.files.keys() | new.files.keys() if is_license(p)):
        a, b = old.files.get(path), new.files.get(path)
        if a is not None and b is not None and a.blob_id == b.blob_id:
            continue
        changes.append(_change(old, new, path))
    return changes


def _side(view: RevisionView, path: str) -> dict[str, Any] | None:
    entry = view.files.get(path)
    if entry is None:
        return None
    text = view.text(path)
    side: dict[str, Any] = {"git_blob": entry.blob_id}
    if text is None:
        return side | {"unread": True}
    return side | {"lines": len(text.splitlines())} | read_terms(text)


def _change(old: RevisionView, new: RevisionView, path: str) -> Change:
    before, after = _side(old, path), _side(new, path)
    others = _others(old)
    if before is None and others:
        # a licence added beside others: judged against what they already imposed
        sides = [s for p in others if (s := _side(old, p)) and "restrictions" in s]
        before = {
            "other_files": others,
            "restrictions": sorted({t for s in sides for t in s["restrictions"]}),
        }
    if before is None or "other_files" in before:
        what = "a licence file where there was none" if not others else "a licence added"
        terms = (after or {}).get("restrictions")
        what += f": {_named(after)}" + (f", {listing(terms)}" if terms else "")
    elif after is None:
        what = f"licence removed ({_named(before)})"
    elif before.get("unread") or after.get("unread"):
        what = "licence changed; its text could not be read"
    else:
        what = _moved(before, after)
    text_b = (old.text(path) or "") if path in old.files else ""
    text_a = (new.text(path) or "") if after else ""
    detail = line_diff(text_b, text_a, f"a/{path}", f"b/{path}", context=2).text
    kind = (
        "license.added"
        if path not in old.files
        else "license.removed"
        if after is None
        else "license.changed"
    )
    return Change(
        kind, Severity.INFO, f"{path}: {what}.", path, before, after, detail[:20_000] or None
    )


def _others(view: RevisionView) -> list[str]:
    return [p for p in view.files if is_license(p)]


def _named(side: dict[str, Any] | None) -> str:
    name = (side or {}).get("name")
    return str(name) if name else "untitled"


def _moved(before: dict[str, Any], after: dict[str, Any]) -> str:
    was, now = set(before["restrictions"]), set(after["restrictions"])
    parts = []
    if now - was:
        parts.append(f"more restrictive: adds {listing(sorted(now - was))}")
    if was - now:
        parts.append(f"less restrictive: drops {listing(sorted(was - now))}")
    if before.get("name") != after.get("name"):
        parts.append(f"retitled {_named(before)} → {_named(after)}")
    elif before.get("version") != after.get("version"):
        parts.append(f"version {before.get('version')} → {after.get('version')}")
    if not parts:
        parts.append(f"reworded, the same terms ({listing(sorted(now)) or 'none recognised'})")
    return "; ".join(parts)

"""Files and metadata: files added or removed, custom code, requirements, model card keys."""

from __future__ import annotations

import difflib
import fnmatch
import posixpath

from hubwatch.diff.sections import arrow, listing
from hubwatch.diff.view import RevisionView
from hubwatch.models import Change, Severity

_MAX_DETAIL = 20_000
# (card key, kind, severity): what a model card's front matter change means.
CARD_KEYS: tuple[tuple[str, str, Severity], ...] = (
    ("license", "card.license", Severity.BREAKING),
    ("gated", "card.gated", Severity.BEHAVIOR),
    ("base_model", "card.base_model", Severity.INFO),
    ("pipeline_tag", "card.pipeline_tag", Severity.INFO),
    ("library_name", "card.library_name", Severity.INFO),
)


def diff_files(old: RevisionView, new: RevisionView) -> list[Change]:
    """Files added or removed (one change each way)."""
    added = sorted(new.files.keys() - old.files.keys())
    removed = sorted(old.files.keys() - new.files.keys())
    changes = []
    if added:
        changes.append(
            Change(
                "files.added",
                Severity.INFO,
                f"{len(added)} file(s) added: {listing(added)}.",
                added[0] if len(added) == 1 else None,
                None,
                added,
            )
        )
    if removed:
        changes.append(
            Change(
                "files.removed",
                Severity.INFO,
                f"{len(removed)} file(s) removed: {listing(removed)}.",
                removed[0] if len(removed) == 1 else None,
                removed,
                None,
            )
        )
    return changes


def unified(old: RevisionView, new: RevisionView, path: str) -> str:
    """A unified diff of a text file between two revisions (empty side when absent)."""
    before = (old.text(path) or "") if path in old.files else ""
    after = (new.text(path) or "") if path in new.files else ""
    text = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"a/{path}",
            f"b/{path}",
            n=3,
        )
    )
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "\n… (truncated)\n"


def _modified(old: RevisionView, new: RevisionView, path: str) -> bool:
    a, b = old.files.get(path), new.files.get(path)
    return a is not None and b is not None and a.blob_id != b.blob_id


def diff_code(old: RevisionView, new: RevisionView) -> list[Change]:
    """Custom code (`*.py`) and requirements files: what `trust_remote_code` would now run."""
    changes = []
    for path in sorted(old.files.keys() | new.files.keys()):
        name = posixpath.basename(path)
        is_code = name.endswith(".py")
        is_requirements = fnmatch.fnmatchcase(name, "requirements*.txt")
        if not (is_code or is_requirements):
            continue
        lines = _line_counts(old, new, path)
        if is_requirements and (path not in old.files or _modified(old, new, path)):
            changes.append(
                Change(
                    "code.requirements",
                    Severity.SECURITY,
                    f"{path} {'added' if path not in old.files else 'changed'} ({lines}): other "
                    "packages would be installed.",
                    path,
                    old.files[path].blob_id if path in old.files else None,
                    new.files[path].blob_id if path in new.files else None,
                    unified(old, new, path),
                )
            )
        elif is_code and path not in old.files:
            changes.append(
                Change(
                    "code.custom_added",
                    Severity.SECURITY,
                    f"Custom code {path} added ({lines}); it runs with trust_remote_code=True.",
                    path,
                    None,
                    new.files[path].blob_id,
                    unified(old, new, path),
                )
            )
        elif is_code and path not in new.files:
            changes.append(
                Change(
                    "code.custom_removed",
                    Severity.INFO,
                    f"Custom code {path} removed.",
                    path,
                    old.files[path].blob_id,
                    None,
                )
            )
        elif is_code and _modified(old, new, path):
            changes.append(
                Change(
                    "code.custom_changed",
                    Severity.SECURITY,
                    f"Custom code {path} changed ({lines}); review it before trusting remote "
                    "code again.",
                    path,
                    old.files[path].blob_id,
                    new.files[path].blob_id,
                    unified(old, new, path),
                )
            )
    return changes


def _line_counts(old: RevisionView, new: RevisionView, path: str) -> str:
    diff = unified(old, new, path).splitlines()
    plus = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    minus = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return f"+{plus} -{minus} lines"


def diff_card(old: RevisionView, new: RevisionView) -> list[Change]:
    """Model card front matter: license, gating, base model, pipeline tag, library."""
    if "README.md" not in old.files:
        return []  # the first card: nothing it replaces
    changes = []
    for key, kind, severity in CARD_KEYS:
        before, after = old.card.get(key), new.card.get(key)
        if before != after:
            changes.append(
                Change(
                    kind,
                    severity,
                    f"Model card {key} changed: {arrow(before, after)}.",
                    "README.md",
                    before,
                    after,
                )
            )
    return changes

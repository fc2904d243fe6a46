"""Files and metadata: files added, removed or renamed, and the model card's keys and text."""

from __future__ import annotations

import hashlib
from typing import Any

from hubwatch.diff.renames import renamed
from hubwatch.diff.sections import arrow, changed_keys, listing
from hubwatch.diff.text import line_diff
from hubwatch.diff.weights import weight_format
from hubwatch.formats.card import read_card
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity

# (card key, kind, severity): what a model card's front matter change means.
_CARD_CHANGES: tuple[tuple[str, str, Severity], ...] = (
    ("license", "card.license", Severity.BREAKING),
    ("gated", "card.gated", Severity.BEHAVIOR),
    ("base_model", "card.base_model", Severity.INFO),
    ("base_model_relation", "card.base_model_relation", Severity.INFO),
    ("pipeline_tag", "card.pipeline_tag", Severity.INFO),
    ("library_name", "card.library_name", Severity.INFO),
)


def diff_files(old: RevisionView, new: RevisionView) -> list[Change]:
    """Files added, removed or renamed: one roll-up each, the whole list in its detail. A file
    that moved is one rename, not an addition and a removal."""
    moved = renamed(old, new)
    added = sorted(new.files.keys() - old.files.keys() - set(moved.values()))
    removed = sorted(old.files.keys() - new.files.keys() - moved.keys())
    changes = [_renamed(moved)] if moved else []
    if added:
        pickle = sum(1 for path in added if weight_format(path) == "pickle")
        changes.append(
            Change(
                "files.added",
                Severity.INFO,
                f"{_count(added)} added (pickle: {pickle}): {listing(added, 3)}.",
                added[0] if len(added) == 1 else None,
                None,
                added,
                "\n".join(added) if len(added) > 3 else None,
            )
        )
    if removed:
        changes.append(
            Change(
                "files.removed",
                Severity.INFO,
                f"{_count(removed)} removed: {listing(removed, 3)}.",
                removed[0] if len(removed) == 1 else None,
                removed,
                None,
                "\n".join(removed) if len(removed) > 3 else None,
            )
        )
    return changes


def _renamed(moved: dict[str, str]) -> Change:
    pairs = [f"{a} → {b}" for a, b in sorted(moved.items())]
    return Change(
        "files.renamed",
        Severity.INFO,
        f"{_count(pairs)} renamed: {listing(pairs, 3)}.",
        next(iter(moved.values())) if len(moved) == 1 else None,
        sorted(moved),
        [moved[a] for a in sorted(moved)],
        "\n".join(pairs) if len(pairs) > 3 else None,
    )


def _count(paths: list[str]) -> str:
    return "1 file" if len(paths) == 1 else f"{len(paths)} files"


def unified(old: RevisionView, new: RevisionView, path: str) -> str:
    """A unified diff of a text file between two revisions (empty side when absent)."""
    before = (old.text(path) or "") if path in old.files else ""
    after = (new.text(path) or "") if path in new.files else ""
    return line_diff(before, after, f"a/{path}", f"b/{path}").text


def diff_card(old: RevisionView, new: RevisionView) -> list[Change]:
    """The whole model card: each known front matter key, every other key as one
    `card.metadata`, and the body as `card.text`. A new README's keys count as added."""
    front_b, body_b = _card_parts(old)
    front_a, body_a = _card_parts(new)
    changes = []
    for key, kind, severity in _CARD_CHANGES:
        before, after = front_b.get(key), front_a.get(key)
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
    known = {key for key, _, _ in _CARD_CHANGES}
    other = [k for k in changed_keys(front_b, front_a) if k not in known]
    if other:
        changes.append(
            Change(
                "card.metadata",
                Severity.INFO,
                f"Model card metadata changed: {len(other)} key(s) ({listing(other, 4)}).",
                "README.md",
                {k: front_b[k] for k in other if k in front_b},
                {k: front_a[k] for k in other if k in front_a},
            )
        )
    if "README.md" in old.files and body_b is not None and body_a is not None and body_b != body_a:
        changes.append(_card_text(body_b, body_a))
    return changes


def _card_parts(view: RevisionView) -> tuple[dict[str, Any], str | None]:
    """The README's whole front matter (the stored card's keys win) and its body."""
    if "README.md" not in view.files:
        return {}, ""
    text = view.text("README.md")
    if text is None:
        return dict(view.card), None
    card = read_card(text, view.memo)
    front = dict(card.others)
    front.update(view.card)
    return front, card.body


def _card_text(before: str, after: str) -> Change:
    diff = line_diff(before, after, "a/README.md", "b/README.md")
    edited = f"+{diff.added} -{diff.removed} lines" + ("" if diff.aligned else ", by content")
    return Change(
        "card.text",
        Severity.INFO,
        f"Model card text edited: {edited}.",
        "README.md",
        {"lines": len(before.splitlines()), "sha256": _sha256(before)},
        {"lines": len(after.splitlines()), "sha256": _sha256(after)},
        diff.text,
    )


def _sha256(text: str) -> str:
    """Tells two bodies of the same length apart (equal before/after would read as no change)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

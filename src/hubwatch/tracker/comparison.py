"""Any two stored revisions side by side: their changes, the keys and text files that differ,
the chat templates' renders, the estimates; what the compare page shows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hubwatch.caching import Memo
from hubwatch.diff import (
    Differ,
    KeyRow,
    RevisionView,
    TemplateRenders,
    conversation_renders,
    diff_revisions,
    key_rows,
    line_diff,
)
from hubwatch.formats.card import read_card
from hubwatch.models import Change, Estimate, StoredRevision
from hubwatch.store.views import RevisionReads, stored_view
from hubwatch.tracker.select import is_text

KEYED = ("config.json", "generation_config.json")
"""The JSON files compared key by key."""
CARD = "README.md"
MAX_TEXT_BYTES = 256 * 1024
"""Text files larger than this on either side are not diffed line by line on the page (a
tokenizer.json: its differs say what changed in it)."""


@dataclass(frozen=True, slots=True)
class TextDiff:
    """One text file that differs: its unified diff, or why it is not shown."""

    path: str
    diff: str = ""
    added: int = 0
    removed: int = 0
    skipped: str | None = None


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two stored revisions of one repo, compared."""

    repo_id: str
    before: StoredRevision
    after: StoredRevision
    changes: list[Change]
    keys: dict[str, list[KeyRow]]
    """File (or "README.md front matter") → the keys that differ; files with none left out."""
    texts: list[TextDiff]
    renders: list[TemplateRenders]
    estimates: tuple[Estimate | None, Estimate | None] = field(default=(None, None))


def compare_stored(
    store: RevisionReads,
    repo_id: str,
    rev_a: str,
    rev_b: str,
    differs: Mapping[str, Differ] | None = None,
) -> Comparison:
    """Revision `rev_a` → `rev_b` (abbreviated shas accepted; UnknownRevision if either is not
    stored)."""
    a, b = store.revision(repo_id, rev_a), store.revision(repo_id, rev_b)
    memo = Memo()  # one for both views and every step: the renders the differ made are reused
    old = stored_view(store, repo_id, a.sha, memo=memo)
    new = stored_view(store, repo_id, b.sha, memo=memo)
    changes = sorted(diff_revisions(old, new, differs), key=lambda c: -c.severity.rank)
    return Comparison(
        repo_id,
        a,
        b,
        changes,
        _keys(old, new),
        _texts(old, new),
        conversation_renders(old, new),
        (store.estimate(repo_id, a.sha), store.estimate(repo_id, b.sha)),
    )


def _keys(old: RevisionView, new: RevisionView) -> dict[str, list[KeyRow]]:
    tables = {path: key_rows(old.json(path), new.json(path)) for path in KEYED}
    cards = [read_card(view.text(CARD) or "", view.memo) for view in (old, new)]
    front = [{**card.known, **card.others} for card in cards]
    tables[f"{CARD} front matter"] = key_rows(*front)
    return {name: rows for name, rows in tables.items() if rows}


def _texts(old: RevisionView, new: RevisionView) -> list[TextDiff]:
    """The stored text files whose content differs, each as a unified diff."""
    found = []
    for path in sorted(old.files.keys() | new.files.keys()):
        if not is_text(path) or old.content_sha(path) == new.content_sha(path):
            continue
        before, after = old.text(path), new.text(path)
        if before is None and after is None:
            continue
        if (before is None and path in old.files) or (after is None and path in new.files):
            found.append(TextDiff(path, skipped="its content was not read on one side"))
            continue
        if max(len(before or ""), len(after or "")) > MAX_TEXT_BYTES:
            found.append(TextDiff(path, skipped="too large to show line by line"))
            continue
        lines = line_diff(before or "", after or "", f"a/{path}", f"b/{path}")
        found.append(TextDiff(path, lines.text, lines.added, lines.removed))
    return found

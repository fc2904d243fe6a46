"""Vocabularies and added tokens, as every tokenizer file holds them: what was added, removed,
re-numbered or given other attributes."""

from __future__ import annotations

from itertools import compress, filterfalse, repeat
from operator import eq, ne
from typing import Any

from hubwatch.diff.sections import arrow, listing, show
from hubwatch.models import Change, Severity

_TOKEN_ATTRS = ("id", "special", "normalized", "lstrip", "rstrip", "single_word")
_MISSING = object()


def _ids_are_positions(vocab: dict[str, int]) -> bool:
    return all(map(eq, vocab.values(), range(len(vocab))))


def _moved(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """The tokens of `before`, in its order, whose id differs in `after` or that are gone."""
    # Every token is visited in C (map, compress, filterfalse); Python only sees the tokens
    # that moved.
    if _ids_are_positions(before) and _ids_are_positions(after):
        # As `tokenizers` writes them (ids 0, 1, 2… in order), a token's id is its position
        # and the tokens that moved are those with another token in their place.
        tokens_before, tokens_after = list(before), list(after)
        moved = list(compress(tokens_before, map(ne, tokens_before, tokens_after)))
        moved += tokens_before[len(tokens_after) :]
        return moved
    ids_after = map(after.get, before, repeat(_MISSING))
    return list(compress(before, map(ne, before.values(), ids_after)))


def vocab_changes(before: dict[str, int], after: dict[str, int], path: str) -> list[Change]:
    """Tokens added, removed or given another id."""
    if before == after:
        return []
    moved = _moved(before, after)
    # a re-trained vocabulary moves every token: split in C
    removed = list(filterfalse(after.__contains__, moved))
    renumbered = list(filter(after.__contains__, moved))
    kept = len(before) - len(removed)
    added = list(filterfalse(before.__contains__, after)) if len(after) > kept else []
    if not (added or removed or renumbered):
        return []
    parts = []
    if added:
        parts.append(f"{len(added)} added ({listing(show(t) for t in added[:3])})")
    if removed:
        parts.append(f"{len(removed)} removed ({listing(show(t) for t in removed[:3])})")
    if renumbered:
        examples = (f"{show(t)} {before[t]}→{after[t]}" for t in renumbered[:3])
        parts.append(f"{len(renumbered)} re-numbered ({listing(examples)})")
    breaking = bool(removed or renumbered)
    return [
        Change(
            "tokenizer.vocab",
            Severity.BREAKING if breaking else Severity.BEHAVIOR,
            f"{path}: vocabulary {len(before)} → {len(after)} tokens: {'; '.join(parts)}.",
            path,
            {
                "size": len(before),
                "removed": removed[:20],
                "renumbered": {t: before[t] for t in renumbered[:20]},
            },
            {
                "size": len(after),
                "added": added[:20],
                "renumbered": {t: after[t] for t in renumbered[:20]},
            },
        )
    ]


def added_tokens_changes(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], path: str
) -> list[Change]:
    """Added tokens (usually the special ones) added, removed or with other attributes."""
    added = [t for t in after if t not in before]
    removed = [t for t in before if t not in after]
    changed = {
        t: [a for a in _TOKEN_ATTRS if before[t].get(a) != after[t].get(a)]
        for t in before
        if t in after and before[t] != after[t]
    }
    changed = {t: attrs for t, attrs in changed.items() if attrs}
    if not (added or removed or changed):
        return []
    parts = []
    if added:
        parts.append(f"{len(added)} added ({_tokens(added, after)})")
    if removed:
        parts.append(f"{len(removed)} removed ({_tokens(removed, before)})")
    for token, attrs in list(changed.items())[:3]:
        moved = ", ".join(f"{a} {arrow(before[token].get(a), after[token].get(a))}" for a in attrs)
        parts.append(f"{show(token)}: {moved}")
    if len(changed) > 3:
        parts.append(f"{len(changed) - 3} more changed")
    breaking = bool(removed) or any("id" in attrs for attrs in changed.values())
    return [
        Change(
            "tokenizer.added_tokens",
            Severity.BREAKING if breaking else Severity.BEHAVIOR,
            f"{path}: added tokens changed: {'; '.join(parts)}.",
            path,
            {t: before[t] for t in [*removed, *changed][:50]},
            {t: after[t] for t in [*added, *changed][:50]},
        )
    ]


def _tokens(names: list[str], table: dict[str, dict[str, Any]]) -> str:
    def one(name: str) -> str:
        token = table[name]
        special = " special" if token.get("special") else ""
        return f"{show(name)} id {token.get('id')}{special}"

    return listing(one(n) for n in names[:5]) + (
        f", … {len(names) - 5} more" if len(names) > 5 else ""
    )

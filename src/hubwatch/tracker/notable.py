"""Which changes a revision's log line names: the notable kinds, most severe first."""

from __future__ import annotations

from collections.abc import Sequence

from hubwatch.models import Change, Severity

NOTABLE_FROM = Severity.BEHAVIOR
"""Changes at this severity or above are named in a revision's log line."""
_NOTABLE_NAMED = 8


def notable(changes: Sequence[Change]) -> list[str]:
    """The kinds of the changes at `NOTABLE_FROM` or above, most severe first, each once, with
    its severity and how often it occurs (`chat_template.changed (behavior) x2`)."""
    counts: dict[tuple[int, str, str], int] = {}
    for change in changes:
        if change.severity.rank >= NOTABLE_FROM.rank:
            key = (-change.severity.rank, change.kind, change.severity.value)
            counts[key] = counts.get(key, 0) + 1
    named = [
        f"{kind} ({severity})" + (f" x{count}" if count > 1 else "")
        for (_, kind, severity), count in sorted(counts.items())
    ]
    if len(named) > _NOTABLE_NAMED:
        named[_NOTABLE_NAMED:] = [f"and {len(named) - _NOTABLE_NAMED} more kinds"]
    return named

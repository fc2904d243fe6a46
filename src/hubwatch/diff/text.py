"""Line diffs of text within bounds: the lines both sides share at the head and the tail are set
aside first, and a middle too long to align line by line (difflib is quadratic there: 87 s for
a 32k-line README whose neighbouring lines swapped) is counted by content instead."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass

MAX_ALIGNED = 2_000
"""Lines of the differing middle, on either side, up to which it is aligned line by line."""
MAX_DETAIL = 20_000
"""Characters of a unified diff kept as a change's detail."""


@dataclass(frozen=True, slots=True)
class LineDiff:
    """Two texts compared line by line."""

    added: int
    removed: int
    text: str
    """The unified diff (cut at MAX_DETAIL), or what was counted when the middle was too long."""
    aligned: bool = True
    """False: the middle was counted by content, not aligned (`text` says so)."""


def line_diff(before: str, after: str, a: str, b: str, context: int = 3) -> LineDiff:
    """`before` → `after` as a unified diff with headers `a` and `b`, and its line counts."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    head = _common_head(old, new)
    tail = min(_common_head(old[::-1], new[::-1]), min(len(old), len(new)) - head)
    middle_old, middle_new = old[head : len(old) - tail], new[head : len(new) - tail]
    if len(middle_old) <= MAX_ALIGNED and len(middle_new) <= MAX_ALIGNED:
        text = "".join(difflib.unified_diff(old, new, a, b, n=context))
        added = removed = 0
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
            if tag != "equal":
                removed += i2 - i1
                added += j2 - j1
        cut = text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL] + "\n… (truncated)\n"
        return LineDiff(added, removed, cut)
    gone, came = Counter(middle_old), Counter(middle_new)
    added, removed = sum((came - gone).values()), sum((gone - came).values())
    counted = (
        f"+{added} -{removed} lines by content"
        if added or removed
        else "the same lines, in another order"
    )
    note = (
        f"--- {a}\n+++ {b}\n@@ -{head + 1},{len(middle_old)} +{head + 1},{len(middle_new)} @@ "
        f"too large to diff line by line ({len(middle_old):,} and {len(middle_new):,} lines "
        f"differ, over {MAX_ALIGNED:,}): {counted}\n"
    )
    return LineDiff(added, removed, note, aligned=False)


def _common_head(one: list[str], other: list[str]) -> int:
    """How many lines the two lists share from their start."""
    shared = 0
    for x, y in zip(one, other, strict=False):
        if x != y:
            break
        shared += 1
    return shared

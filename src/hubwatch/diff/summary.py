"""Changes that say nothing (the same value on both sides), summaries cut to one line, and
values and details kept within their bounds."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from typing import Any

from hubwatch.models import Change

SUMMARY_MAX = 160
"""The longest summary kept; what is past it moves to the detail."""

# A value as `sections.show` writes it, right after an arrow: JSON, or "unset" (None).
_ARROW = re.compile(r" (?:→|->) ")
_UNSET = re.compile(r"unset\b")
_DECODER = json.JSONDecoder()


def is_noop(change: Change) -> bool:
    """Whether nothing moved: equal before and after, or a summary whose every "X → Y" shows
    the same whole value on both sides (`eos_token "</s>" → "</s>"`)."""
    if change.before is not None and change.after is not None and change.before == change.after:
        return True
    text = change.summary
    pairs = [_same_around(text, m.start(), m.end()) for m in _ARROW.finditer(text)]
    return bool(pairs) and all(pairs)


def _same_around(text: str, start: int, end: int) -> bool:
    """Whether the whole value right after the arrow is written, identically, right before it."""
    try:
        _, stop = _DECODER.raw_decode(text, end)
    except ValueError:
        unset = _UNSET.match(text, end)
        if unset is None:
            return False
        stop = unset.end()
    right, left_from = text[end:stop], start - (stop - end)
    return (
        left_from >= 0
        and text[left_from:start] == right
        and (left_from == 0 or text[left_from - 1] in " :(,;[{")
        and (stop == len(text) or text[stop] in ",;.)")
    )


def one_line(change: Change, limit: int = SUMMARY_MAX) -> Change:
    """`change` with a one-line summary of at most `limit` characters; the whole in the detail."""
    summary = " ".join(change.summary.split())
    if len(summary) <= limit and summary == change.summary:
        return change
    if len(summary) <= limit:
        return replace(change, summary=summary)
    cut = summary.rfind(" ", limit // 2, limit - 1)
    head = summary[: cut if cut > 0 else limit - 1].rstrip(" ,;:") + "…"
    detail = change.summary if not change.detail else f"{change.summary}\n\n{change.detail}"
    return replace(change, summary=head, detail=detail)


VALUE_MAX = 16 * 1024
"""The most bytes of JSON a change's `before` or `after` keeps whole."""
DETAIL_MAX = 64 * 1024
"""The most characters of a change's detail."""
PREVIEW = 200
"""Characters of a value too long to keep that are kept to show it."""


def bounded(change: Change) -> Change:
    """`change` with its `before`, `after` and `detail` within their bounds: a value longer than
    VALUE_MAX is replaced by what shows it (its first characters, its size and the sha256 of its
    JSON; the whole stays in the file it was read from, stored once as content), a detail is cut
    with its size said. A change within them is returned as it is."""
    before, after = _bounded(change.before), _bounded(change.after)
    detail = change.detail
    if detail is not None and len(detail) > DETAIL_MAX:
        detail = f"{detail[:DETAIL_MAX]}\n… (cut: {len(detail):,} characters in all)\n"
    if before is change.before and after is change.after and detail is change.detail:
        return change
    return replace(change, before=before, after=after, detail=detail)


def _bounded(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str) and len(value) * 4 <= VALUE_MAX:  # UTF-8: at most 4 bytes each
        return value
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= VALUE_MAX:
        return value
    return {
        "truncated": text[:PREVIEW] + "…",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }

"""BPE merges compared as lists, and tokenizer.json's model.merges compared as bytes.

Parsed, a 150k-merge section is 150k lists and 300k strings: most of a re-trained tokenizer's
diff time, and as long again to join and hash them. Written the way the `tokenizers` library
writes it, the section is checked and compared with whole-buffer byte operations instead; only
the merges between the first and last difference are split apart, and only those reported are
decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import filterfalse
from typing import NamedTuple, TypeVar

import orjson

from hubwatch.diff.sections import listing, show
from hubwatch.diff.tokenizer.spans import common_prefix, common_suffix
from hubwatch.models import Change, Severity

T = TypeVar("T", bound=Hashable)

_WS = b" \t\n\r"
# Control characters are never raw in valid JSON, but for whitespace between values (which is
# checked separately inside strings).
_CONTROL = bytes(c for c in range(0x20) if c not in _WS)
_ESCAPES = (b"\\b", b"\\f", b"\\n", b"\\r", b"\\t")
# Escaped backslashes and quotes become two control bytes each (same length, never raw in
# valid JSON), so that every quote left delimits a string; NUL separates merges.
_BACKSLASH, _QUOTE, _SEP = b"\x01\x01", b"\x02\x02", b"\x00"
_FEW = 16  # middle merges looked up one by one in the other side's bytes; more: hashed


def merges_changes(before: list[str], after: list[str], path: str) -> list[Change]:
    """BPE merges added, removed or re-ordered (the order is their priority)."""
    old, new = set(before), set(after)
    added = list(filterfalse(old.__contains__, after))
    removed = list(filterfalse(new.__contains__, before))
    return _report(len(before), len(after), added, removed, path, str)


def _report(
    count_before: int,
    count_after: int,
    added: Sequence[T],
    removed: Sequence[T],
    path: str,
    text: Callable[[T], str],
) -> list[Change]:
    shown_added = [text(m) for m in added[:20]]
    if added or removed:
        what = f"{len(added)} added, {len(removed)} removed"
        if added:
            what += f" (e.g. {listing(show(m) for m in shown_added[:3])})"
    else:
        what = "the same merges in another order (their priority changed)"
    return [
        Change(
            "tokenizer.merges",
            Severity.BEHAVIOR,
            f"{path}: merges {count_before} → {count_after}: {what}; text tokenizes differently.",
            path,
            {"count": count_before, "removed": [text(m) for m in removed[:20]]},
            {"count": count_after, "added": shown_added},
        )
    ]


class _Section(NamedTuple):
    within: bytes
    """Between two strings of one merge, quotes included: `","`; empty for "a b" strings."""
    between: bytes
    """Between two merges, quotes included: `"],["` or `","`; empty with a single merge."""
    text: bytes
    """The section, stripped, with escaped backslashes and quotes masked."""
    first: int
    """Where in `text` the first string's opening quote is."""
    last: int
    """Where in `text` the last string's closing quote is."""
    merges: bytes
    """The strings' escaped text: merges separated by NUL, a merge's strings by `within`."""
    spaces: bool
    """Whether a string holds a space."""
    size: int
    """How many merges there are."""


class _Middle(NamedTuple):
    """What the other side holds where it differs from a `_Section`'s bytes."""

    start: int
    """The NUL in the section's `merges` that the difference follows (-1: the start)."""
    end: int
    """The NUL it ends at (`len(merges)`: the end)."""
    merges: bytes
    """The other side's merges in between, NUL-separated."""
    spaces: bool
    """Whether one of their strings holds a space."""


class MergesBytes:
    """A model.merges section as its bytes, taken apart at most once (a tokenizer.json taken
    apart keeps one: the new side of one change is the old side of the next)."""

    __slots__ = ("_section", "_taken", "raw")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._section: _Section | None = None
        self._taken = False

    def section(self) -> _Section | None:
        """`_section(raw)`, once."""
        if not self._taken:
            self._section, self._taken = _section(self.raw), True
        return self._section


def merges_bytes_changes(
    before: bytes | MergesBytes, after: bytes | MergesBytes, path: str
) -> list[Change] | None:
    """`merges_changes` for two differing model.merges sections, compared as bytes.

    Exact for what the `tokenizers` library writes (compact or indented, pairs or "a b"
    strings) as long as both sides write a merge's strings alike and spell every string the
    one way JSON allows without `\\u` or `\\/` escapes. Anything else, malformed JSON
    included, is None: parse it instead. So is a merge whose second token is `],[`, which
    reads like the separator between two merges.
    """
    old_side = before if isinstance(before, MergesBytes) else MergesBytes(before)
    new_side = after if isinstance(after, MergesBytes) else MergesBytes(after)
    before, after = old_side.raw, new_side.raw
    old = old_side.section()
    if old is None:
        return None
    # The new side is read only where its bytes differ from the old; tokens with spaces need
    # the joined comparison below.
    middle = None if old.spaces else _middle(old, before, after)
    if middle is not None and not middle.spaces:
        return _changes_in_middle(old, middle, path)
    new = new_side.section()
    if new is None or old.within != new.within:
        return None
    if old.merges == new.merges:  # another spelling of the same list: nothing changed
        return []
    within, b, a = old.within, old.merges, new.merges
    if within and (old.spaces or new.spaces):
        # Merges are told apart as "a b" strings, as when parsed and joined: with spaces in
        # tokens, two different pairs can be one merge.
        within, b, a = b" ", b.replace(within, b" "), a.replace(within, b" ")
    b, a = _SEP + b + _SEP, _SEP + a + _SEP  # every merge between two NULs
    # Whole merges before `start` and from `end` on are the same bytes on both sides.
    start = b.rfind(_SEP, 0, common_prefix(b, a))
    end = len(b) - common_suffix(b, a, min(len(b), len(a)) - start)
    end_b = b.find(_SEP, end)
    end_a = end_b - len(b) + len(a)
    try:  # UTF-8 throughout: all of `b`, and what `a` does not share with it
        b.decode()
        a[start : end_a + 1].decode()
    except UnicodeDecodeError:
        return None
    middle_b = _split(b[start : end_b + 1])
    middle_a = _split(a[start : end_a + 1])
    set_b, set_a = set(middle_b), set(middle_a)
    removed = list(filterfalse(set_a.__contains__, middle_b))
    added = list(filterfalse(set_b.__contains__, middle_a))
    if len(removed) + len(added) <= _FEW:  # the rest: a NUL-delimited search of the other side
        removed = [m for m in removed if _SEP + m + _SEP not in a]
        added = [m for m in added if _SEP + m + _SEP not in b]
    elif start > 0 or end_b < len(b) - 1:  # not a whole re-training: look outside the middles
        old_all, new_all = set(_split(b)), set(_split(a))
        removed = list(filterfalse(new_all.__contains__, removed))
        added = list(filterfalse(old_all.__contains__, added))
    return _report(old.size, new.size, added, removed, path, _decoder(within))


def _changes_in_middle(old: _Section, middle: _Middle, path: str) -> list[Change] | None:
    """The changes when the other side is `old` but for `middle`."""
    try:
        old.merges.decode()
    except UnicodeDecodeError:
        return None
    b = _SEP + old.merges + _SEP  # every merge between two NULs; positions move by one
    before = _split(b[middle.start + 1 : middle.end + 2])
    after = _split(_SEP + middle.merges + _SEP)
    if before == after:  # the same merges, written another way
        return []
    removed = list(filterfalse(set(after).__contains__, before))
    added = list(filterfalse(set(before).__contains__, after))
    head, tail = middle.start + 2, middle.end + 1  # the shared merges: b[:head] and b[tail:]
    if len(removed) + len(added) <= _FEW:
        removed = [
            m
            for m in removed
            if b.find(_SEP + m + _SEP, 0, head) < 0 and b.find(_SEP + m + _SEP, tail) < 0
        ]
        added = [m for m in added if _SEP + m + _SEP not in b]
    else:
        shared = {*_split(b[:head]), *_split(b[tail:])}
        removed = list(filterfalse(shared.union(after).__contains__, removed))
        added = list(filterfalse(shared.union(before).__contains__, added))
    size = old.size - len(before) + len(after)
    return _report(old.size, size, added, removed, path, _decoder(old.within))


def _decoder(within: bytes) -> Callable[[bytes], str]:
    """Spells a merge, in its NUL-separated form, as the joined string parsing gives."""

    def text(merge: bytes) -> str:
        if within:
            merge = merge.replace(within, b" ")
        raw = merge.replace(_BACKSLASH, b"\\\\").replace(_QUOTE, b'\\"')
        value: str = orjson.loads(b'"' + raw + b'"')
        return value

    return text


def _split(delimited: bytes) -> list[bytes]:
    """The merges in `NUL merge NUL merge … NUL` (none in a lone NUL)."""
    return delimited[1:-1].split(_SEP) if len(delimited) > 1 else []


def _section(raw: bytes) -> _Section | None:
    """A merges section taken apart by its layout; None unless well-formed in one layout.

    Every quote must open or close a string and sit in the head, tail, or a `between` or
    `within` separator, and the strings between them must be valid JSON string text (UTF-8
    is checked by the caller): then this reading is the only parse there is.
    """
    if len(raw.translate(None, _CONTROL)) != len(raw):
        return None
    text = _masked(raw.strip(_WS))
    if text is None:
        return None
    head_end = text.find(b"[", text.find(b"[") + 1)  # a second bracket before any string
    pairs = 0 <= head_end < text.find(b'"')
    quotes = _quotes(text, 5 if pairs else 3)  # the first merge's, and the next one's first
    per_merge = 4 if pairs else 2
    if len(quotes) < per_merge:
        return None
    first, last = quotes[0], text.rfind(b'"')
    head, tail = text[: first + 1], text[last:]
    within = text[quotes[1] : quotes[2] + 1] if pairs else b""
    if head[:-1].translate(None, _WS) != (b"[[" if pairs else b"["):
        return None
    if tail[1:].translate(None, _WS) != (b"]]" if pairs else b"]"):
        return None
    if pairs and within[1:-1].translate(None, _WS) != b",":
        return None
    between = b""
    if quotes[per_merge - 1] != last:  # more than one merge
        if len(quotes) <= per_merge:
            return None
        between = text[quotes[per_merge - 1] : quotes[per_merge] + 1]
        if between[1:-1].translate(None, _WS) != (b"],[" if pairs else b","):
            return None
    body = _body(text[first + 1 : last], within, between)
    if body is None:
        return None
    return _Section(within, between, text, first, last, *body)


def _masked(raw: bytes) -> bytes | None:
    """`raw` with escaped backslashes and quotes masked; None if it holds another escape than
    the only spelling of a control character."""
    text = raw.replace(b"\\\\", _BACKSLASH).replace(b'\\"', _QUOTE)
    if b"\\" in text and text.count(b"\\") != sum(map(text.count, _ESCAPES)):
        return None
    return text


def _body(body: bytes, within: bytes, between: bytes) -> tuple[bytes, bool, int] | None:
    """The merges (NUL-separated), whether a string holds a space, and how many merges there
    are, in the masked text from just after an opening quote to just before a closing one."""
    merges = body.replace(between, _SEP) if between else body
    withins = merges.count(within) if within else 0
    if merges.count(b'"') != 2 * withins:
        return None  # a quote outside every separator: not this layout
    # Raw tabs and newlines (and, below, spaces) in `merges` belong to `within`, or to a string.
    tabs = sum(map(within.count, (b"\t", b"\n", b"\r")))
    if len(merges.translate(None, b"\t\n\r")) != len(merges) - withins * tabs:
        return None
    spaces = merges.count(b" ") != withins * within.count(b" ")
    # Each `between` became one NUL.
    size = 1 + (len(body) - len(merges)) // (len(between) - 1) if between else 1
    return merges, spaces, size


def _middle(old: _Section, before: bytes, after: bytes) -> _Middle | None:
    """Where `after` differs from `before`, cut at merge boundaries in the bytes they share,
    with after's merges there checked as `_section` checks a whole section; None when the
    difference is not inside the list of merges, or `after` is not well-formed there."""
    text, between, size = old.text, old.between, len(old.between)
    if not between:
        return None
    b, a = before.strip(_WS), after.strip(_WS)  # `text`'s positions are `b`'s
    shared_head = common_prefix(b, a)
    if shared_head <= old.first:
        return None
    shared_tail = common_suffix(b, a, min(len(b), len(a)) - shared_head)

    def boundary(at: int) -> bool:  # a closing quote starts it: not a token "],[" (or ",")
        return at >= 0 and text.count(b'"', 0, at) % 2 == 1

    def nul(at: int) -> int:  # where the boundary at `at` is in `old.merges`
        return at - old.first - 1 - text.count(between, old.first + 1, at) * (size - 1)

    cut = text.rfind(between, old.first + 1, shared_head)
    while cut >= 0 and not boundary(cut):
        cut = text.rfind(between, old.first + 1, cut + size - 1)
    start, start_nul = (cut + size, nul(cut)) if cut >= 0 else (old.first + 1, -1)
    lowest = max(len(b) - shared_tail, start)
    cut = text.find(between, lowest, old.last + 1)
    while cut >= 0 and not boundary(cut):
        cut = text.find(between, cut + 1, old.last + 1)
    if cut >= 0:
        end_b, end_nul = cut, nul(cut)
        end_a = cut - len(b) + len(a)
    else:  # up to the last string: after must close its list as before does
        end_b, end_nul = old.last, len(old.merges)
        end_a = a.rfind(b'"')
        if a[end_a + 1 :].translate(None, _WS) != text[old.last + 1 :].translate(None, _WS):
            return None
    if end_a < start or a[end_a - 1 : end_a] == b"\\" or end_b < start:
        return None  # an escaped quote where the cut needs a closing one
    if (start_nul >= 0 and old.merges[start_nul] != 0) or (
        end_nul < len(old.merges) and old.merges[end_nul] != 0
    ):
        return None
    raw = a[start:end_a]
    if len(raw.translate(None, _CONTROL)) != len(raw):
        return None
    try:
        raw.decode()
    except UnicodeDecodeError:
        return None
    masked = _masked(raw)
    body = None if masked is None else _body(masked, old.within, between)
    if body is None:
        return None
    merges, spaces, _ = body
    return _Middle(start_nul, end_nul, merges, spaces)


def _quotes(text: bytes, count: int) -> list[int]:
    """Where the first `count` quotes in `text` are."""
    found: list[int] = []
    at = text.find(b'"')
    while at >= 0 and len(found) < count:
        found.append(at)
        at = text.find(b'"', at + 1)
    return found

"""A big tokenizer.json section parsed on one side and written again as the other side is laid out.

A file loaded and saved again with Python's `json.dump` holds what the `tokenizers` library
wrote in other bytes: indented or with `", "` and `": "` separators, and (by default) every
non-ASCII character as a `\\uXXXX` escape. Its model.vocab and model.merges then differ from the
other side's in every byte, and both sides would be parsed. Instead the rewritten side alone is
parsed and written back with orjson, which writes both of `tokenizers`' layouts (compact, and
indented two spaces a level); the two sections can then be compared as bytes again.
"""

from __future__ import annotations

from typing import Any

import orjson

from hubwatch.diff.tokenizer.spans import common_prefix

_WS = b" \t\n\r"


def rewritten_side(before: bytes, after: bytes) -> int | None:
    """Which side of two differing sections to parse and write again (0: before, 1: after),
    when they first differ in their layout; None when they first differ in what they hold.

    The side with an escape there is rewritten (`tokenizers` writes no `\\u` escapes but for
    control characters); with whitespace there, the side not laid out as `tokenizers` lays
    sections out, else the side with the whitespace, else the new one.
    """
    at = common_prefix(before, after)
    first = (before[at : at + 1], after[at : at + 1])
    if b"\\" in first:
        return first.index(b"\\")
    spaced = [bool(byte) and byte in _WS for byte in first]
    if not any(spaced):
        return None
    plain = [_as_tokenizers_writes(before), _as_tokenizers_writes(after)]
    if plain[0] != plain[1]:
        return plain.index(False)
    return 0 if spaced == [True, False] else 1


def _as_tokenizers_writes(section: bytes) -> bool:
    """Whether a section starts as `tokenizers` writes one: indented line by line, or with no
    space after its `:` and `,` separators (Python's `json.dump` writes one)."""
    head = section[:4096].lstrip(_WS)
    return head[1:2] == b"\n" or (b'": ' not in head and b", " not in head)


def relaid(value: Any, like: bytes) -> bytes | None:
    """`value` written as `like` is: compact, or indented by two spaces a level from the depth
    of `like`'s first line, with `like`'s whitespace before and after; None when `value` cannot
    be written (orjson refuses integers beyond 64 bits, say) or `like` is in neither layout.

    When what it returns equals `like`, the two hold the same section: what orjson writes
    parses back to values equal to those it was given.
    """
    start = len(like) - len(like.lstrip(_WS))
    end = len(like.rstrip(_WS))
    if end - start < 2:
        return None
    indented = like[start + 1 : start + 2] == b"\n"
    try:
        written = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indented else None)
    except orjson.JSONEncodeError:
        return None
    if indented:
        line = like[start + 2 : start + 258]
        depth = len(line) - len(line.lstrip(b" ")) - 2  # orjson indents the first level by two
        if depth < 0:
            return None
        if depth:
            written = written.replace(b"\n", b"\n" + b" " * depth)  # newlines are never in strings
    return like[:start] + written + like[end:]

"""Upstream JSON parsed as `json.loads` parses it, but within limits and never recursing deeply.

orjson parses first (10 MB tokenizer.json files several times faster than the standard
library); its result is then walked level by level, in C-speed passes, to bound the depth. What
orjson refuses or may have rounded is parsed again by the standard library after a
non-recursive scan of the brackets, so the answer is always the standard library's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import partial
from itertools import chain, compress
from operator import is_
from typing import Any

import orjson

from hubwatch.errors import UnsafeContent

MAX_DEPTH = 64
"""Most arrays and objects nested in one another (orjson allows 1024, CPython's own parser
recurses until the interpreter's limit)."""
MAX_INT_DIGITS = 1000
"""Most digits in one integer (CPython refuses more than 4300; converting is quadratic)."""

TOO_DEEP = f"nesting deeper than {MAX_DEPTH} levels"
NOT_FINITE = "NaN or Infinity is not JSON"

_DIGITS = bytes.maketrans(b"123456789", b"000000000")
# NOTE: orjson keeps integers within [-2**63, 2**64) and silently turns the others into floats;
# any of those is written with at least 19 digits.
_LONG_DIGIT_RUN = b"0" * 19
_LONG_INT = re.compile(rb"(?<![.\d])\d{19,}(?![.\deE])")
_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')


def loads_bounded(raw: bytes | str) -> Any:
    """`raw` parsed as JSON, as `json.loads` would; UnsafeContent saying why when it cannot be.

    Refused: nesting deeper than MAX_DEPTH, integers of more than MAX_INT_DIGITS digits, NaN,
    Infinity and numbers beyond a float's range, and anything that is not JSON. Duplicate keys
    are allowed (the last one wins, as in every JSON library).
    """
    if _has_long_run(raw):
        # NOTE: orjson holds about 13 bytes per character of a string while it reads it (a 30 MB
        # string peaks at 390 MB); the standard library twice its bytes
        return _loads_exact(raw)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # NaN, a long integer, a BOM, a lone surrogate, or not JSON at all: the standard
        # library decides, and says why.
        return _loads_exact(raw)
    if _few_brackets(raw):  # a config, say: no walk needed for the depth
        rounded = _may_hold_long_int(raw) and _has_float_within_depth(value)
    else:
        rounded = _has_float_within_depth(value) and _may_hold_long_int(raw)
    if rounded:
        return _loads_exact(raw)  # a float may be an integer orjson rounded
    return value


LONG_STRING = 1024 * 1024
"""Characters of one string from which a document is parsed by the standard library (from
half of it, where the string spans a whole block)."""


def _has_long_run(raw: bytes | str) -> bool:
    """Whether a block of LONG_STRING/2 characters holds no quote, as each does that a string
    (or a stretch between strings) of LONG_STRING covers: one search per block, in C, each
    stopping at the block's first quote."""
    half = LONG_STRING // 2
    starts = range(0, len(raw) - half + 1, half)
    if isinstance(raw, str):
        return any(raw.find('"', start, start + half) < 0 for start in starts)
    return any(raw.find(b'"', start, start + half) < 0 for start in starts)


def _few_brackets(raw: bytes | str) -> bool:
    """Whether `raw` opens at most MAX_DEPTH arrays and objects, so cannot nest deeper (those in
    strings are counted too: one search each, in C, and most configs pass)."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{") <= MAX_DEPTH
    return raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH


def _has_float_within_depth(value: Any) -> bool:
    """Whether `value` holds a float; UnsafeContent when it nests deeper than MAX_DEPTH.

    One pass per level over all of that level's values, in C (map, set, compress, chain): no
    recursion, and no Python-level loop over the 150k entries of a vocabulary.
    """
    level: tuple[list[Any], list[Any]] = ([], [[value]])  # the dicts and lists at one depth
    has_float = False
    for depth in range(MAX_DEPTH + 1):
        types = list(map(type, _children(*level)))
        kinds = set(types)  # one pass; the usual last level (vocabulary, merges) is one kind
        has_float = has_float or float in kinds
        if dict not in kinds and list not in kinds:
            return has_float
        if depth == MAX_DEPTH:
            break
        level = (
            _of_type(_children(*level), types, kinds, dict),
            _of_type(_children(*level), types, kinds, list),
        )
    raise UnsafeContent(TOO_DEEP)


def _children(dicts: list[dict[Any, Any]], lists: list[list[Any]]) -> Iterator[Any]:
    return chain(chain.from_iterable(map(dict.values, dicts)), chain.from_iterable(lists))


def _of_type(values: Iterator[Any], types: list[type], kinds: set[type], kind: type) -> list[Any]:
    """The values whose type (in `types`, in the same order; `kinds` is its set) is `kind`."""
    if kind not in kinds:
        return []
    if len(kinds) == 1:
        return list(values)
    return list(compress(values, map(partial(is_, kind), types)))


def _may_hold_long_int(raw: bytes | str) -> bool:
    """Whether `raw` may hold an integer of 19 digits or more (a float may also match)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    # a cheap search in C first: most documents hold no run of 19 digits at all
    return _LONG_DIGIT_RUN in data.translate(_DIGITS) and _LONG_INT.search(data) is not None


def _loads_exact(raw: bytes | str) -> Any:
    """The standard library's parse, after a bracket scan proves it will not recurse deeply."""
    text = _decoded(raw)
    # UTF-8 bytes are scanned as they are: the text encoded again would be one more copy
    utf8 = isinstance(raw, bytes) and json.detect_encoding(raw) == "utf-8"
    scanned = raw if utf8 and isinstance(raw, bytes) else text.encode("utf-8", "surrogatepass")
    if not _depth_within(scanned):
        raise UnsafeContent(TOO_DEEP)
    del scanned
    try:
        return json.loads(
            text, parse_constant=_refuse_constant, parse_int=_bounded_int, parse_float=_finite
        )
    except json.JSONDecodeError as exc:
        raise UnsafeContent(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:  # the scan above rules it out; never let one out all the same
        raise UnsafeContent(TOO_DEEP) from None


def _decoded(raw: bytes | str) -> str:
    """Bytes decoded as `json.loads` decodes them (UTF-8, UTF-16 or UTF-32, by the first bytes)."""
    if isinstance(raw, str):
        return raw
    encoding = json.detect_encoding(raw)
    try:
        return raw.decode(encoding, "surrogatepass")
    except UnicodeDecodeError as exc:
        raise UnsafeContent(f"not valid {encoding}: {exc.reason} at byte {exc.start}") from None


def _depth_within(raw: bytes) -> bool:
    """Whether no bracket outside a string lies deeper than MAX_DEPTH, found without recursing.

    Strings are cut out (escaped backslashes and quotes first), the brackets left are made one
    kind, and each pass removes every innermost pair: a document MAX_DEPTH deep is empty after
    MAX_DEPTH passes. Unbalanced brackets (not JSON) count as deep as they are open.
    """
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Only brackets and quotes kept; two quotes side by side enclose no bracket, so dropping them
    # leaves every other bracket on its side; strings that hold brackets are rare.
    brackets = unescaped.translate(_SQUARE, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in brackets:
        brackets = b"".join(brackets.split(b'"')[::2])
    if b"[" * (MAX_DEPTH + 1) in brackets:
        return False  # the usual attack, told apart in one search
    for passes in range(MAX_DEPTH + 1):
        if b"[]" not in brackets:
            return passes + brackets.count(b"[") <= MAX_DEPTH
        brackets = brackets.replace(b"[]", b"")
    return False


def _refuse_constant(name: str) -> Any:
    raise UnsafeContent(NOT_FINITE)


def _bounded_int(literal: str) -> int:
    digits = len(literal) - literal.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise UnsafeContent(f"number too large ({digits} digits; at most {MAX_INT_DIGITS})")
    return int(literal)


def _finite(literal: str) -> float:
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise UnsafeContent(f"number too large ({literal[:30]} is beyond a 64-bit float)")
    return value

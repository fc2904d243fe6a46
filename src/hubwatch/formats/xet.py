"""Xet reconstruction terms read within limits, and which byte ranges of a file are new chunks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from hubwatch.errors import UnsafeContent
from hubwatch.formats.json import loads_bounded

MAX_TERMS = 1_000_000
"""More terms than a 64 GB file of 64 KiB chunks, each its own term, would need."""


@dataclass(frozen=True, slots=True)
class Term:
    """A run of consecutive chunks of one xorb (download-protocol.md, `CASReconstructionTerm`)."""

    xorb: str
    start: int
    """The first chunk's index in the xorb."""
    end: int
    """One past the last chunk's index (end-exclusive, as the spec's ranges are)."""
    length: int
    """The bytes the chunks unpack to (`unpacked_length`)."""


@dataclass(frozen=True, slots=True)
class Reconstruction:
    """A file as the CAS server rebuilds it."""

    offset: int
    """`offset_into_first_range`: bytes of the first term before the file starts (0 for a
    whole file)."""
    terms: tuple[Term, ...]

    @property
    def size(self) -> int:
        return sum(t.length for t in self.terms) - self.offset


def parse_reconstruction(raw: bytes) -> Reconstruction:
    """The terms of a `/v2/reconstructions/{file_id}` answer (or a v1 one: the same terms);
    UnsafeContent for anything of another shape."""
    body = loads_bounded(raw)
    terms = body.get("terms") if isinstance(body, dict) else None
    offset = body.get("offset_into_first_range", 0) if isinstance(body, dict) else None
    if not isinstance(terms, list) or not _count(offset) or len(terms) > MAX_TERMS:
        raise UnsafeContent("a reconstruction without a list of terms")
    if not isinstance(offset, int):
        raise UnsafeContent("a reconstruction without a list of terms")
    read = []
    for item in terms:
        span = item.get("range") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(span, dict):
            raise UnsafeContent("a reconstruction term of another shape")
        xorb, length = item.get("hash"), item.get("unpacked_length")
        start, end = span.get("start"), span.get("end")
        if not isinstance(xorb, str) or not all(_count(v) for v in (length, start, end)):
            raise UnsafeContent("a reconstruction term of another shape")
        if not (isinstance(start, int) and isinstance(end, int)) or end <= start:
            raise UnsafeContent("a reconstruction term with an empty chunk range")
        read.append(Term(xorb, start, end, int(length or 0)))
    return Reconstruction(int(offset), tuple(read))


def terms_json(found: Reconstruction) -> bytes:
    """`found` as the least `/v2/reconstructions` answer `parse_reconstruction` reads back:
    the offset and the terms, none of the answer's fetch URLs (signed, and short-lived)."""
    terms = [
        {"hash": t.xorb, "range": {"start": t.start, "end": t.end}, "unpacked_length": t.length}
        for t in found.terms
    ]
    body = {"offset_into_first_range": found.offset, "terms": terms}
    return json.dumps(body, separators=(",", ":")).encode()


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def new_ranges(old: Reconstruction, new: Reconstruction) -> list[tuple[int, int]]:
    """The byte ranges [start, end) of the new file made of chunks the old file does not hold.

    A term is a run of chunks whose sizes are not given one by one, so a term with one chunk
    the old file lacks counts whole: the ranges can only be wider than the changed bytes.
    """
    held = {(t.xorb, i) for t in old.terms for i in range(t.start, t.end)}
    ranges: list[tuple[int, int]] = []
    at = -new.offset
    for term in new.terms:
        begin, at = at, at + term.length
        if all((term.xorb, i) in held for i in range(term.start, term.end)):
            continue
        begin = max(begin, 0)
        if ranges and ranges[-1][1] == begin:
            ranges[-1] = (ranges[-1][0], at)
        else:
            ranges.append((begin, at))
    return ranges


def same_terms(old: Sequence[Term], new: Sequence[Term]) -> bool:
    """Whether two files are rebuilt from the very same chunks, in the same order."""
    return tuple(old) == tuple(new)

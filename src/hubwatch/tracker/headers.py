"""Reading weight-file headers (safetensors, GGUF) with range reads, never the weights."""

from __future__ import annotations

import struct

from hubwatch.errors import ContentTooLarge, ContentUnavailable, SourceError, UnsafeContent
from hubwatch.formats.gguf import (
    NeedMore,
    ParsedHeader,
    header_bytes,
    layout_problem,
    parse_header,
    to_header,
)
from hubwatch.formats.safetensors import check_header
from hubwatch.models import CommitSha, FileEntry, ReadResult, ReadStatus, RepoRef
from hubwatch.sources.base import RevisionSource

# The first read takes exactly the 8-byte length prefix and the second exactly the header:
# one request more than huggingface_hub's speculative 100 kB read, but not one byte of weights.
PREFIX = 8


def read_header(
    source: RevisionSource, repo: RepoRef, sha: CommitSha, entry: FileEntry, max_bytes: int
) -> ReadResult:
    """Read and check the JSON header of one safetensors file; never raises SourceError."""
    try:
        prefix = source.read_range(repo, sha, entry.path, 0, PREFIX)
        if len(prefix) < PREFIX:
            return ReadResult(ReadStatus.INVALID, error=f"{entry.path}: file shorter than 8 bytes")
        (length,) = struct.unpack("<Q", prefix)
        if length > max_bytes:
            return ReadResult(
                ReadStatus.OVER_CAP,
                error=f"{entry.path}: header claims {length} bytes, over the cap of {max_bytes}",
            )
        if length + PREFIX > entry.size:
            return ReadResult(
                ReadStatus.INVALID,
                error=f"{entry.path}: header claims {length} bytes but the file has {entry.size}",
            )
        body = source.read_range(repo, sha, entry.path, PREFIX, length)
        if len(body) < length:
            return ReadResult(
                ReadStatus.INVALID,
                error=f"{entry.path}: header truncated ({len(body)} of {length} bytes)",
            )
    except ContentUnavailable as exc:
        return ReadResult(ReadStatus.UNAVAILABLE, error=str(exc))
    except ContentTooLarge as exc:
        return ReadResult(ReadStatus.OVER_CAP, error=str(exc))
    except SourceError as exc:
        if not exc.per_file:
            raise  # worth retrying the whole revision rather than recording a hole
        return ReadResult(ReadStatus.ERROR, error=f"{entry.path}: {exc}")
    return ReadResult(*check_header(entry.path, body, entry.size - PREFIX - length))


# -- GGUF ------------------------------------------------------------------------------------

CHUNK = 64 * 1024
"""The first read, and the least of each further one: most headers end within it (a 150k-token
vocabulary takes a few MB, read in steps the parser's lower bounds allow)."""


def read_gguf_header(
    source: RevisionSource, repo: RepoRef, sha: CommitSha, entry: FileEntry, max_bytes: int
) -> ReadResult:
    """Read and check the header of one `.gguf` file; never raises SourceError.

    Each read starts where the last one stopped and asks for what the parser says the header
    still needs at least (never less than CHUNK), so it ends at most CHUNK bytes past the
    header and none starts in the tensor data. The data stored is the compact JSON of
    `models.gguf.GGUFHeader.to_json()`; a header that lies is INVALID with nothing stored.
    """
    try:
        parsed = _read(source, repo, sha, entry, max_bytes)
    except ContentUnavailable as exc:
        return ReadResult(ReadStatus.UNAVAILABLE, error=str(exc))
    except ContentTooLarge as exc:
        return ReadResult(ReadStatus.OVER_CAP, error=str(exc))
    except UnsafeContent as exc:
        return ReadResult(ReadStatus.INVALID, error=f"{entry.path}: {exc}")
    except SourceError as exc:
        if not exc.per_file:
            raise  # worth retrying the whole revision rather than recording a hole
        return ReadResult(ReadStatus.ERROR, error=f"{entry.path}: {exc}")
    header = to_header(parsed)
    problem = layout_problem(header, entry.size)
    if problem is not None:
        return ReadResult(ReadStatus.INVALID, error=f"{entry.path}: {problem}")
    return ReadResult(ReadStatus.STORED, data=header_bytes(header))


def _read(
    source: RevisionSource, repo: RepoRef, sha: CommitSha, entry: FileEntry, max_bytes: int
) -> ParsedHeader:
    """The parsed header; UnsafeContent for a lie, ContentTooLarge past `max_bytes`."""
    parts: list[bytes] = []
    have, want = 0, min(CHUNK, max_bytes)
    while True:
        chunk = source.read_range(repo, sha, entry.path, have, want)
        parts.append(chunk)
        have += len(chunk)
        try:
            return parse_header(b"".join(parts))
        except NeedMore as more:
            if more.at_least > max_bytes:
                raise ContentTooLarge(
                    f"{entry.path}: header needs at least {more.at_least} bytes, "
                    f"over the cap of {max_bytes}"
                ) from None
            if len(chunk) < want:  # the file ended (or the source gave up) before the header
                raise UnsafeContent(
                    f"header truncated: the file ends at byte {have}, "
                    f"the header needs at least {more.at_least}"
                ) from None
            if more.at_least > entry.size:
                raise UnsafeContent(
                    f"header needs at least {more.at_least} bytes, the file has {entry.size}"
                ) from None
            want = min(max(CHUNK, more.at_least - have), max_bytes - have)

"""Reading and checking safetensors headers with range reads, never the weights."""

from __future__ import annotations

import json
import struct

from hubwatch.errors import ContentTooLarge, ContentUnavailable, SourceError
from hubwatch.models import CommitSha, FileEntry, ReadResult, ReadStatus, RepoRef
from hubwatch.tracker.source import RevisionSource

# Most headers fit in the first 100 kB (huggingface_hub measured 97% of the top 1000 models),
# so one read usually does; a longer header costs exactly one more range read.
FIRST_READ = 100_000


def read_header(
    source: RevisionSource, repo: RepoRef, sha: CommitSha, entry: FileEntry, max_bytes: int
) -> ReadResult:
    """Read and check the JSON header of one safetensors file; never raises SourceError."""
    try:
        first = source.read_range(repo, sha, entry.path, 0, min(FIRST_READ, max(entry.size, 8)))
        if len(first) < 8:
            return ReadResult(ReadStatus.INVALID, error=f"{entry.path}: file shorter than 8 bytes")
        (length,) = struct.unpack("<Q", first[:8])
        if length > max_bytes:
            return ReadResult(
                ReadStatus.OVER_CAP,
                error=f"{entry.path}: header claims {length} bytes, over the cap of {max_bytes}",
            )
        if length + 8 > entry.size:
            return ReadResult(
                ReadStatus.INVALID,
                error=f"{entry.path}: header claims {length} bytes but the file has {entry.size}",
            )
        body = first[8 : 8 + length]
        if len(body) < length:
            body += source.read_range(repo, sha, entry.path, len(first), length + 8 - len(first))
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
    return ReadResult(*check_header(entry.path, body))


def check_header(path: str, body: bytes) -> tuple[ReadStatus, bytes, str | None]:
    """Validate a header's JSON; the bytes are kept either way, to show what was there."""
    try:
        header = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return ReadStatus.INVALID, body, f"{path}: header is not JSON ({exc})"
    if not isinstance(header, dict):
        return ReadStatus.INVALID, body, f"{path}: header is not a JSON object"
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not (
            isinstance(info, dict)
            and isinstance(info.get("dtype"), str)
            and isinstance(info.get("shape"), list)
            and isinstance(info.get("data_offsets"), list)
        ):
            problem = f"{path}: tensor {name[:80]!r} lacks dtype, shape or data_offsets"
            return ReadStatus.INVALID, body, problem
    return ReadStatus.STORED, body, None

"""Reading and checking safetensors headers with range reads, never the weights."""

from __future__ import annotations

import struct

from hubwatch.errors import ContentTooLarge, ContentUnavailable, SourceError, UnsafeContent
from hubwatch.models import CommitSha, FileEntry, ReadResult, ReadStatus, RepoRef
from hubwatch.parsing.json import loads_bounded
from hubwatch.sources.base import RevisionSource

# The first read takes exactly the 8-byte length prefix and the second exactly the header:
# one request more than huggingface_hub's speculative 100 kB read, but not one byte of weights.
PREFIX = 8
MAX_TENSORS = 200_000
"""Most tensors one header may list (one file of a 1T-parameter MoE holds a few thousand)."""
MAX_DIMS = 64
"""Most dimensions of one tensor's shape."""
MAX_DIM = 2**64
"""Each dimension is below this (safetensors writes shapes as u64)."""


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


def check_header(path: str, body: bytes, data_size: int) -> tuple[ReadStatus, bytes, str | None]:
    """Validate a header against the file it heads; the bytes are kept either way."""
    try:
        header = loads_bounded(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return ReadStatus.INVALID, body, f"{path}: header is not UTF-8 (byte {exc.start})"
    except UnsafeContent as exc:  # not JSON, nested too deep, a number over its limit
        return ReadStatus.INVALID, body, f"{path}: header: {exc}"
    if not isinstance(header, dict):
        return ReadStatus.INVALID, body, f"{path}: header is not a JSON object"
    tensors = len(header) - ("__metadata__" in header)
    if tensors > MAX_TENSORS:
        many = f"{path}: header lists too many tensors ({tensors}; at most {MAX_TENSORS})"
        return ReadStatus.INVALID, body, many
    for name, info in header.items():
        problem = None if name == "__metadata__" else _tensor_problem(name, info, data_size)
        if problem:
            return ReadStatus.INVALID, body, f"{path}: {problem}"
    return ReadStatus.STORED, body, None


def _tensor_problem(name: str, info: object, data_size: int) -> str | None:
    """What makes one tensor's entry impossible in a file with `data_size` bytes of data."""
    if not (
        isinstance(info, dict)
        and isinstance(info.get("dtype"), str)
        and isinstance(info.get("shape"), list)
        and isinstance(info.get("data_offsets"), list)
    ):
        return f"tensor {name[:80]!r} lacks dtype, shape or data_offsets"
    offsets = info["data_offsets"]
    if not (
        len(offsets) == 2
        and all(isinstance(o, int) for o in offsets)
        and 0 <= offsets[0] <= offsets[1] <= data_size
    ):
        return (
            f"tensor {name[:80]!r} has data_offsets {str(offsets)[:60]} outside "
            f"the {data_size} bytes of data"
        )
    # NOTE: the product of many or huge dimensions takes minutes; safetensors writes them as u64
    shape = info["shape"]
    if len(shape) > MAX_DIMS:
        return f"tensor {name[:80]!r} has too many dimensions ({len(shape)}; at most {MAX_DIMS})"
    huge = [d for d in shape if isinstance(d, int) and d >= MAX_DIM]
    if huge:
        digits = len(str(huge[0]))
        return f"tensor {name[:80]!r} has a dimension too large ({digits} digits; at most 2**64-1)"
    return None

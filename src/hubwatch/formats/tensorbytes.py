"""Where each tensor's bytes lie in a weight file (safetensors `data_offsets`, GGUF tensor-info
offsets), and a digest of each tensor's bytes when the whole file is in hand."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping
from typing import Any

from hubwatch.errors import UnsafeContent
from hubwatch.formats.gguf import NeedMore, layout_problem, parse_header, to_header
from hubwatch.formats.json import loads_bounded
from hubwatch.formats.safetensors import check_header
from hubwatch.models import ReadStatus
from hubwatch.models.gguf import GGUFHeader, is_gguf

Extent = tuple[str, int, int]
"""A tensor's name and its bytes in the file, [start, end)."""


def safetensors_extents(
    header: Mapping[str, Any], file_size: int, data_start: int | None = None
) -> list[Extent]:
    """Each tensor's bytes in a safetensors file, in file order. The data section starts after
    the 8-byte length and the header; where that length is not at hand (`data_start` None), the
    data section ends the file (the header was checked against the file's size), so it starts
    at size - data size."""
    spans = []
    for name, info in header.items():
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if name != "__metadata__" and isinstance(offsets, list) and len(offsets) == 2:
            spans.append((name, int(offsets[0]), int(offsets[1])))
    base = data_start
    if base is None:
        base = file_size - max((end for _, _, end in spans), default=0)
    return sorted(((n, base + s, base + e) for n, s, e in spans), key=lambda x: x[1])


def gguf_extents(header: GGUFHeader) -> list[Extent]:
    """Each tensor's bytes in a GGUF file, in file order: at the data section's start (the
    header's end, aligned to `general.alignment`) plus its offset, as long as its ggml type and
    shape make it (`nbytes`, from gguf's GGML_QUANT_SIZES when the header was read)."""
    base = header.data_offset
    spans = ((t.name, base + t.offset, base + t.offset + t.nbytes) for t in header.tensors)
    return sorted(spans, key=lambda x: x[1])


def file_extents(path: str, blob: bytes) -> list[Extent]:
    """The tensors of a whole weight file in hand, from its own header; UnsafeContent when the
    header is not one hubwatch reads, or lies about where the data lies."""
    if is_gguf(path):
        try:
            header = to_header(parse_header(blob))
        except NeedMore:
            raise UnsafeContent("the GGUF header runs past the end of the file") from None
        problem = layout_problem(header, len(blob))
        if problem is not None:
            raise UnsafeContent(problem)
        return gguf_extents(header)
    if len(blob) < 8:
        raise UnsafeContent("a safetensors file shorter than 8 bytes")
    (length,) = struct.unpack_from("<Q", blob)
    if 8 + length > len(blob):
        raise UnsafeContent(f"the header claims {length} bytes, the file has {len(blob)}")
    status, body, error = check_header(path, blob[8 : 8 + length], len(blob) - 8 - length)
    if status is not ReadStatus.STORED:
        raise UnsafeContent(error or "a safetensors header hubwatch does not read")
    parsed = loads_bounded(body)
    if not isinstance(parsed, dict):
        raise UnsafeContent("a safetensors header that is not an object")
    return safetensors_extents(parsed, len(blob), 8 + length)


def tensor_digests(path: str, blob: bytes) -> bytes:
    """The sha256 of each tensor's bytes in a whole weight file, as compact JSON
    (`[[name, start, end, sha256], ...]`, file order): what `read_digests` reads back to compare
    two files tensor by tensor, exactly, once the files themselves are gone."""
    rows = [
        [name, start, end, hashlib.sha256(blob[start:end]).hexdigest()]
        for name, start, end in file_extents(path, blob)
    ]
    return json.dumps(rows, separators=(",", ":")).encode()


def read_digests(raw: bytes) -> dict[str, tuple[int, int, str]]:
    """`tensor_digests`' JSON by tensor name: (start, end, sha256); UnsafeContent otherwise."""
    rows = loads_bounded(raw)
    if not isinstance(rows, list):
        raise UnsafeContent("tensor digests that are not a list")
    found = {}
    for row in rows:
        if not (isinstance(row, list) and len(row) == 4 and isinstance(row[0], str)):
            raise UnsafeContent("a tensor digest of another shape")
        name, start, end, sha = row
        if not (isinstance(start, int) and isinstance(end, int) and isinstance(sha, str)):
            raise UnsafeContent("a tensor digest of another shape")
        found[name] = (start, end, sha)
    return found

"""Build RevisionViews for differ tests from plain dicts: path → content or weight file."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from hubwatch.caching import Memo
from hubwatch.formats.view import RevisionView
from hubwatch.models import FileEntry, ReadResult, ReadStatus

BASE_CONFIG: dict[str, Any] = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
_DTYPE_BYTES = {"F32": 4, "BF16": 2, "F16": 2, "I8": 1}


@dataclass(frozen=True)
class Weights:
    """A weight file: its safetensors header (None: unavailable, e.g. an LFS pointer) and oid."""

    tensors: dict[str, tuple[str, list[int]]] = field(default_factory=dict)
    oid: str = "0" * 64
    header_available: bool = True

    def header(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        offset = 0
        for name, (dtype, shape) in self.tensors.items():
            size = math.prod(shape) * _DTYPE_BYTES[dtype]
            out[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
            offset += size
        return out

    def size(self) -> int:
        return (
            sum(math.prod(shape) * _DTYPE_BYTES[dtype] for dtype, shape in self.tensors.values())
            or 1000
        )


def view(
    files: dict[str, Any], card: dict[str, object] | None = None, memo: Memo | None = None
) -> RevisionView:
    """A revision holding `files`: bytes, str, JSON values, or Weights; `memo` shared with
    other views (a fresh one if None)."""
    entries, contents, headers = [], {}, {}
    for path, value in files.items():
        if isinstance(value, Weights):
            entries.append(FileEntry(path, value.size(), _sha1(value.oid.encode()), value.oid))
            if path.endswith(".safetensors"):
                headers[path] = (
                    ReadResult(ReadStatus.STORED, data=json.dumps(value.header()).encode())
                    if value.header_available
                    else ReadResult(ReadStatus.UNAVAILABLE, error="LFS pointer")
                )
            continue
        if isinstance(value, bytes):
            data = value
        elif isinstance(value, str):
            data = value.encode()
        else:
            data = json.dumps(value, indent=2).encode()
        entries.append(FileEntry(path, len(data), _sha1(data)))
        contents[path] = ReadResult(ReadStatus.STORED, data=data)
    return RevisionView(entries, contents, headers, card, memo=memo)


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()

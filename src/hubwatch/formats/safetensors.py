"""safetensors files: a header's checks against the file it heads, and weight indexes (the shard
files an index's weight_map names, and the tensors in each)."""

from __future__ import annotations

import math
import posixpath
from typing import Any

from hubwatch.errors import UnsafeContent
from hubwatch.formats.json import loads_bounded
from hubwatch.formats.view import RevisionView
from hubwatch.models import ReadStatus

INDEX_SUFFIXES = (".safetensors.index.json", ".bin.index.json")
MAX_TENSORS = 200_000
"""Most tensors one header may list (one file of a 1T-parameter MoE holds a few thousand)."""
MAX_DIMS = 64
"""Most dimensions of one tensor's shape."""
MAX_DIM = 2**64
"""Each dimension is below this (safetensors writes shapes as u64)."""


def index_map(index: Any, index_path: str) -> dict[str, list[str]]:
    """Shard path (beside the index) → the tensors `index`'s weight_map puts in it; {} when the
    parsed index has no weight_map to read."""
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    shards: dict[str, list[str]] = {}
    if isinstance(weight_map, dict):
        folder = posixpath.dirname(index_path)
        for tensor, shard in weight_map.items():
            name = str(shard)  # beside a root index: the name as it is (what join gives)
            shards.setdefault(posixpath.join(folder, name) if folder else name, []).append(tensor)
    return shards


def index_shards(view: RevisionView, index_path: str) -> dict[str, list[str]]:
    """`index_map` of an index file of `view`."""
    return index_map(view.json(index_path), index_path)


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
    overlap = _overlap(header)
    if overlap:
        return ReadStatus.INVALID, body, f"{path}: {overlap}"
    return ReadStatus.STORED, body, None


BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}  # fmt: skip
"""Bits per element of each dtype the safetensors format names (its Rust crate's `Dtype`); a
tensor of another dtype is not checked against its bytes."""


def _overlap(header: dict[str, Any]) -> str | None:
    """Two tensors whose bytes overlap, which no writer makes: the sizes lie."""
    spans = sorted(
        (info["data_offsets"][0], info["data_offsets"][1], name)
        for name, info in header.items()
        if name != "__metadata__"
    )
    for (_, end, first), (begin, stop, second) in zip(spans, spans[1:], strict=False):
        if begin < end and stop > begin:
            return f"tensors {first[:60]!r} and {second[:60]!r} share bytes (data_offsets overlap)"
    return None


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
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        return f"tensor {name[:80]!r} has a shape {str(shape)[:60]} that is not whole numbers"
    huge = [d for d in shape if d >= MAX_DIM]
    if huge:
        digits = len(str(huge[0]))
        return f"tensor {name[:80]!r} has a dimension too large ({digits} digits; at most 2**64-1)"
    bits = BITS.get(info["dtype"])
    if bits is not None:  # its bytes are its elements, at the dtype's width
        need = (math.prod(shape) * bits + 7) // 8
        if need != offsets[1] - offsets[0]:
            return (
                f"tensor {name[:80]!r} ({info['dtype']}, shape {str(shape)[:60]}) needs {need} "
                f"bytes, but its data_offsets hold {offsets[1] - offsets[0]}"
            )
    return None

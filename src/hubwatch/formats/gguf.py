"""GGUF headers (key-value metadata and tensor infos) parsed from a file's first bytes, bounded.

The only module of hubwatch that imports `gguf` (llama.cpp's package): the format's value types,
quantization types and their block sizes come from it, never re-typed here. `gguf.GGUFReader` is
not used: it memory-maps whole files and trusts every count. This reader checks each count against
the limits and the bytes in hand before it allocates anything, and says how many bytes it needs
(`NeedMore`) when the buffer ends before the header does, so a caller can grow a range read.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from gguf import (
    GGML_QUANT_SIZES,
    GGUF_DEFAULT_ALIGNMENT,
    GGUF_MAGIC,
    GGMLQuantizationType,
    GGUFReader,
    GGUFValueType,
    Keys,
)

from hubwatch.errors import UnsafeContent
from hubwatch.models.gguf import GGUFHeader, GGUFTensor

VERSIONS = (2, 3)
"""GGUF versions read (version 1 had 32-bit counts; llama.cpp dropped it)."""
MAX_DIMS = 4
"""ggml's GGML_MAX_DIMS (ggml.h): a tensor has at most 4 dimensions."""
_MAX_INT64 = 2**63 - 1
# Fixed-size value types by their numpy scalar type, as gguf's own reader decodes them.
_SCALARS: dict[GGUFValueType, np.dtype[Any]] = {
    kind: np.dtype(scalar).newbyteorder("<")
    for kind, scalar in GGUFReader.gguf_scalar_to_np.items()
}
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_PREAMBLE = 24
"""Magic, version, tensor count and key-value count."""
_MIN_KV = 12
"""A key-value pair's least bytes: the key's length (u64) and the value's type (u32)."""
_MIN_TENSOR = 24
"""A tensor info's least bytes: name length (u64), dimension count (u32), type (u32), offset."""
_MIN_ARRAY = 12
"""An array value's least bytes: its element type (u32) and count (u64)."""


@dataclass(frozen=True, slots=True)
class HeaderLimits:
    """What one GGUF header may hold; anything more is refused as UnsafeContent."""

    max_kv: int = 65_536
    """Key-value pairs (real files hold 20 to 60)."""
    max_tensors: int = 200_000
    """Tensor infos (one file of a 1T-parameter MoE holds a few thousand)."""
    max_array: int = 1 << 22
    """Elements of one array (the largest vocabularies and merge lists hold about 260k)."""
    max_string: int = 16 << 20
    """Bytes of one string (chat templates reach tens of kB)."""
    max_depth: int = 2
    """Arrays nested in one another (an array of arrays is 2)."""


class NeedMore(Exception):
    """The buffer ends before the header does; the header is at least `at_least` bytes."""

    def __init__(self, at_least: int) -> None:
        super().__init__(f"the header needs at least {at_least} bytes")
        self.at_least = at_least


class TensorInfo(NamedTuple):
    """One tensor info, fields in `models.gguf.GGUFTensor`'s order."""

    name: str
    shape: tuple[int, ...]
    type: str
    offset: int
    elements: int
    nbytes: int


@dataclass(frozen=True, slots=True)
class ParsedHeader:
    """A GGUF header as read; `to_header` turns it into `models.gguf.GGUFHeader`."""

    version: int
    alignment: int
    data_offset: int
    """Where the tensor data starts: the header's end, padded to `alignment`."""
    metadata: dict[str, Any]
    """Key → value in file order; arrays as lists, non-finite floats as Python floats."""
    tensors: tuple[TensorInfo, ...]


def parse_header(buf: bytes, limits: HeaderLimits | None = None) -> ParsedHeader:
    """The header at the start of `buf`, a GGUF file's first bytes.

    Raises NeedMore when `buf` ends before the header does, and UnsafeContent, its message the
    reason, when the bytes are not a GGUF header hubwatch reads or break `limits`.
    """
    reader = _Reader(buf, limits or HeaderLimits())
    version, n_tensors, n_kv = reader.preamble()
    metadata = reader.metadata(n_kv, n_tensors)
    alignment = _alignment(metadata)
    tensors = reader.tensors(n_tensors, alignment)
    data_offset = -(-reader.pos // alignment) * alignment
    return ParsedHeader(version, alignment, data_offset, metadata, tensors)


def _alignment(metadata: dict[str, Any]) -> int:
    value = metadata.get(Keys.General.ALIGNMENT, GGUF_DEFAULT_ALIGNMENT)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0 or value & (value - 1):
        raise UnsafeContent(f"{Keys.General.ALIGNMENT} is {str(value)[:40]}, not a power of two")
    return value


class _Reader:
    """A cursor over `buf`; `tail` is the least number of bytes still due after the current item."""

    def __init__(self, buf: bytes, limits: HeaderLimits) -> None:
        self.buf = buf
        self.end = len(buf)
        self.limits = limits
        self.pos = 0
        self.tail = 0

    def need(self, n: int, after: int = 0) -> None:
        """Make sure `n` bytes follow; else NeedMore, counting `after` more due past them."""
        if self.pos + n > self.end:
            raise NeedMore(self.pos + n + after + self.tail)

    def u32(self) -> int:
        self.need(4)
        (value,) = _U32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return int(value)

    def u64(self) -> int:
        self.need(8)
        (value,) = _U64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return int(value)

    def raw_string(self, what: str, after: int = 0) -> bytes:
        """A string's bytes; `after`: bytes due after it, within the current item."""
        self.need(8, after)
        (length,) = _U64.unpack_from(self.buf, self.pos)
        if length > self.limits.max_string:
            raise UnsafeContent(
                f"{what} claims {length} bytes (at most {self.limits.max_string} per string)"
            )
        self.pos += 8
        self.need(length, after)
        data = self.buf[self.pos : self.pos + length]
        self.pos += length
        return data

    def preamble(self) -> tuple[int, int, int]:
        """(version, tensor count, key-value count)."""
        magic = _U32.pack(GGUF_MAGIC)
        if self.buf[:4] != magic[: min(self.end, 4)]:
            raise UnsafeContent(f"not a GGUF file (starts with {bytes(self.buf[:4])!r})")
        self.need(_PREAMBLE)
        self.pos = 4
        version = self.u32()
        if version not in VERSIONS:
            swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
            if swapped in VERSIONS:
                raise UnsafeContent(f"a big-endian GGUF (version {swapped}): only little-endian")
            raise UnsafeContent(f"GGUF version {version} (only versions 2 and 3 are read)")
        n_tensors, n_kv = self.u64(), self.u64()
        if n_tensors > self.limits.max_tensors:
            raise UnsafeContent(
                f"header claims {n_tensors} tensors (at most {self.limits.max_tensors})"
            )
        if n_kv > self.limits.max_kv:
            raise UnsafeContent(
                f"header claims {n_kv} metadata keys (at most {self.limits.max_kv})"
            )
        return version, n_tensors, n_kv

    def metadata(self, n_kv: int, n_tensors: int) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for i in range(n_kv):
            self.tail = _MIN_KV * (n_kv - i - 1) + _MIN_TENSOR * n_tensors
            raw = self.raw_string("a metadata key", after=4)
            try:
                key = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UnsafeContent(
                    f"metadata key {i} is not UTF-8 (byte {exc.start}): {raw[:40]!r}"
                ) from None
            if key in found:
                raise UnsafeContent(f"duplicate metadata key {key[:80]!r}")
            found[key] = self.value(self._type(key), key, 1)
        return found

    def _type(self, where: str) -> GGUFValueType:
        code = self.u32()
        try:
            return GGUFValueType(code)
        except ValueError:
            raise UnsafeContent(f"{where[:80]!r} has an unknown value type {code}") from None

    def value(self, kind: GGUFValueType, key: str, depth: int) -> Any:
        scalar = _SCALARS.get(kind)
        if scalar is not None:
            self.need(scalar.itemsize)
            item = np.frombuffer(self.buf, scalar, 1, self.pos)[0].item()
            self.pos += scalar.itemsize
            return item
        if kind == GGUFValueType.STRING:
            return self.raw_string(f"{key[:80]!r}").decode("utf-8", "replace")
        if depth > self.limits.max_depth:
            raise UnsafeContent(
                f"{key[:80]!r} nests arrays deeper than {self.limits.max_depth} levels"
            )
        return self.array(key, depth)

    def array(self, key: str, depth: int) -> list[Any]:
        kind = self._type(key)
        count = self.u64()
        if count > self.limits.max_array:
            raise UnsafeContent(
                f"{key[:80]!r} claims {count} elements (at most {self.limits.max_array})"
            )
        scalar = _SCALARS.get(kind)
        if scalar is not None:
            self.need(count * scalar.itemsize)
            values: list[Any] = np.frombuffer(self.buf, scalar, count, self.pos).tolist()
            self.pos += count * scalar.itemsize
            return values
        least = 8 if kind == GGUFValueType.STRING else _MIN_ARRAY
        self.need(least * count)  # before a list grows from the count
        outer, items = self.tail, []
        for i in range(count):
            self.tail = outer + least * (count - i - 1)
            items.append(self.value(kind, key, depth + 1))
        self.tail = outer
        return items

    def tensors(self, n_tensors: int, alignment: int) -> tuple[TensorInfo, ...]:
        infos, names = [], set()
        for i in range(n_tensors):
            self.tail = _MIN_TENSOR * (n_tensors - i - 1)
            raw = self.raw_string("a tensor name", after=16)
            name = raw.decode("utf-8", "replace")
            if name in names:
                raise UnsafeContent(f"duplicate tensor {name[:80]!r}")
            names.add(name)
            infos.append(self.tensor(name, alignment))
        self.tail = 0
        return tuple(infos)

    def tensor(self, name: str, alignment: int) -> TensorInfo:
        dims = self.u32()
        if dims > MAX_DIMS:
            raise UnsafeContent(f"tensor {name[:80]!r} has {dims} dimensions (at most {MAX_DIMS})")
        self.need(8 * dims, after=12)
        shape = tuple(self.u64() for _ in range(dims))
        code, offset = self.u32(), self.u64()
        elements = math.prod(shape)  # at most 4 factors below 2**64: cheap whatever they are
        if any(d > _MAX_INT64 for d in shape) or elements > _MAX_INT64:
            raise UnsafeContent(f"tensor {name[:80]!r} has a shape too large: {list(shape)}")
        try:
            quant = GGMLQuantizationType(code)
            block, size = GGML_QUANT_SIZES[quant]
        except (ValueError, KeyError):
            raise UnsafeContent(f"tensor {name[:80]!r} has an unknown ggml type {code}") from None
        if shape and shape[0] % block:
            raise UnsafeContent(
                f"tensor {name[:80]!r}: {quant.name} packs blocks of {block} values, "
                f"its first dimension is {shape[0]}"
            )
        if offset % alignment:
            raise UnsafeContent(
                f"tensor {name[:80]!r} starts at {offset}, not a multiple of {alignment}"
            )
        return TensorInfo(name, shape, quant.name, offset, elements, elements // block * size)


def to_header(parsed: ParsedHeader) -> GGUFHeader:
    """The stored form (`models.gguf`) of a parsed header."""
    return GGUFHeader(
        parsed.version,
        parsed.alignment,
        parsed.data_offset,
        parsed.metadata,
        tuple(GGUFTensor(*info) for info in parsed.tensors),
    )


def header_bytes(header: GGUFHeader) -> bytes:
    """Compact JSON of the stored form: identical headers give identical bytes."""
    return json.dumps(
        header.to_json(), ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode("utf-8")


def layout_problem(header: GGUFHeader, file_size: int) -> str | None:
    """What makes the tensors' layout impossible in a file of `file_size` bytes, which no writer
    makes (the header lies about its sizes): data past the end, two tensors sharing bytes, or an
    offset off the alignment llama.cpp requires."""
    spans = sorted((t.offset, t.offset + t.nbytes, t.name) for t in header.tensors)
    end = header.data_offset + max((stop for _, stop, _ in spans), default=0)
    if end > file_size:
        return f"tensor data would end at byte {end}, the file has {file_size}"
    for offset, _, name in spans:
        if offset % header.alignment:
            align = header.alignment
            return f"tensor {name[:60]!r} at offset {offset}, off the {align}-byte alignment"
    for (_, stop, first), (begin, _, second) in zip(spans, spans[1:], strict=False):
        if begin < stop:
            return f"tensors {first[:60]!r} and {second[:60]!r} share bytes (offsets overlap)"
    return None

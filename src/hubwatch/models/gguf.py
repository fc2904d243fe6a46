"""GGUF headers as hubwatch stores them, and split files (`-00001-of-00003.gguf`) read as one model.

A `.gguf` file's header is recorded like a safetensors header: as JSON (`GGUFHeader.to_json`) in
the snapshot's `headers`, content-addressed, so an unchanged header costs nothing. Reading the
bytes is `tracker/headers.py`'s work, through `formats/gguf.py` (the only importer of `gguf`); what
is here is plain data every layer may read: the differs, the estimator, lineage.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

GGUF_SUFFIX = ".gguf"
FORMAT = "gguf"
"""The `format` field of a stored GGUF header (safetensors headers have none)."""

_SPLIT = re.compile(r"^(?P<stem>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)
# How llama.cpp's quantize and the usual uploaders (bartowski, unsloth, lmstudio-community,
# TheBloke) name a file's quantization: the last dash- or dot-separated part of the stem.
_QUANT = re.compile(
    r"(?:^|[-_.])(?P<q>(?:UD-)?(?:I?Q[1-8](?:_[0-9A-Z]+)*|TQ[12]_0|MXFP4(?:_MOE)?|BF16|F16|F32|FP16))$",
    re.IGNORECASE,
)


def is_gguf(path: str) -> bool:
    """Whether `path` is a GGUF file whose header is recorded."""
    return path.lower().endswith(GGUF_SUFFIX)


def json_value(value: Any) -> Any:
    """A metadata value as stored JSON holds it: non-finite floats as the strings "nan", "inf"
    and "-inf" (JSON has no such numbers), tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    return value


def architecture(metadata: Mapping[str, Any]) -> str | None:
    """`general.architecture` (llama, qwen3, gemma3…), the prefix of the model's own keys."""
    arch = metadata.get("general.architecture")
    return arch if isinstance(arch, str) else None


def arch_value(metadata: Mapping[str, Any], key: str) -> Any:
    """`<architecture>.<key>` (`context_length`, `rope.freq_base`…), or None."""
    arch = architecture(metadata)
    return metadata.get(f"{arch}.{key}") if arch else None


class _ArchitectureKeys:
    """The architecture-prefixed keys of a header's or a model's metadata."""

    __slots__ = ()
    metadata: Mapping[str, Any]

    @property
    def architecture(self) -> str | None:
        return architecture(self.metadata)

    def arch_value(self, key: str) -> Any:
        """`<architecture>.<key>` (`context_length`, `rope.freq_base`…), or None."""
        return arch_value(self.metadata, key)


@dataclass(frozen=True, slots=True)
class GGUFTensor:
    """One tensor info of a GGUF header (never its data)."""

    name: str
    shape: tuple[int, ...]
    """Dimensions in GGUF order (ggml's: the fastest-varying first)."""
    type: str
    """The ggml type's name as `gguf.GGMLQuantizationType` spells it: F32, F16, BF16, Q4_K, Q8_0…"""
    offset: int
    """Offset of the data from the start of the tensor data section."""
    elements: int
    nbytes: int
    """Bytes of data at this type (its block size and type size, from `gguf.GGML_QUANT_SIZES`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": list(self.shape),
            "type": self.type,
            "offset": self.offset,
            "elements": self.elements,
            "nbytes": self.nbytes,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GGUFTensor:
        return cls(
            str(data["name"]),
            tuple(int(d) for d in data["shape"]),
            str(data["type"]),
            int(data["offset"]),
            int(data["elements"]),
            int(data["nbytes"]),
        )


@dataclass(frozen=True, slots=True)
class GGUFHeader(_ArchitectureKeys):
    """One GGUF file's header: its key-value metadata and tensor infos."""

    version: int
    alignment: int
    data_offset: int
    """Where the tensor data starts (the header's size, padded to `alignment`)."""
    metadata: Mapping[str, Any]
    """Key → value in file order; arrays as lists (`tokenizer.ggml.tokens`, `…merges`…)."""
    tensors: tuple[GGUFTensor, ...]

    def to_json(self) -> dict[str, Any]:
        """The stored form; identical headers give identical JSON (key order is the file's)."""
        return {
            "format": FORMAT,
            "version": self.version,
            "alignment": self.alignment,
            "data_offset": self.data_offset,
            "metadata": {key: json_value(value) for key, value in self.metadata.items()},
            "tensors": [tensor.to_json() for tensor in self.tensors],
        }

    @classmethod
    def from_json(cls, data: object) -> GGUFHeader | None:
        """The header stored as `data`, or None when `data` is not a stored GGUF header."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            return None
        try:
            return cls(
                int(data["version"]),
                int(data["alignment"]),
                int(data["data_offset"]),
                dict(data["metadata"]),
                tuple(GGUFTensor.from_json(t) for t in data["tensors"]),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class GGUFModel(_ArchitectureKeys):
    """One model as a user loads it: a single `.gguf` file, or every part of a split one."""

    name: str
    """The file's path, or for a split model the path of its first part's stem (`dir/x.gguf`
    for `dir/x-00001-of-00003.gguf`)."""
    parts: tuple[str, ...]
    """The file paths, in part order."""
    quantization: str | None
    """The quantization the file name says (`Q4_K_M`, `IQ2_XXS`, `BF16`), upper-case; else None."""
    metadata: Mapping[str, Any]
    """The first part's metadata (llama.cpp's gguf-split writes the model's keys there)."""
    tensors: tuple[GGUFTensor, ...]
    """Every part's tensors, in part order."""
    missing: tuple[str, ...] = ()
    """Parts whose header is unread (not stored, over a cap) or absent from the tree."""

    @property
    def nbytes(self) -> int:
        return sum(tensor.nbytes for tensor in self.tensors)

    @property
    def elements(self) -> int:
        return sum(tensor.elements for tensor in self.tensors)


def split_part(path: str) -> tuple[str, int, int] | None:
    """(model name, part number, part count) of a split file's path; None for a single file."""
    directory, base = posixpath.split(path)
    match = _SPLIT.match(base)
    if match is None:
        return None
    name = posixpath.join(directory, match["stem"] + GGUF_SUFFIX)
    return name, int(match["no"]), int(match["count"])


def quantization_of(name: str) -> str | None:
    """The quantization a GGUF file name states (`Llama-3-8B-Q4_K_M.gguf` → `Q4_K_M`)."""
    stem = posixpath.basename(name)[: -len(GGUF_SUFFIX)] if is_gguf(name) else name
    match = _QUANT.search(stem)
    return match["q"].upper() if match else None


def group_models(
    paths: Sequence[str], headers: Mapping[str, GGUFHeader | None]
) -> dict[str, GGUFModel]:
    """Every GGUF model of a revision by name, split parts joined; `headers` by file path.

    A split model whose parts are not all present or read still appears, with what could be
    read and the rest in `missing`.
    """
    parts: dict[str, dict[int, str]] = {}
    counts: dict[str, int] = {}
    for path in sorted(p for p in paths if is_gguf(p)):
        split = split_part(path)
        name, no, count = split if split else (path, 1, 1)
        parts.setdefault(name, {})[no] = path
        counts[name] = max(counts.get(name, 1), count)
    models = {}
    for name, numbered in parts.items():
        ordered = [numbered.get(no) for no in range(1, counts[name] + 1)]
        present = [p for p in ordered if p is not None]
        read = [(p, headers.get(p)) for p in present]
        missing = [
            p or f"part {i + 1} of {counts[name]}"
            for i, p in enumerate(ordered)
            if p is None or headers.get(p) is None
        ]
        first = next((h for _, h in read if h is not None), None)
        models[name] = GGUFModel(
            name,
            tuple(present),
            quantization_of(name),
            dict(first.metadata) if first else {},
            tuple(t for _, h in read if h is not None for t in h.tensors),
            tuple(missing),
        )
    return models

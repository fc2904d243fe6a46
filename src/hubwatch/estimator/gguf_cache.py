"""The KV cache llama.cpp allocates for a GGUF model, from its header's metadata alone.

Per layer, llama.cpp caches one K row of `head_count_kv · key_length` and one V row of
`head_count_kv · value_length` elements per token (`llama_hparams::n_embd_k_gqa`), at the cache
type (`--cache-type-k/-v`, f16 by default), each row padded to whole quantization blocks
(`ggml_row_size`). Sliding-window layers (gemma2/3, cohere2) keep only their window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KV_TYPES: dict[str, tuple[int, int]] = {
    "f32": (1, 4),
    "f16": (1, 2),
    "bf16": (1, 2),
    "q8_0": (32, 34),
    "q4_0": (32, 18),
}
"""Cache types llama.cpp accepts for K and V: (elements per block, bytes per block)."""
DEFAULT_KV = "f16"
"""llama.cpp's default `--cache-type-k` and `--cache-type-v`."""

# NOTE: llama.cpp's `hparams.set_swa_pattern(n)` per architecture (src/llama-model.cpp): layer
# il slides when il % n < n - 1; gemma2 alternates, gemma3 keeps one global layer in six.
SWA_PATTERNS = {"gemma2": 2, "gemma3": 6, "cohere2": 4}
MAX_LAYERS = 100_000
"""More layers than this (a lying header) are refused, not iterated."""
MAX_COUNT = 2**32
"""GGUF stores these counts as uint32 (the context as uint32 or uint64, capped here too): more
is a lying header, refused before a figure outgrows a float."""


class NoCache(ValueError):
    """The metadata does not say enough to size the KV cache; the message says what is missing."""


@dataclass(frozen=True, slots=True)
class CacheLayout:
    """Cached elements per token of each layer, and which layers slide."""

    k: tuple[int, ...]
    """K elements per token, per layer."""
    v: tuple[int, ...]
    window: tuple[int | None, ...]
    """The sliding window of each layer; None for layers that keep the whole context."""
    notes: tuple[str, ...] = ()

    def layer_bytes(self, layer: int, tokens: int, kv_type: str = DEFAULT_KV) -> int:
        """Bytes layer `layer` caches for one sequence of `tokens` tokens at `kv_type`."""
        window = self.window[layer]
        kept = min(tokens, window) if window else tokens
        return kept * (_row(self.k[layer], kv_type) + _row(self.v[layer], kv_type))

    def bytes(self, tokens: int, kv_type: str = DEFAULT_KV) -> int:
        """Bytes the whole cache holds for one sequence of `tokens` tokens at `kv_type`."""
        return sum(self.layer_bytes(i, tokens, kv_type) for i in range(len(self.k)))

    def per_token(self, kv_type: str = DEFAULT_KV) -> int:
        """Bytes one more token adds, before any sliding window fills."""
        return sum(_row(k, kv_type) + _row(v, kv_type) for k, v in zip(self.k, self.v, strict=True))


def _row(elements: int, kv_type: str) -> int:
    block, size = KV_TYPES[kv_type]
    return math.ceil(elements / block) * size


def _count(value: Any, what: str, *, zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        raise NoCache(f"{what} is {str(value)[:40]!r}, not a {'count' if zero else 'size'}")
    if value > MAX_COUNT:
        raise NoCache(f"{what} {str(value)[:24]} is over {MAX_COUNT}")
    return value


def _per_layer(value: Any, layers: int, what: str) -> list[int]:
    """A count given once or per layer (`head_count_kv` may be an array: hybrids, OpenELM)."""
    if isinstance(value, list):
        if len(value) != layers:
            raise NoCache(f"{what} has {len(value)} entries for {layers} layers")
        return [_count(v, what, zero=True) for v in value]
    return [_count(value, what, zero=True)] * layers


def layout(arch: str | None, metadata: Mapping[str, Any]) -> CacheLayout:
    """The cache layout the metadata implies; NoCache saying what is missing."""
    if not arch:
        raise NoCache("general.architecture is missing")

    def get(key: str) -> Any:
        return metadata.get(f"{arch}.{key}")

    if get("block_count") is None:
        raise NoCache(f"{arch}.block_count is missing")
    layers = _count(get("block_count"), f"{arch}.block_count")
    if layers > MAX_LAYERS:
        raise NoCache(f"{arch}.block_count {layers} is over {MAX_LAYERS}")
    heads_raw = get("attention.head_count")
    if heads_raw is None:
        raise NoCache(f"{arch}.attention.head_count is missing")
    heads = _per_layer(heads_raw, layers, f"{arch}.attention.head_count")
    kv_raw = get("attention.head_count_kv")
    kv_heads = (
        heads if kv_raw is None else _per_layer(kv_raw, layers, f"{arch}.attention.head_count_kv")
    )
    # NOTE: llama.cpp derives the head size from the first layer's head count (n_head(0)).
    k_len, v_len = _head_lengths(arch, get, heads[0])
    notes = []
    if kv_raw is None:
        notes.append(f"{arch}.attention.head_count_kv absent: one KV head per query head (MHA)")
    if any(key.startswith(f"{arch}.ssm.") or key.startswith(f"{arch}.wkv.") for key in metadata):
        notes.append("recurrent (SSM/RWKV) state is not counted, only the attention layers' cache")
    window = _windows(arch, get, layers, notes)
    return CacheLayout(
        tuple(n * k_len for n in kv_heads),
        tuple(n * v_len for n in kv_heads),
        window,
        tuple(notes),
    )


def _head_lengths(arch: str, get: Any, heads: int) -> tuple[int, int]:
    """(key_length, value_length): as stated, else embedding_length / head_count (llama.cpp's
    default for both)."""
    key, value = get("attention.key_length"), get("attention.value_length")
    if key is None or value is None:
        embedding = get("embedding_length")
        if embedding is None:
            raise NoCache(f"{arch}.attention.key_length and {arch}.embedding_length are missing")
        width = _count(embedding, f"{arch}.embedding_length")
        if heads == 0 or width % heads:
            raise NoCache(f"{arch}.embedding_length {width} is not divisible by {heads} heads")
        key = width // heads if key is None else key
        value = width // heads if value is None else value
    return _count(key, f"{arch}.attention.key_length"), _count(
        value, f"{arch}.attention.value_length"
    )


def _windows(arch: str, get: Any, layers: int, notes: list[str]) -> tuple[int | None, ...]:
    """Each layer's sliding window: the stated pattern (an int n or one bool per layer), else
    llama.cpp's pattern for the architecture; every layer full when neither is known."""
    size = get("attention.sliding_window")
    if size is None:
        return (None,) * layers
    window = _count(size, f"{arch}.attention.sliding_window")
    pattern = get("attention.sliding_window_pattern")
    if isinstance(pattern, list):
        if len(pattern) != layers:
            raise NoCache(f"{arch}.attention.sliding_window_pattern has {len(pattern)} entries")
        slides = [bool(p) for p in pattern]
    else:
        n = SWA_PATTERNS.get(arch) if pattern is None else _count(pattern, "sliding_window_pattern")
        if n is None:
            notes.append(
                f"{arch}.attention.sliding_window is {window}, but how llama.cpp applies it to "
                f"{arch} is not known here: every layer counted at the full context"
            )
            return (None,) * layers
        slides = [i % n < n - 1 for i in range(layers)]
    notes.append(
        f"sliding window {window} on {sum(slides)} of {layers} layers: they keep only their "
        "window (llama.cpp pads it by a micro-batch; --swa-full keeps everything)"
    )
    return tuple(window if s else None for s in slides)

"""GGUF headers written by hand, in the stored form (`models.gguf`), for the estimator's tests.

Tensor names and shapes are llama.cpp's (GGUF order: the fastest-varying dimension first); the
bytes of each tensor come from the ggml block sizes below, written from ggml's type traits:
Q4_K 256 weights in 144 bytes, Q6_K 256 in 210, Q8_0 32 in 34, F16 2 bytes, F32 4.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hubwatch.models.gguf import GGUFHeader, GGUFTensor

BLOCKS = {"F32": (1, 4), "F16": (1, 2), "Q8_0": (32, 34), "Q4_K": (256, 144), "Q6_K": (256, 210)}


def tensor(name: str, shape: tuple[int, ...], type_: str = "F16") -> GGUFTensor:
    elements = math.prod(shape)
    block, size = BLOCKS[type_]
    return GGUFTensor(name, shape, type_, 0, elements, elements // block * size)


def header(metadata: dict[str, Any], tensors: list[GGUFTensor]) -> GGUFHeader:
    return GGUFHeader(3, 32, 4096, metadata, tuple(tensors))


def stored(h: GGUFHeader) -> bytes:
    """The bytes `Snapshot.headers[path].data` holds for a GGUF file."""
    return json.dumps(h.to_json()).encode()


# llama-3.1-8B: 32 blocks, hidden 4096, 32 heads, 8 KV heads of 128, FFN 14336, vocab 128256.
LLAMA_META: dict[str, Any] = {
    "general.architecture": "llama",
    "general.name": "Meta Llama 3.1 8B Instruct",
    "llama.block_count": 32,
    "llama.context_length": 131072,
    "llama.embedding_length": 4096,
    "llama.feed_forward_length": 14336,
    "llama.attention.head_count": 32,
    "llama.attention.head_count_kv": 8,
    "llama.rope.freq_base": 500000.0,
    "llama.vocab_size": 128256,
}


def llama_tensors(mix: str = "F16", blocks: int = 32) -> list[GGUFTensor]:
    """llama-3.1-8B's tensors; mix "Q4_K_M" puts attn_v, ffn_down and output at Q6_K and the
    other matrices at Q4_K (norms and rope_freqs stay F32), else every matrix at `mix`."""

    def t(name: str, shape: tuple[int, ...], big: bool = False) -> GGUFTensor:
        if len(shape) == 1:
            return tensor(name, shape, "F32")
        if mix == "Q4_K_M":
            return tensor(name, shape, "Q6_K" if big else "Q4_K")
        return tensor(name, shape, mix)

    out = [
        t("token_embd.weight", (4096, 128256)),
        tensor("rope_freqs.weight", (64,), "F32"),
    ]
    for i in range(blocks):
        out += [
            t(f"blk.{i}.attn_norm.weight", (4096,)),
            t(f"blk.{i}.attn_q.weight", (4096, 4096)),
            t(f"blk.{i}.attn_k.weight", (4096, 1024)),
            t(f"blk.{i}.attn_v.weight", (4096, 1024), big=True),
            t(f"blk.{i}.attn_output.weight", (4096, 4096)),
            t(f"blk.{i}.ffn_norm.weight", (4096,)),
            t(f"blk.{i}.ffn_gate.weight", (4096, 14336)),
            t(f"blk.{i}.ffn_up.weight", (4096, 14336)),
            t(f"blk.{i}.ffn_down.weight", (14336, 4096), big=True),
        ]
    out += [t("output_norm.weight", (4096,)), t("output.weight", (4096, 128256), big=True)]
    return out


def llama(mix: str = "F16") -> GGUFHeader:
    return header(dict(LLAMA_META), llama_tensors(mix))


# Qwen3-30B-A3B: 48 blocks, hidden 2048, 32 heads and 4 KV heads of 128, 128 experts of 768
# (8 used per token), vocab 151936, untied head.
def qwen3moe() -> GGUFHeader:
    meta = {
        "general.architecture": "qwen3moe",
        "qwen3moe.block_count": 48,
        "qwen3moe.context_length": 40960,
        "qwen3moe.embedding_length": 2048,
        "qwen3moe.attention.head_count": 32,
        "qwen3moe.attention.head_count_kv": 4,
        "qwen3moe.attention.key_length": 128,
        "qwen3moe.attention.value_length": 128,
        "qwen3moe.expert_count": 128,
        "qwen3moe.expert_used_count": 8,
        "qwen3moe.expert_feed_forward_length": 768,
    }
    out = [tensor("token_embd.weight", (2048, 151936))]
    for i in range(48):
        out += [
            tensor(f"blk.{i}.attn_norm.weight", (2048,), "F32"),
            tensor(f"blk.{i}.attn_q.weight", (2048, 4096)),
            tensor(f"blk.{i}.attn_k.weight", (2048, 512)),
            tensor(f"blk.{i}.attn_v.weight", (2048, 512)),
            tensor(f"blk.{i}.attn_output.weight", (4096, 2048)),
            tensor(f"blk.{i}.attn_q_norm.weight", (128,), "F32"),
            tensor(f"blk.{i}.attn_k_norm.weight", (128,), "F32"),
            tensor(f"blk.{i}.ffn_norm.weight", (2048,), "F32"),
            tensor(f"blk.{i}.ffn_gate_inp.weight", (2048, 128), "F32"),
            tensor(f"blk.{i}.ffn_gate_exps.weight", (2048, 768, 128)),
            tensor(f"blk.{i}.ffn_up_exps.weight", (2048, 768, 128)),
            tensor(f"blk.{i}.ffn_down_exps.weight", (768, 2048, 128)),
        ]
    out += [
        tensor("output_norm.weight", (2048,), "F32"),
        tensor("output.weight", (2048, 151936)),
    ]
    return header(meta, out)


def gemma(arch: str, blocks: int, window: int, context: int, **extra: Any) -> GGUFHeader:
    """A gemma2/gemma3-shaped header: 8 heads, 4 KV heads of 256, hidden 2304, tied head."""
    meta = {
        "general.architecture": arch,
        f"{arch}.block_count": blocks,
        f"{arch}.context_length": context,
        f"{arch}.embedding_length": 2304,
        f"{arch}.attention.head_count": 8,
        f"{arch}.attention.head_count_kv": 4,
        f"{arch}.attention.key_length": 256,
        f"{arch}.attention.value_length": 256,
        f"{arch}.attention.sliding_window": window,
    } | {f"{arch}.{k}": v for k, v in extra.items()}
    out = [tensor("token_embd.weight", (2304, 256000))]
    for i in range(blocks):
        out += [
            tensor(f"blk.{i}.attn_q.weight", (2304, 2048)),
            tensor(f"blk.{i}.attn_k.weight", (2304, 1024)),
            tensor(f"blk.{i}.attn_v.weight", (2304, 1024)),
        ]
    return header(meta, out)

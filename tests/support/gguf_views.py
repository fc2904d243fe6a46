"""GGUF headers built by hand (llama.cpp's key names, a small llama layout) and RevisionViews that
hold them as the tracker stores them: `json.dumps(header.to_json())` in the view's headers."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from hubwatch.formats.view import RevisionView
from hubwatch.models import FileEntry, ReadResult, ReadStatus
from hubwatch.models.gguf import GGUFHeader, GGUFTensor

# Bytes per element, as ggml's block sizes make them (Q4_K: 144 bytes per 256 elements…).
_BYTES = {"F32": 4.0, "F16": 2.0, "BF16": 2.0, "Q8_0": 34 / 32, "Q6_K": 210 / 256,
          "Q5_K": 176 / 256, "Q4_K": 144 / 256, "Q4_0": 18 / 32}  # fmt: skip

TOKENS = [
    "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|eom_id|>", "<|finetune_pad|>",
    "a", "b", "c", "ab", "abc", "Ġthe", "Ġcapital",
]  # fmt: skip
"""A tiny Llama-3-like vocabulary: ids 0-4 are special (control) tokens."""
TYPES = [3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1]
MERGES = ["a b", "ab c", "Ġ t", "Ġt he"]
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>"
    "\n\n{{ m['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def tensor(name: str, shape: list[int], ggml_type: str = "Q4_K") -> GGUFTensor:
    elements = math.prod(shape)
    return GGUFTensor(
        name, tuple(shape), ggml_type, 0, elements, math.ceil(elements * _BYTES[ggml_type])
    )


def llama_tensors(layers: int = 2, types: dict[str, str] | None = None) -> list[GGUFTensor]:
    """A llama layout (hidden 64, ffn 128, 12 tokens), Q4_K_M-like: ffn_down Q6_K, norms F32."""
    kinds = {"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q6_K", "attn_output": "Q4_K",
             "ffn_gate": "Q4_K", "ffn_up": "Q4_K", "ffn_down": "Q6_K", "attn_norm": "F32",
             "ffn_norm": "F32"} | (types or {})  # fmt: skip
    shapes = {"attn_q": [64, 64], "attn_k": [64, 32], "attn_v": [64, 32], "attn_output": [64, 64],
              "ffn_gate": [64, 128], "ffn_up": [64, 128], "ffn_down": [128, 64],
              "attn_norm": [64], "ffn_norm": [64]}  # fmt: skip
    out = [tensor("token_embd.weight", [64, 12], "Q4_K")]
    for layer in range(layers):
        out += [tensor(f"blk.{layer}.{k}.weight", shapes[k], kinds[k]) for k in shapes]
    return out + [
        tensor("output_norm.weight", [64], "F32"),
        tensor("output.weight", [64, 12], "Q6_K"),
    ]


def metadata(**over: Any) -> dict[str, Any]:
    """Llama-3.1-8B-Instruct-like metadata (shrunk), with keys replaced or (value None) dropped."""
    base: dict[str, Any] = {
        "general.architecture": "llama",
        "general.name": "Llama 3.1 8B Instruct",
        "general.file_type": 15,
        "general.quantization_version": 2,
        "llama.block_count": 2,
        "llama.context_length": 131072,
        "llama.embedding_length": 64,
        "llama.feed_forward_length": 128,
        "llama.attention.head_count": 4,
        "llama.attention.head_count_kv": 2,
        "llama.rope.freq_base": 500000.0,
        "llama.rope.dimension_count": 16,
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "llama-bpe",
        "tokenizer.ggml.tokens": TOKENS,
        "tokenizer.ggml.token_type": TYPES,
        "tokenizer.ggml.merges": MERGES,
        "tokenizer.ggml.bos_token_id": 0,
        "tokenizer.ggml.eos_token_id": 2,
        "tokenizer.ggml.padding_token_id": 4,
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.chat_template": TEMPLATE,
    }
    merged = {**base, **over}
    return {k: v for k, v in merged.items() if v is not None}


def header(tensors: list[GGUFTensor] | None = None, **over: Any) -> GGUFHeader:
    return GGUFHeader(3, 32, 4096, metadata(**over), tuple(tensors or llama_tensors()))


@dataclass(frozen=True)
class GGUF:
    """A GGUF file of a revision: its header (None: unread) and its LFS object id."""

    header: GGUFHeader | None
    oid: str = "a" * 64


def gguf_view(files: dict[str, GGUF | str]) -> RevisionView:
    """A revision holding GGUF files (and small text files), their headers as stored."""
    entries, contents, headers = [], {}, {}
    for path, value in files.items():
        if isinstance(value, str):
            data = value.encode()
            entries.append(FileEntry(path, len(data), hashlib.sha1(data).hexdigest()))
            contents[path] = ReadResult(ReadStatus.STORED, data=data)
            continue
        blob = hashlib.sha1(value.oid.encode()).hexdigest()
        entries.append(FileEntry(path, 5_000_000_000, blob, value.oid))
        headers[path] = (
            ReadResult(ReadStatus.STORED, data=json.dumps(value.header.to_json()).encode())
            if value.header is not None
            else ReadResult(ReadStatus.UNAVAILABLE, error="header not read")
        )
    return RevisionView(entries, contents, headers)

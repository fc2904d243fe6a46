"""Build real GGUF files with llama.cpp's own writer (`gguf.GGUFWriter`) for tests and benchmarks.

Each family's metadata follows what llama.cpp's convert_hf_to_gguf.py writes for it (key names,
value types, tokenizer layout); tensors are small, their data bytes a constant (`fill`), so a
re-upload is the same metadata with another `fill`. Shapes are in GGUF (ggml) order: the
fastest-varying dimension first, as the parsed header reports them.

    files = {"m-Q4_K_M.gguf": llama3_gguf(), "m-Q8_0.gguf": llama3_gguf(default_type="Q8_0")}
    make_repo(git_dir, [CommitSpec(files)], lfs_dir=lfs_dir)   # served as LFS files by the hubsim
"""

from __future__ import annotations

import math
import struct
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType, GGUFWriter

Metadata = dict[str, Any]

LLAMA3_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{%- endif %}"
)
CHATML_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + ('model' if "
    "message['role'] == 'assistant' else message['role']) + '\\n' + message['content'] | trim + "
    "'<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}"
    "{% endif %}"
)
LLAMA3_SPECIALS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
)
QWEN_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
GEMMA_SPECIALS = ("<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>")
# Value types for keys whose Python value does not say it (llama.cpp writes these as such).
_TYPES: dict[str, GGUFValueType] = {"general.quantization_version": GGUFValueType.UINT32}


@dataclass(frozen=True)
class TensorSpec:
    """One tensor to write: its data is `fill` repeated (vary it for a re-upload)."""

    name: str
    shape: tuple[int, ...]
    """GGUF order: the fastest-varying dimension first (ggml's `ne`); shape[0] a multiple of the
    type's block size (256 for the K-quants, 32 for Q8_0/Q4_0)."""
    type: str = "F32"
    """A `gguf.GGMLQuantizationType` name: F32, F16, BF16, Q4_K, Q6_K, Q8_0, IQ4_XS…"""
    fill: int = 0
    data: bytes | None = None
    """The tensor's bytes (`nbytes` of them), instead of `fill` repeated: random data, so that
    content-defined chunking cuts it as it cuts real weights."""

    @property
    def nbytes(self) -> int:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType[self.type]]
        return math.prod(self.shape) // block * size


def vocabulary(regular: int, specials: Sequence[str] = ()) -> list[str]:
    """`regular` distinct byte-level tokens (`Ġw123`-like), then `specials`, in id order."""
    return [f"\u0120w{i}" if i % 2 else f"t{i}" for i in range(regular)] + list(specials)


def merges_for(regular: int) -> list[str]:
    """A merge list (`"a b"` pairs) of about `regular` entries over `vocabulary(regular)`."""
    return [f"t{i} \u0120w{i + 1}" for i in range(0, max(regular - 1, 0), 1)]


def gguf_file(arch: str, metadata: Mapping[str, Any], tensors: Sequence[TensorSpec]) -> bytes:
    """One GGUF file: `general.architecture` = `arch`, then `metadata` in order, then `tensors`.

    Value types follow the Python values: int → UINT32, float → FLOAT32, bool, str, and lists of
    str → STRING, int → INT32, float → FLOAT32 (as llama.cpp writes token types and scores).
    """
    return next(iter(_write(arch, metadata, tensors, "model.gguf", 0).values()))


def gguf_split(
    name: str, arch: str, metadata: Mapping[str, Any], tensors: Sequence[TensorSpec], parts: int
) -> dict[str, bytes]:
    """A model split as llama.cpp's gguf-split does: {`<stem>-0000N-of-0000M.gguf`: bytes}.

    `name` is the unsplit file name (`Llama-Q4_K_M.gguf`); the first part holds the metadata and
    every part `split.no`, `split.count` and `split.tensors.count`.
    """
    per_part = -(-len(tensors) // parts)
    return _write(arch, metadata, tensors, name, per_part)


def _write(
    arch: str, metadata: Mapping[str, Any], tensors: Sequence[TensorSpec], name: str, split: int
) -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        writer = GGUFWriter(Path(tmp) / Path(name).name, arch, split_max_tensors=split)
        for key, value in metadata.items():
            vtype, sub = _value_type(key, value)
            writer.add_key_value(key, value, vtype, sub)
        for spec in tensors:
            block, size = GGML_QUANT_SIZES[GGMLQuantizationType[spec.type]]
            rows = tuple(reversed(spec.shape[1:]))  # numpy order: the slowest dimension first
            data = np.full((*rows, spec.shape[0] // block * size), spec.fill, dtype=np.uint8)
            if spec.data is not None:
                data = np.frombuffer(spec.data, np.uint8).reshape(data.shape)
            writer.add_tensor(spec.name, data, raw_dtype=GGMLQuantizationType[spec.type])
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        return {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir())}


def _value_type(key: str, value: Any) -> tuple[GGUFValueType, GGUFValueType | None]:
    if key in _TYPES:
        return _TYPES[key], None
    if isinstance(value, list):
        item = _value_type(key, value[0])[0]
        return GGUFValueType.ARRAY, GGUFValueType.INT32 if item == GGUFValueType.UINT32 else item
    if isinstance(value, bool):
        return GGUFValueType.BOOL, None
    if isinstance(value, int):
        return GGUFValueType.UINT32, None
    return GGUFValueType.get_type(value), None


def dense_tensors(
    *,
    blocks: int = 2,
    hidden: int = 256,
    ffn: int = 512,
    vocab_rows: int = 512,
    default_type: str = "Q4_K",
    types: Mapping[str, str] | None = None,
    fill: int = 0,
    output: bool = True,
) -> list[TensorSpec]:
    """A llama-like tower: token_embd, per block attn_q/k/v/output, ffn_gate/up/down and norms,
    output_norm and output. `types` overrides the type of single tensors by name (norms are F32;
    `output.weight` defaults to Q6_K as in llama.cpp's Q4_K_M mix)."""
    types = dict(types or {})
    specs = [("token_embd.weight", (hidden, vocab_rows), default_type)]
    for b in range(blocks):
        p = f"blk.{b}."
        specs += [
            (p + "attn_norm.weight", (hidden,), "F32"),
            (p + "attn_q.weight", (hidden, hidden), default_type),
            (p + "attn_k.weight", (hidden, hidden // 2), default_type),
            (p + "attn_v.weight", (hidden, hidden // 2), default_type),
            (p + "attn_output.weight", (hidden, hidden), default_type),
            (p + "ffn_norm.weight", (hidden,), "F32"),
            (p + "ffn_gate.weight", (hidden, ffn), default_type),
            (p + "ffn_up.weight", (hidden, ffn), default_type),
            (p + "ffn_down.weight", (ffn, hidden), default_type),
        ]
    specs.append(("output_norm.weight", (hidden,), "F32"))
    if output:
        specs.append(("output.weight", (hidden, vocab_rows), "Q6_K"))
    return [TensorSpec(n, s, types.get(n, t), fill) for n, s, t in specs]


def moe_tensors(
    *,
    blocks: int = 2,
    hidden: int = 256,
    expert_ffn: int = 256,
    experts: int = 4,
    vocab_rows: int = 512,
    default_type: str = "Q4_K",
    types: Mapping[str, str] | None = None,
    fill: int = 0,
) -> list[TensorSpec]:
    """A qwen3moe-like tower: attention as `dense_tensors`, then a router (`ffn_gate_inp`) and
    stacked experts (`ffn_gate_exps`, `ffn_up_exps`, `ffn_down_exps`, 3-D) per block."""
    types = dict(types or {})
    dense = dense_tensors(
        blocks=blocks, hidden=hidden, vocab_rows=vocab_rows, default_type=default_type, fill=fill
    )
    specs = [t for t in dense if ".ffn_gate." not in t.name and ".ffn_up." not in t.name]
    specs = [t for t in specs if ".ffn_down." not in t.name]
    for b in range(blocks):
        p = f"blk.{b}."
        up, down = (hidden, expert_ffn, experts), (expert_ffn, hidden, experts)
        specs += [
            TensorSpec(p + "ffn_gate_inp.weight", (hidden, experts), "F32", fill),
            TensorSpec(p + "ffn_gate_exps.weight", up, default_type, fill),
            TensorSpec(p + "ffn_up_exps.weight", up, default_type, fill),
            TensorSpec(p + "ffn_down_exps.weight", down, default_type, fill),
        ]
    return [TensorSpec(t.name, t.shape, types.get(t.name, t.type), t.fill) for t in specs]


def _general(name: str, file_type: int) -> Metadata:
    """`general.*` as convert_hf_to_gguf.py and llama-quantize leave them."""
    return {
        "general.type": "model",
        "general.name": name,
        "general.file_type": file_type,
        "general.quantization_version": 2,
    }


def _bpe(model: str, pre: str, tokens: list[str], merges: list[str], specials: int) -> Metadata:
    """A gpt2-style tokenizer: tokens, types (the last `specials` are CONTROL = 3), merges."""
    types = [1] * (len(tokens) - specials) + [3] * specials
    return {
        "tokenizer.ggml.model": model,
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": merges,
    }


def llama3_metadata(
    *,
    name: str = "Llama 3 8B Instruct",
    regular: int = 507,
    tokens: list[str] | None = None,
    merges: list[str] | None = None,
    bos_id: int | None = None,
    eos_id: int | None = None,
    chat_template: str | None = LLAMA3_TEMPLATE,
    context: int = 8192,
    rope_base: float = 500000.0,
    blocks: int = 2,
    hidden: int = 256,
    ffn: int = 512,
    heads: int = 8,
    kv_heads: int = 4,
    file_type: int = 15,
) -> Metadata:
    """llama-3 as convert_hf_to_gguf.py writes it: gpt2 tokenizer with `pre` llama-bpe, bos
    `<|begin_of_text|>` (id `regular`), eos `<|eot_id|>` (id `regular + 4`), file_type 15 (Q4_K_M).

    `tokens`/`merges` replace the generated vocabulary (`vocabulary(regular, LLAMA3_SPECIALS)`).
    """
    tokens = tokens if tokens is not None else vocabulary(regular, LLAMA3_SPECIALS)
    found: Metadata = {
        **_general(name, file_type),
        "llama.block_count": blocks,
        "llama.context_length": context,
        "llama.embedding_length": hidden,
        "llama.feed_forward_length": ffn,
        "llama.attention.head_count": heads,
        "llama.attention.head_count_kv": kv_heads,
        "llama.rope.freq_base": rope_base,
        "llama.attention.layer_norm_rms_epsilon": 1e-05,
        "llama.vocab_size": len(tokens),
        "llama.rope.dimension_count": hidden // heads,
        **_bpe("gpt2", "llama-bpe", tokens, merges or merges_for(regular), len(LLAMA3_SPECIALS)),
        "tokenizer.ggml.bos_token_id": regular if bos_id is None else bos_id,
        "tokenizer.ggml.eos_token_id": regular + 4 if eos_id is None else eos_id,
    }
    if chat_template is not None:
        found["tokenizer.chat_template"] = chat_template
    return found


def qwen_metadata(
    *,
    arch: str = "qwen2",
    name: str = "Qwen2.5 7B Instruct",
    regular: int = 509,
    tokens: list[str] | None = None,
    merges: list[str] | None = None,
    eos_id: int | None = None,
    chat_template: str | None = CHATML_TEMPLATE,
    context: int = 32768,
    rope_base: float = 1000000.0,
    blocks: int = 2,
    hidden: int = 256,
    ffn: int = 512,
    heads: int = 8,
    kv_heads: int = 2,
    experts: int | None = None,
    experts_used: int | None = None,
    file_type: int = 15,
) -> Metadata:
    """qwen2 / qwen3 / qwen3moe (`arch`): gpt2 tokenizer with `pre` qwen2, `<|endoftext|>` (id
    `regular`) as bos and padding, `<|im_end|>` (id `regular + 2`) as eos, add_bos_token false.
    qwen3 adds attention.key_length/value_length; qwen3moe (give `experts`) expert_count,
    expert_used_count and expert_feed_forward_length."""
    tokens = tokens if tokens is not None else vocabulary(regular, QWEN_SPECIALS)
    found: Metadata = {
        **_general(name, file_type),
        f"{arch}.block_count": blocks,
        f"{arch}.context_length": context,
        f"{arch}.embedding_length": hidden,
        f"{arch}.feed_forward_length": ffn,
        f"{arch}.attention.head_count": heads,
        f"{arch}.attention.head_count_kv": kv_heads,
        f"{arch}.rope.freq_base": rope_base,
        f"{arch}.attention.layer_norm_rms_epsilon": 1e-06,
    }
    if arch != "qwen2":
        found[f"{arch}.attention.key_length"] = hidden // heads
        found[f"{arch}.attention.value_length"] = hidden // heads
    if experts is not None:
        found[f"{arch}.expert_count"] = experts
        found[f"{arch}.expert_used_count"] = experts_used or 2
        found[f"{arch}.expert_feed_forward_length"] = 256
    found.update(_bpe("gpt2", "qwen2", tokens, merges or merges_for(regular), len(QWEN_SPECIALS)))
    found["tokenizer.ggml.bos_token_id"] = regular
    found["tokenizer.ggml.eos_token_id"] = regular + 2 if eos_id is None else eos_id
    found["tokenizer.ggml.padding_token_id"] = regular
    found["tokenizer.ggml.add_bos_token"] = False
    if chat_template is not None:
        found["tokenizer.chat_template"] = chat_template
    return found


def gemma_metadata(
    *,
    arch: str = "gemma2",
    name: str = "Gemma 2 9B It",
    regular: int = 506,
    tokens: list[str] | None = None,
    eos_id: int | None = None,
    chat_template: str | None = GEMMA_TEMPLATE,
    context: int = 8192,
    sliding_window: int = 4096,
    rope_base: float = 10000.0,
    blocks: int = 2,
    hidden: int = 256,
    ffn: int = 512,
    heads: int = 8,
    kv_heads: int = 4,
    file_type: int = 7,
) -> Metadata:
    """gemma2 / gemma3 (`arch`): a sentencepiece (`llama`) tokenizer with scores and token types,
    specials first-found at `regular` (`<pad>`, `<eos>` id `regular + 1`, `<bos>` id
    `regular + 2`…), sliding window; gemma2 its logit soft-capping, gemma3 rope.freq_base."""
    tokens = tokens if tokens is not None else vocabulary(regular, GEMMA_SPECIALS)
    specials = len(tokens) - regular
    found: Metadata = {
        **_general(name, file_type),
        f"{arch}.context_length": context,
        f"{arch}.embedding_length": hidden,
        f"{arch}.block_count": blocks,
        f"{arch}.feed_forward_length": ffn,
        f"{arch}.attention.head_count": heads,
        f"{arch}.attention.head_count_kv": kv_heads,
        f"{arch}.attention.layer_norm_rms_epsilon": 1e-06,
        f"{arch}.attention.key_length": hidden // heads,
        f"{arch}.attention.value_length": hidden // heads,
        f"{arch}.attention.sliding_window": sliding_window,
    }
    if arch == "gemma2":
        found["gemma2.attn_logit_softcapping"] = 50.0
        found["gemma2.final_logit_softcapping"] = 30.0
    else:
        found[f"{arch}.rope.freq_base"] = rope_base
    found["tokenizer.ggml.model"] = "llama"
    found["tokenizer.ggml.tokens"] = tokens
    found["tokenizer.ggml.scores"] = [-float(i) for i in range(regular)] + [0.0] * specials
    found["tokenizer.ggml.token_type"] = [1] * regular + [3] * specials
    found["tokenizer.ggml.bos_token_id"] = regular + 2
    found["tokenizer.ggml.eos_token_id"] = regular + 1 if eos_id is None else eos_id
    found["tokenizer.ggml.unknown_token_id"] = regular + 3
    found["tokenizer.ggml.padding_token_id"] = regular
    found["tokenizer.ggml.add_bos_token"] = True
    found["tokenizer.ggml.add_eos_token"] = False
    if chat_template is not None:
        found["tokenizer.chat_template"] = chat_template
    return found


FAMILIES: dict[str, tuple[str, Callable[..., Metadata]]] = {
    "llama": ("llama", llama3_metadata),
    "qwen2": ("qwen2", lambda **kw: qwen_metadata(arch="qwen2", **kw)),
    "qwen3": ("qwen3", lambda **kw: qwen_metadata(arch="qwen3", **kw)),
    "qwen3moe": ("qwen3moe", lambda **kw: qwen_metadata(arch="qwen3moe", experts=4, **kw)),
    "gemma2": ("gemma2", lambda **kw: gemma_metadata(arch="gemma2", **kw)),
    "gemma3": ("gemma3", lambda **kw: gemma_metadata(arch="gemma3", **kw)),
}
"""family → (general.architecture, metadata builder)."""


def model_gguf(
    family: str = "llama",
    *,
    default_type: str = "Q4_K",
    types: Mapping[str, str] | None = None,
    fill: int = 0,
    vocab_rows: int | None = None,
    extra: Mapping[str, Any] | None = None,
    drop: Sequence[str] = (),
    **params: Any,
) -> bytes:
    """One file of `family` (a FAMILIES key): its metadata builder called with `params`
    (chat_template, eos_id, context, rope_base, tokens, merges…), `extra` keys added or
    replaced and `drop` keys removed; tensors from `dense_tensors` (or `moe_tensors` for
    qwen3moe) with `default_type`, per-tensor `types`, `fill` (another fill: a re-upload)
    and `vocab_rows` (default: the vocabulary's size, at most 1024 rows to keep files small).
    """
    arch, build = FAMILIES[family]
    metadata = {**build(**params), **(extra or {})}
    for key in drop:
        metadata.pop(key, None)
    rows = vocab_rows or min(len(metadata["tokenizer.ggml.tokens"]), 1024)
    make = moe_tensors if family == "qwen3moe" else dense_tensors
    hidden = int(metadata.get(f"{arch}.embedding_length", 256))
    tensors = make(
        hidden=hidden, vocab_rows=rows, default_type=default_type, types=types, fill=fill
    )
    return gguf_file(arch, metadata, tensors)


def llama3_gguf(**kw: Any) -> bytes:
    """`model_gguf("llama", **kw)`: a llama-3 Q4_K_M-like file."""
    return model_gguf("llama", **kw)


# -- raw bytes, for headers GGUFWriter refuses to write (lies, unknown types, big-endian) ---------


def raw_string(text: str | bytes, length: int | None = None) -> bytes:
    """A GGUF string: u64 length (`length` to lie about it), then the bytes."""
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(data) if length is None else length) + data


def raw_kv(key: str | bytes, vtype: int, value: bytes) -> bytes:
    """One key-value pair: the key, the value type's code, then `value` already packed."""
    return raw_string(key) + struct.pack("<I", vtype) + value


def raw_array(item_type: int, items: bytes, count: int) -> bytes:
    """An array value (after its ARRAY type code): element type, `count`, packed `items`."""
    return struct.pack("<IQ", item_type, count) + items


def raw_tensor(name: str, shape: Sequence[int], ggml_type: int, offset: int) -> bytes:
    """One tensor info: name, dimension count, dimensions (GGUF order), type code, offset."""
    dims = struct.pack(f"<I{len(shape)}Q", len(shape), *shape)
    return raw_string(name) + dims + struct.pack("<IQ", ggml_type, offset)


def raw_gguf(
    kvs: Sequence[bytes] = (),
    tensors: Sequence[bytes] = (),
    *,
    n_kv: int | None = None,
    n_tensors: int | None = None,
    version: int = 3,
    magic: bytes = b"GGUF",
    data: bytes = b"",
    big_endian: bool = False,
) -> bytes:
    """A GGUF file from raw parts; the counts default to the parts' and may lie. The header is
    padded to 32 bytes and followed by `data`."""
    order = ">" if big_endian else "<"
    head = magic + struct.pack(
        f"{order}IQQ",
        version,
        n_tensors if n_tensors is not None else len(tensors),
        n_kv if n_kv is not None else len(kvs),
    )
    header = head + b"".join(kvs) + b"".join(tensors)
    return header + bytes(-len(header) % 32) + data

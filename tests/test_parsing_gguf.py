"""formats/gguf.py: real headers of each family, lies refused with their reason, NeedMore bounds."""

from __future__ import annotations

import re
import struct

import pytest
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hubwatch.errors import UnsafeContent
from hubwatch.formats.gguf import HeaderLimits, NeedMore, parse_header
from tests.support.gguf_files import (
    CHATML_TEMPLATE,
    GEMMA_TEMPLATE,
    LLAMA3_TEMPLATE,
    gguf_split,
    llama3_gguf,
    llama3_metadata,
    model_gguf,
    raw_array,
    raw_gguf,
    raw_kv,
    raw_string,
    raw_tensor,
)

U32 = struct.Struct("<I")


def test_llama3_file_parses_to_its_metadata_and_tensors() -> None:
    header = parse_header(llama3_gguf())
    meta = header.metadata
    assert header.version == 3 and header.alignment == 32
    assert list(meta)[:4] == [
        "general.architecture",
        "general.type",
        "general.name",
        "general.file_type",
    ]
    assert meta["general.architecture"] == "llama"
    assert meta["general.name"] == "Llama 3 8B Instruct"
    assert meta["general.file_type"] == 15 and meta["general.quantization_version"] == 2
    assert meta["llama.context_length"] == 8192
    assert meta["llama.rope.freq_base"] == 500000.0
    assert meta["llama.attention.head_count"] == 8
    assert meta["llama.attention.head_count_kv"] == 4
    assert meta["llama.block_count"] == 2 and meta["llama.embedding_length"] == 256
    assert meta["llama.feed_forward_length"] == 512 and meta["llama.vocab_size"] == 512
    assert meta["tokenizer.ggml.model"] == "gpt2" and meta["tokenizer.ggml.pre"] == "llama-bpe"
    tokens = meta["tokenizer.ggml.tokens"]
    assert len(tokens) == 512 and tokens[:2] == ["t0", "\u0120w1"]
    assert tokens[507] == "<|begin_of_text|>" and tokens[511] == "<|eot_id|>"
    assert meta["tokenizer.ggml.token_type"][506:508] == [1, 3]
    assert meta["tokenizer.ggml.merges"][:2] == ["t0 \u0120w1", "t1 \u0120w2"]
    assert len(meta["tokenizer.ggml.merges"]) == 506
    assert meta["tokenizer.ggml.bos_token_id"] == 507
    assert meta["tokenizer.ggml.eos_token_id"] == 511
    assert meta["tokenizer.chat_template"] == LLAMA3_TEMPLATE
    # token_embd, 2 blocks of 9, output_norm, output
    assert len(header.tensors) == 21
    embd, norm = header.tensors[0], header.tensors[1]
    assert (embd.name, embd.shape, embd.type) == ("token_embd.weight", (256, 512), "Q4_K")
    assert (embd.offset, embd.elements, embd.nbytes) == (0, 131072, 73728)  # 512 blocks x 144
    assert (norm.name, norm.shape, norm.type) == ("blk.0.attn_norm.weight", (256,), "F32")
    assert (norm.offset, norm.nbytes) == (73728, 1024)
    output = header.tensors[-1]
    assert (output.name, output.type, output.nbytes) == ("output.weight", "Q6_K", 512 * 210)
    assert header.data_offset % 32 == 0


@pytest.mark.parametrize(
    ("family", "arch", "keys", "template"),
    [
        (
            "qwen2",
            "qwen2",
            {"qwen2.context_length": 32768, "qwen2.rope.freq_base": 1000000.0},
            CHATML_TEMPLATE,
        ),
        (
            "qwen3",
            "qwen3",
            {"qwen3.attention.key_length": 32, "tokenizer.ggml.add_bos_token": False},
            CHATML_TEMPLATE,
        ),
        (
            "qwen3moe",
            "qwen3moe",
            {"qwen3moe.expert_count": 4, "qwen3moe.expert_used_count": 2},
            CHATML_TEMPLATE,
        ),
        (
            "gemma2",
            "gemma2",
            {
                "gemma2.attention.sliding_window": 4096,
                "gemma2.final_logit_softcapping": 30.0,
                "tokenizer.ggml.model": "llama",
                "tokenizer.ggml.eos_token_id": 507,
                "tokenizer.ggml.bos_token_id": 508,
            },
            GEMMA_TEMPLATE,
        ),
        (
            "gemma3",
            "gemma3",
            {"gemma3.rope.freq_base": 10000.0, "gemma3.attention.sliding_window": 4096},
            GEMMA_TEMPLATE,
        ),
    ],
)
def test_each_family_parses_to_its_keys(
    family: str, arch: str, keys: dict[str, object], template: str
) -> None:
    meta = parse_header(model_gguf(family)).metadata
    assert meta["general.architecture"] == arch
    assert {k: meta[k] for k in keys} == keys
    assert meta["tokenizer.chat_template"] == template


def test_qwen_eos_is_im_end_and_gemma_has_scores() -> None:
    qwen = parse_header(model_gguf("qwen2")).metadata
    assert qwen["tokenizer.ggml.tokens"][qwen["tokenizer.ggml.eos_token_id"]] == "<|im_end|>"
    gemma = parse_header(model_gguf("gemma2")).metadata
    assert gemma["tokenizer.ggml.scores"][:3] == [-0.0, -1.0, -2.0]
    assert gemma["tokenizer.ggml.tokens"][507] == "<eos>"


def test_moe_experts_are_3d_tensors() -> None:
    tensors = {t.name: t for t in parse_header(model_gguf("qwen3moe")).tensors}
    exps = tensors["blk.1.ffn_up_exps.weight"]
    assert exps.shape == (256, 256, 4) and exps.nbytes == 256 * 4 * 144
    assert tensors["blk.0.ffn_gate_inp.weight"].shape == (256, 4)
    assert "blk.0.ffn_up.weight" not in tensors


def test_tensor_types_vary_per_tensor() -> None:
    data = llama3_gguf(default_type="Q8_0", types={"blk.1.ffn_down.weight": "IQ4_XS"})
    tensors = {t.name: t for t in parse_header(data).tensors}
    assert tensors["blk.0.ffn_down.weight"].type == "Q8_0"
    assert tensors["blk.0.ffn_down.weight"].nbytes == 512 * 256 // 32 * 34
    assert tensors["blk.1.ffn_down.weight"].type == "IQ4_XS"


def test_split_parts_hold_their_tensors_and_split_keys() -> None:
    from tests.support.gguf_files import dense_tensors

    parts = gguf_split("m-Q4_K_M.gguf", "llama", llama3_metadata(), dense_tensors(), 3)
    assert list(parts) == [
        "m-Q4_K_M-00001-of-00003.gguf",
        "m-Q4_K_M-00002-of-00003.gguf",
        "m-Q4_K_M-00003-of-00003.gguf",
    ]
    first, second = (parse_header(parts[n]) for n in list(parts)[:2])
    assert first.metadata["split.no"] == 0 and first.metadata["split.count"] == 3
    assert first.metadata["split.tensors.count"] == 21
    assert "tokenizer.ggml.tokens" in first.metadata
    assert "tokenizer.ggml.tokens" not in second.metadata
    assert second.metadata["split.no"] == 1
    assert len(first.tensors) == 7 and second.tensors[0].name == "blk.0.ffn_gate.weight"


def test_non_finite_floats_are_read_as_floats() -> None:
    nan = raw_kv("x.nan", V.FLOAT32, struct.pack("<f", float("nan")))
    inf = raw_kv("x.inf", V.FLOAT64, struct.pack("<d", float("-inf")))
    meta = parse_header(raw_gguf([nan, inf])).metadata
    assert meta["x.nan"] != meta["x.nan"] and meta["x.inf"] == float("-inf")


def test_alignment_from_metadata_sets_data_offset() -> None:
    align = raw_kv("general.alignment", V.UINT32, U32.pack(64))
    header = parse_header(raw_gguf([align], [raw_tensor("w", (4,), Q.F32, 0)]))
    assert header.alignment == 64 and header.data_offset % 64 == 0
    assert header.data_offset == 64 * 2  # 24 + 47 (kv) + 33 (tensor) = 104 bytes, padded


TOKENS = raw_kv("tokenizer.ggml.tokens", V.ARRAY, raw_array(V.STRING, raw_string("a"), 1))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"GGML" + bytes(20), "not a GGUF file"),
        (b"\x89PNG\r\n\x1a\n" + bytes(40), "not a GGUF file"),
        (raw_gguf(version=1), "GGUF version 1"),
        (raw_gguf(version=4), "GGUF version 4"),
        (raw_gguf(big_endian=True), "big-endian"),
        (raw_gguf(n_kv=2**40), "metadata keys (at most"),
        (raw_gguf(n_tensors=2**63), "tensors (at most"),
        (raw_gguf([raw_string("k") + U32.pack(99)]), "unknown value type 99"),
        (
            raw_gguf([raw_kv("k", V.STRING, raw_string("x", length=2**63))]),
            "claims 9223372036854775808 bytes",
        ),
        (raw_gguf([raw_string("k", length=2**63)]), "a metadata key claims"),
        (raw_gguf([raw_kv("k", V.ARRAY, raw_array(V.STRING, b"", 2**62))]), "elements (at most"),
        (raw_gguf([raw_kv(b"\xff\xfe", V.UINT8, b"\x01")]), "not UTF-8"),
        (raw_gguf([raw_kv("k", V.UINT8, b"\x01")] * 2), "duplicate metadata key"),
        (
            raw_gguf(
                [
                    raw_kv(
                        "k",
                        V.ARRAY,
                        raw_array(
                            V.ARRAY, raw_array(V.ARRAY, raw_array(V.UINT8, b"\x01", 1), 1), 1
                        ),
                    )
                ]
            ),
            "nests arrays deeper",
        ),
        (raw_gguf([raw_kv("general.alignment", V.UINT32, U32.pack(48))]), "not a power of two"),
        (raw_gguf([raw_kv("general.alignment", V.UINT32, U32.pack(0))]), "not a power of two"),
        (raw_gguf([raw_kv("general.alignment", V.STRING, raw_string("32"))]), "not a power of two"),
        (raw_gguf([], [raw_tensor("w", (1, 2, 3, 4, 5), Q.F32, 0)]), "5 dimensions (at most 4)"),
        (raw_gguf([], [raw_tensor("w", (2**64 - 1, 2), Q.F32, 0)]), "shape too large"),
        (raw_gguf([], [raw_tensor("w", (2**40, 2**40), Q.F32, 0)]), "shape too large"),
        (raw_gguf([], [raw_tensor("w", (256,), 99, 0)]), "unknown ggml type 99"),
        (raw_gguf([], [raw_tensor("w", (256,), 4, 0)]), "unknown ggml type 4"),  # Q4_2: removed
        (raw_gguf([], [raw_tensor("w", (100,), Q.Q4_K, 0)]), "blocks of 256 values"),
        (raw_gguf([], [raw_tensor("w", (8,), Q.F32, 7)]), "not a multiple of 32"),
        (raw_gguf([], [raw_tensor("w", (8,), Q.F32, 0)] * 2), "duplicate tensor"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_lying_or_foreign_headers_are_refused_with_their_reason(data: bytes, reason: str) -> None:
    with pytest.raises(UnsafeContent, match=re.escape(reason)):
        parse_header(data)


def test_limits_are_the_callers() -> None:
    data = raw_gguf([TOKENS])
    with pytest.raises(UnsafeContent, match="at most 0"):
        parse_header(data, HeaderLimits(max_array=0))
    assert parse_header(data).metadata["tokenizer.ggml.tokens"] == ["a"]


@pytest.mark.parametrize(
    ("data", "at_least"),
    [
        (b"", 24),
        (b"GG", 24),
        # 2 keys and 3 tensors announced, nothing more: 24 + 2 x 12 + 3 x 24
        (raw_gguf(n_kv=2, n_tensors=3)[:24], 24 + 24 + 72),
        # an array of 1000 strings announced: each of them at least its 8-byte length
        (
            raw_gguf([raw_kv("t", V.ARRAY, raw_array(V.STRING, b"", 1000))])[: 24 + 9 + 4 + 12],
            24 + 9 + 4 + 12 + 8000,
        ),
        # 1000 int32s announced: exactly their bytes
        (
            raw_gguf([raw_kv("t", V.ARRAY, raw_array(V.INT32, b"", 1000))])[: 24 + 9 + 4 + 12],
            24 + 9 + 4 + 12 + 4000,
        ),
    ],
)
def test_need_more_gives_a_lower_bound_from_what_is_known(data: bytes, at_least: int) -> None:
    with pytest.raises(NeedMore) as caught:
        parse_header(data)
    assert caught.value.at_least == at_least


def test_need_more_never_overshoots_the_header() -> None:
    data = llama3_gguf(regular=3000)
    end = parse_header(data).data_offset
    have, steps = 65_536 // 16, 0
    while True:
        try:
            parse_header(data[:have])
            break
        except NeedMore as more:
            assert have < more.at_least <= end
            have = more.at_least
            steps += 1
    assert steps >= 1


VALID = llama3_gguf(regular=40, chat_template="{{ x }}")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_random_bytes_only_need_more_or_unsafe(data: bytes) -> None:
    _parse_or_refuse(data)
    _parse_or_refuse(b"GGUF\x03\x00\x00\x00" + data)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), min_size=1, max_size=8),
    st.integers(0, 2500),
)
def test_mutated_headers_only_need_more_or_unsafe(flips: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(VALID[: max(cut, 24)] if cut < 2400 else VALID)
    for at, value in flips:
        if at < len(data):
            data[at] = value
    _parse_or_refuse(bytes(data))


def _parse_or_refuse(data: bytes) -> None:
    try:
        parse_header(data)
    except (NeedMore, UnsafeContent):
        pass

"""The estimator on GGUF headers: exact parameters, real weight bytes, KV cache, cards that fit.

Every expected number is worked out by hand from the shapes and ggml block sizes in
`gguf_headers.py` (the arithmetic is in the comments), never copied from the code's output.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hubwatch.estimator import estimate_json
from hubwatch.estimator.gguf import (
    GGML_BLOCKS,
    estimate_headers,
    estimate_model,
    summary,
    with_gguf,
)
from hubwatch.estimator.gguf_cache import KV_TYPES, NoCache, layout
from hubwatch.models.gguf import GGUFModel, GGUFTensor, group_models
from tests.estimator.gguf_headers import (
    LLAMA_META,
    gemma,
    header,
    llama,
    llama_tensors,
    qwen3moe,
    stored,
    tensor,
)

CONFIGS = Path(__file__).parent.parent / "data" / "configs"
LLAMA_CONFIG = CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json"
GEMMA2_CONFIG = CONFIGS / "google__gemma-2-2b.json"

# llama-3.1-8B: embeddings and head 4096·128256 = 525,336,576 each; a block is q 4096² +
# k, v 4096·1024 each + o 4096² + gate, up, down 4096·14336 each + two norms of 4096
# = 218,112,000; 32 blocks + both + the final norm = 8,030,261,248, and rope_freqs' 64 on top.
LLAMA_PARAMS = 8_030_261_248
# Q4_K_M-like: per block q, k, o, gate, up at Q4_K (155,189,248 weights / 256 · 144 =
# 87,293,952 bytes), v and down at Q6_K (62,914,560 / 256 · 210 = 51,609,600), norms F32
# (32,768): 138,936,320 · 32 = 4,445,962,240; token_embd Q4_K 295,501,824; output Q6_K
# 430,940,160; output_norm 16,384; rope_freqs 256.
LLAMA_Q4_K_M_BYTES = 5_172_420_864


def model_of(h: Any, name: str = "Llama-3.1-8B-Instruct-Q4_K_M.gguf") -> GGUFModel:
    return group_models([name], {name: h})[name]


def test_llama_31_8b_counts_exactly_and_leaves_rope_freqs_out() -> None:
    result = estimate_model(model_of(llama()))
    params = result["params"]
    assert result["ok"] is True
    assert params["total"] == LLAMA_PARAMS
    assert params["tensor_elements"] == LLAMA_PARAMS + 64
    assert params["not_parameters"] == {"rope_freqs.weight": 64}
    assert params["embedding"] == 525_336_576 and params["head"] == 525_336_576
    assert params["non_embedding"] == LLAMA_PARAMS - 525_336_576
    assert params["active"] == LLAMA_PARAMS
    assert any("rope_freqs.weight (64 values)" in note for note in result["notes"])


def test_llama_31_8b_agrees_with_the_config_estimate() -> None:
    from_config = estimate_json(LLAMA_CONFIG.read_bytes())
    from_gguf = estimate_model(model_of(llama()))
    assert from_config.params["total"] == from_gguf["params"]["total"] == LLAMA_PARAMS
    assert from_config.params["embedding"] == from_gguf["params"]["embedding"]
    # bf16 in the config's estimate, f16 in llama.cpp's cache: both 2 bytes.
    assert from_config.kv_bytes_per_token == from_gguf["kv_cache"]["bytes_per_token"]["f16"]
    assert from_config.context == from_gguf["context"] == 131072


def test_q4_k_m_mix_weighs_the_ggml_block_sizes() -> None:
    weights = estimate_model(model_of(llama("Q4_K_M")))["weights"]
    assert weights["bytes"] == LLAMA_Q4_K_M_BYTES
    by_type = weights["by_type"]
    assert by_type["Q4_K"]["bytes"] == 3_088_908_288  # 87,293,952 · 32 + 295,501,824
    assert by_type["Q6_K"]["bytes"] == 2_082_447_360  # 51,609,600 · 32 + 430,940,160
    assert by_type["F32"]["bytes"] == 1_065_216  # 64 norms · 16,384 + 16,384 + 256
    assert by_type["Q4_K"]["bits_per_weight"] == 4.5  # 144 · 8 / 256
    assert by_type["Q6_K"]["bits_per_weight"] == 6.5625  # 210 · 8 / 256
    assert by_type["F32"]["bits_per_weight"] == 32.0
    # 8 · 5,172,420,864 / 8,030,261,312 elements = 5.1529…
    assert weights["bits_per_weight"] == pytest.approx(5.1529, abs=1e-4)


@pytest.mark.parametrize(
    ("type_", "nbytes", "bpw"),
    [
        ("Q8_0", 17_825_792, 8.5),  # 16,777,216 / 32 · 34
        ("F16", 33_554_432, 16.0),  # 16,777,216 · 2
        ("Q4_K", 9_437_184, 4.5),  # 16,777,216 / 256 · 144
        ("Q6_K", 13_762_560, 6.5625),  # 16,777,216 / 256 · 210
    ],
)
def test_one_square_matrix_at_each_type(type_: str, nbytes: int, bpw: float) -> None:
    h = header(dict(LLAMA_META), [tensor("blk.0.attn_q.weight", (4096, 4096), type_)])
    weights = estimate_model(model_of(h))["weights"]
    assert weights["bytes"] == nbytes and weights["bits_per_weight"] == bpw


def test_llama_kv_cache_per_token_and_at_the_full_context() -> None:
    kv = estimate_model(model_of(llama("Q4_K_M")))["kv_cache"]
    # 2 (K and V) · 32 layers · 8 KV heads · 128 · 2 bytes
    assert kv["bytes_per_token"]["f16"] == 131_072
    # q8_0: a 1024-wide row is 32 blocks of 34 bytes: 2 · 32 · 1,088
    assert kv["bytes_per_token"]["q8_0"] == 69_632
    # q4_0: 32 blocks of 18 bytes: 2 · 32 · 576
    assert kv["bytes_per_token"]["q4_0"] == 36_864
    assert kv["bytes_at_context"]["f16"] == 131_072 * 131_072  # 16 GiB
    assert kv["bytes_at_short"] == 131_072 * 8192  # 1 GiB


def test_fit_table_at_the_full_context_and_at_8k() -> None:
    result = estimate_model(model_of(llama("Q4_K_M")))
    # 4.82 GiB weights + 16 GiB cache (+5% slack, 0.5 GiB context) is 22.4 GiB: not a T4's
    # 15 GiB, well within an A100-40GB; at 8k the cache is 1 GiB and a T4 holds it.
    assert "T4" not in result["fits_on"]["context"]
    assert "A100-40GB" in result["fits_on"]["context"]
    assert "T4" in result["fits_on"]["short"]
    assert result["fits"]["context"]["T4"]["cards"] == 2
    assert result["serving"]["parts"]["weights"] == LLAMA_Q4_K_M_BYTES
    assert result["serving"]["parts"]["kv_cache"] == 131_072 * 131_072


def test_q8_0_cache_lets_a_card_hold_more() -> None:
    f16 = estimate_model(model_of(llama("Q4_K_M")))
    q8 = estimate_model(model_of(llama("Q4_K_M")), "q8_0")
    assert q8["serving"]["parts"]["kv_cache"] == 69_632 * 131_072
    assert (
        q8["fits"]["context"]["H100-80GB"]["max_batch"]
        > (f16["fits"]["context"]["H100-80GB"]["max_batch"])
    )


def test_qwen3moe_active_parameters_follow_the_routed_experts() -> None:
    params = estimate_model(model_of(qwen3moe(), "Qwen3-30B-A3B-Q8_0.gguf"))["params"]
    # A block: attention 2048·4096 + 2·2048·512 + 4096·2048 = 18,874,368, q/k norms 256,
    # two norms 4,096, router 2048·128 = 262,144: 19,140,864; experts 3 · 2048·768·128 =
    # 603,979,776. 48 blocks, embeddings and head 2048·151936 each, final norm 2,048.
    assert params["experts"] == 28_991_029_248
    assert params["total"] == 30_532_122_624
    # experts count 8 of 128: 30,532,122,624 − 28,991,029,248 + 1,811,939,328
    assert params["active"] == 3_353_032_704


def test_qwen3moe_kv_cache_uses_the_stated_key_length() -> None:
    kv = estimate_model(model_of(qwen3moe(), "q.gguf"))["kv_cache"]
    assert kv["bytes_per_token"]["f16"] == 98_304  # 2 · 48 · 4 · 128 · 2


def test_gemma2_sliding_layers_keep_only_their_window() -> None:
    result = estimate_model(model_of(gemma("gemma2", 26, 4096, 8192), "gemma-2-2b-Q8_0.gguf"))
    kv = result["kv_cache"]
    # per layer and token 2 · 4 · 256 · 2 = 4,096 bytes; 26 layers
    assert kv["bytes_per_token"]["f16"] == 106_496
    # llama.cpp's gemma2 pattern 2: the 13 even layers slide over 4096, the 13 odd keep 8192
    assert kv["bytes_at_context"]["f16"] == 13 * 4096 * 4096 + 13 * 8192 * 4096
    assert any("sliding window 4096 on 13 of 26 layers" in n for n in result["notes"])


def test_gemma2_per_token_cache_agrees_with_the_config_estimate() -> None:
    from_config = estimate_json(GEMMA2_CONFIG.read_bytes())
    from_gguf = estimate_model(model_of(gemma("gemma2", 26, 4096, 8192), "g.gguf"))
    assert from_config.kv_bytes_per_token == from_gguf["kv_cache"]["bytes_per_token"]["f16"]


def test_gemma3_keeps_one_global_layer_in_six() -> None:
    kv = estimate_model(model_of(gemma("gemma3", 12, 1024, 32768), "g.gguf"))["kv_cache"]
    # layers 5 and 11 global: 10 · 1024 · 4096 + 2 · 32768 · 4096
    assert kv["bytes_at_context"]["f16"] == 310_378_496


def test_a_stated_sliding_window_pattern_wins() -> None:
    pattern = [True, False] * 6
    h = gemma("gemma3", 12, 1024, 32768, **{"attention.sliding_window_pattern": pattern})
    kv = estimate_model(model_of(h, "g.gguf"))["kv_cache"]
    assert kv["bytes_at_context"]["f16"] == 6 * 1024 * 4096 + 6 * 32768 * 4096


def test_a_window_on_an_architecture_without_a_known_pattern_counts_every_layer_full() -> None:
    h = gemma("qwen2", 4, 4096, 32768)
    result = estimate_model(model_of(h, "g.gguf"))
    assert result["kv_cache"]["bytes_at_context"]["f16"] == 4 * 32768 * 4096
    assert any("not known here" in note for note in result["notes"])


def test_head_count_kv_per_layer_skips_layers_without_attention() -> None:
    meta = dict(LLAMA_META) | {
        "llama.block_count": 4,
        "llama.attention.head_count_kv": [8, 0, 8, 0],
    }
    cache = layout("llama", meta)
    assert cache.per_token("f16") == 2 * 2 * 8 * 128 * 2  # two attention layers of 4


def test_a_split_model_is_counted_once() -> None:
    tensors = llama_tensors("Q4_K_M")
    first = header(dict(LLAMA_META) | {"split.count": 2}, tensors[:150])
    second = header({"split.no": 1, "split.count": 2}, tensors[150:])
    paths = [
        "m/Llama-3.1-8B-Q4_K_M-00001-of-00002.gguf",
        "m/Llama-3.1-8B-Q4_K_M-00002-of-00002.gguf",
    ]
    models = estimate_headers(paths, {paths[0]: stored(first), paths[1]: stored(second)})
    assert list(models) == ["m/Llama-3.1-8B-Q4_K_M.gguf"]
    [result] = models.values()
    assert result["quantization"] == "Q4_K_M" and result["parts"] == paths
    assert result["params"]["total"] == LLAMA_PARAMS
    assert result["weights"]["bytes"] == LLAMA_Q4_K_M_BYTES


def test_a_split_model_with_an_unread_part_says_which() -> None:
    h = llama("Q4_K_M")
    paths = [f"x-Q4_K_M-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    models = estimate_headers(paths, {paths[0]: stored(h), paths[2]: stored(h)})
    [result] = models.values()
    assert result["ok"] is False
    assert result["error"] == "cannot estimate: header not read for x-Q4_K_M-00002-of-00003.gguf"


def test_a_header_that_is_not_a_gguf_header_reads_as_unread() -> None:
    models = estimate_headers(["a-Q8_0.gguf"], {"a-Q8_0.gguf": b'{"__metadata__": {}}'})
    assert models["a-Q8_0.gguf"]["ok"] is False


def test_missing_metadata_keeps_the_counts_and_says_what_is_missing() -> None:
    meta = {k: v for k, v in LLAMA_META.items() if k != "llama.block_count"}
    result = estimate_model(model_of(header(meta, llama_tensors("Q4_K_M"))))
    assert result["ok"] is True and result["params"]["total"] == LLAMA_PARAMS
    assert result["kv_cache"] is None and result["fits"] == {}
    assert "no KV cache or fit table: llama.block_count is missing" in result["notes"]


def test_no_architecture_says_so() -> None:
    result = estimate_model(model_of(header({}, llama_tensors())))
    assert "no KV cache or fit table: general.architecture is missing" in result["notes"]


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (dataclasses.replace(tensor("t", (4, 4)), elements=17), "17 elements for shape [4, 4]"),
        (dataclasses.replace(tensor("t", (256,), "Q4_K"), nbytes=1), "1 bytes for 256 Q4_K"),
        (dataclasses.replace(tensor("t", (4,)), shape=(-1, -4)), "is not a shape"),
        (dataclasses.replace(tensor("t", (1,)), shape=(1,) * 9), "is not a shape"),
    ],
)
def test_a_lying_tensor_info_is_refused_with_the_reason(bad: Any, why: str) -> None:
    result = estimate_model(model_of(header(dict(LLAMA_META), [bad])))
    assert result["ok"] is False and why in result["error"]


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("llama.block_count", 10**9, "over 100000"),
        ("llama.block_count", "32", "not a size"),
        ("llama.attention.head_count_kv", [8, 8], "2 entries for 32 layers"),
        ("llama.embedding_length", 4097, "not divisible by 32 heads"),
    ],
)
def test_lying_metadata_is_no_cache_not_a_crash(key: str, value: Any, why: str) -> None:
    with pytest.raises(NoCache, match=why):
        layout("llama", dict(LLAMA_META) | {key: value})


def test_without_a_config_the_estimate_is_the_gguf_one() -> None:
    name = "Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    models = estimate_headers([name], {name: stored(llama("Q4_K_M"))})
    result = with_gguf(None, models)
    assert result is not None and result.ok and result.family == "gguf"
    assert result.params["total"] == LLAMA_PARAMS and result.context == 131072
    assert result.kv_bytes_per_token == 131_072
    assert result.gguf[name]["weights"]["bytes"] == LLAMA_Q4_K_M_BYTES


def test_a_vision_projector_does_not_speak_for_the_model() -> None:
    clip = header({"general.architecture": "clip"}, [tensor("v.patch_embd.weight", (14, 14))])
    models = estimate_headers(
        ["a/mmproj-f16.gguf", "b/L-Q4_K_M.gguf"],
        {"a/mmproj-f16.gguf": stored(clip), "b/L-Q4_K_M.gguf": stored(llama("Q4_K_M"))},
    )
    found = summary(models)
    assert found is not None and found["name"] == "b/L-Q4_K_M.gguf"


def test_no_gguf_and_no_config_is_no_estimate() -> None:
    assert with_gguf(None, {}) is None


_KEYS = [
    "general.architecture",
    "llama.block_count",
    "llama.context_length",
    "llama.embedding_length",
    "llama.attention.head_count",
    "llama.attention.head_count_kv",
    "llama.attention.key_length",
    "llama.attention.value_length",
    "llama.attention.sliding_window",
    "llama.attention.sliding_window_pattern",
    "llama.expert_count",
    "llama.expert_used_count",
]
_VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=0, max_value=300),
    st.just("llama"),
    st.text(max_size=5),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.lists(st.one_of(st.integers(-2, 300), st.booleans()), max_size=40),
)
_TENSORS = st.lists(
    st.builds(
        GGUFTensor,
        st.sampled_from(
            ["token_embd.weight", "output.weight", "rope_freqs.weight", "blk.0.attn_q.weight"]
            + ["blk.3.ffn_up_exps.weight", "blk.99999.x", "x"]
        ),
        st.lists(st.integers(-3, 2**70), max_size=10).map(tuple),
        st.sampled_from(["F16", "Q4_K", "Q8_0", "IQ1_S", "bogus"]),
        st.integers(0, 2**70),
        st.integers(-(2**70), 2**70),
        st.integers(-(2**70), 2**70),
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _VALUES), _TENSORS)
def test_any_header_gives_an_estimate_or_a_reason_never_a_crash(
    metadata: dict[str, Any], tensors: list[GGUFTensor]
) -> None:
    result = estimate_model(model_of(header(metadata, tensors)))
    assert result["ok"] is bool(result["ok"])
    assert result["ok"] or result["error"].startswith("cannot estimate: ")
    json.dumps(result)  # stored as JSON


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_any_stored_bytes_read_as_unread_or_a_header(raw: bytes) -> None:
    models = estimate_headers(["a-Q4_K_M.gguf"], {"a-Q4_K_M.gguf": raw})
    assert list(models) == ["a-Q4_K_M.gguf"]


def test_the_block_table_is_llama_cpps_own() -> None:
    import gguf  # tests may import it; src/hubwatch/estimator never does

    for name, block in GGML_BLOCKS.items():
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name]] == block, name
    for name, block in KV_TYPES.items():
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name.upper()]] == block, name

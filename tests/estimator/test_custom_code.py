"""Custom-code models (a config whose auto_map names a class in the repo): counted from the
safetensors headers, saying so, or refused with the reason when there are none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hubwatch.estimator import CannotEstimate, Run, UnknownTarget, estimate, lora_targets, size

CHATGLM3 = json.loads((Path(__file__).parent / "custom" / "THUDM__chatglm3-6b.json").read_text())

# NOTE: the checkpoint index of THUDM/chatglm3-6b states total_size 12487168064 bytes of fp16
# tensors: 6,243,584,032 parameters (the rotary inv_freq buffer of 32 included).
CHATGLM3_PARAMS = 12_487_168_064 // 2


def _header(shapes: dict[str, list[int]]) -> dict[str, object]:
    return {"__metadata__": {"format": "pt"}} | {
        name: {"dtype": "F16", "shape": shape, "data_offsets": [0, 0]}
        for name, shape in shapes.items()
    }


def _chatglm3_headers() -> dict[str, dict[str, object]]:
    """ChatGLM3-6B's tensors (names as in its index, shapes as modeling_chatglm.py makes them:
    multi-query attention with 2 groups of 128, a fused gate/up MLP of 2 x 13696), in 2 shards."""
    first: dict[str, list[int]] = {
        "transformer.embedding.word_embeddings.weight": [65024, 4096],
        "transformer.rotary_pos_emb.inv_freq": [32],
    }
    second: dict[str, list[int]] = {
        "transformer.encoder.final_layernorm.weight": [4096],
        "transformer.output_layer.weight": [65024, 4096],
    }
    for i in range(28):
        shard = first if i < 14 else second
        p = f"transformer.encoder.layers.{i}."
        shard |= {
            p + "input_layernorm.weight": [4096],
            p + "self_attention.query_key_value.weight": [4608, 4096],
            p + "self_attention.query_key_value.bias": [4608],
            p + "self_attention.dense.weight": [4096, 4096],
            p + "post_attention_layernorm.weight": [4096],
            p + "mlp.dense_h_to_4h.weight": [27392, 4096],
            p + "mlp.dense_4h_to_h.weight": [4096, 13696],
        }
    return {
        "model-00001-of-00002.safetensors": _header(first),
        "model-00002-of-00002.safetensors": _header(second),
    }


def test_custom_code_with_headers_is_counted_from_them_saying_so() -> None:
    result = estimate(CHATGLM3, _chatglm3_headers())
    assert result.ok, result.error
    assert result.params["total"] == CHATGLM3_PARAMS
    assert result.notes[0] == (
        "counted from the safetensors headers: custom code "
        "(modeling_chatglm.ChatGLMForConditionalGeneration)"
    )
    assert "KV cache: 2 key/value heads of 128" in result.notes
    assert result.family == "chatglm" and result.context == 8192
    assert result.reconciliation is not None
    assert result.reconciliation["of_record"] == CHATGLM3_PARAMS
    assert result.reconciliation["derived"] is None


def test_custom_code_memory_follows_the_headers_shapes_and_the_configs_heads() -> None:
    result = estimate(CHATGLM3, _chatglm3_headers())
    # 28 layers x (keys + values of 2 groups x 128) x 2 bytes
    assert result.kv_bytes_per_token == 28 * 2 * 2 * 128 * 2
    assert result.serving["parts"]["weights"] == 2 * CHATGLM3_PARAMS
    assert result.params["by_kind"]["head"] == 65024 * 4096
    assert result.params["by_kind"]["embedding"] == 65024 * 4096


def test_custom_code_lora_targets_are_the_headers_module_names() -> None:
    headers = _chatglm3_headers()
    qkv = size(CHATGLM3, headers=headers, run=Run(lora_targets=lora_targets("qkv")))
    every = size(CHATGLM3, headers=headers)
    lora = {m.workload: m for m in qkv.memory}["lora"]
    assert lora.parts["gradients_and_optimizer"] < every.memory[2].parts["gradients_and_optimizer"]
    with pytest.raises(UnknownTarget, match="dense_h_to_4h, query_key_value"):
        size(CHATGLM3, headers=headers, run=Run(lora_targets=lora_targets("q_proj")))


def test_custom_code_without_headers_is_refused_naming_the_class() -> None:
    result = estimate(CHATGLM3)
    assert not result.ok and result.error is not None
    assert "custom code 'modeling_chatglm.ChatGLMForConditionalGeneration'" in result.error
    assert "safetensors headers" in result.error
    with pytest.raises(CannotEstimate, match="has none"):
        size(CHATGLM3)


def test_a_known_family_with_an_auto_map_is_still_counted_by_its_family() -> None:
    config = {
        "model_type": "llama",
        "auto_map": {"AutoModelForCausalLM": "modeling_x.XForCausalLM"},
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
    }
    result = estimate(config)
    assert result.ok and not any("custom code" in n for n in result.notes)


# Qwen-7B (the first Qwen, remote code): its config as published, less tokenizer and runtime keys.
QWEN1 = {
    "model_type": "qwen",
    "architectures": ["QWenLMHeadModel"],
    "auto_map": {
        "AutoConfig": "configuration_qwen.QWenConfig",
        "AutoModelForCausalLM": "modeling_qwen.QWenLMHeadModel",
    },
    "hidden_size": 4096,
    "intermediate_size": 22016,
    "kv_channels": 128,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "seq_length": 8192,
    "vocab_size": 151936,
}


def _qwen1_headers() -> dict[str, dict[str, object]]:
    shapes: dict[str, list[int]] = {
        "transformer.wte.weight": [151936, 4096],
        "transformer.ln_f.weight": [4096],
        "lm_head.weight": [151936, 4096],
    }
    for i in range(32):
        p = f"transformer.h.{i}."
        shapes |= {
            p + "ln_1.weight": [4096],
            p + "attn.c_attn.weight": [12288, 4096],
            p + "attn.c_attn.bias": [12288],
            p + "attn.c_proj.weight": [4096, 4096],
            p + "ln_2.weight": [4096],
            p + "mlp.w1.weight": [11008, 4096],
            p + "mlp.w2.weight": [11008, 4096],
            p + "mlp.c_proj.weight": [4096, 11008],
        }
    return {"model.safetensors": _header(shapes)}


def test_qwen1_is_counted_from_its_headers_with_full_multi_head_attention() -> None:
    result = estimate(QWEN1, _qwen1_headers())
    assert result.ok and result.params["total"] == 7_721_324_544  # the 7.72B of its model page
    assert result.notes[0].endswith("(modeling_qwen.QWenLMHeadModel)")
    assert result.kv_bytes_per_token == 32 * 2 * 32 * 128 * 2
    assert result.params["by_kind"]["head"] == 151936 * 4096


def test_custom_code_headers_without_numbered_layers_are_refused_with_the_headers_count() -> None:
    headers = {"model.safetensors": _header({"weird.weight": [3, 4], "x" * 10_000: [2]})}
    result = estimate(QWEN1, headers)
    assert not result.ok and result.error is not None
    assert "no numbered layers" in result.error
    assert result.reconciliation is not None and result.reconciliation["of_record"] == 14

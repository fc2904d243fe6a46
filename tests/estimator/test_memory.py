"""Memory, largest batch per card, cost and reconciliation: the behaviours the issue names."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hubwatch.diff.estimate import estimate_changes
from hubwatch.estimator import (
    Estimate,
    count_params,
    estimate,
    fits,
    gpu,
    kv_bytes_per_token,
    read_model,
    reconcile,
    serving,
    training,
    training_cost,
)
from hubwatch.models import Severity
from tests.estimator.make_golden import REPO_CONFIGS


def config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPO_CONFIGS / f"{name}.json").read_text())
    return data


def test_gqa_kv_bytes_per_token_for_llama_3_2_1b() -> None:
    model = read_model(config("meta-llama__Llama-3.2-1B"))
    assert kv_bytes_per_token(model) == 16 * 2 * 8 * 64 * 2  # layers x (k, v) x kv heads x dim


def test_embedding_model_has_no_kv_cache() -> None:
    model = read_model(config("sentence-transformers__all-MiniLM-L6-v2"))
    assert kv_bytes_per_token(model) == 0
    assert serving(model, context=512, batch=64).parts["kv_cache"] == 0


def test_mla_caches_the_latent_not_full_heads() -> None:
    model = read_model(config("deepseek-ai__DeepSeek-V3"))
    assert kv_bytes_per_token(model) == 61 * (512 + 64) * 2


def test_sliding_layers_stop_growing_at_their_window() -> None:
    model = read_model(config("google__gemma-3-1b-it"))
    short = serving(model, context=512).parts["kv_cache"]
    long = serving(model, context=32768).parts["kv_cache"]
    per_layer = 2 * 1 * 256 * 2
    # 26 layers, one in six global: 4 grow with the context, 22 stop at 512 tokens
    assert long - short == 4 * per_layer * (32768 - 512)


def test_training_is_the_sum_of_its_parts_and_says_what_it_assumes() -> None:
    model = read_model(config("Qwen__Qwen3-4B"))
    full = training(model, method="full", seq_len=4096, batch=2)
    assert full.total == sum(full.parts.values())
    assert full.assumptions["batch"] == 2 and full.assumptions["sequence length"] == 4096
    assert full.parts["logits_and_loss"] == 2 * 10 * 4096 * 151936
    checkpointed = training(
        model, method="full", seq_len=4096, batch=2, gradient_checkpointing=True
    )
    assert checkpointed.parts["activations"] < full.parts["activations"]
    assert training(model, method="qlora").total < training(model, method="lora").total


def test_a_model_too_big_for_one_card_gets_a_two_card_split() -> None:
    model = read_model(config("google__gemma-7b"))
    t4 = next(f for f in fits(serving(model, context=4096)) if f.gpu == "T4")
    assert (t4.cards, t4.max_batch >= 1) == (2, True) and t4.split


def test_cost_is_a_roofline_with_stated_assumptions() -> None:
    model = read_model(config("TinyLlama__TinyLlama-1.1B-Chat-v1.0"))
    params = count_params(model)
    cost = training_cost(
        params, training(model), gpu("H100-80GB"), samples=10_000, tokens_per_sample=2048, epochs=3
    )
    assert cost.flops == 6 * params.active * 3 * 10_000 * 2048
    assert cost.usd > 0 and "40% of peak" in cost.assumptions["utilisation"]
    assert "3 epoch(s) x 10,000 samples x 2,048 tokens" in cost.assumptions["job"]
    assert "docs/gpu-prices.md" in cost.assumptions["gpu"]


def test_reconciliation_explains_a_tied_embedding_stored_twice() -> None:
    raw = config("meta-llama__Llama-3.2-1B")
    model = read_model(raw)
    params = count_params(model)
    header = {
        f"t{i}": {"dtype": "BF16", "shape": [1, n], "data_offsets": [0, 0]}
        for i, n in enumerate([params.total])
    }
    header["lm_head.weight"] = {"dtype": "BF16", "shape": [128256, 2048], "data_offsets": [0, 0]}
    result = reconcile(model, params, {"model.safetensors": header})
    assert result.difference == 128256 * 2048
    assert "stored twice" in result.explanations[0]


def test_reconciliation_unpacks_gptq_int4() -> None:
    model = read_model(config("openai-community__gpt2"))
    params = count_params(model)
    header = {
        "h.qweight": {"dtype": "I32", "shape": [96, 768], "data_offsets": [0, 0]},
        "h.scales": {"dtype": "F16", "shape": [6, 768], "data_offsets": [0, 0]},
    }
    result = reconcile(model, params, {"a.safetensors": header})
    assert result.quantized and result.stored == 96 * 768 * 8


def _estimate(**changes: Any) -> Estimate:
    return estimate({**config("meta-llama__Llama-3.2-1B"), **changes})


def test_context_1k_to_8k_shows_as_memory_and_batch_changes() -> None:
    # serving is sized at min(4096, the model's context): 1024 -> 4096 tokens per sequence
    changes = estimate_changes(
        _estimate(max_position_embeddings=1024), _estimate(max_position_embeddings=8192)
    )
    kinds = {c.kind: c for c in changes}
    assert "estimate.serving_memory" in kinds and "estimate.max_batch" in kinds
    assert "1,024 → 4,096 tokens of context" in kinds["estimate.serving_memory"].summary
    assert "estimate.parameters" not in kinds


def test_context_8k_to_128k_leaves_serving_at_the_4096_default() -> None:
    changes = estimate_changes(
        _estimate(max_position_embeddings=8192), _estimate(max_position_embeddings=131072)
    )
    assert "estimate.serving_memory" not in {c.kind for c in changes}


def test_an_estimate_stored_under_the_old_sizing_reports_no_memory_change() -> None:
    # Stored by an earlier hubwatch: no table, serving at the model's maximum context.
    now = _estimate()
    before = replace(now, table={}, serving={**now.serving, "total": 6 * now.serving["total"]})
    assert estimate_changes(before, now) == []
    grown = _estimate(vocab_size=128256 + 6)  # what the model fixes is still compared
    assert {c.kind for c in estimate_changes(before, grown)} == {"estimate.parameters"}


def test_a_serving_change_under_ten_megabytes_is_told_in_megabytes() -> None:
    now = _estimate()
    before = replace(now, serving={**now.serving, "total": now.serving["total"] - 2_000_000})
    (change,) = [c for c in estimate_changes(before, now) if c.kind == "estimate.serving_memory"]
    assert " MB → " in change.summary and " GB → " not in change.summary


def test_vocab_plus_six_tokens_is_a_small_parameter_change() -> None:
    changes = estimate_changes(_estimate(), _estimate(vocab_size=128256 + 6))
    params = next(c for c in changes if c.kind == "estimate.parameters")
    assert params.severity is Severity.INFO and "+12,288" in params.summary


def test_fewer_kv_heads_changes_kv_bytes_per_token() -> None:
    changes = estimate_changes(_estimate(), _estimate(num_key_value_heads=4))
    assert "estimate.kv_bytes_per_token" in {c.kind for c in changes}


def test_estimates_round_trip_through_json_and_equal_ones_do_not_differ() -> None:
    before = _estimate()
    again = Estimate.from_json(json.loads(json.dumps(before.to_json())))
    assert estimate_changes(before, again) == []
    assert estimate_changes(None, before) == []

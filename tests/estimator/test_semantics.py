"""Memory by what a model computes: an embedding model, a bidirectional encoder, a drafter with
borrowed embeddings and a head only the weights show, asserted term by term."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hubwatch.estimator import count_params, estimate, read_model, serving, size, training
from hubwatch.estimator.memory import CUDA_CONTEXT, SLACK
from hubwatch.estimator.structure import Model

CONFIGS = Path(__file__).parents[1] / "data" / "configs"
SEQ = 2048


def config(name: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data | changes


def overhead(parts: dict[str, int]) -> int:
    resident = sum(v for k, v in parts.items() if k != "overhead")
    return CUDA_CONTEXT + -(-SLACK * resident // 1)


def activations(model: Model, tokens: int = SEQ) -> int:
    """Activations a full fine-tune keeps without checkpointing: each layer's, bf16."""
    return sum(layer.act_elems_per_token for layer in model.text.layers) * tokens * 2


def test_embedding_model_has_no_lm_head_and_no_logits_or_cache() -> None:
    raw = config("Qwen__Qwen3-0.6B", architectures=["Qwen3Model"], tie_word_embeddings=False)
    model = read_model(raw)
    n = count_params(model).total
    # Qwen3Model is the decoder without lm_head: embeddings, 28 layers, the final norm
    assert n == count_params(read_model(config("Qwen__Qwen3-0.6B"))).total  # tied: same count
    assert model.computes is not None and model.computes.head == "none"
    full = training(model, seq_len=SEQ)
    assert full.parts == {
        "weights": 2 * n,
        "gradients_and_optimizer": 14 * n,
        "activations": activations(model),
        "logits_and_loss": 0,  # was 10 x 2048 x 151,936 = 3.1 GB per sequence
        "overhead": overhead(full.parts),
    }
    assert "no logits term" in str(full.assumptions["computes"])
    served = serving(model)
    assert served.parts == {"weights": 2 * n, "kv_cache": 0, "overhead": overhead(served.parts)}
    assert "no KV cache" in str(served.assumptions["computes"])


def test_untied_base_model_drops_the_lm_head_from_the_count() -> None:
    causal = config("Qwen__Qwen3-8B")
    base = count_params(read_model(causal | {"architectures": ["Qwen3Model"]})).total
    assert count_params(read_model(causal)).total - base == 151_936 * 4096  # lm_head


def test_bidirectional_encoder_is_charged_no_kv_cache() -> None:
    raw = config(
        "Qwen__Qwen3-0.6B", architectures=["Qwen3ForCausalLM"], use_bidirectional_attention=True
    )
    model = read_model(raw)
    assert model.computes is not None and model.computes.attention == "bidirectional"
    n = count_params(model).total
    served = serving(model, context=4096, batch=8)
    assert served.parts == {"weights": 2 * n, "kv_cache": 0, "overhead": overhead(served.parts)}
    causal = serving(read_model(config("Qwen__Qwen3-0.6B")), context=4096, batch=8)
    assert causal.parts["kv_cache"] == 8 * 4096 * 28 * 2 * 8 * 128 * 2  # what it was charged
    # it still has its LM head (a masked or denoising objective): logits are computed
    assert training(model).parts["logits_and_loss"] == 10 * SEQ * 151_936


def test_drafter_is_charged_its_targets_frozen_embeddings_head_and_logits() -> None:
    raw = config("HyzeAI__Hyze1B.dflash-drafter")
    model = read_model(raw)
    own = count_params(model).total
    lent = 2 * 248_320 * 5120  # the target's embed_tokens and lm_head (untied)
    assert own == 1_730_213_120  # the checkpoint's count does not change
    full = training(model, seq_len=SEQ)
    assert full.parts == {
        "weights": 2 * own,
        "gradients_and_optimizer": 14 * own,  # only the drafter's own weights are trained
        "activations": activations(model),
        "logits_and_loss": 10 * SEQ * 248_320,  # over the target's vocabulary
        "borrowed_weights": 2 * lent,  # bf16, frozen: no gradients, no optimizer states
        "overhead": overhead(full.parts),
    }
    lora = training(model, method="lora", seq_len=SEQ)
    assert lora.parts["borrowed_weights"] == 2 * lent
    served = serving(model, context=4096)
    per_token = 5 * 2 * 8 * 128 * 2  # 5 layers, k and v, 8 heads of 128, bf16
    assert served.parts == {
        "weights": 2 * own,
        "kv_cache": 4096 * per_token,
        "borrowed_weights": 2 * lent,
        "overhead": overhead(served.parts),
    }


def header_of(model: Model, extra: dict[str, list[int]]) -> dict[str, Any]:
    """A safetensors header holding `model`'s tensors (one per module group) and `extra`."""
    text = model.text
    tensors: dict[str, list[int]] = {}
    for p in text.before:
        tensors[f"{p.module}.weight"] = [p.numel]
    for i, layer in enumerate(text.layers):
        tensors[f"layers.{i}.block.weight"] = [layer.numel]
    for p in text.after:
        tensors[f"{p.module}.weight"] = [p.numel]
    tensors |= extra
    return {
        name: {"dtype": "BF16", "shape": s, "data_offsets": [0, 0]} for name, s in tensors.items()
    }


def test_a_head_only_the_header_shows_is_counted_in_memory() -> None:
    raw = config("Qwen__Qwen3-0.6B", architectures=["Qwen3Model"])
    plain_model = read_model(raw)
    n = count_params(plain_model).total
    head = {"projection.dense.weight": [1024, 1024], "projection.dense.bias": [1024]}
    found = 1024 * 1024 + 1024
    headers = {"model.safetensors": header_of(plain_model, head)}
    sized = size(raw, headers=headers)
    computes = sized.model.computes
    assert computes is not None and computes.head == "projection"
    assert [(p.module, p.numel) for p in computes.weights_only] == [("projection", found)]
    assert sized.params.total == n  # the config's count stays the cross-check
    served, full = sized.memory[0], sized.memory[1]
    assert served.parts["weights"] == 2 * (n + found)
    assert full.parts["weights"] == 2 * (n + found)
    assert full.parts["gradients_and_optimizer"] == 14 * (n + found)  # trained with the rest
    assert full.parts["logits_and_loss"] == 0
    told = estimate(raw, headers)
    assert told.reconciliation is not None
    assert any("projection" in line for line in told.reconciliation["explanations"])
    assert told.computes["weights_only"] == {"projection": found}


def test_a_header_without_extra_tensors_adds_no_head() -> None:
    raw = config("Qwen__Qwen3-0.6B", architectures=["Qwen3Model"])
    model = read_model(raw)
    sized = size(raw, headers={"model.safetensors": header_of(model, {})})
    assert sized.model.computes is not None and sized.model.computes.weights_only == ()


def test_training_length_is_capped_at_the_models_context() -> None:
    model = read_model(config("Qwen__Qwen3-0.6B", max_position_embeddings=1024))
    capped = training(model, seq_len=8192)
    assert capped.parts == training(model, seq_len=1024).parts
    assert "capped at the model's context of 1,024" in str(capped.assumptions["sequence length"])


def test_serving_is_sized_at_4096_tokens_with_the_maximum_beside() -> None:
    served = serving(read_model(config("Qwen__Qwen3-0.6B")))
    assert served.assumptions["context tokens"] == 4096
    assert "the model's maximum: 40,960" in str(served.assumptions["context"])


def test_a_base_models_checkpoint_under_a_causal_lm_config_has_no_lm_head() -> None:
    # Qwen3-Embedding's config names Qwen3ForCausalLM; its weights are the Qwen3Model inside
    raw = config("Qwen__Qwen3-8B")
    model = read_model(raw)
    lm_head = 151_936 * 4096
    header = {k: v for k, v in header_of(model, {}).items() if not k.startswith("lm_head")}
    sized = size(raw, headers={"model.safetensors": header})
    computes = sized.model.computes
    assert computes is not None and computes.head == "none" and not computes.cache
    assert "the checkpoint is a base model's" in computes.told[-1]
    n = sized.params.total  # the config's count, lm_head included: the cross-check
    served, full = sized.memory[0], sized.memory[1]
    assert served.parts["weights"] == 2 * (n - lm_head) and served.parts["kv_cache"] == 0
    assert full.parts["weights"] == 2 * (n - lm_head) and full.parts["logits_and_loss"] == 0
    told = estimate(raw, {"model.safetensors": header})
    assert told.reconciliation is not None
    assert any("lm_head is missing" in line for line in told.reconciliation["explanations"])


def test_a_causal_lms_own_checkpoint_keeps_its_head() -> None:
    raw = config("Qwen__Qwen3-8B")
    model = read_model(raw)
    header = header_of(model, {})
    prefixed = {("model." + k if not k.startswith("lm_head") else k): v for k, v in header.items()}
    sized = size(raw, headers={"model.safetensors": prefixed})
    assert sized.model.computes is not None and sized.model.computes.head == "lm"


def test_a_reward_model_scores_one_label_instead_of_the_vocabulary() -> None:
    causal = config("Qwen__Qwen3-8B")
    raw = causal | {"architectures": ["Qwen3ForSequenceClassification"], "id2label": {"0": "r"}}
    model = read_model(raw)
    lm_head, score = 151_936 * 4096, 4096 * 1
    assert count_params(model).total == count_params(read_model(causal)).total - lm_head + score
    assert training(model, seq_len=SEQ).parts["logits_and_loss"] == 10 * SEQ * 1
    assert serving(model).parts["kv_cache"] == 0

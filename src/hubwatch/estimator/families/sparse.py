"""Routed-MoE decoders beyond Mixtral, Qwen and DeepSeek: llama's attention with experts.

Each is a `Decoder` with the reader of its sparse blocks: which layers hold experts, how many,
how wide, with what shared experts and biases. Defaults are the config classes' (defaults.json).
"""

from __future__ import annotations

from hubwatch.estimator.config import Reader
from hubwatch.estimator.families.decoder import Decoder, Moe, use_bias
from hubwatch.estimator.families.defaults import family
from hubwatch.estimator.families.text import alternating_windows
from hubwatch.estimator.registry import Family


def _every_layer(r: Reader, layers: int, experts_key: str) -> Moe:
    """Experts in every layer, each as wide as intermediate_size, no shared expert."""
    return Moe(
        frozenset(range(layers)),
        r.integer(experts_key, limit="experts"),
        r.integer("num_experts_per_tok", limit="experts"),
        r.integer("intermediate_size", limit="intermediate"),
    )


def _olmoe(r: Reader, layers: int) -> Moe:
    return _every_layer(r, layers, "num_experts")


def _local_experts(r: Reader, layers: int) -> Moe:
    """granitemoe, phimoe, minimax_m2: num_local_experts in every layer."""
    return _every_layer(r, layers, "num_local_experts")


def _gpt_oss(r: Reader, layers: int) -> Moe:
    """gpt-oss: experts and router with biases in every layer."""
    moe = _local_experts(r, layers)
    return Moe(moe.sparse, moe.experts, moe.top_k, moe.size, router_bias=True, expert_bias=True)


def _glm4_moe(r: Reader, layers: int) -> Moe:
    """GLM-4.5: routed and shared experts after the first_k_dense_replace dense layers."""
    first = r.integer("first_k_dense_replace", minimum=0, limit="layers")
    size = r.integer("moe_intermediate_size", limit="intermediate")
    return Moe(
        frozenset(range(first, layers)),
        r.integer("n_routed_experts", limit="experts"),
        r.integer("num_experts_per_tok", limit="experts"),
        size,
        r.integer("n_shared_experts", minimum=0, limit="experts") * size,
        shared_name="shared_experts",
    )


def _ernie_moe(r: Reader, layers: int) -> Moe:
    """ERNIE 4.5 MoE: experts every moe_layer_interval-th layer between the start and end
    indices, shared experts, and a learned score correction per expert."""
    start = r.integer("moe_layer_start_index", minimum=0, limit="layers")
    end = r.integer("moe_layer_end_index", minimum=-1, limit="layers")
    end = layers - 1 if end < 0 else end
    step = r.integer("moe_layer_interval", limit="layers")
    size = r.integer("moe_intermediate_size", limit="intermediate")
    return Moe(
        frozenset(i for i in range(layers) if start <= i <= end and (i + 1) % step == 0),
        r.integer("moe_num_experts", limit="experts"),
        r.integer("moe_k", limit="experts"),
        size,
        r.integer("moe_num_shared_experts", minimum=0, limit="experts") * size,
        shared_name="shared_experts",
        score_bias=True,
    )


def _llama4(r: Reader, layers: int) -> Moe:
    """Llama 4: experts and a shared expert in the moe_layers (every interleave step)."""
    step = r.integer("interleave_moe_layer_step", limit="layers")
    listed = r.int_list("moe_layers") or list(range(step - 1, layers, step))
    size = r.integer("intermediate_size", limit="intermediate")
    return Moe(
        frozenset(listed),
        r.integer("num_local_experts", limit="experts"),
        r.integer("num_experts_per_tok", limit="experts"),
        size,
        size,
    )


def _chunked(_r: Reader, layers: int) -> list[str]:
    """Llama 4: every fourth layer full, the others chunked."""
    return ["full_attention" if (i + 1) % 4 == 0 else "chunked_attention" for i in range(layers)]


SPARSE: tuple[Family, ...] = (
    family("olmoe", "OlmoeForCausalLM", Decoder(qk_norm="projection", experts=_olmoe)),
    family("granitemoe", "GraniteMoeForCausalLM", Decoder(experts=_local_experts)),
    family("phimoe", "PhimoeForCausalLM", Decoder(norm_size=2, experts=_local_experts)),
    family(
        "minimax_m2",
        "MiniMaxM2ForCausalLM",
        Decoder(qk_norm="projection", experts=_local_experts),
    ),
    family(
        "gpt_oss",
        "GptOssForCausalLM",
        Decoder(sinks=True, layer_types=alternating_windows, experts=_gpt_oss),
    ),
    family(
        "glm4_moe",
        "Glm4MoeForCausalLM",
        Decoder(qk_norm="head", qk_norm_flag="use_qk_norm", floor_head_dim=True, experts=_glm4_moe),
    ),
    family("ernie4_5_moe", "Ernie4_5_MoeForCausalLM", Decoder(biases=use_bias, experts=_ernie_moe)),
    family(
        "llama4_text",
        "Llama4ForCausalLM",
        Decoder(layer_types=_chunked, experts=_llama4, dense_width="intermediate_size_mlp"),
    ),
)
"""The routed-MoE decoders built on llama's attention, in registration order."""

"""The dense text decoders: llama and the families that depart from it, and GPT-2."""

from __future__ import annotations

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.classic import learned_positions
from hubwatch.estimator.families.decoder import Decoder, all_full, qwen2_biases
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import linear, plain

# NOTE: `num_key_value_heads` / `head_dim` left out of the defaults where the config class computes
# them from other keys (None -> num_attention_heads, hidden_size // num_attention_heads); the
# builders do the same.


def qwen_windows(r: Reader, layers: int) -> list[str]:
    """Qwen2 and Qwen3: with use_sliding_window, layers from max_window_layers on slide."""
    if not r.flag("use_sliding_window", False):
        return all_full(r, layers)
    first = r.integer("max_window_layers", minimum=0, limit="layers")
    return ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]


def _mistral_windows(r: Reader, layers: int) -> list[str]:
    """Mistral: every layer slides when the config sets a sliding_window."""
    if r.window():
        return ["sliding_attention"] * layers
    return all_full(r, layers)


def alternating_windows(_r: Reader, layers: int) -> list[str]:
    """Gemma 2 and gpt-oss: sliding and full attention alternate, sliding first."""
    return ["sliding_attention" if not i % 2 else "full_attention" for i in range(layers)]


def _gemma3_windows(r: Reader, layers: int) -> list[str]:
    """Gemma 3: every sliding_window_pattern-th layer is full, the others slide."""
    pattern = r.integer("sliding_window_pattern", limit="layers", default=6)
    return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]


QWEN3_DECODER = Decoder(qk_norm="head", layer_types=qwen_windows)
"""Qwen3's layers, which Qwen3-ASR's text tower and the DFlash drafter reuse."""

LLAMA = Family(
    "llama",
    ("LlamaForCausalLM",),
    {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "mlp_bias": False,
    },
    Decoder(),
)

MISTRAL = Family(
    "mistral",
    ("MistralForCausalLM",),
    {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "sliding_window": 4096,
    },
    Decoder(layer_types=_mistral_windows),
)

QWEN2 = Family(
    "qwen2",
    ("Qwen2ForCausalLM",),
    {
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
    },
    Decoder(biases=qwen2_biases, layer_types=qwen_windows),
)

QWEN3 = Family(
    "qwen3",
    ("Qwen3ForCausalLM",),
    {
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "head_dim": 128,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
    },
    QWEN3_DECODER,
)

GEMMA = Family(
    "gemma",
    ("GemmaForCausalLM",),
    {
        "vocab_size": 256000,
        "hidden_size": 3072,
        "intermediate_size": 24576,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "head_dim": 256,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "attention_bias": False,
    },
    Decoder(),
)

GEMMA2 = Family(
    "gemma2",
    ("Gemma2ForCausalLM",),
    {
        "vocab_size": 256000,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "sliding_window": 4096,
    },
    Decoder(norms=4, layer_types=alternating_windows),
)

GEMMA3_TEXT = Family(
    "gemma3_text",
    ("Gemma3ForCausalLM",),
    {
        "vocab_size": 262208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
    },
    Decoder(qk_norm="head", norms=4, layer_types=_gemma3_windows),
)

PHI3 = Family(
    "phi3",
    ("Phi3ForCausalLM",),
    {
        "vocab_size": 32064,
        "hidden_size": 3072,
        "intermediate_size": 8192,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
    },
    Decoder(fused_qkv=True, mlp="fused"),
)

OLMO2 = Family(
    "olmo2",
    ("Olmo2ForCausalLM",),
    {
        "vocab_size": 50304,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "attention_bias": False,
    },
    Decoder(qk_norm="projection"),
)


def gpt2(r: Reader, _architecture: str) -> Built:
    """GPT-2: learned positions, fused c_attn, LayerNorms with bias, tied head."""
    hidden = r.integer("n_embd", "hidden_size", limit="hidden")
    layers = r.integer("n_layer", "num_hidden_layers", limit="layers")
    heads = r.integer("n_head", "num_attention_heads", limit="heads")
    if hidden % heads:
        raise CannotEstimate(f"{r.where}: n_embd {hidden} is not divisible by n_head {heads}")
    vocab = r.integer("vocab_size", limit="vocab")
    context = r.integer("n_positions", "max_position_embeddings", limit="context")
    inner = r.opt_integer("n_inner", limit="intermediate") or 4 * hidden
    layer = [
        plain("ln_1", 2 * hidden, "norm"),
        linear("attn.c_attn", hidden, 3 * hidden, bias=True, kind="attention"),
        linear("attn.c_proj", hidden, hidden, bias=True, kind="attention"),
        plain("ln_2", 2 * hidden, "norm"),
        linear("mlp.c_fc", hidden, inner, bias=True, kind="mlp"),
        linear("mlp.c_proj", inner, hidden, bias=True, kind="mlp"),
    ]
    return learned_positions(
        r,
        layer,
        layers,
        hidden=hidden,
        vocab=vocab,
        heads=heads,
        context=context,
        kv_elems=2 * hidden,
        inner=inner,
    )


GPT2 = Family(
    "gpt2",
    ("GPT2LMHeadModel",),
    {
        "vocab_size": 50257,
        "n_embd": 768,
        "n_layer": 12,
        "n_head": 12,
        "n_positions": 1024,
        "tie_word_embeddings": True,
    },
    gpt2,
)

"""The mixture-of-experts families: Mixtral, Qwen MoE, and DeepSeek-V3 with latent attention."""

from __future__ import annotations

from dataclasses import dataclass

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.decoder import Decoder, Moe, all_full, qwen2_biases
from hubwatch.estimator.families.defaults import defaults
from hubwatch.estimator.families.text import qwen_windows
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


def _mixtral_experts(r: Reader, layers: int) -> Moe:
    """Mixtral: experts in every layer, each as wide as the dense MLP would be."""
    experts = r.integer("num_local_experts", limit="experts")
    top_k = r.integer("num_experts_per_tok", limit="experts")
    size = r.integer("intermediate_size", limit="intermediate")
    return Moe(frozenset(range(layers)), experts, top_k, size)


def _qwen_experts(r: Reader, layers: int, shared: bool) -> Moe:
    experts = r.integer("num_experts", limit="experts")
    top_k = r.integer("num_experts_per_tok", limit="experts")
    size = r.integer("moe_intermediate_size", limit="intermediate")
    step = r.integer("decoder_sparse_step", limit="layers")
    dense_only = set(r.int_list("mlp_only_layers"))
    sparse = frozenset(i for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
    width = r.integer("shared_expert_intermediate_size", limit="intermediate") if shared else 0
    return Moe(sparse, experts, top_k, size, width, shared_gate=shared)


def _qwen2_moe_experts(r: Reader, layers: int) -> Moe:
    """Qwen2-MoE: experts every decoder_sparse_step-th layer, plus a gated shared expert."""
    return _qwen_experts(r, layers, shared=True)


def _qwen3_moe_experts(r: Reader, layers: int) -> Moe:
    """Qwen3-MoE: experts every decoder_sparse_step-th layer, no shared expert."""
    return _qwen_experts(r, layers, shared=False)


def _qwen2_moe_windows(r: Reader, layers: int) -> list[str]:
    """Qwen2-MoE: with use_sliding_window, odd-numbered layers below max_window_layers slide."""
    if not r.flag("use_sliding_window", False):
        return all_full(r, layers)
    first = r.integer("max_window_layers", minimum=0, limit="layers")
    return [
        "sliding_attention" if (i + 1) % 2 and i < first else "full_attention"
        for i in range(layers)
    ]


MIXTRAL = Family(
    "mixtral",
    ("MixtralForCausalLM",),
    {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
    },
    Decoder(experts=_mixtral_experts),
)

QWEN2_MOE = Family(
    "qwen2_moe",
    ("Qwen2MoeForCausalLM",),
    {
        "vocab_size": 151936,
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
    },
    Decoder(biases=qwen2_biases, layer_types=_qwen2_moe_windows, experts=_qwen2_moe_experts),
)

QWEN3_MOE = Family(
    "qwen3_moe",
    ("Qwen3MoeForCausalLM",),
    {
        "vocab_size": 151936,
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_hidden_layers": 24,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
    },
    Decoder(qk_norm="head", layer_types=qwen_windows, experts=_qwen3_moe_experts),
)


@dataclass(frozen=True, slots=True)
class _Mla:
    """Multi-head latent attention: the LoRA ranks of queries and keys/values, the head dims."""

    q_rank: int | None
    """None: queries projected directly, without a low-rank step."""
    kv_rank: int
    rope: int
    nope: int
    v_dim: int

    def params(self, hidden: int, heads: int, bias: bool) -> list[Param]:
        qk = self.nope + self.rope
        out: list[Param] = []
        if self.q_rank is None:
            out.append(linear("self_attn.q_proj", hidden, heads * qk, bias=False, kind="attention"))
        else:
            out += [
                linear("self_attn.q_a_proj", hidden, self.q_rank, bias=bias, kind="attention"),
                plain("self_attn.q_a_layernorm", self.q_rank, "norm"),
                linear("self_attn.q_b_proj", self.q_rank, heads * qk, bias=False, kind="attention"),
            ]
        kv_out = heads * (self.nope + self.v_dim)
        return [
            *out,
            linear(
                "self_attn.kv_a_proj_with_mqa",
                hidden,
                self.kv_rank + self.rope,
                bias=bias,
                kind="attention",
            ),
            plain("self_attn.kv_a_layernorm", self.kv_rank, "norm"),
            linear("self_attn.kv_b_proj", self.kv_rank, kv_out, bias=False, kind="attention"),
            linear("self_attn.o_proj", heads * self.v_dim, hidden, bias=bias, kind="attention"),
        ]

    def act(self, hidden: int, heads: int) -> int:
        qk = self.nope + self.rope
        act = 2 * hidden + (self.q_rank or 0) + self.kv_rank + self.rope + 2 * heads * qk
        return act + heads * (self.nope + self.v_dim) + heads * self.v_dim


def _mla(r: Reader) -> _Mla:
    return _Mla(
        q_rank=r.opt_integer("q_lora_rank", limit="hidden"),
        kv_rank=r.integer("kv_lora_rank", limit="hidden"),
        rope=r.integer("qk_rope_head_dim", limit="hidden"),
        nope=r.integer("qk_nope_head_dim", limit="hidden"),
        v_dim=r.integer("v_head_dim", limit="hidden"),
    )


def _deepseek_experts(r: Reader, layers: int) -> Moe:
    """Routed and shared experts in every moe_layer_freq-th layer after the first dense ones
    (or where mlp_layer_types says, V3.2)."""
    experts = r.integer("n_routed_experts", limit="experts")
    # NOTE: DeepseekV2Config's own default top-k is null; every expert is then counted active.
    top_k = r.opt_integer("num_experts_per_tok", limit="experts") or experts
    size = r.integer("moe_intermediate_size", limit="intermediate")
    shared = r.integer("n_shared_experts", minimum=0, limit="experts") * size
    kinds = r.str_list("mlp_layer_types")
    if kinds is not None:
        if len(kinds) != layers:
            raise CannotEstimate(f"{r.where}.mlp_layer_types does not name {layers} layers")
        sparse = frozenset(i for i, kind in enumerate(kinds) if kind != "dense")
    else:
        first_dense = r.integer("first_k_dense_replace", minimum=0, limit="layers")
        freq = r.integer("moe_layer_freq", limit="layers", default=1)
        sparse = frozenset(i for i in range(layers) if i >= first_dense and i % freq == 0)
    return Moe(sparse, experts, top_k, size, shared, shared_name="shared_experts")


def _indexer(r: Reader, hidden: int, q_rank: int | None) -> list[Param]:
    """DeepSeek-V3.2's lightning indexer: which past tokens each query attends to."""
    heads = r.integer("index_n_heads", limit="heads")
    dim = r.integer("index_head_dim", limit="hidden")
    if q_rank is None:
        raise CannotEstimate(f"{r.where}: the DeepSeek-V3.2 indexer needs q_lora_rank")
    return [
        linear("self_attn.indexer.wq_b", q_rank, heads * dim, bias=False, kind="attention"),
        linear("self_attn.indexer.wk", hidden, dim, bias=False, kind="attention"),
        plain("self_attn.indexer.k_norm", 2 * dim, "norm"),
        linear("self_attn.indexer.weights_proj", hidden, heads, bias=False, kind="attention"),
    ]


def deepseek_v3(r: Reader, architecture: str) -> Built:
    """DeepSeek-V2, V3 and V3.2: multi-head latent attention and routed + shared experts
    (V3.2 adds its indexer)."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    vocab = r.integer("vocab_size", limit="vocab")
    heads = r.integer("num_attention_heads", limit="heads")
    inter = r.integer("intermediate_size", limit="intermediate")
    context = r.integer("max_position_embeddings", limit="context")
    tied = r.flag("tie_word_embeddings")
    bias = r.flag("attention_bias", False)
    mla = _mla(r)
    moe = _deepseek_experts(r, layers)
    attention = mla.params(hidden, heads, bias)
    if architecture == "DeepseekV32ForCausalLM":
        attention += _indexer(r, hidden, mla.q_rank)
    dense = [
        linear("mlp.gate_proj", hidden, inter, bias=False, kind="mlp"),
        linear("mlp.up_proj", hidden, inter, bias=False, kind="mlp"),
        linear("mlp.down_proj", inter, hidden, bias=False, kind="mlp"),
    ]
    # NOTE: one Layer per kind (dense, sparse), shared by every layer alike, as decoder.py
    # does: what is computed per layer downstream is then computed once per kind.
    made: dict[bool, Layer] = {}
    out: list[Layer] = []
    for i in range(layers):
        sparse = i in moe.sparse
        if sparse not in made:
            params = attention + (moe.params(hidden) if sparse else dense)
            act = mla.act(hidden, heads) + 2 * hidden
            act += moe.act(hidden) if sparse else 4 * inter
            params.append(plain("layernorms", 2 * hidden, "norm"))
            kv = mla.kv_rank + mla.rope
            made[sparse] = Layer(tuple(params), KvKind.LATENT, kv, None, act, heads)
        out.append(made[sparse])
    after = [plain("norm", hidden, "norm")]
    if not tied:
        after.append(linear("lm_head", hidden, vocab, bias=False, kind="head"))
    before = (plain("embed_tokens", vocab * hidden, "embedding"),)
    return Built((Tower("text", before, tuple(out), tuple(after), hidden, vocab),), context)


DEEPSEEK_V3 = Family(
    "deepseek_v3",
    ("DeepseekV3ForCausalLM",),
    {
        "vocab_size": 129280,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048,
        "n_shared_experts": 1,
        "first_k_dense_replace": 3,
        "moe_layer_freq": 1,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
    },
    deepseek_v3,
)

DEEPSEEK_V2 = Family(
    "deepseek_v2", ("DeepseekV2ForCausalLM",), defaults("deepseek_v2"), deepseek_v3
)
DEEPSEEK_V32 = Family(
    "deepseek_v32", ("DeepseekV32ForCausalLM",), defaults("deepseek_v32"), deepseek_v3
)

"""Hybrids of attention with state-space layers or experts: Jamba (Mamba and attention layers,
MoE every other layer), Falcon-H1 (Mamba-2 and attention side by side in every layer), JetMoE
(experts in both the attention and the MLP) and Qwen3-Next (gated DeltaNet and attention).
Defaults are their config classes' (defaults.json).
"""

from __future__ import annotations

import math

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.decoder import Moe
from hubwatch.estimator.families.defaults import family
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


def _attention(h: int, heads: int, kv: int, head_dim: int, bias: bool) -> list[Param]:
    q, k = heads * head_dim, kv * head_dim
    return [
        linear("self_attn.q_proj", h, q, bias=bias, kind="attention"),
        linear("self_attn.k_proj", h, k, bias=bias, kind="attention"),
        linear("self_attn.v_proj", h, k, bias=bias, kind="attention"),
        linear("self_attn.o_proj", q, h, bias=bias, kind="attention"),
    ]


def _gated(prefix: str, h: int, inter: int, bias: bool) -> list[Param]:
    return [
        linear(f"{prefix}.gate_proj", h, inter, bias=bias, kind="mlp"),
        linear(f"{prefix}.up_proj", h, inter, bias=bias, kind="mlp"),
        linear(f"{prefix}.down_proj", inter, h, bias=bias, kind="mlp"),
    ]


def _heads(r: Reader, h: int) -> tuple[int, int, int]:
    heads = r.integer("num_attention_heads", limit="heads")
    kv = r.opt_integer("num_key_value_heads", limit="heads") or heads
    head_dim = r.opt_integer("head_dim", limit="hidden") or h // heads
    if heads % kv:
        raise CannotEstimate(f"{r.where}: {heads} attention heads, {kv} key/value heads")
    return heads, kv, head_dim


def _tower(r: Reader, h: int, layers: tuple[Layer, ...], norm: str) -> tuple[Tower, int]:
    vocab = r.integer("vocab_size", limit="vocab")
    after: list[Param] = [plain(norm, h, "norm")]
    if not r.flag("tie_word_embeddings"):
        after.append(linear("lm_head", h, vocab, bias=False, kind="head"))
    before = (plain("embed_tokens", vocab * h, "embedding"),)
    return Tower("text", before, layers, tuple(after), h, vocab), vocab


def _jamba_mamba(r: Reader, h: int) -> tuple[list[Param], int]:
    inter = r.integer("mamba_expand", limit="small") * h
    state = r.integer("mamba_d_state", limit="hidden")
    kernel = r.integer("mamba_d_conv", limit="small")
    # NOTE: "auto" (the class default) is ceil(hidden / 16), computed for the config's own size.
    given = r.raw.get("mamba_dt_rank")
    rank = r.integer("mamba_dt_rank", limit="hidden") if isinstance(given, int) else -(-h // 16)
    bias, conv_bias = r.flag("mamba_proj_bias"), r.flag("mamba_conv_bias")
    return [
        linear("mamba.in_proj", h, 2 * inter, bias=bias, kind="mlp"),
        plain("mamba.conv1d", inter * kernel + (inter if conv_bias else 0), "conv"),
        linear("mamba.x_proj", inter, rank + 2 * state, bias=False, kind="mlp"),
        linear("mamba.dt_proj", rank, inter, bias=True, kind="mlp"),
        plain("mamba.A_log_and_D", inter * state + inter, "mlp"),
        linear("mamba.out_proj", inter, h, bias=bias, kind="mlp"),
        plain("mamba.dt_b_c_layernorms", rank + 2 * state, "norm"),
    ], inter


def jamba(r: Reader, _architecture: str) -> Built:
    """Jamba: attention every attn_layer_period-th layer (from the offset), Mamba elsewhere;
    experts every expert_layer_period-th layer, a gated MLP elsewhere."""
    h = r.integer("hidden_size", limit="hidden")
    n = r.integer("num_hidden_layers", limit="layers")
    heads, kv, head_dim = _heads(r, h)
    inter = r.integer("intermediate_size", limit="intermediate")
    experts = r.integer("num_experts", limit="experts")
    top_k = r.integer("num_experts_per_tok", limit="experts")
    a_period = r.integer("attn_layer_period", limit="layers")
    a_offset = r.integer("attn_layer_offset", minimum=0, limit="layers")
    e_period = r.integer("expert_layer_period", limit="layers")
    e_offset = r.integer("expert_layer_offset", minimum=0, limit="layers")
    mamba, m_inter = _jamba_mamba(r, h)
    attention = _attention(h, heads, kv, head_dim, bias=False)
    moe = [
        linear("feed_forward.router", h, experts, bias=False, kind="router"),
        linear(
            "feed_forward.experts.gate_up_proj",
            h,
            2 * inter,
            bias=False,
            kind="experts",
            copies=experts,
            used=top_k,
        ),
        linear(
            "feed_forward.experts.down_proj",
            inter,
            h,
            bias=False,
            kind="experts",
            copies=experts,
            used=top_k,
        ),
    ]
    dense = _gated("feed_forward", h, inter, bias=False)
    norms = plain("layernorms", 2 * h, "norm")
    made: dict[tuple[bool, bool], Layer] = {}
    layers = []
    for i in range(n):
        key = (i % a_period == a_offset, i % e_period == e_offset)
        if key not in made:
            mixer = attention if key[0] else mamba
            ffn = moe if key[1] else dense
            act = 4 * h + (top_k * (h + 4 * inter) if key[1] else 4 * inter)
            act += 4 * heads * head_dim if key[0] else 6 * m_inter
            made[key] = Layer(
                (*mixer, *ffn, norms),
                KvKind.FULL if key[0] else KvKind.NONE,
                2 * kv * head_dim if key[0] else 0,
                None,
                act,
                heads,
            )
        layers.append(made[key])
    tower, _ = _tower(r, h, tuple(layers), "final_layernorm")
    context = r.integer("max_position_embeddings", limit="context")
    return Built((tower,), context, notes=("hybrid: Mamba layers keep a fixed state, no cache",))


def _falcon_mamba(r: Reader, h: int) -> tuple[list[Param], int]:
    """Falcon-H1's Mamba-2 mixer: one in_proj for x, z, B, C and dt, a conv, per-head A, D and
    dt bias, an optional gated RMS norm."""
    inter = r.opt_integer("mamba_d_ssm", limit="intermediate") or math.floor(
        r.integer("mamba_expand", limit="small") * h
    )
    state = r.integer("mamba_d_state", limit="hidden")
    groups = r.integer("mamba_n_groups", limit="heads")
    heads = r.integer("mamba_n_heads", limit="heads")
    kernel = r.integer("mamba_d_conv", limit="small")
    conv = inter + 2 * groups * state
    params = [
        linear(
            "mamba.in_proj", h, inter + conv + heads, bias=r.flag("mamba_proj_bias"), kind="mlp"
        ),
        plain("mamba.conv1d", conv * kernel + (conv if r.flag("mamba_conv_bias") else 0), "conv"),
        plain("mamba.dt_bias_A_log_D", 3 * heads, "mlp"),
        linear("mamba.out_proj", inter, h, bias=r.flag("projectors_bias"), kind="mlp"),
    ]
    if r.flag("mamba_rms_norm"):
        params.append(plain("mamba.norm", inter, "norm"))
    return params, inter


def falcon_h1(r: Reader, _architecture: str) -> Built:
    """Falcon-H1: in every layer, attention and a Mamba-2 mixer in parallel, then a gated MLP."""
    h = r.integer("hidden_size", limit="hidden")
    n = r.integer("num_hidden_layers", limit="layers")
    heads, kv, head_dim = _heads(r, h)
    inter = r.integer("intermediate_size", limit="intermediate")
    mamba, m_inter = _falcon_mamba(r, h)
    params = (
        *_attention(h, heads, kv, head_dim, bias=r.flag("attention_bias")),
        *mamba,
        *_gated("feed_forward", h, inter, bias=r.flag("mlp_bias")),
        plain("layernorms", 2 * h, "norm"),
    )
    act = 4 * h + 4 * heads * head_dim + 6 * m_inter + 4 * inter
    layer = Layer(params, KvKind.FULL, 2 * kv * head_dim, None, act, heads)
    tower, _ = _tower(r, h, (layer,) * n, "final_layernorm")
    context = r.integer("max_position_embeddings", limit="context")
    notes = ("hybrid: each layer's Mamba-2 mixer keeps a fixed state beside the KV cache",)
    return Built((tower,), context, notes=notes)


def jetmoe(r: Reader, _architecture: str) -> Built:
    """JetMoE: a mixture of attention experts (shared key/value projection, routed query and
    output experts) and a mixture of gated-MLP experts, each expert layer with an output bias."""
    h = r.integer("hidden_size", limit="hidden")
    n = r.integer("num_hidden_layers", limit="layers")
    experts = r.integer("num_local_experts", limit="experts")
    top_k = r.integer("num_experts_per_tok", limit="experts")
    kv = r.integer("num_key_value_heads", limit="heads") * r.integer("kv_channels", limit="hidden")
    inter = r.integer("intermediate_size", limit="intermediate")
    heads = r.integer("num_attention_heads", limit="heads")

    def moe(prefix: str, wide: int, inner: int) -> list[Param]:
        """Router, `experts` copies of h -> wide and inner -> h, the shared output bias."""
        return [
            linear(f"{prefix}.router.layer", h, experts, bias=False, kind="router"),
            linear(
                f"{prefix}.input_linear",
                h,
                wide,
                bias=False,
                kind="experts",
                copies=experts,
                used=top_k,
            ),
            linear(
                f"{prefix}.output_linear",
                inner,
                h,
                bias=False,
                kind="experts",
                copies=experts,
                used=top_k,
            ),
            plain(f"{prefix}.bias", h, "experts"),
        ]

    params = (
        linear("self_attention.kv_proj", h, 2 * kv, bias=False, kind="attention"),
        *moe("self_attention.experts", kv, kv),
        *moe("mlp", 2 * inter, inter),
        plain("layernorms", 2 * h, "norm"),
    )
    act = 4 * h + 4 * kv + top_k * (2 * kv + 4 * inter)
    layer = Layer(params, KvKind.FULL, 2 * kv, None, act, heads)
    tower, _ = _tower(r, h, (layer,) * n, "norm")
    return Built((tower,), r.integer("max_position_embeddings", limit="context"))


def _next_types(r: Reader, n: int) -> list[str]:
    """Qwen3-Next's layer types: as listed, else full attention every full_attention_interval-th
    layer (4, the config class's), linear attention between."""
    if isinstance(r.raw.get("layer_types"), list):
        given = r.str_list("layer_types") or []
        if len(given) != n:
            raise CannotEstimate(f"{r.where}.layer_types names {len(given)} layers, not {n}")
        return given
    # NOTE: not from the defaults: the class computes its list for its own 48 layers.
    interval = r.raw.get("full_attention_interval", 4)
    if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
        raise CannotEstimate(f"{r.where}.full_attention_interval is not a positive integer")
    return ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n)]


def _delta_net(r: Reader, h: int) -> tuple[list[Param], int]:
    """Qwen3-Next's gated DeltaNet: fused q/k/v/z and b/a projections, a conv over q, k and v,
    per-head dt bias and A, a gated norm, the output projection."""
    k_heads = r.integer("linear_num_key_heads", limit="heads")
    v_heads = r.integer("linear_num_value_heads", limit="heads")
    key = k_heads * r.integer("linear_key_head_dim", limit="hidden")
    v_dim = r.integer("linear_value_head_dim", limit="hidden")
    value = v_heads * v_dim
    conv = 2 * key + value
    return [
        linear("linear_attn.in_proj_qkvz", h, 2 * key + 2 * value, bias=False, kind="attention"),
        linear("linear_attn.in_proj_ba", h, 2 * v_heads, bias=False, kind="attention"),
        plain(
            "linear_attn.conv1d", conv * r.integer("linear_conv_kernel_dim", limit="small"), "conv"
        ),
        plain("linear_attn.dt_bias_A_log", 2 * v_heads, "attention"),
        plain("linear_attn.norm", v_dim, "norm"),
        linear("linear_attn.out_proj", value, h, bias=False, kind="attention"),
    ], conv + value


def qwen3_next(r: Reader, _architecture: str) -> Built:
    """Qwen3-Next: gated DeltaNet layers with gated full attention every few layers (queries
    twice as wide, for the output gate; q/k norms), MoE blocks with a gated shared expert."""
    h = r.integer("hidden_size", limit="hidden")
    n = r.integer("num_hidden_layers", limit="layers")
    heads, kv, head_dim = _heads(r, h)
    bias = r.flag("attention_bias")
    q = heads * head_dim
    attention = [
        linear("self_attn.q_proj", h, 2 * q, bias=bias, kind="attention"),
        linear("self_attn.k_proj", h, kv * head_dim, bias=bias, kind="attention"),
        linear("self_attn.v_proj", h, kv * head_dim, bias=bias, kind="attention"),
        linear("self_attn.o_proj", q, h, bias=bias, kind="attention"),
        plain("self_attn.q_norm_k_norm", 2 * head_dim, "norm"),
    ]
    delta, delta_act = _delta_net(r, h)
    step = r.integer("decoder_sparse_step", limit="layers")
    dense_only = set(r.int_list("mlp_only_layers"))
    experts = r.integer("num_experts", minimum=0, limit="experts")
    sparse = frozenset(i for i in range(n) if experts and (i + 1) % step == 0) - dense_only
    moe = Moe(
        sparse,
        experts,
        r.integer("num_experts_per_tok", limit="experts"),
        r.integer("moe_intermediate_size", limit="intermediate"),
        r.integer("shared_expert_intermediate_size", limit="intermediate"),
        shared_gate=True,
    )
    inter = r.integer("intermediate_size", limit="intermediate")
    norms = plain("layernorms", 2 * h, "norm")
    types = _next_types(r, n)
    made: dict[tuple[str, bool], Layer] = {}
    layers = []
    for i, kind in enumerate(types):
        key = (kind, i in sparse)
        if key not in made:
            full = kind == "full_attention"
            mlp = moe.params(h) if key[1] else _gated("mlp", h, inter, bias=False)
            act = 4 * h + (moe.act(h) if key[1] else 4 * inter)
            act += 6 * q if full else 2 * delta_act
            cache = 2 * kv * head_dim if full else 0
            made[key] = Layer(
                (*(attention if full else delta), *mlp, norms),
                KvKind.FULL if full else KvKind.NONE,
                cache,
                None,
                act,
                heads,
            )
        layers.append(made[key])
    tower, _ = _tower(r, h, tuple(layers), "norm")
    notes = ("hybrid: the DeltaNet layers keep a fixed state; only full attention caches",)
    return Built((tower,), r.integer("max_position_embeddings", limit="context"), notes=notes)


HYBRID: tuple[Family, ...] = (
    family("jamba", "JambaForCausalLM", jamba),
    family("falcon_h1", "FalconH1ForCausalLM", falcon_h1),
    family("jetmoe", "JetMoeForCausalLM", jetmoe),
    family("qwen3_next", "Qwen3NextForCausalLM", qwen3_next),
)
"""The hybrid families, in registration order."""

"""The llama-shaped decoder every text family departs from, and the MoE blocks some put in it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.registry import Built
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


@dataclass(frozen=True, slots=True)
class Moe:
    """The sparse blocks of an MoE family: which layers hold them, how many experts, how wide."""

    sparse: frozenset[int]
    """Indices of the layers with experts in place of the dense MLP."""
    experts: int
    top_k: int
    size: int
    """Intermediate size of one expert."""
    shared: int = 0
    """Intermediate size of the shared expert every token goes through (0: none)."""
    shared_gate: bool = False
    """A gate on the shared expert's output (qwen2_moe)."""
    shared_name: str = "shared_expert"
    """Module name of the shared expert (deepseek_v3 says `shared_experts`)."""
    router_bias: bool = False
    """A bias on the router (gpt_oss)."""
    expert_bias: bool = False
    """Biases on the experts' projections (gpt_oss)."""
    score_bias: bool = False
    """A learned per-expert score correction held as a parameter (ernie4_5_moe)."""

    def params(self, hidden: int) -> list[Param]:
        """Router, routed experts and shared expert of one sparse layer."""
        e, k, size = self.experts, self.top_k, self.size
        bias = self.expert_bias
        out = [
            linear("mlp.gate", hidden, e, bias=self.router_bias, kind="router"),
            linear(
                "mlp.experts.gate_up", hidden, 2 * size, bias=bias, kind="experts", copies=e, used=k
            ),
            linear("mlp.experts.down", size, hidden, bias=bias, kind="experts", copies=e, used=k),
        ]
        if self.score_bias:
            out.append(plain("mlp.gate.e_score_correction_bias", e, "router"))
        if self.shared:
            name = f"mlp.{self.shared_name}"
            out += [
                linear(f"{name}.gate_proj", hidden, self.shared, bias=False, kind="mlp"),
                linear(f"{name}.up_proj", hidden, self.shared, bias=False, kind="mlp"),
                linear(f"{name}.down_proj", self.shared, hidden, bias=False, kind="mlp"),
            ]
            if self.shared_gate:
                out.append(linear("mlp.shared_expert_gate", hidden, 1, bias=False, kind="router"))
        return out

    def act(self, hidden: int) -> int:
        """Activation elements one token leaves in a sparse block."""
        return 2 * self.experts + self.top_k * (hidden + 4 * self.size) + 4 * self.shared


LayerTypes = Callable[[Reader, int], list[str]]
"""A family's attention type for each of `layers` layers when the config gives no layer_types."""

Experts = Callable[[Reader, int], Moe]
"""Reads an MoE family's sparse blocks for a decoder of `layers` layers."""


def all_full(_r: Reader, layers: int) -> list[str]:
    """Full attention in every layer: llama's rule, and every family's without a window."""
    return ["full_attention"] * layers


Biases = Callable[[Reader], tuple[bool, bool, bool]]
"""Whether q/k/v, the attention output and the MLP carry biases, as a family reads them."""


def llama_biases(r: Reader) -> tuple[bool, bool, bool]:
    """attention_bias for every attention projection, mlp_bias for the MLP."""
    bias = r.flag("attention_bias", False)
    return bias, bias, r.flag("mlp_bias", False)


def qwen2_biases(_r: Reader) -> tuple[bool, bool, bool]:
    """q, k and v always carry a bias and o_proj never does, whatever attention_bias says."""
    return True, False, False


def all_biases(_r: Reader) -> tuple[bool, bool, bool]:
    """Every linear layer but the head carries a bias (phi, persimmon, gpt_neox)."""
    return True, True, True


def use_bias(r: Reader) -> tuple[bool, bool, bool]:
    """One `use_bias` switch for every linear layer (starcoder2)."""
    bias = r.flag("use_bias")
    return bias, bias, bias


@dataclass(frozen=True, slots=True)
class Decoder:
    """A llama-shaped decoder family, as the ways it departs from llama; called, it counts a
    config. `Decoder()` is llama itself."""

    fused_qkv: bool = False
    """One qkv_proj instead of q, k and v projections (phi3, gpt_neox, persimmon)."""
    mlp: Literal["gated", "plain", "fused"] = "gated"
    """gate/up/down (llama), up/down without a gate (starcoder2, phi, gpt_neox), one
    gate_up_proj and down (phi3, glm)."""
    biases: Biases = llama_biases
    qk_norm: Literal["head", "projection"] | None = None
    """Norm of queries and keys: per head (qwen3, gemma3) or over the projection (olmo2)."""
    qk_norm_flag: str = ""
    """The config switch that turns the q/k norm on, when it is optional (stablelm, cohere)."""
    norm_size: int = 1
    """Parameters per feature of one norm: 1 (RMSNorm, LayerNorm without bias), 2 (LayerNorm
    with bias), 0 (olmo's LayerNorm without parameters)."""
    norms: int = 2
    """Norm vectors of `hidden_size` per layer (gemma2 and gemma3 have four, cohere one)."""
    norms_rule: Callable[[Reader], int] | None = None
    """Norms per layer when a config switch decides (stablelm's parallel residual)."""
    qk_norm_size: int = 0
    """Parameters per feature of the q/k norms when not `norm_size` (stablelm's have no bias)."""
    layer_scalars: int = 0
    """Scalar parameters per layer (apertus's xIELU activation keeps two)."""
    head_bias: bool = False
    """A bias on the LM head (phi)."""
    sinks: bool = False
    """A learned attention-sink logit per head in each layer (gpt_oss)."""
    floor_head_dim: bool = False
    """head_dim is hidden_size // heads even when heads do not divide it (glm4_moe)."""
    layer_types: LayerTypes = all_full
    """The attention type of each layer when the config gives no `layer_types`."""
    experts: Experts | None = None
    """The sparse blocks of an MoE family; None for a dense one."""
    dense_width: str = ""
    """The config key of the dense layers' MLP width when it is not intermediate_size (Llama 4
    reads intermediate_size_mlp for them, intermediate_size for its experts)."""

    def __call__(self, r: Reader, _architecture: str) -> Built:
        return self.build(r)

    def build(self, r: Reader, name: str = "text", head: bool = True) -> Built:
        """Embeddings, the decoder layers, the final norm and (unless tied or `head` is False)
        the LM head, as one tower called `name`."""
        d = _dims(r, self.floor_head_dim)
        types = _layer_types(r, self, d.layers)
        moe = None if self.experts is None else self.experts(r, d.layers)
        layers = _layers(self, d, types, moe, r)
        before = (plain("embed_tokens", d.vocab * d.hidden, "embedding"),)
        after = [plain("norm", self.norm_size * d.hidden, "norm")]
        if head and not d.tied:
            after.append(linear("lm_head", d.hidden, d.vocab, bias=self.head_bias, kind="head"))
        tower = Tower(name, before, layers, tuple(after), d.hidden, d.vocab)
        return Built((tower,), d.context)


class _Dims(NamedTuple):
    """The sizes and switches a llama-shaped config states, read in one pass (a tuple: made
    for every config, and a frozen dataclass's ten fields are slow to set)."""

    hidden: int
    layers: int
    vocab: int
    heads: int
    kv: int
    head_dim: int
    inter: int
    context: int
    tied: bool
    window: int | None


def _dims(r: Reader, floor: bool = False) -> _Dims:
    # NOTE: the order of the reads is the order of the defaults listed in the model's notes.
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    vocab = r.integer("vocab_size", limit="vocab")
    heads, kv, head_dim = _heads(r, hidden, floor)
    return _Dims(
        hidden,
        layers,
        vocab,
        heads,
        kv,
        head_dim,
        inter=r.integer("intermediate_size", limit="intermediate"),
        context=r.integer("max_position_embeddings", limit="context"),
        tied=r.flag("tie_word_embeddings"),
        window=r.window(),
    )


def _heads(r: Reader, hidden: int, floor: bool = False) -> tuple[int, int, int]:
    heads = r.integer("num_attention_heads", "n_head", limit="heads")
    kv = r.opt_integer("num_key_value_heads", limit="heads") or heads
    head_dim = r.opt_integer("head_dim", limit="hidden")
    if head_dim is None:
        if hidden % heads and not floor:
            raise CannotEstimate(
                f"{r.where}: hidden size {hidden} is not divisible by {heads} attention heads"
            )
        head_dim = hidden // heads
    if heads % kv:
        raise CannotEstimate(
            f"{r.where}: {heads} attention heads are not divisible by {kv} key/value heads"
        )
    return heads, kv, head_dim


def _layer_types(r: Reader, shape: Decoder, layers: int) -> list[str]:
    """Attention type of every layer: as the config lists them, else by the family's rule."""
    given = r.str_list("layer_types")
    if given is None:
        return shape.layer_types(r, layers)
    if len(given) != layers:
        raise CannotEstimate(
            f"{r.where}.layer_types names {len(given)} layers, not num_hidden_layers={layers}"
        )
    return given


def _kv(kind: str, elems: int, window: int | None) -> tuple[KvKind, int, int | None]:
    if kind == "sliding_attention" and window:
        return KvKind.SLIDING, elems, window
    if kind in ("full_attention", "sliding_attention", "chunked_attention"):
        return KvKind.FULL, elems, None
    return KvKind.NONE, 0, None  # linear attention, mamba, conv: a fixed state, not per token


def _attention(shape: Decoder, d: _Dims, r: Reader, qkv_bias: bool, o_bias: bool) -> list[Param]:
    q, k = d.heads * d.head_dim, d.kv * d.head_dim
    if shape.fused_qkv:
        params = [
            linear("self_attn.qkv_proj", d.hidden, q + 2 * k, bias=qkv_bias, kind="attention")
        ]
    else:
        params = [
            linear("self_attn.q_proj", d.hidden, q, bias=qkv_bias, kind="attention"),
            linear("self_attn.k_proj", d.hidden, k, bias=qkv_bias, kind="attention"),
            linear("self_attn.v_proj", d.hidden, k, bias=qkv_bias, kind="attention"),
        ]
    params.append(linear("self_attn.o_proj", q, d.hidden, bias=o_bias, kind="attention"))
    if shape.sinks:
        params.append(plain("self_attn.sinks", d.heads, "attention"))
    if shape.qk_norm_flag and not r.flag(shape.qk_norm_flag):
        return params
    n = shape.qk_norm_size or shape.norm_size
    if shape.qk_norm == "head":
        params += [
            plain("self_attn.q_norm", n * d.head_dim, "norm"),
            plain("self_attn.k_norm", n * d.head_dim, "norm"),
        ]
    elif shape.qk_norm == "projection":
        params += [
            plain("self_attn.q_norm", n * q, "norm"),
            plain("self_attn.k_norm", n * k, "norm"),
        ]
    return params


def _dense(shape: Decoder, d: _Dims, bias: bool) -> list[Param]:
    if shape.mlp == "fused":
        return [
            linear("mlp.gate_up_proj", d.hidden, 2 * d.inter, bias=bias, kind="mlp"),
            linear("mlp.down_proj", d.inter, d.hidden, bias=bias, kind="mlp"),
        ]
    gate = [linear("mlp.gate_proj", d.hidden, d.inter, bias=bias, kind="mlp")]
    return [
        *(gate if shape.mlp == "gated" else []),
        linear("mlp.up_proj", d.hidden, d.inter, bias=bias, kind="mlp"),
        linear("mlp.down_proj", d.inter, d.hidden, bias=bias, kind="mlp"),
    ]


def _layers(
    shape: Decoder, d: _Dims, types: list[str], moe: Moe | None, r: Reader
) -> tuple[Layer, ...]:
    qkv_bias, o_bias, mlp_bias = shape.biases(r)
    if shape.dense_width:
        d = d._replace(inter=r.integer(shape.dense_width, limit="intermediate"))
    attention = _attention(shape, d, r, qkv_bias, o_bias)
    dense = _dense(shape, d, mlp_bias)
    norms = shape.norms if shape.norms_rule is None else shape.norms_rule(r)
    if shape.layer_scalars:
        dense.append(plain("mlp.act_fn", shape.layer_scalars, "mlp"))
    norm = plain("layernorms", shape.norm_size * norms * d.hidden, "norm")
    blocks = {False: (*attention, *dense, norm)}
    if moe is not None:
        blocks[True] = (*attention, *moe.params(d.hidden), norm)
    # NOTE: one Layer per distinct (block, cache) pair, shared by every layer that is alike, so
    # what is computed per layer downstream is computed once per kind of layer.
    sparse = [False] * d.layers if moe is None else [i in moe.sparse for i in range(d.layers)]
    keys = list(zip(sparse, types[: d.layers], strict=True))
    made: dict[tuple[bool, str], Layer] = {}
    for key in dict.fromkeys(keys):  # each kind of layer, in the order they first appear
        experts, kind = key
        act = 4 * d.hidden + 2 * d.heads * d.head_dim + 2 * d.kv * d.head_dim
        act += moe.act(d.hidden) if moe is not None and experts else 4 * d.inter
        cache, elems, window = _kv(kind, 2 * d.kv * d.head_dim, d.window)
        made[key] = Layer(blocks[experts], cache, elems, window, act, d.heads)
    return tuple(map(made.__getitem__, keys))

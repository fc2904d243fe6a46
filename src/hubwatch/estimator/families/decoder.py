"""The llama-shaped decoder every text family departs from, and the MoE blocks some put in it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

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

    def params(self, hidden: int) -> list[Param]:
        """Router, routed experts and shared expert of one sparse layer."""
        e, k, size = self.experts, self.top_k, self.size
        out = [
            linear("mlp.gate", hidden, e, bias=False, kind="router"),
            linear(
                "mlp.experts.gate_up",
                hidden,
                2 * size,
                bias=False,
                kind="experts",
                copies=e,
                used=k,
            ),
            linear("mlp.experts.down", size, hidden, bias=False, kind="experts", copies=e, used=k),
        ]
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


@dataclass(frozen=True, slots=True)
class Decoder:
    """A llama-shaped decoder family, as the ways it departs from llama; called, it counts a
    config. `Decoder()` is llama itself, and what an unknown family is counted as."""

    fused: bool = False
    """One qkv_proj and one gate_up_proj instead of separate projections (phi3)."""
    qwen2_bias: bool = False
    """q, k and v always carry a bias and o_proj never does, whatever attention_bias says."""
    qk_norm: Literal["head", "projection"] | None = None
    """RMSNorm of queries and keys: per head (qwen3, gemma3) or over the projection (olmo2)."""
    norms: int = 2
    """Norm vectors of `hidden_size` per layer (gemma2 and gemma3 have four)."""
    layer_types: LayerTypes = all_full
    """The attention type of each layer when the config gives no `layer_types`."""
    experts: Experts | None = None
    """The sparse blocks of an MoE family; None for a dense one."""

    def __call__(self, r: Reader, _architecture: str) -> Built:
        return self.build(r)

    def build(self, r: Reader, name: str = "text", head: bool = True) -> Built:
        """Embeddings, the decoder layers, the final norm and (unless tied or `head` is False)
        the LM head, as one tower called `name`."""
        d = _dims(r)
        types = _layer_types(r, self, d.layers)
        moe = None if self.experts is None else self.experts(r, d.layers)
        layers = _layers(self, d, types, moe)
        before = (plain("embed_tokens", d.vocab * d.hidden, "embedding"),)
        after = [plain("norm", d.hidden, "norm")]
        if head and not d.tied:
            after.append(linear("lm_head", d.hidden, d.vocab, bias=False, kind="head"))
        tower = Tower(name, before, layers, tuple(after), d.hidden, d.vocab)
        return Built((tower,), d.context)


@dataclass(frozen=True, slots=True)
class _Dims:
    """The sizes and switches a llama-shaped config states, read in one pass."""

    hidden: int
    layers: int
    vocab: int
    heads: int
    kv: int
    head_dim: int
    inter: int
    context: int
    tied: bool
    bias: bool
    mlp_bias: bool
    window: int | None


def _dims(r: Reader) -> _Dims:
    # NOTE: the order of the reads is the order of the defaults listed in the model's notes.
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    vocab = r.integer("vocab_size", limit="vocab")
    heads, kv, head_dim = _heads(r, hidden)
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
        bias=r.flag("attention_bias", False),
        mlp_bias=r.flag("mlp_bias", False),
        window=r.opt_integer("sliding_window", limit="context"),
    )


def _heads(r: Reader, hidden: int) -> tuple[int, int, int]:
    heads = r.integer("num_attention_heads", "n_head", limit="heads")
    kv = r.opt_integer("num_key_value_heads", limit="heads") or heads
    head_dim = r.opt_integer("head_dim", limit="hidden")
    if head_dim is None:
        if hidden % heads:
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


def _attention(shape: Decoder, d: _Dims) -> list[Param]:
    q, k = d.heads * d.head_dim, d.kv * d.head_dim
    qkv_bias = d.bias or shape.qwen2_bias
    if shape.fused:
        params = [linear("self_attn.qkv_proj", d.hidden, q + 2 * k, bias=False, kind="attention")]
    else:
        params = [
            linear("self_attn.q_proj", d.hidden, q, bias=qkv_bias, kind="attention"),
            linear("self_attn.k_proj", d.hidden, k, bias=qkv_bias, kind="attention"),
            linear("self_attn.v_proj", d.hidden, k, bias=qkv_bias, kind="attention"),
        ]
    o_bias = d.bias and not shape.qwen2_bias
    params.append(linear("self_attn.o_proj", q, d.hidden, bias=o_bias, kind="attention"))
    if shape.qk_norm == "head":
        params += [
            plain("self_attn.q_norm", d.head_dim, "norm"),
            plain("self_attn.k_norm", d.head_dim, "norm"),
        ]
    elif shape.qk_norm == "projection":
        params += [plain("self_attn.q_norm", q, "norm"), plain("self_attn.k_norm", k, "norm")]
    return params


def _dense(shape: Decoder, d: _Dims) -> list[Param]:
    if shape.fused:
        return [
            linear("mlp.gate_up_proj", d.hidden, 2 * d.inter, bias=False, kind="mlp"),
            linear("mlp.down_proj", d.inter, d.hidden, bias=False, kind="mlp"),
        ]
    return [
        linear("mlp.gate_proj", d.hidden, d.inter, bias=d.mlp_bias, kind="mlp"),
        linear("mlp.up_proj", d.hidden, d.inter, bias=d.mlp_bias, kind="mlp"),
        linear("mlp.down_proj", d.inter, d.hidden, bias=d.mlp_bias, kind="mlp"),
    ]


def _layers(shape: Decoder, d: _Dims, types: list[str], moe: Moe | None) -> tuple[Layer, ...]:
    attention, dense = _attention(shape, d), _dense(shape, d)
    out: list[Layer] = []
    for i in range(d.layers):
        params = list(attention)
        act = 4 * d.hidden + 2 * d.heads * d.head_dim + 2 * d.kv * d.head_dim
        if moe is not None and i in moe.sparse:
            params += moe.params(d.hidden)
            act += moe.act(d.hidden)
        else:
            params += dense
            act += 4 * d.inter
        params.append(plain("layernorms", shape.norms * d.hidden, "norm"))
        kind, elems, window = _kv(types[i], 2 * d.kv * d.head_dim, d.window)
        out.append(Layer(tuple(params), kind, elems, window, act, d.heads))
    return tuple(out)

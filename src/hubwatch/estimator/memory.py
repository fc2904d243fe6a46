"""Memory in bytes to serve or train a Model, each figure with the assumptions it rests on."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.structure import KvKind, Layer, Model, Param, Tower

GiB = 1024**3
OVERHEAD = GiB
"""CUDA context, cuBLAS/attention workspaces and allocator slack, stated as one fixed GiB."""

DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    # NOTE: int4 as AWQ/GPTQ store it: 4 bits plus an fp16 scale and a 4-bit zero per group of 128.
    "int4": 0.5 + 2.5 / 128,
}
NF4 = 0.5 + 1 / 64 + 4 / (64 * 256)
"""bitsandbytes NF4, double quantisation: 4 bits, 8-bit absmax per 64, fp32 per 256 blocks."""

Method = Literal["full", "lora", "qlora"]
Attention = Literal["flash", "sdpa", "eager"]
Precision = Literal["mixed", "bf16"]


@dataclass(frozen=True, slots=True)
class Unit:
    """A contiguous piece of the model for placement: fixed bytes and bytes per sequence."""

    name: str
    fixed: int
    per_seq: int


@dataclass(frozen=True, slots=True)
class Memory:
    """Bytes needed for one workload, by component, with what was assumed."""

    workload: str
    """serving, full, lora or qlora."""
    total: int
    parts: dict[str, int]
    assumptions: dict[str, str | int | bool]
    units: tuple[Unit, ...] = field(default=(), repr=False)
    """The same bytes split by placement unit (pre-layers, each layer, post-layers)."""
    extra_per_seq: int = 0
    """Bytes per sequence needed once on whichever card runs a layer (recomputation)."""

    @property
    def fixed(self) -> int:
        return OVERHEAD + sum(u.fixed for u in self.units)

    @property
    def per_seq(self) -> int:
        return sum(u.per_seq for u in self.units) + self.extra_per_seq


def _dtype(name: str) -> float:
    try:
        return DTYPE_BYTES[name]
    except KeyError:
        raise CannotEstimate(
            f"unknown dtype {name[:20]!r}; one of {', '.join(DTYPE_BYTES)}"
        ) from None


def _quantised(p: Param) -> bool:
    """Whether weight quantisation applies: linear layers, not embeddings, heads or norms."""
    return p.is_linear and p.kind not in ("head", "embedding")


def _weight_bytes(params: list[Param] | tuple[Param, ...], dtype: str) -> float:
    per = _dtype(dtype)
    return sum(p.numel * (per if _quantised(p) else min(per * 4, 2.0)) for p in params)


def kv_elems(layer: Layer, context: int) -> int:
    """Cached elements for one sequence of `context` tokens in this layer."""
    if layer.kv is KvKind.NONE:
        return 0
    tokens = min(context, layer.window) if layer.kv is KvKind.SLIDING and layer.window else context
    return tokens * layer.kv_elems_per_token


def kv_bytes_per_token(model: Model, kv_dtype: str = "bf16") -> int:
    """Bytes one more token of context adds to the cache, before sliding windows fill."""
    if not model.generates:
        return 0
    per = _dtype(kv_dtype)
    return math.ceil(sum(layer.kv_elems_per_token for layer in model.text.layers) * per)


def serving(
    model: Model,
    *,
    dtype: str = "bf16",
    context: int | None = None,
    batch: int = 1,
    kv_dtype: str = "bf16",
) -> Memory:
    """Weights at `dtype` plus the KV cache for `batch` sequences of `context` tokens."""
    context = model.context if context is None else context
    kv_per = _dtype(kv_dtype)
    units: list[Unit] = []
    text = model.text
    for tower in model.towers:
        if tower is text:
            continue
        units.append(Unit(tower.name, math.ceil(_weight_bytes(tower.all_params(), dtype)), 0))
    units.append(Unit("embeddings", math.ceil(_weight_bytes(text.before, dtype)), 0))
    for i, layer in enumerate(text.layers):
        kv = math.ceil(kv_elems(layer, context) * kv_per) if model.generates else 0
        units.append(Unit(f"layer {i}", math.ceil(_weight_bytes(layer.params, dtype)), kv))
    units.append(Unit("head", math.ceil(_weight_bytes(text.after, dtype)), 0))
    weights = sum(u.fixed for u in units)
    kv_total = batch * sum(u.per_seq for u in units)
    cache = "none (encoder: nothing cached per token)" if not model.generates else kv_dtype
    latent = any(layer.kv is KvKind.LATENT for layer in text.layers)
    assumptions: dict[str, str | int | bool] = {
        "weights dtype": dtype
        + (" (embeddings, head and norms kept in bf16)" if dtype not in ("bf16", "fp16") else ""),
        "kv cache dtype": cache,
        "context tokens": context,
        "batch": batch,
        "overhead": "1 GiB (CUDA context, workspaces, allocator)",
    }
    if latent:
        assumptions["kv layout"] = "MLA latent (kv_lora_rank + rope dims per layer), as vLLM/SGLang"
    if any(layer.kv is KvKind.SLIDING for layer in text.layers):
        assumptions["sliding window"] = "sliding layers keep only their window"
    parts = {"weights": weights, "kv_cache": kv_total, "overhead": OVERHEAD}
    return Memory("serving", sum(parts.values()), parts, assumptions, tuple(units))


def _lora_targets(p: Param, targets: frozenset[str] | None) -> bool:
    if not p.is_linear or p.kind in ("head", "router", "experts", "embedding", "conv"):
        return False
    if targets is None:
        return True
    return p.module.rsplit(".", 1)[-1] in targets


def training(
    model: Model,
    *,
    method: Method = "full",
    seq_len: int = 2048,
    batch: int = 1,
    gradient_checkpointing: bool = False,
    attention: Attention = "flash",
    precision: Precision = "mixed",
    lora_rank: int = 16,
    lora_targets: frozenset[str] | None = None,
) -> Memory:
    """Peak bytes of one training step: weights, gradients, optimizer states, activations,
    logits and loss buffers, and a fixed overhead."""
    if seq_len < 1 or batch < 1 or lora_rank < 1:
        raise CannotEstimate("sequence length, batch and LoRA rank must be at least 1")
    text = model.text
    # Bytes per trainable parameter: weights + gradients + AdamW m and v (+ fp32 master copy).
    state = 16 if precision == "mixed" else 8
    adapter_bytes = 16  # PEFT keeps adapters in fp32 under a bf16 base: 4 + 4 + 8
    units: list[Unit] = []
    parts = {"weights": 0, "gradients_and_optimizer": 0, "activations": 0, "logits_and_loss": 0}
    adapters = 0

    def fixed(params: list[Param] | tuple[Param, ...]) -> int:
        nonlocal adapters
        total = 0.0
        for p in params:
            if method == "full":
                parts["weights"] += 2 * p.numel
                parts["gradients_and_optimizer"] += (state - 2) * p.numel
                total += state * p.numel
                continue
            base = NF4 if method == "qlora" and _quantised(p) else 2.0
            parts["weights"] += math.ceil(base * p.numel)
            total += base * p.numel
            if _lora_targets(p, lora_targets):
                extra = lora_rank * (p.fan_in + p.fan_out) * p.copies
                adapters += extra
                parts["gradients_and_optimizer"] += adapter_bytes * extra
                total += adapter_bytes * extra
        return math.ceil(total)

    tokens = seq_len
    units += [Unit(t.name, fixed(t.all_params()), 0) for t in model.towers if t is not text]
    units.append(Unit("embeddings", fixed(text.before), 0))
    largest = 0
    for i, layer in enumerate(text.layers):
        act = layer.act_elems_per_token * tokens * 2
        if method != "full":
            act += sum(
                lora_rank * tokens * 2 for p in layer.params if _lora_targets(p, lora_targets)
            )
        if attention == "eager":
            act += layer.heads * tokens * tokens * 4  # scores and softmax, bf16
        largest = max(largest, act)
        kept = text.hidden * tokens * 2 if gradient_checkpointing else act
        units.append(Unit(f"layer {i}", fixed(layer.params), kept))
    logits = 10 * tokens * text.vocab  # bf16 logits, their fp32 upcast, fp32 gradient
    units.append(Unit("head", fixed(text.after), logits))
    parts["logits_and_loss"] = batch * logits
    extra = largest if gradient_checkpointing else 0
    parts["activations"] = batch * (
        sum(u.per_seq for u in units if u.name.startswith("layer")) + extra
    )
    parts["overhead"] = OVERHEAD
    if method == "qlora":
        parts["dequantised_layer"] = max(
            (2 * p.numel for layer in text.layers for p in layer.params if p.is_linear),
            default=0,
        )
        units[0] = Unit(units[0].name, units[0].fixed + parts["dequantised_layer"], 0)
    assumptions: dict[str, str | int | bool] = {
        "method": method,
        "batch": batch,
        "sequence length": seq_len,
        "attention kernel": attention
        + (" (no seq x seq scores kept)" if attention != "eager" else " (scores kept)"),
        "gradient checkpointing": gradient_checkpointing,
        "optimizer": "AdamW, fp32 states",
        "overhead": "1 GiB (CUDA context, workspaces, allocator)",
        "logits": "bf16 logits + fp32 upcast + fp32 gradient (10 bytes x tokens x vocab)",
    }
    if method == "full":
        assumptions["precision"] = (
            "mixed: bf16 weights and gradients, fp32 master weights (16 bytes/param)"
            if precision == "mixed"
            else "pure bf16 weights, gradients and AdamW states (8 bytes/param)"
        )
    else:
        assumptions["lora"] = (
            f"rank {lora_rank} on "
            + (
                "every linear layer but the head, routers and routed experts"
                if lora_targets is None
                else ", ".join(sorted(lora_targets))
            )
            + f"; {adapters:,} adapter parameters in fp32 with AdamW"
        )
        assumptions["base weights"] = (
            "NF4 with double quantisation (embeddings, norms, head in bf16)"
            if method == "qlora"
            else "bf16, frozen"
        )
    return Memory(method, sum(parts.values()), parts, assumptions, tuple(units), extra)


def tower_params(tower: Tower) -> int:
    return sum(p.numel for p in tower.all_params())

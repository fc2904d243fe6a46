"""Memory in bytes to serve or train a Model, each figure with the assumptions it rests on."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.structure import KvKind, Layer, Model, Param

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


ADAPTER_BYTES = 16
"""PEFT keeps adapters in fp32 under a bf16 base: 4 + 4 + 8 bytes per adapter parameter."""


@dataclass(frozen=True, slots=True)
class _Run:
    """The settings of one training step, as `training()` was given them."""

    method: Method
    seq_len: int
    batch: int
    gradient_checkpointing: bool
    attention: Attention
    precision: Precision
    lora_rank: int
    lora_targets: frozenset[str] | None


class _Resident:
    """Bytes that stay on the card through a training step, summed unit by unit."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        # Bytes per trainable parameter: weights + gradients + AdamW m and v (+ fp32 master copy).
        self.state = 16 if run.precision == "mixed" else 8
        self.weights = 0
        self.states = 0
        """Gradients and optimizer states (of the adapters, for LoRA and QLoRA)."""
        self.adapters = 0
        """LoRA adapter parameters."""

    def fixed(self, params: list[Param] | tuple[Param, ...]) -> int:
        """Resident bytes of `params`, added to the running totals."""
        total = 0.0
        for p in params:
            if self.run.method == "full":
                self.weights += 2 * p.numel
                self.states += (self.state - 2) * p.numel
                total += self.state * p.numel
                continue
            base = NF4 if self.run.method == "qlora" and _quantised(p) else 2.0
            self.weights += math.ceil(base * p.numel)
            total += base * p.numel
            if _lora_targets(p, self.run.lora_targets):
                extra = self.run.lora_rank * (p.fan_in + p.fan_out) * p.copies
                self.adapters += extra
                self.states += ADAPTER_BYTES * extra
                total += ADAPTER_BYTES * extra
        return math.ceil(total)


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
    run = _Run(
        method,
        seq_len,
        batch,
        gradient_checkpointing,
        attention,
        precision,
        lora_rank,
        lora_targets,
    )
    resident = _Resident(run)
    units, largest = _training_units(model, run, resident)
    extra = largest if gradient_checkpointing else 0
    parts = {
        "weights": resident.weights,
        "gradients_and_optimizer": resident.states,
        "activations": batch
        * (sum(u.per_seq for u in units if u.name.startswith("layer")) + extra),
        "logits_and_loss": batch * units[-1].per_seq,  # the head unit holds the logits
        "overhead": OVERHEAD,
    }
    if method == "qlora":
        parts["dequantised_layer"] = max(
            (2 * p.numel for layer in model.text.layers for p in layer.params if p.is_linear),
            default=0,
        )
        units[0] = Unit(units[0].name, units[0].fixed + parts["dequantised_layer"], 0)
    assumptions = _training_assumptions(run, resident.adapters)
    return Memory(method, sum(parts.values()), parts, assumptions, tuple(units), extra)


def _training_units(model: Model, run: _Run, resident: _Resident) -> tuple[list[Unit], int]:
    """Placement units of a training step, and the largest activations any one layer keeps."""
    text = model.text
    tokens = run.seq_len
    units = [Unit(t.name, resident.fixed(t.all_params()), 0) for t in model.towers if t is not text]
    units.append(Unit("embeddings", resident.fixed(text.before), 0))
    largest = 0
    for i, layer in enumerate(text.layers):
        act = _activations(layer, run)
        largest = max(largest, act)
        kept = text.hidden * tokens * 2 if run.gradient_checkpointing else act
        units.append(Unit(f"layer {i}", resident.fixed(layer.params), kept))
    logits = 10 * tokens * text.vocab  # bf16 logits, their fp32 upcast, fp32 gradient
    units.append(Unit("head", resident.fixed(text.after), logits))
    return units, largest


def _activations(layer: Layer, run: _Run) -> int:
    """Bytes of activations one sequence leaves saved in `layer` for the backward pass."""
    tokens = run.seq_len
    act = layer.act_elems_per_token * tokens * 2
    if run.method != "full":
        act += sum(
            run.lora_rank * tokens * 2 for p in layer.params if _lora_targets(p, run.lora_targets)
        )
    if run.attention == "eager":
        act += layer.heads * tokens * tokens * 4  # scores and softmax, bf16
    return act


def _training_assumptions(run: _Run, adapters: int) -> dict[str, str | int | bool]:
    assumptions: dict[str, str | int | bool] = {
        "method": run.method,
        "batch": run.batch,
        "sequence length": run.seq_len,
        "attention kernel": run.attention
        + (" (no seq x seq scores kept)" if run.attention != "eager" else " (scores kept)"),
        "gradient checkpointing": run.gradient_checkpointing,
        "optimizer": "AdamW, fp32 states",
        "overhead": "1 GiB (CUDA context, workspaces, allocator)",
        "logits": "bf16 logits + fp32 upcast + fp32 gradient (10 bytes x tokens x vocab)",
    }
    if run.method == "full":
        assumptions["precision"] = (
            "mixed: bf16 weights and gradients, fp32 master weights (16 bytes/param)"
            if run.precision == "mixed"
            else "pure bf16 weights, gradients and AdamW states (8 bytes/param)"
        )
        return assumptions
    assumptions["lora"] = (
        f"rank {run.lora_rank} on "
        + (
            "every linear layer but the head, routers and routed experts"
            if run.lora_targets is None
            else ", ".join(sorted(run.lora_targets))
        )
        + f"; {adapters:,} adapter parameters in fp32 with AdamW"
    )
    assumptions["base weights"] = (
        "NF4 with double quantisation (embeddings, norms, head in bf16)"
        if run.method == "qlora"
        else "bf16, frozen"
    )
    return assumptions

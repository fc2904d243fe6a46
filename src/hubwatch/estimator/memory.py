"""Memory in bytes to serve or train a Model, each figure with the assumptions it rests on."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.structure import NOT_QUANTISED, KvKind, Layer, Model, Param, stack
from hubwatch.estimator.walk import Fact, Walk, layer_names, walk

GiB = 1024**3
CUDA_CONTEXT = GiB // 2
"""The CUDA context with cuBLAS and attention workspaces: fixed, whatever the model."""
SLACK = 0.05
"""Allocator slack (reserved but free blocks, fragmentation) as a share of what is resident."""
OVERHEAD = CUDA_CONTEXT
"""The overhead of a card holding nothing: the CUDA context alone."""


def overhead(resident: int) -> int:
    """CUDA context plus allocator slack proportional to the `resident` bytes."""
    return CUDA_CONTEXT + math.ceil(SLACK * resident)


def on_card(fixed: int, per_seq: int) -> tuple[int, int]:
    """(fixed, per sequence) bytes a card needs for units of those sizes, slack and context
    included."""
    return CUDA_CONTEXT + math.ceil((1 + SLACK) * fixed), math.ceil((1 + SLACK) * per_seq)


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
NF4_SINGLE = 0.5 + 4 / 64
"""bitsandbytes NF4 without double quantisation: 4 bits and an fp32 absmax per 64."""


@dataclass(slots=True, unsafe_hash=True)
class Unit:
    """A contiguous piece of the model for placement: fixed bytes and bytes per sequence.

    Not frozen, though never changed once made (hashable all the same): an estimate makes one
    per layer for each of its workloads, and a frozen dataclass's `__init__`
    (`object.__setattr__` per field) costs five times a plain one's."""

    name: str
    fixed: int
    per_seq: int


@dataclass(slots=True, unsafe_hash=True)
class Layout:
    """A workload's placement units as the walk gives them: the units before the text tower's
    layers, the (fixed, per sequence) bytes of each distinct layer with where each layer
    stands, and the units after. Layers alike are kept once, not a Unit per layer: what a
    card holds is summed from the distinct layers times their repeats, and only a two-card
    split reads the layers one by one.

    Not frozen, though never changed once made (hashable all the same), for the reason
    `Unit` is not: one per workload."""

    before: tuple[Unit, ...]
    sizes: tuple[tuple[int, int], ...] = ()
    """(fixed, per sequence) bytes of each distinct layer."""
    index: tuple[int, ...] = ()
    """For each layer, "layer 0" on, its distinct layer's place in `sizes`."""
    repeats: tuple[int, ...] = ()
    """How many layers each distinct layer stands for (as many as `sizes`)."""
    after: tuple[Unit, ...] = ()

    @property
    def units(self) -> tuple[Unit, ...]:
        """Every unit in placement order, a Unit for each layer ("layer 0" on)."""
        sizes = self.sizes
        names = layer_names(len(self.index))
        layers = (Unit(name, *sizes[at]) for name, at in zip(names, self.index, strict=True))
        return (*self.before, *layers, *self.after)

    def totals(self) -> tuple[int, int]:
        """(fixed, per sequence) bytes of all the units together."""
        fixed = per = 0
        for u in self.before + self.after:
            fixed, per = fixed + u.fixed, per + u.per_seq
        for (f, p), times in zip(self.sizes, self.repeats, strict=True):
            fixed += f * times
            per += p * times
        return fixed, per

    def prefix(self, k: int) -> tuple[int, int]:
        """(fixed, per sequence) bytes of units[:k], in placement order."""
        fixed = per = 0
        for u in self.before[:k]:
            fixed, per = fixed + u.fixed, per + u.per_seq
        rest = k - len(self.before)
        j = min(max(rest, 0), len(self.index))
        if j and len(self.sizes) == 1:  # the common case, every layer alike: j of them
            f, p = self.sizes[0]
            fixed, per = fixed + f * j, per + p * j
        elif j:
            layers = self.index[:j]
            fixed += sum(map([f for f, _ in self.sizes].__getitem__, layers))
            per += sum(map([p for _, p in self.sizes].__getitem__, layers))
        if rest > j:
            for u in self.after[: rest - j]:
                fixed, per = fixed + u.fixed, per + u.per_seq
        return fixed, per

    def layers(self, k: int) -> int:
        """How many of units[:k] are layers."""
        return min(max(k - len(self.before), 0), len(self.index))

    def cut(self, k: int) -> str:
        """A two-card split at units[:k] in words: "embeddings..layer 7 | layer 8..head"."""
        name = self.name
        return f"{name(0)}..{name(k - 1)} | {name(k)}..{name(len(self) - 1)}"

    def name(self, i: int) -> str:
        """The name of unit `i` in placement order."""
        before, layers = len(self.before), len(self.index)
        if i < before:
            return self.before[i].name
        if i < before + layers:
            return f"layer {i - before}"
        return self.after[i - before - layers].name

    def __len__(self) -> int:
        return len(self.before) + len(self.index) + len(self.after)


@dataclass(slots=True)
class Memory:
    """Bytes needed for one workload, by component, with what was assumed.

    Not frozen, though never changed once made, for the reason `Unit` is not: one per
    workload (and its dicts kept it from being hashable anyway)."""

    workload: str
    """serving, full, lora or qlora."""
    total: int
    parts: dict[str, int]
    assumptions: dict[str, str | int | bool]
    layout: Layout = field(default=Layout(()), repr=False)
    """The same bytes by placement unit (pre-layers, each layer, post-layers)."""
    extra_per_seq: int = 0
    """Bytes per sequence needed once on whichever card runs a layer (recomputation)."""
    overhead: int = OVERHEAD
    """CUDA context and allocator slack, as `parts["overhead"]`."""

    @property
    def units(self) -> tuple[Unit, ...]:
        """The placement units in order, a Unit for each layer."""
        return self.layout.units

    @property
    def fixed(self) -> int:
        """Bytes whatever the batch, on one card: units, context and slack."""
        return on_card(self.layout.totals()[0], 0)[0]

    @property
    def per_seq(self) -> int:
        """Bytes per sequence of the batch, on one card, slack included."""
        return on_card(0, self.layout.totals()[1] + self.extra_per_seq)[1]


def layout(
    walked: Walk, before: list[Unit], sizes: list[tuple[int, int]], after: tuple[Unit, ...]
) -> Layout:
    """The Layout of units `before` the text tower's layers, its distinct layers' (fixed, per
    sequence) bytes `sizes` (in the order of `walked.layers`) and the units `after`."""
    return Layout(tuple(before), tuple(sizes), walked.index, walked.repeats, after)


OVERHEAD_TOLD = (
    f"CUDA context and workspaces ({CUDA_CONTEXT / GiB:g} GiB) plus {SLACK:.0%} allocator slack"
)


def _dtype(name: str) -> float:
    try:
        return DTYPE_BYTES[name]
    except KeyError:
        raise CannotEstimate(
            f"unknown dtype {name[:20]!r}; one of {', '.join(DTYPE_BYTES)}"
        ) from None


def quantised(p: Param) -> bool:
    """Whether weight quantisation applies: linear layers, not embeddings, heads or norms."""
    return p.is_linear and p.kind not in NOT_QUANTISED


def _weight_bytes(params: list[Param] | tuple[Param, ...], dtype: str) -> float:
    per = _dtype(dtype)
    return sum(p.numel * (per if quantised(p) else min(per * 4, 2.0)) for p in params)


def _bytes(params: tuple[Fact, ...], per: float, other: float) -> float:
    """`_weight_bytes` from the walk's facts: `per` bytes a quantised weight, `other` else."""
    return sum(numel * (per if quant else other) for numel, quant, *_ in params)


def _weights(walked: Walk, params: tuple[Fact, ...], per: float, other: float) -> int:
    """`math.ceil(_bytes(params, per, other))`, from the walk's totals when both byte counts
    are whole: then every term and partial sum of `_bytes` is an integer below 2**53, exact,
    and so is this product of the totals."""
    if per.is_integer() and other.is_integer():
        total, quantised, least, *_ = walked.totals(params)
        if least >= 0 and max(per, other) * total < 2**53:
            return math.ceil(per * quantised + other * (total - quantised))
    return math.ceil(_bytes(params, per, other))


def kv_elems(layer: Layer, context: int) -> int:
    """Cached elements for one sequence of `context` tokens in this layer."""
    if layer.kv is KvKind.NONE:
        return 0
    tokens = min(context, layer.window) if layer.kv is KvKind.SLIDING and layer.window else context
    return tokens * layer.kv_elems_per_token


def kv_bytes_per_token(model: Model, kv_dtype: str = "bf16") -> int:
    """Bytes one more token of context adds to the cache, before sliding windows fill."""
    if not model.caches:
        return 0
    per = _dtype(kv_dtype)
    walked = stack(model.text.layers)  # layers alike counted once, times their repeats
    elems = sum(
        layer.kv_elems_per_token * n for layer, n in zip(walked.layers, walked.repeats, strict=True)
    )
    return math.ceil(elems * per)


SERVING_CONTEXT = 4096
"""Tokens per sequence serving is sized at unless told: a chat turn with its history, not the
longest context a config declares (131,072 tokens would be 6.4 GB of cache for a 1B model)."""


def serving_context(model: Model, context: int | None) -> tuple[int, str]:
    """The context serving is sized at, and how it was chosen, in words."""
    if context is not None:
        return context, f"{context:,} per sequence (the model's maximum: {model.context:,})"
    chosen = min(SERVING_CONTEXT, model.context) if model.context > 0 else SERVING_CONTEXT
    return chosen, f"{chosen:,} per sequence, the default (the model's maximum: {model.context:,})"


def serving(
    model: Model,
    *,
    dtype: str = "bf16",
    context: int | None = None,
    batch: int = 1,
    kv_dtype: str = "bf16",
) -> Memory:
    """Weights at `dtype` plus the KV cache for `batch` sequences of `context` tokens (4,096,
    or the model's maximum when shorter, unless told)."""
    context, told = serving_context(model, context)
    kv_per = _dtype(kv_dtype)
    per = _dtype(dtype)
    other = min(per * 4, 2.0)
    computes = model.computes
    borrowed = computes.borrowed if computes else ()
    walked = walk(model)
    units = [Unit(name, _weights(walked, params, per, other), 0) for name, params in walked.others]
    lent = {p.kind: math.ceil(_weight_bytes([p], dtype)) for p in borrowed}
    units.append(
        Unit(
            "embeddings", _weights(walked, walked.before, per, other) + lent.get("embedding", 0), 0
        )
    )
    caches = model.caches
    # layers alike share one Layer: counted once
    sizes = [
        (
            _weights(walked, params, per, other),
            math.ceil(kv_elems(layer, context) * kv_per) if caches else 0,
        )
        for layer, params in walked.layers
    ]
    head = _weights(walked, walked.after, per, other) + lent.get("head", 0)
    placed = layout(walked, units, sizes, (Unit("head", head, 0),))
    fixed, per_seq = placed.totals()
    weights = fixed - sum(lent.values())
    kv_total = batch * per_seq
    assumptions: dict[str, str | int | bool] = {
        "weights dtype": dtype
        + (" (embeddings, head and norms kept in bf16)" if dtype not in ("bf16", "fp16") else ""),
        "kv cache dtype": kv_dtype if model.caches else "none (nothing cached per token)",
        "context tokens": context,
        "context": told,
        "batch": batch,
        "overhead": OVERHEAD_TOLD,
    }
    if computes is not None:
        assumptions["computes"] = walked.told or ""
    if any(layer.kv is KvKind.LATENT for layer, _ in walked.layers):
        assumptions["kv layout"] = "MLA latent (kv_lora_rank + rope dims per layer), as vLLM/SGLang"
    if any(layer.kv is KvKind.SLIDING for layer, _ in walked.layers):
        assumptions["sliding window"] = "sliding layers keep only their window"
    parts = {"weights": weights, "kv_cache": kv_total}
    if lent:
        parts["borrowed_weights"] = sum(lent.values())
    extra = overhead(sum(parts.values()))
    parts["overhead"] = extra
    return Memory("serving", sum(parts.values()), parts, assumptions, placed, 0, extra)

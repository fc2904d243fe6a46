"""Memory in bytes of one training step (full fine-tune, LoRA, QLoRA), with its assumptions."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.memory import (
    NF4,
    NF4_SINGLE,
    OVERHEAD_TOLD,
    Layout,
    Memory,
    Unit,
    layout,
    overhead,
    quantised,
)
from hubwatch.estimator.structure import Layer, Model, Param
from hubwatch.estimator.targets import check_targets
from hubwatch.estimator.walk import Fact, Walk, walk

Method = Literal["full", "lora", "qlora"]
Attention = Literal["flash", "sdpa", "eager"]
Precision = Literal["mixed", "bf16", "fp32"]

ADAPTER_BYTES = 16
"""PEFT keeps adapters in fp32 under a bf16 base: 4 + 4 + 8 bytes per adapter parameter."""


@dataclass(frozen=True, slots=True)
class Run:
    """The settings of one training step."""

    method: Method = "full"
    seq_len: int = 2048
    batch: int = 1
    gradient_checkpointing: bool = False
    attention: Attention = "flash"
    precision: Precision = "mixed"
    """mixed: bf16 compute with fp32 master weights; bf16: everything bf16 (torchtune); fp32."""
    lora_rank: int = 16
    lora_targets: frozenset[str] | None = None
    """Module names LoRA adapts; None: every linear layer but head, routers, routed experts."""
    double_quant: bool = True
    """QLoRA: bitsandbytes double quantisation of the NF4 absmax."""
    fp32_io: bool = False
    """QLoRA: embeddings, norms and head upcast to fp32 (PEFT's prepare_model_for_kbit_training)."""

    @property
    def act_bytes(self) -> int:
        """Bytes per saved activation element."""
        return 4 if self.precision == "fp32" else 2


class _Resident:
    """Bytes that stay on the card through a training step, summed unit by unit."""

    def __init__(self, run: Run, walked: Walk) -> None:
        self.run = run
        self.walked = walked
        # Bytes per trainable parameter: weights + gradients + AdamW m and v (+ fp32 master copy).
        self.state = {"mixed": 16, "bf16": 8, "fp32": 16}[run.precision]
        self.weight = 4 if run.precision == "fp32" else 2
        self.nf4 = NF4 if run.double_quant else NF4_SINGLE
        qlora = run.method == "qlora"
        self.quant_bytes = self.nf4 if qlora else float(self.weight)
        """Bytes per quantised frozen parameter, under LoRA or QLoRA."""
        self.quant = self.quant_bytes.as_integer_ratio()
        """The same as a fraction (over, under)."""
        self.frozen_bytes = (4 if run.fp32_io else 2) if qlora else self.weight
        """Bytes per frozen parameter not quantised, under LoRA or QLoRA (whole)."""
        self.weights = 0
        self.states = 0
        """Gradients and optimizer states (of the adapters, for LoRA and QLoRA)."""
        self.adapters = 0
        """LoRA adapter parameters."""
        self.borrowed = 0
        """Frozen weights not in the checkpoint (a drafter's target embeddings and head)."""

    def _base(self, p: Param) -> float:
        """Bytes per frozen base parameter under LoRA or QLoRA."""
        return self.quant_bytes if quantised(p) else float(self.frozen_bytes)

    def fixed(self, params: tuple[Fact, ...], times: int = 1) -> int:
        """Resident bytes of `params` (the walk's facts), held `times` over (layers alike),
        added to the running totals; the bytes of one copy returned."""
        before = (self.weights, self.states, self.adapters)
        if self.run.method == "full":
            total = self._full(params)
        elif (found := self._whole(params)) is not None:
            total = found
        else:
            total = self._summed(params)
        if times > 1:
            self.weights += (self.weights - before[0]) * (times - 1)
            self.states += (self.states - before[1]) * (times - 1)
            self.adapters += (self.adapters - before[2]) * (times - 1)
        return total

    def frozen(self, params: tuple[Param, ...]) -> int:
        """Bytes of borrowed weights: resident, never trained, whatever the method."""
        total = 0
        for p in params:
            base = self.weight if self.run.method == "full" else self._base(p)
            total += math.ceil(base * p.numel)
        self.borrowed += total
        return total

    def _full(self, params: tuple[Fact, ...]) -> int:
        weight, state = self.weight, self.state
        numel, _, least, *_ = self.walked.totals(params)
        self.weights += weight * numel
        self.states += (state - weight) * numel
        if state * numel < _EXACT and least >= 0:
            # NOTE: the float sum of integers is exact below 2**53: the same as the loop
            return state * numel
        total = 0.0
        for fact in params:
            total += state * fact[0]
        return math.ceil(total)

    def _summed(self, params: tuple[Fact, ...]) -> int:
        """LoRA or QLoRA resident bytes of `params`, fact by fact, in floats (`_whole` says
        the same in integers, where it can)."""
        run, total = self.run, 0.0
        quant, frozen = self.quant_bytes, float(self.frozen_bytes)
        targets, rank = run.lora_targets, run.lora_rank
        weights = adapters = 0
        for numel, quantised_, target, width, leaf in params:
            base = quant if quantised_ else frozen
            weights += math.ceil(base * numel)
            total += base * numel
            if target and (targets is None or leaf in targets):
                extra = rank * width
                adapters += extra
                total += ADAPTER_BYTES * extra
        self.weights += weights
        self.adapters += adapters
        self.states += ADAPTER_BYTES * adapters
        return math.ceil(total)

    def _whole(self, params: tuple[Fact, ...]) -> int | None:
        """`_summed` in integers, from the walk's totals: its bytes per parameter are
        fractions over a power of two (2 or 4 frozen, NF4's 2113/4096 quantised), so every
        term and partial sum of its float sum is exact while the sum times that power is
        below 2**53, and the float sum is the rational one (None otherwise: the loop
        decides). The weights are ceiled one by one, as the loop does, unless every
        quantised numel is a multiple of the denominator (then they are whole)."""
        run = self.run
        targets = run.lora_targets
        numel, quantised, least, width, narrowest, _, common = self.walked.totals(params)
        frozen, (over, under) = self.frozen_bytes, self.quant
        if targets is not None:
            widths = [f[3] for f in params if f[2] and f[4] in targets]
            width, narrowest = sum(widths), min(widths, default=0)
        adapters = run.lora_rank * width
        rest = frozen * (numel - quantised)
        scaled = over * quantised + under * (rest + ADAPTER_BYTES * adapters)  # total x under
        if scaled >= _EXACT or least < 0 or narrowest < 0:
            return None
        if common % under == 0:
            weights = over * quantised // under + rest
        else:
            weights = sum([-(-over * f[0] // under) for f in params if f[1]]) + rest
        self.weights += weights
        self.adapters += adapters
        self.states += ADAPTER_BYTES * adapters
        return -(-scaled // under)


_EXACT = 2**53


def training(model: Model, run: Run | None = None, **settings: object) -> Memory:
    """Peak bytes of one training step: weights, gradients, optimizer states, activations,
    logits and loss buffers, and the CUDA context with allocator slack. Settings are a `Run`
    or its fields by name (method="lora", seq_len=4096, precision="bf16"…)."""
    run = run or Run(**settings)  # type: ignore[arg-type]
    if run.seq_len < 1 or run.batch < 1 or run.lora_rank < 1:
        raise CannotEstimate("sequence length, batch and LoRA rank must be at least 1")
    check_targets(model, run.lora_targets)
    asked = run.seq_len
    if 0 < model.context < run.seq_len:
        # NOTE: a sequence longer than the model's context is never trained on: capped, said so
        run = _capped(run, model.context)
    resident = _Resident(run, walk(model))
    placed, largest, kept = _training_units(model, run, resident)
    extra = largest if run.gradient_checkpointing else 0
    parts = {
        "weights": resident.weights,
        "gradients_and_optimizer": resident.states,
        "activations": run.batch * (kept + extra),
        "logits_and_loss": run.batch * placed.after[-1].per_seq,  # the head holds the logits
    }
    if resident.borrowed:
        parts["borrowed_weights"] = resident.borrowed
    if run.method == "qlora":
        parts["dequantised_layer"] = 2 * walk(model).largest_linear
        first, *rest = placed.before
        dequantised = Unit(first.name, first.fixed + parts["dequantised_layer"], 0)
        placed = Layout(
            (dequantised, *rest), placed.sizes, placed.index, placed.repeats, placed.after
        )
    # NOTE: slack grows with what is resident (measured peaks of 1.3B QLoRA runs were 1.29x
    # under a fixed 1 GiB); the CUDA context is the same for any model.
    parts["overhead"] = overhead(sum(parts.values()))
    assumptions = _training_assumptions(run, resident.adapters)
    if asked != run.seq_len:
        assumptions["sequence length"] = (
            f"{run.seq_len} (asked {asked}, capped at the model's context of {model.context:,})"
        )
    if model.computes is not None:
        assumptions["computes"] = walk(model).told or ""
        if not model.logits:
            assumptions["logits"] = "none: no LM head, no logits term"
    total = sum(parts.values())
    return Memory(run.method, total, parts, assumptions, placed, extra, parts["overhead"])


@lru_cache(maxsize=64)
def _capped(run: Run, seq_len: int) -> Run:
    """`run` at a shorter sequence length (a few settings and contexts recur)."""
    return replace(run, seq_len=seq_len)


def _training_units(model: Model, run: Run, resident: _Resident) -> tuple[Layout, int, int]:
    """Placement units of a training step, the largest activations any one layer keeps, and
    the activations all layers keep."""
    walked = walk(model)
    tokens = run.seq_len
    computes = model.computes
    borrowed = computes.borrowed if computes else ()
    units = [Unit(name, resident.fixed(params), 0) for name, params in walked.others]
    lent = tuple(p for p in borrowed if p.kind == "embedding") if borrowed else ()
    units.append(Unit("embeddings", resident.fixed(walked.before) + resident.frozen(lent), 0))
    # NOTE: layers alike are one Layer object: count each once, times its repeats.
    per_layer: list[tuple[int, int]] = []
    largest = total = 0
    checkpointed = model.text.hidden * tokens * run.act_bytes
    for (layer, params), repeats in zip(walked.layers, walked.repeats, strict=True):
        act = _activations(layer, params, run, walked)
        largest = max(largest, act)
        kept = checkpointed if run.gradient_checkpointing else act
        per_layer.append((resident.fixed(params, repeats), kept))
        total += kept * repeats
    logits = 10 * tokens * model.logits  # bf16 logits, their fp32 upcast, fp32 gradient
    heads = tuple(p for p in borrowed if p.kind != "embedding") if borrowed else ()
    head = resident.fixed(walked.after) + resident.frozen(heads)
    return layout(walked, units, per_layer, (Unit("head", head, logits),)), largest, total


def _activations(layer: Layer, params: tuple[Fact, ...], run: Run, walked: Walk) -> int:
    """Bytes of activations one sequence leaves saved in `layer` (its parameters' facts
    `params`, of `walked`) for the backward pass."""
    tokens = run.seq_len
    act = layer.act_elems_per_token * tokens * run.act_bytes
    if run.method != "full":
        targets = run.lora_targets
        if targets is None:
            adapted = walked.totals(params)[5]
        else:
            adapted = sum(1 for fact in params if fact[2] and fact[4] in targets)
        act += adapted * (run.lora_rank * tokens * 2)
    if run.attention == "eager":
        act += layer.heads * tokens * tokens * 4  # scores and softmax, bf16
    return act


def _training_assumptions(run: Run, adapters: int) -> dict[str, str | int | bool]:
    assumptions = dict(_told(run))  # a copy: the caller adds to it
    if run.method != "full":
        # NOTE: the adapters' count goes in its place, before the base weights
        base = assumptions.pop("base weights")
        assumptions["lora"] = (
            f"{assumptions.pop('lora')}; {adapters:,} adapter parameters in fp32 with AdamW"
        )
        assumptions["base weights"] = base
    return assumptions


@lru_cache(maxsize=64)
def _told(run: Run) -> dict[str, str | int | bool]:
    """What a training step under `run` assumes, in words (the LoRA line without its count
    of adapters): the same few settings size every model."""
    assumptions: dict[str, str | int | bool] = {
        "method": run.method,
        "batch": run.batch,
        "sequence length": run.seq_len,
        "attention kernel": run.attention
        + (" (no seq x seq scores kept)" if run.attention != "eager" else " (scores kept)"),
        "gradient checkpointing": run.gradient_checkpointing,
        "optimizer": "AdamW, states in "
        + ("bf16" if run.precision == "bf16" and run.method == "full" else "fp32"),
        "overhead": OVERHEAD_TOLD,
        "logits": "bf16 logits + fp32 upcast + fp32 gradient (10 bytes x tokens x vocab)",
    }
    if run.method == "full":
        assumptions["precision"] = {
            "mixed": "mixed: bf16 weights and gradients, fp32 master weights (16 bytes/param)",
            "bf16": "pure bf16 weights, gradients and AdamW states (8 bytes/param)",
            "fp32": "fp32 weights, gradients and AdamW states (16 bytes/param)",
        }[run.precision]
        return assumptions
    assumptions["lora"] = f"rank {run.lora_rank} on " + (
        "every linear layer but the head, routers and routed experts"
        if run.lora_targets is None
        else ", ".join(sorted(run.lora_targets))
    )
    if run.method == "qlora":
        assumptions["base weights"] = (
            "NF4 "
            + ("with" if run.double_quant else "without")
            + " double quantisation; embeddings, norms, head in "
            + ("fp32" if run.fp32_io else "bf16")
        )
    else:
        assumptions["base weights"] = ("fp32" if run.precision == "fp32" else "bf16") + ", frozen"
    return assumptions

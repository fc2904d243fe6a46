"""A roofline estimate of a training job's time and price on a priced GPU."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hubwatch.estimator.cards import Gpu
from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.memory import Memory
from hubwatch.estimator.params import ParamCount

MFU = 0.4
"""Achieved fraction of peak FLOP/s assumed for a well-tuned training run."""


@dataclass(frozen=True, slots=True)
class Cost:
    """Hours and dollars for a job, and what the figure assumes."""

    hours: float
    usd: float
    flops: float
    bound: str
    """compute or memory: which side of the roofline sets the time."""
    assumptions: dict[str, str | int | float]


def training_cost(
    params: ParamCount,
    memory: Memory,
    card: Gpu,
    *,
    tokens: int,
    epochs: float = 1.0,
    gpus: int = 1,
    seq_len: int = 2048,
    batch: int = 1,
) -> Cost:
    """Time and price to train on `tokens` tokens for `epochs` on `gpus` cards of `card`."""
    if tokens < 1 or epochs <= 0 or gpus < 1:
        raise CannotEstimate("tokens, epochs and GPUs must be positive")
    seen = tokens * epochs
    # Forward 2N, backward 4N per token; a frozen base (LoRA) skips weight gradients: 4N.
    per_token = 6 if memory.workload == "full" else 4
    flops = per_token * params.active * seen
    compute_s = flops / (card.tflops * 1e12 * MFU * gpus)
    steps = math.ceil(seen / (seq_len * batch * gpus))
    # Each step reads every resident byte (weights, optimizer states) at least once.
    memory_s = (
        steps
        * (memory.parts.get("weights", 0) + memory.parts.get("gradients_and_optimizer", 0))
        / card.bandwidth
    )
    seconds = max(compute_s, memory_s)
    hours = seconds / 3600
    return Cost(
        hours=hours,
        usd=hours * card.usd_per_hour * gpus,
        flops=flops,
        bound="compute" if compute_s >= memory_s else "memory",
        assumptions={
            "job": f"{tokens:,} tokens x {epochs:g} epoch(s), sequences of {seq_len}, "
            f"batch {batch}",
            "gpu": f"{gpus} x {card.name} at ${card.usd_per_hour:.2f}/h, {card.tflops:g} TFLOP/s",
            "utilisation": f"{MFU:.0%} of peak FLOP/s",
            "flops per token": f"{per_token} x active parameters ({params.active:,})",
        },
    )

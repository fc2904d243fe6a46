"""A roofline estimate of a training job's time and price on a priced GPU."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from hubwatch.estimator.cards import Gpu
from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.memory import Memory
from hubwatch.estimator.params import ParamCount

MFU = 0.4
"""Achieved fraction of peak FLOP/s assumed for a well-tuned training run."""
PRICES_DATED = "list prices of 2026-12, docs/gpu-prices.md"
"""Where the per-hour prices of `gpus.json` come from, as the cost line cites them."""


@dataclass(frozen=True, slots=True)
class Cost:
    """Hours and dollars for a job, and what the figure assumes."""

    hours: float
    usd: float
    flops: float
    bound: str
    """compute or memory: which side of the roofline sets the time."""
    assumptions: dict[str, str | int | float]


UTILISATION = f"{MFU:.0%} of peak FLOP/s"


@lru_cache(maxsize=64)
def _job(epochs: float, samples: int, tokens_per_sample: int, batch: int) -> str:
    """The job in words; the same few jobs price every model, each workload of it."""
    seen = epochs * samples * tokens_per_sample
    return (
        f"{epochs:g} epoch(s) x {samples:,} samples x {tokens_per_sample:,} tokens "
        f"= {seen:,.0f} tokens, batch {batch}"
    )


@lru_cache(maxsize=64)
def _gpu(gpus: int, card: Gpu) -> str:
    return (
        f"{gpus} x {card.name} at ${card.usd_per_hour:.2f}/h ({PRICES_DATED}), "
        f"{card.tflops:g} TFLOP/s"
    )


def training_cost(
    params: ParamCount,
    memory: Memory,
    card: Gpu,
    *,
    samples: int,
    tokens_per_sample: int = 2048,
    epochs: float = 1.0,
    gpus: int = 1,
    batch: int = 1,
) -> Cost:
    """Time and price to train `epochs` over `samples` sequences of `tokens_per_sample` tokens
    on `gpus` cards of `card`."""
    per_token, flops, compute_s, memory_s = _roofline(
        params, memory, card, samples, tokens_per_sample, epochs, gpus, batch
    )
    hours = max(compute_s, memory_s) / 3600
    return Cost(
        hours=hours,
        usd=hours * card.usd_per_hour * gpus,
        flops=flops,
        bound="compute" if compute_s >= memory_s else "memory",
        assumptions={
            "job": _job(epochs, samples, tokens_per_sample, batch),
            "gpu": _gpu(gpus, card),
            "utilisation": UTILISATION,
            "flops per token": f"{per_token} x active parameters ({params.active:,})",
        },
    )


def priced(
    params: ParamCount,
    memory: Memory,
    card: Gpu,
    *,
    samples: int,
    tokens_per_sample: int = 2048,
    epochs: float = 1.0,
    gpus: int = 1,
    batch: int = 1,
) -> str:
    """`training_cost`'s hours and dollars as the table prints them, with cents."""
    _, _, compute_s, memory_s = _roofline(
        params, memory, card, samples, tokens_per_sample, epochs, gpus, batch
    )
    hours = max(compute_s, memory_s) / 3600
    return price_words(hours, hours * card.usd_per_hour * gpus)


def price_words(hours: float, usd: float) -> str:
    """A priced job's hours and dollars, with cents, as the table prints them."""
    return f"{hours:,.2f} h, ${usd:,.2f}"


def job_words(
    card: Gpu, *, samples: int, tokens_per_sample: int, epochs: float, gpus: int, batch: int
) -> str:
    """The priced job in words, as the table cites it: the job, then the cards it runs on."""
    return f"{_job(epochs, samples, tokens_per_sample, batch)} on {_gpu(gpus, card)}"


def _roofline(
    params: ParamCount,
    memory: Memory,
    card: Gpu,
    samples: int,
    tokens_per_sample: int,
    epochs: float,
    gpus: int,
    batch: int,
) -> tuple[int, float, float, float]:
    """FLOPs per token per parameter, FLOPs, and the seconds compute and memory traffic take."""
    if samples < 1 or tokens_per_sample < 1 or epochs <= 0 or gpus < 1:
        raise CannotEstimate("samples, tokens per sample, epochs and GPUs must be positive")
    seen = epochs * samples * tokens_per_sample
    # Forward 2N, backward 4N per token; a frozen base (LoRA) skips weight gradients: 4N.
    per_token = 6 if memory.workload == "full" else 4
    flops = per_token * params.active * seen
    compute_s = flops / (card.tflops * 1e12 * MFU * gpus)
    steps = math.ceil(epochs * samples / (batch * gpus))
    # Each step reads every resident byte (weights, optimizer states) at least once.
    parts = memory.parts
    memory_s = (
        steps * (parts.get("weights", 0) + parts.get("gradients_and_optimizer", 0)) / card.bandwidth
    )
    return per_token, flops, compute_s, memory_s

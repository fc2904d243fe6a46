"""The GPU table (memory, peak, bandwidth, price) and the largest batch each card can hold."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.memory import Memory, on_card

MAX_BATCH = 65_536
"""Reported as "at least" when memory allows more (encoders, tiny models)."""


@dataclass(frozen=True, slots=True)
class Gpu:
    """One priced accelerator, from `gpus.json`."""

    name: str
    memory: int
    """Bytes."""
    tflops: float
    """Dense bf16 peak, TFLOP/s."""
    bandwidth: float
    """Memory bandwidth, bytes/s."""
    usd_per_hour: float


@cache
def gpus() -> tuple[Gpu, ...]:
    """The GPU table shipped with hubwatch (`estimator/gpus.json`)."""
    data = json.loads(files("hubwatch.estimator").joinpath("gpus.json").read_text())
    return tuple(
        Gpu(
            g["name"],
            g["memory_mib"] * 2**20,
            g["tflops"],
            g["bandwidth_gbs"] * 1e9,
            g["usd_per_hour"],
        )
        for g in data["gpus"]
    )


def gpu(name: str) -> Gpu:
    """A GPU by name, case-insensitive; CannotEstimate listing the known ones otherwise."""
    for g in gpus():
        if g.name.lower() == name.lower():
            return g
    raise CannotEstimate(f"unknown GPU {name[:30]!r}; one of {', '.join(g.name for g in gpus())}")


@dataclass(frozen=True, slots=True)
class Fit:
    """The largest batch of one workload on one card, or on two cards split by layers."""

    gpu: str
    cards: int
    """1, or 2 when one card cannot hold batch 1 (a contiguous pipeline split)."""
    max_batch: int
    """0 when even two cards cannot hold batch 1."""
    split: str | None = None
    """For two cards: which units each holds."""


def fit(memory: Memory, card: Gpu) -> Fit:
    """Largest batch of `memory`'s workload on `card`; a two-card split when one is too small."""
    one = _max_batch(memory.fixed, memory.per_seq, card.memory)
    if one >= 1:
        return Fit(card.name, 1, one)
    units = memory.units
    best, where = 0, None
    for k in range(1, len(units)):
        first, second = units[:k], units[k:]
        b = min(
            _max_batch(
                *on_card(
                    sum(u.fixed for u in part),
                    sum(u.per_seq for u in part) + memory.extra_per_seq,
                ),
                card.memory,
            )
            for part in (first, second)
        )
        if b > best:
            best, where = (
                b,
                f"{first[0].name}..{first[-1].name} | {second[0].name}..{second[-1].name}",
            )
    return Fit(card.name, 2, best, where)


def _max_batch(fixed: int, per_seq: int, capacity: int) -> int:
    if fixed > capacity:
        return 0
    if per_seq <= 0:
        return MAX_BATCH
    return min(MAX_BATCH, math.floor((capacity - fixed) / per_seq))


def fits(memory: Memory) -> list[Fit]:
    """The largest batch on every card of the table."""
    return [fit(memory, card) for card in gpus()]

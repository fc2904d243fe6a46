"""The GPU table (memory, peak, bandwidth, price) and the largest batch each card can hold."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.memory import CUDA_CONTEXT, SLACK, Memory, on_card

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
    layers: tuple[int, int] | None = None
    """For two cards: how many of the layers each holds (the cut)."""
    need: int = 0
    """Bytes at batch 1 on the fuller card (of the two, when split)."""


def fit(memory: Memory, card: Gpu) -> Fit:
    """Largest batch of `memory`'s workload on `card`; a two-card split when one is too small."""
    return _fit(memory, card, _Sums(memory))


class _Sums:
    """Running sums of a workload's units: where each two-card split puts the bytes."""

    def __init__(self, memory: Memory) -> None:
        self.units = memory.units
        self.extra = memory.extra_per_seq
        self.fixed = [0]
        self.per = [0]
        for u in memory.units:
            self.fixed.append(self.fixed[-1] + u.fixed)
            self.per.append(self.per[-1] + u.per_seq)


def _need(fixed: int, per_seq: int) -> int:
    """Bytes of batch 1 on one card holding units of these sizes."""
    return sum(on_card(fixed, per_seq))


def _fit(memory: Memory, card: Gpu, sums: _Sums) -> Fit:
    one = _max_batch(*on_card(sums.fixed[-1], sums.per[-1] + sums.extra), card.memory)
    whole = _need(sums.fixed[-1], sums.per[-1] + sums.extra)
    if one >= 1:
        return Fit(card.name, 1, one, need=whole)
    units, fixed, per, extra = sums.units, sums.fixed, sums.per, sums.extra
    capacity, grow = card.memory - CUDA_CONTEXT, 1 + SLACK

    def fitting(fixed_bytes: int, per_seq: int) -> int:  # _max_batch(*on_card(...)), inlined
        room = capacity - math.ceil(grow * fixed_bytes)
        if room < 0:
            return 0
        if per_seq <= 0:
            return MAX_BATCH
        return min(MAX_BATCH, room // math.ceil(grow * per_seq))

    def first(k: int) -> int:  # units[:k] on one card: fewer sequences fit as k grows
        return fitting(fixed[k], per[k] + extra)

    def second(k: int) -> int:  # units[k:] on the other: more fit as k grows
        return fitting(fixed[-1] - fixed[k], per[-1] - per[k] + extra)

    # NOTE: min(first, second) peaks where the two cross, so a binary search finds the best
    # split in log(layers) steps instead of trying every one.
    lo, hi = 1, len(units) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if first(mid) <= second(mid):
            hi = mid
        else:
            lo = mid + 1
    best, cut = 0, 0
    for k in (lo - 1, lo):
        if 1 <= k < len(units) and (b := min(first(k), second(k))) > best:
            best, cut = b, k
    if not cut:
        return Fit(card.name, 2, 0, need=whole)
    where = f"{units[0].name}..{units[cut - 1].name} | {units[cut].name}..{units[-1].name}"
    layers = sum(1 for u in units[:cut] if u.name.startswith("layer "))
    total = sum(1 for u in units if u.name.startswith("layer "))
    need = max(
        _need(fixed[cut], per[cut] + extra),
        _need(fixed[-1] - fixed[cut], per[-1] - per[cut] + extra),
    )
    return Fit(card.name, 2, best, where, (layers, total - layers), need)


def _max_batch(fixed: int, per_seq: int, capacity: int) -> int:
    if fixed > capacity:
        return 0
    if per_seq <= 0:
        return MAX_BATCH
    return min(MAX_BATCH, math.floor((capacity - fixed) / per_seq))


def fits(memory: Memory) -> list[Fit]:
    """The largest batch on every card of the table."""
    sums = _Sums(memory)
    return [_fit(memory, card, sums) for card in gpus()]

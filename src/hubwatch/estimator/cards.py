"""The GPU table (memory, peak, bandwidth, price) and the largest batch each card can hold."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
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


@dataclass(slots=True, unsafe_hash=True)
class Fit:
    """The largest batch of one workload on one card, or on two cards split by layers.

    Not frozen, though never changed once made (hashable all the same): an estimate makes one
    per workload and card, and a frozen dataclass's `__init__` costs four times a plain one's."""

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
    return _fit(card, _Sums(memory))


class _Sums:
    """A workload's bytes on one card, and what each two-card split puts on each card. Built
    once per workload, whichever cards it is fitted on."""

    __slots__ = ("layout", "count", "extra", "fixed", "per", "alone", "whole", "kept", "start")

    def __init__(self, memory: Memory) -> None:
        self.layout = layout = memory.layout
        self.count = len(layout)
        self.extra = memory.extra_per_seq
        self.fixed, self.per = layout.totals()
        self.alone = on_card(self.fixed, self.per + self.extra)
        """(fixed, per sequence) bytes of the whole workload on one card."""
        self.whole = sum(self.alone)
        self.kept: dict[int, tuple[int, int, int, int]] = {}
        """`sides(k)` by k, as computed so far."""
        self.start: int | None = None
        """`middle()`, once a card needs it (the same for every card)."""

    def sides(self, k: int) -> tuple[int, int, int, int]:
        """Units[:k] and units[k:] on a card each, slack included: (fixed, per sequence) of
        the first, then of the second; kept, since the searches of the cards go through the
        same cuts."""
        found = self.kept.get(k)
        if found is None:
            fixed, per = self.layout.prefix(k)
            extra = self.extra
            found = (
                math.ceil(_GROW * fixed),
                math.ceil(_GROW * (per + extra)),
                math.ceil(_GROW * (self.fixed - fixed)),
                math.ceil(_GROW * (self.per - per + extra)),
            )
            self.kept[k] = found
        return found

    def middle(self) -> int:
        """The cut that leaves about half of the bytes at batch 1 on each side, where the
        best split of most workloads lies or near it (the search starts there)."""
        layout = self.layout
        before = len(layout.before)
        layers = len(layout.index)
        start = sum(u.fixed + u.per_seq for u in layout.before)
        end = sum(u.fixed + u.per_seq for u in layout.after)
        whole = self.fixed + self.per
        on_layers = whole - start - end
        half = whole / 2 - start
        j = min(max(round(half * layers / on_layers), 0), layers) if on_layers > 0 else 0
        return min(max(before + j, 1), self.count - 1)


_GROW = 1 + SLACK
_ROUNDING = 1024
"""Bytes more than the float rounding of `_GROW` times any sum of bytes can be off by."""


def _fit(card: Gpu, sums: _Sums) -> Fit:
    one = _max_batch(*sums.alone, card.memory)
    if one >= 1:
        return Fit(card.name, 1, one, None, None, sums.whole)
    return _split(card, sums)


def _split(card: Gpu, sums: _Sums) -> Fit:
    """The best two-card split of a workload one `card` cannot hold at batch 1."""
    count = sums.count
    capacity = card.memory - CUDA_CONTEXT
    if sums.whole - CUDA_CONTEXT > 2 * capacity + _ROUNDING:
        # NOTE: a card holds its side at batch 1 only if the side's fixed and per-sequence
        # bytes are at most `capacity`; the two sides' bytes sum to at least the whole's
        # (each side's holds the per-sequence extra, and the sums' rounding is within
        # `_ROUNDING`), so here every cut leaves more than `capacity` on one card and no cut
        # holds batch 1: what the search below would find, found without it.
        return Fit(card.name, 2, 0, None, None, sums.whole)

    sides, kept = sums.sides, sums.kept
    tried: dict[int, tuple[int, int]] = {}

    def both(k: int) -> tuple[int, int]:  # units[:k] on one card, units[k:] on the other
        # `_max_batch(*on_card(...))` of each side, inlined: one call per cut tried
        a, pa, b, pb = kept.get(k) or sides(k)
        found = tried[k] = (
            0 if a > capacity else MAX_BATCH if pa <= 0 else min(MAX_BATCH, (capacity - a) // pa),
            0 if b > capacity else MAX_BATCH if pb <= 0 else min(MAX_BATCH, (capacity - b) // pb),
        )
        return found

    # NOTE: min(first, second) peaks where the two cross (fewer sequences fit the first card
    # as k grows, more the second): the first cut where first <= second is the best split
    # or next to it, found in log(layers) steps instead of trying every one.
    if sums.start is None:
        sums.start = sums.middle()
    lo = _crossing(both, 1, count - 1, sums.start)
    best, cut = 0, 0
    for k in (lo - 1, lo):
        if 1 <= k < count and (b := min(tried.get(k) or both(k))) > best:
            best, cut = b, k
    if not cut:
        return Fit(card.name, 2, 0, need=sums.whole)
    layout = sums.layout
    layers = layout.layers(cut)
    a, pa, b, pb = kept[cut]
    need = CUDA_CONTEXT + max(a + pa, b + pb)
    split = (layers, len(layout.index) - layers)
    return Fit(card.name, 2, best, layout.cut(cut), split, need)


def _crossing(both: Callable[[int], tuple[int, int]], lo: int, hi: int, start: int) -> int:
    """The least cut k in [lo, hi) where the first card holds no more sequences than the
    second (`both(k)`: those of each; fewer on the first as k grows), or hi where there is
    none: a binary search, within bounds galloped out from `start`, since the crossing is
    seldom far from where the bytes halve."""
    step = 1
    if lo <= start < hi:
        first, second = both(start)
        if first <= second:
            hi = start
            while (k := start - step) >= lo and (b := both(k))[0] <= b[1]:
                hi, step = k, step * 2
            lo = max(lo, k + 1)
        else:
            lo = start + 1
            while (k := start + step) < hi and (b := both(k))[0] > b[1]:
                lo, step = k + 1, step * 2
            hi = min(hi, k)
    while lo < hi:
        mid = (lo + hi) // 2
        first, second = both(mid)
        if first <= second:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _max_batch(fixed: int, per_seq: int, capacity: int) -> int:
    if fixed > capacity:
        return 0
    if per_seq <= 0:
        return MAX_BATCH
    return min(MAX_BATCH, math.floor((capacity - fixed) / per_seq))


def fits(memory: Memory) -> list[Fit]:
    """The largest batch on every card of the table."""
    sums = _Sums(memory)
    fixed, per = sums.alone
    whole = sums.whole
    out = []
    for card in gpus():
        # NOTE: `_fit`'s one-card case, inlined: most workloads fit most cards. The floor
        # division is `_max_batch`'s floor of a float quotient: the two differ only for
        # quotients within 2**-53 of a whole number, which no card's bytes come near.
        free = card.memory - fixed
        if per <= 0 and free >= 0:
            out.append(Fit(card.name, 1, MAX_BATCH, None, None, whole))
        elif free >= per > 0:
            out.append(Fit(card.name, 1, min(MAX_BATCH, free // per), None, None, whole))
        else:
            out.append(_split(card, sums))
    return out

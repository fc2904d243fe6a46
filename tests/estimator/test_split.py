"""The two-card split: its running sums and its search, against the units summed one by one."""

from __future__ import annotations

import math

from hypothesis import event, given, settings
from hypothesis import strategies as st

from hubwatch.estimator import fits, gpus
from hubwatch.estimator.cards import MAX_BATCH
from hubwatch.estimator.memory import CUDA_CONTEXT, SLACK, Layout, Memory, Unit

GB = 10**9


@st.composite
def layouts(draw: st.DrawFn) -> Layout:
    """A workload's units: a few before and after, and up to 90 layers of 1-3 distinct sizes,
    of 10-400 GB in all (so that some card of the table needs a split)."""
    n = draw(st.integers(0, 90))
    layer = draw(st.integers(10, 400)) * GB // max(n, 1)
    fixed = st.integers(layer // 2, layer * 3 // 2)
    per = st.integers(0, layer // 20)
    ends = st.lists(st.tuples(st.integers(0, 2 * layer), per), max_size=3)
    before = tuple(Unit(f"b{i}", f, p) for i, (f, p) in enumerate(draw(ends)))
    after = tuple(Unit(f"a{i}", f, p) for i, (f, p) in enumerate(draw(ends)))
    kinds = draw(st.lists(st.tuples(fixed, per), min_size=1, max_size=3)) if n else []
    drawn = draw(st.lists(st.integers(0, len(kinds) - 1), min_size=n, max_size=n)) if n else []
    used = sorted(set(drawn))  # each distinct size stands for at least one layer
    index = tuple(used.index(at) for at in drawn)
    sizes = tuple(kinds[at] for at in used)
    repeats = tuple(index.count(at) for at in range(len(sizes)))
    layout = Layout(before, sizes, index, repeats, after)
    return layout if len(layout) else Layout((Unit("head", 1, 0),))


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_the_running_sums_are_the_units_summed(layout: Layout) -> None:
    units = layout.units
    for k in range(len(units) + 1):
        assert layout.prefix(k) == (
            sum(u.fixed for u in units[:k]),
            sum(u.per_seq for u in units[:k]),
        )


def _side(fixed: int, per: int, capacity: int) -> int:
    """The largest batch one card holds of units of these bytes (slack added)."""
    a, pa = math.ceil((1 + SLACK) * fixed), math.ceil((1 + SLACK) * per)
    if a > capacity:
        return 0
    return MAX_BATCH if pa <= 0 else min(MAX_BATCH, (capacity - a) // pa)


@settings(max_examples=300, deadline=None)
@given(layouts(), st.integers(0, GB))
def test_the_split_search_finds_the_best_cut_of_every_one(layout: Layout, extra: int) -> None:
    units = layout.units
    fixed, per = sum(u.fixed for u in units), sum(u.per_seq for u in units)
    memory = Memory("serving", fixed, {}, {}, layout, extra)
    splits = 0
    for card, found in zip(gpus(), fits(memory), strict=True):
        if found.cards == 1:
            continue
        splits += 1
        capacity = card.memory - CUDA_CONTEXT
        best = 0
        for k in range(1, len(units)):
            f, p = sum(u.fixed for u in units[:k]), sum(u.per_seq for u in units[:k])
            first = _side(f, p + extra, capacity)
            second = _side(fixed - f, per - p + extra, capacity)
            best = max(best, min(first, second))
        assert found.max_batch == best, (card.name, found)
    event(f"{min(splits, 2)} cards split")

"""The bounded LRU every content-derived cache uses (by count, and by weight when given one),
and the memo that holds one per slot for its owner."""

from __future__ import annotations

from hubwatch.caching import BoundedCache, Memo, Slot


def test_the_least_recently_used_is_dropped_first() -> None:
    cache: BoundedCache[int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_values_are_dropped_to_keep_their_weight_within_the_bound() -> None:
    cache: BoundedCache[str] = BoundedCache(10, max_weight=100)
    cache.put("a", "A", weight=60)
    cache.put("b", "B", weight=30)
    cache.put("a", "A", weight=20)  # put again, lighter: the weight is replaced, not added
    cache.put("c", "C", weight=50)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("A", "B", "C")
    cache.put("d", "D", weight=40)  # 140: "b" then "a" go, the least recently used first
    assert (cache.get("a"), cache.get("b"), len(cache)) == (None, None, 2)


def test_a_value_heavier_than_the_bound_is_not_kept() -> None:
    cache: BoundedCache[str] = BoundedCache(10, max_weight=100)
    cache.put("small", "s", weight=10)
    cache.put("huge", "h", weight=101)
    assert (cache.get("huge"), cache.get("small")) == (None, "s")


def test_clear_empties_a_cache_and_its_weight() -> None:
    cache: BoundedCache[str] = BoundedCache(10, max_weight=100)
    cache.put("a", "A", weight=100)
    cache.clear()
    assert len(cache) == 0
    cache.put("b", "B", weight=100)  # nothing of the forgotten weight is left to push it out
    assert cache.get("b") == "B"


PARSED: Slot[str] = Slot("parsed", 2)


def test_a_memo_keeps_one_cache_per_slot_and_shares_nothing_with_another_memo() -> None:
    mine, theirs = Memo(), Memo()
    mine[PARSED].put("k", "v")
    assert mine[PARSED] is mine[PARSED] and mine[PARSED].get("k") == "v"
    assert theirs[PARSED].get("k") is None
    mine.clear()
    assert mine[PARSED].get("k") is None

"""Results derived from content by its hash (parsed files, renders, estimates, the imports of
custom code), kept in small thread-safe least-recently-used caches by the object whose work they
spare: no cache lives at module level."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

V = TypeVar("V")


class BoundedCache(Generic[V]):
    """The last `size` values by key, the least recently used dropped first; with `max_weight`,
    also as many as keep the sum of their weights (bytes parsed, say) within it.

    Values are shared between callers: only immutable ones (or ones nobody mutates) go in.
    """

    def __init__(self, size: int, max_weight: int | None = None) -> None:
        self._size = size
        self._max_weight = max_weight
        self._items: OrderedDict[str, V] = OrderedDict()
        self._weights: dict[str, int] = {}
        self._weight = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: str, value: V, weight: int = 0) -> None:
        """Keep `value`; one heavier than `max_weight` alone is not kept."""
        heaviest = self._max_weight
        if heaviest is not None and weight > heaviest:
            return
        with self._lock:
            self._weight += weight - self._weights.get(key, 0)
            self._items[key] = value
            self._weights[key] = weight
            self._items.move_to_end(key)
            while len(self._items) > self._size or (
                heaviest is not None and self._weight > heaviest
            ):
                dropped, _ = self._items.popitem(last=False)
                self._weight -= self._weights.pop(dropped)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weights.clear()
            self._weight = 0


@dataclass(frozen=True, slots=True)
class Slot(Generic[V]):
    """One kind of value a `Memo` keeps, and how many (or how much) of it."""

    name: str
    size: int
    max_weight: int | None = None


class Memo:
    """Values derived from content, one `BoundedCache` per `Slot`, held by whoever makes the
    views and snapshots that share them (a tracker's pipeline, a comparison): in a backfill each
    revision reads the files of the one before, which are then not parsed again.

    Values are shared by everything given this memo: only immutable ones (or ones nobody
    mutates) go in."""

    __slots__ = ("_caches", "_lock")

    def __init__(self) -> None:
        self._caches: dict[str, BoundedCache[Any]] = {}
        self._lock = threading.Lock()

    def __getitem__(self, slot: Slot[V]) -> BoundedCache[V]:
        cache = self._caches.get(slot.name)
        if cache is None:
            with self._lock:
                cache = self._caches.setdefault(slot.name, BoundedCache(slot.size, slot.max_weight))
        return cast(BoundedCache[V], cache)

    def clear(self) -> None:
        """Forget everything (a benchmark's rounds start cold)."""
        with self._lock:
            for cache in self._caches.values():
                cache.clear()

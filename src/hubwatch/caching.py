"""A small thread-safe least-recently-used cache, for results derived from content by its hash
(parsed files, renders, estimates, the imports of custom code)."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Generic, TypeVar

V = TypeVar("V")

_ALL: weakref.WeakSet[BoundedCache[Any]] = weakref.WeakSet()


def forget_all() -> None:
    """Empty every cache of the process (a benchmark's rounds start cold)."""
    for each in list(_ALL):
        each.clear()


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
        _ALL.add(self)

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

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
    """The last `size` values by key, the least recently used dropped first.

    Values are shared between callers: only immutable ones (or ones nobody mutates) go in.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, V] = OrderedDict()
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

    def put(self, key: str, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

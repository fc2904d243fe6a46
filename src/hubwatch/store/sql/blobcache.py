"""BlobCache: stored bytes kept in memory by their sha256, so a backfill reads each file once."""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_BYTES = 64 * 1024 * 1024
"""Bytes kept in all; the least recently used go first."""
MAX_ENTRY_BYTES = 16 * 1024 * 1024
"""Larger contents are never kept (a tokenizer.json of a 250k vocabulary is ~11 MB)."""


class BlobCache:
    """A bounded LRU of blob bytes. Safe to share between threads.

    Blobs are addressed by the sha256 of their bytes and never change or go away (removing a
    repo keeps them), so a cached blob can never be stale.
    """

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self._max = max_bytes
        self._size = 0
        self._data: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, sha256: str) -> bytes | None:
        with self._lock:
            data = self._data.get(sha256)
            if data is not None:
                self._data.move_to_end(sha256)
            return data

    def put(self, sha256: str, data: bytes) -> None:
        if len(data) > min(MAX_ENTRY_BYTES, self._max):
            return
        with self._lock:
            if sha256 in self._data:
                self._data.move_to_end(sha256)
                return
            self._data[sha256] = data
            self._size += len(data)
            while self._size > self._max:
                _, dropped = self._data.popitem(last=False)
                self._size -= len(dropped)

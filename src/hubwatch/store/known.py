"""The KnownContent interface: reads already stored, so unchanged files are not read again."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from typing import Protocol

from hubwatch.models import ContentSha, ReadResult, ReadStatus

REUSABLE = (ReadStatus.STORED, ReadStatus.INVALID, ReadStatus.OVER_CAP, ReadStatus.UNAVAILABLE)
"""Reads whose outcome depends only on the bytes, so a later revision may reuse them."""


class KnownContent(Protocol):
    """What is already stored, so that unchanged files and headers are not read again."""

    @abstractmethod
    def content(self, path: str, blob_id: str) -> ReadResult | None:
        """The recorded read of this exact blob at this path, without its bytes."""

    @abstractmethod
    def header(self, object_id: str) -> ReadResult | None:
        """The recorded header read of this weight object (LFS sha256 or blob id)."""

    @abstractmethod
    def blob(self, sha256: ContentSha) -> bytes:
        """Stored bytes by their sha256."""

    def contents(self, wanted: Iterable[tuple[str, str]]) -> dict[tuple[str, str], ReadResult]:
        """`content()` of each (path, blob id), those recorded; a backend looks them up at once."""
        found = {}
        for path, blob_id in wanted:
            result = self.content(path, blob_id)
            if result is not None:
                found[path, blob_id] = result
        return found

    def headers(self, object_ids: Iterable[str]) -> dict[str, ReadResult]:
        """`header()` of each weight object id, those recorded; a backend looks them up at once."""
        return {
            object_id: result
            for object_id in object_ids
            if (result := self.header(object_id)) is not None
        }

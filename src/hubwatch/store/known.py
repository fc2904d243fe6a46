"""The KnownContent interface: reads already stored, so unchanged files are not read again."""

from __future__ import annotations

from abc import ABC, abstractmethod

from hubwatch.models import ContentSha, ReadResult


class KnownContent(ABC):
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

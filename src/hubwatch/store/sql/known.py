"""SqlKnownContent: the KnownContent part of SqlStore (reads a later revision may reuse)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_
from sqlmodel import col, select

from hubwatch.errors import StoreError
from hubwatch.models import ContentSha, ReadResult, ReadStatus
from hubwatch.store.known import KnownContent
from hubwatch.store.sql.base import SqlBase
from hubwatch.store.sql.tables import BlobRow, FileRow

# Reads whose outcome depends only on the bytes, so a later revision may reuse them.
_REUSABLE = (ReadStatus.STORED, ReadStatus.INVALID, ReadStatus.OVER_CAP, ReadStatus.UNAVAILABLE)


class SqlKnownContent(SqlBase, KnownContent):
    """Looks reads up by blob id and path (contents) or by weight object id (headers)."""

    def content(self, path: str, blob_id: str) -> ReadResult | None:
        with self._session() as session:
            row = session.exec(
                select(FileRow.content_sha256, FileRow.content_status, FileRow.content_error)
                .where(
                    FileRow.blob_id == blob_id,
                    FileRow.path == path,
                    col(FileRow.content_status).in_([s.value for s in _REUSABLE]),
                )
                .limit(1)
            ).first()
        return _reused(row)

    def header(self, object_id: str) -> ReadResult | None:
        with self._session() as session:
            row = session.exec(
                select(FileRow.header_sha256, FileRow.header_status, FileRow.header_error)
                .where(
                    or_(
                        col(FileRow.lfs_sha256) == object_id,
                        (col(FileRow.blob_id) == object_id) & col(FileRow.lfs_sha256).is_(None),
                    ),
                    col(FileRow.header_status).in_([s.value for s in _REUSABLE]),
                )
                .limit(1)
            ).first()
        return _reused(row)

    def blob(self, sha256: ContentSha) -> bytes:
        with self._session() as session:
            row = session.get(BlobRow, sha256)
            if row is None:
                raise StoreError(f"no stored content {sha256}")
            return row.data


def _reused(row: Any) -> ReadResult | None:
    if row is None:
        return None
    sha, status, error = row
    return ReadResult(ReadStatus(status), sha256=ContentSha(sha) if sha else None, error=error)

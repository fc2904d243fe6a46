"""SqlKnownContent: the KnownContent part of SqlStore (reads a later revision may reuse)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Executable, Select, String, bindparam, or_, select, union_all
from sqlmodel import col

from hubwatch.errors import StoreError
from hubwatch.models import ContentSha, ReadResult, ReadStatus
from hubwatch.store.known import REUSABLE, KnownContent
from hubwatch.store.sql.base import SqlBase
from hubwatch.store.sql.tables import BlobRow, FileRow

_REUSABLE_VALUES = [s.value for s in REUSABLE]
_PER_STATEMENT = 64
"""Lookups joined in one statement (SQLite allows 500 SELECTs in a compound one)."""
Row = Select[*tuple[Any, ...]]


class SqlKnownContent(SqlBase, KnownContent):
    """Looks reads up by blob id and path (contents) or by weight object id (headers)."""

    def content(self, path: str, blob_id: str) -> ReadResult | None:
        return self.contents([(path, blob_id)]).get((path, blob_id))

    def header(self, object_id: str) -> ReadResult | None:
        return self.headers([object_id]).get(object_id)

    def contents(self, wanted: Iterable[tuple[str, str]]) -> dict[tuple[str, str], ReadResult]:
        keys = [{"path": path, "blob": blob} for path, blob in sorted(set(wanted))]
        rows = self._first_of_each("content", keys)
        return {(path, blob): _reused(rest) for path, blob, *rest in rows}

    def headers(self, object_ids: Iterable[str]) -> dict[str, ReadResult]:
        keys = [{"object": object_id} for object_id in sorted(set(object_ids))]
        rows = self._first_of_each("header", keys)
        # a row matched by its LFS sha256 when it has one, else by its blob id
        return {lfs or blob: _reused(rest) for lfs, blob, *rest in rows}

    def _first_of_each(self, kind: str, keys: Sequence[dict[str, str]]) -> list[Sequence[Any]]:
        """The first reusable read of each key, in one statement per `_PER_STATEMENT` keys."""
        rows: list[Sequence[Any]] = []
        with self._reading() as connection:  # no ORM session: plain rows (issue 15)
            for start in range(0, len(keys), _PER_STATEMENT):
                chunk = keys[start : start + _PER_STATEMENT]
                params = {
                    f"{name}{i}": value
                    for i, key in enumerate(chunk)
                    for name, value in key.items()
                }
                rows += connection.execute(_lookup(kind, len(chunk)), params).all()
        return rows

    def blob(self, sha256: ContentSha) -> bytes:
        cached = self._blobs.get(sha256)
        if cached is not None:
            return cached
        with self._session() as session:
            row = session.get(BlobRow, sha256)
            if row is None:
                raise StoreError(f"no stored content {sha256}")
            self._blobs.put(sha256, row.data)
            return row.data


def _reused(row: Sequence[Any]) -> ReadResult:
    sha, status, error = row
    return ReadResult(ReadStatus(status), sha256=ContentSha(sha) if sha else None, error=error)


@lru_cache(maxsize=2 * _PER_STATEMENT)
def _lookup(kind: str, count: int) -> Executable:
    """`count` lookups of `kind` ("content" or "header") in one statement; the parameters of
    the i-th are `path{i}` and `blob{i}`, or `object{i}`. Built once per count, as building
    the expression costs more than running it.

    Each lookup keeps its own LIMIT 1 (an index lookup), so the cost does not grow with the
    number of revisions that share a file.
    """
    parts = [
        (_content if kind == "content" else _header)(i).limit(1).subquery() for i in range(count)
    ]
    if count == 1:
        return select(*parts[0].c)
    return union_all(*(select(*part.c) for part in parts))


def _content(i: int) -> Row:
    return select(
        col(FileRow.path),
        col(FileRow.blob_id),
        col(FileRow.content_sha256),
        col(FileRow.content_status),
        col(FileRow.content_error),
    ).where(
        col(FileRow.blob_id) == bindparam(f"blob{i}"),
        col(FileRow.path) == bindparam(f"path{i}"),
        col(FileRow.content_status).in_(_REUSABLE_VALUES),
    )


def _header(i: int) -> Row:
    object_id = bindparam(f"object{i}", type_=String)
    return select(
        col(FileRow.lfs_sha256),
        col(FileRow.blob_id),
        col(FileRow.header_sha256),
        col(FileRow.header_status),
        col(FileRow.header_error),
    ).where(
        or_(
            col(FileRow.lfs_sha256) == object_id,
            (col(FileRow.blob_id) == object_id) & col(FileRow.lfs_sha256).is_(None),
        ),
        col(FileRow.header_status).in_(_REUSABLE_VALUES),
    )

"""A revision's rows as `add_revision` writes them with Core, and a file's row read back."""

from __future__ import annotations

import hashlib
from datetime import datetime

from hubwatch.models import ContentSha, ReadResult, ReadStatus, Snapshot, StoredFile
from hubwatch.store.sql.tables import FileRow


def revision_values(
    repo_pk: int, snapshot: Snapshot, changed: list[str], recorded_at: datetime, key: int | None
) -> dict[str, object]:
    """The revision's row (under `key`, when given)."""
    commit = snapshot.commit
    given = {} if key is None else {"id": key}
    return {
        **given,
        "repo_pk": repo_pk,
        "sha": commit.sha,
        "parents": list(commit.parents),
        "committed_at": commit.date,
        "authors": list(commit.authors),
        "title": commit.title,
        "message": commit.message,
        "changed": changed,
        "reachable": True,
        "card": snapshot.card,
        "card_error": snapshot.card_error,
        "recorded_at": recorded_at,
    }


def file_rows(
    revision_pk: int, snapshot: Snapshot, blobs: dict[str, bytes]
) -> list[dict[str, object]]:
    """The snapshot's file rows, queueing the bytes read into `blobs`."""
    rows = []
    for entry in snapshot.files:
        content = snapshot.contents.get(entry.path)
        header = snapshot.headers.get(entry.path)
        rows.append(
            {
                "revision_pk": revision_pk,
                "path": entry.path,
                "size": entry.size,
                "blob_id": entry.blob_id,
                "lfs_sha256": entry.lfs_sha256,
                "content_sha256": keep(content, blobs),
                "content_status": content.status.value if content else None,
                "content_error": content.error if content else None,
                "header_sha256": keep(header, blobs),
                "header_status": header.status.value if header else None,
                "header_error": header.error if header else None,
                "xet_hash": entry.xet_hash,
            }
        )
    return rows


def keep(result: ReadResult | None, blobs: dict[str, bytes]) -> str | None:
    """The sha256 under which a read's bytes are stored, queueing new bytes for insertion."""
    if result is None:
        return None
    if result.data is not None:
        sha = result.sha256 or hashlib.sha256(result.data).hexdigest()
        blobs[sha] = result.data
        return sha
    return result.sha256


def file_of(row: FileRow) -> StoredFile:
    return StoredFile(
        path=row.path,
        size=row.size,
        blob_id=row.blob_id,
        lfs_sha256=row.lfs_sha256,
        content_sha256=ContentSha(row.content_sha256) if row.content_sha256 else None,
        content_status=ReadStatus(row.content_status) if row.content_status else None,
        content_error=row.content_error,
        header_sha256=ContentSha(row.header_sha256) if row.header_sha256 else None,
        header_status=ReadStatus(row.header_status) if row.header_status else None,
        header_error=row.header_error,
        xet_hash=row.xet_hash,
    )

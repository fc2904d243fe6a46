"""SqlRevisionStore: the RevisionStore part of SqlStore (revisions, their files and blobs)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import Table, bindparam, insert, update
from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from hubwatch.models import (
    CommitSha,
    ContentSha,
    ReadResult,
    ReadStatus,
    Snapshot,
    StoredFile,
    StoredRevision,
)
from hubwatch.store.repos import RevisionStore
from hubwatch.store.sql.base import CHANGE, REPO, REVISION, SqlBase, as_revision, utc
from hubwatch.store.sql.changes import change_values
from hubwatch.store.sql.estimates import ESTIMATE, estimate_values
from hubwatch.store.sql.tables import BlobRow, FileRow, RepoRow, RevisionRow
from hubwatch.store.sql.tally import count_revision


class SqlRevisionStore(SqlBase, RevisionStore):
    """Revisions on SQL: a snapshot, its files, blobs, estimate and changes in one transaction."""

    def known_shas(self, repo_id: str) -> dict[CommitSha, bool]:
        with self._session() as session:
            row = self._repo_row(session, repo_id)
            rows = session.exec(
                select(RevisionRow.sha, RevisionRow.reachable).where(RevisionRow.repo_pk == row.id)
            ).all()
            return {CommitSha(sha): reachable for sha, reachable in rows}

    def add_revision(self, repo_id: str, snapshot: Snapshot) -> bool:
        # SQLAlchemy Core, not the ORM: a backfill writes thousands of revisions, and the
        # unit of work cost more than the statements (same rows, same transaction)
        commit = snapshot.commit
        with self._writing() as connection:
            # the repo, the revision if stored already and its first parent: one query
            parent = commit.parents[0] if commit.parents else None
            shas = [commit.sha, *([parent] if parent else [])]
            found = connection.execute(_FIND, {"repo_id": repo_id, "shas": shas}).all()
            if not found:
                self._repo_pk(connection, repo_id)  # raises NotTracked
            repo_pk = found[0][0]
            assert repo_pk is not None
            stored = {sha: (pk, utc(at)) for _, pk, sha, at in found if pk is not None}
            if commit.sha in stored:
                return False
            before = self._files_written(stored[parent]) if parent in stored else None
            changed = _changed(connection, before, snapshot)
            recorded_at = datetime.now(UTC)
            revision_pk = _insert_revision(connection, repo_pk, snapshot, changed, recorded_at)
            if snapshot.estimate is not None:
                estimate = estimate_values(revision_pk, snapshot.estimate)
                connection.execute(_INSERT_ESTIMATE, estimate)
            blobs: dict[str, bytes] = {}
            rows = _file_rows(revision_pk, snapshot, blobs)
            self._put_blobs(connection, blobs)
            if rows:  # one executemany
                connection.execute(_INSERT_FILES, rows)
            changes = change_values(
                revision_pk, repo_pk, commit.date, snapshot.base, 0, snapshot.changes
            )
            if changes:
                connection.execute(_INSERT_CHANGES, changes)
            count_revision(connection, self.dialect, repo_pk, revision_pk, snapshot.changes)
            try:
                connection.commit()
            except IntegrityError:  # the same revision committed by another worker meanwhile
                connection.rollback()
                return False
            for sha, data in blobs.items():  # the next revision's diff reads them back
                self._blobs.put(sha, data)
            self._written = ((revision_pk, recorded_at), _paths_of(snapshot))
            return True

    def _files_written(self, revision: tuple[int, datetime]) -> int | _Paths:
        """The files by path of the revision (key, time recorded) when this store wrote it
        last (a backfill's parent: no query for what was just written); else its key, for
        them to be read. The time tells a row written again under a reused key."""
        if self._written is not None and self._written[0] == revision:
            return self._written[1]
        return revision[0]

    def _put_blobs(self, connection: Connection, blobs: dict[str, bytes]) -> None:
        """Insert the new bytes, in one executemany; bytes stored already are left alone."""
        if blobs:
            rows = [{"sha256": sha, "size": len(data), "data": data} for sha, data in blobs.items()]
            connection.execute(_PUT_BLOB[self.dialect == "postgresql"], rows)

    def set_reachable(self, repo_id: str, shas: Iterable[CommitSha], reachable: bool) -> None:
        wanted = list(shas)
        if not wanted:
            return
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            session.exec(
                update(RevisionRow)
                .where(col(RevisionRow.repo_pk) == repo.id, col(RevisionRow.sha).in_(wanted))
                .values(reachable=reachable)
            )
            session.commit()

    def history(self, repo_id: str) -> list[StoredRevision]:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            rows = session.exec(
                select(RevisionRow)
                .where(RevisionRow.repo_pk == repo.id)
                .order_by(col(RevisionRow.id))
            ).all()
            return [as_revision(repo_id, row) for row in rows]

    def revision(self, repo_id: str, rev: str) -> StoredRevision:
        with self._session() as session:
            return as_revision(repo_id, self._revision_by_prefix(session, repo_id, rev))

    def files(self, repo_id: str, sha: CommitSha) -> list[StoredFile]:
        with self._session() as session:
            rows = session.exec(
                select(FileRow)
                .join(RevisionRow, col(RevisionRow.id) == FileRow.revision_pk)
                .join(RepoRow, col(RepoRow.id) == RevisionRow.repo_pk)
                .where(RepoRow.repo_id == repo_id, RevisionRow.sha == sha)
                .order_by(col(FileRow.path))
            ).all()
            if not rows:  # no files, or no such revision (or repo): the lookups tell
                self._revision_pk(session, self._repo_row(session, repo_id), sha)
            return [_file(row) for row in rows]


FILES: Table = FileRow.__table__  # type: ignore[attr-defined]  # SQLModel does not declare it
BLOBS: Table = BlobRow.__table__  # type: ignore[attr-defined]
_Paths = dict[str, tuple[str, str | None]]
"""A revision's files by path: (blob id, LFS sha256), what `_changed` compares."""

# built once with parameters: building a statement cost more than running it (issue 15)
_FIND = (
    core_select(REPO.c.id, REVISION.c.id, REVISION.c.sha, REVISION.c.recorded_at)
    .select_from(REPO)
    .outerjoin(
        REVISION,
        (REVISION.c.repo_pk == REPO.c.id) & REVISION.c.sha.in_(bindparam("shas", expanding=True)),
    )
    .where(REPO.c.repo_id == bindparam("repo_id"))
)
_INSERT_REVISION = insert(REVISION)
_INSERT_ESTIMATE = insert(ESTIMATE)
_INSERT_FILES = insert(FILES)
_INSERT_CHANGES = insert(CHANGE)
_PUT_BLOB = tuple(  # by "is postgresql"
    dialect.insert(BLOBS).on_conflict_do_nothing(index_elements=["sha256"])
    for dialect in (sqlite, postgresql)
)
_PARENT_FILES = core_select(FILES.c.path, FILES.c.blob_id, FILES.c.lfs_sha256).where(
    FILES.c.revision_pk == bindparam("pk")
)


def _paths_of(snapshot: Snapshot) -> _Paths:
    return {entry.path: (entry.blob_id, entry.lfs_sha256) for entry in snapshot.files}


def _insert_revision(
    connection: Connection,
    repo_pk: int,
    snapshot: Snapshot,
    changed: list[str],
    recorded_at: datetime,
) -> int:
    """Insert the revision's row; its key."""
    commit = snapshot.commit
    result = connection.execute(
        _INSERT_REVISION,
        {
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
        },
    )
    key = result.inserted_primary_key
    assert key is not None and key[0] is not None
    return int(key[0])


def _changed(connection: Connection, parent: int | _Paths | None, snapshot: Snapshot) -> list[str]:
    """Paths added, removed or modified against the first parent, when it is stored: its
    key, or its files by path when they are at hand."""
    now = _paths_of(snapshot)
    before: _Paths = {}
    if isinstance(parent, dict):
        before = parent
    elif parent is not None:
        rows = connection.execute(_PARENT_FILES, {"pk": parent}).all()
        before = {path: (blob, lfs) for path, blob, lfs in rows}
    return sorted(p for p in now.keys() | before.keys() if now.get(p) != before.get(p))


def _file_rows(
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
                "content_sha256": _keep(content, blobs),
                "content_status": content.status.value if content else None,
                "content_error": content.error if content else None,
                "header_sha256": _keep(header, blobs),
                "header_status": header.status.value if header else None,
                "header_error": header.error if header else None,
            }
        )
    return rows


def _keep(result: ReadResult | None, blobs: dict[str, bytes]) -> str | None:
    """The sha256 under which a read's bytes are stored, queueing new bytes for insertion."""
    if result is None:
        return None
    if result.data is not None:
        sha = hashlib.sha256(result.data).hexdigest()
        blobs[sha] = result.data
        return sha
    return result.sha256


def _file(row: FileRow) -> StoredFile:
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
    )

"""SqlStore: the Store on SQLAlchemy/SQLModel, for SQLite (default) and PostgreSQL."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import event, func, or_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError
from sqlmodel import Session, col, create_engine, delete, select

from hubwatch.errors import NotTracked, StoreError, UnknownRevision
from hubwatch.models import (
    CommitSha,
    ContentSha,
    EventKind,
    ReadResult,
    ReadStatus,
    RepoEvent,
    RepoRef,
    RepoState,
    Snapshot,
    SourceKind,
    StoredFile,
    StoredRevision,
    TrackedRepo,
)
from hubwatch.store.base import Store
from hubwatch.store.sql.advisories import SqlAdvisoryStore
from hubwatch.store.sql.browse import SqlBrowseStore
from hubwatch.store.sql.changes import SqlChangeStore
from hubwatch.store.sql.estimates import SqlEstimateStore
from hubwatch.store.sql.migrate import upgrade
from hubwatch.store.sql.schedules import SqlScheduleStore
from hubwatch.store.sql.tables import BlobRow, EventRow, FileRow, RepoRow, RevisionRow
from hubwatch.store.sql.webhooks import SqlWebhookStore

# Reads whose outcome depends only on the bytes, so a later revision may reuse them.
_REUSABLE = (ReadStatus.STORED, ReadStatus.INVALID, ReadStatus.OVER_CAP, ReadStatus.UNAVAILABLE)


def _utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything we store is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def make_engine(url: str) -> Engine:
    """An engine for `url`, with SQLite set up for a long-running writer (WAL, foreign keys)."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


class SqlStore(
    SqlChangeStore,
    SqlAdvisoryStore,
    SqlEstimateStore,
    SqlScheduleStore,
    SqlWebhookStore,
    SqlBrowseStore,
    Store,
):
    """Store on SQLite or PostgreSQL; the URL decides."""

    def __init__(self, url: str) -> None:
        self._url = url
        try:
            self._engine = make_engine(url)
        except (SQLAlchemyError, ValueError) as exc:
            raise StoreError(f"invalid database URL: {type(exc).__name__}") from None

    @property
    def dialect(self) -> str:
        return self._engine.dialect.name

    def start(self) -> None:
        try:
            upgrade(self._engine)
        except OperationalError as exc:
            raise StoreError(
                f"cannot open the database ({self._engine.url.render_as_string()}): {exc.orig}"
            ) from None

    def close(self) -> None:
        self._engine.dispose()

    @contextmanager
    def _session(self) -> Iterator[Session]:
        with Session(self._engine, expire_on_commit=False) as session:
            try:
                yield session
            except OperationalError as exc:
                session.rollback()
                raise StoreError(f"database error: {exc.orig}") from None

    # -- repos ------------------------------------------------------------------------------

    def _repo_row(self, session: Session, repo_id: str) -> RepoRow:
        row = session.exec(select(RepoRow).where(RepoRow.repo_id == repo_id)).first()
        if row is None:
            raise NotTracked(f"{repo_id} is not tracked")
        return row

    def _tracked(self, session: Session, row: RepoRow) -> TrackedRepo:
        count = session.exec(
            select(func.count()).select_from(RevisionRow).where(RevisionRow.repo_pk == row.id)
        ).one()
        return TrackedRepo(
            ref=RepoRef(row.repo_id, SourceKind(row.source), row.url, row.branch),
            state=RepoState(row.state),
            head=CommitSha(row.head_sha) if row.head_sha else None,
            revisions=int(count),
            added_at=_utc(row.added_at),
            last_polled_at=_utc(row.last_polled_at) if row.last_polled_at else None,
            last_error=row.last_error,
            renamed_to=row.renamed_to,
        )

    def add_repo(self, repo: RepoRef) -> bool:
        with self._session() as session:
            if session.exec(select(RepoRow.id).where(RepoRow.repo_id == repo.repo_id)).first():
                return False
            session.add(
                RepoRow(
                    repo_id=repo.repo_id,
                    source=repo.source.value,
                    url=repo.url,
                    branch=repo.branch,
                    added_at=datetime.now(UTC),
                )
            )
            try:
                session.commit()
            except IntegrityError:  # tracked concurrently by another process
                session.rollback()
                return False
            return True

    def remove_repo(self, repo_id: str) -> None:
        with self._session() as session:
            row = self._repo_row(session, repo_id)
            revisions = select(RevisionRow.id).where(RevisionRow.repo_pk == row.id)
            session.exec(delete(FileRow).where(col(FileRow.revision_pk).in_(revisions)))
            session.exec(delete(RevisionRow).where(col(RevisionRow.repo_pk) == row.id))
            session.exec(delete(EventRow).where(col(EventRow.repo_pk) == row.id))
            session.delete(row)
            session.commit()  # blobs stay: other repos may share them

    def get_repo(self, repo_id: str) -> TrackedRepo:
        with self._session() as session:
            return self._tracked(session, self._repo_row(session, repo_id))

    def list_repos(self) -> list[TrackedRepo]:
        with self._session() as session:
            rows = session.exec(select(RepoRow).order_by(RepoRow.repo_id)).all()
            return [self._tracked(session, row) for row in rows]

    def update_repo(
        self,
        repo_id: str,
        *,
        state: RepoState | None = None,
        head: CommitSha | None = None,
        polled_at: datetime | None = None,
        error: str | None = None,
        clear_error: bool = False,
        renamed_to: str | None = None,
    ) -> None:
        values: dict[str, Any] = {}
        if state is not None:
            values["state"] = state.value
        if head is not None:
            values["head_sha"] = head
        if polled_at is not None:
            values["last_polled_at"] = polled_at
        if error is not None:
            values["last_error"] = error
        elif clear_error:
            values["last_error"] = None
        if renamed_to is not None:
            values["renamed_to"] = renamed_to
        if not values:
            return
        with self._session() as session:
            self._repo_row(session, repo_id)
            session.exec(update(RepoRow).where(col(RepoRow.repo_id) == repo_id).values(**values))
            session.commit()

    # -- revisions --------------------------------------------------------------------------

    def known_shas(self, repo_id: str) -> dict[CommitSha, bool]:
        with self._session() as session:
            row = self._repo_row(session, repo_id)
            rows = session.exec(
                select(RevisionRow.sha, RevisionRow.reachable).where(RevisionRow.repo_pk == row.id)
            ).all()
            return {CommitSha(sha): reachable for sha, reachable in rows}

    def add_revision(self, repo_id: str, snapshot: Snapshot) -> bool:
        commit = snapshot.commit
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            assert repo.id is not None
            exists = session.exec(
                select(RevisionRow.id).where(
                    RevisionRow.repo_pk == repo.id, RevisionRow.sha == commit.sha
                )
            ).first()
            if exists:
                return False
            revision = RevisionRow(
                repo_pk=repo.id,
                sha=commit.sha,
                parents=list(commit.parents),
                committed_at=commit.date,
                authors=list(commit.authors),
                title=commit.title,
                message=commit.message,
                changed=self._changed(session, repo.id, snapshot),
                card=snapshot.card,
                card_error=snapshot.card_error,
                recorded_at=datetime.now(UTC),
            )
            session.add(revision)
            session.flush()
            assert revision.id is not None
            self._add_estimate(session, revision.id, snapshot)
            blobs: dict[str, bytes] = {}
            rows = []
            for entry in snapshot.files:
                content = snapshot.contents.get(entry.path)
                header = snapshot.headers.get(entry.path)
                rows.append(
                    FileRow(
                        revision_pk=revision.id,
                        path=entry.path,
                        size=entry.size,
                        blob_id=entry.blob_id,
                        lfs_sha256=entry.lfs_sha256,
                        content_sha256=_keep(content, blobs),
                        content_status=content.status.value if content else None,
                        content_error=content.error if content else None,
                        header_sha256=_keep(header, blobs),
                        header_status=header.status.value if header else None,
                        header_error=header.error if header else None,
                    )
                )
            self._put_blobs(session, blobs)
            session.add_all(rows)
            self._add_changes(session, revision.id, snapshot)
            try:
                session.commit()
            except IntegrityError:  # the same revision committed by another worker meanwhile
                session.rollback()
                return False
            return True

    def _changed(self, session: Session, repo_pk: int, snapshot: Snapshot) -> list[str]:
        """Paths added, removed or modified against the first parent, when it is stored."""
        now = {entry.path: (entry.blob_id, entry.lfs_sha256) for entry in snapshot.files}
        parents = snapshot.commit.parents
        before: dict[str, tuple[str, str | None]] = {}
        if parents:
            parent = session.exec(
                select(RevisionRow.id).where(
                    RevisionRow.repo_pk == repo_pk, RevisionRow.sha == parents[0]
                )
            ).first()
            if parent is not None:
                rows = session.exec(
                    select(FileRow.path, FileRow.blob_id, FileRow.lfs_sha256).where(
                        FileRow.revision_pk == parent
                    )
                ).all()
                before = {path: (blob, lfs) for path, blob, lfs in rows}
        return sorted(p for p in now.keys() | before.keys() if now.get(p) != before.get(p))

    def _put_blobs(self, session: Session, blobs: dict[str, bytes]) -> None:
        if not blobs:
            return
        dialect = postgresql if self.dialect == "postgresql" else sqlite
        for sha, data in blobs.items():
            statement = (
                dialect.insert(BlobRow)
                .values(sha256=sha, size=len(data), data=data)
                .on_conflict_do_nothing(index_elements=["sha256"])
            )
            session.exec(statement)

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
            return [_revision(repo_id, row) for row in rows]

    def revision(self, repo_id: str, rev: str) -> StoredRevision:
        rev = rev.strip().lower()
        if not rev or len(rev) > 64 or any(c not in "0123456789abcdef" for c in rev):
            raise UnknownRevision(f"{rev[:70]!r} is not a commit sha (hex, 1 to 64 characters)")
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            rows = session.exec(
                select(RevisionRow)
                .where(RevisionRow.repo_pk == repo.id, col(RevisionRow.sha).startswith(rev))
                .limit(2)
            ).all()
            if not rows:
                raise UnknownRevision(f"{repo_id} has no stored revision {rev}")
            if len(rows) > 1:
                raise UnknownRevision(f"{rev} is ambiguous in {repo_id}; give more characters")
            return _revision(repo_id, rows[0])

    def files(self, repo_id: str, sha: CommitSha) -> list[StoredFile]:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            revision = session.exec(
                select(RevisionRow.id).where(RevisionRow.repo_pk == repo.id, RevisionRow.sha == sha)
            ).first()
            if revision is None:
                raise UnknownRevision(f"{repo_id} has no stored revision {sha}")
            rows = session.exec(
                select(FileRow).where(FileRow.revision_pk == revision).order_by(col(FileRow.path))
            ).all()
            return [_file(row) for row in rows]

    # -- events -----------------------------------------------------------------------------

    def add_event(self, repo_id: str, event: RepoEvent) -> None:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            assert repo.id is not None
            session.add(
                EventRow(
                    repo_pk=repo.id,
                    kind=event.kind.value,
                    sha=event.sha,
                    detail=event.detail,
                    at=event.at or datetime.now(UTC),
                )
            )
            session.commit()

    def events(self, repo_id: str) -> list[RepoEvent]:
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            rows = session.exec(
                select(EventRow).where(EventRow.repo_pk == repo.id).order_by(col(EventRow.id))
            ).all()
            return [
                RepoEvent(
                    EventKind(row.kind),
                    row.detail,
                    CommitSha(row.sha) if row.sha else None,
                    _utc(row.at),
                )
                for row in rows
            ]

    # -- KnownContent -----------------------------------------------------------------------

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


def _keep(result: ReadResult | None, blobs: dict[str, bytes]) -> str | None:
    """The sha256 under which a read's bytes are stored, queueing new bytes for insertion."""
    if result is None:
        return None
    if result.data is not None:
        sha = hashlib.sha256(result.data).hexdigest()
        blobs[sha] = result.data
        return sha
    return result.sha256


def _reused(row: Any) -> ReadResult | None:
    if row is None:
        return None
    sha, status, error = row
    return ReadResult(ReadStatus(status), sha256=ContentSha(sha) if sha else None, error=error)


def _revision(repo_id: str, row: RevisionRow) -> StoredRevision:
    return StoredRevision(
        repo_id=repo_id,
        sha=CommitSha(row.sha),
        parents=tuple(CommitSha(p) for p in row.parents),
        date=_utc(row.committed_at),
        authors=tuple(row.authors),
        title=row.title,
        message=row.message,
        changed=tuple(row.changed),
        reachable=row.reachable,
        card=row.card,
    )


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

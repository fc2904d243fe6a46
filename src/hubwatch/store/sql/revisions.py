"""SqlRevisionStore: the RevisionStore part of SqlStore (revisions, their files and blobs)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Select, Table, bindparam, func, insert, update
from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from hubwatch.errors import StoreError
from hubwatch.models import (
    CommitSha,
    ReadStatus,
    Snapshot,
    StoredFile,
    StoredRevision,
)
from hubwatch.store.repos import RevisionStore
from hubwatch.store.sql.base import CHANGE, REPO, REVISION, SqlBase, as_revision, utc
from hubwatch.store.sql.changes import change_values
from hubwatch.store.sql.estimates import ESTIMATE, estimate_values
from hubwatch.store.sql.following import INSERT_CHILD, Drawn, draw_key
from hubwatch.store.sql.pipeline import can_pipeline, pipelined_transaction
from hubwatch.store.sql.revision_rows import file_of, file_rows, revision_values
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
        try:
            with self._writing_pipelined() as connection:
                if self._add_child(connection, repo_id, snapshot):
                    return True
                return self._add(connection, repo_id, snapshot)
        except IntegrityError:
            # pipelined statements all fail at the commit, whichever of them was refused: the
            # same revision committed by another worker meanwhile is told apart from a row
            # the database refused (a file listed twice, say), which is raised
            if self._stored(repo_id, snapshot.commit.sha):
                return False
            raise

    def _add_child(self, connection: Connection, repo_id: str, snapshot: Snapshot) -> bool:
        """`add_revision` of the child of the revision this thread stored last, without
        looking anything up first (store/sql/following.py); False, with nothing written, when
        it is not that child or when its write is refused: `_add` writes it then."""
        drawn, self._drawn = self._drawn, None
        written, commit = self._written, snapshot.commit
        parent = commit.parents[0] if commit.parents else None
        if drawn is None or written is None or parent is None or self._last != (repo_id, parent):
            return False
        (parent_pk, parent_at), before = written
        guard = {"parent_pk": parent_pk, "parent_sha": parent, "parent_at": parent_at}
        changed = _changed(connection, before, snapshot)
        try:
            self._write(connection, repo_id, drawn, snapshot, changed, guard)
        except IntegrityError:
            # the parent gone or no longer the repo's newest, the revision stored meanwhile,
            # or a row of it refused: `_add`'s lookup tells which (and raises what it raises)
            return False
        return True

    def _add(self, connection: Connection, repo_id: str, snapshot: Snapshot) -> bool:
        """`add_revision` in the transaction of `connection`."""
        # SQLAlchemy Core, not the ORM: a backfill writes thousands of revisions, and the
        # unit of work cost more than the statements (same rows, same transaction)
        commit = snapshot.commit
        # the repo, the revision if stored already and its first parent (and, to pipeline
        # the rest, the revision's key): one query. On PostgreSQL it runs before the write's
        # transaction, which under READ COMMITTED gave it no more: a revision another worker
        # stores meanwhile is refused by the unique key either way
        parent = commit.parents[0] if commit.parents else None
        shas = [commit.sha, *([parent] if parent else [])]
        keyed = can_pipeline(connection.dialect)
        found = connection.execute(_FIND[keyed], {"repo_id": repo_id, "shas": shas}).all()
        if not found:
            self._repo_pk(connection, repo_id)  # raises NotTracked
        repo_pk = found[0][0]
        assert repo_pk is not None
        stored = {sha: (pk, utc(at)) for _, pk, sha, at, *_ in found if pk is not None}
        if commit.sha in stored:
            return False
        if parent is not None and parent not in stored and self._last == (repo_id, parent):
            # kept until the parent is stored again: every attempt at the child fails the same
            raise StoreError(
                f"{repo_id}: revision {parent[:12]}, stored a moment ago, is gone (lost in a "
                "database crash, or the repo removed); its child is not stored without it"
            )
        before = self._files_written(stored[parent]) if parent in stored else None
        changed = _changed(connection, before, snapshot)
        key = found[0][4] if keyed else None
        self._write(connection, repo_id, (repo_pk, key), snapshot, changed)
        return True

    def _write(
        self,
        connection: Connection,
        repo_id: str,
        keys: tuple[int, int | None],
        snapshot: Snapshot,
        changed: list[str],
        guard: dict[str, object] | None = None,
    ) -> None:
        """Write the revision (`keys`: its repo's and, to pipeline it, its own) in one
        transaction, in one round trip on PostgreSQL, where the next revision's key is drawn
        too; `guard`: the parent its row must find (`following.INSERT_CHILD`)."""
        repo_pk, key = keys
        recorded_at = datetime.now(UTC)
        blobs: dict[str, bytes] = {}
        # no statement's result is read back but the key drawn, once the pipeline is answered
        with pipelined_transaction(connection, synchronous=SYNCHRONOUS):
            values = revision_values(repo_pk, snapshot, changed, recorded_at, key)
            revision_pk = _insert_revision(connection, values, guard)
            self._insert_rest(connection, (repo_pk, revision_pk, recorded_at), snapshot, blobs)
            drawn = draw_key(connection) if key is not None else None
        for sha, data in blobs.items():  # the next revision's diff reads them back
            self._blobs.put(sha, data)
        self._written = ((revision_pk, recorded_at), _paths_of(snapshot))
        self._last = (repo_id, snapshot.commit.sha)
        self._drawn = Drawn(repo_pk, drawn()) if drawn is not None else None

    def _insert_rest(
        self,
        connection: Connection,
        keys: tuple[int, int, datetime],
        snapshot: Snapshot,
        blobs: dict[str, bytes],
    ) -> None:
        """Everything of the revision (`keys`: its repo's, its own, when it is recorded) but
        its row: estimate, blobs, files, changes, counts; the bytes to store are queued into
        `blobs`."""
        repo_pk, revision_pk, recorded_at = keys
        if snapshot.estimate is not None:
            connection.execute(_INSERT_ESTIMATE, estimate_values(revision_pk, snapshot.estimate))
        rows = file_rows(revision_pk, snapshot, blobs)
        self._put_blobs(connection, blobs)
        if rows:  # one executemany
            connection.execute(_INSERT_FILES, rows)
        base = snapshot.base
        changes = change_values(revision_pk, repo_pk, recorded_at, base, 0, snapshot.changes)
        if changes:
            connection.execute(_INSERT_CHANGES, changes)
        count_revision(connection, self.dialect, repo_pk, revision_pk, snapshot.changes)

    def _stored(self, repo_id: str, sha: CommitSha) -> bool:
        """Whether the repo has the revision `sha` stored (committed)."""
        with self._reading() as connection:
            found = connection.execute(_FIND[False], {"repo_id": repo_id, "shas": [sha]}).all()
        return any(pk is not None for _, pk, *_ in found)

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
            return [file_of(row) for row in rows]

    def last_read(
        self, repo_id: str, paths: Iterable[str], before: CommitSha
    ) -> dict[str, CommitSha]:
        wanted = sorted(set(paths))
        if not wanted:
            return {}
        with self._session() as session:
            repo = self._repo_row(session, repo_id)
            limit = self._revision_pk(session, repo, before)
            newest = (
                select(FileRow.path, func.max(FileRow.revision_pk))
                .join(RevisionRow, col(RevisionRow.id) == FileRow.revision_pk)
                .where(
                    RevisionRow.repo_pk == repo.id,
                    col(RevisionRow.id) < limit,
                    col(FileRow.path).in_(wanted),
                    FileRow.content_status == ReadStatus.STORED.value,
                )
                .group_by(col(FileRow.path))
            )
            found = dict(session.exec(newest).all())
            if not found:
                return {}
            shas = dict(
                session.exec(
                    select(RevisionRow.id, RevisionRow.sha).where(
                        col(RevisionRow.id).in_(set(found.values()))
                    )
                ).all()
            )
        return {path: CommitSha(shas[pk]) for path, pk in found.items()}


SYNCHRONOUS = False
"""Whether a revision's commit waits for the disk (PostgreSQL's synchronous_commit, for its own
transaction): it does not, which saved 0.6-0.8 ms a revision here, a third of what storing one
waited once pipelined, and more on a busy disk (issue 15). Safe because:
- PostgreSQL stays consistent: a server crash loses the last commits whole (those of the last
  ~0.6 s, 3 x wal_writer_delay), never a part of one, and loses them in commit order;
- a later synchronous commit flushes the WAL before it: a poll's `update_repo` (its new head,
  written after its revisions), an outbox message or an advisory match enqueued by a revision's
  hooks all come after the revision, so none of them survives without it, and every revision a
  poll returned (`track()` included) is on disk by then;
- what a crash loses is stored again: the poll that was writing fails (its connection is gone:
  StoreError), and the next one reads the known shas and the head from the database, so it
  stores the lost revisions again from upstream, in order. Should the poll go on through a new
  connection, the next revision finds its parent missing (`_last`) and fails the poll the same
  way, instead of being stored before it.
Nothing outside the database acts on such a revision (webhooks are sent from the outbox); a
reader (the API) may show one for that fraction of a second before a crash, and again once the
next poll stored it. SQLite keeps its own setting (synchronous=NORMAL in WAL mode).
"""
FILES: Table = FileRow.__table__  # type: ignore[attr-defined]  # SQLModel does not declare it
BLOBS: Table = BlobRow.__table__  # type: ignore[attr-defined]
_Paths = dict[str, tuple[str, str | None]]
"""A revision's files by path: (blob id, LFS sha256), what `_changed` compares."""

# built once with parameters: building a statement cost more than running it (issue 15)
_FIND_ROWS = (
    core_select(REPO.c.id, REVISION.c.id, REVISION.c.sha, REVISION.c.recorded_at)
    .select_from(REPO)
    .outerjoin(
        REVISION,
        (REVISION.c.repo_pk == REPO.c.id) & REVISION.c.sha.in_(bindparam("shas", expanding=True)),
    )
    .where(REPO.c.repo_id == bindparam("repo_id"))
)
_NEXT_KEY = core_select(
    func.nextval(func.pg_get_serial_sequence("revision", "id"))
).scalar_subquery()
"""The key the next revision will take, from its sequence: in a pipeline the revision's row is
inserted with it, as no statement may wait for the row's RETURNING (`pipelined_transaction`).
Drawn once per query (an uncorrelated subquery), also when the revision is stored already: a
gap in the keys, as a rolled-back insert leaves."""
_FIND: tuple[Select[Any], Select[Any]] = (_FIND_ROWS, _FIND_ROWS.add_columns(_NEXT_KEY))
"""By "pipelined": with the next revision's key or without."""
_INSERT_REVISION = (insert(REVISION), insert(REVISION).inline())  # by "key given"
# inline: no RETURNING of the key, which a pipelined statement cannot give back
_INSERT_ESTIMATE = insert(ESTIMATE).inline()
_INSERT_FILES = insert(FILES).inline()
_INSERT_CHANGES = insert(CHANGE).inline()
_PUT_BLOB = tuple(  # by "is postgresql"
    dialect.insert(BLOBS).on_conflict_do_nothing(index_elements=["sha256"]).inline()
    for dialect in (sqlite, postgresql)
)
_PARENT_FILES = core_select(FILES.c.path, FILES.c.blob_id, FILES.c.lfs_sha256).where(
    FILES.c.revision_pk == bindparam("pk")
)


def _paths_of(snapshot: Snapshot) -> _Paths:
    return {entry.path: (entry.blob_id, entry.lfs_sha256) for entry in snapshot.files}


def _insert_revision(
    connection: Connection, values: dict[str, object], guard: dict[str, object] | None
) -> int:
    """Insert the revision's row (under its key, when `values` give it; its repo's key read
    from its parent's row with a `guard`); its key."""
    if guard is not None:
        repo_pk = values.pop("repo_pk")
        connection.execute(INSERT_CHILD, {**values, **guard, "parent_repo": repo_pk})
        return int(cast("int", values["id"]))
    result = connection.execute(_INSERT_REVISION["id" in values], values)
    if "id" in values:
        return int(cast("int", values["id"]))
    inserted = result.inserted_primary_key
    assert inserted is not None and inserted[0] is not None
    return int(inserted[0])


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

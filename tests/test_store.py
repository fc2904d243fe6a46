"""The Store contract, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from alembic.script import ScriptDirectory

from hubwatch.errors import NotTracked, UnknownRevision
from hubwatch.models import (
    CommitInfo,
    CommitSha,
    EventKind,
    FileEntry,
    ReadResult,
    ReadStatus,
    RepoEvent,
    RepoRef,
    RepoState,
    Snapshot,
    SourceKind,
)
from hubwatch.store.sql import SqlStore
from hubwatch.store.sql.migrate import alembic_config, current

REPO = RepoRef("org/model", SourceKind.GIT, "/nowhere")
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def sha(n: int) -> CommitSha:
    return CommitSha(f"{n:040x}")


def snapshot(n: int, files: dict[str, bytes], parent: int | None = None) -> Snapshot:
    entries = tuple(
        FileEntry(path, len(data), f"blob-{path}-{hash(data) & 0xFFFF:x}")
        for path, data in files.items()
    )
    contents = {path: ReadResult(ReadStatus.STORED, data) for path, data in files.items()}
    commit = CommitInfo(
        sha(n),
        (sha(parent),) if parent is not None else (),
        T0 + timedelta(n),
        ("someone",),
        f"commit {n}",
        "",
    )
    return Snapshot(commit, entries, contents)


def test_start_runs_migrations_to_head_and_is_repeatable(store: SqlStore) -> None:
    store.start()  # a second start on an up-to-date schema changes nothing
    heads = ScriptDirectory.from_config(alembic_config(store._engine)).get_heads()
    assert heads == [current(store._engine)]


def test_add_repo_is_idempotent(store: SqlStore) -> None:
    assert store.add_repo(REPO) is True
    assert store.add_repo(REPO) is False
    assert [r.ref for r in store.list_repos()] == [REPO]


def test_unknown_repo_raises_not_tracked(store: SqlStore) -> None:
    with pytest.raises(NotTracked, match="org/other is not tracked"):
        store.get_repo("org/other")


def test_add_revision_twice_stores_it_once(store: SqlStore) -> None:
    store.add_repo(REPO)
    assert store.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"})) is True
    assert store.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"})) is False
    assert [r.sha for r in store.history(REPO.repo_id)] == [sha(1)]


def test_unchanged_file_over_300_revisions_is_stored_once(store: SqlStore) -> None:
    store.add_repo(REPO)
    for n in range(300):
        files = {"config.json": b'{"same": true}', "README.md": f"rev {n}".encode()}
        store.add_revision(REPO.repo_id, snapshot(n, files, n - 1 if n else None))
    with store._engine.connect() as conn:
        from sqlalchemy import text

        blobs = conn.execute(text("SELECT count(*) FROM blob")).scalar_one()
    assert blobs == 301  # one config.json + 300 distinct READMEs
    assert len(store.history(REPO.repo_id)) == 300


def test_changed_files_are_computed_against_the_first_parent(store: SqlStore) -> None:
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(1, {"a.json": b"1", "b.json": b"1"}))
    store.add_revision(REPO.repo_id, snapshot(2, {"a.json": b"2", "c.json": b"1"}, parent=1))
    first, second = store.history(REPO.repo_id)
    assert first.changed == ("a.json", "b.json")
    assert second.changed == ("a.json", "b.json", "c.json")


def test_changed_files_are_the_same_whichever_store_wrote_the_parent(
    store: SqlStore, db_url: str
) -> None:
    # a store compares with the revision it wrote last from memory, and reads any other back
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(1, {"a.json": b"1", "b.json": b"1"}))
    other = SqlStore(db_url)
    try:
        other.add_revision(REPO.repo_id, snapshot(2, {"a.json": b"2", "c.json": b"1"}, 1))
    finally:
        other.close()
    store.add_revision(REPO.repo_id, snapshot(3, {"a.json": b"2", "c.json": b"2"}, 2))
    store.add_revision(REPO.repo_id, snapshot(4, {"a.json": b"3", "c.json": b"2"}, 3))
    changed = [r.changed for r in store.history(REPO.repo_id)]
    assert changed == [
        ("a.json", "b.json"),
        ("a.json", "b.json", "c.json"),
        ("c.json",),
        ("a.json",),
    ]


def test_changed_files_against_a_parent_written_again_after_the_repo_was_removed(
    store: SqlStore, db_url: str
) -> None:
    # the same commit stored again by another process, under a key SQLite may give again
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(1, {"a.json": b"1", "b.json": b"1"}))
    other = SqlStore(db_url)
    try:
        other.remove_repo(REPO.repo_id)
        other.add_repo(REPO)
        other.add_revision(REPO.repo_id, replace(snapshot(1, {"a.json": b"1"}), files=()))
    finally:
        other.close()
    store.add_revision(REPO.repo_id, snapshot(2, {"a.json": b"1"}, 1))
    assert [r.changed for r in store.history(REPO.repo_id)] == [(), ("a.json",)]


def test_revision_lookup_by_prefix(store: SqlStore) -> None:
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(0xABC, {"x.json": b"1"}))
    assert store.revision(REPO.repo_id, sha(0xABC)[:38]).sha == sha(0xABC)
    with pytest.raises(UnknownRevision, match="not a commit sha"):
        store.revision(REPO.repo_id, "main; DROP TABLE revision")
    with pytest.raises(UnknownRevision, match="no stored revision"):
        store.revision(REPO.repo_id, "ffff")


def test_known_content_reuses_reads_by_blob(store: SqlStore) -> None:
    store.add_repo(REPO)
    snap = snapshot(1, {"config.json": b'{"a": 1}'})
    store.add_revision(REPO.repo_id, snap)
    blob_id = snap.files[0].blob_id
    reused = store.content("config.json", blob_id)
    assert reused is not None and reused.status is ReadStatus.STORED and reused.data is None
    assert reused.sha256 is not None and store.blob(reused.sha256) == b'{"a": 1}'
    assert store.content("config.json", "other-blob") is None


def test_known_contents_and_headers_are_looked_up_together(store: SqlStore) -> None:
    store.add_repo(REPO)
    files = {f"f{i}.json": f'{{"v": {i}}}'.encode() for i in range(70)}  # over one statement
    for n in range(3):  # the same blobs in three revisions: still one answer each
        store.add_revision(REPO.repo_id, snapshot(n, files, n - 1 if n else None))
    snap = snapshot(0, files)
    header = ReadResult(ReadStatus.INVALID, b"{", error="bad header")
    weights = FileEntry("w.safetensors", 9, "blob-w", lfs_sha256="a" * 64)
    store.add_revision(
        REPO.repo_id, replace(snapshot(9, {}), files=(weights,), headers={weights.path: header})
    )
    wanted = [(e.path, e.blob_id) for e in snap.files] + [("f0.json", "no-such-blob")]
    found = store.contents(wanted)
    assert found == {pair: store.content(*pair) for pair in wanted[:-1]}
    assert found[wanted[0]].sha256 is not None and found[wanted[0]].data is None
    assert store.headers(["a" * 64, "blob-w", "b" * 64]) == {"a" * 64: store.header("a" * 64)}
    assert store.headers(["a" * 64])["a" * 64].error == "bad header"
    assert store.contents([]) == {} and store.headers([]) == {}


def test_unreachable_revisions_are_marked_not_deleted(store: SqlStore) -> None:
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(1, {"a.json": b"1"}))
    store.set_reachable(REPO.repo_id, [sha(1)], False)
    assert store.known_shas(REPO.repo_id) == {sha(1): False}
    assert store.history(REPO.repo_id)[0].reachable is False


def test_events_and_repo_state_round_trip(store: SqlStore) -> None:
    store.add_repo(REPO)
    store.add_event(REPO.repo_id, RepoEvent(EventKind.REPO_GATED, "became gated", at=T0))
    store.update_repo(REPO.repo_id, state=RepoState.GATED, head=sha(5), error="boom")
    tracked = store.get_repo(REPO.repo_id)
    assert (tracked.state, tracked.head, tracked.last_error) == (RepoState.GATED, sha(5), "boom")
    assert store.events(REPO.repo_id) == [RepoEvent(EventKind.REPO_GATED, "became gated", None, T0)]


def test_remove_repo_forgets_its_history(store: SqlStore) -> None:
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(1, {"a.json": b"1"}))
    store.remove_repo(REPO.repo_id)
    assert store.list_repos() == []
    with pytest.raises(NotTracked):
        store.history(REPO.repo_id)


def test_a_revision_whose_write_fails_midway_leaves_nothing_behind(store: SqlStore) -> None:
    # Two entries for one path break file_entry's key after the revision row is written: the
    # revision, its estimate and its files land together or not at all (a write in autocommit
    # left a revision without files when the process died between two statements).
    store.add_repo(REPO)
    good = snapshot(1, {"config.json": b"{}"})
    twice = replace(good, files=good.files + good.files)
    with pytest.raises(Exception, match="(?i)unique|duplicate"):
        store.add_revision(REPO.repo_id, twice)
    assert store.history(REPO.repo_id) == []
    assert store.add_revision(REPO.repo_id, good) is True
    assert [f.path for f in store.files(REPO.repo_id, sha(1))] == ["config.json"]

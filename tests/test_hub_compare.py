"""Fewer requests per changed repo (issue 35): a new revision's files from one compare against
its stored parent, commit pages of 1,000, and the fallback to the tree listing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hubwatch.models import FileEntry, RepoRef, SourceKind, StoredFile
from hubwatch.sources.base import FileChange
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.listing import usable, with_changes
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo, safetensors_bytes
from tests.support.hubsim import HubSimulator

REPO = "org/model"


def _weights(salt: int) -> bytes:
    return safetensors_bytes({"w": ("F32", [4, 4])}, metadata={"salt": str(salt)})


HISTORY = [
    CommitSpec({"README.md": b"# m\n", "config.json": b'{"a": 1}', "w.safetensors": _weights(0)}),
    CommitSpec({"config.json": b'{"a": 2}', "sub/notes.txt": b"notes\n"}),  # edit, add in a dir
    CommitSpec({"w.safetensors": _weights(1)}),  # an LFS (and Xet) file re-uploaded
    CommitSpec({"sub/notes.txt": None, "sub/renamed.txt": b"notes\n"}),  # a rename
    CommitSpec({"README.md": None, "a.txt": b"a", "a/b.txt": b"b", "ab": b"ab"}),  # delete, order
    CommitSpec({"w.safetensors": None, "model.safetensors": _weights(1)}),  # an LFS rename
    CommitSpec({"config.json": b'{"a": 3}', "a.txt": None, "w2.bin": b"\0" * 64}),
]


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubSimulator]:
    with HubSimulator(page_size_commits=1000) as sim:
        sim.xet.enabled = True
        make_repo(tmp_path / "up", HISTORY, lfs_dir=tmp_path / "lfs")
        sim.add_repo(REPO, tmp_path / "up", lfs_dir=tmp_path / "lfs")
        yield sim
    assert sim.errors == []


@pytest.fixture
def source(hub: HubSimulator) -> Iterator[HubSource]:
    source = HubSource(hub.url, timeout_s=5)
    yield source
    source.close()  # its pooled connections: the simulator outlives no test


def _tracker(store: SqlStore, source: HubSource) -> Tracker:
    retry = RetryPolicy(attempts=3, sleep=lambda _s: None)
    return Tracker(store, {SourceKind.HUB: source}, retry=retry)


def _stored(entries: list[FileEntry]) -> list[StoredFile]:
    """A tree listing as the store keeps it: what the parent's poll stored."""
    return [
        StoredFile(e.path, e.size, e.blob_id, e.lfs_sha256, *[None] * 6, xet_hash=e.xet_hash)
        for e in entries
    ]


def test_each_compare_gives_exactly_the_tree_listing(source: HubSource) -> None:
    repo = RepoRef(REPO)
    shas = [c.sha for c in reversed(source.list_commits(repo))]
    removed = 0
    for parent, sha in zip(shas, shas[1:], strict=False):
        changes = source.changed_files(repo, parent, sha)
        assert changes is not None
        removed += sum(c.entry is None for c in changes)
        listed = source.list_files(repo, sha)
        # order included: the merged list is in the tree listing's own order
        assert with_changes(_stored(source.list_files(repo, parent)), changes) == listed
    assert removed == 4  # README.md, a.txt, and the old sides of the two renames
    assert any(e.xet_hash for e in source.list_files(repo, shas[-1]))  # Xet hashes carried


def test_a_backfill_lists_one_tree_and_compares_the_rest(
    store: SqlStore, hub: HubSimulator, source: HubSource, tmp_path: Path
) -> None:
    tracker = _tracker(store, source)
    result = tracker.track(RepoRef(REPO))
    assert len(result.new) == len(HISTORY) and result.partial == []
    assert hub.stats.count("tree") == 1  # the first revision, which has no parent stored
    assert hub.stats.count("compare") == len(HISTORY) - 1

    # the same history with the endpoint off: every revision's tree is listed, and stored alike
    off = SqlStore(f"sqlite:///{tmp_path / 'off.db'}")
    off.start()
    hub.compare = False
    hub.reset_stats()
    source.close()
    again = HubSource(hub.url, timeout_s=5)  # a source anew, which has not met the 404
    _tracker(off, again).track(RepoRef(REPO))
    again.close()
    assert hub.stats.count("tree") == len(HISTORY)
    assert hub.stats.count("compare") == 1  # asked once: a 404 without a code, then not again
    for sha in result.new:
        assert store.files(REPO, sha) == off.files(REPO, sha)
    assert store.history(REPO) == off.history(REPO)
    assert [r.changes for r in store.changes(REPO)] == [r.changes for r in off.changes(REPO)]
    off.close()


def test_an_answer_not_understood_falls_back_to_the_tree(
    store: SqlStore, hub: HubSimulator, source: HubSource
) -> None:
    tracker = _tracker(store, source)
    hub.fail_next(1, "malformed", routes={"compare"})  # a 200 whose body is an HTML page
    result = tracker.track(RepoRef(REPO))
    assert len(result.new) == len(HISTORY) and result.partial == []
    assert hub.stats.count("compare") == 1 and hub.stats.count("tree") == len(HISTORY)
    listed = source.list_files(RepoRef(REPO), result.new[-1])
    assert [f.path for f in store.files(REPO, result.new[-1])] == sorted(e.path for e in listed)


def test_a_transient_compare_failure_is_retried(
    store: SqlStore, hub: HubSimulator, source: HubSource
) -> None:
    hub.fail_next(1, "500", routes={"compare"})
    result = _tracker(store, source).track(RepoRef(REPO))
    assert result.partial == [] and hub.stats.count("tree") == 1
    assert hub.stats.count("compare") == len(HISTORY)  # one asked twice


def test_a_poll_of_one_new_commit_is_one_commits_request(
    store: SqlStore, hub: HubSimulator, source: HubSource, tmp_path: Path
) -> None:
    tracker = _tracker(store, source)
    tracker.track(RepoRef(REPO))
    add_commits(tmp_path / "up", [CommitSpec({"config.json": b'{"a": 4}'})])
    hub.reset_stats()
    assert len(tracker.poll(REPO).new) == 1
    [listing] = [r for r in hub.requests if r.route == "commits"]
    assert "limit=50" in listing.path  # the Hub's default page: no more than before
    assert hub.stats.count("compare") == 1 and hub.stats.count("tree") == 0


def test_a_full_listing_asks_for_pages_of_1000(
    hub: HubSimulator, source: HubSource, tmp_path: Path
) -> None:
    specs = [CommitSpec({"n.txt": str(i).encode()}) for i in range(1010)]
    make_repo(tmp_path / "long", specs)
    hub.add_repo("org/long", tmp_path / "long")
    hub.reset_stats()
    commits = source.list_commits(RepoRef("org/long"))
    assert len(commits) == 1010 and hub.stats.count("commits") == 2  # not 21 pages of 50
    assert commits[0].parents == (commits[1].sha,)

    # down to a stored head: one page of 50 where it is on it; else the rest in pages of 1000
    hub.reset_stats()
    assert len(source.list_commits_since(RepoRef("org/long"), commits[3].sha)) == 4
    assert hub.stats.count("commits") == 1
    hub.reset_stats()
    since = source.list_commits_since(RepoRef("org/long"), commits[70].sha)
    assert [c.sha for c in since] == [c.sha for c in commits[:71]]
    pages = [r.path for r in hub.requests if r.route == "commits"]
    assert len(pages) == 2 and "limit=50" in pages[0] and "limit=1000" in pages[1]


def test_a_listing_the_hub_pages_smaller_is_followed(tmp_path: Path) -> None:
    with HubSimulator(page_size_commits=4) as hub:
        make_repo(tmp_path / "up", HISTORY)
        hub.add_repo(REPO, tmp_path / "up")
        source, repo = HubSource(hub.url, timeout_s=5), RepoRef(REPO)
        oldest = source.list_commits(repo)[-1].sha
        hub.reset_stats()
        assert len(source.list_commits_since(repo, oldest)) == len(HISTORY)
        assert hub.stats.count("commits") == 2  # its pages of 4, not asked again from the top
        source.close()


def _file(path: str, blob: str = "b") -> StoredFile:
    return StoredFile(path, 1, blob, None, None, None, None, None, None, None)


def test_changes_that_do_not_fit_the_parent_are_refused() -> None:
    parent = [_file("a"), _file("b")]
    entry = FileEntry("c", 1, "c")
    assert with_changes(parent, [FileChange("zzz", None)]) is None  # not in the parent
    moved = with_changes(parent, [FileChange("c", entry), FileChange("a", None)])
    assert moved == [FileEntry("b", 1, "b"), entry]
    assert usable(parent) and not usable([]) and not usable([_file("x…#0123456789abcdef")])

"""Tracking through GitSource: backfill, incremental polls, rewritten history, bad content."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from hubwatch.models import EventKind, ReadStatus, RepoRef, RepoState, SourceKind
from hubwatch.sources.git import GitSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.snapshot import Limits
from tests.support.gitrepo import CommitSpec, add_commits, git, make_repo, safetensors_bytes

CONFIG = json.dumps({"model_type": "llama", "hidden_size": 64}).encode()


def make_tracker(store: SqlStore, tmp_path: Path, limits: Limits | None = None) -> Tracker:
    source = GitSource(tmp_path / "mirrors", timeout_s=60)
    return Tracker(
        store,
        {SourceKind.GIT: source},
        limits or Limits(),
        RetryPolicy(attempts=2, sleep=lambda _s: None),
    )


def test_backfill_stores_every_revision_oldest_first(store: SqlStore, tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    shas = make_repo(
        upstream,
        [
            CommitSpec(
                {"config.json": CONFIG, "README.md": f"v{i}".encode()}, message=f"commit {i}"
            )
            for i in range(5)
        ],
    )
    tracker = make_tracker(store, tmp_path)
    seen: list[tuple[int, int]] = []
    result = tracker.track(
        RepoRef("org/m", SourceKind.GIT, str(upstream)),
        lambda done, total, _c: seen.append((done, total)),
    )
    assert result.new == shas
    assert [r.sha for r in store.history("org/m")] == shas
    assert seen == [(i, 5) for i in range(1, 6)]
    assert store.history("org/m")[1].changed == ("README.md",)


def test_second_poll_is_idle_and_new_commits_are_added(store: SqlStore, tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": CONFIG})])
    tracker = make_tracker(store, tmp_path)
    tracker.track(RepoRef("org/m", SourceKind.GIT, str(upstream)))
    assert tracker.poll("org/m").idle
    new = add_commits(upstream, [CommitSpec({"generation_config.json": b"{}"}, message="gen")])
    result = tracker.poll("org/m")
    assert result.new == new
    assert store.history("org/m")[-1].changed == ("generation_config.json",)


def test_rewritten_history_is_an_event_and_keeps_old_revisions(
    store: SqlStore, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    old = make_repo(
        upstream, [CommitSpec({"config.json": CONFIG}, message=f"c{i}") for i in range(3)]
    )
    tracker = make_tracker(store, tmp_path)
    tracker.track(RepoRef("org/m", SourceKind.GIT, str(upstream)))
    git(upstream, "reset", "-q", "--hard", old[0])  # squash-and-force-push, as seen on the Hub
    new = add_commits(
        upstream, [CommitSpec({"config.json": b'{"model_type": "x"}'}, message="squashed")]
    )
    result = tracker.poll("org/m")
    assert result.new == new
    assert sorted(result.unreachable) == sorted(old[1:])
    history = store.history("org/m")
    assert [r.sha for r in history] == [*old, *new]
    assert [r.reachable for r in history] == [True, False, False, True]
    assert [e.kind for e in store.events("org/m")] == [EventKind.HISTORY_REWRITTEN]


def test_deleted_remote_is_an_event_and_keeps_history(store: SqlStore, tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": CONFIG})])
    tracker = make_tracker(store, tmp_path)
    tracker.track(RepoRef("org/m", SourceKind.GIT, str(upstream)))
    shutil.rmtree(upstream)
    result = tracker.poll("org/m")
    assert result.error is None
    assert store.get_repo("org/m").state is RepoState.DELETED
    assert [e.kind for e in store.events("org/m")] == [EventKind.REPO_DELETED]
    assert len(store.history("org/m")) == 1


def _header_file(header: bytes, claimed: int | None = None, data: int = 16) -> bytes:
    length = len(header) if claimed is None else claimed
    return struct.pack("<Q", length) + header + bytes(data)


BAD_FILES: dict[str, tuple[bytes, ReadStatus, str]] = {
    "config.json": (b"{not json", ReadStatus.INVALID, "not valid JSON"),
    "tokenizer_config.json": (b'{"a": "\xff\xfe"}', ReadStatus.INVALID, "not UTF-8"),
    "tokenizer.json": (b'{"big": "' + b"x" * 3000 + b'"}', ReadStatus.OVER_CAP, "over the cap"),
}
BAD_HEADERS: dict[str, tuple[bytes, ReadStatus, str]] = {
    "truncated.safetensors": (
        _header_file(b'{"a": 1}', claimed=4000, data=0)[:200],
        ReadStatus.INVALID,
        "claims 4000 bytes but the file has",
    ),
    "notjson.safetensors": (
        _header_file(b"this is not json"),
        ReadStatus.INVALID,
        "not valid JSON",
    ),
    "huge.safetensors": (_header_file(b"{}", claimed=1 << 30), ReadStatus.OVER_CAP, "over the cap"),
    "short.safetensors": (b"\x01\x02", ReadStatus.INVALID, "shorter than 8 bytes"),
    "lying.safetensors": (
        _header_file(b'{"w": {"dtype": "F16", "shape": [4], "data_offsets": [0, 999999]}}'),
        ReadStatus.INVALID,
        "outside the 16 bytes of data",
    ),
    "good.safetensors": (safetensors_bytes({"w": ("F16", [2, 2])}), ReadStatus.STORED, ""),
}


def test_bad_content_is_recorded_and_the_revision_still_stored(
    store: SqlStore, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    files = {path: data for path, (data, _, _) in {**BAD_FILES, **BAD_HEADERS}.items()}
    make_repo(upstream, [CommitSpec(files)], lfs_patterns=())  # weights in git: range-readable
    tracker = make_tracker(store, tmp_path, Limits(max_file_bytes=2048, max_header_bytes=1 << 20))
    result = tracker.track(RepoRef("org/bad", SourceKind.GIT, str(upstream)))
    assert result.error is None and len(result.new) == 1
    stored = {f.path: f for f in store.files("org/bad", result.new[0])}
    for path, (_, status, message) in BAD_FILES.items():
        assert stored[path].content_status is status, path
        assert message in (stored[path].content_error or ""), path
    for path, (_, status, message) in BAD_HEADERS.items():
        assert stored[path].header_status is status, path
        assert message in (stored[path].header_error or ""), path
    # invalid bytes are kept (content-addressed) so a later diff can show them
    assert stored["config.json"].content_sha256 is not None


def test_lfs_weights_in_git_are_unavailable_not_failed(store: SqlStore, tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    weights = safetensors_bytes({"w": ("BF16", [4, 4])})
    make_repo(upstream, [CommitSpec({"model.safetensors": weights})])
    result = make_tracker(store, tmp_path).track(RepoRef("org/lfs", SourceKind.GIT, str(upstream)))
    (entry,) = store.files("org/lfs", result.new[0])
    assert entry.size == len(weights) and entry.lfs_sha256 is not None
    assert entry.header_status is ReadStatus.UNAVAILABLE
    assert "LFS" in (entry.header_error or "")


@pytest.mark.parametrize("bad_url", ["/does/not/exist", "file:///does/not/exist"])
def test_track_of_missing_remote_stores_nothing(
    store: SqlStore, tmp_path: Path, bad_url: str
) -> None:
    from hubwatch.errors import RepoNotFound

    with pytest.raises(RepoNotFound):
        make_tracker(store, tmp_path).track(RepoRef("org/none", SourceKind.GIT, bad_url))
    assert store.list_repos() == []


def test_hostile_paths_are_stored_under_safe_names(store: SqlStore, tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    long_dir = "/".join(["d" * 200] * 7)  # 1,400 characters: git allows it, keys do not
    make_repo(upstream, [CommitSpec({f"{long_dir}/config.json": b"{}", "ok.json": b"{}"})])
    git(
        upstream,
        "mv",
        "ok.json",
        "caf\xe9.json".encode("latin-1").decode("utf-8", "surrogateescape"),
    )
    git(upstream, "commit", "-qm", "latin-1 name")
    result = make_tracker(store, tmp_path).track(
        RepoRef("org/paths", SourceKind.GIT, str(upstream))
    )
    assert result.error is None and len(result.new) == 2
    paths = [f.path for f in store.files("org/paths", result.new[1])]
    assert all(len(p) <= 1024 for p in paths)
    assert any(p.startswith("caf\ufffd.json…#") for p in paths)


@pytest.mark.parametrize(
    "url", ["--upload-pack=touch /tmp/hubwatch-pwned", "ext::sh -c touch% /tmp/hubwatch-pwned"]
)
def test_git_urls_cannot_run_commands(store: SqlStore, tmp_path: Path, url: str) -> None:
    from hubwatch.errors import SourceError

    with pytest.raises(SourceError):
        make_tracker(store, tmp_path).track(RepoRef("org/evil", SourceKind.GIT, url))
    assert not Path("/tmp/hubwatch-pwned").exists()


def test_poll_all_outlives_a_repo_that_crashes(store: SqlStore, tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": CONFIG})])
    tracker = make_tracker(store, tmp_path)
    store.add_repo(RepoRef("aaa/no-source", SourceKind.HUB))  # no Hub source configured: a bug
    tracker.track(RepoRef("org/m", SourceKind.GIT, str(upstream)))
    add_commits(upstream, [CommitSpec({"config.json": b"{}"})])
    results = {r.repo_id: r for r in tracker.poll_all()}
    assert "internal error" in (results["aaa/no-source"].error or "")
    assert len(results["org/m"].new) == 1
    assert "internal error" in (store.get_repo("aaa/no-source").last_error or "")

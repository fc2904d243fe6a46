"""Tracking through GitSource: backfill, incremental polls, rewritten history, bad content."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hubwatch.errors import EXIT_DAMAGED, ContentUnavailable, RepositoryDamaged
from hubwatch.models import (
    FOLLOW_HEAD,
    CommitSha,
    EventKind,
    ReadStatus,
    RepoRef,
    RepoState,
    SourceKind,
)
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


# -- hostile and damaged histories ------------------------------------------------------------


def write_object(repo: Path, kind: str, raw: bytes) -> str:
    """Write an object as given (`--literally`: git's own checks refuse the hostile ones)."""
    return git(repo, "hash-object", "-w", "--literally", "-t", kind, "--stdin", stdin=raw)


def tree_of(repo: Path, files: dict[bytes, bytes | str]) -> str:
    """A flat tree: bytes are a file's content, str the id of a tree or blob already written."""
    entries = []
    for name, content in sorted(files.items()):
        if isinstance(content, bytes):
            entries.append(
                b"100644 " + name + b"\0" + bytes.fromhex(write_object(repo, "blob", content))
            )
        else:
            mode = b"40000 " if git(repo, "cat-file", "-t", content) == "tree" else b"100644 "
            entries.append(mode + name + b"\0" + bytes.fromhex(content))
    return write_object(repo, "tree", b"".join(entries))


def plumb_commit(
    repo: Path, tree: str, message: bytes = b"plumbed", seconds: int = 1735689600
) -> str:
    """A commit on top of main written object by object, with its date as given; main moves."""
    parent = git(repo, "rev-parse", "--verify", "--quiet", "refs/heads/main")
    ident = b"Plumber <p@example.com> %d +0000" % seconds
    raw = b"tree %s\n%sauthor %s\ncommitter %s\n\n%s" % (
        tree.encode(),
        b"parent %s\n" % parent.encode() if parent else b"",
        ident,
        ident,
        message,
    )
    sha = write_object(repo, "commit", raw)
    git(repo, "update-ref", "refs/heads/main", sha)
    return sha


def loose(repo: Path, oid: str) -> Path:
    objects = repo / "objects" if (repo / "objects").is_dir() else repo / ".git" / "objects"
    return objects / oid[:2] / oid[2:]


def track_git(store: SqlStore, tmp_path: Path, url: str) -> tuple[GitSource, RepoRef, list[str]]:
    """Track `url`; the source, the ref and the stored shas (oldest first)."""
    source = GitSource(tmp_path / "mirrors", timeout_s=60)
    tracker = Tracker(store, {SourceKind.GIT: source}, Limits(), RetryPolicy(attempts=0))
    ref = RepoRef("org/hostile", SourceKind.GIT, url)
    result = tracker.track(ref)
    assert result.error is None, result.error
    return source, ref, [r.sha for r in store.history(ref.repo_id)]


def test_record_separators_in_messages_and_authors_forge_nothing(
    store: SqlStore, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    forged = f"\x1e{'f' * 40}\x1f\x1f2001-01-01T00:00:00+00:00\x1fMallory <m@x>\x1fFake title"
    shas = make_repo(
        upstream,
        [
            CommitSpec({"config.json": CONFIG}, message="good"),
            CommitSpec({"a.py": b"1"}, message=f"real title\n{forged}\n", author="Eve\x1e <e@x>"),
            CommitSpec({"b.py": b"2"}, message="good again"),
        ],
    )
    _, _, stored = track_git(store, tmp_path, str(upstream))
    assert stored == shas
    bad = store.revision("org/hostile", shas[1])
    assert (bad.title, bad.authors) == ("real title", ("Eve\x1e <e@x>",))
    assert forged in bad.message


def test_pathspec_magic_in_file_names_reads_each_files_own_bytes(
    store: SqlStore, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    files = {":(evil)modeling.py": b"evil", ":x.py": b"colon", "x.py": b"plain", "*.py": b"star"}
    shas = make_repo(upstream, [CommitSpec({"modeling.py": b"modeling", **files})])
    _, _, stored = track_git(store, tmp_path, str(upstream))
    assert stored == shas
    read = {f.path: f for f in store.files("org/hostile", shas[0])}
    for path, content in files.items():
        assert read[path].content_status is ReadStatus.STORED, path
        assert store.blob(read[path].content_sha256) == content, path  # type: ignore[arg-type]


def test_names_that_cannot_be_stored_are_listed_with_their_problem(
    store: SqlStore, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    good = make_repo(upstream, [CommitSpec({"config.json": CONFIG})], bare=True)
    bad = plumb_commit(
        upstream, tree_of(upstream, {b"..": b"up", b".git": b"g", b"config.json": CONFIG})
    )
    after = plumb_commit(upstream, tree_of(upstream, {b"config.json": CONFIG, b"m.py": b"1"}))
    source, ref, stored = track_git(store, tmp_path, str(upstream))
    assert stored == [*good, bad, after]
    problems = {e.path: e.problem for e in source.list_files(ref, CommitSha(bad))}
    assert problems == {
        "..": "invalid file name '..'",
        ".git": "invalid file name '.git'",
        "config.json": None,
    }
    with pytest.raises(ContentUnavailable, match=r"invalid file name '\.\.'"):
        source.read_file(ref, CommitSha(bad), "..", 1024)


def test_a_commit_dated_in_the_year_10000_is_stored_clamped(
    store: SqlStore, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    good = make_repo(upstream, [CommitSpec({"config.json": CONFIG})], bare=True)
    tree = tree_of(upstream, {b"config.json": CONFIG})
    bad = plumb_commit(upstream, tree, b"from the future", seconds=253402300800)
    after = plumb_commit(upstream, tree_of(upstream, {b"config.json": CONFIG, b"m.py": b"1"}))
    source, ref, stored = track_git(store, tmp_path, str(upstream))
    assert stored == [*good, bad, after]
    assert store.revision(ref.repo_id, bad).date == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    (listed,) = [c for c in source.list_commits(ref) if c.sha == bad]
    assert listed.problems == (
        "commit date 10000-01-01 is outside 0001–9999; stored as 9999-12-31T23:59:59Z",
    )


def test_a_missing_blob_is_unavailable_and_the_revision_stored(
    store: SqlStore, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    good = make_repo(upstream, [CommitSpec({"config.json": CONFIG})], bare=True)
    gone = b'{"model_type": "gone"}'
    bad = plumb_commit(upstream, tree_of(upstream, {b"config.json": gone, b"data.bin": b"x" * 9}))
    after = plumb_commit(upstream, tree_of(upstream, {b"config.json": CONFIG, b"m.py": b"1"}))
    blob = git(upstream, "rev-parse", f"{bad}:config.json")
    loose(upstream, blob).unlink()  # a damaged (or partial) repository
    source, ref, stored = track_git(store, tmp_path, str(upstream))  # a path: copied, unchecked
    assert stored == [*good, bad, after]
    (config,) = [f for f in store.files(ref.repo_id, CommitSha(bad)) if f.path == "config.json"]
    assert config.content_status is ReadStatus.UNAVAILABLE
    assert config.content_error == f"missing object {blob} (damaged repository)"
    assert {e.path: e.problem for e in source.list_files(ref, CommitSha(bad))} == {
        "config.json": f"missing object {blob} (damaged repository)",
        "data.bin": None,
    }
    assert [f.path for f in store.files(ref.repo_id, CommitSha(after))] == ["config.json", "m.py"]


def test_a_missing_folder_is_listed_with_its_problem(store: SqlStore, tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": CONFIG})], bare=True)
    sub = tree_of(upstream, {b"config.json": b"{}"})
    kept = tree_of(upstream, {b"z.py": b"z", b"gone.py": write_object(upstream, "blob", b"g")})
    files = {b"sub": sub, b"config.json": CONFIG, b"zz": kept, b"z.py": b"1"}
    bad = plumb_commit(upstream, tree_of(upstream, files))
    loose(upstream, sub).unlink()  # git ls-tree -r stops at the first folder it cannot read
    loose(upstream, git(upstream, "rev-parse", f"{kept}:gone.py")).unlink()
    source, ref, stored = track_git(store, tmp_path, str(upstream))
    assert stored[-1] == bad
    gone = git(upstream, "rev-parse", f"{kept}:gone.py")
    assert [(e.path, e.size, e.problem) for e in source.list_files(ref, CommitSha(bad))] == [
        ("config.json", len(CONFIG), None),
        ("sub", 0, f"missing object {sub} (damaged repository)"),
        ("z.py", 1, None),
        ("zz/gone.py", 0, f"missing object {gone} (damaged repository)"),
        ("zz/z.py", 1, None),
    ]
    assert source.read_file(ref, CommitSha(bad), "zz/z.py", 10) == b"z"


def test_a_missing_head_commit_is_a_damaged_repository(store: SqlStore, tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": CONFIG})], bare=True)
    head = plumb_commit(upstream, tree_of(upstream, {b"config.json": b"{}"}))
    loose(upstream, head).unlink()
    with pytest.raises(RepositoryDamaged, match=f"^repository damaged: .*missing object {head}"):
        track_git(store, tmp_path, str(upstream))
    assert store.list_repos() == []


def damaged_remote(tmp_path: Path) -> str:
    """A file:// URL of a repository whose head commit lacks a blob: a clone cannot finish."""
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": CONFIG})], bare=True)
    blob = write_object(upstream, "blob", b"gone")
    plumb_commit(upstream, tree_of(upstream, {b"config.json": blob}))
    loose(upstream, blob).unlink()
    return upstream.as_uri()


def test_a_damaged_remote_is_not_unreachable_and_leaves_no_mirror(
    store: SqlStore, tmp_path: Path
) -> None:
    url = damaged_remote(tmp_path)
    for _ in range(2):  # the second try meets no leftover of the first
        with pytest.raises(RepositoryDamaged) as caught:
            track_git(store, tmp_path, url)
        message = str(caught.value)
        assert message.startswith("repository damaged: org/hostile: ")
        assert not any(c < " " for c in message), message
        assert list((tmp_path / "mirrors").iterdir()) == []
    assert store.list_repos() == []


def test_track_of_a_damaged_remote_exits_6_with_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hubwatch.cli import app

    url = damaged_remote(tmp_path)
    env = {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}
    result = CliRunner().invoke(app, ["track", "org/m", "--source", "git", "--url", url], env=env)
    assert result.exit_code == EXIT_DAMAGED == RepositoryDamaged.exit_code
    assert result.stderr.startswith("error: repository damaged: ")
    assert result.stderr.count("\n") == 1 and "\0" not in result.stderr
    assert list((tmp_path / "data" / "mirrors").iterdir()) == []
    listed = CliRunner().invoke(app, ["list", "--json"], env=env)
    assert listed.stdout.strip() == "[]"


def git_commands(trace: Path) -> list[list[str]]:
    """The git commands hubwatch started (not their children), from a GIT_TRACE2_EVENT file."""
    commands = []
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") != "start" or "/" in event["sid"]:
            continue
        argv = event["argv"][1:]
        while argv[:1] == ["-C"]:
            argv = argv[2:]
        commands.append(argv)
    return commands


def test_a_backfill_reads_every_revision_through_one_cat_file_and_fetches_nothing(
    store: SqlStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = tmp_path / "up"
    weights = safetensors_bytes({"w": ("F16", [4, 4])})
    files = {"config.json": CONFIG, "model.safetensors": weights, "tokenizer_config.json": b"{}"}
    history = [CommitSpec({**files, "README.md": f"v{i}".encode()}) for i in range(4)]
    make_repo(upstream, history, lfs_patterns=())
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    tracker = make_tracker(store, tmp_path)
    result = tracker.track(RepoRef("org/m", SourceKind.GIT, str(upstream)))
    assert len(result.new) == 4
    commands = [argv[0] for argv in git_commands(trace)]
    assert commands.count("clone") == 1 and "fetch" not in commands
    batches = [argv for argv in git_commands(trace) if argv[0] == "cat-file"]
    # the commits, then one for all revisions' trees and files, and one for the files' sizes
    assert batches == [["cat-file", "--batch"]] * 2 + [["cat-file", "--batch-check"]]
    assert "ls-tree" not in commands  # trees are read through the same process
    add_commits(upstream, [CommitSpec({"README.md": b"v5"})])
    trace.unlink()
    assert tracker.poll("org/m").new
    assert [argv[0] for argv in git_commands(trace)].count("fetch") == 1


def test_a_remote_whose_default_branch_is_not_main_is_followed_without_a_branch(
    store: SqlStore, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": CONFIG}, branch="trunk")])
    git(upstream, "symbolic-ref", "HEAD", "refs/heads/trunk")  # no `main` at all
    tracker = make_tracker(store, tmp_path)
    source = tracker.sources[SourceKind.GIT]
    ref = RepoRef("org/trunk", SourceKind.GIT, str(upstream), FOLLOW_HEAD)
    assert len(tracker.track(ref).new) == 1
    [tip] = add_commits(upstream, [CommitSpec({"config.json": CONFIG + b" "}, branch="trunk")])
    assert source.head(ref) == tip  # discovery's check follows HEAD too
    assert tracker.poll("org/trunk").new == [tip]
    # the remote's default branch moves to another: followed
    [moved] = add_commits(upstream, [CommitSpec({"README.md": b"# next"}, branch="next")])
    git(upstream, "symbolic-ref", "HEAD", "refs/heads/next")
    assert source.head(ref) == moved
    assert tracker.poll("org/trunk").new == [moved]
    assert store.get_repo("org/trunk").head == moved


def test_track_without_a_branch_follows_a_git_remotes_head(tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": CONFIG}, branch="develop")])
    git(upstream, "symbolic-ref", "HEAD", "refs/heads/develop")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    env |= {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_ADVISORY_SERVICE": "off"}
    hubwatch = [sys.executable, "-m", "hubwatch"]
    track = [*hubwatch, "track", "org/dev", "--source", "git", "--url", str(upstream)]
    done = subprocess.run(track, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "org/dev: 1 revision stored" in done.stderr
    listed = subprocess.run([*hubwatch, "list", "--json"], env=env, capture_output=True, text=True)
    [repo] = json.loads(listed.stdout)
    assert repo["ref"]["branch"] == FOLLOW_HEAD

"""Tracking through HubSource against the local Hub simulator, with the real huggingface_hub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from hubwatch.errors import UnexpectedResponse
from hubwatch.models import EventKind, ReadStatus, RepoRef, RepoState, SourceKind
from hubwatch.sources.git import GitSource
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo, safetensors_bytes
from tests.support.hubsim import HubSimulator

TOKEN = "hf_test_token_0123456789"
GRANITE = "ibm-granite/granite-3.1-1b-a400m-instruct"
# What changed in each of granite's 9 real commits, oldest first (git show --stat).
GRANITE_CHANGES = [
    ("initial commit", [".gitattributes", "README.md"]),
    ("draft granite instruct model card.", ["README.md"]),
    (
        "Model upload",
        [
            "added_tokens.json",
            "config.json",
            "generation_config.json",
            "merges.txt",
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "model.safetensors.index.json",
            "special_tokens_map.json",
            "tokenizer.json",
            "tokenizer_config.json",
            "vocab.json",
        ],
    ),
    ("draft v2", ["README.md"]),
    ("Update README.md", ["README.md"]),
    ("Update README.md", ["README.md"]),
    ("Updated chat template", ["tokenizer_config.json"]),
    (
        "Added bf16 tensors",
        [
            "config.json",
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "model.safetensors",
            "model.safetensors.index.json",
        ],
    ),
    ("Update README.md", ["README.md"]),
]


@pytest.fixture
def hub() -> Iterator[HubSimulator]:
    with HubSimulator(page_size_commits=4) as sim:
        sim.tokens.add(TOKEN)
        yield sim
    assert sim.errors == []


def tracker_for(
    store: SqlStore, hub: HubSimulator, tmp_path: Path, token: str | None = TOKEN, attempts: int = 3
) -> Tracker:
    sources = {
        SourceKind.HUB: HubSource(hub.url, token, timeout_s=5),
        SourceKind.GIT: GitSource(tmp_path / "mirrors"),
    }
    return Tracker(store, sources, retry=RetryPolicy(attempts=attempts, sleep=lambda _s: None))


def _record(store: SqlStore, repo_id: str) -> list[tuple[object, ...]]:
    """What must be the same whichever source a history came from."""
    rows = []
    for rev in store.history(repo_id):
        files = tuple(
            (f.path, f.size, f.blob_id, f.lfs_sha256, f.content_sha256, f.content_status)
            for f in store.files(repo_id, rev.sha)
        )
        rows.append(
            (rev.sha, rev.date, rev.title, rev.message, rev.parents, rev.changed, rev.card, files)
        )
    return rows


def test_granite_history_is_identical_through_hub_and_git(
    store: SqlStore, hub: HubSimulator, granite_git: Path, tmp_path: Path
) -> None:
    hub.add_repo(GRANITE, granite_git)
    tracker = tracker_for(store, hub, tmp_path)
    via_hub = tracker.track(RepoRef(GRANITE))
    via_git = tracker.track(RepoRef("mirror/granite", SourceKind.GIT, str(granite_git)))
    assert via_hub.error is None and via_git.error is None
    assert len(via_hub.new) == 9 and via_hub.new == via_git.new

    history = store.history(GRANITE)
    assert [(r.title, list(r.changed)) for r in history] == GRANITE_CHANGES
    assert _record(store, GRANITE) == _record(store, "mirror/granite")

    upload = {f.path: f for f in store.files(GRANITE, history[2].sha)}
    assert upload["config.json"].content_status is ReadStatus.STORED
    assert json.loads(store.blob(upload["config.json"].content_sha256))["model_type"] == (
        "granitemoe"
    )
    assert upload["model-00001-of-00002.safetensors"].lfs_sha256 is not None
    # The mirror has only LFS pointers, so no header can be read from either source.
    mirrored = {f.path: f for f in store.files("mirror/granite", history[2].sha)}
    shard = "model-00001-of-00002.safetensors"
    assert mirrored[shard].header_status is ReadStatus.UNAVAILABLE
    # The simulator, like the mirror, has no LFS objects for granite: recorded, not fatal.
    assert upload[shard].header_status is ReadStatus.ERROR
    assert "not found" in (upload[shard].header_error or "")
    assert history[7].card and history[7].card["license"] == "apache-2.0"


def test_sharded_safetensors_headers_are_read_by_range(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    shard1 = safetensors_bytes({"model.embed.weight": ("BF16", [512, 64])})
    shard2 = safetensors_bytes({"lm_head.weight": ("BF16", [512, 64])})
    index = {
        "metadata": {"total_size": 131072},
        "weight_map": {
            "model.embed.weight": "model-00001-of-00002.safetensors",
            "lm_head.weight": "model-00002-of-00002.safetensors",
        },
    }
    make_repo(
        tmp_path / "up",
        [
            CommitSpec(
                {
                    "config.json": b'{"model_type": "llama"}',
                    "model.safetensors.index.json": json.dumps(index).encode(),
                    "model-00001-of-00002.safetensors": shard1,
                    "model-00002-of-00002.safetensors": shard2,
                }
            )
        ],
        lfs_dir=tmp_path / "lfs",
    )
    hub.add_repo("org/sharded", tmp_path / "up", lfs_dir=tmp_path / "lfs")
    result = tracker_for(store, hub, tmp_path).track(RepoRef("org/sharded"))
    files = {f.path: f for f in store.files("org/sharded", result.new[0])}
    header = json.loads(store.blob(files["model-00001-of-00002.safetensors"].header_sha256))
    assert header["model.embed.weight"]["shape"] == [512, 64]
    assert files["model-00002-of-00002.safetensors"].header_status is ReadStatus.STORED
    header_bytes = sum(8 + int.from_bytes(s[:8], "little") for s in (shard1, shard2))
    assert hub.stats.lfs_bytes == header_bytes  # header ranges only: not one byte of weights


def test_unchanged_files_are_not_downloaded_again(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    make_repo(
        tmp_path / "up",
        [CommitSpec({"tokenizer.json": b'{"v": 1}', "README.md": b"a"})],
        lfs_dir=tmp_path / "lfs",
    )
    hub.add_repo("org/m", tmp_path / "up")
    tracker = tracker_for(store, hub, tmp_path)
    tracker.track(RepoRef("org/m"))
    add_commits(tmp_path / "up", [CommitSpec({"README.md": b"b"})])
    hub.reset_stats()
    tracker.poll("org/m")
    downloads = [r.path for r in hub.requests if r.route == "resolve"]
    assert downloads and all(path.endswith("/README.md") for path in downloads)


def test_private_repo_needs_the_token(store: SqlStore, hub: HubSimulator, tmp_path: Path) -> None:
    from hubwatch.errors import RepoNotFound

    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    hub.add_repo("org/private", tmp_path / "up", private=True)
    with pytest.raises(RepoNotFound, match="private"):
        tracker_for(store, hub, tmp_path, token=None).track(RepoRef("org/private"))
    assert store.list_repos() == []
    result = tracker_for(store, hub, tmp_path).track(RepoRef("org/private"))
    assert len(result.new) == 1


def test_repo_becoming_gated_disabled_deleted_are_events_and_keep_history(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    hub.add_repo("org/m", tmp_path / "up")
    tracker = tracker_for(store, hub, tmp_path, token=None)
    tracker.track(RepoRef("org/m"))

    hub.set_state("org/m", gated="manual")
    add_commits(tmp_path / "up", [CommitSpec({"config.json": b'{"a": 1}'})])
    gated = tracker.poll("org/m")  # metadata still answers; file reads are refused
    assert store.get_repo("org/m").state is RepoState.GATED
    assert gated.new == [] and gated.error and "gated" in gated.error

    hub.set_state("org/m", gated=False, disabled=True)
    tracker.poll("org/m")
    assert store.get_repo("org/m").state is RepoState.DISABLED
    hub.set_state("org/m", disabled=False, deleted=True)
    tracker.poll("org/m")
    # the Hub answers a deleted repo as it answers one turned private: which, it does not say
    assert store.get_repo("org/m").state is RepoState.UNAVAILABLE
    kinds = [e.kind for e in store.events("org/m")]
    assert kinds[:1] == [EventKind.REPO_GATED]
    assert EventKind.REPO_DISABLED in kinds and kinds[-1] is EventKind.REPO_UNAVAILABLE
    assert len(store.history("org/m")) == 1


def test_renamed_repo_is_followed_and_recorded(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    hub.add_repo("org/old", tmp_path / "up")
    tracker = tracker_for(store, hub, tmp_path)
    tracker.track(RepoRef("org/old"))
    hub.rename("org/old", "org/new")
    add_commits(tmp_path / "up", [CommitSpec({"config.json": b'{"a": 1}'})])
    result = tracker.poll("org/old")
    assert result.error is None and len(result.new) == 1
    assert (result.repo_id, result.renamed_from) == ("org/new", "org/old")
    renamed = store.get_repo("org/new")  # tracked under the name the listing and hooks use
    assert renamed.former_ids == ("org/old",) and renamed.revisions == 2
    assert [e.kind for e in store.events("org/new")] == [EventKind.REPO_RENAMED]
    assert store.find_repo(former_id="org/old") == "org/new"


@pytest.mark.parametrize("fault", ["429", "500", "reset", "truncate"])
def test_transient_hub_errors_are_retried(
    store: SqlStore, hub: HubSimulator, tmp_path: Path, fault: str
) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}", "README.md": b"x"})])
    hub.add_repo("org/m", tmp_path / "up")
    hub.fail_next(2, fault)  # type: ignore[arg-type]
    result = tracker_for(store, hub, tmp_path, attempts=4).track(RepoRef("org/m"))
    assert result.error is None and len(result.new) == 1


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("500", "answered 500"),
        ("reset", "cannot reach the Hub"),
        ("429", "rate limited"),
    ],
)
def test_persistent_hub_errors_fail_the_poll_and_keep_the_store(
    store: SqlStore, hub: HubSimulator, tmp_path: Path, fault: str, message: str
) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    hub.add_repo("org/m", tmp_path / "up")
    tracker = tracker_for(store, hub, tmp_path, attempts=1)
    tracker.track(RepoRef("org/m"))
    before = _record(store, "org/m")
    add_commits(tmp_path / "up", [CommitSpec({"config.json": b'{"a": 1}'})])
    hub.fail_next(1000, fault, routes={"commits", "model-info", "tree", "resolve"})  # type: ignore[arg-type]
    result = tracker.poll("org/m")
    assert result.error and message in result.error
    assert _record(store, "org/m") == before
    assert store.get_repo("org/m").last_error == result.error
    assert store.events("org/m")[-1].kind is EventKind.POLL_FAILED


def test_a_malformed_hub_answer_fails_the_poll_without_a_retry(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    hub.add_repo("org/m", tmp_path / "up")
    tracker = tracker_for(store, hub, tmp_path, attempts=3)
    tracker.track(RepoRef("org/m"))
    hub.reset_stats()
    hub.fail_next(1, "malformed", routes={"model-info"})
    with capture_logs() as logs:
        result = tracker.poll("org/m")
    assert isinstance(result.failure, UnexpectedResponse)
    assert result.error and "malformed response" in result.error
    assert hub.stats.count("model-info") == 1  # asked once: a retry would get the same page
    assert [e for e in logs if e["event"] == "source_retry"] == []
    assert store.events("org/m")[-1].kind is EventKind.POLL_FAILED


def test_unknown_repo_is_refused_and_nothing_stored(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    from hubwatch.errors import RepoNotFound

    with pytest.raises(RepoNotFound):
        tracker_for(store, hub, tmp_path).track(RepoRef("org/nope"))
    assert store.list_repos() == []


def test_gated_repo_with_a_granted_token_is_tracked(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    hub.add_repo("org/gated", tmp_path / "up", gated="manual")
    result = tracker_for(store, hub, tmp_path).track(RepoRef("org/gated"))
    assert result.error is None and len(result.new) == 1
    assert store.get_repo("org/gated").state is RepoState.GATED
    (entry,) = store.files("org/gated", result.new[0])
    assert entry.content_status is ReadStatus.STORED


def test_the_token_never_reaches_logs_errors_or_the_store(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    from structlog.testing import capture_logs

    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    hub.add_repo("org/private", tmp_path / "up", private=True)
    tracker = tracker_for(store, hub, tmp_path, attempts=1)
    with capture_logs() as logs:
        hub.fail_next(1, "500")
        tracker.track(RepoRef("org/private"))
        hub.fail_next(50, "500")
        add_commits(tmp_path / "up", [CommitSpec({"config.json": b'{"a": 1}'})])
        failed = tracker.poll("org/private")
    assert failed.error and logs
    assert all(r.auth for r in hub.requests if r.route != "cdn")  # the token was in use
    seen = repr(logs) + repr(store.events("org/private")) + repr(store.list_repos())
    assert TOKEN not in seen


def test_lying_headers_from_the_hub_are_recorded_per_file(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    from tests.test_tracking_git import BAD_HEADERS

    files = {path: data for path, (data, _, _) in BAD_HEADERS.items()}
    files["config.json"] = b"\xff\xfe not utf-8"
    make_repo(tmp_path / "up", [CommitSpec(files)], lfs_dir=tmp_path / "lfs")
    hub.add_repo("org/liar", tmp_path / "up", lfs_dir=tmp_path / "lfs")
    result = tracker_for(store, hub, tmp_path).track(RepoRef("org/liar"))
    assert result.error is None
    stored = {f.path: f for f in store.files("org/liar", result.new[0])}
    for path, (_, status, message) in BAD_HEADERS.items():
        assert stored[path].lfs_sha256 is not None, path
        assert stored[path].header_status is status, path
        assert message in (stored[path].header_error or ""), path
    assert stored["config.json"].content_status is ReadStatus.INVALID
    # A header claiming 1 GiB is refused from its 8-byte prefix: nothing more is fetched.
    assert hub.stats.lfs_bytes < 10_000


@pytest.mark.parametrize("kind", [SourceKind.HUB, SourceKind.GIT])
def test_branches_and_tags_resolve_to_commit_shas(
    hub: HubSimulator, tmp_path: Path, kind: SourceKind
) -> None:
    from hubwatch.errors import RevisionNotFound

    shas = make_repo(
        tmp_path / "up", [CommitSpec({"a.json": b"1"}, tag="v1"), CommitSpec({"a.json": b"2"})]
    )
    hub.add_repo("org/m", tmp_path / "up")
    source = (
        HubSource(hub.url, timeout_s=5)
        if kind is SourceKind.HUB
        else GitSource(tmp_path / "mirrors")
    )
    repo = RepoRef("org/m", kind, str(tmp_path / "up") if kind is SourceKind.GIT else None)
    assert source.resolve(repo, "main") == shas[1]
    assert source.resolve(repo, "v1") == shas[0]
    assert source.resolve(repo, shas[0]) == shas[0]
    with pytest.raises(RevisionNotFound):
        source.resolve(repo, "no-such-branch")

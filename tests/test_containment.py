"""A bad revision never stops a repo; a repo whose polls keep failing is degraded, then recovers.

Histories are good → bad → good, read through a real GitSource (over repos built by
tests/support/gitrepo.py) that fails on the bad commit the way a source bug or a broken
repository does.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from alembic import command
from sqlalchemy import text
from standardwebhooks import Webhook
from structlog.testing import capture_logs
from typer.testing import CliRunner

from hubwatch.api import create_app
from hubwatch.cli import app
from hubwatch.diff import DIFFERS, RevisionView
from hubwatch.errors import (
    AuthError,
    EntryNotFound,
    HubwatchError,
    RepoGated,
    RepoNotFound,
    RevisionNotFound,
    SourceUnavailable,
    StoreError,
    UnexpectedResponse,
)
from hubwatch.models import (
    Change,
    CommitInfo,
    CommitSha,
    EventKind,
    FileEntry,
    ReadResult,
    ReadStatus,
    RepoRef,
    RepoState,
    RepoStatus,
    RevisionStored,
    Severity,
    Snapshot,
    SourceKind,
    StoredFile,
    TrackedRepo,
)
from hubwatch.notify.delivery import WebhookDeliverer
from hubwatch.notify.outbox import WebhookNotifier
from hubwatch.notify.signing import new_secret
from hubwatch.notify.urls import UrlPolicy, parse_networks
from hubwatch.settings import Settings
from hubwatch.sources.git import GitSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.store.sql.engine import make_engine
from hubwatch.store.sql.migrate import alembic_config, upgrade
from hubwatch.tracker.partial import KIND as PARTIAL
from hubwatch.tracker.partial import partial_of
from hubwatch.tracker.poll import PollResult, PollStopped, Tracker
from hubwatch.tracker.record import PollRun
from hubwatch.tracker.revisions import aborts
from tests.support.asgi import InProcess
from tests.support.gitrepo import CommitSpec, add_commits, git, make_repo
from tests.support.receiver import WebhookReceiver

REPO = "org/m"
GOOD = json.dumps({"model_type": "llama", "eos_token_id": 2}).encode()
BAD = json.dumps({"model_type": "llama", "eos_token_id": [2, 7]}).encode()
HISTORY = [
    CommitSpec({"config.json": GOOD}, message="good"),
    CommitSpec({"config.json": BAD}, message="bad"),
    # the kind of later commit a stuck repo would never report
    CommitSpec(
        {"config.json": GOOD, "modeling_evil.py": b"import os\nos.system('x')\n"},
        message="good again, with custom code",
    ),
]
LOOPBACK = UrlPolicy(allow_http=True, allowed_networks=parse_networks(["127.0.0.0/8"]))


class FaultySource(GitSource):
    """A GitSource that fails where a test says: on one commit's reads, or on every status."""

    def __init__(self, mirrors: Path) -> None:
        super().__init__(mirrors, timeout_s=60)
        self.list_fails: dict[str, Exception] = {}
        self.read_fails: dict[str, Exception] = {}
        self.down: Exception | None = None

    def status(self, repo: RepoRef) -> RepoStatus:
        if self.down is not None:
            raise self.down
        return super().status(repo)

    def list_files(self, repo: RepoRef, sha: CommitSha) -> list[FileEntry]:
        if sha in self.list_fails:
            raise self.list_fails[sha]
        return super().list_files(repo, sha)

    def read_file(self, repo: RepoRef, sha: CommitSha, path: str, max_bytes: int) -> bytes:
        if sha in self.read_fails:
            raise self.read_fails[sha]
        return super().read_file(repo, sha, path, max_bytes)


def tracker(store: SqlStore, source: GitSource, **kwargs: object) -> Tracker:
    retry = RetryPolicy(attempts=0, sleep=lambda _s: None)
    return Tracker(store, {SourceKind.GIT: source}, retry=retry, **kwargs)  # type: ignore[arg-type]


def kinds(store: SqlStore, sha: str) -> list[str]:
    return [c.kind for c in store.revision_changes(REPO, CommitSha(sha)).changes]


def partial_change(store: SqlStore, sha: str) -> Change:
    [change] = [
        c for c in store.revision_changes(REPO, CommitSha(sha)).changes if c.kind == PARTIAL
    ]
    return change


def assert_good_bad_good(store: SqlStore, result: PollResult, shas: list[str]) -> Change:
    """All three stored, the poll fine, the third's changes reported; the bad one's partial."""
    assert result.error is None, result.error
    assert result.new == shas and result.partial == [shas[1]]
    assert [r.sha for r in store.history(REPO)] == shas
    assert PARTIAL not in kinds(store, shas[0]) + kinds(store, shas[2])
    assert "code.custom_added" in kinds(store, shas[2])
    assert store.get_repo(REPO).state is RepoState.ACTIVE
    change = partial_change(store, shas[1])
    assert change.severity is Severity.INFO and "\n" not in change.summary
    return change


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "up"
    return path, make_repo(path, HISTORY)


@pytest.fixture
def source(tmp_path: Path) -> FaultySource:
    return FaultySource(tmp_path / "mirrors")


def track(store: SqlStore, source: GitSource, upstream: Path, **kwargs: object) -> PollResult:
    return tracker(store, source, **kwargs).track(RepoRef(REPO, SourceKind.GIT, str(upstream)))


# -- one bad revision ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        ValueError("invalid literal for int() with base 10: b'BAD'"),  # a parser bug
        RevisionNotFound("org/m: revision not found"),  # a tree the mirror lacks
        UnexpectedResponse("malformed tree listing"),
    ],
    ids=["bug", "missing-tree", "malformed"],
)
def test_a_file_list_that_fails_stores_the_commit_without_files(
    store: SqlStore, upstream: tuple[Path, list[str]], source: FaultySource, error: Exception
) -> None:
    path, shas = upstream
    source.list_fails[shas[1]] = error
    with capture_logs() as logs:
        result = track(store, source, path)
    change = assert_good_bad_good(store, result, shas)
    assert change.summary == f"file list failed: {type(error).__name__}: {error}"
    assert store.files(REPO, CommitSha(shas[1])) == []
    # not diffed: without its file list every file would seem removed
    assert kinds(store, shas[1]) == [PARTIAL]
    [logged] = [e for e in logs if e["event"] == "revision_step_failed"]
    assert logged["step"] == "file list" and logged["log_level"] == "error"
    assert "exc_info" not in logged  # one line: no traceback outside DEBUG


def test_a_read_that_crashes_stores_the_file_list(
    store: SqlStore, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    path, shas = upstream
    source.read_fails[shas[1]] = KeyError("surprise")
    change = assert_good_bad_good(store, track(store, source, path), shas)
    assert change.summary == "snapshot failed: KeyError: 'surprise'"
    [stored] = store.files(REPO, CommitSha(shas[1]))
    assert stored.path == "config.json" and stored.content_status is None


def test_a_file_that_cannot_be_read_is_named_with_its_reason(
    store: SqlStore, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    path, shas = upstream
    source.read_fails[shas[1]] = EntryNotFound("missing object 1a2b3c (damaged repository)")
    change = assert_good_bad_good(store, track(store, source, path), shas)
    assert change.summary == (
        "1 file could not be read: config.json (error: missing object 1a2b3c (damaged repository))"
    )
    assert change.after["files"] == [
        {
            "path": "config.json",
            "part": "content",
            "status": "error",
            "reason": "missing object 1a2b3c (damaged repository)",
        }
    ]


def test_a_crashing_differ_is_recorded_and_the_poll_goes_on(
    store: SqlStore, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    path, shas = upstream

    def explodes(old: RevisionView, new: RevisionView) -> list[Change]:
        if new.sha == shas[1]:
            raise RecursionError("maximum recursion depth exceeded")
        return []

    result = track(store, source, path, differs={**DIFFERS, "explodes": explodes})
    assert result.error is None and result.new == shas
    assert "diff.failed" in kinds(store, shas[1])
    assert "code.custom_added" in kinds(store, shas[2])


def test_a_crashing_hook_is_recorded_and_later_hooks_still_run(
    store: SqlStore, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    path, shas = upstream
    seen: list[str] = []

    def crashes(stored: RevisionStored) -> list[Change]:
        if stored.commit.sha == shas[1]:
            raise MemoryError("no more")
        return []

    def sees(stored: RevisionStored) -> list[Change]:
        seen.append(stored.commit.sha)
        return []

    result = track(store, source, path, after_revision=[crashes, sees])
    change = assert_good_bad_good(store, result, shas)
    assert seen == shas
    assert change.summary.startswith("after_revision hook ")
    assert change.summary.endswith("crashes failed: MemoryError: no more")


def test_a_revision_the_store_refuses_is_stored_with_its_file_list(
    db_url: str, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    path, shas = upstream

    class Refusing(SqlStore):
        """Refuses what was read from the bad revision, as a database refuses a bad value."""

        def add_revision(self, repo_id: str, snapshot: Snapshot) -> bool:
            if snapshot.commit.sha == shas[1] and snapshot.contents:
                raise ValueError("A string literal cannot contain NUL (0x00) characters.")
            return super().add_revision(repo_id, snapshot)

    store = Refusing(db_url)
    store.start()
    try:
        change = assert_good_bad_good(store, track(store, source, path), shas)
        assert change.summary.startswith("store failed: ValueError: A string literal cannot")
        assert [f.path for f in store.files(REPO, CommitSha(shas[1]))] == ["config.json"]
    finally:
        store.close()


def test_a_bug_outside_any_revision_fails_the_poll_in_one_line(
    store: SqlStore, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    path, _ = upstream
    track(store, source, path)
    add_commits(path, [CommitSpec({"README.md": b"x"})])
    source.down = ZeroDivisionError("division by zero")
    result = tracker(store, source).poll(REPO)
    assert result.error == "internal error while polling: ZeroDivisionError: division by zero"
    assert isinstance(result.failure, HubwatchError)
    repo = store.get_repo(REPO)
    assert (repo.last_error, repo.failures) == (result.error, 1)


def test_a_bug_before_tracking_is_one_error_and_stores_nothing(
    store: SqlStore, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    source.down = ZeroDivisionError("division by zero")
    with pytest.raises(HubwatchError, match="^internal error while reading org/m: ZeroDivision"):
        track(store, source, upstream[0])
    assert store.list_repos() == []


def test_a_transient_error_retries_the_revision_until_the_repo_is_degraded(
    store: SqlStore, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    path, shas = upstream
    source.list_fails[shas[1]] = SourceUnavailable("git ls-tree timed out after 600s")
    first = track(store, source, path, degraded_after=2)
    assert first.new == shas[:1] and first.error
    second = tracker(store, source, degraded_after=2).poll(REPO)
    assert second.new == [] and store.get_repo(REPO).state is RepoState.DEGRADED
    # Two polls failed on it: now it is recorded against the revision, not retried for ever.
    third = tracker(store, source, degraded_after=2).poll(REPO)
    assert third.error is None and third.new == shas[1:]
    assert partial_change(store, shas[1]).summary.startswith("file list failed: SourceUnavail")
    assert store.get_repo(REPO).state is RepoState.ACTIVE


# -- a damaged repository through the CLI ------------------------------------------------------


def drop_blob(repo: Path, blob: str) -> None:
    """Delete one object from a repo built by make_repo (fast-import packs them: unpack first)."""
    for pack in (repo / ".git" / "objects" / "pack").glob("*.pack"):
        data = pack.read_bytes()
        pack.unlink()
        pack.with_suffix(".idx").unlink()
        subprocess.run(["git", "-C", str(repo), "unpack-objects", "-q"], input=data, check=True)
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()


def test_track_with_a_missing_object_exits_0_without_a_traceback(
    upstream: tuple[Path, list[str]], tmp_path: Path
) -> None:
    path, shas = upstream
    drop_blob(path, git(path, "rev-parse", f"{shas[1]}:config.json"))
    env = {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_ADVISORY_SERVICE": "off"}
    result = CliRunner().invoke(
        app, ["track", REPO, "--source", "git", "--url", str(path)], env=env
    )
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert f"{REPO}: 3 revisions stored" in result.stderr
    changes = CliRunner().invoke(app, ["changes", REPO, "--json"], env=env)
    recorded = json.loads(changes.stdout)["revisions"]
    by_sha = {r["sha"]: [c["kind"] for c in r["changes"]] for r in recorded}
    assert PARTIAL in by_sha[shas[1]] and "code.custom_added" in by_sha[shas[2]]


# -- degraded and recovered ---------------------------------------------------------------------


def delivered(receiver: WebhookReceiver, secret: str, store: SqlStore) -> Callable[[], list[Any]]:
    """A call that enqueues the repo events recorded since, delivers them, returns every body."""
    notifier = WebhookNotifier(store)
    notifier.collect_events()  # the first call starts from now

    def deliver() -> list[Any]:
        notifier.collect_events()
        with httpx2.Client(timeout=5) as client:
            WebhookDeliverer(store, client, urls=LOOPBACK).deliver_due()
        hook = Webhook(secret)
        return [hook.verify(r.body, r.headers) for r in receiver.accepted()]

    return deliver


def test_a_repo_failing_three_polls_is_degraded_everywhere_then_recovers(
    store: SqlStore, db_url: str, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    path, _ = upstream
    track(store, source, path)
    api = InProcess(create_app(store, Settings()))
    with WebhookReceiver() as receiver:
        secret = new_secret()
        store.add_subscription(
            receiver.url, secret, repo_id=None, org=None, kinds=[], min_severity=None
        )
        deliver = delivered(receiver, secret, store)
        source.down = SourceUnavailable("cannot reach the Hub: connection refused")
        for n in (1, 2):
            tracker(store, source).poll(REPO)
            assert (store.get_repo(REPO).state, store.get_repo(REPO).failures) == (
                RepoState.ACTIVE,
                n,
            )
        result = tracker(store, source).poll(REPO)
        assert [e.kind for e in result.events] == [EventKind.POLL_FAILED, EventKind.REPO_DEGRADED]
        assert "3 polls in a row failed" in result.events[-1].detail
        assert "connection refused" in result.events[-1].detail
        [sent] = deliver()
        assert sent["type"] == "repo.event" and sent["data"]["event"] == "repo_degraded"
        assert [(c["kind"], c["severity"]) for c in sent["data"]["changes"]] == [
            ("repo.degraded", "behavior")
        ]

        repo = api.get(f"/api/v1/repos/{REPO}").json()
        assert (repo["state"], repo["failures"]) == ("degraded", 3)
        badge = api.get(f"/api/v1/badges/{REPO}/status").json()
        assert (badge["message"], badge["color"]) == ("degraded", "orange")
        assert "Degraded: 3 polls in a row failed" in api.get(f"/repos/{REPO}").text
        cli_env = {"HUBWATCH_DATABASE_URL": db_url}
        assert "degraded" in CliRunner().invoke(app, ["list"], env=cli_env).stdout
        [listed] = json.loads(CliRunner().invoke(app, ["list", "--json"], env=cli_env).stdout)
        assert (listed["state"], listed["failures"]) == ("degraded", 3)
        tracker(store, source).poll(REPO)  # polls go on; no second repo_degraded
        assert store.get_repo(REPO).state is RepoState.DEGRADED

        source.down = None
        result = tracker(store, source).poll(REPO)
        assert result.error is None and [e.kind for e in result.events] == [
            EventKind.REPO_RECOVERED
        ]
        repo_after = store.get_repo(REPO)
        assert (repo_after.state, repo_after.failures, repo_after.last_error) == (
            RepoState.ACTIVE,
            0,
            None,
        )
        assert [s["data"]["event"] for s in deliver()] == ["repo_degraded", "repo_recovered"]
    assert api.get(f"/api/v1/badges/{REPO}/status").json()["color"] == "brightgreen"


def test_a_gated_repo_is_not_degraded(
    store: SqlStore, upstream: tuple[Path, list[str]], source: FaultySource
) -> None:
    path, _ = upstream
    track(store, source, path)
    store.update_repo(REPO, state=RepoState.GATED)
    source.down = SourceUnavailable("timeout")
    for _ in range(4):
        tracker(store, source).poll(REPO)
    assert store.get_repo(REPO).state is RepoState.GATED
    assert store.get_repo(REPO).failures == 4


# -- the store and its migration ----------------------------------------------------------------


def test_migration_0007_counts_a_failed_last_poll_and_goes_back(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        upgrade(engine, "0006")
        with engine.begin() as conn:
            for name, error in (("org/ok", None), ("org/failing", "timeout")):
                conn.execute(
                    text(
                        "INSERT INTO repo (repo_id, source, branch, state, added_at, last_error)"
                        " VALUES (:name, 'hub', 'main', 'active', CURRENT_TIMESTAMP, :error)"
                    ),
                    {"name": name, "error": error},
                )
        upgrade(engine, "head")
        with engine.begin() as conn:
            rows = conn.execute(text("SELECT repo_id, failures FROM repo ORDER BY repo_id"))
            assert dict(rows.all()) == {"org/failing": 1, "org/ok": 0}
            conn.execute(text("UPDATE repo SET state = 'degraded'"))
        command.downgrade(alembic_config(engine), "0006")
        with engine.begin() as conn:
            states = conn.execute(text("SELECT DISTINCT state FROM repo")).scalars().all()
            assert states == ["active"]
    finally:
        engine.dispose()


def test_failures_count_up_and_a_cleared_error_resets_them(store: SqlStore) -> None:
    store.add_repo(RepoRef(REPO))
    at = datetime(2026, 1, 1, tzinfo=UTC)
    assert [store.record_failure(REPO, f"e{n}", at) for n in range(3)] == [1, 2, 3]
    repo = store.get_repo(REPO)
    assert (repo.failures, repo.last_error, repo.last_polled_at) == (3, "e2", at)
    store.update_repo(REPO, clear_error=True)
    assert (store.get_repo(REPO).failures, store.get_repo(REPO).last_error) == (0, None)


# -- what makes a revision partial --------------------------------------------------------------


def _snapshot(reads: dict[str, ReadResult], problems: tuple[str, ...] = ()) -> Snapshot:
    date = datetime(2026, 1, 1, tzinfo=UTC)
    commit = CommitInfo(CommitSha("a" * 40), (), date, (), "t", "", problems=problems)
    files = tuple(FileEntry(path, 1, f"blob-{path}") for path in reads)
    return Snapshot(commit, files, reads)


def test_over_cap_and_lfs_reads_are_by_design_not_partial() -> None:
    snapshot = _snapshot(
        {
            "tokenizer.json": ReadResult(ReadStatus.OVER_CAP, error="over the cap of 32 MiB"),
            "model.json": ReadResult(ReadStatus.UNAVAILABLE, error="stored in git LFS"),
            "config.json": ReadResult(ReadStatus.STORED, data=b"{}"),
        }
    )
    assert partial_of(snapshot).change() is None


def test_invalid_error_and_missing_reads_and_commit_problems_are_partial() -> None:
    snapshot = _snapshot(
        {
            "config.json": ReadResult(ReadStatus.INVALID, error="nesting deeper than 64 levels"),
            "a.json": ReadResult(ReadStatus.ERROR, error="a.json: 500 Server Error"),
            "x.json": ReadResult(ReadStatus.UNAVAILABLE, error="missing object 1a2b3c…"),
            "y.json": ReadResult(ReadStatus.INVALID, error="invalid\nfile name '..'"),
        },
        problems=("date 10000-01-01 is outside 0001–9999; stored as 9999-12-31",),
    )
    change = partial_of(snapshot).change()
    assert change is not None
    assert change.summary == (
        "4 files could not be read: config.json (invalid: nesting deeper than 64 levels), "
        "a.json (error: 500 Server Error), x.json (unavailable: missing object 1a2b3c…) and 1 "
        "more; commit: date 10000-01-01 is outside 0001–9999; stored as 9999-12-31"
    )
    assert "y.json (invalid: invalid file name '..')" in (change.detail or "")
    assert len(change.after["files"]) == 4


def test_a_file_failing_as_it_did_in_the_base_is_not_repeated() -> None:
    snapshot = _snapshot({"config.json": ReadResult(ReadStatus.INVALID, error="not JSON")})
    same = StoredFile(
        "config.json", 1, "blob-config.json", None, None, ReadStatus.INVALID, "not JSON", None,
        None, None,
    )  # fmt: skip
    assert partial_of(snapshot, [same]).change() is None
    other_blob = StoredFile(
        "config.json", 1, "older-blob", None, None, ReadStatus.INVALID, "not JSON", None, None,
        None,
    )  # fmt: skip
    assert partial_of(snapshot, [other_blob]).change() is not None


# -- what stops a poll --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "failures", "stops"),
    [
        (ValueError("a bug"), 0, False),
        (UnexpectedResponse("malformed"), 0, False),
        (RevisionNotFound("no tree"), 0, False),
        (AuthError("401"), 0, True),
        (RepoGated("gated"), 5, True),
        (RepoNotFound("gone"), 5, True),
        (PollStopped(), 5, True),
        (SourceUnavailable("timeout"), 0, True),
        (SourceUnavailable("timeout"), 2, True),
        (SourceUnavailable("timeout"), 3, False),  # degraded: the revision is no longer retried
        (StoreError("database error"), 0, True),
        (StoreError("database error"), 3, False),
    ],
)
def test_what_stops_a_poll_and_what_is_recorded_with_the_revision(
    error: Exception, failures: int, stops: bool
) -> None:
    tracked = TrackedRepo(
        RepoRef(REPO), RepoState.ACTIVE, None, 0, datetime(2026, 1, 1, tzinfo=UTC), None, None,
        failures=failures,
    )  # fmt: skip
    run = PollRun(None, None, None, tracked, PollResult(REPO), degraded_after=3)  # type: ignore[arg-type]
    assert aborts(run, error) is stops

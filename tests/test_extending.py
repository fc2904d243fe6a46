"""Each extension point takes one new module: a toy source, advisory service and store backend.

The toy differ is in tests/test_diff_plugins.py (through the `hubwatch.differs` entry point) and
the toy estimator family in tests/estimator/test_registry.py; docs/architecture.md names all five.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import ClassVar

import pytest

from hubwatch.advisories.attach import AdvisoryAttacher
from hubwatch.advisories.service import AdvisoryService
from hubwatch.errors import EntryNotFound, RevisionNotFound
from hubwatch.models import (
    AdvisoryId,
    AdvisoryMatch,
    CommitInfo,
    CommitSha,
    ContentSha,
    Dependency,
    FileEntry,
    MatchStatus,
    ReadResult,
    ReadStatus,
    RepoRef,
    RepoStatus,
    SourceKind,
)
from hubwatch.sources.base import RevisionSource
from hubwatch.store.known import KnownContent
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.snapshot import Limits, take_snapshot

CONFIG_V1 = json.dumps({"model_type": "llama", "eos_token_id": 2}).encode()
CONFIG_V2 = json.dumps(
    {"model_type": "llama", "eos_token_id": [2, 7], "transformers_version": "4.36.0"}
).encode()
REQUIRES = b"transformers==4.36.0\n"  # what the revision requires (its saved-with is context)


class DictSource(RevisionSource):
    """A toy source: a history held in a dict, newest commit last."""

    def __init__(self, commits: list[dict[str, bytes]]) -> None:
        self._trees = {_sha(str(i)): tree for i, tree in enumerate(commits)}
        self._order = list(self._trees)

    def list_commits(self, repo: RepoRef) -> list[CommitInfo]:
        infos = []
        for i, sha in enumerate(self._order):
            parents = (self._order[i - 1],) if i else ()
            date = datetime(2026, 1, 1 + i, tzinfo=UTC)
            infos.append(CommitInfo(sha, parents, date, ("toy",), f"commit {i}", f"commit {i}"))
        return infos[::-1]

    def status(self, repo: RepoRef) -> RepoStatus:
        return RepoStatus(head=self._order[-1], repo_id=repo.repo_id)

    def resolve(self, repo: RepoRef, rev: str) -> CommitSha:
        found = [sha for sha in self._order if sha.startswith(rev)]
        if len(found) != 1:
            raise RevisionNotFound(f"no revision {rev}")
        return found[0]

    def list_files(self, repo: RepoRef, sha: CommitSha) -> list[FileEntry]:
        tree = self._trees[sha]
        return [FileEntry(path, len(data), _sha(data.decode())) for path, data in tree.items()]

    def read_file(self, repo: RepoRef, sha: CommitSha, path: str, max_bytes: int) -> bytes:
        try:
            return self._trees[sha][path]
        except KeyError:
            raise EntryNotFound(f"{path} is not in {sha}") from None

    def read_range(
        self, repo: RepoRef, sha: CommitSha, path: str, start: int, length: int
    ) -> bytes:
        return self.read_file(repo, sha, path, start + length)[start : start + length]


class TransformersService(AdvisoryService):
    """A toy advisory service: every pinned transformers is affected by one advisory."""

    name: ClassVar[str] = "toy"

    def query(self, dependency: Dependency) -> list[AdvisoryMatch]:
        if dependency.name != "transformers":
            return []
        return [
            AdvisoryMatch(
                advisory_id=AdvisoryId("TOY-2026-1"),
                aliases=(),
                summary="a toy advisory",
                severity=(),
                fixed=("99.0",),
                package=dependency.name,
                version=dependency.version,
                status=MatchStatus.AFFECTED,
                reason=dependency.reason,
            )
        ]


class MemoryKnownContent(KnownContent):
    """A toy store backend for one narrow interface: reads remembered in a dict."""

    def __init__(self) -> None:
        self.blobs: dict[ContentSha, bytes] = {}
        self.reads: dict[tuple[str, str], ReadResult] = {}

    def content(self, path: str, blob_id: str) -> ReadResult | None:
        return self.reads.get((path, blob_id))

    def header(self, object_id: str) -> ReadResult | None:
        return None

    def blob(self, sha256: ContentSha) -> bytes:
        return self.blobs[sha256]


def _sha(text: str) -> CommitSha:
    return CommitSha(hashlib.sha1(text.encode()).hexdigest())


@pytest.fixture
def toy_store(sqlite_url: str) -> Iterator[SqlStore]:
    store = SqlStore(sqlite_url)
    store.start()
    yield store
    store.close()


def test_a_toy_source_feeds_the_tracker(toy_store: SqlStore) -> None:
    source = DictSource([{"config.json": CONFIG_V1}, {"config.json": CONFIG_V2}])
    tracker = Tracker(toy_store, {SourceKind.HUB: source})
    result = tracker.track(RepoRef("toy/model"))
    assert result.failure is None
    history = toy_store.history("toy/model")
    assert [r.title for r in history] == ["commit 0", "commit 1"]
    kinds = {c.kind for c in toy_store.revision_changes("toy/model", history[1].sha).changes}
    assert "config.special_token_ids" in kinds  # eos 2 -> [2, 7], found by the built-in differ


def test_a_toy_advisory_service_attaches_its_matches(toy_store: SqlStore) -> None:
    source = DictSource(
        [{"config.json": CONFIG_V1}, {"config.json": CONFIG_V2, "requirements.txt": REQUIRES}]
    )
    Tracker(toy_store, {SourceKind.HUB: source}).track(RepoRef("toy/model"))
    newest = toy_store.history("toy/model")[-1].sha
    attached = AdvisoryAttacher(toy_store, TransformersService()).attach("toy/model", newest)
    assert [event.match.advisory_id for event in attached] == ["TOY-2026-1"]
    report = toy_store.advisory_report("toy/model", newest)
    assert report.service == "toy"
    assert [m.version for m in report.matches] == ["4.36.0"]


def test_a_toy_store_backend_serves_its_one_interface() -> None:
    source = DictSource([{"config.json": CONFIG_V2}])
    commit = source.list_commits(RepoRef("toy/model"))[0]
    known = MemoryKnownContent()
    snapshot = take_snapshot(source, RepoRef("toy/model"), commit, known, Limits())
    assert snapshot.contents["config.json"].status is ReadStatus.STORED
    assert snapshot.contents["config.json"].data == CONFIG_V2

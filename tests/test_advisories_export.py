"""Our changes exported as OSV records: valid against the main-branch OSV schema, and every GIT
range evaluated against the real repository as an OSV consumer would (issue 19)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
from packaging.version import Version

from hubwatch.advisories.attach import StoreChangeFeed
from hubwatch.advisories.publish import SCHEMA_VERSION, FeedEntry, publish
from hubwatch.models import Change, CommitSha, RepoRef, Severity, SourceKind
from hubwatch.models.timestamps import rfc3339
from hubwatch.sources.git import GitSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.conftest import DATA
from tests.support.gitrepo import CommitSpec, git, make_repo

OSV = DATA / "osv"
GEN = "generation_config.json"


def validator(name: str = "osv-schema.json") -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((OSV / name).read_text()))


def gen(eos: object) -> bytes:
    return json.dumps({"eos_token_id": eos}).encode()


def history(path: Path) -> list[str]:
    """A root commit adding two pickle files; one deleted (nothing fixed), then the other."""
    return make_repo(
        path,
        [
            CommitSpec(
                {"pytorch_model.bin": b"\x80\x04a", "extra.bin": b"\x80\x04b", GEN: gen(2)},
                message="upload",
            ),
            CommitSpec({GEN: gen([2, 7])}, message="stop tokens"),
            CommitSpec({"extra.bin": None}, message="drop one pickle file"),
            CommitSpec({"pytorch_model.bin": None}, message="drop the last pickle file"),
        ],
    )


def track(store: SqlStore, tmp_path: Path, upstream: Path) -> None:
    Tracker(
        store,
        {SourceKind.GIT: GitSource(tmp_path / "mirrors", timeout_s=60)},
        retry=RetryPolicy(attempts=1, sleep=lambda _s: None),
    ).track(RepoRef("org/model", SourceKind.GIT, str(upstream)))


def affected_commits(repo: Path, events: list[dict[str, str]]) -> set[str]:
    """The commits a GIT range affects, as the OSV spec evaluates it: those with an
    `introduced` commit among their ancestors (every commit for "0") and no `fixed` one. Each
    commit a range names must exist, a fix must come after what it fixes, and a root commit
    must be written "0"."""
    everything = git(repo, "rev-list", "--all").split()
    roots = set(git(repo, "rev-list", "--max-parents=0", "--all").split())
    starts = [e["introduced"] for e in events if "introduced" in e]
    fixes = [e["fixed"] for e in events if "fixed" in e]
    assert len(starts) + len(fixes) == len(events), events
    for commit in [*starts, *fixes]:
        assert commit == "0" or commit in everything, f"{commit} is not a commit of {repo}"
    assert not roots & set(starts), "a range from a root commit is introduced at 0"
    for fix in fixes:
        for start in starts:
            if start != "0":
                git(repo, "merge-base", "--is-ancestor", start, fix)  # raises if not ordered
    affected = set()
    for commit in everything:
        ancestors = set(git(repo, "rev-list", commit).split())
        if any(s == "0" or s in ancestors for s in starts) and not ancestors & set(fixes):
            affected.add(commit)
    return affected


def check_consumer(records: list[dict[str, Any]], repo: Path) -> None:
    for record in records:
        for affected in record.get("affected", []):
            for rng in affected["ranges"]:
                assert rng["type"] == "GIT" and rng["repo"] == str(repo)
                assert affected_commits(repo, rng["events"]), record["id"]


def test_exported_records_pass_the_schema_and_the_range_consumer_check(
    store: SqlStore, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    shas = history(upstream)
    track(store, tmp_path, upstream)
    records = publish(StoreChangeFeed(store, "https://hub.example").changes(), store)
    assert records
    schema = validator()
    for record in records:
        assert [e.message for e in schema.iter_errors(record)] == [], record
    check_consumer(records, upstream)
    (pickle,) = [r for r in records if r["database_specific"]["kind"] == "weights.pickle_added"]
    # the root commit is "0"; deleting one of two pickle files fixes nothing, the last does
    assert pickle["affected"][0]["ranges"][0]["events"] == [
        {"introduced": "0"},
        {"fixed": shas[3]},
    ]
    affected = affected_commits(upstream, pickle["affected"][0]["ranges"][0]["events"])
    assert affected == set(shas[:3])


def test_schema_version_is_the_schema_the_records_need() -> None:
    record = {
        "schema_version": SCHEMA_VERSION,
        "id": "x_HUBWATCH-2025-0123456789abcdef",
        "modified": "2025-01-01T00:00:00Z",
    }
    assert not list(validator().iter_errors(record))
    # the 1.7.5 release refuses the x_ prefix: claiming 1.7.5 would be untrue
    assert list(validator("osv-schema-v1.7.5.json").iter_errors(record))
    assert Version(SCHEMA_VERSION) > Version("1.7.5")


def sha(n: int) -> CommitSha:
    return CommitSha(f"{n:040x}")


def entry(n: int, change: Change, root: bool = False) -> FeedEntry:
    date = datetime(2025, 1, n, 12, tzinfo=UTC)
    return FeedEntry("org/model", "https://hub.example/org/model", sha(n), date, change, root)


STOP = Change("generation.stop_tokens", Severity.BREAKING, "eos 2 -> [2, 7]", GEN, 2, [2, 7])
BACK = Change("generation.stop_tokens", Severity.BREAKING, "eos [2, 7] -> 2", GEN, [2, 7], 2)
TEMPLATE = Change("chat_template.rendered", Severity.BEHAVIOR, "renders", "tokenizer_config.json")
# later than any `published` (the real time the test first publishes)
T1 = datetime.now(UTC) + timedelta(days=1)
T2 = T1 + timedelta(days=1)
T3 = T2 + timedelta(days=1)


def by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in records}


def test_modified_moves_only_when_the_content_does(store: SqlStore) -> None:
    first = by_id(publish([entry(1, STOP), entry(2, TEMPLATE)], store, now=T1))
    again = by_id(publish([entry(1, STOP), entry(2, TEMPLATE)], store, now=T2))
    assert again == first  # nothing changed: nothing moves
    reverted = by_id(publish([entry(1, STOP), entry(2, TEMPLATE), entry(3, BACK)], store, now=T2))
    stop = next(r for r in reverted.values() if r["summary"].endswith("eos 2 -> [2, 7]"))
    assert stop["modified"] == rfc3339(T2)  # it gained its fixed event
    assert stop["published"] == first[stop["id"]]["published"]
    template = next(r for r in reverted.values() if r["summary"].endswith("renders"))
    assert template["modified"] == first[template["id"]]["modified"]


def test_a_vanished_change_is_published_withdrawn(store: SqlStore) -> None:
    first = by_id(publish([entry(1, STOP), entry(2, TEMPLATE)], store, now=T1))
    later = by_id(publish([entry(1, STOP)], store, now=T2))  # history rewritten upstream
    assert set(later) == set(first)
    gone = next(r for r in later.values() if "withdrawn" in r)
    assert gone["summary"].endswith("renders")
    assert gone["withdrawn"] == gone["modified"] == rfc3339(T2)
    assert gone["affected"] == first[gone["id"]]["affected"]
    assert not list(validator().iter_errors(gone))
    # withdrawn once: a later export keeps the date
    assert by_id(publish([entry(1, STOP)], store, now=T3)) == later


def test_ids_are_the_same_in_a_fresh_database(tmp_path: Path) -> None:
    ids = []
    for name in ("one", "two"):
        store = SqlStore(f"sqlite:///{tmp_path / name}.db")
        store.start()
        try:
            feed = [entry(1, STOP), entry(2, TEMPLATE)]
            if name == "two":  # met in another order, with another change first
                other = Change("card.license", Severity.BREAKING, "mit -> other", "README.md")
                feed = [entry(3, other), *reversed(feed)]
            ids.append({r["summary"]: r["id"] for r in publish(feed, store)})
        finally:
            store.close()
    assert all(ids[1][summary] == osv_id for summary, osv_id in ids[0].items())


def test_a_root_range_is_introduced_at_zero(store: SqlStore) -> None:
    (record,) = publish([entry(1, STOP, root=True)], store)
    assert record["affected"][0]["ranges"][0]["events"] == [{"introduced": "0"}]

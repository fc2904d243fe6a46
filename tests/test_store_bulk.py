"""`add_repos`: many repos registered at once, never polled, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from datetime import UTC, datetime

from hubwatch.models import RepoRef, SourceKind
from hubwatch.store.sql import SqlStore
from hubwatch.store.sql.repos import BATCH


def refs(count: int, org: str = "org") -> list[RepoRef]:
    return [RepoRef(f"{org}/model-{n}") for n in range(count)]


def test_add_repos_counts_the_new_ones_and_is_idempotent(store: SqlStore) -> None:
    assert store.add_repos(refs(3)) == 3
    assert store.add_repos(refs(5)) == 2
    assert store.add_repos(refs(5)) == 0
    assert [repo.ref.repo_id for repo in store.list_repos()] == [f"org/model-{n}" for n in range(5)]


def test_add_repos_keeps_the_settings_of_a_repo_already_tracked(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/model-1", branch="dev"))

    assert store.add_repos(refs(2)) == 1
    assert store.get_repo("org/model-1").ref.branch == "dev"


def test_a_repo_named_twice_in_one_call_is_added_once(store: SqlStore) -> None:
    twice = [RepoRef("org/a"), RepoRef("org/b"), RepoRef("org/a", branch="dev")]

    assert store.add_repos(twice) == 2
    assert store.get_repo("org/a").ref.branch == "main"  # the first one named


def test_add_repos_over_several_batches_adds_every_one(store: SqlStore) -> None:
    store.add_repos(refs(10, org="early"))
    many = refs(10, org="early") + refs(BATCH + 7)

    assert store.add_repos(iter(many)) == BATCH + 7  # any iterable, consumed once
    assert len(store.list_repos()) == BATCH + 17


def test_bulk_added_repos_are_unpolled_due_and_not_woken(store: SqlStore) -> None:
    before = datetime.now(UTC)
    store.add_repos([*refs(2), RepoRef("git/m", SourceKind.GIT, "/srv/m.git", "HEAD")])

    entries = {entry.ref.repo_id: entry for entry in store.schedule_entries()}
    assert entries["git/m"].ref == RepoRef("git/m", SourceKind.GIT, "/srv/m.git", "HEAD")
    for entry in entries.values():
        assert (entry.head, entry.last_polled_at, entry.woken) == (None, None, False)
        assert entry.due_at is not None and entry.due_at >= before.replace(microsecond=0)
    assert store.get_repo("org/model-0").revisions == 0
    # not woken: nothing to claim until discovery says they need their first poll
    assert store.claim_repos("w1", datetime.now(UTC), 60.0, limit=10) == []


def test_a_repo_added_in_bulk_can_be_woken_claimed_and_removed(store: SqlStore) -> None:
    store.add_repos(refs(2))
    now = datetime.now(UTC)

    assert store.wake(["org/model-1"], now) == 1
    assert [claim.repo_id for claim in store.claim_repos("w1", now, 60.0)] == ["org/model-1"]
    store.remove_repo("org/model-0")
    assert [repo.ref.repo_id for repo in store.list_repos()] == ["org/model-1"]


def test_add_repos_of_nothing_adds_nothing(store: SqlStore) -> None:
    assert store.add_repos([]) == 0
    assert store.list_repos() == []

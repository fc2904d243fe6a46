"""The ScheduleStore contract on SQLite and PostgreSQL: wakes, leases, job leases, cursors."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hubwatch.errors import WorkerConflict, WorkerIdTaken
from hubwatch.models import CommitSha, RepoRef, RepoStatus
from hubwatch.store.sql import SqlStore
from hubwatch.worker.work import worker_slot

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _track(store: SqlStore, *ids: str) -> None:
    for repo_id in ids:
        store.add_repo(RepoRef(repo_id))


def test_an_unscheduled_repo_is_due_and_not_woken(store: SqlStore) -> None:
    _track(store, "org/a")
    [entry] = store.schedule_entries()
    assert entry.ref == RepoRef("org/a")
    assert (entry.due_at, entry.woken, entry.listed, entry.failed) == (None, False, None, False)


def test_woken_repos_are_claimed_oldest_wake_first_with_their_hints(store: SqlStore) -> None:
    _track(store, "org/a", "org/b", "org/c")
    hint = RepoStatus(CommitSha("a" * 40), "org/b", gated=True)
    store.wake(["org/b"], T0, {"org/b": hint})
    store.wake(["org/a"], T0 + timedelta(seconds=1))
    claims = store.claim_repos("w1", T0 + timedelta(seconds=2), lease_s=60, limit=5)
    assert [c.repo_id for c in claims] == ["org/b", "org/a"]
    assert claims[0].hint == hint and claims[1].hint is None


def test_a_leased_repo_is_not_claimed_again_until_its_lease_expires(store: SqlStore) -> None:
    _track(store, "org/a")
    store.wake(["org/a"], T0)
    assert [c.repo_id for c in store.claim_repos("w1", T0, lease_s=60)] == ["org/a"]
    assert store.claim_repos("w2", T0 + timedelta(seconds=30), lease_s=60) == []
    # w1 died: after the lease runs out another worker takes the repo over
    assert [c.repo_id for c in store.claim_repos("w2", T0 + timedelta(seconds=61), 60)] == ["org/a"]
    assert not store.renew_lease("org/a", "w1", T0 + timedelta(seconds=200))
    assert store.renew_lease("org/a", "w2", T0 + timedelta(seconds=200))


def test_release_after_a_poll_clears_the_wake_and_sets_the_next_due(store: SqlStore) -> None:
    _track(store, "org/a")
    store.wake(["org/a"], T0)
    store.claim_repos("w1", T0 + timedelta(seconds=1), lease_s=60)
    store.release_repo("org/a", "w1", done=True, due_at=T0 + timedelta(hours=1))
    [entry] = store.schedule_entries()
    assert not entry.woken and entry.due_at == T0 + timedelta(hours=1)
    assert store.claim_repos("w2", T0 + timedelta(seconds=2), lease_s=60) == []


def test_a_wake_during_the_poll_survives_its_release(store: SqlStore) -> None:
    _track(store, "org/a")
    store.wake(["org/a"], T0)
    store.claim_repos("w1", T0 + timedelta(seconds=1), lease_s=60)
    store.wake(["org/a"], T0 + timedelta(seconds=5))  # a webhook while w1 polls
    store.release_repo("org/a", "w1", done=True, due_at=T0 + timedelta(hours=1))
    assert [c.repo_id for c in store.claim_repos("w2", T0 + timedelta(seconds=6), 60)] == ["org/a"]


def test_release_without_finishing_keeps_the_wake(store: SqlStore) -> None:
    _track(store, "org/a")
    store.wake(["org/a"], T0)
    store.claim_repos("w1", T0, lease_s=60)
    store.release_repo("org/a", "w1", done=False, due_at=T0 + timedelta(hours=1))
    assert [c.repo_id for c in store.claim_repos("w2", T0 + timedelta(seconds=1), 60)] == ["org/a"]


def test_due_times_and_listing_flags_are_stored_per_repo(store: SqlStore) -> None:
    _track(store, "org/a", "org/b")
    store.set_due({"org/a": T0, "org/b": T0 + timedelta(minutes=5)})
    store.set_listed(["org/b"], True)
    a, b = store.schedule_entries()
    assert (a.due_at, a.listed) == (T0, None)
    assert (b.due_at, b.listed) == (T0 + timedelta(minutes=5), True)
    assert store.wake(["org/a", "org/unknown"], T0) == 1


def test_a_job_runs_on_one_worker_until_it_is_due_again(store: SqlStore) -> None:
    assert store.claim_job("discovery", "w1", T0, lease_s=60)
    assert not store.claim_job("discovery", "w2", T0, lease_s=60)
    store.finish_job("discovery", "w1", T0 + timedelta(minutes=10))
    assert not store.claim_job("discovery", "w2", T0 + timedelta(minutes=5), lease_s=60)
    assert store.claim_job("discovery", "w2", T0 + timedelta(minutes=10), lease_s=60)
    # w2 dies mid-run: the job is free again once its lease expires
    assert store.claim_job("discovery", "w3", T0 + timedelta(minutes=12), lease_s=60)


def test_cursors_are_stored_by_name(store: SqlStore) -> None:
    assert store.cursor("hub-models:x") is None
    store.set_cursor("hub-models:x", T0)
    store.set_cursor("hub-models:x", T0 + timedelta(seconds=1))
    assert store.cursor("hub-models:x") == T0 + timedelta(seconds=1)
    assert store.cursor("hub-models:y") is None


def test_removing_a_repo_removes_its_schedule(store: SqlStore) -> None:
    _track(store, "org/a")
    store.wake(["org/a"], T0)
    store.remove_repo("org/a")
    assert store.claim_repos("w1", T0, lease_s=60) == []


def test_a_second_worker_on_sqlite_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hubwatch.db'}"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import sys, time
                from hubwatch.store.sql import SqlStore
                store = SqlStore({url!r}); store.start()
                with store.worker_slot("first"):
                    print("held", flush=True)
                    sys.stdin.read()
            """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        store = SqlStore(url)
        store.start()
        with pytest.raises(WorkerConflict, match="SQLite serves one worker process"):
            with store.worker_slot("second"):
                pass
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        assert holder.stdout is not None
        holder.stdout.close()
    with store.worker_slot("second"):  # the first one exited: the slot is free
        pass
    store.close()


def _claim_all(store: SqlStore, owner: str, now: datetime, start: threading.Barrier) -> list[str]:
    """One worker: claims batches of 3 until none is left, starting with the others."""
    start.wait()
    claimed: list[str] = []
    while batch := store.claim_repos(owner, now, lease_s=60, limit=3):
        claimed += [c.repo_id for c in batch]
    return claimed


def test_concurrent_workers_claim_each_repo_once(db_url: str) -> None:
    """Six workers, each with its own store (engine and connections), claim at the same moment
    from six threads, over several rounds: every woken repo is claimed by exactly one."""
    stores = [SqlStore(db_url) for _ in range(6)]
    for store in stores:
        store.start()
    repos = [f"org/m{i}" for i in range(48)]
    _track(stores[0], *repos)
    try:
        for round_ in range(4):
            now = T0 + timedelta(hours=round_)  # the last round's 60 s leases have expired
            stores[0].wake(repos, now)
            start = threading.Barrier(len(stores))
            with ThreadPoolExecutor(len(stores)) as pool:
                futures = [
                    pool.submit(_claim_all, store, f"w{n}", now, start)
                    for n, store in enumerate(stores)
                ]
                claimed = [repo for future in futures for repo in future.result()]
            assert sorted(claimed) == sorted(repos), f"round {round_}"
    finally:
        for store in stores:
            store.close()


@pytest.mark.postgres
def test_postgres_has_no_single_worker_slot(pg_url: str) -> None:
    stores = [SqlStore(pg_url) for _ in range(2)]
    for store in stores:
        store.start()
    # PostgreSQL: no single-worker slot, two workers hold one at once
    with stores[0].worker_slot("first"), stores[1].worker_slot("second"):
        pass
    for store in stores:
        store.close()


# -- a worker restarted under its id ----------------------------------------------------------


def test_a_worker_restarted_under_its_id_takes_its_leases_back_at_once(store: SqlStore) -> None:
    _track(store, "org/a")
    now = datetime.now(UTC)
    store.wake(["org/a"], now)
    assert store.claim_repos("host-a", now, lease_s=300)  # then the process is killed
    assert store.claim_job("discovery", "host-a", now, lease_s=300)
    assert store.claim_repos("host-a", now, lease_s=300) == []  # its lease holds for 300 s
    with store.worker_slot("host-a") as freed:  # the same worker, started again
        assert freed == 2
        assert [c.repo_id for c in store.claim_repos("host-a", now, lease_s=300)] == ["org/a"]
        assert store.claim_job("discovery", "host-a", now, lease_s=300)


@pytest.mark.postgres
def test_on_postgres_only_the_restarted_workers_own_leases_come_back(pg_url: str) -> None:
    store = SqlStore(pg_url)
    store.start()
    try:
        _track(store, "org/mine", "org/theirs")
        now = datetime.now(UTC)
        store.wake(["org/mine"], now)
        store.claim_repos("host-a", now, lease_s=300)
        store.wake(["org/theirs"], now)
        store.claim_repos("host-b", now, lease_s=300)  # a live worker's, on another host
        with store.worker_slot("host-a") as freed:
            assert freed == 1
            assert [c.repo_id for c in store.claim_repos("host-a", now, 300)] == ["org/mine"]
            assert store.renew_lease("org/theirs", "host-b", now + timedelta(seconds=300))
    finally:
        store.close()


@pytest.mark.postgres
def test_on_postgres_a_live_workers_id_is_not_taken_twice(pg_url: str) -> None:
    stores = [SqlStore(pg_url) for _ in range(2)]
    for store in stores:
        store.start()
    try:
        with stores[0].worker_slot("host-a"):
            with pytest.raises(WorkerIdTaken, match="host-a"), stores[1].worker_slot("host-a"):
                pass
            # without an id of its own, a second worker of this host numbers itself
            with worker_slot(stores[1]) as first, worker_slot(stores[0]) as second:
                assert (first, second) == (socket.gethostname(), f"{socket.gethostname()}-2")
        with stores[1].worker_slot("host-a"):  # the first one stopped: the id is free
            pass
    finally:
        for store in stores:
            store.close()

"""The BrowseStore and WebhookStore contracts on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from hubwatch.errors import NotTracked, UnknownRevision, UnknownSubscription
from hubwatch.models import Change, CommitSha, MessageState, OutboxMessage, RepoState, Severity
from hubwatch.store.sql import SqlStore, make_engine
from hubwatch.store.sql.migrate import upgrade
from tests.support.served import OTHER, REPO, fill
from tests.test_store import sha


@pytest.fixture
def filled(store: SqlStore) -> SqlStore:
    fill(store)
    return store


def test_history_pages_cover_every_revision_once(filled: SqlStore) -> None:
    seen, before = [], None
    while True:
        page = filled.history_page(REPO.repo_id, before=before, limit=2)
        seen += [r.sha for r in page.revisions]
        if page.next_cursor is None:
            break
        before = page.next_cursor
    assert seen == [sha(3), sha(2), sha(1)]


def test_latest_and_one_revisions_changes(filled: SqlStore) -> None:
    latest = filled.latest_revision(REPO.repo_id)
    assert latest is not None and latest.sha == sha(3)
    assert filled.revision_changes(REPO.repo_id, sha(1)).changes == ()
    assert filled.revision_changes(REPO.repo_id, sha(2)).base == sha(1)
    with pytest.raises(UnknownRevision):
        filled.revision_changes(REPO.repo_id, CommitSha("f" * 40))
    with pytest.raises(NotTracked):
        filled.latest_revision("org/none")


def test_repo_state_alone(filled: SqlStore) -> None:
    assert filled.repo_state(REPO.repo_id) is RepoState.ACTIVE
    with pytest.raises(NotTracked):
        filled.repo_state("org/none")


def test_change_counts_by_severity(filled: SqlStore) -> None:
    counts = filled.change_counts(REPO.repo_id)
    assert (counts[Severity.BREAKING], counts[Severity.BEHAVIOR], counts[Severity.INFO]) == (
        1,
        1,
        1,
    )
    after = filled.change_counts(REPO.repo_id, after=sha(2))
    assert sum(after.values()) == 1
    recent = filled.change_counts(REPO.repo_id, since=datetime.now(UTC) - timedelta(hours=36))
    assert sum(recent.values()) == 1  # only the newest revision is that recent
    with pytest.raises(UnknownRevision):
        filled.change_counts(REPO.repo_id, after=CommitSha("f" * 40))


def test_change_counts_include_replaced_changes_and_only_this_repos(filled: SqlStore) -> None:
    breaking = Change("advisories.changed", Severity.BREAKING, "a new advisory", None)
    filled.replace_changes(REPO.repo_id, sha(3), "advisories.changed", [breaking])
    after = filled.change_counts(REPO.repo_id, after=sha(2))
    assert (after[Severity.BREAKING], sum(after.values())) == (1, 2)
    recent = filled.change_counts(REPO.repo_id, since=datetime.now(UTC) - timedelta(hours=36))
    assert recent[Severity.BREAKING] == 1
    assert sum(filled.change_counts(OTHER.repo_id).values()) == 0


def test_migration_0008_gives_stored_changes_their_repo_and_date(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        upgrade(engine, "0007")
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO repo (repo_id, source, branch, state, added_at)"
                    " VALUES ('org/old', 'hub', 'main', 'active', CURRENT_TIMESTAMP)"
                )
            )
            for n, when in ((1, "2026-01-01 00:00:00"), (2, "2026-06-01 00:00:00")):
                conn.execute(
                    text(
                        "INSERT INTO revision (repo_pk, sha, parents, committed_at, authors,"
                        " title, message, changed, reachable, recorded_at)"
                        " SELECT id, :sha, '[]', :at, '[]', 't', '', '[]', true, :at"
                        " FROM repo WHERE repo_id = 'org/old'"
                    ),
                    {"sha": sha(n), "at": when},
                )
                conn.execute(
                    text(
                        "INSERT INTO change (revision_pk, position, kind, severity, rank, summary)"
                        " SELECT id, 0, 'config.changed', 'breaking', 3, 's' FROM revision"
                        " WHERE sha = :sha"
                    ),
                    {"sha": sha(n)},
                )
        upgrade(engine)
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    store.start()
    try:
        assert store.change_counts("org/old", after=sha(1))[Severity.BREAKING] == 1
        since = datetime(2026, 3, 1, tzinfo=UTC)
        assert store.change_counts("org/old", since=since)[Severity.BREAKING] == 1
        assert store.change_counts("org/old")[Severity.BREAKING] == 2
    finally:
        store.close()


def test_recent_changes_by_repo_org_and_all(filled: SqlStore) -> None:
    everything = filled.recent_changes()
    assert [i.changes.revision.sha for i in everything] == [sha(3), sha(2)]
    assert filled.recent_changes(org="other") == []
    assert len(filled.recent_changes(repo_id=REPO.repo_id, limit=1)) == 1


@pytest.mark.parametrize("spelling", ["ORG", "Org", "o_g", "o%", "or"])
def test_recent_changes_of_an_org_match_it_exactly(filled: SqlStore, spelling: str) -> None:
    assert filled.recent_changes(org="org")
    assert filled.recent_changes(org=spelling) == []


def test_subscription_round_trip_and_unknown_ids(filled: SqlStore) -> None:
    sub = filled.add_subscription(
        "https://x.example/h", "whsec_AA==", repo_id=None, org="org", kinds=["card."],
        min_severity=Severity.BEHAVIOR,
    )  # fmt: skip
    assert filled.subscription(sub.id) == sub
    assert sub.covers("org/model") and not sub.covers("other/thing")
    with pytest.raises(UnknownSubscription):
        filled.subscription(sub.id + 1)
    with pytest.raises(UnknownSubscription):
        filled.deliveries(sub.id + 1)


def test_enqueue_is_idempotent_per_event_and_survives_reopening(db_url: str) -> None:
    store = SqlStore(db_url)
    store.start()
    fill(store)
    sub = store.add_subscription(
        "https://x.example/h", "whsec_AA==", repo_id=None, org=None, kinds=[], min_severity=None
    )
    now = datetime.now(UTC)
    message = OutboxMessage(sub.id, "msg_1", "revision:org/model:1", "revision.changed", "{}")
    assert store.enqueue([message], now=now) == 1
    assert (
        store.enqueue([OutboxMessage(sub.id, "msg_2", message.event_key, "t", "{}")], now=now) == 0
    )
    store.close()
    reopened = SqlStore(db_url)  # a restart: the outbox is in the database
    reopened.start()
    try:
        [due] = reopened.due_messages(now)
        assert (due.message_id, due.attempts) == ("msg_1", 0)
        reopened.record_attempt(
            due.id, at=now, status_code=500, error="HTTP 500", duration_ms=3,
            state=MessageState.PENDING, next_attempt_at=now + timedelta(minutes=1),
        )  # fmt: skip
        assert reopened.due_messages(now) == []
        [again] = reopened.due_messages(now + timedelta(minutes=1))
        assert again.attempts == 1
    finally:
        reopened.close()

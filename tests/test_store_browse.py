"""The BrowseStore and WebhookStore contracts on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, text
from structlog.testing import capture_logs

from hubwatch.errors import (
    NotTracked,
    StoreError,
    StoreUnavailable,
    UnknownRevision,
    UnknownSubscription,
)
from hubwatch.models import Change, CommitSha, MessageState, OutboxMessage, RepoState, Severity
from hubwatch.store.outage import SETTLE_S
from hubwatch.store.sql import SqlStore, make_engine
from hubwatch.store.sql.engine import PING_IDLE_S
from hubwatch.store.sql.migrate import upgrade
from tests.support.migrating import old_repo
from tests.support.served import CARD, OTHER, REPO, STOP, fill
from tests.test_store import sha, snapshot


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


def test_history_text_is_the_page_with_its_json_columns_as_stored(store: SqlStore) -> None:
    store.add_repo(REPO)
    card = {"license": "mit", "params": 2**70, "tags": ["a", "é"], "nested": {"x": [1.5, None]}}
    store.add_revision(REPO.repo_id, snapshot(1, {}))
    store.add_revision(REPO.repo_id, dataclasses.replace(snapshot(2, {}), card=card))
    store.add_revision(REPO.repo_id, snapshot(3, {}))
    page = store.history_page(REPO.repo_id, limit=2)
    text = store.history_text(REPO.repo_id, limit=2)
    assert text.next_cursor == page.next_cursor is not None
    assert [r.sha for r in text.revisions] == [sha(3), sha(2)]
    for got, want in zip(text.revisions, page.revisions, strict=True):
        assert (got.date, got.title, got.message, got.reachable) == (
            want.date,
            want.title,
            want.message,
            want.reachable,
        )
        assert tuple(json.loads(got.parents)) == want.parents
        assert tuple(json.loads(got.authors)) == want.authors
        assert tuple(json.loads(got.changed)) == want.changed
        assert json.loads(got.card or "null") == want.card
    assert json.loads(text.revisions[1].card or "") == card  # 2**70 exactly, as stored
    last = store.history_text(REPO.repo_id, before=text.next_cursor, limit=2)
    assert [r.sha for r in last.revisions] == [sha(1)] and last.next_cursor is None
    with pytest.raises(NotTracked):
        store.history_text("org/none")


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


def test_counts_take_the_changes_after_a_pin_or_since_a_date(filled: SqlStore) -> None:
    assert filled.count_changes(REPO.repo_id) == (3, 1)  # breaking, behavior, info
    assert filled.count_changes(REPO.repo_id, after=sha(2))[0] == 1
    # by when they were recorded (a moment ago), not by their commits' dates (1 to 3 days ago)
    since = datetime.now(UTC) - timedelta(hours=36)
    assert filled.count_changes(REPO.repo_id, since=since) == (3, 1)
    later = datetime.now(UTC) + timedelta(seconds=1)
    assert filled.count_changes(REPO.repo_id, since=later) == (0, 0)
    with pytest.raises(UnknownRevision):
        filled.count_changes(REPO.repo_id, after=CommitSha("f" * 40))


def test_counts_include_replaced_changes_and_only_this_repos(filled: SqlStore) -> None:
    breaking = Change("advisories.changed", Severity.BREAKING, "a new advisory", None)
    filled.replace_changes(REPO.repo_id, sha(3), "advisories.changed", [breaking])
    assert filled.count_changes(REPO.repo_id, after=sha(2)) == (2, 1)
    since = datetime.now(UTC) - timedelta(hours=36)
    assert filled.count_changes(REPO.repo_id, since=since)[1] == 2
    assert filled.count_changes(OTHER.repo_id) == (0, 0)


def test_count_changes_all_and_breaking(filled: SqlStore) -> None:
    # revision 2 brought a breaking and an info change, revision 3 a behavior change
    assert filled.count_changes(REPO.repo_id) == (3, 1)
    assert filled.count_changes(REPO.repo_id, after=sha(1)) == (3, 1)
    assert filled.count_changes(REPO.repo_id, after=sha(2)) == (1, 0)
    assert filled.count_changes(REPO.repo_id, after=sha(3)) == (0, 0)
    day_and_a_half = datetime.now(UTC) - timedelta(hours=36)  # all recorded since
    assert filled.count_changes(REPO.repo_id, since=day_and_a_half) == (3, 1)
    assert filled.count_changes(OTHER.repo_id) == (0, 0)
    with pytest.raises(UnknownRevision):
        filled.count_changes(REPO.repo_id, after=CommitSha("f" * 40))
    with pytest.raises(UnknownRevision):  # another repo's revision is not this one's
        filled.count_changes(OTHER.repo_id, after=sha(2))
    with pytest.raises(NotTracked):
        filled.count_changes("org/none", after=sha(1))
    with pytest.raises(NotTracked):
        filled.count_changes("org/none", since=day_and_a_half)


def _next_revision_id_past(db_url: str, at: int) -> None:
    """The next revision stored gets an id past `at`: a revision of another repo written there
    by SQL, so that a test crosses tally blocks (1024 ids each) without storing 1024."""
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO revision (id, repo_pk, sha, parents, committed_at, authors,"
                    " title, message, changed, reachable, recorded_at) SELECT :at, id, :sha,"
                    " '[]', :now, '[]', 'filler', '', '[]', :yes, :now FROM repo"
                    " WHERE repo_id = :repo"
                ),
                {"at": at, "sha": f"{at:040x}", "now": datetime.now(UTC), "yes": True}
                | {"repo": OTHER.repo_id},
            )
            if engine.dialect.name == "postgresql":
                conn.execute(
                    text("SELECT setval(pg_get_serial_sequence('revision', 'id'), :at)"), {"at": at}
                )
    finally:
        engine.dispose()


def test_changes_since_a_pin_across_tally_blocks(store: SqlStore, db_url: str) -> None:
    store.add_repo(REPO)
    store.add_repo(OTHER)
    info = Change("config.x", Severity.INFO, "x", "config.json", 1, 2)
    breaking = Change("config.y", Severity.BREAKING, "y", "config.json", 1, 2)
    stored = [(1, ()), (2, (info, breaking)), (3, (info,))]  # block 0
    stored += [(4, (breaking,)), (5, (info, info))]  # block 2 (ids past 2048)
    stored += [(6, (info,))]  # block 4 (ids past 4096)
    for n, changes in stored:
        if n == 4:
            _next_revision_id_past(db_url, 2100)
        if n == 6:
            _next_revision_id_past(db_url, 4200)
        store.add_revision(REPO.repo_id, dataclasses.replace(snapshot(n, {}), changes=changes))
    assert store.count_changes(REPO.repo_id, after=sha(1)) == (7, 2)
    assert store.count_changes(REPO.repo_id, after=sha(2)) == (5, 1)
    assert store.count_changes(REPO.repo_id, after=sha(3)) == (4, 1)
    assert store.count_changes(REPO.repo_id, after=sha(4)) == (3, 0)
    assert store.count_changes(REPO.repo_id, after=sha(5)) == (1, 0)
    assert store.count_changes(REPO.repo_id, after=sha(6)) == (0, 0)
    with pytest.raises(UnknownRevision):
        store.count_changes(REPO.repo_id, after=CommitSha("f" * 40))
    with pytest.raises(NotTracked):
        store.count_changes("org/none", after=sha(1))


def _drop_idle_connections(url: str) -> int:
    """Terminate the store's idle server connections, as a restarted server or proxy would."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                        " AND state = 'idle'"
                    )
                ).scalar_one()
            )
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_connection_dropped_while_idle_is_replaced_before_a_read(pg_url: str) -> None:
    store = SqlStore(pg_url)
    store.start()
    try:
        store.add_repo(REPO)
        assert store.repo_state(REPO.repo_id) is RepoState.ACTIVE  # the pool holds connections
        assert _drop_idle_connections(pg_url) >= 1
        time.sleep(PING_IDLE_S + 0.2)  # idle long enough to be pinged, and replaced
        assert store.repo_state(REPO.repo_id) is RepoState.ACTIVE
        assert store.history_text(REPO.repo_id).revisions == ()
    finally:
        store.close()


@pytest.mark.postgres
def test_a_connection_dropped_while_in_use_fails_one_read_as_a_store_error(pg_url: str) -> None:
    # badge and history reads run on the driver's cursor (store/sql/driver.py): a driver
    # error must still be a StoreError, and the broken connection must leave the pool
    store = SqlStore(pg_url)
    store.start()
    try:
        store.add_repo(REPO)
        assert store.repo_state(REPO.repo_id) is RepoState.ACTIVE
        assert _drop_idle_connections(pg_url) >= 1
        with capture_logs() as logs:
            with pytest.raises(StoreUnavailable, match="database unavailable"):
                store.repo_state(REPO.repo_id)  # within PING_IDLE_S of its last use: not pinged
            assert store.outage.down
            assert store.repo_state(REPO.repo_id) is RepoState.ACTIVE
            assert store.outage.down  # until it answers SETTLE_S after the last failure
            time.sleep(SETTLE_S)
            assert store.history_text(REPO.repo_id).revisions == ()
    finally:
        store.close()
    # one line when it started, one when it ended: the other dropped connections, pinged
    # because they were last used before the failure, were replaced without failing a read
    assert [e["event"] for e in logs] == ["database_unavailable", "database_available"]
    assert logs[1]["failed"] == 1 and not store.outage.down


def test_a_driver_error_on_a_badge_read_is_a_store_error(store: SqlStore, db_url: str) -> None:
    store.add_repo(REPO)
    engine = make_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("DROP TABLE change_tally"))
    finally:
        engine.dispose()
    with pytest.raises(StoreError, match="database error"):
        store.count_changes(REPO.repo_id, after=sha(1))
    assert store.repo_state(REPO.repo_id) is RepoState.ACTIVE  # the store goes on


@pytest.mark.postgres
def test_reads_at_once_reuse_the_pooled_connections(pg_url: str) -> None:
    # with fewer pooled connections than requests at once, every extra read opened a
    # connection and closed it after, which cost more than the read (issue 15)
    store = SqlStore(pg_url)
    store.start()
    opened: list[object] = []
    event.listen(store._engine, "connect", lambda *_: opened.append(1))
    try:
        for _ in range(2):  # eight requests at once, twice
            held = [store._engine.connect() for _ in range(8)]
            for connection in held:
                connection.close()
        assert len(opened) <= 8  # the second eight found the first eight's connections
    finally:
        store.close()


def test_only_sqlite_reads_are_made_on_the_event_loop(db_url: str) -> None:
    store = SqlStore(db_url)
    assert store.reads_are_local is db_url.startswith("sqlite")  # PostgreSQL: round trips
    store.close()


def test_revision_counts_kept_on_write(filled: SqlStore) -> None:
    assert filled.get_repo(REPO.repo_id).revisions == 3
    assert {r.ref.repo_id: r.revisions for r in filled.list_repos()} == {
        REPO.repo_id: 3,
        OTHER.repo_id: 1,
    }
    # a revision stored already is not counted twice
    assert not filled.add_revision(OTHER.repo_id, snapshot(9, {"config.json": b"{}"}))
    assert filled.get_repo(OTHER.repo_id).revisions == 1


def test_history_and_latest_of_an_untracked_or_empty_repo(store: SqlStore) -> None:
    with pytest.raises(NotTracked):
        store.history_page("org/none")
    store.add_repo(REPO)
    assert store.history_page(REPO.repo_id).revisions == ()
    assert store.latest_revision(REPO.repo_id) is None


def test_migration_0008_gives_stored_changes_their_repo_and_date(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        upgrade(engine, "0007")
        with engine.begin() as conn:
            old_repo(conn)
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
        assert store.count_changes("org/old", after=sha(1))[1] == 1
        since = datetime(2026, 3, 1, tzinfo=UTC)
        assert store.count_changes("org/old", since=since)[1] == 1
        assert store.count_changes("org/old")[1] == 2
    finally:
        store.close()


def test_migration_0011_counts_the_revisions_already_stored(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        upgrade(engine, "0009")
        with engine.begin() as conn:
            for repo_id, shas in (("org/old", 3), ("org/empty", 0)):
                old_repo(conn, repo_id)
                for n in range(1, shas + 1):
                    conn.execute(
                        text(
                            "INSERT INTO revision (repo_pk, sha, parents, committed_at, authors,"
                            " title, message, changed, reachable, recorded_at)"
                            " SELECT id, :sha, '[]', CURRENT_TIMESTAMP, '[]', 't', '', '[]',"
                            " true, CURRENT_TIMESTAMP FROM repo WHERE repo_id = :repo"
                        ),
                        {"sha": sha(n), "repo": repo_id},
                    )
        upgrade(engine)
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    store.start()
    try:
        assert store.get_repo("org/old").revisions == 3
        assert store.get_repo("org/empty").revisions == 0
        assert [r.sha for r in store.history_page("org/old", limit=2).revisions] == [sha(3), sha(2)]
    finally:
        store.close()


def test_counts_since_a_pin_add_tallies_of_later_blocks(db_url: str) -> None:
    # revisions 1, 2, 1500 and 3000 (three blocks of 1024 ids), stored before migration 0011
    engine = make_engine(db_url)
    try:
        upgrade(engine, "0009")
        with engine.begin() as conn:
            old_repo(conn)
            for pk, severities in ((1, ""), (2, "bi"), (1500, "ii"), (3000, "bbi")):
                conn.execute(
                    text(
                        "INSERT INTO revision (id, repo_pk, sha, parents, committed_at, authors,"
                        " title, message, changed, reachable, recorded_at)"
                        " SELECT :pk, id, :sha, '[]', CURRENT_TIMESTAMP, '[]', 't', '', '[]',"
                        " true, CURRENT_TIMESTAMP FROM repo WHERE repo_id = 'org/old'"
                    ),
                    {"pk": pk, "sha": sha(pk)},
                )
                for position, s in enumerate(severities):
                    severity = "breaking" if s == "b" else "info"
                    conn.execute(
                        text(
                            "INSERT INTO change (revision_pk, repo_pk, committed_at, position,"
                            " kind, severity, rank, summary) SELECT :pk, repo_pk, committed_at,"
                            " :position, 'config.changed', :severity, 1, 's' FROM revision"
                            " WHERE id = :pk"
                        ),
                        {"pk": pk, "position": position, "severity": severity},
                    )
            if engine.dialect.name == "postgresql":  # ids given: the next one follows them
                conn.execute(text("SELECT setval(pg_get_serial_sequence('revision', 'id'), 3000)"))
        upgrade(engine)
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    store.start()
    try:
        counts = store.count_changes
        assert counts("org/old", after=sha(1)) == (7, 3)
        assert counts("org/old", after=sha(2)) == (5, 2)
        assert counts("org/old", after=sha(1500)) == (3, 2)
        assert counts("org/old", after=sha(3000)) == (0, 0)
        # kept on write: a new revision's changes, and one revision's changes replaced
        newest = dataclasses.replace(snapshot(3001, {}), changes=(STOP, CARD))
        assert store.add_revision("org/old", newest)
        store.replace_changes("org/old", sha(1500), "config.changed", [STOP])
        assert counts("org/old", after=sha(1)) == (8, 5)  # 2, 1500 (one now), 3000, the new
        assert counts("org/old", after=sha(1500)) == (5, 3)
        assert counts("org/old", after=sha(3000)) == (2, 1)
        for pin in (1, 2, 1500, 3000):
            # the same as walking the stored changes after the pin
            every = [c for r in store.changes("org/old", since=sha(pin)) for c in r.changes]
            breaking = sum(c.severity is Severity.BREAKING for c in every)
            assert counts("org/old", after=sha(pin)) == (len(every), breaking)
        store.remove_repo("org/old")
        store.add_repo(REPO)
        assert counts(REPO.repo_id) == (0, 0)
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


def test_migration_0012_counts_stored_changes_by_when_they_were_recorded(db_url: str) -> None:
    # changes stored before 0012 carried their commit's date; upstream set it to 2001 and 2100
    recorded = datetime.now(UTC) - timedelta(days=1)
    engine = make_engine(db_url)
    try:
        upgrade(engine, "0011")
        with engine.begin() as conn:
            old_repo(conn)
            for n, committed in (
                (1, "2001-01-01 00:00:00+00:00"),
                (2, "2100-01-01 00:00:00+00:00"),
            ):
                conn.execute(
                    text(
                        "INSERT INTO revision (repo_pk, sha, parents, committed_at, authors,"
                        " title, message, changed, reachable, recorded_at)"
                        " SELECT id, :sha, '[]', :committed, '[]', 't', '', '[]', true, :recorded"
                        " FROM repo WHERE repo_id = 'org/old'"
                    ),
                    {"sha": sha(n), "committed": committed, "recorded": recorded},
                )
                conn.execute(
                    text(
                        "INSERT INTO change (revision_pk, repo_pk, committed_at, position,"
                        " kind, severity, rank, summary) SELECT id, repo_pk, committed_at, 0,"
                        " 'config.changed', 'breaking', 3, 's' FROM revision WHERE sha = :sha"
                    ),
                    {"sha": sha(n)},
                )
        upgrade(engine)
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    store.start()
    try:
        month_ago = datetime.now(UTC) - timedelta(days=30)
        assert store.count_changes("org/old", since=month_ago) == (2, 2)
        assert store.count_changes("org/old", since=recorded + timedelta(hours=1)) == (0, 0)
        assert [r.date.year for r in store.history("org/old")] == [2001, 2100]  # still shown
    finally:
        store.close()


def test_the_count_since_a_time_is_a_range_of_one_index(sqlite_url: str) -> None:
    # what the breaking badge runs (bench/api_load.py): never a walk of the repo's changes
    from hubwatch.store.sql.browse import _SINCE

    store = SqlStore(sqlite_url)
    store.start()
    try:
        fill(store)
        compiled = _SINCE.compile(dialect=store._engine.dialect)
        params = compiled.construct_params({"repo_id": REPO.repo_id, "since": "2026-01-01"})
        assert compiled.positiontup is not None
        values = tuple(params[name] for name in compiled.positiontup)
        with store._engine.connect() as conn:
            plan = [
                row[3] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", values)
            ]
    finally:
        store.close()
    assert any(
        step.startswith("SEARCH change USING COVERING INDEX ix_change_repo_observed")
        and "observed_at>?" in step
        for step in plan
    ), plan

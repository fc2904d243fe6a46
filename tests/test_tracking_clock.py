"""Time from our clock: changes count by when hubwatch recorded them; odd commit dates flagged."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hubwatch.api.routes.badges import badge
from hubwatch.models import RepoRef, Severity, SourceKind
from hubwatch.sources.git import GitSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.clock import KIND, CommitClock, implausible
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.snapshot import Limits
from tests.support.gitrepo import CommitSpec, make_repo

RECORDED = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("date", "parent", "reason"),
    [
        (RECORDED + timedelta(hours=20), None, None),  # a clock a few hours fast
        (RECORDED + timedelta(days=2), None, "future"),
        (datetime(2100, 1, 1, tzinfo=UTC), None, "future"),
        (datetime(2005, 4, 8, tzinfo=UTC), None, None),
        (datetime(2001, 1, 1, tzinfo=UTC), None, "before git"),
        (datetime(1970, 1, 1, tzinfo=UTC), RECORDED, "before git"),
        (RECORDED - timedelta(days=6), RECORDED, None),  # two machines' clocks
        (RECORDED - timedelta(days=400), RECORDED, "before its parent"),
        (RECORDED - timedelta(days=400), None, None),  # a root, or its parent not stored
    ],
)
def test_implausible_commit_dates(date: datetime, parent: datetime | None, reason: str) -> None:
    change = implausible(date, RECORDED, parent)
    if reason is None:
        assert change is None
        return
    assert change is not None and change.kind == KIND and change.severity is Severity.INFO
    assert isinstance(change.after, dict) and change.after["reason"] == reason
    assert f"Commit dated {date:%Y-%m-%d}" in change.summary


def _eos(n: int, date: datetime) -> CommitSpec:
    """A commit whose stop token moves: one breaking change against its parent."""
    files = {"generation_config.json": json.dumps({"eos_token_id": n}).encode()}
    return CommitSpec(files, message=f"eos {n}", date=date)


def _track(store: SqlStore, tmp_path: Path, dates: list[datetime]) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [_eos(n, date) for n, date in enumerate(dates)])
    tracker = Tracker(
        store,
        {SourceKind.GIT: GitSource(tmp_path / "mirrors", timeout_s=60)},
        Limits(),
        RetryPolicy(attempts=2, sleep=lambda _s: None),
        after_revision=[CommitClock(store).after_revision],
    )
    tracker.track(RepoRef("org/m", SourceKind.GIT, str(upstream)))


def _flagged(store: SqlStore) -> list[str]:
    return [
        str(c.after["reason"])  # type: ignore[index]
        for rc in store.changes("org/m")
        for c in rc.changes
        if c.kind == KIND
    ]


def test_backdated_breaking_changes_count_when_observed(store: SqlStore, tmp_path: Path) -> None:
    # three breaking changes dated 2001 used to leave the 30-day badge green
    root = datetime(2026, 1, 1, tzinfo=UTC)
    _track(store, tmp_path, [root, *(datetime(2001, 1, d, tzinfo=UTC) for d in (1, 2, 3))])
    assert store.count_changes("org/m", since=datetime.now(UTC) - timedelta(days=30))[1] == 3
    shown = badge(store, "org/m", "breaking")
    assert (shown.message, shown.color) == ("3", "red")
    assert _flagged(store) == ["before git"] * 3
    assert [r.date.year for r in store.history("org/m")] == [2026, 2001, 2001, 2001]  # shown


def test_a_future_dated_breaking_change_leaves_the_window_on_time(
    store: SqlStore, tmp_path: Path
) -> None:
    # one dated 2100 used to keep the badge red until 2100
    _track(store, tmp_path, [datetime(2026, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)])
    now = datetime.now(UTC)
    assert badge(store, "org/m", "breaking", now=now).message == "1"
    later = badge(store, "org/m", "breaking", now=now + timedelta(days=31))
    assert (later.message, later.color) == ("0", "brightgreen")
    assert _flagged(store) == ["future"]

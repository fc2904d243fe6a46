"""The repo page's filters and pages, and the feeds' filters: the store's queries on SQLite and
PostgreSQL, the routes in process."""

from __future__ import annotations

from datetime import UTC, datetime

import feedparser
import pytest

from hubwatch.api import create_app
from hubwatch.api.filters import parse_filter, query_string
from hubwatch.errors import NotTracked
from hubwatch.models import Change, ChangeFilter, CommitSha, Severity
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.trend_history import GROWING, STEPS, fill_growing

REPO = GROWING.repo_id
BREAKING_AT = [n for n, step in enumerate(STEPS) if step[-1] and n > 0]
"""The revisions fill_growing records a breaking change for (not the first: it has no base)."""


@pytest.fixture
def shas(store: SqlStore) -> list[CommitSha]:
    return fill_growing(store)


@pytest.fixture
def api(store: SqlStore, shas: list[CommitSha]) -> InProcess:
    return InProcess(create_app(store, Settings()))


# -- the filter itself -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("severity", "kind", "since", "parsed"),
    [
        (None, None, None, ChangeFilter()),
        ("", "", "", ChangeFilter()),  # a form's "any"
        ("breaking", None, None, ChangeFilter(Severity.BREAKING)),
        (None, "chat_template", None, ChangeFilter(kind="chat_template")),
        (None, "chat_template.", None, ChangeFilter(kind="chat_template")),  # the API's prefix
        (None, None, "2024-01-31", ChangeFilter(since=datetime(2024, 1, 31, tzinfo=UTC))),
    ],
)
def test_query_fields_parse_into_a_filter(
    severity: str | None, kind: str | None, since: str | None, parsed: ChangeFilter
) -> None:
    assert parse_filter(severity, kind, since) == parsed


@pytest.mark.parametrize(
    ("severity", "kind", "since", "reason"),
    [
        ("fatal", None, None, "severity must be one of"),
        (None, "Chat Template", None, "kind must look like"),
        (None, "a..b", None, "kind must look like"),
        (None, None, "yesterday", "since must be a date"),
    ],
)
def test_bad_query_fields_say_why(
    severity: str | None, kind: str | None, since: str | None, reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_filter(severity, kind, since)


def test_a_filter_links_back_to_itself() -> None:
    where = parse_filter("breaking", "chat_template", "2024-01-02")
    assert query_string(where, page=2) == (
        "?severity=breaking&kind=chat_template&since=2024-01-02&page=2"
    )
    assert query_string(ChangeFilter()) == ""


def test_kind_takes_itself_and_what_is_below_it_only() -> None:
    where = ChangeFilter(kind="chat_template")

    def change(kind: str) -> Change:
        return Change(kind, Severity.INFO, "s")

    assert where.takes(change("chat_template")) and where.takes(change("chat_template.rendered"))
    assert not where.takes(change("chat_templates.x")) and not where.takes(change("chat"))


# -- the store's queries (SQLite and PostgreSQL) -------------------------------------------------


def test_timeline_without_filter_pages_every_revision(store: SqlStore, shas: list[str]) -> None:
    first = store.timeline(REPO, ChangeFilter(), limit=5)
    rest = store.timeline(REPO, ChangeFilter(), offset=5, limit=5)
    assert [rc.revision.sha for rc in first.revisions] == shas[::-1][:5] and first.more
    assert [rc.revision.sha for rc in rest.revisions] == shas[::-1][5:] and not rest.more


def test_timeline_by_severity_keeps_matching_revisions_and_changes(
    store: SqlStore, shas: list[str]
) -> None:
    page = store.timeline(REPO, ChangeFilter(Severity.BREAKING))
    assert [rc.revision.sha for rc in page.revisions] == [shas[n] for n in BREAKING_AT[::-1]]
    assert {c.severity for rc in page.revisions for c in rc.changes} == {Severity.BREAKING}


def test_timeline_by_kind_prefix(store: SqlStore, shas: list[str]) -> None:
    page = store.timeline(REPO, ChangeFilter(kind="chat_template"))
    assert [rc.revision.sha for rc in page.revisions] == [shas[5], shas[2]]
    assert {c.kind for rc in page.revisions for c in rc.changes} == {"chat_template.rendered"}
    assert store.timeline(REPO, ChangeFilter(kind="chat")).revisions == ()


def test_timeline_since_a_date_keeps_revisions_without_changes(
    store: SqlStore, shas: list[str]
) -> None:
    since = datetime(2024, 1, 6, tzinfo=UTC)  # revisions 5, 6, 7
    page = store.timeline(REPO, ChangeFilter(since=since))
    assert [rc.revision.sha for rc in page.revisions] == shas[7:4:-1]
    assert not ChangeFilter(since=since).by_change
    both = store.timeline(REPO, ChangeFilter(Severity.BREAKING, since=since))
    assert [rc.revision.sha for rc in both.revisions] == [shas[7]]


def test_trend_is_oldest_first_with_weights_configs_and_breaking(
    store: SqlStore, shas: list[str]
) -> None:
    points = store.trend(REPO)
    assert [p.sha for p in points] == shas
    assert [p.weight_bytes for p in points] == [step[3] for step in STEPS]
    assert [p.breaking for p in points] == [n in BREAKING_AT for n in range(len(STEPS))]
    assert all(p.estimate is not None and p.estimate.ok for p in points)
    assert all(p.config is not None and b"vocab_size" in p.config for p in points)
    assert [p.sha for p in store.trend(REPO, limit=3)] == shas[-3:]


def test_trend_and_timeline_of_an_unknown_repo_raise(store: SqlStore) -> None:
    with pytest.raises(NotTracked):
        store.trend("org/unknown")
    with pytest.raises(NotTracked):
        store.timeline("org/unknown", ChangeFilter())


def test_recent_changes_take_the_filter(store: SqlStore, shas: list[str]) -> None:
    items = store.recent_changes(repo_id=REPO, where=ChangeFilter(kind="chat_template"))
    assert [i.changes.revision.sha for i in items] == [shas[5], shas[2]]
    assert all(c.kind == "chat_template.rendered" for i in items for c in i.changes.changes)
    since = store.recent_changes(where=ChangeFilter(since=datetime(2024, 1, 7, tzinfo=UTC)))
    assert [i.changes.revision.sha for i in since] == [shas[7]]


# -- the routes, in process ------------------------------------------------------------------


def test_repo_page_draws_a_chart_per_metric_with_a_table(api: InProcess) -> None:
    page = api.get(f"/repos/{REPO}").text
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 6
    assert page.count('class="breaking"') == 6 * len(BREAKING_AT)
    assert '<details id="trend-numbers">' in page and "152,064" in page and "131,072" in page


def test_repo_page_filter_in_the_url(api: InProcess, shas: list[str]) -> None:
    page = api.get(f"/repos/{REPO}?severity=breaking").text
    timeline = page[page.index('id="timeline"') :]
    assert timeline.count('class="rev"') == len(BREAKING_AT)
    assert "chat_template.rendered" not in timeline  # only the changes the filter takes
    assert '<option value="breaking" selected>' in page  # the form shows the filter
    kind = api.get(f"/repos/{REPO}?kind=chat_template&since=2024-01-04").text
    assert kind[kind.index('id="timeline"') :].count('class="rev"') == 1
    assert 'value="chat_template"' in kind and 'value="2024-01-04"' in kind


def test_repo_page_filter_that_matches_nothing_says_so(api: InProcess) -> None:
    page = api.get(f"/repos/{REPO}?since=2030-01-01").text
    assert "No revision matches the filter." in page


def test_repo_page_bad_filter_is_422(api: InProcess) -> None:
    response = api.get(f"/repos/{REPO}?severity=fatal")
    assert response.status_code == 422 and "severity must be one of" in response.text
    assert api.get(f"/repos/{REPO}?page=0").status_code == 422


def test_repo_feed_takes_the_filter(api: InProcess, shas: list[str]) -> None:
    feed = feedparser.parse(api.get(f"/feeds/{REPO}.atom?severity=breaking").text)
    assert len(feed.entries) == len(BREAKING_AT)
    assert "severity=breaking" in feed.feed.id  # a feed of its own
    every = feedparser.parse(api.get("/feeds/all.atom?kind=chat_template").text)
    assert len(every.entries) == 2
    org = feedparser.parse(api.get("/feeds/org.atom?since=2024-01-08").text)
    assert len(org.entries) == 1
    assert api.get("/feeds/all.atom?since=soon").status_code == 422


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_timeline_pages_link_to_each_other(store: SqlStore) -> None:
    fill_growing(store, steps=55)
    api = InProcess(create_app(store, Settings()))
    first = api.get(f"/repos/{REPO}").text
    assert first.count('class="rev"') == 50
    assert 'rel="next" href="?page=2"' in first and 'rel="prev"' not in first
    second = api.get(f"/repos/{REPO}?page=2").text
    assert second.count('class="rev"') == 5
    assert 'rel="prev" href="?page=1"' in second and 'rel="next"' not in second
    kept = api.get(f"/repos/{REPO}?kind=generation&page=1").text
    assert 'rel="next"' not in kept  # 20 of the 55 have a stop-token change: one page

"""The Atom feeds parse as valid Atom (feedparser) and hold each revision's changes."""

from __future__ import annotations

import dataclasses

import feedparser
import pytest

from hubwatch.api import create_app
from hubwatch.models import Change, Severity
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.served import SCRIPT, fill
from tests.test_store import sha, snapshot


@pytest.fixture
def api(store: SqlStore) -> InProcess:
    fill(store)
    return InProcess(create_app(store, Settings()))


def parse(api: InProcess, url: str) -> feedparser.FeedParserDict:
    response = api.get(url)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/atom+xml")
    feed = feedparser.parse(response.content)
    assert not feed.bozo, feed.get("bozo_exception")
    assert feed.version == "atom10"
    return feed


def test_the_feed_of_everything_is_valid_atom(api: InProcess) -> None:
    feed = parse(api, "/feeds/all.atom")
    assert feed.feed.title == "hubwatch: all changes"
    assert [e.title for e in feed.entries] == [
        f"org/model {sha(3)[:12]}: 1 change(s), behavior",
        f"org/model {sha(2)[:12]}: 2 change(s), breaking",
    ]
    entry = feed.entries[1]
    assert entry.id.endswith(f"org/model:{sha(2)}")
    assert entry.link.endswith(f"/repos/org/model/revisions/{sha(2)}")
    assert "[breaking] generation.stop_tokens" in entry.summary


def test_upstream_markup_stays_text_in_the_feed(api: InProcess) -> None:
    entry = parse(api, "/feeds/org/model.atom").entries[0]
    assert SCRIPT in entry.summary
    assert entry.summary_detail.type == "text/plain"


def test_org_and_repo_feeds_hold_only_their_repos(api: InProcess) -> None:
    assert len(parse(api, "/feeds/org.atom").entries) == 2
    assert parse(api, "/feeds/other.atom").entries == []
    assert len(parse(api, "/feeds/org/model.atom").entries) == 2
    assert api.get("/feeds/org/unknown.atom").status_code == 404


def test_control_characters_from_upstream_do_not_break_the_xml(store: SqlStore) -> None:
    fill(store)
    odd = Change("card.license", Severity.INFO, "bell \x07 and escape \x1b here", "README.md")
    snap = dataclasses.replace(snapshot(4, {"a": b"1"}, parent=3), changes=(odd,), base=sha(3))
    store.add_revision("org/model", snap)
    feed = parse(InProcess(create_app(store, Settings())), "/feeds/org/model.atom")
    assert "bell \ufffd and escape \ufffd here" in feed.entries[0].summary

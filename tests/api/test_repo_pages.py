"""GET /api/v1/repos and the index a page at a time (issue 36), on SQLite and PostgreSQL."""

from __future__ import annotations

import re

import pytest

from hubwatch.api import create_app
from hubwatch.api.cursors import BadCursor, decode_cursor, encode_cursor
from hubwatch.api.routes.pages import INDEX_PAGE_SIZE
from hubwatch.models import RepoRef
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess

NEXT = re.compile(r'<([^>]+)>; rel="next"')


def track(store: SqlStore, count: int) -> list[str]:
    """`count` repos, their ids in an order unlike the one they were tracked in."""
    ids = [f"org{n % 7}/m-{n:04d}" for n in range(count)]
    for repo_id in ids:
        store.add_repo(RepoRef(repo_id))
    return ids


def walk(api: InProcess, url: str) -> tuple[list[str], int]:
    """Every repo id the pages from `url` give, following `Link: rel=next`; the pages read."""
    seen: list[str] = []
    pages = 0
    next_url: str | None = url
    while next_url:
        response = api.get(next_url)
        assert response.status_code == 200
        seen += [repo["repo_id"] for repo in response.json()]
        pages += 1
        found = NEXT.search(response.headers.get("link", ""))
        next_url = found.group(1) if found else None
    return seen, pages


def test_the_cursor_walk_gives_every_repo_exactly_once_in_order(store: SqlStore) -> None:
    ids = track(store, 23)
    api = InProcess(create_app(store, Settings()))
    seen, pages = walk(api, "/api/v1/repos?limit=5")
    assert seen == [repo.ref.repo_id for repo in store.list_repos()]
    assert sorted(seen) == sorted(ids) and len(set(seen)) == 23
    assert pages == 5


def test_a_last_page_that_is_full_links_no_empty_page(store: SqlStore) -> None:
    track(store, 10)
    api = InProcess(create_app(store, Settings()))
    _, pages = walk(api, "/api/v1/repos?limit=5")
    assert pages == 2


def test_the_default_page_is_a_hundred_repos(store: SqlStore) -> None:
    track(store, 101)
    api = InProcess(create_app(store, Settings()))
    first = api.get("/api/v1/repos")
    assert len(first.json()) == 100 and 'rel="next"' in first.headers["link"]
    assert walk(api, "/api/v1/repos")[1] == 2


def test_other_query_parameters_are_kept_in_the_next_link(store: SqlStore) -> None:
    track(store, 3)
    api = InProcess(create_app(store, Settings()))
    link = api.get("/api/v1/repos?limit=2").headers["link"]
    assert "limit=2" in link and "cursor=" in link


@pytest.mark.parametrize("cursor", ["!!", "AA", "=", "b3JnL20tMDAwMQ=", "x" * 601])
def test_a_cursor_never_given_is_refused(store: SqlStore, cursor: str) -> None:
    track(store, 2)
    api = InProcess(create_app(store, Settings()))
    assert api.get("/api/v1/repos", params={"cursor": cursor}).status_code == 422


@pytest.mark.parametrize("limit", ["0", "1001", "x"])
def test_a_limit_out_of_bounds_is_refused(store: SqlStore, limit: str) -> None:
    api = InProcess(create_app(store, Settings()))
    assert api.get("/api/v1/repos", params={"limit": limit}).status_code == 422


@pytest.mark.parametrize("key", ["org/m", "Org/Ünïcode", "a" * 200])
def test_a_cursor_carries_its_key_back(key: str) -> None:
    assert decode_cursor(encode_cursor(key)) == key


def test_a_cursor_with_nul_is_refused() -> None:
    with pytest.raises(BadCursor):
        decode_cursor(encode_cursor("org/a\x00"))


def test_the_index_pages_the_repos(store: SqlStore) -> None:
    track(store, INDEX_PAGE_SIZE + 3)
    api = InProcess(create_app(store, Settings()))
    everything = [repo.ref.repo_id for repo in store.list_repos()]
    first, second = api.get("/").text, api.get("/?page=2").text
    assert f'href="/repos/{everything[INDEX_PAGE_SIZE - 1]}"' in first
    assert f'href="/repos/{everything[INDEX_PAGE_SIZE]}"' not in first
    assert 'rel="next" href="?page=2"' in first and 'rel="prev"' not in first
    assert [repo for repo in everything if f'href="/repos/{repo}"' in second] == everything[-3:]
    assert 'rel="prev" href="?page=1"' in second and 'rel="next"' not in second


def test_an_index_page_past_the_end_says_so(store: SqlStore) -> None:
    track(store, 2)
    api = InProcess(create_app(store, Settings()))
    page = api.get("/?page=5")
    assert page.status_code == 200 and "No repos on page 5" in page.text

"""Repos a page at a time (issue 36): keyset pages on SqlStore and the DB-API reader alike."""

from __future__ import annotations

import pytest

from hubwatch.models import RepoRef
from hubwatch.store.dbapi import DbapiRepoListing
from hubwatch.store.repos import each_repo
from hubwatch.store.sql import SqlStore
from tests.test_store_dbapi import POLLED, populate

IDS = ["Org/delta", "org/alpha", "org/beta", "org/epsilon", "org/gamma"]


def ids(repos: list) -> list[str]:  # type: ignore[type-arg]
    return [repo.ref.repo_id for repo in repos]


def listed(store: SqlStore) -> list[str]:
    return ids(store.list_repos())


def test_pages_after_a_key_walk_every_repo_once_in_list_order(store: SqlStore) -> None:
    populate(store)
    walked, after = [], None
    while page := store.repos_page(after, 2):
        assert len(page) <= 2
        walked += ids(page)
        after = page[-1].ref.repo_id
    assert walked == listed(store)
    assert sorted(walked) == sorted(IDS)


def test_a_page_holds_the_same_values_as_the_listing(store: SqlStore) -> None:
    populate(store)
    assert store.repos_page(None, 100) == store.list_repos()


def test_offset_skips_within_the_first_page_only(store: SqlStore) -> None:
    populate(store)
    everything = listed(store)
    assert ids(store.repos_page(None, 2, 1)) == everything[1:3]
    assert ids(store.repos_page(everything[0], 2, 1)) == everything[2:4]
    assert store.repos_page(everything[-1], 10) == []


@pytest.mark.parametrize(
    ("offset", "limit"), [(0, None), (0, 3), (2, None), (1, 2), (4, 9), (9, 1)]
)
def test_each_repo_reads_offset_and_limit_in_pages(
    store: SqlStore, offset: int, limit: int | None
) -> None:
    populate(store)
    everything = listed(store)
    end = None if limit is None else offset + limit
    assert ids(list(each_repo(store, offset=offset, limit=limit, page=2))) == everything[offset:end]


def test_limit_zero_reads_nothing(store: SqlStore) -> None:
    populate(store)
    assert list(each_repo(store, limit=0)) == []


@pytest.mark.parametrize(("offset", "limit"), [(0, None), (0, 4), (1, None), (3, 2), (7, None)])
def test_dbapi_pages_are_the_stores(
    store: SqlStore, db_url: str, offset: int, limit: int | None
) -> None:
    populate(store)
    store.add_repo(RepoRef("zz/last"))
    pages = DbapiRepoListing(db_url).pages(offset=offset, limit=limit, size=2)
    assert pages is not None
    read = list(pages)
    assert all(0 < len(page) <= 2 for page in read)
    expected = list(each_repo(store, offset=offset, limit=limit))
    assert [repo for page in read for repo in page] == expected


def test_dbapi_pages_of_an_empty_store_are_none_at_all(store: SqlStore, db_url: str) -> None:
    pages = DbapiRepoListing(db_url).pages()
    assert pages is not None and list(pages) == []


def test_schedule_pages_walk_the_schedule_entries(store: SqlStore) -> None:
    populate(store)
    store.set_due({"org/beta": POLLED})
    walked, after = [], None
    while page := store.schedule_page(after, 2):
        walked += page
        after = page[-1].ref.repo_id
    assert walked == store.schedule_entries()
    assert [e.ref.repo_id for e in walked] == listed(store)
    assert next(e for e in walked if e.ref.repo_id == "org/beta").due_at == POLLED

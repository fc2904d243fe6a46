"""Atom feeds of recorded changes: everything, one org, one repo."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from hubwatch.api.deps import SettingsDep, StoreDep, require_reader
from hubwatch.api.filters import FilterDep, query_string
from hubwatch.models import ChangeFilter, FeedItem, validate_repo_id
from hubwatch.notify.feeds import atom_feed

router = APIRouter(tags=["feeds"], dependencies=[Depends(require_reader)])
ATOM_TYPE = "application/atom+xml; charset=utf-8"
TAG = "tag:hubwatch,2026"
_ATOM: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/atom+xml": {}}, "description": "An Atom feed"}
}


def _feed(
    request: Request,
    settings: SettingsDep,
    items: list[FeedItem],
    title: str,
    key: str,
    where: ChangeFilter,
) -> Response:
    # NOTE: links come from HUBWATCH_PUBLIC_URL, never from the request's Host header, which
    # the client (or anyone in front of a proxy) chooses.
    base = settings.resolved_public_url()
    query = query_string(where)  # a filtered feed is a feed of its own, with its own id
    body = atom_feed(
        items,
        title=title,
        feed_url=f"{base}{request.url.path}{query}",
        site_url=f"{base}/",
        feed_id=f"{TAG}:feed:{key}{query}",
    )
    return Response(body, media_type=ATOM_TYPE)


@router.get("/feeds/all.atom", response_class=Response, responses=_ATOM)
def all_feed(
    request: Request, store: StoreDep, settings: SettingsDep, where: FilterDep
) -> Response:
    """The latest changes of every tracked repo (`severity`, `kind`, `since` filter them)."""
    items = store.recent_changes(limit=100, where=where)
    return _feed(request, settings, items, "hubwatch: all changes", "all", where)


@router.get("/feeds/{org}.atom", response_class=Response, responses=_ATOM)
def org_feed(
    org: str, request: Request, store: StoreDep, settings: SettingsDep, where: FilterDep
) -> Response:
    """The latest changes of one org's repos (`severity`, `kind`, `since` filter them)."""
    validate_repo_id(f"{org}/x")
    items = store.recent_changes(org=org, limit=100, where=where)
    return _feed(request, settings, items, f"hubwatch: {org}", f"org:{org}", where)


@router.get("/feeds/{org}/{name}.atom", response_class=Response, responses=_ATOM)
def repo_feed(
    org: str,
    name: str,
    request: Request,
    store: StoreDep,
    settings: SettingsDep,
    where: FilterDep,
) -> Response:
    """The latest changes of one repo (`severity`, `kind`, `since` filter them)."""
    repo_id = validate_repo_id(f"{org}/{name}")
    store.get_repo(repo_id)  # NotTracked: 404
    items = store.recent_changes(repo_id=repo_id, limit=100, where=where)
    return _feed(request, settings, items, f"hubwatch: {repo_id}", f"repo:{repo_id}", where)

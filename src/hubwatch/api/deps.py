"""What every route depends on: the store, the settings, and the bearer-token checks.

Each is `async def`: none does I/O, and FastAPI runs a sync dependency in the thread pool, a
hop per dependency per request (issue 15).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from typing import Annotated, ParamSpec, TypeVar

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from hubwatch.diff import Differ
from hubwatch.models import validate_repo_id
from hubwatch.settings import Settings
from hubwatch.store.base import Store
from hubwatch.store.browse import BrowseStore

_bearer = HTTPBearer(auto_error=False, description="HUBWATCH_API_TOKEN")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


async def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_differs(request: Request) -> Mapping[str, Differ]:
    differs: Mapping[str, Differ] = request.app.state.differs
    return differs


StoreDep = Annotated[Store, Depends(get_store)]
DiffersDep = Annotated[Mapping[str, Differ], Depends(get_differs)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


_P = ParamSpec("_P")
_T = TypeVar("_T")


async def browse(
    store: BrowseStore, read: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """`read(*args, **kwargs)`, a badge's or a page's reads of `store`, made where they cost
    least: on the event loop when the store's reads are local (SQLite), else in a worker
    thread (a network round trip must not stop the loop).

    NOTE: on the 2-core VM a hop to the thread pool and back cost 1.3-1.7 ms of CPU per request
    (the GIL handed between the loop and the worker), against 0.3-0.6 ms for the read itself:
    a history page at 0.9-1.0 ms of server CPU inline against 2.3-2.7 ms (issue 15)."""
    if store.reads_are_local:
        return read(*args, **kwargs)
    return await run_in_threadpool(read, *args, **kwargs)


def _check(settings: Settings, credentials: HTTPAuthorizationCredentials | None) -> None:
    if settings.api_token is None:
        raise HTTPException(403, "writes are disabled: no HUBWATCH_API_TOKEN is set")
    expected = settings.api_token.get_secret_value().encode()
    given = credentials.credentials.encode() if credentials else b""
    if not hmac.compare_digest(given, expected):
        raise HTTPException(
            401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"}
        )


async def require_writer(settings: SettingsDep, credentials: Credentials) -> None:
    """Writes need the bearer token, compared in constant time."""
    _check(settings, credentials)


async def require_reader(settings: SettingsDep, credentials: Credentials) -> None:
    """Reads are public unless HUBWATCH_API_PUBLIC_READS is false."""
    if not settings.api_public_reads:
        _check(settings, credentials)


def repo_path(org: str, name: str) -> str:
    """`org/name` from the path, validated (InvalidRepoId answers 400)."""
    return validate_repo_id(f"{org}/{name}")

"""What every route depends on: the store, the settings, and the bearer-token checks.

Each is `async def`: none does I/O, and FastAPI runs a sync dependency in the thread pool, a
hop per dependency per request (issue 15).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from hubwatch.diff import Differ
from hubwatch.models import validate_repo_id
from hubwatch.settings import Settings
from hubwatch.store.base import Store

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

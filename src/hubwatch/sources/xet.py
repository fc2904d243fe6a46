"""Xet reconstructions from the Hub's CAS server: a read token per revision, then the terms.

Shapes from the Hub's Xet specification (huggingface/hub-docs, docs/xet/): auth.md (the token
endpoint `/api/models/{repo}/xet-read-token/{revision}` answers `{accessToken, exp, casUrl}`;
huggingface_hub reads the same from the X-Xet-Cas-Url, X-Xet-Access-Token and
X-Xet-Token-Expiration headers, so either is taken) and api.md (`GET /v2/reconstructions/{file_id}`
on the CAS URL, bearer token, JSON terms). Only the terms are asked for: never a xorb, never a byte
of the file.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2

from hubwatch import metrics
from hubwatch.caching import BoundedCache
from hubwatch.errors import (
    AuthError,
    ContentTooLarge,
    ContentUnavailable,
    RateLimited,
    SourceError,
    SourceTimedOut,
    SourceUnavailable,
    UnexpectedResponse,
)
from hubwatch.models import CommitSha, RepoRef
from hubwatch.outbound import client
from hubwatch.outbound.client import paced
from hubwatch.sources.pacing import Pacer, bucket_of

MAX_TERMS_BYTES = 16 * 1024 * 1024
"""A reconstruction's JSON: about 100 bytes a term, a term per run of shared chunks; a 5 GB
shard re-uploaded whole is one term per xorb (64 MiB), one changed in places a few thousand."""
REFRESH_MARGIN_S = 30.0
"""auth.md: refresh a token 30 seconds before its `exp`."""
CACHED_TERMS = 4096
"""Reconstructions kept by Xet hash: a file's terms never change, so the old side of the next
re-upload is usually here already (one request per changed file, not two)."""


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    headers: httpx2.Headers
    body: bytes


@dataclass(frozen=True, slots=True)
class XetToken:
    """A read token for one revision of one repo."""

    cas_url: str
    access_token: str
    expires: float
    """Unix time."""


def parse_token(body: Any, headers: Mapping[str, str]) -> XetToken | None:
    """The token in a token endpoint's answer: its JSON body (auth.md), else its headers."""
    if isinstance(body, dict):
        url, token, exp = body.get("casUrl"), body.get("accessToken"), body.get("exp")
    else:
        url, token = headers.get("X-Xet-Cas-Url"), headers.get("X-Xet-Access-Token")
        exp = headers.get("X-Xet-Token-Expiration")
    try:
        expires = float(exp) if isinstance(exp, int | float | str) else None
    except ValueError:
        expires = None
    if not isinstance(url, str) or not isinstance(token, str) or expires is None:
        return None
    if urlsplit(url).scheme not in ("http", "https"):
        return None
    return XetToken(url.rstrip("/"), token, expires)


class XetReader:
    """Asks the CAS server for reconstructions, paced and counted as the Hub's other requests."""

    def __init__(
        self,
        endpoint: str,
        hub_headers: Callable[[], dict[str, str]],
        timeout_s: float,
        pacer: Pacer,
        *,
        transport: httpx2.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._endpoint = endpoint.rstrip("/")
        self._hub_headers = hub_headers
        self._clock = clock
        self._timeout_s = timeout_s
        self._tokens: dict[tuple[str, str], XetToken] = {}
        self._terms: BoundedCache[bytes] = BoundedCache(CACHED_TERMS)
        self._lock = threading.Lock()

        def learn(response: httpx2.Response) -> None:
            pacer.after(response.headers.get("RateLimit"), response.headers.get("RateLimit-Policy"))
            bucket = bucket_of(response.request.url.path) or "other"
            metrics.HUB_REQUESTS.labels(bucket, str(response.status_code)).inc()

        self._client = client.client(
            timeout_s, before=[pacer.before_request], after=[learn], transport=transport
        )

    def reconstruction(self, repo: RepoRef, sha: CommitSha, xet_hash: str) -> bytes:
        """The terms' JSON of `xet_hash`; from memory when it was asked for before."""
        cached = self._terms.get(xet_hash)
        if cached is not None:
            return cached
        token = self._token(repo, sha, fresh=False)
        response = self._cas(repo, token, xet_hash)
        if response.status == 401:  # expired early, or revoked: one new token, once
            response = self._cas(repo, self._token(repo, sha, fresh=True), xet_hash)
        body = self._body(repo, response, f"reconstruction of {xet_hash[:12]}")
        self._terms.put(xet_hash, body)
        return body

    def close(self) -> None:
        """Close the connections; the tokens go with them (the reconstructions stay)."""
        self._client.close()
        with self._lock:
            self._tokens.clear()

    def _token(self, repo: RepoRef, sha: CommitSha, *, fresh: bool) -> XetToken:
        key = (repo.repo_id, sha)
        with self._lock:
            held = self._tokens.get(key)
        if held is not None and not fresh and held.expires - REFRESH_MARGIN_S > self._clock():
            return held
        url = f"{self._endpoint}/api/models/{repo.repo_id}/xet-read-token/{quote(sha, safe='')}"
        response = self._send(repo, url, self._hub_headers())
        raw = self._body(repo, response, "xet read token")
        try:
            body: Any = json.loads(raw) if raw.strip() else None
        except ValueError:  # an empty or other body: the headers may still say it
            body = None
        token = parse_token(body, response.headers)
        if token is None:
            raise UnexpectedResponse(f"{repo.repo_id}: the Hub sent no usable Xet read token")
        with self._lock:
            self._tokens[key] = token
        return token

    def _cas(self, repo: RepoRef, token: XetToken, xet_hash: str) -> _Answer:
        url = f"{token.cas_url}/v2/reconstructions/{xet_hash}"
        return self._send(repo, url, {"Authorization": f"Bearer {token.access_token}"})

    def _send(self, repo: RepoRef, url: str, headers: dict[str, str]) -> _Answer:
        try:
            with self._client.stream("GET", url, headers=headers) as response:
                data = bytearray()
                for chunk in paced(response.iter_bytes(), self._timeout_s):
                    data += chunk
                    if len(data) > MAX_TERMS_BYTES:
                        raise ContentTooLarge(f"{repo.repo_id}: a Xet answer over the cap")
                return _Answer(response.status_code, response.headers, bytes(data))
        except httpx2.TimeoutException as exc:
            raise SourceTimedOut(f"{repo.repo_id}: the Xet service did not answer") from exc
        except httpx2.HTTPError as exc:
            name = type(exc).__name__
            raise SourceUnavailable(
                f"{repo.repo_id}: cannot reach the Xet service ({name})"
            ) from exc

    def _body(self, repo: RepoRef, response: _Answer, what: str) -> bytes:
        status = response.status
        if status == 200:
            return response.body
        error: SourceError
        if status == 429:
            error = RateLimited(f"{repo.repo_id}: {what}: rate limited (429)", None)
        elif status in (401, 403):
            error = AuthError(f"{repo.repo_id}: {what}: refused ({status})")
        elif status >= 500 or status == 408:
            error = SourceUnavailable(f"{repo.repo_id}: {what}: the server answered {status}")
        else:  # 404: no such file on the CAS server; 400, 416: not ours to retry
            error = ContentUnavailable(f"{repo.repo_id}: {what}: the server answered {status}")
        raise error

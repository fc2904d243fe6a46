"""HubSource's HTTP plumbing: the shared client, paged listings and the Hub's errors mapped.

With hub.py, the only modules that import huggingface_hub (its types stay in these two).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import httpx2
import huggingface_hub
import structlog
from huggingface_hub import errors as hf_errors
from huggingface_hub.utils._http import hf_raise_for_status, hf_request_event_hook

from hubwatch import metrics
from hubwatch.errors import (
    AuthError,
    ContentUnavailable,
    EntryNotFound,
    RateLimited,
    RepoDisabled,
    RepoGated,
    RepoHidden,
    RepoNotFound,
    RevisionNotFound,
    SourceError,
    SourceOffline,
    SourceTimedOut,
    SourceUnavailable,
    UnexpectedResponse,
)
from hubwatch.models import RepoRef
from hubwatch.models.credentials import redact_text
from hubwatch.outbound import client
from hubwatch.sources.pacing import Pacer, bucket_of

AGENT_REGISTRY = "/api/agent-harnesses"
"""NOTE: huggingface_hub's User-Agent builder (utils/_headers.py `_http_user_agent`, behind every
`build_hf_headers`) asks utils/_detect_agent.py which AI agent runs the process, and that fetches
this registry from `huggingface_hub.constants.ENDPOINT` (HF_ENDPOINT, or huggingface.co: not
hubwatch's endpoint) once per process, without hubwatch's User-Agent, and caches it under HF_HOME.
Telemetry hubwatch does not send: refused before it leaves (the detection reads a failure as "no
agent"; the real trace, tests/data/hub-traces/ref-download-plain.json exchange 1, shows it)."""
_CDN_REFUSALS = range(400, 500)
"""What a CDN answers that concerns the one file (an expired signed URL: 403), except below."""
_CDN_OTHERWISE = (404, 408, 416, 429)


def configure_session(
    timeout_s: float, pacer: Pacer, transport: httpx2.BaseTransport | None = None
) -> None:
    """Give huggingface_hub's shared client a timeout (its default waits forever) that no call
    can lift (`outbound.client.bounded`: `HfApi.model_info` passes `timeout=None`), hubwatch's
    User-Agent on every request, and pacing.

    `transport`: where requests go instead of the network (the contract tests replay recorded
    Hub answers through it).
    """

    def no_telemetry(request: httpx2.Request) -> None:
        if request.url.path == AGENT_REGISTRY:
            raise httpx2.RequestError("hubwatch sends no telemetry", request=request)

    def learn(response: httpx2.Response) -> None:
        pacer.after(response.headers.get("RateLimit"), response.headers.get("RateLimit-Policy"))
        bucket = bucket_of(response.request.url.path) or "other"
        metrics.HUB_REQUESTS.labels(bucket, str(response.status_code)).inc()
        if response.status_code >= 400:
            # the Hub's own id of a failed request, for the log lines that follow (retries)
            request_id = response.headers.get("X-Request-Id")
            structlog.contextvars.bind_contextvars(hub_request_id=request_id)

    def factory() -> httpx2.Client:
        return client.client(
            timeout_s,
            before=[no_telemetry, hf_request_event_hook, pacer.before_request],
            after=[learn],
            follow_redirects=True,
            transport=transport,
        )

    huggingface_hub.set_client_factory(factory)


def pages(url: str, params: dict[str, Any], headers: dict[str, str]) -> Iterator[list[Any]]:
    """Each page of a listing the Hub pages with Link headers, fetched as the caller asks.

    NOTE: not huggingface_hub's `paginate`: its `http_backoff` retries a 5xx five times, with
    sleeps of up to 8 s, inside one call (utils/_http.py, _DEFAULT_RETRY_ON_STATUS_CODES).
    Here a failed page is the caller's: RetryPolicy retries it, and discovery keeps what the
    complete pages before it said (the Hub's deep /api/models pages can answer 504).
    """
    for response in _linked(url, params, headers):
        hf_raise_for_status(response)
        page = response.json()
        if not isinstance(page, list):
            raise UnexpectedResponse(f"{response.url.path}: a page that is not a list")
        yield page


def _linked(url: str, params: dict[str, Any], headers: dict[str, str]) -> Iterator[Any]:
    """Each answer of a listing the Hub pages with Link headers, as they come: the next page is
    asked for once the caller wants it, and never after the caller stops."""
    next_url: str | None = url
    query: dict[str, Any] | None = params
    while next_url:
        response = huggingface_hub.get_session().get(next_url, params=query, headers=headers)
        yield response
        next_url = response.links.get("next", {}).get("url")
        query = None  # the next link carries the query


_NO_ROUTE = (400, 404, 405, 501)
"""What a Hub without the endpoint (or one that takes no such query) answers."""


def compare_answer(url: str, headers: dict[str, str]) -> tuple[bool, Any]:
    """Fetch a compare answer: (True, its JSON) where it came (a list's pages followed); (False,
    None) where the Hub has no such endpoint (404 without an `X-Error-Code`, 400, 405, 501) or
    sends no JSON; (True, None) for any other refusal (the repo's: gated, a revision not
    found), which the tree listing then meets and reports. A transient failure (429, 5xx, a
    dropped connection) raises, as a tree listing's would."""
    items: list[Any] = []
    for number, response in enumerate(_linked(url, {"raw": "true"}, headers)):  # the form
        status = response.status_code
        if status == 429 or status >= 500 or status == 408:
            hf_raise_for_status(response)
        if status >= 400:
            coded = response.headers.get("X-Error-Code") is not None
            return (status == 404 and coded) or status not in _NO_ROUTE, None
        try:
            page = response.json()
        except ValueError:
            return False, None
        if not isinstance(page, list):
            return (True, page) if number == 0 else (False, None)
        items += page
    return True, items


def cdn_refusal(response: httpx2.Response, endpoint: str, path: str) -> SourceError | None:
    """The error of a download that a host other than the Hub (the CDN it redirected to)
    refused; that file's alone, never the repo's. None when the Hub itself answered."""
    if str(response.url).startswith(endpoint.rstrip("/") + "/"):
        return None
    status = response.status_code
    if status in _CDN_REFUSALS and status not in _CDN_OTHERWISE:
        return ContentUnavailable(f"{path}: the CDN refused the download ({status})")
    return None


def status_of(exc: Exception) -> int | None:
    """The HTTP status of a huggingface_hub error, when it has one."""
    response = getattr(exc, "response", None)
    return response.status_code if isinstance(response, httpx2.Response) else None


def retry_after(response: Any) -> float | None:
    value = response.headers.get("Retry-After") if response is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def translate(
    repo: RepoRef, exc: Exception, endpoint: str, reading: str | None = None
) -> Exception:
    """Map huggingface_hub / httpx2 failures onto hubwatch's error tree.

    `reading` names the file being downloaded: a bare 404 there (the CDN lost an LFS object)
    concerns that file, not the repo. A 401 with a token configured is HubSource's to map.
    `endpoint`: the Hub asked, named when it cannot be reached.
    """
    name = repo.repo_id
    if isinstance(exc, SourceError):
        return exc
    if isinstance(exc, hf_errors.OfflineModeIsEnabled):
        # raised by huggingface_hub's request hook before anything is sent (utils/_http.py)
        offline = SourceOffline(
            f"{name}: cannot reach the Hub: offline mode is on (HF_HUB_OFFLINE)"
        )
        offline.next_step = OFFLINE_NEXT_STEP
        return offline
    if isinstance(exc, hf_errors.GatedRepoError):
        return RepoGated(f"{name}: gated repo; the token has not been granted access")
    if isinstance(exc, hf_errors.DisabledRepoError):
        return RepoDisabled(f"{name}: the repo has been disabled on the Hub")
    if isinstance(exc, hf_errors.RevisionNotFoundError):
        return RevisionNotFound(f"{name}: revision not found")
    if isinstance(exc, hf_errors.RemoteEntryNotFoundError | hf_errors.EntryNotFoundError):
        return EntryNotFound(f"{name}: file not found")
    if isinstance(exc, hf_errors.RepositoryNotFoundError):
        # NOTE: not "deleted": the Hub answers a private repo this caller cannot see alike
        return RepoHidden(f"{name}: the Hub does not show the repo (deleted, or private to us)")
    if isinstance(exc, hf_errors.HfHubHTTPError):
        return _http_error(name, exc.response, reading)
    if isinstance(exc, httpx2.HTTPError):
        return unreachable(name, exc, endpoint)
    if isinstance(exc, ValueError | KeyError | TypeError):
        # a body that is not JSON (json.JSONDecodeError is a ValueError) or JSON of another
        # shape, or a bug here: asking again gets the same answer, so it is not retried
        kind = type(exc).__name__
        return UnexpectedResponse(f"{name}: the Hub sent a malformed response ({kind})")
    return exc


UNREACHABLE_NEXT_STEP = (
    "behind a proxy, set HTTPS_PROXY (or HTTP_PROXY); for a mirror of the Hub, set HF_ENDPOINT; "
    "to use only what is stored, set HF_HUB_OFFLINE=1; to see hubwatch without the Hub, run "
    "`hubwatch demo`"
)
"""What the CLI prints after an unreachable Hub's error (issue 32: a newcomer behind a proxy saw
"cannot reach the Hub (ConnectError)" and nothing to try)."""
OFFLINE_NEXT_STEP = "unset HF_HUB_OFFLINE to reach the Hub, or run `hubwatch demo`"
_REASON_CHARS = 120


def unreachable(name: str, exc: httpx2.HTTPError, endpoint: str) -> SourceUnavailable:
    """The error of a Hub that could not be reached (refused, DNS, proxy, reset, no answer),
    naming the endpoint and why, with what to try next."""
    kind = type(exc).__name__
    # NOTE: a proxy's URL in the reason may carry its credentials
    reason = redact_text(" ".join(str(exc).split()))[:_REASON_CHARS]
    why = f"{kind}: {reason}" if reason else kind
    where = endpoint.rstrip("/")
    parts = urlsplit(where)
    proxy = getproxies().get(parts.scheme)
    if proxy and not proxy_bypass(parts.hostname or ""):
        where += f" through the proxy {redact_text(proxy)}"
    error: SourceUnavailable
    if isinstance(exc, httpx2.TimeoutException):
        error = SourceTimedOut(f"{name}: cannot reach the Hub at {where} (no answer: {why})")
    else:
        # resets, truncated bodies (RemoteProtocolError), refused connections, DNS, proxies
        error = SourceUnavailable(f"{name}: cannot reach the Hub at {where} ({why})")
    error.next_step = UNREACHABLE_NEXT_STEP
    return error


def _http_error(name: str, response: Any, reading: str | None) -> SourceError:
    status = response.status_code if response is not None else 0
    if status == 429:
        return RateLimited(f"{name}: rate limited by the Hub (429)", retry_after(response))
    if status in (401, 403):
        return AuthError(f"{name}: the Hub refused the request ({status})")
    if status == 404 and reading is not None:
        return EntryNotFound(f"{name}: content of {reading} not found (404)")
    if status == 404:
        return RepoNotFound(f"{name}: not found on the Hub (404)")
    if status >= 500 or status == 408:
        return SourceUnavailable(f"{name}: the Hub answered {status}")
    return SourceError(f"{name}: the Hub answered {status}")

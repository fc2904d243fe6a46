"""OsvService: advisories from the OSV.dev REST API (querybatch, then vulns by id), over httpx2."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx2
import structlog

from hubwatch.advisories.matching import Verdict, dedupe, evaluate, to_match, withdrawn
from hubwatch.advisories.records import Record
from hubwatch.advisories.service import AdvisoryService
from hubwatch.errors import OsvServiceError, UnsafeContent
from hubwatch.formats.json import loads_bounded
from hubwatch.models import AdvisoryMatch, Dependency, MatchStatus
from hubwatch.outbound import client as outbound

log = structlog.get_logger(__name__)

DEFAULT_URL = "https://api.osv.dev"
MAX_BATCH = 1000
"""OSV.dev refuses a querybatch of more than 1000 queries."""
MAX_PAGES = 100
"""Pages followed for one query before giving up: a server that never stops paging."""

_Key = tuple[str, str, str]


class OsvService(AdvisoryService):
    """Asks OSV.dev which advisories affect each pinned dependency.

    One `POST /v1/querybatch` per 1000 dependencies, following every query's
    `next_page_token` (a page may carry only a token), then `GET /v1/vulns/{id}` for each
    advisory not seen before. Query answers and records are cached for the life of the
    service. 429 (honouring Retry-After), 5xx and transport errors are retried with capped
    exponential backoff; anything that is not the API's JSON is an OsvServiceError.
    """

    name = "osv"

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        timeout_s: float = 30.0,
        retries: int = 5,
        max_wait_s: float = 60.0,
        client: httpx2.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        batch_size: int = MAX_BATCH,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._client = client or outbound.client(timeout_s)
        self._retries = retries
        self._max_wait_s = max_wait_s
        self._sleep = sleep
        self._batch_size = min(batch_size, MAX_BATCH)
        self._ids: dict[_Key, list[str]] = {}
        self._records: dict[str, Record] = {}

    def close(self) -> None:
        self._client.close()

    def query(self, dependency: Dependency) -> list[AdvisoryMatch]:
        return self.query_all([dependency])[dependency]

    def query_all(
        self, dependencies: Sequence[Dependency]
    ) -> dict[Dependency, list[AdvisoryMatch]]:
        keys = {d: _key(d) for d in dependencies if d.version is not None}
        todo = list(dict.fromkeys(k for k in keys.values() if k not in self._ids))
        for start in range(0, len(todo), self._batch_size):
            self._querybatch(todo[start : start + self._batch_size])
        answers: dict[Dependency, list[AdvisoryMatch]] = {}
        for dependency in dependencies:
            key = keys.get(dependency)
            ids = self._ids.get(key, []) if key else []
            records = [self._vuln(i) for i in ids]
            # a record withdrawn since OSV.dev indexed it is no advisory (OSV schema `withdrawn`)
            answers[dependency] = dedupe(
                [self._match(r, dependency) for r in records if not withdrawn(r)]
            )
        return answers

    # -- internals --------------------------------------------------------------------------

    def _querybatch(self, keys: list[_Key]) -> None:
        found: dict[_Key, list[str]] = {key: [] for key in keys}
        pending: list[tuple[_Key, str | None]] = [(key, None) for key in keys]
        pages = 0
        while pending:
            pages += 1
            if pages > MAX_PAGES:
                raise OsvServiceError(f"OSV.dev kept paging after {MAX_PAGES} pages; giving up")
            queries = []
            for (ecosystem, name, version), token in pending:
                query: dict[str, Any] = {
                    "package": {"ecosystem": ecosystem, "name": name},
                    "version": version,
                }
                if token is not None:
                    query["page_token"] = token
                queries.append(query)
            data = self._request("POST", "/v1/querybatch", {"queries": queries})
            results = data.get("results") if isinstance(data, dict) else None
            if not isinstance(results, list) or len(results) != len(pending):
                raise OsvServiceError(
                    "OSV.dev querybatch answered without one result per query (malformed body)"
                )
            following: list[tuple[_Key, str | None]] = []
            for (key, _), result in zip(pending, results, strict=True):
                if not isinstance(result, dict):
                    raise OsvServiceError("OSV.dev querybatch result is not an object")
                vulns = result.get("vulns", [])
                if not isinstance(vulns, list):
                    raise OsvServiceError("OSV.dev querybatch `vulns` is not a list")
                for vuln in vulns:
                    if not isinstance(vuln, dict) or not isinstance(vuln.get("id"), str):
                        raise OsvServiceError("OSV.dev querybatch returned a vuln without an id")
                    found[key].append(vuln["id"])
                token = result.get("next_page_token")
                if isinstance(token, str) and token:
                    following.append((key, token))
            pending = following
        for key, ids in found.items():
            self._ids[key] = list(dict.fromkeys(ids))

    def _vuln(self, advisory_id: str) -> Record:
        record = self._records.get(advisory_id)
        if record is None:
            data = self._request("GET", f"/v1/vulns/{advisory_id}", None)
            if not isinstance(data, dict) or data.get("id") != advisory_id:
                raise OsvServiceError(f"OSV.dev answered something else for {advisory_id}")
            record = self._records[advisory_id] = data
        return record

    def _match(self, record: Record, dependency: Dependency) -> AdvisoryMatch:
        assert dependency.version is not None
        result = evaluate(record, dependency.ecosystem, dependency.name, dependency.version)
        if result.verdict is Verdict.AFFECTED:
            reason = result.reason
        else:  # OSV.dev knows best (it also reads GIT ranges); say whose word it is
            reason = f"OSV.dev reports {dependency.name} {dependency.version} affected"
        return to_match(record, dependency, MatchStatus.AFFECTED, f"{reason} ({dependency.reason})")

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        url = f"{self._base}{path}"
        attempt = 0
        while True:
            attempt += 1
            wait: float | None = None
            try:
                response = self._client.request(method, url, json=body)
            except httpx2.HTTPError as exc:
                problem = f"{method} {path}: {type(exc).__name__}: {exc}"
                wait = self._backoff(attempt)
            else:
                status = response.status_code
                problem = f"{method} {path}: HTTP {status}"
                if status == 429:
                    wait = self._retry_after(response) or self._backoff(attempt)
                elif status >= 500:
                    wait = self._backoff(attempt)
                elif status != 200:
                    raise OsvServiceError(f"OSV.dev refused {problem}: {response.text[:200]}")
                else:
                    try:
                        return loads_bounded(response.content)
                    except UnsafeContent:
                        raise OsvServiceError(
                            f"OSV.dev answered {method} {path} with a body that is not JSON"
                        ) from None
            if attempt > self._retries:
                raise OsvServiceError(
                    f"OSV.dev unavailable after {attempt} tries: {problem}", transient=True
                )
            log.warning("osv_retry", what=problem, attempt=attempt, wait_s=round(wait, 2))
            self._sleep(wait)

    def _backoff(self, attempt: int) -> float:
        # "full jitter", as tracker/retry.py
        return random.uniform(0, min(self._max_wait_s, 2.0 ** (attempt - 1)))

    def _retry_after(self, response: httpx2.Response) -> float | None:
        try:
            return min(self._max_wait_s, float(response.headers.get("Retry-After", "")))
        except ValueError:
            return None


def _key(dependency: Dependency) -> _Key:
    assert dependency.version is not None
    return dependency.ecosystem, dependency.name, dependency.version

"""HubSource: a RevisionSource on huggingface_hub (hub.py and hubhttp.py alone import it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import quote

import httpx2
import huggingface_hub
import structlog
from huggingface_hub import HfApi, hf_hub_url
from huggingface_hub.utils._headers import build_hf_headers
from huggingface_hub.utils._http import hf_raise_for_status

from hubwatch import __version__, metrics
from hubwatch.errors import (
    ContentTooLarge,
    RepoGated,
    RevisionNotFound,
    SourceUnavailable,
    TokenRefused,
)
from hubwatch.models import CommitInfo, CommitSha, FileEntry, RepoRef, RepoStatus
from hubwatch.models.refs import GitRef, RefKind
from hubwatch.outbound.client import paced
from hubwatch.sources.base import (
    FileChange,
    RevisionSource,
)
from hubwatch.sources.hubanswers import (
    commit_infos,
    file_changes,
    file_entries,
    identity_of,
)
from hubwatch.sources.hubhttp import (
    cdn_refusal,
    compare_answer,
    configure_session,
    pages,
    status_of,
    translate,
)
from hubwatch.sources.hublistings import HubListings
from hubwatch.sources.pacing import Pacer
from hubwatch.sources.xet import XetReader

T = TypeVar("T")
_LIBRARY = "hubwatch"
"""With __version__, the User-Agent's first part: `hubwatch/0.1.0; hf_hub/…` (huggingface_hub's
utils/_headers.py `_http_user_agent` writes "None" where no version is given)."""
log = structlog.get_logger(__name__)
# NOTE: huggingface.js's listCommits (packages/hub/src/lib/list-commits.ts) sends `limit`:
# "Defaults to 100. Can be set to 1000."; huggingface_hub 2.4 sends none (the Hub's default).
COMMITS_PAGE = 1000
SINCE_PAGE = 50
"""The first page down to the stored head: the Hub's default page, which holds a poll's few."""
COMPARE_RETRY_S = 3600.0
"""How long a Hub that answered as one without the compare endpoint is not asked again."""


class HubSource(RevisionSource, HubListings):
    """Reads model repos from the Hugging Face Hub (or a server speaking its API)."""

    def __init__(
        self,
        endpoint: str,
        token: str | None = None,
        timeout_s: float = 30.0,
        pacer: Pacer | None = None,
        *,
        token_check_s: float = 600.0,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self._endpoint = endpoint.rstrip("/")
        # token=False: never fall back to a token cached on disk by `hf auth login`; the
        # token is hubwatch's setting (HF_TOKEN), so what we use is what the user configured.
        self._token: str | bool = token or False
        self._api = HfApi(
            endpoint=self._endpoint,
            token=self._token,
            library_name=_LIBRARY,
            library_version=__version__,
        )
        self.pacer = pacer or Pacer()
        self._timeout_s = timeout_s
        self._token_check_s = token_check_s
        """How long the whoami verdict on a refused token holds: about one poll cycle."""
        self._verdict: tuple[float, bool | None] | None = None
        self._verdict_lock = threading.Lock()
        self._no_compare_until = 0.0
        configure_session(timeout_s, self.pacer, transport)
        self._xet = XetReader(self._endpoint, self._headers, timeout_s, self.pacer)

    # -- RevisionSource ---------------------------------------------------------------------

    def list_commits(self, repo: RepoRef) -> list[CommitInfo]:
        return self._commits(repo, None)

    def list_commits_since(self, repo: RepoRef, stop: CommitSha) -> list[CommitInfo]:
        return self._commits(repo, stop)

    def status(self, repo: RepoRef) -> RepoStatus:
        info = self._call(repo, lambda: self._api.model_info(repo.repo_id, revision=repo.branch))
        if not info.sha:
            raise SourceUnavailable(f"{repo.repo_id}: the Hub returned no commit sha")
        gated = info.gated not in (None, False)
        return RepoStatus(
            head=CommitSha(info.sha),
            repo_id=info.id or repo.repo_id,
            gated=gated,
            disabled=bool(info.disabled),
            private=bool(info.private),
            identity=identity_of(info),
        )

    def resolve(self, repo: RepoRef, rev: str) -> CommitSha:
        info = self._call(repo, lambda: self._api.model_info(repo.repo_id, revision=rev))
        if not info.sha:
            raise RevisionNotFound(f"{repo.repo_id}: revision {rev!r} not found")
        return CommitSha(info.sha)

    def list_files(self, repo: RepoRef, sha: CommitSha) -> list[FileEntry]:
        # NOTE: not HfApi.list_repo_tree: its pages go through http_backoff, which retries a
        # timeout or a 5xx five times inside one call (utils/_pagination.py), under the
        # RetryPolicy's own retries: a black-holed Hub would cost 36 timeouts, not 6.
        url = f"{self._endpoint}/api/models/{repo.repo_id}/tree/{quote(sha, safe='')}"
        params = {"recursive": True, "expand": False}  # what list_repo_tree sends

        def listing() -> list[FileEntry]:
            return [
                entry
                for page in pages(url, params, self._headers())
                for entry in file_entries(page)
            ]

        return self._call(repo, listing)

    def changed_files(
        self, repo: RepoRef, parent: CommitSha, sha: CommitSha
    ) -> list[FileChange] | None:
        """The compare endpoint (`GET /api/models/{id}/compare/{parent}..{sha}?raw=true`): one
        api-quota request for the paths that changed, with their new blob ids and sizes, in
        place of a tree listing of the whole revision (hubanswers.file_changes: the shape).

        None where this Hub has no such endpoint (then none is asked for COMPARE_RETRY_S), or
        refused this one (the tree listing says why).
        """
        if time.monotonic() < self._no_compare_until:
            return None
        revs = f"{quote(parent, safe='')}..{quote(sha, safe='')}"
        url = f"{self._endpoint}/api/models/{repo.repo_id}/compare/{revs}"
        found, body = self._call(repo, lambda: compare_answer(url, self._headers()))
        changes = file_changes(body) if body is not None else None
        if not found or (body is not None and changes is None):
            self._no_compare_until = time.monotonic() + COMPARE_RETRY_S
            log.info("hub_compare_unavailable", endpoint=self._endpoint, retry_s=COMPARE_RETRY_S)
        return changes

    def read_file(self, repo: RepoRef, sha: CommitSha, path: str, max_bytes: int) -> bytes:
        with self._get(repo, sha, path, {}) as response:
            announced = response.headers.get("Content-Length")
            if announced is not None and announced.isdigit() and int(announced) > max_bytes:
                raise ContentTooLarge(f"{path}: {announced} bytes, over the cap of {max_bytes}")
            data = bytearray()
            for chunk in paced(response.iter_bytes(), self._timeout_s):
                data += chunk
                if len(data) > max_bytes:  # a server may lie about or omit Content-Length
                    raise ContentTooLarge(f"{path}: more than {max_bytes} bytes, over the cap")
            return bytes(data)

    def read_range(
        self, repo: RepoRef, sha: CommitSha, path: str, start: int, length: int
    ) -> bytes:
        if length <= 0:
            return b""
        headers = {"Range": f"bytes={start}-{start + length - 1}"}
        with self._get(repo, sha, path, headers) as response:
            skip = start if response.status_code == 200 else 0  # range ignored: skip to start
            data = bytearray()
            for chunk in paced(response.iter_bytes(), self._timeout_s):
                data += chunk
                if len(data) >= skip + length:
                    break  # closing the stream here is what keeps weights from downloading
            return bytes(data[skip : skip + length])

    def list_refs(self, repo: RepoRef) -> list[GitRef]:
        """The refs endpoint (`GET /api/models/{id}/refs?include_prs=1`): one api-quota request
        for every branch, tag, convert branch and open pull request head."""
        found = self._call(
            repo, lambda: self._api.list_repo_refs(repo.repo_id, include_pull_requests=True)
        )
        groups = (
            (RefKind.BRANCH, found.branches),
            (RefKind.TAG, found.tags),
            (RefKind.CONVERT, found.converts),
            (RefKind.PULL_REQUEST, found.pull_requests or []),
        )
        return [
            GitRef(kind, item.ref, CommitSha(item.target_commit))
            for kind, items in groups
            for item in items
            if item.ref and item.target_commit
        ]

    def reconstruction(self, repo: RepoRef, sha: CommitSha, xet_hash: str) -> bytes:
        return self._xet.reconstruction(repo, sha, xet_hash)

    def head(self, repo: RepoRef) -> CommitSha:
        """The branch head from a HEAD on the resolver: its X-Repo-Commit header.

        Resolves count against the Hub's "resolvers" quota (5,000 per 5 minutes), five times the
        "api" quota that model_info spends. A missing file still answers 404 with the header.
        """
        url = (
            f"{self._endpoint}/{repo.repo_id}/resolve/{quote(repo.branch, safe='')}/.gitattributes"
        )
        try:
            response = huggingface_hub.get_session().head(
                url, headers=self._headers(), follow_redirects=False
            )
            sha = response.headers.get("X-Repo-Commit")
            if response.status_code in (200, 302, 404) and sha:
                return CommitSha(sha.strip())
            hf_raise_for_status(response)
        except Exception as exc:
            raise self._error(repo, exc) from exc
        # a redirect (renamed repo) or an answer without the header: only a full poll can tell
        raise SourceUnavailable(f"{repo.repo_id}: the resolver sent no X-Repo-Commit")

    def close(self) -> None:
        huggingface_hub.close_session()
        self._xet.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return build_hf_headers(
            token=self._token, library_name=_LIBRARY, library_version=__version__
        )

    def _commits(self, repo: RepoRef, stop: CommitSha | None) -> list[CommitInfo]:
        """The branch's commits newest first; with `stop`, only down to it (and it) when it is
        listed: no page after the one that holds it is asked for. Pages of COMMITS_PAGE; down
        to `stop`, a first one of SINCE_PAGE, and when the Hub gave it whole without `stop`,
        the listing again from the top in large pages (a few commits asked twice)."""
        rev = quote(repo.branch, safe="")
        url = f"{self._endpoint}/api/models/{repo.repo_id}/commits/{rev}"
        items: list[dict[str, Any]] = []

        def walk(limit: int, first_only: bool) -> bool:
            """Whether the listing was read down to `stop` or its end."""
            items.clear()
            for page in pages(url, {"limit": limit}, self._headers()):
                for item in page:
                    items.append(item)
                    if stop is not None and item["id"] == stop:
                        return True
                if first_only and len(page) >= limit:
                    return False  # the Hub took the small limit: ask in large pages
            return True

        small = stop is not None
        if not self._call(repo, lambda: walk(SINCE_PAGE if small else COMMITS_PAGE, small)):
            self._call(repo, lambda: walk(COMMITS_PAGE, False))
        return self._call(repo, lambda: commit_infos(items))

    @contextmanager
    def _get(
        self, repo: RepoRef, sha: CommitSha, path: str, headers: dict[str, str]
    ) -> Iterator[httpx2.Response]:
        """Stream a file pinned to `sha`, translating every failure into a SourceError."""
        url = hf_hub_url(repo.repo_id, path, revision=sha, endpoint=self._endpoint)
        all_headers = {**self._headers(), **headers}
        try:
            with huggingface_hub.get_session().stream("GET", url, headers=all_headers) as response:
                if response.status_code >= 400:
                    response.read()
                    refused = cdn_refusal(response, self._endpoint, path)
                    if refused is not None:
                        raise refused
                    hf_raise_for_status(response)
                yield response
        except Exception as exc:
            raise self._error(repo, exc, reading=path) from exc

    def _call(self, repo: RepoRef, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except Exception as exc:
            raise self._error(repo, exc) from exc

    def _error(self, repo: RepoRef, exc: Exception, reading: str | None = None) -> Exception:
        error = translate(repo, exc, self._endpoint, reading)
        # NOTE: the Hub answers a refused token exactly as an anonymous caller: 401, "Invalid
        # username or password." (tests/data/hub-traces/ref-anonymous.json, exchanges 2-12),
        # which huggingface_hub maps to RepositoryNotFoundError on https (REPO_API_REGEX in
        # utils/_http.py). With a token configured, a 401 never means the repo is gone.
        if self._token and status_of(exc) == 401 and not isinstance(error, RepoGated):
            return self._refused(repo)
        return error

    def _refused(self, repo: RepoRef) -> TokenRefused:
        """The error of a 401 although a token is configured; the token is checked with the
        Hub's whoami endpoint once per `token_check_s`, and a refused one warned of then."""
        with self._verdict_lock:
            now = time.monotonic()
            if self._verdict is None or now - self._verdict[0] >= self._token_check_s:
                valid = self._whoami()
                self._verdict = (now, valid)
                if valid is False:
                    metrics.TOKEN_REFUSED.inc()
                    log.warning("hub_token_refused", endpoint=self._endpoint)
            valid = self._verdict[1]
        if valid:
            return TokenRefused(f"{repo.repo_id}: the Hub answered 401 to a valid HF_TOKEN")
        return TokenRefused(f"{repo.repo_id}: the Hub refused HF_TOKEN (401): invalid or expired?")

    def _whoami(self) -> bool | None:
        """Whether the Hub accepts the token: None when it cannot tell (an outage)."""
        # whoami-v2 answers 401 to an invalid or expired token (huggingface_hub's
        # HfApi._inner_whoami: "Invalid user token.").
        try:
            response = huggingface_hub.get_session().get(
                f"{self._endpoint}/api/whoami-v2", headers=self._headers()
            )
        except Exception:  # the poll's own error says enough; this only words it
            return None
        if response.status_code == 401:
            return False
        return True if response.status_code == 200 else None

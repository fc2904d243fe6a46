"""HubSource: a RevisionSource on huggingface_hub; the only module that imports it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import quote

import httpx2
import huggingface_hub
import structlog
from huggingface_hub import HfApi, hf_hub_url
from huggingface_hub import errors as hf_errors
from huggingface_hub.hf_api import RepoFile
from huggingface_hub.utils._headers import build_hf_headers
from huggingface_hub.utils._http import hf_raise_for_status, hf_request_event_hook

from hubwatch import metrics
from hubwatch.errors import (
    AuthError,
    ContentTooLarge,
    EntryNotFound,
    RateLimited,
    RepoDisabled,
    RepoGated,
    RepoNotFound,
    RevisionNotFound,
    SourceError,
    SourceUnavailable,
    UnexpectedResponse,
)
from hubwatch.models import CommitInfo, CommitSha, FileEntry, RepoRef, RepoStatus
from hubwatch.sources.base import ChangeFeed, Modified, RevisionSource
from hubwatch.sources.pacing import Pacer, bucket_of

T = TypeVar("T")
_CHUNK = 64 * 1024


def _configure_session(timeout_s: float, pacer: Pacer) -> None:
    """Give huggingface_hub's shared client a timeout (its default waits forever) and pacing."""

    def pace(request: httpx2.Request) -> None:
        pacer.before(bucket_of(request.url.path))

    def learn(response: httpx2.Response) -> None:
        pacer.after(response.headers.get("RateLimit"), response.headers.get("RateLimit-Policy"))
        bucket = bucket_of(response.request.url.path) or "other"
        metrics.HUB_REQUESTS.labels(bucket, str(response.status_code)).inc()
        if response.status_code >= 400:
            # the Hub's own id of a failed request, for the log lines that follow (retries)
            request_id = response.headers.get("X-Request-Id")
            structlog.contextvars.bind_contextvars(hub_request_id=request_id)

    def factory() -> httpx2.Client:
        return httpx2.Client(
            event_hooks={"request": [hf_request_event_hook, pace], "response": [learn]},
            follow_redirects=True,
            timeout=httpx2.Timeout(timeout_s),
        )

    huggingface_hub.set_client_factory(factory)


class HubSource(RevisionSource, ChangeFeed):
    """Reads model repos from the Hugging Face Hub (or a server speaking its API)."""

    def __init__(
        self,
        endpoint: str,
        token: str | None = None,
        timeout_s: float = 30.0,
        pacer: Pacer | None = None,
    ) -> None:
        self._endpoint = endpoint.rstrip("/")
        # token=False: never fall back to a token cached on disk by `hf auth login`; the
        # token is hubwatch's setting (HF_TOKEN), so what we use is what the user configured.
        self._token: str | bool = token or False
        self._api = HfApi(endpoint=self._endpoint, token=self._token, library_name="hubwatch")
        self.pacer = pacer or Pacer()
        _configure_session(timeout_s, self.pacer)

    # -- RevisionSource ---------------------------------------------------------------------

    def list_commits(self, repo: RepoRef) -> list[CommitInfo]:
        items = self._call(
            repo, lambda: self._api.list_repo_commits(repo.repo_id, revision=repo.branch)
        )
        commits: list[CommitInfo] = []
        # NOTE: the Hub's commit listing carries no parent shas; it is `git log` order, so on
        # the Hub's linear histories each commit's parent is the next one listed.
        for i, item in enumerate(items):
            parent = (CommitSha(items[i + 1].commit_id),) if i + 1 < len(items) else ()
            commits.append(
                CommitInfo(
                    sha=CommitSha(item.commit_id),
                    parents=parent,
                    date=item.created_at.astimezone(UTC),
                    authors=tuple(item.authors),
                    title=item.title,
                    message=item.message,
                )
            )
        return commits

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
        )

    def resolve(self, repo: RepoRef, rev: str) -> CommitSha:
        info = self._call(repo, lambda: self._api.model_info(repo.repo_id, revision=rev))
        if not info.sha:
            raise RevisionNotFound(f"{repo.repo_id}: revision {rev!r} not found")
        return CommitSha(info.sha)

    def list_files(self, repo: RepoRef, sha: CommitSha) -> list[FileEntry]:
        def listing() -> list[FileEntry]:
            tree = self._api.list_repo_tree(repo.repo_id, recursive=True, revision=sha)
            return [
                FileEntry(
                    path=item.path,
                    size=int(item.size),
                    blob_id=item.blob_id,
                    lfs_sha256=item.lfs.sha256 if item.lfs else None,
                )
                for item in tree
                if isinstance(item, RepoFile)
            ]

        return self._call(repo, listing)

    def read_file(self, repo: RepoRef, sha: CommitSha, path: str, max_bytes: int) -> bytes:
        with self._get(repo, sha, path, {}) as response:
            announced = response.headers.get("Content-Length")
            if announced is not None and announced.isdigit() and int(announced) > max_bytes:
                raise ContentTooLarge(f"{path}: {announced} bytes, over the cap of {max_bytes}")
            data = bytearray()
            for chunk in response.iter_bytes(_CHUNK):
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
            for chunk in response.iter_bytes(_CHUNK):
                data += chunk
                if len(data) >= skip + length:
                    break  # closing the stream here is what keeps weights from downloading
            return bytes(data[skip : skip + length])

    def head(self, repo: RepoRef) -> CommitSha:
        """The branch head from a HEAD on the resolver: its X-Repo-Commit header.

        Resolves count against the Hub's "resolvers" quota (5,000 per 5 minutes), five times the
        "api" quota that model_info spends. A missing file still answers 404 with the header.
        """
        url = (
            f"{self._endpoint}/{repo.repo_id}/resolve/{quote(repo.branch, safe='')}/.gitattributes"
        )
        headers = build_hf_headers(token=self._token, library_name="hubwatch")
        try:
            response = huggingface_hub.get_session().head(
                url, headers=headers, follow_redirects=False
            )
            sha = response.headers.get("X-Repo-Commit")
            if response.status_code in (200, 302, 404) and sha:
                return CommitSha(sha.strip())
            hf_raise_for_status(response)
        except Exception as exc:
            raise _translate(repo, exc) from exc
        # a redirect (renamed repo) or an answer without the header: only a full poll can tell
        raise SourceUnavailable(f"{repo.repo_id}: the resolver sent no X-Repo-Commit")

    @property
    def feed_name(self) -> str:
        return f"hub-models:{self._endpoint}"

    def recently_modified(self, limit: int) -> Iterator[Modified]:
        listing = RepoRef("models/listing")  # names the listing in error messages
        try:
            # NOTE: the Hub sorts newest first by default; `expand` keeps each item to what a
            # poll needs to know first (the head sha, gated, private), so a woken repo's poll
            # can skip its own model_info request.
            models = self._api.list_models(
                sort="last_modified",
                limit=limit,
                expand=["lastModified", "sha", "gated", "private", "disabled"],
            )
            for model in models:
                if not model.id or model.last_modified is None:
                    continue
                status = None
                if model.sha:
                    status = RepoStatus(
                        head=CommitSha(model.sha),
                        repo_id=model.id,
                        gated=model.gated not in (None, False),
                        disabled=bool(model.disabled),
                        private=bool(model.private),
                    )
                yield Modified(model.id, model.last_modified.astimezone(UTC), status)
        except Exception as exc:
            raise _translate(listing, exc) from exc

    def close(self) -> None:
        huggingface_hub.close_session()

    # -- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _get(
        self, repo: RepoRef, sha: CommitSha, path: str, headers: dict[str, str]
    ) -> Iterator[httpx2.Response]:
        """Stream a file pinned to `sha`, translating every failure into a SourceError."""
        url = hf_hub_url(repo.repo_id, path, revision=sha, endpoint=self._endpoint)
        all_headers = {**build_hf_headers(token=self._token, library_name="hubwatch"), **headers}
        try:
            with huggingface_hub.get_session().stream("GET", url, headers=all_headers) as response:
                if response.status_code >= 400:
                    response.read()
                    hf_raise_for_status(response)
                yield response
        except Exception as exc:
            raise _translate(repo, exc, reading=path) from exc

    def _call(self, repo: RepoRef, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except Exception as exc:
            raise _translate(repo, exc) from exc


def _retry_after(response: Any) -> float | None:
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


def _translate(repo: RepoRef, exc: Exception, reading: str | None = None) -> Exception:
    """Map huggingface_hub / httpx2 failures onto hubwatch's error tree.

    `reading` names the file being downloaded: a bare 404 there (the CDN lost an LFS object)
    concerns that file, not the repo.
    """
    name = repo.repo_id
    if isinstance(exc, SourceError):
        return exc
    if isinstance(exc, hf_errors.GatedRepoError):
        return RepoGated(f"{name}: gated repo; the token has not been granted access")
    if isinstance(exc, hf_errors.DisabledRepoError):
        return RepoDisabled(f"{name}: the repo has been disabled on the Hub")
    if isinstance(exc, hf_errors.RevisionNotFoundError):
        return RevisionNotFound(f"{name}: revision not found")
    if isinstance(exc, hf_errors.RemoteEntryNotFoundError | hf_errors.EntryNotFoundError):
        return EntryNotFound(f"{name}: file not found")
    if isinstance(exc, hf_errors.RepositoryNotFoundError):
        status = exc.response.status_code if exc.response is not None else None
        if status == 401:
            return RepoNotFound(f"{name}: repo not found, or private and the token lacks access")
        return RepoNotFound(f"{name}: repo not found on the Hub")
    if isinstance(exc, hf_errors.HfHubHTTPError):
        response = exc.response
        status = response.status_code if response is not None else 0
        if status == 429:
            return RateLimited(f"{name}: rate limited by the Hub (429)", _retry_after(response))
        if status in (401, 403):
            return AuthError(f"{name}: the Hub refused the request ({status})")
        if status == 404 and reading is not None:
            return EntryNotFound(f"{name}: content of {reading} not found (404)")
        if status == 404:
            return RepoNotFound(f"{name}: not found on the Hub (404)")
        if status >= 500 or status == 408:
            return SourceUnavailable(f"{name}: the Hub answered {status}")
        return SourceError(f"{name}: the Hub answered {status}")
    if isinstance(exc, httpx2.HTTPError):
        # timeouts, resets, truncated bodies (RemoteProtocolError), refused connections
        return SourceUnavailable(f"{name}: cannot reach the Hub ({type(exc).__name__})")
    if isinstance(exc, ValueError | KeyError | TypeError):
        # a body that is not JSON (json.JSONDecodeError is a ValueError) or JSON of another
        # shape, or a bug here: asking again gets the same answer, so it is not retried
        kind = type(exc).__name__
        return UnexpectedResponse(f"{name}: the Hub sent a malformed response ({kind})")
    return exc

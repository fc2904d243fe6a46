"""A local Hugging Face Hub that serves git repositories through the Hub's HTTP API on 127.0.0.1."""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from email.message import Message
from functools import partial
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from .hubsim_cards import derived_tags, matches
from .hubsim_git import GitReader, commit_json, entry_json, iso
from .hubsim_http import (
    TRUE,
    Handler,
    HubError,
    Reply,
    Request,
    Server,
    Target,
    byte_range,
    content_type,
    cursor_offset,
    error_reply,
    int_arg,
    json_reply,
    next_link,
    page,
    request_id,
    reset_connection,
    route,
    write_reply,
)
from .hubsim_identity import RepoIdentities
from .hubsim_xet import XetService

FaultKind = Literal["429", "500", "timeout", "truncate", "reset", "malformed"]
""""malformed": a 200 whose body is an HTML page, not the JSON asked for (a captive portal); Hub
routes only, the CDN serves bytes, which have no shape to break."""
FAULT_KINDS: tuple[FaultKind, ...] = ("429", "500", "timeout", "truncate", "reset")
"""The transient kinds a FaultPlan picks from by default."""
Gated = Literal[False, "auto", "manual"]
#: Quotas the Hub announced to an authenticated free user in the recorded traces (per 300 s).
HUB_QUOTAS: dict[str, tuple[int, float]] = {"api": (1000, 300.0), "resolvers": (5000, 300.0)}
_EXPOSE = (
    "X-Repo-Commit,X-Request-Id,X-Error-Code,X-Error-Message,X-Total-Count,ETag,Link,"
    "Accept-Ranges,Content-Range,X-Linked-Size,X-Linked-ETag,X-Xet-Hash"
)
_UNAUTHORIZED = "Invalid username or password."
# What whoami-v2 answers a token it refuses (huggingface_hub raises it as "Invalid user token.",
# HfApi._inner_whoami); the Hub's message, as Spaces that failed on login() logged it.
_BAD_TOKEN = "Invalid credentials in Authorization header"
# CloudFront's answer to a signed URL past its expiry (the Hub's LFS/Xet downloads redirect to
# such URLs: tests/data/hub-traces/ref-download-plain.json, exchanges 5 and 7, Location).
_CDN_DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    b"<Message>Access denied</Message></Error>"
)
_GATEWAY_TIMEOUT = b"<html><body><h1>504 Gateway Time-out</h1></body></html>"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_NOT_JSON = b"<!doctype html><html><body>Sign in to the network to continue</body></html>"


@dataclass(frozen=True)
class RequestRecord:
    """One request the simulator received, as the request log keeps it."""

    method: str
    path: str
    """Path and query string as sent (still URL-quoted)."""
    route: str
    status: int
    """0 when the connection was dropped without a response (reset, timeout faults)."""
    range: str | None
    auth: bool
    """Whether an Authorization header came with the request (valid or not)."""
    fault: FaultKind | None = None
    agent: str | None = None
    """The User-Agent header sent."""
    sent: int = 0
    """Response body bytes sent (as `HubStats.bytes_sent` counts them): a range's length."""


@dataclass
class HubStats:
    """Counters for benchmarks and tests; `HubSimulator.reset_stats()` starts them afresh."""

    requests: int = 0
    by_route: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(method, route) -> requests; routes: commits, tree, compare, paths-info, model-info, refs,
    resolve, cdn, models-list, whoami, other."""
    bytes_sent: int = 0
    """Response body bytes sent (counted as a response starts), LFS content included."""
    lfs_bytes: int = 0
    """Body bytes of LFS objects served by the CDN endpoint (the weights)."""
    faults: Counter[str] = field(default_factory=Counter)
    quota_exceeded: bool = False
    """Whether any client went over a rate-limit quota, enforced or not."""

    def count(self, route: str, method: str | None = None) -> int:
        """Requests to `route`, of any method unless `method` is given."""
        return sum(n for (m, r), n in self.by_route.items() if r == route and method in (None, m))


@dataclass
class FaultPlan:
    """Answer a seeded random fraction of requests with a fault instead of the real response."""

    rate: float
    kinds: Sequence[FaultKind] = FAULT_KINDS
    seed: int = 0
    routes: Collection[str] | None = None
    """Only requests to these routes can fault; None means all."""
    stall_s: float = 2.0
    """How long a "timeout" holds the connection before closing it without answering."""
    retry_after_s: int = 1
    """What a "429" announces in Retry-After and RateLimit's t=."""

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def pick(self, route: str) -> FaultKind | None:
        """The fault for one request to `route`, or None; not thread-safe (the simulator locks)."""
        if self.routes is not None and route not in self.routes:
            return None
        if self._rng.random() >= self.rate:
            return None
        return self._rng.choice(list(self.kinds))


@dataclass(frozen=True)
class _Fault:
    kind: FaultKind
    routes: Collection[str] | None
    stall_s: float
    retry_after_s: int


@dataclass
class _RepoState:
    reader: GitReader
    lfs_dir: Path | None
    private: bool
    gated: Gated
    disabled: bool = False
    deleted: bool = False
    default_branch: str = "main"
    touched: datetime | None = None


class HubSimulator:
    """Serve git repositories as Hub model repos, with faults, rate limits and request counters.

    The CDN that LFS downloads redirect to listens on its own port (`cdn_url`): huggingface_hub only
    stops at a redirect that leaves the Hub's origin, reading X-Linked-Etag/-Size from it.
    """

    def __init__(
        self,
        page_size_commits: int = 1000,
        page_size_tree: int = 1000,
        page_size_models: int = 1000,
    ) -> None:
        self.page_size_commits = page_size_commits
        """The largest commit page: what `limit` asks for up to this (1,000 on the Hub, as
        huggingface.js's listCommits says); without `limit`, COMMITS_PAGE or this if smaller."""
        self.compare = True
        """Whether `/api/models/{id}/compare/{a}..{b}` answers; off, it is a 404 without an
        X-Error-Code, as the Hub answers a path it has no route for."""
        self.page_size_tree = page_size_tree
        self.page_size_models = page_size_models
        self.tokens: set[str] = set()
        self.faults: FaultPlan | None = None
        self.stats = HubStats()
        self.requests: list[RequestRecord] = []
        self.errors: list[str] = []
        """Bugs in the simulator (answered as 500s where possible); tests assert it stays empty."""
        self._repos: dict[str, _RepoState] = {}
        self._readers: dict[Path, GitReader] = {}
        self._renames: dict[str, str] = {}
        self.listing_depth: int | None = None
        """Listing pages starting this many items deep (or deeper) answer 504, as the Hub's deep
        `/api/models?sort=lastModified` pages time out at its gateway; None: every page answers."""
        self.cdn_refused: set[str] = set()
        """LFS sha256s the CDN answers 403 for (a signed URL that expired on the way)."""
        self._rate_limits: dict[str, tuple[int, float]] | None = None
        self._windows: dict[tuple[str, str], tuple[int, int]] = {}
        self._queued: list[_Fault] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._servers: list[Server] = []
        self._t0 = time.monotonic()
        self.identities = RepoIdentities()
        """Object ids and creation times: a rename keeps them, `recreate` makes new ones."""
        self.xet = XetService()
        """Xet storage: off until `xet.enabled` is set; then LFS files are listed with their
        `xetHash`, and their reconstructions and read tokens are served."""

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> HubSimulator:
        """Listen on two random 127.0.0.1 ports (Hub and CDN) in daemon threads."""
        self._stopping.clear()
        self._servers = [
            Server(partial(self._serve, cdn=cdn), self.errors) for cdn in (False, True)
        ]
        for server in self._servers:
            threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop listening and cut open keep-alive connections, so pooled clients see it gone."""
        self._stopping.set()
        for server in self._servers:
            server.stop()

    def __enter__(self) -> HubSimulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The Hub endpoint, e.g. http://127.0.0.1:PORT."""
        return self._servers[0].url

    @property
    def cdn_url(self) -> str:
        """The origin LFS downloads are redirected to."""
        return self._servers[1].url

    # -- repositories -----------------------------------------------------------------------

    def add_repo(
        self,
        repo_id: str,
        git_dir: Path,
        *,
        lfs_dir: Path | None = None,
        private: bool = False,
        gated: bool | Gated = False,
        default_branch: str = "main",
    ) -> None:
        """Serve the git repository at `git_dir` (plain or bare) as model repo `repo_id` (org/name).

        LFS objects are looked up in `lfs_dir` as `<sha256>` or git-lfs's `ab/cd/<sha256>` layout.
        """
        if repo_id.count("/") != 1:
            raise ValueError(f"repo ids are 'namespace/name', got {repo_id!r}")
        gate: Gated = "auto" if gated is True else gated
        # One reader per git dir: benchmarks serve thousands of repo ids from a few dirs.
        key = git_dir.resolve()
        reader = self._readers.get(key) or self._readers.setdefault(key, GitReader(git_dir))
        self._repos[repo_id] = _RepoState(
            reader, lfs_dir, private, gate, default_branch=default_branch
        )

    def set_state(
        self,
        repo_id: str,
        *,
        gated: bool | Gated | None = None,
        disabled: bool | None = None,
        private: bool | None = None,
        deleted: bool | None = None,
    ) -> None:
        """Change how the Hub treats `repo_id`; arguments left None stay as they are."""
        state = self._repos[repo_id]
        if gated is not None:
            state.gated = "auto" if gated is True else gated
        state.disabled = state.disabled if disabled is None else disabled
        state.private = state.private if private is None else private
        state.deleted = state.deleted if deleted is None else deleted

    def rename(self, old_id: str, new_id: str) -> None:
        """Move a repo; requests to `old_id` get a 307 to the same path under `new_id`."""
        self._repos[new_id] = self._repos.pop(old_id)
        self._renames[old_id] = new_id
        self._renames.pop(new_id, None)
        self.identities.moved(old_id, new_id)

    def recreate(self, repo_id: str, git_dir: Path, when: datetime, **kwargs: Any) -> None:
        """Delete `repo_id` and create a new repo under the same name from `git_dir` (at `when`):
        a new object id and creation time; `kwargs` as `add_repo`'s."""
        self._repos.pop(repo_id, None)
        self._renames.pop(repo_id, None)  # the name is no longer a redirect to another repo
        self.identities.recreated(repo_id, when)
        self.add_repo(repo_id, git_dir, **kwargs)

    def touch(self, repo_id: str, when: datetime) -> None:
        """Report `when` as the repo's lastModified instead of its tip commit's date."""
        self._repos[repo_id].touched = when

    # -- faults, rate limits, counters ------------------------------------------------------

    def fail_next(
        self,
        n: int,
        kind: FaultKind,
        *,
        routes: Collection[str] | None = None,
        stall_s: float = 2.0,
        retry_after_s: int = 1,
    ) -> None:
        """Answer the next `n` requests (to `routes`, if given) with `kind`, ahead of any plan."""
        with self._lock:
            self._queued.extend([_Fault(kind, routes, stall_s, retry_after_s)] * n)

    @property
    def rate_limits(self) -> dict[str, tuple[int, float]] | None:
        """Enforced quotas, {"api" | "resolvers": (requests, window_s)}; None enforces none.

        Unenforced buckets still count requests against HUB_QUOTAS, announce them in RateLimit
        headers and set `stats.quota_exceeded`. Setting this starts every window afresh.
        """
        return self._rate_limits

    @rate_limits.setter
    def rate_limits(self, value: dict[str, tuple[int, float]] | None) -> None:
        with self._lock:
            self._rate_limits = value
            self._windows.clear()
            self._t0 = time.monotonic()

    def reset_stats(self) -> None:
        """Zero the counters and clear the request log."""
        with self._lock:
            self.stats = HubStats()
            self.requests = []

    # -- request handling -------------------------------------------------------------------

    def _serve(self, handler: Handler, *, cdn: bool) -> None:
        split = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        token = (handler.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        request = Request(
            handler.command,
            split.path,
            parse_qs(split.query),
            handler.headers,
            handler.rfile.read(length),
            token in self.tokens,
        )
        target = route(split.path, request.method, cdn=cdn)
        with self._lock:
            self.stats.requests += 1
            self.stats.by_route[(request.method, target.route)] += 1
            fault = self._next_fault(target.route)
            if fault:
                self.stats.faults[fault.kind] += 1
        reply = None
        if not fault or fault.kind not in ("timeout", "reset"):
            ident = token if request.authorized else handler.client_address[0]
            reply = self._respond(request, target, fault, ident)
        truncate = fault is not None and fault.kind == "truncate"
        sent = reply.wire_length(request.method, truncate=truncate) if reply else 0
        # Count and log before writing: a client may look at them as soon as it has its answer.
        record = RequestRecord(
            request.method,
            handler.path,
            target.route,
            reply.status if reply else 0,
            handler.headers.get("Range"),
            "Authorization" in handler.headers,
            fault.kind if fault else None,
            handler.headers.get("User-Agent"),
            sent,
        )
        with self._lock:
            self.requests.append(record)
            self.stats.bytes_sent += sent
            self.stats.lfs_bytes += sent if reply and reply.file else 0
        try:
            if reply is not None:
                write_reply(handler, request.method, reply, truncate=truncate)
            elif fault is not None and fault.kind == "reset":
                reset_connection(handler)
            elif fault is not None:
                # A timeout: hang up without a word after a while, like a stuck upstream.
                handler.close_connection = True
                self._stopping.wait(fault.stall_s)
        except OSError:
            handler.close_connection = True  # the client went away mid-response

    def _next_fault(self, route: str) -> _Fault | None:
        for i, queued in enumerate(self._queued):
            if queued.routes is None or route in queued.routes:
                return self._queued.pop(i)
        plan = self.faults
        kind = plan.pick(route) if plan else None
        return _Fault(kind, None, plan.stall_s, plan.retry_after_s) if plan and kind else None

    def _respond(
        self,
        request: Request,
        target: Target,
        fault: _Fault | None,
        ident: str,
    ) -> Reply:
        if target.route == "cas":
            return self.xet.serve(target.path, request.headers.get("Authorization"), self.cdn_url)
        if target.route == "cdn":
            if fault and fault.kind in ("429", "500"):
                headers = {"Retry-After": str(fault.retry_after_s)}
                return Reply(int(fault.kind), headers, b"Service Unavailable")
            return self._cdn(target.path, request)
        headers = {
            "Access-Control-Expose-Headers": _EXPOSE,
            "Vary": "Origin",
            "X-Powered-By": "huggingface-moon",
            "X-Request-Id": request_id(request.headers.get("X-Amzn-Trace-Id")),
        }
        bucket = target.bucket or "api"
        wait_s = fault.retry_after_s if fault and fault.kind == "429" else None
        if target.bucket:
            quota_headers, reset_s, over_quota = self._take_quota(target.bucket, ident)
            headers.update(quota_headers)
            wait_s = reset_s if over_quota else wait_s
        try:
            if wait_s is not None:
                headers["RateLimit"] = f'"{bucket}";r=0;t={wait_s}'
                headers["Retry-After"] = str(wait_s)
                raise HubError(429, f"You have exceeded the rate limit for '{bucket}' requests.")
            if fault and fault.kind == "500":
                raise HubError(500, "Internal Error - We're working hard to fix this!")
            if fault and fault.kind == "malformed":
                reply = Reply(200, {"Content-Type": "text/html; charset=utf-8"}, _NOT_JSON)
            else:
                reply = self._dispatch(request, target)
        except HubError as err:
            reply = error_reply(err, json_body=target.route != "resolve")
        except Exception as exc:  # a simulator bug must reach the test, not end the thread
            self.errors.append(repr(exc))
            reply = error_reply(HubError(500, f"hub simulator bug: {exc!r}"), json_body=True)
        reply.headers = {**headers, **reply.headers}
        return reply

    def _take_quota(self, bucket: str, ident: str) -> tuple[dict[str, str], int, bool]:
        enforced = self._rate_limits is not None and bucket in self._rate_limits
        quota, window = (self._rate_limits or {}).get(bucket) or HUB_QUOTAS[bucket]
        with self._lock:
            now = time.monotonic() - self._t0
            index = int(now // window)
            start, used = self._windows.get((bucket, ident), (index, 0))
            used = used + 1 if start == index else 1
            self._windows[(bucket, ident)] = (index, used)
            over = used > quota
            self.stats.quota_exceeded = self.stats.quota_exceeded or over
        reset_s = max(1, math.ceil((index + 1) * window - now))
        headers = {
            "RateLimit": f'"{bucket}";r={max(quota - used, 0)};t={reset_s}',
            "RateLimit-Policy": f'"fixed window";"{bucket}";q={quota};w={math.ceil(window)}',
        }
        return headers, reset_s, over and enforced

    def _dispatch(self, request: Request, target: Target) -> Reply:
        if target.route == "models-list":
            return self._models_list(request)
        if target.route == "whoami":
            return self._whoami(request)
        if target.route == "other":
            raise HubError(404, "Sorry, we can't find the page you are looking for.")
        moved = self._renames.get(target.repo_id) or self._canonical(target.repo_id)
        if moved is not None:
            new_path = target.prefix + moved
            new_path += request.raw_path[len(target.prefix) + len(target.repo_id) :]
            query = urlencode(request.query, doseq=True)
            location = new_path + (f"?{query}" if query else "")
            return Reply(
                307,
                {"Location": location},
                f"Temporary Redirect. Redirecting to {location}".encode(),
            )
        state = self._open(target, request)
        if target.route == "refs":
            return self._refs(state, request)
        if target.route == "compare":
            return self._compare(state, target.rev or "")
        rev = target.rev or state.default_branch
        sha = state.reader.resolve(rev)
        if sha is None:
            raise HubError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        if target.route == "model-info":
            return json_reply(self._model_info(target.repo_id, state, sha, request))
        if target.route == "commits":
            return self._commits(state, sha, request)
        if target.route == "tree":
            return self._tree(state, sha, rev, target.path, request)
        if target.route == "paths-info":
            return self._paths_info(state, sha, request)
        if target.route == "xet-token":
            return self.xet.token(target.repo_id, sha, self.cdn_url)
        return self._resolve(state, sha, target.path, request)

    def _canonical(self, repo_id: str) -> str | None:
        """The id a repo is served under when `repo_id` only differs from it in letter case.

        The Hub redirects (307, path-only Location) a mis-cased id to its canonical one (seen
        by apache/opendal#8225 on /api/datasets/Google-Research-Datasets/MBPP/paths-info).
        """
        if repo_id in self._repos:
            return None
        folded = repo_id.casefold()
        return next((known for known in self._repos if known.casefold() == folded), None)

    def _whoami(self, request: Request) -> Reply:
        if not request.authorized:
            www = 'Bearer realm="Authentication required", charset="UTF-8"'
            raise HubError(401, _BAD_TOKEN, headers={"WWW-Authenticate": www})
        return json_reply({"type": "user", "name": "hubsim", "auth": {"type": "access_token"}})

    def _open(self, target: Target, request: Request) -> _RepoState:
        state = self._repos.get(target.repo_id)
        if state is None or state.deleted or (state.private and not request.authorized):
            # NOTE: the Hub answers 401 without telling whether the repo exists. Its 401s carry no
            # X-Error-Code, but huggingface_hub maps them to RepositoryNotFoundError only for https
            # URLs (REPO_API_REGEX), so the code is added here for the same client behaviour.
            # A token the Hub refuses (revoked: `tokens.discard(t)`) gets this same answer, as
            # in tests/data/hub-traces/ref-anonymous.json: exchanges 8-12 send a Bearer token
            # and are answered exactly like the anonymous 2-7.
            if not request.authorized:
                www = 'Bearer realm="Authentication required", charset="UTF-8"'
                raise HubError(401, _UNAUTHORIZED, "RepoNotFound", {"WWW-Authenticate": www})
            raise HubError(404, "Repository not found", "RepoNotFound")
        if state.disabled:
            raise HubError(403, "Access to this resource is disabled.")
        if target.route == "resolve" and state.gated and not request.authorized:
            message = (
                f"Access to model {target.repo_id} is restricted. You must have access to it and be"
                " authenticated to access it. Please log in."
            )
            raise HubError(401, message, "GatedRepo")
        return state

    # -- endpoints --------------------------------------------------------------------------

    def _model_info(
        self, repo_id: str, state: _RepoState, sha: str, request: Request
    ) -> dict[str, Any]:
        snap = state.reader.snapshot(sha)
        siblings: list[dict[str, Any]] = [{"rfilename": e.path} for e in snap.files]
        if request.arg("blobs") in TRUE:
            for sibling, e in zip(siblings, snap.files, strict=True):
                sibling.update(size=e.size, blobId=e.oid)
                if e.lfs:
                    sibling["lfs"] = {"sha256": e.lfs.sha256, "size": e.lfs.size}
                    sibling["lfs"]["pointerSize"] = e.lfs.pointer_size
        info: dict[str, Any] = {
            "_id": self.identities.object_id(repo_id),
            "id": repo_id,
            "modelId": repo_id,
            "author": repo_id.split("/")[0],
            "sha": sha,
            "lastModified": iso(state.touched or snap.committed),
            "createdAt": iso(self.identities.created_at(repo_id, snap.created)),
            "private": state.private,
            "disabled": state.disabled,
            "gated": state.gated,
            "downloads": 0,
            "likes": 0,
            "library_name": snap.card.get("library_name"),
            "pipeline_tag": snap.card.get("pipeline_tag"),
            "tags": derived_tags(snap.card, (e.path for e in snap.files)),
            "cardData": snap.card,
            "config": snap.config,
            "transformersInfo": {},
            "model-index": None,
            "widgetData": {},
            "spaces": [],
            "usedStorage": sum(e.size for e in snap.files),
            "siblings": siblings,
        }
        expand = request.query.get("expand", []) + request.query.get("expand[]", [])
        return {k: v for k, v in info.items() if k in {"_id", "id", *expand}} if expand else info

    def _commits(self, state: _RepoState, sha: str, request: Request) -> Reply:
        history = state.reader.log(sha)
        number, limit = int_arg(request, "p"), int_arg(request, "limit")
        size = min(limit or COMMITS_PAGE, self.page_size_commits)
        formatted = "formatted" in request.query.get("expand[]", [])
        items = [commit_json(c, formatted=formatted) for c in history[number * size :][:size]]
        reply = json_reply(items)
        reply.headers["X-Total-Count"] = str(len(history))
        if (number + 1) * size < len(history):
            reply.headers["Link"] = next_link(self.url, request, "p", str(number + 1))
        return reply

    def _tree(self, state: _RepoState, sha: str, rev: str, path: str, request: Request) -> Reply:
        entries = state.reader.tree(sha)
        prefix = ""
        if path.strip("/"):
            path = path.strip("/")
            if not any(e.path == path and e.kind == "directory" for e in entries):
                raise HubError(404, f'{path} does not exist on "{rev}"', "EntryNotFound")
            prefix = path + "/"
        deep = request.arg("recursive") in TRUE
        inside = [e for e in entries if e.path.startswith(prefix)]
        items = [
            self.xet.listed(entry_json(e), self._lfs_bytes)
            for e in inside
            if deep or "/" not in e.path.removeprefix(prefix)
        ]
        return page(self.url, request, items, self.page_size_tree)

    def _compare(self, state: _RepoState, revs: str) -> Reply:
        """What changed from one revision's tree to the other's, per path (issue 35's shape:
        hubwatch.sources.hubanswers.file_changes): a path whose blob moved unchanged to one
        path that is new is a rename."""
        if not self.compare:
            raise HubError(404, "Sorry, we can't find the page you are looking for.")
        old_rev, sep, new_rev = revs.partition("..")
        old_sha, new_sha = state.reader.resolve(old_rev), state.reader.resolve(new_rev)
        if not sep or old_sha is None or new_sha is None:
            raise HubError(404, f"Invalid rev id: {revs}", "RevisionNotFound")
        old = {e.path: e for e in state.reader.tree(old_sha) if e.kind == "file"}
        new = {e.path: e for e in state.reader.tree(new_sha) if e.kind == "file"}
        gone = [p for p in old if p not in new]
        added = [p for p in new if p not in old]
        moved: dict[str, str] = {}  # new path -> old path
        for path in added:
            source = next((g for g in gone if old[g].oid == new[path].oid), None)
            if source is not None and source not in moved.values():
                moved[path] = source
        items: list[dict[str, Any]] = [
            {"status": "deleted", "path": path, "oldOid": old[path].oid}
            for path in gone
            if path not in moved.values()
        ]
        for path, entry in new.items():
            if path in moved:
                change = {"status": "renamed", "oldPath": moved[path]}
            elif path not in old:
                change = {"status": "added"}
            elif old[path].oid != entry.oid:
                change = {"status": "modified", "oldOid": old[path].oid}
            else:
                continue
            items.append({**change, **self.xet.listed(entry_json(entry), self._lfs_bytes)})
        return json_reply(items)

    def _paths_info(self, state: _RepoState, sha: str, request: Request) -> Reply:
        if (request.headers.get("Content-Type") or "").startswith("application/json"):
            paths = list(json.loads(request.body or b"{}").get("paths", []))
        else:
            paths = parse_qs(request.body.decode()).get("paths", [])
        by_path = {e.path: e for e in state.reader.tree(sha)}
        wanted = dict.fromkeys(p.strip("/") for p in paths)
        return json_reply([entry_json(by_path[p]) for p in wanted if p in by_path])

    def _refs(self, state: _RepoState, request: Request) -> Reply:
        groups = {"branches": "refs/heads/", "converts": "refs/convert/", "tags": "refs/tags/"}
        if request.arg("include_prs") in TRUE:
            groups["pullRequests"] = "refs/pr/"
        data: dict[str, list[dict[str, str]]] = {key: [] for key in groups}
        for ref in state.reader.refs():
            for key, prefix in groups.items():
                if ref.ref.startswith(prefix):
                    item = {"name": ref.ref.removeprefix(prefix), "ref": ref.ref}
                    data[key].append({**item, "targetCommit": ref.sha})
        return json_reply(data)

    def _resolve(self, state: _RepoState, sha: str, path: str, request: Request) -> Reply:
        headers = {"X-Repo-Commit": sha, "Accept-Ranges": "bytes"}
        entry = next((e for e in state.reader.snapshot(sha).files if e.path == path), None)
        if entry is None:
            raise HubError(404, "Entry not found", "EntryNotFound", headers)
        if entry.lfs:
            location = f"{self.cdn_url}/cdn/{entry.lfs.sha256}"
            headers["Location"] = location
            headers["Cache-Control"] = "no-store"
            headers["X-Linked-Size"] = str(entry.lfs.size)
            headers["X-Linked-Etag"] = f'"{entry.lfs.sha256}"'
            headers["Content-Type"] = "text/plain; charset=utf-8"
            return Reply(302, headers, f"Found. Redirecting to {location}".encode())
        content = state.reader.blob(entry.oid)
        name = path.rsplit("/", 1)[-1]
        headers["ETag"] = f'"{entry.oid}"'
        headers["Content-Type"] = content_type(content)
        headers["Content-Disposition"] = (
            f"inline; filename*=UTF-8''{quote(name)}; filename=\"{name}\";"
        )
        headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
        status, start, length = byte_range(request.headers.get("Range"), len(content), headers)
        return Reply(status, headers, content[start : start + length])

    def _lfs_path(self, oid: str) -> Path | None:
        if not _SHA256.fullmatch(oid):
            return None
        dirs = {s.lfs_dir for s in self._repos.values() if s.lfs_dir is not None}
        candidates = [p for d in dirs for p in (d / oid, d / oid[:2] / oid[2:4] / oid)]
        return next((p for p in candidates if p.is_file()), None)

    def _lfs_bytes(self, oid: str) -> bytes | None:
        found = self._lfs_path(oid)
        return found.read_bytes() if found is not None else None

    def _cdn(self, oid: str, request: Request) -> Reply:
        found = self._lfs_path(oid)
        if found is None:
            return Reply(404, {"Content-Type": "text/plain"}, b"Not Found")
        if oid in self.cdn_refused:
            return Reply(403, {"Content-Type": "application/xml"}, _CDN_DENIED)
        headers = {"ETag": f'"{oid}"', "Accept-Ranges": "bytes"}
        headers["Content-Type"] = "application/octet-stream"
        try:
            size = found.stat().st_size
            status, start, length = byte_range(request.headers.get("Range"), size, headers)
        except HubError as err:
            return Reply(err.status, err.headers)
        return Reply(status, headers, file=(found, start, length))

    def _models_list(self, request: Request) -> Reply:
        if self.listing_depth is not None and cursor_offset(request) >= self.listing_depth:
            # NOTE: no X-Error-Code, an HTML body: the gateway answers, not the Hub's API
            return Reply(504, {"Content-Type": "text/html"}, _GATEWAY_TIMEOUT)
        author, search = request.arg("author"), request.arg("search").lower()
        filters = request.query.get("filter", [])  # repeatable: every one must match
        heads: dict[tuple[int, str], str | None] = {}  # each git dir's branch, read once
        found: list[tuple[str, _RepoState, str]] = []
        for repo_id, state in list(self._repos.items()):
            if state.deleted or (state.private and not request.authorized):
                continue
            if (author and repo_id.split("/")[0] != author) or search not in repo_id.lower():
                continue
            key = (id(state.reader), state.default_branch)
            if key not in heads:
                heads[key] = state.reader.resolve(state.default_branch)
            sha = heads[key]
            if sha is not None:
                # fixes its creation time when first listed, as building its info would
                self.identities.created_at(repo_id, state.reader.snapshot(sha).created)
                found.append((repo_id, state, sha))
        sort = request.arg("sort")
        if filters:  # a filter needs each repo's whole info: build them all
            infos = (self._model_info(r, state, sha, _NO_ARGS) for r, state, sha in found)
            built = [info for info in infos if matches(info, filters)]
            found = [(info["id"], self._repos[info["id"]], info["sha"]) for info in built]
        if sort in ("lastModified", "createdAt", "id", "likes", "downloads"):
            # NOTE: sorted on the one field, computed alone; the whole info is built only for
            # the page sent, so a page stays cheap with 100,000 repos listed (bench/scale.py).
            found.sort(
                key=lambda row: self._sort_value(*row, sort),
                reverse=request.arg("direction", "-1") != "1",
            )
        # The Hub lists a short summary, plus the field sorted on (huggingface_hub#2460), plus
        # whatever `full` or `expand` asks for.
        keys = {*_LIST_KEYS.split(), sort}
        if request.arg("full") in TRUE:
            keys |= {"author", "sha", "lastModified", "gated", "disabled", "siblings"}
        expand = request.query.get("expand", []) + request.query.get("expand[]", [])
        if expand:
            keys = {"_id", "id", *expand}

        def item(row: tuple[str, _RepoState, str]) -> dict[str, Any]:
            info = self._model_info(*row, _NO_ARGS)
            return {k: v for k, v in info.items() if k in keys and v is not None}

        size = min(int_arg(request, "limit") or self.page_size_models, self.page_size_models)
        return page(self.url, request, _Lazy(found, item), size)

    def _sort_value(self, repo_id: str, state: _RepoState, sha: str, sort: str) -> Any:
        """`_model_info(...)[sort]`, without building the rest of the info."""
        if sort in ("likes", "downloads"):
            return 0
        if sort == "id":
            return repo_id
        snap = state.reader.snapshot(sha)
        if sort == "lastModified":
            return iso(state.touched or snap.committed)
        return iso(self.identities.created_at(repo_id, snap.created))


class _Lazy(Sequence[dict[str, Any]]):
    """Listing items built only when a page slices them out."""

    def __init__(self, rows: list[Any], build: Any) -> None:
        self._rows = rows
        self._build = build

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._build(row) for row in self._rows[index]]
        return self._build(self._rows[index])


COMMITS_PAGE = 50
"""The commit page a request without `limit` gets."""
_NO_ARGS = Request("GET", "", {}, Message(), b"", False)
_LIST_KEYS = "_id id modelId private likes downloads tags createdAt library_name pipeline_tag"

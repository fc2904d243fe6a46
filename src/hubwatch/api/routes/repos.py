"""Repos: list, track, untrack, status; and each repo's history, changes, diffs, estimates."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response

from hubwatch.api.convert import (
    change_public,
    estimate_public,
    history_text_json,
    repo_public,
    report_public,
    revision_changes_public,
    revision_public,
)
from hubwatch.api.cursors import BadCursor, decode_cursor, encode_cursor
from hubwatch.api.deps import (
    DiffersDep,
    SettingsDep,
    StoreDep,
    browse,
    repo_path,
    require_reader,
    require_writer,
)
from hubwatch.api.schemas import (
    AdvisoryReportPublic,
    DiffPublic,
    FilePublic,
    RepoCreate,
    RepoPublic,
    RevisionChangesPublic,
    RevisionDetail,
    RevisionPage,
    TrainingQuery,
)
from hubwatch.estimator import CannotEstimate, Run, lora_targets
from hubwatch.estimator.estimate import retrained
from hubwatch.models import (
    FOLLOW_HEAD,
    ReadStatus,
    RepoRef,
    Severity,
    SourceKind,
    strip_credentials,
)
from hubwatch.models.gguf import is_gguf
from hubwatch.models.refs import RefWatch
from hubwatch.sources.giturls import GitUrlPolicy
from hubwatch.store.browse import BrowseStore
from hubwatch.tracker.compare import diff_stored

router = APIRouter(prefix="/api/v1", tags=["repos"])
reads = APIRouter(prefix="/api/v1", tags=["repos"], dependencies=[Depends(require_reader)])

MAX_INT = 2**31 - 1
Rev = Annotated[str, "a full or abbreviated commit sha"]


_NEXT_PAGE = {
    "Link": {
        "description": 'The next page, where there is one: `<URL?cursor=…>; rel="next"`',
        "schema": {"type": "string"},
    }
}


@reads.get("/repos", responses={200: {"headers": _NEXT_PAGE}})
def list_repos(
    store: StoreDep,
    request: Request,
    response: Response,
    limit: Annotated[int, Query(ge=1, le=1000, description="Repos per page")] = 100,
    cursor: Annotated[
        str | None, Query(max_length=600, description="Where a page starts: from a Link header")
    ] = None,
) -> list[RepoPublic]:
    """The tracked repos by id, a page of `limit` at a time; the next page is linked
    (`Link: <…?cursor=…>; rel="next"`) while there are more."""
    try:
        after = None if cursor is None else decode_cursor(cursor)
    except BadCursor as exc:
        raise HTTPException(422, str(exc)) from None
    found = store.repos_page(after, limit + 1)  # one more: whether a next page exists
    if len(found) > limit:
        found = found[:limit]
        following = request.url.include_query_params(cursor=encode_cursor(found[-1].ref.repo_id))
        response.headers["Link"] = f'<{following}>; rel="next"'
    return [repo_public(r) for r in found]


@router.post(
    "/repos",
    status_code=201,
    dependencies=[Depends(require_writer)],
    responses={200: {"description": "Already tracked", "model": RepoPublic}},
)
def track_repo(
    body: RepoCreate, store: StoreDep, settings: SettingsDep, response: Response
) -> RepoPublic:
    """Track a repo; the scheduler backfills its history on its next poll."""
    if body.source == "git" and not (body.url or "").startswith("https://"):
        raise HTTPException(422, "a git source needs an https:// url (local paths are refused)")
    source = SourceKind(body.source)
    url = body.url if source is SourceKind.GIT else None
    if url:
        url = strip_credentials(url, settings.git_hosts())  # kept in the settings, never stored
        # its host resolved and checked as a webhook's is (GitUrlRefused: 422); again by each
        # fetch, which connects only to what that check approved
        GitUrlPolicy.from_settings(settings, local=False).check(url)
    branch = body.branch or (FOLLOW_HEAD if source is SourceKind.GIT else "main")
    ref = RepoRef(body.repo_id, source, url, branch)
    if not store.add_repo(ref):
        response.status_code = 200
    if body.refs is not None:
        store.watch_refs(body.repo_id, RefWatch(body.refs))
    return repo_public(store.get_repo(body.repo_id))


@reads.get("/repos/{org}/{name}")
def get_repo(org: str, name: str, store: StoreDep) -> RepoPublic:
    """One repo's polling state."""
    return repo_public(store.get_repo(repo_path(org, name)))


@router.delete("/repos/{org}/{name}", status_code=204, dependencies=[Depends(require_writer)])
def untrack_repo(org: str, name: str, store: StoreDep) -> Response:
    """Stop tracking a repo and forget its history."""
    store.remove_repo(repo_path(org, name))
    return Response(status_code=204)


@reads.get("/repos/{org}/{name}/revisions", response_model=RevisionPage)
async def list_revisions(
    org: str,
    name: str,
    store: StoreDep,
    before: Annotated[int | None, Query(ge=1, le=MAX_INT, description="A next_cursor")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Response:
    """The repo's history, newest first, a page at a time."""
    repo_id = repo_path(org, name)
    # NOTE: async, the page read and serialized in one call, on the loop where the store's
    # reads are local (deps.browse): a sync endpoint pays a hop for the call and another for
    # validating the page it returns a second time (issue 15).
    body = await browse(store, _history_json, store, repo_id, before, limit)
    return Response(body, media_type="application/json")


def _history_json(store: BrowseStore, repo_id: str, before: int | None, limit: int) -> bytes:
    return history_text_json(store.history_text(repo_id, before=before, limit=limit))


@reads.get("/repos/{org}/{name}/revisions/{rev}")
def get_revision(org: str, name: str, rev: Rev, store: StoreDep) -> RevisionDetail:
    """One revision with its files, changes, estimate and advisories."""
    repo_id = repo_path(org, name)
    revision = store.revision(repo_id, rev)
    recorded = store.revision_changes(repo_id, revision.sha)
    return RevisionDetail(
        repo_id=repo_id,
        revision=revision_public(revision),
        base=recorded.base,
        files=[FilePublic.model_validate(f) for f in store.files(repo_id, revision.sha)],
        changes=[change_public(c) for c in recorded.changes],
        estimate=estimate_public(store.estimate(repo_id, revision.sha)),
        advisories=report_public(store.advisory_report(repo_id, revision.sha)),
    )


@reads.get("/repos/{org}/{name}/revisions/{rev}/estimate")
def get_estimate(
    org: str,
    name: str,
    rev: Rev,
    store: StoreDep,
    settings: Annotated[TrainingQuery, Query()],
) -> dict[str, Any] | None:
    """The estimator's result for the revision's config.json, with one estimate per GGUF model
    (`gguf`: quantization, parameters, bits per weight, weights, KV cache, cards that fit); the
    GGUF estimate alone without a config; null with neither. Training settings in the query
    re-estimate the config's training memory and batches under them."""
    repo_id = repo_path(org, name)
    sha = store.revision(repo_id, rev).sha
    stored = estimate_public(store.estimate(repo_id, sha))
    given = settings.given()
    if stored is None or not given or not stored.get("ok"):
        return stored
    files = store.files(repo_id, sha)
    config = next((f for f in files if f.path == "config.json"), None)
    if config is None or config.content_sha256 is None:
        return stored
    # NOTE: a custom-code model is counted from its safetensors headers, so it needs them here
    headers = {
        f.path: store.blob(f.header_sha256)
        for f in files
        if f.header_status is ReadStatus.STORED and f.header_sha256 and not is_gguf(f.path)
    }
    try:
        run = training_run(given)
        raw = store.blob(config.content_sha256)
        return stored | retrained(raw, run, headers) | {"settings": given}
    except CannotEstimate as exc:
        raise HTTPException(422, f"cannot estimate: {exc}") from None


@reads.get("/repos/{org}/{name}/revisions/{rev}/advisories")
def get_advisories(org: str, name: str, rev: Rev, store: StoreDep) -> AdvisoryReportPublic:
    """The revision's dependencies and the known advisories that apply."""
    repo_id = repo_path(org, name)
    return report_public(store.advisory_report(repo_id, store.revision(repo_id, rev).sha))


@reads.get("/repos/{org}/{name}/changes")
def list_changes(
    org: str,
    name: str,
    store: StoreDep,
    request: Request,
    response: Response,
    since: Annotated[str | None, Query(description="Only revisions after this sha")] = None,
    severity: Annotated[Severity | None, Query(description="Minimum severity")] = None,
    kind: Annotated[
        list[str] | None, Query(description="Kinds (exact, or a prefix ending in '.')")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="Revisions per page")] = 100,
) -> list[RevisionChangesPublic]:
    """Recorded changes per revision, oldest first, filtered; a page of `limit` revisions, the
    next one linked (`Link: <…?since=SHA…>; rel="next"`) when there may be more."""
    recorded = store.changes(repo_path(org, name), since=since, min_severity=severity, limit=limit)
    if len(recorded) == limit:
        following = request.url.include_query_params(since=recorded[-1].revision.sha)
        response.headers["Link"] = f'<{following}>; rel="next"'
    out = []
    for rc in recorded:
        public = revision_changes_public(rc)
        if kind:
            public.changes = [
                c
                for c in public.changes
                if any(c.kind == k or (k.endswith(".") and c.kind.startswith(k)) for k in kind)
            ]
        if public.changes:
            out.append(public)
    return out


@reads.get("/repos/{org}/{name}/diff/{rev_a}/{rev_b}")
def get_diff(
    org: str,
    name: str,
    rev_a: Rev,
    rev_b: Rev,
    store: StoreDep,
    differs: DiffersDep,
    severity: Annotated[Severity | None, Query(description="Minimum severity")] = None,
) -> DiffPublic:
    """What changed between any two stored revisions (not only neighbours)."""
    repo_id = repo_path(org, name)
    a, b = store.revision(repo_id, rev_a), store.revision(repo_id, rev_b)
    found = diff_stored(store, repo_id, a.sha, b.sha, differs)
    if severity is not None:
        found = [c for c in found if c.severity.rank >= severity.rank]
    return DiffPublic(
        repo_id=repo_id, from_sha=a.sha, to_sha=b.sha, changes=[change_public(c) for c in found]
    )


def training_run(given: dict[str, Any]) -> Run:
    """The `Run` a training query states; the stored estimate's settings for the rest."""
    return Run(
        seq_len=given.get("seq_len", 2048),
        batch=given.get("batch", 1),
        gradient_checkpointing=given.get("checkpointing", False),
        attention=given.get("attention", "flash"),
        precision=given.get("precision", "mixed"),
        lora_rank=given.get("lora_rank", 16),
        lora_targets=lora_targets(given.get("lora_targets")),
        double_quant=given.get("double_quant", True),
        fp32_io=given.get("fp32_embeddings", False),
    )

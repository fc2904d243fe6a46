"""The API's request and response shapes (`*Public` out, `*Create` in); never store tables."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from hubwatch.errors import InvalidRepoId
from hubwatch.models import MAX_REPO_ID_LENGTH, Severity, validate_repo_id
from hubwatch.notify.subscriptions import check_kinds


def checked_repo_id(value: str) -> str:
    """`validate_repo_id`, its refusal raised as pydantic's ValueError (a 422 naming the field)."""
    try:
        return validate_repo_id(value)
    except InvalidRepoId as exc:
        raise ValueError(str(exc)) from None


RepoIdStr = Annotated[str, AfterValidator(checked_repo_id)]
"""A repo id in a request body, checked as every repo id is (`models.validate_repo_id`)."""

_ORG = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$"


class _Public(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class RepoPublic(_Public):
    """A tracked repo and its polling state."""

    repo_id: str
    source: str
    url: str | None
    branch: str
    state: str
    head: str | None
    revisions: int
    added_at: datetime
    last_polled_at: datetime | None
    last_error: str | None
    renamed_to: str | None
    failures: int = 0
    """Polls in a row that failed; `HUBWATCH_DEGRADED_AFTER` of them make the repo degraded."""
    object_id: str | None = None
    """The Hub's object id of the repo (`_id`): a rename keeps it, a re-creation does not."""
    created_at: datetime | None = None
    """When the Hub created the repo (`createdAt`)."""
    former_ids: list[str] = []
    """Names it was tracked under before the renames hubwatch followed, oldest first."""


class RepoCreate(BaseModel):
    """A repo to track; its history is backfilled by the next poll."""

    repo_id: RepoIdStr = Field(
        max_length=MAX_REPO_ID_LENGTH, examples=["ibm-granite/granite-3.1-1b"]
    )
    source: Literal["hub", "git"] = "hub"
    url: str | None = Field(default=None, max_length=2000)
    """Git source only: an https:// URL (local paths are refused over the API)."""
    branch: str | None = Field(
        default=None, min_length=1, max_length=255, pattern=r"^[^\x00-\x1f]+$"
    )
    """Default: `main` on the Hub; a git remote's default branch, followed (`HEAD`)."""
    refs: Literal["none", "prs"] | None = None
    """Which refs to diff against the branch each poll (`prs`: open pull requests); None:
    as stored (none for a new repo)."""


class RevisionPublic(_Public):
    """One stored revision's commit metadata."""

    sha: str
    parents: list[str]
    date: datetime
    authors: list[str]
    title: str
    message: str
    changed: list[str]
    """Paths added, removed or modified against the first parent."""
    reachable: bool
    card: dict[str, Any] | None


class RevisionPage(BaseModel):
    """A page of history, newest first."""

    items: list[RevisionPublic]
    next_cursor: int | None
    """Pass as `before` to get the next, older page; null on the last page."""


class ChangePublic(_Public):
    """One classified change."""

    kind: str
    severity: Severity
    summary: str
    path: str | None
    before: Any
    after: Any
    detail: str | None


class RevisionChangesPublic(BaseModel):
    """A revision with its recorded changes."""

    sha: str
    date: datetime
    title: str
    base: str | None
    changes: list[ChangePublic]


class FilePublic(_Public):
    """A file of a revision and what became of reading it."""

    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None
    content_sha256: str | None
    content_status: str | None
    content_error: str | None
    header_sha256: str | None
    header_status: str | None
    header_error: str | None


class DependencyPublic(_Public):
    ecosystem: str
    name: str
    version: str | None
    spec: str
    source: str
    reason: str


class SeverityScorePublic(_Public):
    type: str
    vector: str
    score: float | None


class AdvisoryMatchPublic(_Public):
    advisory_id: str
    aliases: list[str]
    summary: str
    severity: list[SeverityScorePublic]
    fixed: list[str]
    package: str
    version: str | None
    status: str
    reason: str
    modified: str
    url: str
    """The advisory's raw OSV JSON on this server."""


class AdvisoryReportPublic(BaseModel):
    """A revision's dependencies and the known advisories that apply to them."""

    dependencies: list[DependencyPublic]
    matches: list[AdvisoryMatchPublic]
    checked_at: datetime | None
    service: str | None
    error: str | None
    status: Literal["unchecked", "ok", "degraded"]
    """`degraded`: the last check failed, `matches` are from the last good one (maybe stale)."""


class RevisionDetail(BaseModel):
    """Everything stored about one revision."""

    repo_id: str
    revision: RevisionPublic
    base: str | None
    files: list[FilePublic]
    changes: list[ChangePublic]
    estimate: dict[str, Any] | None
    advisories: AdvisoryReportPublic


class TrainingQuery(BaseModel):
    """Training settings to re-estimate a revision's training memory under (query string); the
    stored estimate is at 2048 tokens, batch 1, mixed precision, LoRA on every linear."""

    seq_len: int | None = Field(None, ge=1, le=1 << 22, description="Training sequence length.")
    batch: int | None = Field(None, ge=1, le=1 << 16, description="Sequences per step.")
    checkpointing: bool | None = Field(None, description="Gradient checkpointing.")
    precision: Literal["mixed", "bf16", "fp32"] | None = Field(None, description="Precision.")
    attention: Literal["flash", "sdpa", "eager"] | None = Field(None, description="Kernel.")
    lora_rank: int | None = Field(None, ge=1, le=1 << 16, description="LoRA / QLoRA rank.")
    lora_targets: str | None = Field(
        None, max_length=400, description="q,k,v,o,gate,up,down or module names, or all-linear."
    )
    double_quant: bool | None = Field(None, description="QLoRA: NF4 double quantisation.")
    fp32_embeddings: bool | None = Field(None, description="QLoRA: fp32 embeddings and head.")

    def given(self) -> dict[str, Any]:
        """The settings the query states."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class DiffPublic(BaseModel):
    """What changed between any two stored revisions."""

    repo_id: str
    from_sha: str
    to_sha: str
    changes: list[ChangePublic]


class AdvisoryIndexEntry(BaseModel):
    """One advisory this server serves as raw OSV JSON."""

    id: str
    source: Literal["hubwatch", "osv"]
    """`hubwatch`: our own record of a detected change; `osv`: a matched OSV.dev advisory."""
    summary: str
    modified: str
    url: str


class Badge(BaseModel):
    """A shields.io endpoint badge (https://shields.io/badges/endpoint-badge)."""

    schemaVersion: Literal[1] = 1
    label: str
    message: str
    color: str
    isError: bool | None = None
    cacheSeconds: int = Field(default=300, ge=300)


class SubscriptionCreate(BaseModel):
    """A webhook subscription: one repo or one org (or neither: everything), with filters."""

    url: str = Field(max_length=2000, examples=["https://example.com/hooks/hubwatch"])
    repo_id: RepoIdStr | None = Field(default=None, max_length=MAX_REPO_ID_LENGTH)
    org: str | None = Field(default=None, pattern=_ORG)
    kinds: list[str] = Field(default_factory=list, max_length=50)
    """Change kinds wanted: exact (`generation.stop_tokens`) or a prefix ending in `.`."""
    min_severity: Severity | None = None

    @field_validator("kinds")
    @classmethod
    def _valid_kinds(cls, value: list[str]) -> list[str]:
        return check_kinds(value)  # an InvalidChangeKind is a ValueError: a 422


class SubscriptionPublic(_Public):
    """A subscription as listed (without its secret)."""

    id: int
    url: str
    repo_id: str | None
    org: str | None
    kinds: list[str]
    min_severity: Severity | None
    enabled: bool
    disabled_reason: str | None
    created_at: datetime


class SubscriptionCreated(SubscriptionPublic):
    """The new subscription with its signing secret, which is shown only this once."""

    secret: str


class DeliveryPublic(_Public):
    """One attempt from a subscription's delivery log."""

    message_id: str
    event_type: str
    attempt: int
    at: datetime
    status_code: int | None
    error: str | None
    duration_ms: int
    state: str


class Health(BaseModel):
    status: Literal["ok"]


class MissedChangePublic(BaseModel):
    """A base change since the revision a derivative was built from that it did not take."""

    sha: str | None = None
    """The base revision that made it."""
    kind: str | None = None
    severity: Severity | None = None
    summary: str | None = None
    path: str | None = None


class LineagePublic(BaseModel):
    """A tracked derivative's base, the base revision it was built from, and its staleness."""

    repo_id: str
    sha: str
    """The derivative's revision this was worked out for."""
    base_repo_id: str
    relation: Literal["quantized", "finetune", "adapter", "merge", "unknown"]
    status: Literal["current", "stale", "unmatched", "base_untracked"]
    base_sha: str | None
    """The base revision it was built from (the newest that matches); null when none does."""
    missed: list[MissedChangePublic]
    """Oldest first."""
    worst: Severity | None
    """The most severe missed change."""
    aspects: list[str]
    checked_at: datetime | None
    detail: str | None


class DerivativePublic(BaseModel):
    """A tracked derivative of a base, with its status."""

    repo_id: str
    relation: Literal["quantized", "finetune", "adapter", "merge", "unknown"]
    status: Literal["current", "stale", "unmatched", "base_untracked"]
    base_sha: str | None
    missed: int
    """How many base changes it did not take."""
    worst: Severity | None
    checked_at: datetime | None
    detail: str | None


class GitRefPublic(BaseModel):
    """One ref of a tracked repo as last listed: a branch, tag, convert branch or open PR."""

    kind: Literal["branch", "tag", "convert", "pull_request"]
    ref: str
    target: str
    pr: int | None
    """N of `refs/pr/N`."""


class CodeLinkPublic(BaseModel):
    """A repo whose code the model loads, tracked as its dependency."""

    target: str
    kind: Literal["auto_map", "kernel"]
    via: str
    """The config value that names it."""


class LinkedChangesPublic(BaseModel):
    """Changes reported on a repo that are not its branch's history: what an open pull
    request would change (against the branch's head), or what a code dependency changed."""

    origin: Literal["pull_request", "dependency"]
    source: str
    """The pull request's ref (`refs/pr/12`), or the dependency's repo id."""
    label: str
    head: str
    base: str | None
    observed_at: datetime | None
    changes: list[ChangePublic]

"""SQLModel table definitions (table=True only); the schema Alembic migrates."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, Column, DateTime, Index, LargeBinary, UniqueConstraint
from sqlmodel import Field, SQLModel

metadata = SQLModel.metadata


class RepoRow(SQLModel, table=True):
    """A tracked repository."""

    __tablename__ = "repo"

    id: int | None = Field(default=None, primary_key=True)
    repo_id: str = Field(max_length=200, unique=True)
    source: str = Field(max_length=16)
    url: str | None = Field(default=None, max_length=2000)
    branch: str = Field(default="main", max_length=255)
    state: str = Field(default="active", max_length=16)
    head_sha: str | None = Field(default=None, max_length=64)
    renamed_to: str | None = Field(default=None, max_length=200)
    added_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    last_polled_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    last_error: str | None = None
    failures: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    """Polls in a row that failed; reset by a successful one (degraded after a few)."""
    revision_count: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    """How many revisions are stored, kept by `add_revision`: counting them grew with history."""
    hub_object_id: str | None = Field(default=None, max_length=64)
    """The Hub's object id of the repo (`_id`): a rename keeps it, a re-creation does not."""
    hub_created_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    former_ids: list[str] | None = Field(default=None, sa_column=Column(JSON))
    """Names the repo was tracked under before the renames it followed, oldest first."""
    pinned_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    """When `hubwatch pins check` last found a pin of it: its verifications go first a while."""


class RevisionRow(SQLModel, table=True):
    """One commit of a tracked repo, with its metadata."""

    __tablename__ = "revision"
    __table_args__ = (UniqueConstraint("repo_pk", "sha", name="uq_revision_repo_sha"),)

    id: int | None = Field(default=None, primary_key=True)
    repo_pk: int = Field(foreign_key="repo.id", ondelete="CASCADE", index=True)
    sha: str = Field(max_length=64, index=True)
    parents: list[str] = Field(sa_column=Column(JSON, nullable=False))
    committed_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    authors: list[str] = Field(sa_column=Column(JSON, nullable=False))
    title: str
    message: str
    changed: list[str] = Field(sa_column=Column(JSON, nullable=False))
    reachable: bool = True
    card: dict[str, object] | None = Field(default=None, sa_column=Column(JSON))
    card_error: str | None = None
    recorded_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class FileRow(SQLModel, table=True):
    """One file in a revision's tree, and what became of reading it."""

    __tablename__ = "file_entry"
    __table_args__ = (
        Index("ix_file_entry_blob", "blob_id", "path"),
        Index("ix_file_entry_lfs", "lfs_sha256"),
    )

    revision_pk: int = Field(foreign_key="revision.id", ondelete="CASCADE", primary_key=True)
    path: str = Field(primary_key=True, max_length=1024)
    size: int = Field(sa_column=Column(BigInteger, nullable=False))
    blob_id: str = Field(max_length=64)
    lfs_sha256: str | None = Field(default=None, max_length=64)
    content_sha256: str | None = Field(default=None, max_length=64)
    content_status: str | None = Field(default=None, max_length=16)
    content_error: str | None = None
    header_sha256: str | None = Field(default=None, max_length=64)
    header_status: str | None = Field(default=None, max_length=16)
    header_error: str | None = None
    xet_hash: str | None = Field(default=None, max_length=64)


class BlobRow(SQLModel, table=True):
    """Bytes addressed by their sha256: a file unchanged over many revisions is stored once."""

    __tablename__ = "blob"

    sha256: str = Field(primary_key=True, max_length=64)
    size: int
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class XetTermsRow(SQLModel, table=True):
    """A Xet file's reconstruction terms, by its Xet hash: what the tensor diff of any two
    stored revisions reads, so a comparison asks the CAS server nothing (issue 33)."""

    __tablename__ = "xet_terms"

    xet_hash: str = Field(primary_key=True, max_length=64)
    size: int
    """Bytes of the terms' JSON (`formats.xet.terms_json`), before compression."""
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    """The terms' JSON, zlib-compressed; at most `store.xet.MAX_TERMS_ROW` bytes."""
    kept_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class EventRow(SQLModel, table=True):
    """Something that happened to a tracked repo besides a new revision."""

    __tablename__ = "event"

    id: int | None = Field(default=None, primary_key=True)
    repo_pk: int = Field(foreign_key="repo.id", ondelete="CASCADE", index=True)
    kind: str = Field(max_length=32)
    sha: str | None = Field(default=None, max_length=64)
    detail: str
    at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class DependencyRow(SQLModel, table=True):
    """One dependency of a revision (a package, with the version it pins when it pins one)."""

    __tablename__ = "revision_dependency"

    revision_pk: int = Field(foreign_key="revision.id", ondelete="CASCADE", primary_key=True)
    ecosystem: str = Field(primary_key=True, max_length=32)
    name: str = Field(primary_key=True, max_length=200)
    source: str = Field(primary_key=True, max_length=1024)
    version: str | None = Field(default=None, max_length=200)
    spec: str = Field(max_length=1000)
    reason: str


class AdvisoryCheckRow(SQLModel, table=True):
    """When a revision's advisories were last checked, by which service, and how it ended."""

    __tablename__ = "advisory_check"

    revision_pk: int = Field(foreign_key="revision.id", ondelete="CASCADE", primary_key=True)
    checked_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    service: str = Field(max_length=32)
    error: str | None = None


class AdvisoryMatchRow(SQLModel, table=True):
    """A known advisory attached to a revision through one of its dependencies."""

    __tablename__ = "advisory_match"

    revision_pk: int = Field(foreign_key="revision.id", ondelete="CASCADE", primary_key=True)
    advisory_id: str = Field(primary_key=True, max_length=100)
    package: str = Field(primary_key=True, max_length=200)
    aliases: list[str] = Field(sa_column=Column(JSON, nullable=False))
    summary: str
    severity: list[dict[str, object]] = Field(sa_column=Column(JSON, nullable=False))
    fixed: list[str] = Field(sa_column=Column(JSON, nullable=False))
    version: str | None = Field(default=None, max_length=200)
    status: str = Field(max_length=16)
    reason: str
    modified: str = Field(max_length=40)
    attached_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class PublicationRow(SQLModel, table=True):
    """The OSV id given to one published change, so that reruns give the same id."""

    __tablename__ = "osv_publication"
    __table_args__ = (
        UniqueConstraint("repo_id", "sha", "kind", "path", name="uq_osv_publication_change"),
        UniqueConstraint("year", "number", name="uq_osv_publication_number"),
    )

    osv_id: str = Field(primary_key=True, max_length=64)
    repo_id: str = Field(max_length=200)
    sha: str = Field(max_length=64)
    kind: str = Field(max_length=100)
    path: str = Field(max_length=1024)
    """The change's path, empty when it has none."""
    year: int
    number: int
    published_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    digest: str | None = Field(default=None, max_length=64)
    """sha256 of the record's content as last exported: `modified` moves when it changes."""
    modified_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    withdrawn_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    record: dict[str, object] | None = Field(default=None, sa_column=Column(JSON))
    """The record as last exported, published again (withdrawn) once its change is gone."""


class EstimateRow(SQLModel, table=True):
    """What the estimator derived for one revision from its config.json (and headers)."""

    __tablename__ = "estimate"

    revision_pk: int = Field(foreign_key="revision.id", ondelete="CASCADE", primary_key=True)
    ok: bool
    error: str | None = None
    data: dict[str, object] = Field(sa_column=Column(JSON, nullable=False))


class ChangeRow(SQLModel, table=True):
    """One classified change a revision brought, against the revision it was compared with."""

    __tablename__ = "change"
    # NOTE: a badge's count is a range scan of one of these over the changes it counts.
    __table_args__ = (
        Index("ix_change_repo_revision", "repo_pk", "revision_pk", "severity"),
        Index("ix_change_repo_observed", "repo_pk", "observed_at", "severity"),
    )

    id: int | None = Field(default=None, primary_key=True)
    revision_pk: int = Field(foreign_key="revision.id", ondelete="CASCADE", index=True)
    repo_pk: int
    """The revision's repo, copied so that counts need no join."""
    observed_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    """When its revision was recorded (our clock, never the commit's date, which upstream
    sets), copied so that counts by time need no join."""
    base_sha: str | None = Field(default=None, max_length=64)
    position: int
    kind: str = Field(max_length=64)
    severity: str = Field(max_length=16)
    rank: int
    summary: str
    path: str | None = Field(default=None, max_length=1024)
    before: object | None = Field(default=None, sa_column=Column(JSON))
    after: object | None = Field(default=None, sa_column=Column(JSON))
    detail: str | None = None


class LineageRow(SQLModel, table=True):
    """A tracked derivative's base, the base revision it was built from, and its staleness."""

    __tablename__ = "lineage"
    __table_args__ = (
        UniqueConstraint("repo_pk", name="uq_lineage_repo"),
        Index("ix_lineage_base_repo_id", "base_repo_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    repo_pk: int = Field(foreign_key="repo.id", ondelete="CASCADE")
    """The derivative: one record each, replaced as it or its base changes."""
    sha: str = Field(max_length=64)
    base_repo_id: str = Field(max_length=200)
    """The declared base, by id: it need not be tracked (status base_untracked)."""
    relation: str = Field(max_length=16)
    status: str = Field(max_length=16)
    base_sha: str | None = Field(default=None, max_length=64)
    missed: list[dict[str, object]] = Field(sa_column=Column(JSON, nullable=False))
    aspects: list[str] = Field(sa_column=Column(JSON, nullable=False))
    checked_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    detail: str | None = None
    extra: dict[str, object] = Field(sa_column=Column(JSON, nullable=False))


class ChangeTallyRow(SQLModel, table=True):
    """How many changes, and breaking ones, a repo recorded in one block of revision ids (kept
    on write): a count since a pinned revision adds blocks instead of scanning each change."""

    __tablename__ = "change_tally"

    repo_pk: int = Field(foreign_key="repo.id", ondelete="CASCADE", primary_key=True)
    block: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    """The revisions' ids divided by `store.sql.tally.BLOCK`."""
    total: int
    breaking: int


class ScheduleRow(SQLModel, table=True):
    """When a tracked repo is next due, whether it must be polled now, and which worker has it."""

    __tablename__ = "repo_schedule"
    __table_args__ = (
        Index("ix_repo_schedule_woken", "priority", "woken_at"),
        Index("ix_repo_schedule_due", "due_at"),
    )

    repo_pk: int = Field(foreign_key="repo.id", ondelete="CASCADE", primary_key=True)
    due_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    """When the repo's own check is next due (per-repo interval with jitter)."""
    woken_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    """Set when something says the repo changed (listing, failed check, webhook); None: idle."""
    listed: bool | None = None
    """Whether the Hub's public listing shows the repo (None: not known yet)."""
    hint_head: str | None = Field(default=None, max_length=64)
    """The head the listing that woke the repo named, so its poll can skip asking for it."""
    hint_gated: bool | None = None
    priority: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    """WakePriority of the wake: changes are claimed before verifications."""
    lease_owner: str | None = Field(default=None, max_length=200)
    lease_claimed_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True))
    )
    lease_expires_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True))
    )


class JobLeaseRow(SQLModel, table=True):
    """A periodic job that one worker of many runs at a time (change discovery, advisories)."""

    __tablename__ = "job_lease"

    name: str = Field(primary_key=True, max_length=100)
    next_run_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    owner: str | None = Field(default=None, max_length=200)
    expires_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))


class CursorRow(SQLModel, table=True):
    """How far a change listing has been read (the newest upstream time already seen)."""

    __tablename__ = "discovery_cursor"

    name: str = Field(primary_key=True, max_length=300)
    value: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class SubscriptionRow(SQLModel, table=True):
    """A webhook subscription: where to POST which changes of which repo or org."""

    __tablename__ = "subscription"

    id: int | None = Field(default=None, primary_key=True)
    repo_id: str | None = Field(default=None, max_length=200, index=True)
    org: str | None = Field(default=None, max_length=100, index=True)
    url: str = Field(max_length=2000)
    secret: str = Field(max_length=200)
    """The signing secret (`whsec_…`); shown once when the subscription is created."""
    kinds: list[str] = Field(sa_column=Column(JSON, nullable=False))
    min_severity: str | None = Field(default=None, max_length=16)
    enabled: bool = True
    disabled_reason: str | None = None
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class OutboxRow(SQLModel, table=True):
    """One webhook message to deliver to one subscription, until it is delivered or given up."""

    __tablename__ = "webhook_outbox"
    __table_args__ = (
        UniqueConstraint("subscription_pk", "event_key", name="uq_webhook_outbox_event"),
        Index("ix_webhook_outbox_due", "state", "next_attempt_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    subscription_pk: int = Field(foreign_key="subscription.id", ondelete="CASCADE")
    message_id: str = Field(max_length=64, unique=True)
    """The `webhook-id` header: the same on every attempt, so receivers can dedupe."""
    event_key: str = Field(max_length=400)
    """What the message is about (`revision:<repo>:<sha>`, `event:<id>`): enqueued once."""
    event_type: str = Field(max_length=64)
    body: str
    """The exact JSON body, signed anew (with a fresh timestamp) on each attempt."""
    state: str = Field(default="pending", max_length=16)
    attempts: int = 0
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    next_attempt_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    finished_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))


class DeliveryRow(SQLModel, table=True):
    """One attempt to deliver an outbox message: the delivery log."""

    __tablename__ = "webhook_delivery"

    id: int | None = Field(default=None, primary_key=True)
    outbox_pk: int = Field(foreign_key="webhook_outbox.id", ondelete="CASCADE", index=True)
    attempt: int
    at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    status_code: int | None = None
    error: str | None = None
    duration_ms: int


class NotifyCursorRow(SQLModel, table=True):
    """How far a notifier has read an append-only table (the repo events)."""

    __tablename__ = "notify_cursor"

    name: str = Field(primary_key=True, max_length=64)
    position: int


# Badges count a repo's changes over its last 30 days of commits (bench/api_load.py).
Index(
    "ix_revision_repo_committed",
    RevisionRow.__table__.c.repo_pk,  # type: ignore[attr-defined]
    RevisionRow.__table__.c.committed_at,  # type: ignore[attr-defined]
)
# A history page, newest first, is one range of this (PostgreSQL's index on repo_pk alone is
# not in id order; SQLite's is, through the rowid).
Index(
    "ix_revision_repo_position",
    RevisionRow.__table__.c.repo_pk,  # type: ignore[attr-defined]
    RevisionRow.__table__.c.id,  # type: ignore[attr-defined]
)

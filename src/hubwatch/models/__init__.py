"""Frozen value objects every layer shares, one module per concept; all re-exported here."""

from hubwatch.models.advisory import (
    AdvisoryMatch,
    AdvisoryReport,
    AdvisoryStatus,
    Dependency,
    MatchStatus,
    Publication,
    SeverityScore,
    publication_id,
)
from hubwatch.models.change import Change, Severity
from hubwatch.models.credentials import (
    redact_text,
    redact_url,
    split_credentials,
    strip_credentials,
    url_host,
)
from hubwatch.models.estimate import TRAIN_SEQ_LEN, Estimate
from hubwatch.models.history import FeedItem, HistoryPage, RevisionChanges
from hubwatch.models.ids import AdvisoryId, CommitSha, ContentSha
from hubwatch.models.repo import (
    MAX_REPO_ID_LENGTH,
    READABLE_STATES,
    EventKind,
    RepoEvent,
    RepoRef,
    RepoState,
    RepoStatus,
    SourceKind,
    TrackedRepo,
    validate_repo_id,
)
from hubwatch.models.revision import (
    CommitInfo,
    FileEntry,
    ReadResult,
    ReadStatus,
    Snapshot,
    StoredFile,
    StoredRevision,
)
from hubwatch.models.schedule import Claim, ScheduleEntry
from hubwatch.models.subscription import (
    DeliveryAttempt,
    MessageState,
    OutboxMessage,
    PendingMessage,
    StoredEvent,
    Subscription,
)

__all__ = [
    "MAX_REPO_ID_LENGTH",
    "READABLE_STATES",
    "TRAIN_SEQ_LEN",
    "AdvisoryId",
    "AdvisoryMatch",
    "AdvisoryReport",
    "AdvisoryStatus",
    "Change",
    "Claim",
    "CommitInfo",
    "CommitSha",
    "ContentSha",
    "DeliveryAttempt",
    "Dependency",
    "Estimate",
    "EventKind",
    "FeedItem",
    "FileEntry",
    "HistoryPage",
    "MatchStatus",
    "MessageState",
    "OutboxMessage",
    "PendingMessage",
    "Publication",
    "publication_id",
    "ReadResult",
    "ReadStatus",
    "RepoEvent",
    "RepoRef",
    "RepoState",
    "RepoStatus",
    "RevisionChanges",
    "ScheduleEntry",
    "Severity",
    "SeverityScore",
    "Snapshot",
    "SourceKind",
    "StoredEvent",
    "StoredFile",
    "StoredRevision",
    "Subscription",
    "TrackedRepo",
    "redact_text",
    "redact_url",
    "split_credentials",
    "strip_credentials",
    "url_host",
    "validate_repo_id",
]

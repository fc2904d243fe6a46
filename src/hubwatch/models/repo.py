"""Tracked repositories: their ids, where they are read from, their state and events."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from hubwatch.errors import InvalidRepoId
from hubwatch.models.ids import CommitSha

# NOTE: the Hub's own rule (huggingface_hub.utils.validate_repo_id): letters, digits, `-_.`,
# no `--` or `..`, 96 characters at most per name, not starting or ending with `-` or `.`.
_NAME = re.compile(r"^(?![.-])(?!.*(?:--|\.\.))[A-Za-z0-9._-]{1,96}(?<![.-])$")
MAX_REPO_ID_LENGTH = 96 * 2 + 1


FOLLOW_HEAD = "HEAD"
"""A git repo's branch when none is given: whichever branch the remote's HEAD names, followed."""


class SourceKind(StrEnum):
    """Where a repo's revisions come from."""

    HUB = "hub"
    GIT = "git"


@dataclass(frozen=True, slots=True)
class RepoRef:
    """A tracked repository: its Hub-style id and where to read it from."""

    repo_id: str
    """`org/name`, validated on construction."""
    source: SourceKind = SourceKind.HUB
    url: str | None = None
    """Git URL or local path (GitSource); None for the Hub."""
    branch: str = "main"
    """The branch or tag whose history is tracked; `HEAD` (git): the remote's default branch."""

    def __post_init__(self) -> None:
        validate_repo_id(self.repo_id)

    @property
    def org(self) -> str:
        return self.repo_id.split("/", 1)[0]


def validate_repo_id(repo_id: str) -> str:
    """Return `repo_id` if it is a safe `org/name`; otherwise raise InvalidRepoId saying why."""
    if not repo_id:
        raise InvalidRepoId("repo id is empty; expected ORG/NAME")
    shown = repo_id if len(repo_id) <= 60 else repo_id[:57] + "..."
    if len(repo_id) > MAX_REPO_ID_LENGTH:
        raise InvalidRepoId(
            f"repo id {shown!r} is {len(repo_id)} characters long; the Hub allows "
            f"at most 96 per part"
        )
    parts = repo_id.split("/")
    if len(parts) != 2:
        raise InvalidRepoId(f"repo id {shown!r} must be exactly ORG/NAME")
    for part in parts:
        if not _NAME.match(part):
            raise InvalidRepoId(
                f"repo id {shown!r}: {part!r} may only hold letters, digits, '-', '_' and '.', "
                "must not start or end with '-' or '.', and must not contain '--' or '..'"
            )
    return repo_id


def validate_owner(name: str) -> str:
    """Return `name` if it is a safe user or organisation name (a repo id's first part);
    otherwise raise InvalidRepoId saying why."""
    if not _NAME.match(name):
        shown = name if len(name) <= 60 else name[:57] + "..."
        raise InvalidRepoId(
            f"author {shown!r} may only hold letters, digits, '-', '_' and '.', must not "
            "start or end with '-' or '.', and must not contain '--' or '..'"
        )
    return name


@dataclass(frozen=True, slots=True)
class RepoIdentity:
    """Who is behind a name: the Hub's own ids of a repo, which a rename keeps and a repo
    deleted and created again under the same name does not (docs/identity.md)."""

    object_id: str | None = None
    """The Hub's object id of the repo (`_id` in its model info): fixed for the repo's life."""
    created_at: datetime | None = None
    """When the Hub created the repo (`createdAt`)."""

    def differs(self, other: RepoIdentity) -> list[str]:
        """The fields both know and that differ (`object id`, `creation time`)."""
        found = []
        if self.object_id and other.object_id and self.object_id != other.object_id:
            found.append("object id")
        if self.created_at and other.created_at and self.created_at != other.created_at:
            found.append("creation time")
        return found


@dataclass(frozen=True, slots=True)
class RepoStatus:
    """What a source says about a repo as a whole right now."""

    head: CommitSha
    """The commit the tracked branch points to."""
    repo_id: str
    """The id the source answers under (differs from the asked one after a rename)."""
    gated: bool = False
    disabled: bool = False
    private: bool = False
    identity: RepoIdentity | None = None
    """The Hub's ids of the repo answering; None where the source has none (git)."""


class EventKind(StrEnum):
    """Things that happen to a tracked repo besides new revisions."""

    HISTORY_REWRITTEN = "history_rewritten"
    REPO_GATED = "repo_gated"
    REPO_UNGATED = "repo_ungated"
    REPO_DISABLED = "repo_disabled"
    REPO_DELETED = "repo_deleted"
    REPO_RENAMED = "repo_renamed"
    REPO_IDENTITY_CHANGED = "repo_identity_changed"
    """Another repo answers under the tracked name (deleted and created again, or the name
    taken by someone else): its object id or creation time differs from the stored one."""
    REPO_UNAVAILABLE = "repo_unavailable"
    """The Hub answers as for a missing repo: deleted, or private to a token without access;
    the Hub answers both alike, so which is not known."""
    HUB_EVENT = "hub_event"
    """A Hub webhook of a scope that needs no poll (a discussion), recorded; not a change."""
    POLL_FAILED = "poll_failed"
    REPO_RESTORED = "repo_restored"
    REPO_DEGRADED = "repo_degraded"
    """Its polls failed `HUBWATCH_DEGRADED_AFTER` times in a row; the detail has the last error."""
    REPO_RECOVERED = "repo_recovered"
    """A poll succeeded again after the repo was degraded."""


@dataclass(frozen=True, slots=True)
class RepoEvent:
    """A recorded event about a repo."""

    kind: EventKind
    detail: str
    sha: CommitSha | None = None
    at: datetime | None = None


class RepoState(StrEnum):
    """Whether a tracked repo can currently be read."""

    ACTIVE = "active"
    GATED = "gated"
    DISABLED = "disabled"
    DELETED = "deleted"
    UNAVAILABLE = "unavailable"
    """The Hub answers as for a missing repo (401 to an anonymous caller, 404 RepoNotFound to a
    token): deleted, or turned private to this token; polls go on, and the first the Hub
    answers makes it readable again."""
    DEGRADED = "degraded"
    """Its polls keep failing (`HUBWATCH_DEGRADED_AFTER` in a row); they go on, and the first
    that succeeds makes it active again."""
    AUTH_FAILED = "auth_failed"
    """The Hub refused the configured token (401): what is stored stays as it was, polls go on,
    and the first that the Hub answers makes it active again."""


READABLE_STATES = (RepoState.ACTIVE, RepoState.GATED)
"""The states whose content can be read (a tuple: it matches plain strings too)."""


@dataclass(frozen=True, slots=True)
class TrackedRepo:
    """A tracked repo with what the store knows of its state."""

    ref: RepoRef
    state: RepoState
    head: CommitSha | None
    revisions: int
    added_at: datetime
    last_polled_at: datetime | None
    last_error: str | None
    renamed_to: str | None = None
    failures: int = 0
    """How many polls in a row failed; 0 once one succeeds."""
    identity: RepoIdentity | None = None
    """The Hub's ids of the repo as first seen (or as last accepted); None: not known yet."""
    former_ids: tuple[str, ...] = ()
    """The names it was tracked under before renames it followed, oldest first."""
